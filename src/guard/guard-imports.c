/* SPDX-License-Identifier: MIT */
/* python-import=: a whitelist of top-level module names. Checked on the
 * "import" audit event (modules not loaded yet) and in a builtins.__import__
 * wrapper (modules the runtime already loaded, which raise no event). */
#include "guard-imports.h"

#include <limits.h>

#include "guard-observer.h"
#include "guard-part.h"
#include "guard-runtime.h"
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

static int deny_import(const char *module, size_t top_len)
{
	_cleanup_free_ char *text = NULL, *name = strndup(module, top_len);

	if (name && sb_guard_refused(&(struct sb_refusal){.kind = SB_REFUSAL_IMPORT,
							  .subject = name}) == SB_RECORDED_ALLOW)
		return 0;
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

/* Where an import request comes from. */
enum import_origin {
	FROM_EVENT,	/* the "import" event: the wrapper or door decided before it */
	FROM_STATEMENT, /* builtins.__import__: an import statement or an __import__() call */
	FROM_DOOR,	/* importlib.import_module() and its siblings */
	FROM_RUN,	/* module code run without an import (runpy, exec_module) */
};

/* Standard-library functions that import a name the program hands them: an
 * import they request is the program's, though their frame is the runtime's
 * (pkgutil.resolve_name('ctypes') would otherwise be the stdlib importing the
 * stdlib). `how` is the way they import it; their other imports, and the
 * imports of the module they load (json importing re), stay the runtime's.
 * `below`: only when that function of the same file is further down the
 * stack (runpy's helper serves -m, which is the program itself, and
 * run_module(), which imports what the program names). */
static const struct {
	const char *file; /* relative to the standard library */
	const char *function;
	enum import_origin how;
	const char *below;
} import_delegators[] = {
    /* A dotted name's parent package (runpy swallows its own refused
     * __import__ of it and asks find_spec()). */
    {"/importlib/util.py", "find_spec", FROM_STATEMENT, NULL},
    {"/logging/config.py", "_resolve", FROM_STATEMENT, NULL}, /* __import__(name) */
    {"/logging/config.py", "resolve", FROM_STATEMENT, NULL},  /* self.importer(name) */
    {"/pickle.py", "find_class", FROM_STATEMENT, NULL},
    {"/pkgutil.py", "resolve_name", FROM_DOOR, NULL},
    {"/pydoc.py", "safeimport", FROM_STATEMENT, NULL},
    {"/runpy.py", "_get_module_details", FROM_STATEMENT, "run_module"},
    {"/runpy.py", "run_module", FROM_RUN, NULL},
    {"/runpy.py", "run_path", FROM_RUN, NULL},
};

/* Frames between module code run without an import and what ran it. */
static bool transparent_frame(PyFrameObject *f)
{
	PyCodeObject *code = PyFrame_GetCode(f);
	const char *file = PyUnicode_AsUTF8(code->co_filename);
	bool transparent = file && (startswith(file, "<frozen importlib") ||
				    sb_guard_is_stdlib_source(file, "/importlib/__init__.py") ||
				    sb_guard_code_is(code, "/runpy.py", "_run_code") ||
				    sb_guard_code_is(code, "/runpy.py", "_run_module_code"));

	Py_DECREF(code);
	PyErr_Clear();
	return transparent;
}

/* Whether a function named `function` of file_rel is on the stack below f. */
static bool frame_below(PyFrameObject *f, const char *file_rel, const char *function)
{
	PyFrameObject *b = PyFrame_GetBack(f);
	bool found = false;

	for (int depth = 0; b && !found && depth < 64; depth++) {
		PyFrameObject *next;

		found = sb_guard_frame_is(b, file_rel, function);
		next = PyFrame_GetBack(b);
		Py_DECREF(b);
		b = next;
	}
	Py_XDECREF(b);
	return found;
}

/* Whether the code that made this request is a delegator importing this
 * way: the innermost frame for an import statement or an import function
 * called from Python (the import machinery's own imports have importlib
 * frames innermost: never a delegator), the first frame past the machinery
 * for module code run without an import. Only looked at when the runtime
 * exemption would otherwise apply: rare. */
static bool imported_for_the_program(enum import_origin origin)
{
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
	bool hit = false;

	if (origin == FROM_EVENT || !f)
		return false;
	Py_INCREF(f);
	while (origin == FROM_RUN && f && transparent_frame(f)) {
		PyFrameObject *back = PyFrame_GetBack(f);

		Py_DECREF(f);
		f = back;
	}
	for (size_t i = 0; f && !hit && i < ELEMENTSOF(import_delegators); i++)
		hit = import_delegators[i].how == origin &&
		      sb_guard_frame_is(f, import_delegators[i].file,
					import_delegators[i].function) &&
		      (!import_delegators[i].below ||
		       frame_below(f, import_delegators[i].file, import_delegators[i].below));
	Py_XDECREF(f);
	PyErr_Clear();
	return hit;
}

/* 0 when allowed, -1 with an exception set when refused. */
static int check_import(const char *module, enum import_origin origin)
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
	/* Our own C code's imports (a runtime section) stay ours even when a
	 * delegator of the program is further down the stack. */
	if (runtime_may_import(top) && sb_guard_caller_is_runtime() &&
	    (sb_guard_in_runtime_section() || !imported_for_the_program(origin)))
		return 0;
	return deny_import(module, top_len);
}

