/* SPDX-License-Identifier: MIT */
/* python-import=: a whitelist of top-level module names. Checked at every
 * door into the import system -- the builtins.__import__ wrapper (import
 * statements, modules already loaded), importlib's import functions, _imp's
 * module creation -- and where a module comes into being behind them: the
 * "import" audit event (an extension module, the C import path) and the
 * "exec" of a module's code (importlib's loaders, runpy). A module the
 * profile does not name passes only when the runtime asks for it for itself
 * (asked_by_runtime()): decided on who asked, never on which frame happens
 * to be innermost, since the program can call the import machinery and the
 * standard library directly. */
#include "guard-imports.h"

#include <dlfcn.h>
#include <limits.h>

#include "guard-observer.h"
#include "guard-part.h"
#include "guard-runtime.h"
#include "profile.h"
#include "pysandboxes-module.h"
#include "util.h"

/* importlib's public doors into the import system, which raise no "import"
 * event for a module the C import path did not load: without a wrapper,
 * importlib.import_module('x') would import x unchecked. */
enum importlib_door {
	DOOR_GCD_IMPORT,       /* _frozen_importlib._gcd_import(name, package, level) */
	DOOR_BOOTSTRAP_IMPORT, /* _frozen_importlib.__import__ (= importlib.__import__) */
	DOOR_IMPORT_MODULE,    /* importlib.import_module(name, package) */
	DOOR__N,
};

static struct {
	bool import_all;
	char **allowed; /* sorted top-level module names */
	size_t n_allowed;
	PyObject *door_original[DOOR__N];
	PyObject *door_wrapper[DOOR__N];
	bool importlib_done;
	PyObject *importlib_key; /* "importlib", interned once */
	/* sys.stdlib_module_names: what the runtime may import on its own
	 * behalf. */
	PyObject *stdlib;
	char *main_package; /* top level of the -m module, NULL otherwise */
} imports;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool top_level_allowed(const char *top)
{
	/* Our own package is always importable so that programs can catch our
	 * exception classes; the package of `-m pkg.mod` is the program. */
	if (imports.import_all || streq(top, "pysandboxes") ||
	    (imports.main_package && streq(top, imports.main_package)))
		return true;
	return imports.n_allowed > 0 &&
	       bsearch(&top, imports.allowed, imports.n_allowed, sizeof(char *), cmp_str) != NULL;
}

/* top_level_allowed() of a dotted name's first part. */
static bool top_level_allowed_name(const char *module)
{
	size_t n = strcspn(module, ".");
	char top[256];

	if (n >= sizeof(top))
		return false;
	memcpy(top, module, n);
	top[n] = '\0';
	return top_level_allowed(top);
}

/* Learning: a name recorded as a rule is allowed for the rest of the run,
 * as the rule will allow it, and what comes with it (call_imports) with
 * it. Without memory, nothing is lost but that: the name is recorded
 * again. */
static void allow_learned(char **name)
{
	char **allowed = reallocarray(imports.allowed, imports.n_allowed + 1, sizeof(char *));

	if (!allowed)
		return;
	imports.allowed = allowed;
	imports.allowed[imports.n_allowed++] = TAKE_PTR(*name);
	qsort(imports.allowed, imports.n_allowed, sizeof(char *), cmp_str);
}

static int deny_import(const char *module, size_t top_len)
{
	_cleanup_free_ char *text = NULL, *name = strndup(module, top_len);

	if (name && sb_guard_refused(&(struct sb_refusal){.kind = SB_REFUSAL_IMPORT,
							  .subject = name}) == SB_RECORDED_ALLOW) {
		allow_learned(&name);
		return 0;
	}
	/* A name no rule can spell ('*' is every module, a ',' two of them):
	 * no rule is suggested for it. */
	if (name && !sb_profile_module_name_valid(name)) {
		_cleanup_free_ char *shown = sb_str_one_line(name);

		if (!shown || asprintf(&text,
				       "Module named '%s' is not allowed: it is not a module "
				       "name, and no rule allows it",
				       shown) < 0) {
			text = NULL;
			PyErr_NoMemory();
			return -1;
		}
		return sb_raise_module_not_found(name, text);
	}
	if (!name || asprintf(&text,
			      "Module named '%s' is not allowed by a rule. Add "
			      "'python-import=%s' to '%s'",
			      name, name, sb_guard_profile_path()) < 0) {
		text = NULL;
		PyErr_NoMemory();
		return -1;
	}
	return sb_raise_module_not_found(name, text);
}

static bool is_stdlib_module(const char *top)
{
	PyObject *name;
	int r;

	if (!imports.stdlib)
		return false;
	name = PyUnicode_FromString(top);
	r = name ? PySet_Contains(imports.stdlib, name) : -1;
	Py_XDECREF(name);
	if (r < 0)
		PyErr_Clear(); /* not known as the stdlib's: checked as the program's */
	return r == 1;
}

/* What the runtime may import on its own behalf, unchecked: its own modules,
 * and modules already loaded (by start-up code such as sitecustomize, or
 * __main__). Not any name a stdlib frame happens to ask for: runpy, pkgutil,
 * a thread's run() or an atexit callback import what the *program* names,
 * and a frame can pass for the stdlib's by its file name alone. */
static bool runtime_may_import(const char *top)
{
	PyObject *loaded;

	if (is_stdlib_module(top))
		return true;
	loaded = sb_guard_loaded_module(top);
	if (!loaded) {
		PyErr_Clear();
		return false;
	}
	Py_DECREF(loaded);
	return true;
}

/* Whether the module of this very name is in sys.modules: asking for it
 * again has no effect but handing it over. */
static bool module_loaded(const char *module)
{
	PyObject *loaded = sb_guard_loaded_module(module);

	if (!loaded) {
		PyErr_Clear();
		return false;
	}
	Py_DECREF(loaded);
	return true;
}

/* Whether a and b have the same top-level package. */
static bool same_top(const char *a, const char *b)
{
	size_t n = strcspn(a, ".");

	return n == strcspn(b, ".") && strncmp(a, b, n) == 0;
}

/* Where an import request comes from. */
enum import_origin {
	FROM_EVENT,	/* the "import" event, or _imp creating a module */
	FROM_STATEMENT, /* builtins.__import__: an import statement or an __import__() call */
	FROM_DOOR,	/* importlib.import_module() and its siblings */
	FROM_RUN,	/* a module's code about to run (importlib, runpy, exec_module) */
};

/* An import request as the guard was asked. name, globals and level only
 * for FROM_STATEMENT: the name as written, for the literal test. */
struct import_ask {
	enum import_origin origin;
	PyObject *name;
	PyObject *globals;
	int level;
};

/* The standard library's functions that import a name they compute as
 * their own work, with the only names they may compute: the codec search
 * function (codecs.lookup() names one of its own modules) and sysconfig's
 * build-time variables. Every other computed name (pkgutil, runpy,
 * pickle, logging.config, warnings, unittest...) may be the program's. */
static const struct {
	const char *file; /* relative to the standard library */
	const char *function;
	const char *prefix; /* of every name it may import */
} own_work_importers[] = {
    {"/encodings/__init__.py", "search_function", "encodings."},
    {"/sysconfig.py", "_init_posix", "_sysconfigdata_"},
};

/* The modules that the C code of the standard library's extension modules
 * imports while _imp creates or executes them (CPython 3.11, measured:
 * every __import__ they make from their init functions). A name outside
 * this list, asked while an extension module is being made, is no import of
 * its C code: it may be a callback the program planted (a gc callback, a
 * weakref's, a __del__) that ran in the meantime. */
static const struct {
	const char *module;
	const char *imports; /* separated by spaces */
} c_code_imports[] = {
    {"_asyncio", "asyncio asyncio.base_futures asyncio.base_tasks asyncio.coroutines "
		 "asyncio.events asyncio.exceptions traceback weakref"},
    {"_curses_panel", "_curses"},
    {"_decimal", "collections collections.abc numbers"},
    {"_elementtree", "copy pyexpat xml.etree.ElementPath"},
    {"_pickle", "_compat_pickle codecs copyreg functools"},
    {"_sqlite3", "functools"},
    {"_ssl", "_socket"},
    {"_zoneinfo", "datetime io weakref zoneinfo._common zoneinfo._tzpath"},
    {"array", "collections.abc"},
};

/* The modules that functions of the standard library import when they are
 * called (not when their module is made: c_code_imports), with the modules
 * holding those functions. C functions: CPython 3.11's PyImport_ImportModule()
 * calls of a fixed name in Modules/ and Objects/ outside init functions,
 * less those of the interpreter's start, of Windows, of a module's own
 * package (_curses: curses, _sre: re) or of modules always loaded (copyreg,
 * io); struct, which memoryview imports for formats only ctypes' buffers
 * have, is left to a rule. The import comes from C code under the
 * caller's frame, or with a name computed in the standard library (which
 * may be the program's), so it is judged as the program's when the program
 * called the function: a profile that allows a module holding such a
 * function allows what the function imports, and what lies below it (the
 * program reaches it anyway, by calling the function); the standard
 * library's code calling one is the runtime's own work. The methods cannot
 * be wrapped to tell the two apart: _datetime's types are immutable. */
static const struct {
	const char *module;
	const char *imported_by[3]; /* NULL-terminated */
} call_imports[] = {
    {"_strptime", {"datetime", "time"}}, /* datetime.strptime(), time.strptime() */
    {"functools", {"operator"}},	 /* methodcaller.__reduce__() with keywords */
    {"pickle", {"zoneinfo"}},		 /* a zone read from a file: ZoneInfo.__reduce__() */
    {"resource", {"os", "posix"}},	 /* os.wait3(), os.wait4(): the struct_rusage type */
    {"time", {"datetime"}},		 /* date.today(), strftime(), timetuple(), __format__() */
    /* zoneinfo's fallback data, a package of its own when installed, which
     * it loads through importlib.resources: a computed name there. */
    {"tzdata", {"zoneinfo"}},
};

/* module is name or below it. */
static bool is_or_below(const char *module, const char *name)
{
	const char *rest = startswith(module, name);

	return rest && (*rest == '\0' || *rest == '.');
}

/* Whether module is what a C function of a module the profile allows
 * imports when it is called (call_imports). */
static bool call_import_allowed(const char *module)
{
	for (size_t i = 0; i < ELEMENTSOF(call_imports); i++) {
		if (!is_or_below(module, call_imports[i].module))
			continue;
		for (const char *const *by = call_imports[i].imported_by; *by; by++)
			if (top_level_allowed(*by))
				return true;
	}
	return false;
}

static bool word_in(const char *word, const char *list)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
	return false;
}

static bool c_code_imports_module(const char *c_module, const char *module)
{
	for (size_t i = 0; c_module && i < ELEMENTSOF(c_code_imports); i++)
		if (streq(c_code_imports[i].module, c_module))
			return word_in(module, c_code_imports[i].imports);
	return false;
}