/* Whether frame is runpy's _run_module_as_main called by the interpreter
 * itself (`python-sb -m mod`), not by Python code. */
static bool is_interpreter_main(PyFrameObject *frame)
{
	PyFrameObject *back;
	bool main = false;

	if (!frame || !sb_guard_frame_is(frame, "/runpy.py", "_run_module_as_main"))
		return false;
	back = PyFrame_GetBack(frame);
	main = back == NULL;
	Py_XDECREF(back);
	return main;
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

		*ret_as_main = is_interpreter_main(back);
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

/* The name of the module whose code the innermost frame is about to run,
 * as a new reference, or NULL (no exception) when it runs no module. Every
 * module's code goes through importlib's _call_with_frames_removed(exec,
 * code, module.__dict__) or runpy's _run_code(code, globals, ..., mod_name,
 * mod_spec): the module's name is read from their arguments. */
static PyObject *module_being_run(PyFrameObject *frame)
{
	PyObject *name, *ns;
	bool as_main;

	sb_guard_module_run_target(frame, &name, &ns, &as_main);
	Py_XDECREF(ns);
	return name;
}

/* A loader's exec_module() or runpy.run_module() runs a module's code with
 * no "import" event for it: importlib.util.spec_from_file_location() +
 * exec_module() would run any file as a module. The name of the module
 * being run is checked as an import; a refused name passes only as a
 * standard-library module whose code really is the standard library's. */
static int on_exec(PyObject *args)
{
	PyObject *code_obj = PyTuple_GetItem(args, 0), *name;
	PyFrameObject *frame;
	const char *module, *file;
	size_t top_len;
	char top[256];
	int r = 0;

	if (!code_obj) {
		PyErr_Clear();
		return 0;
	}
	if (imports.import_all || !PyCode_Check(code_obj))
		return 0;
	frame = PyEval_GetFrame(); /* borrowed */
	name = frame ? module_being_run(frame) : NULL;
	if (!name)
		return 0;
	module = PyUnicode_AsUTF8(name);
	if (!module) {
		PyErr_Clear();
		goto out;
	}
	top_len = strcspn(module, ".");
	if (top_len == 0 || top_len >= sizeof(top)) {
		r = deny_import(module, top_len ? top_len : strlen(module));
		goto out;
	}
	memcpy(top, module, top_len);
	top[top_len] = '\0';
	if (top_level_allowed(top) || streq(top, "__main__"))
		goto out;
	file = PyUnicode_AsUTF8(((PyCodeObject *)code_obj)->co_filename);
	if (!file)
		PyErr_Clear();
	if (!(is_stdlib_module(top) && file && sb_guard_is_runtime_file(file)) ||
	    imported_for_the_program(FROM_RUN))
		r = deny_import(module, top_len);
out:
	Py_DECREF(name);
	return r;
}

static int on_import(PyObject *args)
{
	PyObject *module = PyTuple_GetItem(args, 0);
	const char *name = module ? PyUnicode_AsUTF8(module) : NULL;

	if (!name)
		return -1;
	return check_import(name, FROM_EVENT);
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
	int level;

	if (import_arguments(args, nargs, kwnames, a, &level) < 0)
		return NULL;
	if (sb_guard_armed()) {
		const char *name = NULL;

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
		if (name && check_import(name, FROM_STATEMENT) < 0)
			return NULL;
		if (!name && PyErr_Occurred())
			return NULL;
	}
	/* What builtins.__import__ does once it has parsed its arguments. */
	module = PyImport_ImportModuleLevelObject(a[0], a[1], a[2], a[3], level);
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
		const char *module;

		if (door == DOOR_BOOTSTRAP_IMPORT && level > 0 && globals &&
		    PyDict_Check(globals)) {
			package = PyDict_GetItemString(globals, "__package__");
			if (!package || !PyUnicode_Check(package))
				package = PyDict_GetItemString(globals, "__name__");
		}
		module = requested_module(name, package, level);
		if (module && check_import(module, FROM_DOOR) < 0)
			return NULL;
		if (!module && PyErr_Occurred())
			return NULL;
	}
	return PyObject_Call(imports.door_original[door], args, kwds);
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