/* Whether module has the prefix of one of own_work_importers. */
static bool asked_by_own_work_name(const char *module)
{
	for (size_t i = 0; i < ELEMENTSOF(own_work_importers); i++)
		if (startswith(module, own_work_importers[i].prefix))
			return true;
	return false;
}

static bool own_work_import(PyFrameObject *frame, const char *module)
{
	for (size_t i = 0; i < ELEMENTSOF(own_work_importers); i++)
		if (startswith(module, own_work_importers[i].prefix) &&
		    sb_guard_frame_is(frame, own_work_importers[i].file,
				      own_work_importers[i].function))
			return true;
	for (size_t i = 0; i < ELEMENTSOF(call_imports); i++)
		if (is_or_below(module, call_imports[i].module))
			return true;
	return false;
}

/* A module outside the standard library's names asked for by a function of
 * own_work_importers (the innermost frame), or the machinery serving the
 * request that function made for it. */
static bool asked_by_own_work(const char *module)
{
	const struct sb_import_request *req;
	PyFrameObject *frame = PyEval_GetFrame(), *at = NULL; /* borrowed */
	bool own = false;

	for (size_t i = 0; frame && !own && i < ELEMENTSOF(own_work_importers); i++)
		own = startswith(module, own_work_importers[i].prefix) &&
		      sb_guard_frame_is(frame, own_work_importers[i].file,
					own_work_importers[i].function);
	if (own)
		return true;
	if (sb_guard_requester(&req, &at) == SB_ASKED_FOR_REQUEST)
		own = !req->c_code && streq(req->name, module);
	Py_XDECREF(at);
	/* The request itself was let through by a rule or by the branch
	 * above: for a name no rule allows, only the latter. */
	return own && asked_by_own_work_name(module);
}

/* The -m target's import of runpy, made by the interpreter with no frame
 * after cpython.run_module (see on_run_module()). */
static bool runpy_import_pending;

/* Whether a module the profile does not name (but the standard library's,
 * or one loaded already) is asked for by the runtime for itself:
 *
 *  - an import statement in the standard library's code, the name written
 *    there (not __import__(name) or import_module(name), whose name may be
 *    the caller's);
 *  - the import machinery serving a request a door let through, for that
 *    request's package (its parents, its submodules, the module's code),
 *    or an extension module's C code importing what it imports;
 *  - a function of own_work_importers;
 *  - a module loaded already, unless the program asks for it itself: it is
 *    handed over, nothing is run;
 *  - the interpreter before the program starts.
 *
 * Never the program's code, nor the machinery the program called directly
 * (a loader's create_module(), exec_module(), load_module(), _imp), nor a
 * standard-library function importing a name it was handed. */
static bool asked_by_runtime(const char *module, const struct import_ask *ask)
{
	const struct sb_import_request *req;
	PyFrameObject *frame = PyEval_GetFrame(), *at; /* borrowed */
	enum sb_requester who;
	bool runtime = false;

	if (ask->origin == FROM_STATEMENT && frame &&
	    sb_guard_frame_imports_literal(frame, ask->name, ask->globals, ask->level)) {
		PyCodeObject *code = PyFrame_GetCode(frame);
		const char *file = PyUnicode_AsUTF8(code->co_filename);

		runtime = file && sb_guard_is_runtime_file(file);
		PyErr_Clear();
		Py_DECREF(code);
		if (runtime)
			return true;
	}
	who = sb_guard_requester(&req, &at);
	switch (who) {
	case SB_ASKED_FOR_REQUEST:
		if (req->c_code)
			runtime =
			    streq(req->name, module) || c_code_imports_module(req->name, module);
		else
			runtime = *req->name && same_top(req->name, module);
		break;
	case SB_ASKED_BY_STDLIB:
		runtime = own_work_import(at, module);
		break;
	case SB_ASKED_BY_NOBODY:
		if (!sb_guard_program_started())
			return true;
		if (runpy_import_pending && streq(module, "runpy")) {
			runpy_import_pending = false;
			return true;
		}
		break;
	case SB_ASKED_BY_PROGRAM:
		Py_XDECREF(at);
		return false;
	}
	Py_XDECREF(at);
	/* Re-running a loaded module's code is not handing it over. */
	return runtime || (ask->origin != FROM_RUN && module_loaded(module));
}

/* Whether the request is an import statement of the innermost frame that
 * names the module (IMPORT_NAME), rather than a call that imports it. */
static bool import_statement_names(const struct import_ask *ask)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	bool named;

	if (ask->origin != FROM_STATEMENT || !frame)
		return false;
	named = sb_guard_frame_imports_literal(frame, ask->name, ask->globals, ask->level);
	PyErr_Clear();
	return named;
}

/* Whether the request is an import statement in the standard library's
 * code that names the module (the innermost frame). */
static bool stdlib_statement_names(const struct import_ask *ask)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyCodeObject *code;
	const char *file;
	bool stdlib;

	if (!import_statement_names(ask))
		return false;
	code = PyFrame_GetCode(frame);
	file = PyUnicode_AsUTF8(code->co_filename);
	stdlib = file && sb_guard_is_runtime_file(file);
	PyErr_Clear();
	Py_DECREF(code);
	return stdlib;
}

/* The standard library's own import statement of a module that is neither
 * its own nor loaded nor allowed is a probe for something optional (copy
 * and pickle try Jython's org.python.core): refused as CPython refuses a
 * module that does not exist, with no rule to suggest and nothing recorded
 * (a rule would only let code of the program's run under that name). */
static int refuse_probe(const char *module, size_t top_len)
{
	PyObject *name = PyUnicode_FromStringAndSize(module, (Py_ssize_t)top_len), *msg;

	msg = name ? PyUnicode_FromFormat("No module named '%U'", name) : NULL;
	if (msg)
		PyErr_SetImportErrorSubclass(PyExc_ModuleNotFoundError, msg, name, NULL);
	Py_XDECREF(msg);
	Py_XDECREF(name);
	return -1;
}

/* 0 when allowed, -1 with an exception set when refused. */
static int check_import(const char *module, const struct import_ask *ask)
{
	size_t top_len = strcspn(module, ".");
	char top[256];

	if (top_len == 0)
		return 0;
	if (top_len >= sizeof(top))
		return deny_import(module, top_len);
	memcpy(top, module, top_len);
	top[top_len] = '\0';
	if (top_level_allowed(top))
		return 0;
	/* An import statement that names the module is its code's own ask,
	 * decided as any other below (the program's refused). */
	if (call_import_allowed(module) && !import_statement_names(ask))
		return 0;
	/* A module neither the standard library's nor loaded: only a rule
	 * lets it in, or a function of own_work_importers its name (Debian's
	 * _sysconfigdata_* is not in sys.stdlib_module_names), and then the
	 * machinery serving that very request. */
	if (!runtime_may_import(top)) {
		if (asked_by_own_work(module))
			return 0;
		return stdlib_statement_names(ask) ? refuse_probe(module, top_len)
						   : deny_import(module, top_len);
	}
	/* Our own C code's imports (a runtime section). */
	if (sb_guard_in_runtime_section())
		return 0;
	if (asked_by_runtime(module, ask))
		return 0;
	return deny_import(module, top_len);
}

void sb_guard_module_run_target(PyFrameObject *frame, PyObject **ret_name, PyObject **ret_ns,
				bool *ret_as_main)
{
	PyObject *locals = NULL, *v = NULL, *name = NULL, *ns = NULL;
	bool bootstrap =
	    sb_guard_frame_is(frame, "/importlib/_bootstrap.py", "_call_with_frames_removed");
	bool runpy = !bootstrap && sb_guard_frame_is(frame, "/runpy.py", "_run_code");

	*ret_name = *ret_ns = NULL;
	*ret_as_main = false;
	if (!bootstrap && !runpy)
		return;
	locals = PyFrame_GetLocals(frame);
	if (!locals || !PyMapping_Check(locals))
		goto out;
	if (bootstrap) {
		v = PyMapping_GetItemString(locals, "args");
		ns = v && PyTuple_Check(v) && PyTuple_GET_SIZE(v) >= 2 ? PyTuple_GET_ITEM(v, 1)
								       : NULL;
		name = ns && PyDict_Check(ns) ? PyDict_GetItemString(ns, "__name__") : NULL;
		Py_XINCREF(name);
		Py_XINCREF(ns);
	} else {
		PyFrameObject *back = PyFrame_GetBack(frame);

		*ret_as_main = sb_guard_is_main_run_frame(back);
		Py_XDECREF(back);
		ns = PyMapping_GetItemString(locals, "run_globals");
		if (!ns)
			PyErr_Clear();
		/* The spec names the module; mod_name may be "__main__". */
		v = PyMapping_GetItemString(locals, "mod_spec");
		name = v && v != Py_None ? PyObject_GetAttrString(v, "name") : NULL;
		if (!name) {
			PyErr_Clear();
			name = PyMapping_GetItemString(locals, "mod_name");
		}
	}
out:
	Py_XDECREF(v);
	Py_XDECREF(locals);
	PyErr_Clear();
	if (name && !PyUnicode_Check(name))
		Py_CLEAR(name);
	if (!name)
		Py_CLEAR(ns);
	*ret_name = name;
	*ret_ns = ns;
}

static int refuse_renamed(const char *module, const char *own)
{
	_cleanup_free_ char *text = NULL;

	if (asprintf(
		&text,
		"The code of the standard library's module '%s' cannot run as the module '%s': "
		"its frames would pass for the interpreter's own. Import '%s' instead",
		own, module, own) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return sb_raise_module_not_found(module, text);
}

/* A module's code about to run ("exec" of a code object): importlib's
 * loaders, runpy, or FrozenImporter run a module's code with no "import"
 * event for it, and the program can call them directly (a loader's
 * exec_module(), load_module(), runpy.run_module()). So the module is
 * judged here as an import asked by whoever runs it. Its name is read from
 * importlib's or runpy's frame, and for the standard library's own code
 * (a module body whose file is the standard library's) from the file too:
 * that code may run only as itself (not json's name on ctypes' code), and
 * a module of the standard library the profile does not name only for the
 * runtime's own import. */
static int on_exec(PyObject *args)
{
	PyObject *code_obj = PyTuple_GetItem(args, 0), *name = NULL;
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	const struct import_ask ask = {.origin = FROM_RUN};
	PyCodeObject *code;
	const char *module = NULL, *file;
	char own[256];
	bool stdlib_body, as_main = false;
	int r = 0;

	if (!code_obj) {
		PyErr_Clear();
		return 0;
	}
	if (imports.import_all || !PyCode_Check(code_obj))
		return 0;
	code = (PyCodeObject *)code_obj;
	file = PyUnicode_AsUTF8(code->co_filename);
	if (!file)
		PyErr_Clear();
	stdlib_body = file && PyUnicode_Check(code->co_name) &&
		      PyUnicode_CompareWithASCIIString(code->co_name, "<module>") == 0 &&
		      sb_guard_stdlib_module(file, own, sizeof(own));
	if (frame) {
		PyObject *ns;

		sb_guard_module_run_target(frame, &name, &ns, &as_main);
		Py_XDECREF(ns);
	}
	if (name) {
		module = PyUnicode_AsUTF8(name);
		if (!module) {
			PyErr_Clear();
			goto out;
		}
	}
	/* The interpreter's own `-m` runs the program, whatever its code. */
	if (as_main)
		goto out;
	if (module && stdlib_body && !streq(module, own)) {
		r = refuse_renamed(module, own);
		goto out;
	}
	if (stdlib_body) {
		r = check_import(own, &ask);
		goto out;
	}
	if (!module || streq(module, "__main__"))
		goto out;
	/* Not the standard library's code: only a rule lets it run as a
	 * module. */
	if (!top_level_allowed_name(module))
		r = deny_import(module, strcspn(module, "."));
out:
	Py_XDECREF(name);
	return r;
}

static int on_import(PyObject *args)
{
	PyObject *module = PyTuple_GetItem(args, 0);
	const char *name = module ? PyUnicode_AsUTF8(module) : NULL;
	const struct import_ask ask = {.origin = FROM_EVENT};
	PyObject *path =
	    PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;

	if (!name)
		return -1;
	if (check_import(name, &ask) < 0)
		return -1;
	/* An extension module about to be loaded (the event _imp raises with
	 * the name and the file it really loads): the modules whose loading
	 * is a rule's business (_ctypes without the native grant) are judged
	 * again on that name. sb_guard_imp_enter() judged the name the spec
	 * gave first, and a spec's name can be a property that answers
	 * "_json" to the guard and "_ctypes" to _imp. */
	if (path && PyUnicode_Check(path) && sb_guard_armed())
		return sb_guard_module_loading(name);
	return 0;
}

/* The name a module about to be executed was made under: its spec's, which
 * is what _imp's create step was judged on. An extension module may call
 * itself another name (_decimal's PyModuleDef says "decimal"): judged on
 * that, the runtime's import of _decimal would be refused, and decimal fall
 * back to _pydecimal. Its own name when it has no spec (a module the
 * program made); the program handing _imp a module with a spec of its own
 * only re-executes what was made under a check already. */
static PyObject *executed_module_name(PyObject *module)
{
	PyObject *spec = PyObject_GetAttrString(module, "__spec__"), *name = NULL;

	if (spec && spec != Py_None)
		name = PyObject_GetAttrString(spec, "name");
	Py_XDECREF(spec);
	if (name && PyUnicode_Check(name))
		return name;
	Py_XDECREF(name);
	PyErr_Clear();
	return PyModule_GetNameObject(module);
}

/* Whether _imp's create_dynamic(spec) or exec_dynamic(module) works on an
 * extension module of the standard library or a site-packages tree: for
 * create, the file it loads (the spec's origin, which it reads itself); for
 * exec, the shared object the module's definition lies in, which no
 * attribute the program can write names. A file outside those trees is
 * not: the program's own C code is its own (a spec of the program's that
 * names another file to _imp's own read would load the program's C code,
 * which no audit event binds anyway). */
static bool library_extension(const char *function, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *origin;
	PyModuleDef *def;
	Dl_info info;
	const char *file;
	bool library;

	if (nargs < 1)
		return false;
	if (streq(function, "exec_dynamic")) {
		def = PyModule_Check(args[0]) ? PyModule_GetDef(args[0]) : NULL;
		PyErr_Clear();
		return def && dladdr(def, &info) && info.dli_fname &&
		       sb_guard_is_library_file(info.dli_fname);
	}
	if (!streq(function, "create_dynamic"))
		return false;
	origin = PyObject_GetAttrString(args[0], "origin");
	file = origin && PyUnicode_Check(origin) ? PyUnicode_AsUTF8(origin) : NULL;
	library = file && sb_guard_is_library_file(file);
	PyErr_Clear();
	Py_XDECREF(origin);
	return library;
}

int sb_guard_imp_enter(const char *function, PyObject *const *args, Py_ssize_t nargs,
		       struct sb_import_request *r)
{
	bool reload = streq(function, "reload");
	bool exec = reload || startswith(function, "exec_") != NULL;
	const struct import_ask ask = {.origin = exec ? FROM_RUN : FROM_EVENT};
	PyObject *name = NULL;
	const char *module = NULL;
	int ret = 0;

	/* An argument _imp will refuse, or a module it will not execute:
	 * nothing to judge, nothing runs. */
	if (nargs < 1)
		goto open;
	if (streq(function, "init_frozen"))
		name = PyUnicode_Check(args[0]) ? Py_NewRef(args[0]) : NULL;
	else if (reload)
		name = PyModule_Check(args[0]) ? PyModule_GetNameObject(args[0]) : NULL;
	else if (exec)
		name = PyModule_Check(args[0]) ? executed_module_name(args[0]) : NULL;
	else
		name = PyObject_GetAttrString(args[0], "name");
	if (name && PyUnicode_Check(name))
		module = PyUnicode_AsUTF8(name);
	if (!module) {
		PyErr_Clear();
		goto open;
	}
	if (sb_guard_armed() && !imports.import_all)
		ret = check_import(module, &ask);
	if (ret == 0 && sb_guard_armed() && !exec)
		ret = sb_guard_module_loading(module);
open:
	if (ret == 0) {
		sb_guard_request_enter(r, module, !reload);
		r->library_extension = module && library_extension(function, args, nargs);
	}
	Py_XDECREF(name);
	return ret;
}

/* The interpreter is about to run the program: frameless imports from now
 * on are callbacks the program may have planted (atexit, a thread's
 * start), except the -m target's import of runpy, which comes next. */
static int on_program_start(PyObject *args _unused_)
{
	sb_guard_note_program_start();
	return 0;
}

static int on_run_module(PyObject *args _unused_)
{
	runpy_import_pending = !sb_guard_program_started();
	if (runpy_import_pending)
		sb_guard_note_main_module();
	sb_guard_note_program_start();
	return 0;
}

/* The "import" audit event only fires for modules that are not loaded yet;
 * `import os` of an already loaded module goes through builtins.__import__
 * alone, so that is wrapped too. */
/* __import__(name, globals=None, locals=None, fromlist=(), level=0) from a
 * vector call, as builtins.__import__ parses it ("U|OOOi"). The interpreter
 * calls it for every import statement once it is replaced: a vector call
 * and no tuple, no PyArg_ParseTupleAndKeywords(). */
static int import_arguments(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
			    PyObject *ret[5], int *ret_level)
{
	static const char *const names[5] = {"name", "globals", "locals", "fromlist", "level"};
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;

	if (nargs > 5) {
		PyErr_Format(PyExc_TypeError, "__import__() takes at most 5 arguments (%zd given)",
			     nargs + nkw);
		return -1;
	}
	for (Py_ssize_t i = 0; i < 5; i++)
		ret[i] = i < nargs ? args[i] : NULL;
	for (Py_ssize_t k = 0; k < nkw; k++) {
		PyObject *key = PyTuple_GET_ITEM(kwnames, k);
		Py_ssize_t i = 0;

		while (i < 5 && PyUnicode_CompareWithASCIIString(key, names[i]) != 0)
			i++;
		if (i == 5) {
			PyErr_Format(PyExc_TypeError,
				     "'%U' is an invalid keyword argument for __import__()", key);
			return -1;
		}
		if (ret[i]) {
			PyErr_Format(PyExc_TypeError,
				     "argument for __import__() given by name ('%s') and position "
				     "(%zd)",
				     names[i], i + 1);
			return -1;
		}
		ret[i] = args[nargs + k];
	}
	if (!ret[0]) {
		PyErr_SetString(PyExc_TypeError,
				"__import__() missing required argument 'name' (pos 1)");
		return -1;
	}
	if (!PyUnicode_Check(ret[0])) {
		PyErr_Format(PyExc_TypeError, "__import__() argument 1 must be str, not %.50s",
			     Py_TYPE(ret[0])->tp_name);
		return -1;
	}
	*ret_level = 0;
	if (ret[4]) {
		long level = PyLong_AsLong(ret[4]);

		if (level == -1 && PyErr_Occurred())
			return -1;
		if (level > INT_MAX || level < INT_MIN) {
			PyErr_SetString(PyExc_OverflowError,
					"signed integer is greater than maximum");
			return -1;
		}
		*ret_level = (int)level;
	}
	return 0;
}

static PyObject *guarded_import(PyObject *self _unused_, PyObject *const *args, Py_ssize_t nargs,
				PyObject *kwnames)
{
	PyObject *a[5], *module;
	struct sb_import_request request;
	const char *name = NULL;
	int level;

	if (import_arguments(args, nargs, kwnames, a, &level) < 0)
		return NULL;
	if (sb_guard_armed()) {
		const struct import_ask ask = {
		    .origin = FROM_STATEMENT, .name = a[0], .globals = a[1], .level = level};

		if (level == 0) {
			name = PyUnicode_AsUTF8(a[0]);
		} else if (a[1] && PyDict_Check(a[1])) {
			/* A relative import stays inside the importer's top-level
			 * package. */
			PyObject *pkg = PyDict_GetItemString(a[1], "__package__");

			if (!pkg || !PyUnicode_Check(pkg))
				pkg = PyDict_GetItemString(a[1], "__name__");
			if (pkg && PyUnicode_Check(pkg))
				name = PyUnicode_AsUTF8(pkg);
		}
		if (name && check_import(name, &ask) < 0)
			return NULL;
		if (!name && PyErr_Occurred())
			return NULL;
	}
	/* What builtins.__import__ does once it has parsed its arguments; what
	 * the import machinery does meanwhile serves this request. */
	sb_guard_request_enter(&request, name, false);
	module = PyImport_ImportModuleLevelObject(a[0], a[1], a[2], a[3], level);
	sb_guard_request_leave(&request);
	if (module && sb_guard_armed() && sb_guard_after_import() < 0)
		Py_CLEAR(module);
	return module;
}

/* The module a (possibly relative) request names, for the top-level check:
 * a relative name stays inside its package's top level. */
static const char *requested_module(PyObject *name, PyObject *package, int level)
{
	const char *n = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;

	if (n && n[0] == '.')
		level = 1;
	if (level > 0)
		return package && PyUnicode_Check(package) ? PyUnicode_AsUTF8(package) : NULL;
	return n;
}

static PyObject *guarded_door(enum importlib_door door, PyObject *args, PyObject *kwds)
{
	static char *kw_gcd[] = {"name", "package", "level", NULL};
	static char *kw_module[] = {"name", "package", NULL};
	static char *kw_import[] = {"name", "globals", "locals", "fromlist", "level", NULL};
	PyObject *name = NULL, *package = NULL, *globals = NULL, *locals = NULL, *fromlist = NULL;
	PyObject *result;
	struct sb_import_request request;
	const char *module = NULL;
	int level = 0, ok;

	if (door == DOOR_GCD_IMPORT)
		ok = PyArg_ParseTupleAndKeywords(args, kwds, "O|Oi:_gcd_import", kw_gcd, &name,
						 &package, &level);
	else if (door == DOOR_IMPORT_MODULE)
		ok = PyArg_ParseTupleAndKeywords(args, kwds, "O|O:import_module", kw_module, &name,
						 &package);
	else
		ok = PyArg_ParseTupleAndKeywords(args, kwds, "O|OOOi:__import__", kw_import, &name,
						 &globals, &locals, &fromlist, &level);
	if (!ok)
		return NULL;
	if (sb_guard_armed()) {
		const struct import_ask ask = {.origin = FROM_DOOR};

		if (door == DOOR_BOOTSTRAP_IMPORT && level > 0 && globals &&
		    PyDict_Check(globals)) {
			package = PyDict_GetItemString(globals, "__package__");
			if (!package || !PyUnicode_Check(package))
				package = PyDict_GetItemString(globals, "__name__");
		}
		module = requested_module(name, package, level);
		if (module && check_import(module, &ask) < 0)
			return NULL;
		if (!module && PyErr_Occurred())
			return NULL;
	}
	sb_guard_request_enter(&request, module, false);
	result = PyObject_Call(imports.door_original[door], args, kwds);
	sb_guard_request_leave(&request);
	return result;
}

static PyObject *guarded_gcd_import(PyObject *self _unused_, PyObject *args, PyObject *kwds)
{
	return guarded_door(DOOR_GCD_IMPORT, args, kwds);
}

static PyObject *guarded_bootstrap_import(PyObject *self _unused_, PyObject *args, PyObject *kwds)
{
	return guarded_door(DOOR_BOOTSTRAP_IMPORT, args, kwds);
}

static PyObject *guarded_import_module(PyObject *self _unused_, PyObject *args, PyObject *kwds)
{
	return guarded_door(DOOR_IMPORT_MODULE, args, kwds);
}

static PyMethodDef door_defs[DOOR__N] = {
    [DOOR_GCD_IMPORT] = {"_gcd_import", (PyCFunction)(void (*)(void))guarded_gcd_import,
			 METH_VARARGS | METH_KEYWORDS,
			 "Import a module (checked by python-import=)."},
    [DOOR_BOOTSTRAP_IMPORT] = {"__import__", (PyCFunction)(void (*)(void))guarded_bootstrap_import,
			       METH_VARARGS | METH_KEYWORDS,
			       "Import a module (checked by python-import=)."},
    [DOOR_IMPORT_MODULE] = {"import_module", (PyCFunction)(void (*)(void))guarded_import_module,
			    METH_VARARGS | METH_KEYWORDS,
			    "Import a module (checked by python-import=)."},
};

/* Replaces module.<name> by the door's wrapper when it still holds the
 * original (the first sighting records the original). 1 when the wrapper is
 * in place, 0 when the module has no such attribute (yet), -1 on error. */
static int wrap_door(PyObject *module, enum importlib_door door)
{
	const char *name = door_defs[door].ml_name;
	PyObject *cur = PyObject_GetAttrString(module, name);
	int r = 0;

	if (!cur) {
		PyErr_Clear();
		return 0;
	}
	if (!imports.door_original[door] && cur != imports.door_wrapper[door]) {
		imports.door_original[door] = cur; /* keeps the reference */
		cur = NULL;
	}
	if (!imports.door_wrapper[door]) {
		/* m_self NULL: nothing reachable from the wrapper leads to the original. */
		imports.door_wrapper[door] = PyCFunction_NewEx(&door_defs[door], NULL, NULL);
		if (!imports.door_wrapper[door]) {
			Py_XDECREF(cur);
			return -1;
		}
	}
	if (cur != imports.door_wrapper[door] && (!cur || cur == imports.door_original[door]))
		r = PyObject_SetAttrString(module, name, imports.door_wrapper[door]);
	Py_XDECREF(cur);
	return r < 0 ? -1 : 1;
}

/* importlib itself is loaded on demand: wrap its doors when it appears. A
 * plain look in sys.modules, not PyImport_GetModule(), which calls into
 * importlib's locks while a module initialises, on every pass until then: a
 * half-made importlib is handled below. */
static int imports_after_import(void)
{
	PyObject *importlib;
	int r;

	if (imports.importlib_done)
		return 0;
	if (!imports.importlib_key &&
	    !(imports.importlib_key = PyUnicode_InternFromString("importlib")))
		return -1;
	importlib = PyDict_GetItemWithError(PyImport_GetModuleDict(), imports.importlib_key);
	if (!importlib)
		return PyErr_Occurred() ? -1 : 0;
	Py_INCREF(importlib);
	/* Seen while importlib's own __init__ is still running (its imports
	 * come through here): done only once both doors exist and are wrapped. */
	r = wrap_door(importlib, DOOR_IMPORT_MODULE);
	if (r > 0)
		r = wrap_door(importlib, DOOR_BOOTSTRAP_IMPORT);
	Py_DECREF(importlib);
	if (r > 0)
		imports.importlib_done = true;
	return r < 0 ? -1 : 0;
}

static PyMethodDef import_def = {"__import__", (PyCFunction)(void (*)(void))guarded_import,
				 METH_FASTCALL | METH_KEYWORDS,
				 "__import__(name, globals=None, locals=None, fromlist=(), "
				 "level=0)\n\nImport a module (checked by python-import= rules)."};

static int imports_prepare(const struct sb_profile *profile,
			   const struct sb_interp_paths *interp _unused_, char **reterr _unused_)
{
	imports.import_all = profile->import_all;
	if (profile->n_imports == 0)
		return 0;
	imports.allowed = calloc(profile->n_imports, sizeof(char *));
	if (!imports.allowed)
		return -ENOMEM;
	for (size_t i = 0; i < profile->n_imports; i++) {
		/* Only top-level names can ever match; dotted ones were warned
		 * about when the profile was read. */
		if (strchr(profile->imports[i].name, '.'))
			continue;
		imports.allowed[imports.n_allowed] = strdup(profile->imports[i].name);
		if (!imports.allowed[imports.n_allowed])
			return -ENOMEM;
		imports.n_allowed++;
	}
	qsort(imports.allowed, imports.n_allowed, sizeof(char *), cmp_str);
	return 0;
}

/* sys.stdlib_module_names as it is before the program runs: a frozenset,
 * which nothing can change, held from C (the program may rebind the
 * attribute, not alter this object). */
static int keep_stdlib_names(void)
{
	PyObject *names = PySys_GetObject("stdlib_module_names"); /* borrowed */

	if (names && PyFrozenSet_CheckExact(names))
		imports.stdlib = Py_NewRef(names);
	return 0;
}

/* The top-level package of `-m pkg.mod`, from sys.orig_argv scanned as
 * CPython scans its options (-m and -c end them; -W and -X take a value). */
static int find_main_package(void)
{
	PyObject *argv = PySys_GetObject("orig_argv"); /* borrowed */
	const char *module = NULL;

	if (!argv || !PyList_Check(argv))
		return 0;
	for (Py_ssize_t i = 1; !module && i < PyList_GET_SIZE(argv); i++) {
		PyObject *item = PyList_GET_ITEM(argv, i);
		const char *a = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;

		if (!a || a[0] != '-' || !a[1] || streq(a, "--"))
			break;
		for (const char *c = a + 1; *c; c++) {
			if (*c != 'm' && *c != 'c' && *c != 'W' && *c != 'X')
				continue;
			if (*c == 'm') {
				PyObject *next = c[1] || i + 1 >= PyList_GET_SIZE(argv)
						     ? NULL
						     : PyList_GET_ITEM(argv, i + 1);

				module = c[1]				 ? c + 1
					 : next && PyUnicode_Check(next) ? PyUnicode_AsUTF8(next)
									 : NULL;
			} else if (*c == 'c') {
				i = PyList_GET_SIZE(argv);
			} else if (!c[1]) {
				i++;
			}
			break;
		}
	}
	PyErr_Clear();
	if (module && *module && *module != '.') {
		imports.main_package = strndup(module, strcspn(module, "."));
		if (!imports.main_package)
			return -1;
	}
	return 0;
}

/* A module the runtime loaded (new reference), or NULL. At activation no
 * import is in progress: a plain look in sys.modules does, without the two
 * attribute lookups PyImport_GetModule() makes to wait for a module still
 * initialising. */
static PyObject *loaded_at_start(const char *name)
{
	PyObject *module = PyDict_GetItemString(PyImport_GetModuleDict(), name); /* borrowed */

	return Py_XNewRef(module);
}

static int imports_activate(char **reterr)
{
	PyObject *builtins = loaded_at_start("builtins");
	PyObject *wrapper = NULL;
	int r = -1;

	if (!builtins)
		goto out;
	/* m_self NULL: gc.get_referents(wrapper) does not lead to the original. */
	wrapper = PyCFunction_NewEx(&import_def, NULL, NULL);
	if (!wrapper)
		goto out;
	r = PyObject_SetAttrString(builtins, "__import__", wrapper);
	if (r >= 0 && !imports.import_all)
		r = keep_stdlib_names();
	if (r >= 0 && !imports.import_all)
		r = find_main_package();
	if (r >= 0) {
		PyObject *bootstrap = loaded_at_start("_frozen_importlib");

		if (bootstrap) {
			r = wrap_door(bootstrap, DOOR_GCD_IMPORT);
			if (r >= 0)
				r = wrap_door(bootstrap, DOOR_BOOTSTRAP_IMPORT);
			r = r < 0 ? -1 : 0;
			Py_DECREF(bootstrap);
		}
		if (r >= 0)
			r = imports_after_import();
	}
out:
	Py_XDECREF(wrapper);
	Py_XDECREF(builtins);
	if (r < 0) {
		PyErr_Clear();
		*reterr = strdup("cannot install the import guard");
		return -EIO;
	}
	return 0;
}

static void imports_release(void)
{
	for (size_t i = 0; i < imports.n_allowed; i++)
		free(imports.allowed[i]);
	free(imports.allowed);
	free(imports.main_package);
	/* The Python objects belonged to the finalized interpreter: drop, don't DECREF. */
	memset(&imports, 0, sizeof(imports));
}

static const struct sb_audit_handler import_handlers[] = {
    {"cpython.run_command", on_program_start},
    {"cpython.run_file", on_program_start},
    {"cpython.run_interactivehook", on_program_start},
    {"cpython.run_module", on_run_module},
    {"cpython.run_startup", on_program_start},
    {"cpython.run_stdin", on_program_start},
    {"exec", on_exec},
    {"import", on_import},
};

const struct sb_guard_part sb_guard_imports_part = {
    .name = "imports",
    .prepare = imports_prepare,
    .activate = imports_activate,
    .release = imports_release,
    .handlers = import_handlers,
    .n_handlers = ELEMENTSOF(import_handlers),
    .after_import = imports_after_import,
};
