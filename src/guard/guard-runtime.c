/* SPDX-License-Identifier: MIT */
/* Whose code is running: the interpreter's or the program's (guard-runtime.h). */
#include "guard-runtime.h"

#include <opcode.h>

#include "util.h"

struct sb_guard_run_state sb_guard_run;

/* All of it plain C data: no Python object holds it, so no introspection
 * (__subclasses__, gc.get_referents, closures) can reach or reset it. */
static struct {
	char *profile_path;
	char *stdlib_dir; /* code there is the runtime's, not the program's */
	size_t stdlib_dir_len;
	/* site-packages and dist-packages of sys.path as the interpreter set
	 * it up: third-party libraries, exempt as a path (guard-api-check.h). */
	char **site_dirs;
	size_t n_site_dirs;
	/* The open runtime section (sb_guard_runtime_enter), if any. */
	void *section_tstate;
	void *section_frame;
	bool program_started;
	bool main_run_pending;
	PyFrameObject *main_frame; /* strong: its address stays its own */
} known;

/* The import requests being served on each thread (sb_guard_request_enter). */
static _Thread_local struct sb_import_request *requests;

const char *sb_guard_profile_path(void)
{
	return known.profile_path ? known.profile_path : ".py-sandboxes";
}

/* Whether rel ("/a/b.py") names a file below its tree by the shortest
 * way: no "." or ".." component and no empty one. A name is all the
 * exemptions see, and importlib joins sys.path entries as they are: with
 * '<stdlib>/../../tmp' on sys.path, the program's module in /tmp would be
 * compiled from its own file under a name that starts like the standard
 * library's. */
static bool plain_relative(const char *rel)
{
	size_t n = strlen(rel);

	/* Asked on every frame a decision looks at: strstr() runs past the
	 * plain names in a few instructions. */
	if (n == 0 || rel[n - 1] == '/' || strstr(rel, "//"))
		return false;
	for (const char *c = strstr(rel, "/."); c; c = strstr(c + 1, "/.")) {
		const char *end = c[2] == '.' ? c + 3 : c + 2;

		if (*end == '\0' || *end == '/')
			return false;
	}
	return true;
}

/* The part of file after dir (len bytes, no trailing '/'), when file lies
 * below it by a plain name; else NULL. */
static const char *below(const char *file, const char *dir, size_t len)
{
	const char *rel;

	if (!dir || strncmp(file, dir, len) != 0)
		return NULL;
	rel = file + len;
	return *rel == '/' && plain_relative(rel) ? rel : NULL;
}

const char *sb_guard_runtime_relative(const char *file)
{
	const char *rel = below(file, known.stdlib_dir, known.stdlib_dir_len);

	/* Some builds (pyenv, venvs of them) keep third-party packages inside the
	 * standard library tree: those are not the runtime. */
	if (!rel || startswith(rel, "/site-packages/") || startswith(rel, "/dist-packages/"))
		return NULL;
	return rel;
}

const char *sb_guard_site_relative(const char *file)
{
	for (size_t i = 0; i < known.n_site_dirs; i++) {
		const char *rel = below(file, known.site_dirs[i], strlen(known.site_dirs[i]));

		if (rel)
			return rel;
	}
	return NULL;
}

bool sb_guard_is_site_file(const char *file)
{
	return sb_guard_site_relative(file) != NULL;
}

bool sb_guard_is_library_file(const char *file)
{
	return sb_guard_is_runtime_file(file) || sb_guard_is_site_file(file);
}

bool sb_guard_is_stdlib_source(const char *file, const char *rel)
{
	const char *mine = sb_guard_runtime_relative(file), *f;
	const char *end = rel + strlen(rel);

	if (mine)
		return streq(mine, rel);
	/* "<frozen collections>" for "/collections/__init__.py", "<frozen
	 * runpy>" for "/runpy.py": compare the dotted module name. */
	f = startswith(file, "<frozen ");
	if (!f || *rel != '/')
		return false;
	if (end - rel > 12 && streq(end - 12, "/__init__.py"))
		end -= 12;
	else if (end - rel > 3 && streq(end - 3, ".py"))
		end -= 3;
	else
		return false;
	for (const char *r = rel + 1; r < end; r++, f++)
		if (*f != (*r == '/' ? '.' : *r))
			return false;
	return streq(f, ">");
}

bool sb_guard_stdlib_module(const char *file, char *buf, size_t size)
{
	const char *rel = sb_guard_runtime_relative(file), *frozen;
	size_t n;

	if (!rel) {
		frozen = startswith(file, "<frozen ");
		n = frozen ? strlen(frozen) : 0;
		if (n < 2 || frozen[n - 1] != '>' || n - 1 >= size)
			return false;
		memcpy(buf, frozen, n - 1);
		buf[n - 1] = '\0';
		return true;
	}
	n = strlen(rel);
	if (n > 12 && streq(rel + n - 12, "/__init__.py"))
		n -= 12;
	else if (n > 3 && streq(rel + n - 3, ".py"))
		n -= 3;
	else
		return false;
	/* After the leading '/': a path of names without dots. */
	rel++, n--;
	if (n == 0 || n >= size)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (rel[i] == '.')
			return false;
		buf[i] = rel[i] == '/' ? '.' : rel[i];
	}
	buf[n] = '\0';
	return true;
}

bool sb_guard_code_is(PyCodeObject *code, const char *file_rel, const char *function)
{
	const char *file = PyUnicode_AsUTF8(code->co_filename);

	if (!file) {
		PyErr_Clear();
		return false;
	}
	return sb_guard_is_stdlib_source(file, file_rel) &&
	       PyUnicode_CompareWithASCIIString(code->co_name, function) == 0;
}

bool sb_guard_frame_is(PyFrameObject *frame, const char *file_rel, const char *function)
{
	PyCodeObject *code = PyFrame_GetCode(frame);
	bool is = sb_guard_code_is(code, file_rel, function);

	Py_DECREF(code);
	return is;
}

PyObject *sb_guard_frame_local(PyFrameObject *frame, const char *name)
{
	PyObject *locals = PyFrame_GetLocals(frame), *value;

	if (!locals) {
		PyErr_Clear();
		return NULL;
	}
	value = PyMapping_Check(locals) ? PyMapping_GetItemString(locals, name) : NULL;
	Py_DECREF(locals);
	if (!value)
		PyErr_Clear();
	return value;
}

bool sb_guard_is_runtime_file(const char *file)
{
	return startswith(file, "<frozen ") || sb_guard_runtime_relative(file);
}

void sb_guard_runtime_enter(struct sb_runtime_section *s)
{
	s->saved_active = sb_guard_run.section_open;
	s->saved_tstate = known.section_tstate;
	s->saved_frame = known.section_frame;
	known.section_tstate = PyThreadState_Get();
	known.section_frame = PyEval_GetFrame();
	sb_guard_run.section_open = true;
}

void sb_guard_runtime_leave(struct sb_runtime_section *s)
{
	sb_guard_run.section_open = s->saved_active;
	known.section_tstate = s->saved_tstate;
	known.section_frame = s->saved_frame;
}

static bool frame_is_runtime(PyFrameObject *frame)
{
	PyCodeObject *code = PyFrame_GetCode(frame);
	const char *file = PyUnicode_AsUTF8(code->co_filename);
	bool runtime = file && sb_guard_is_runtime_file(file);

	if (!file)
		PyErr_Clear();
	Py_DECREF(code);
	return runtime;
}

/* The section's own events: raised with the frame it was entered from, or
 * from runtime frames (the import machinery, runpy) that the section's C
 * code called, down to the first frame of the program (a module's body, a
 * function), whose events are the program's. */
bool sb_guard_in_runtime_section(void)
{
	PyFrameObject *frame;

	if (!sb_guard_run.section_open || PyThreadState_Get() != known.section_tstate)
		return false;
	frame = PyEval_GetFrame(); /* borrowed */
	if ((void *)frame == known.section_frame)
		return true;
	Py_XINCREF(frame);
	for (int depth = 0; frame && depth < 64 && frame_is_runtime(frame); depth++) {
		PyFrameObject *back = PyFrame_GetBack(frame);

		Py_DECREF(frame);
		frame = back;
		if ((void *)frame == known.section_frame) {
			Py_XDECREF(frame);
			return true;
		}
	}
	Py_XDECREF(frame);
	return false;
}

PyObject *sb_guard_loaded_module(const char *name)
{
	PyObject *key = PyUnicode_FromString(name), *m;

	if (!key)
		return NULL;
	m = PyImport_GetModule(key);
	Py_DECREF(key);
	return m;
}

/* Only the innermost frame counts: the interpreter's own code, or no frame
 * at all. The API guard's exemptions ask this; the import decisions ask
 * sb_guard_requester(). */
bool sb_guard_caller_is_runtime(void)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyCodeObject *code;
	const char *file;
	bool runtime;

	if (sb_guard_in_runtime_section())
		return true;
	/* No Python frame at all: the interpreter itself is acting. */
	if (!frame)
		return true;
	code = PyFrame_GetCode(frame);
	file = PyUnicode_AsUTF8(code->co_filename);
	runtime = file && sb_guard_is_runtime_file(file);
	if (!file)
		PyErr_Clear();
	Py_DECREF(code);
	return runtime;
}

/* Only the innermost frame, and only importlib's frozen bootstrap
 * ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>"):
 * the files part exempts its stat probes and lets its bytecode-cache writes
 * fail unrecorded. */
bool sb_guard_caller_is_import_bootstrap(void)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyCodeObject *code;
	const char *file;
	bool r;

	if (!frame)
		return false;
	code = PyFrame_GetCode(frame);
	file = PyUnicode_AsUTF8(code->co_filename);
	r = file && startswith(file, "<frozen importlib._bootstrap");
	if (!file)
		PyErr_Clear();
	Py_DECREF(code);
	return r;
}

/* The modules whose functions act on a module name, a spec or a loader
 * handed to them: importlib's bootstrap and the parts of importlib that
 * expose it (import_module, util, machinery, the loader ABCs), and
 * zipimport's loader. Not importlib.metadata or importlib.resources, whose
 * imports are their own. */
static const char *const machinery_modules[] = {
    "importlib",     "importlib._abc",	    "importlib._bootstrap", "importlib._bootstrap_external",
    "importlib.abc", "importlib.machinery", "importlib.util",	    "zipimport",
};

bool sb_guard_is_import_machinery(const char *file)
{
	char name[64];

	/* The common case, the frozen bootstrap, without making a name. */
	if (startswith(file, "<frozen importlib._bootstrap"))
		return true;
	if (!sb_guard_stdlib_module(file, name, sizeof(name)))
		return false;
	for (size_t i = 0; i < ELEMENTSOF(machinery_modules); i++)
		if (streq(name, machinery_modules[i]))
			return true;
	return false;
}

void sb_guard_request_enter(struct sb_import_request *r, const char *name, bool c_code)
{
	size_t n = name ? strlen(name) : 0;

	if (n >= sizeof(r->name))
		n = strcspn(name, ".");
	if (n >= sizeof(r->name))
		n = 0;
	memcpy(r->name, name ? name : "", n);
	r->name[n] = '\0';
	r->outer = requests;
	r->frame = PyEval_GetFrame();
	r->c_code = c_code;
	r->library_extension = false;
	requests = r;
}

void sb_guard_request_leave(struct sb_import_request *r)
{
	requests = r->outer;
}

/* The code file of frame, borrowed from its code object (which the frame
 * keeps alive), or NULL. */
static const char *frame_file(PyFrameObject *frame)
{
	PyCodeObject *code = PyFrame_GetCode(frame);
	const char *file = PyUnicode_AsUTF8(code->co_filename);

	if (!file)
		PyErr_Clear();
	Py_DECREF(code);
	return file;
}

bool sb_guard_library_extension_acting(void)
{
	const struct sb_import_request *top = requests;
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	const char *file;

	/* The program calling _imp itself drives it: its frame is the
	 * request's, and what runs is its act. */
	if (!top || !top->library_extension || !frame || (void *)frame != top->frame)
		return false;
	file = frame_file(frame);
	return file && sb_guard_is_import_machinery(file);
}

/* From the innermost frame outwards, past the import machinery's frames:
 * the first frame that is an open request's (the machinery serves it), or
 * the first frame that is not the machinery's (it called the machinery
 * directly), or none. Only the innermost request can be met first: the
 * frames above an older request's are all newer than the request that
 * followed it. Bounded: a stack deeper than the bound in machinery frames
 * alone is charged to the program. */
enum sb_requester sb_guard_requester(const struct sb_import_request **ret_request,
				     PyFrameObject **ret_frame)
{
	struct sb_import_request *top = requests;
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
	const char *file = NULL;
	int depth;

	*ret_request = NULL;
	if (ret_frame)
		*ret_frame = NULL;
	Py_XINCREF(f);
	for (depth = 0; f && depth < 256; depth++) {
		PyFrameObject *back;

		if (top && (void *)f == top->frame) {
			Py_DECREF(f);
			*ret_request = top;
			return SB_ASKED_FOR_REQUEST;
		}
		file = frame_file(f);
		if (!file || !sb_guard_is_import_machinery(file))
			break;
		back = PyFrame_GetBack(f);
		Py_DECREF(f);
		f = back;
	}
	if (!f) {
		if (top && !top->frame) {
			*ret_request = top;
			return SB_ASKED_FOR_REQUEST;
		}
		return SB_ASKED_BY_NOBODY;
	}
	if (ret_frame)
		*ret_frame = f;
	else
		Py_DECREF(f);
	if (depth < 256 && file && sb_guard_is_runtime_file(file))
		return SB_ASKED_BY_STDLIB;
	return SB_ASKED_BY_PROGRAM;
}

/* The instruction at byte offset lasti of code and its argument (with its
 * EXTENDED_ARG prefixes), or false. CPython 3.11 runs the code from
 * co_code_adaptive, where IMPORT_NAME is never specialised (its prefixes
 * may be EXTENDED_ARG_QUICK): read there, with no copy. Later versions:
 * the unspecialised copy, which the code object caches. */
static bool instruction_at(PyCodeObject *code, int lasti, int *ret_op, unsigned *ret_arg)
{
#if PY_VERSION_HEX < 0x030C0000
	const _Py_CODEUNIT *c = _PyCode_CODE(code);
	Py_ssize_t i = lasti / (int)sizeof(_Py_CODEUNIT), n = Py_SIZE(code);
	unsigned arg;

	if (lasti < 0 || i >= n)
		return false;
	*ret_op = _Py_OPCODE(c[i]);
	arg = _Py_OPARG(c[i]);
	for (int k = 1, shift = 8; k <= 3 && i - k >= 0; k++, shift += 8) {
		int op = _Py_OPCODE(c[i - k]);

		if (op != EXTENDED_ARG && op != EXTENDED_ARG_QUICK)
			break;
		arg |= (unsigned)_Py_OPARG(c[i - k]) << shift;
	}
	*ret_arg = arg;
	return true;
#else
	PyObject *bytes = lasti >= 0 ? PyCode_GetCode(code) : NULL;
	const unsigned char *c;
	Py_ssize_t n;
	unsigned arg;

	if (!bytes || !PyBytes_Check(bytes)) {
		Py_XDECREF(bytes);
		PyErr_Clear();
		return false;
	}
	c = (const unsigned char *)PyBytes_AS_STRING(bytes);
	n = PyBytes_GET_SIZE(bytes);
	if (lasti + 1 >= n) {
		Py_DECREF(bytes);
		return false;
	}
	*ret_op = c[lasti];
	arg = c[lasti + 1];
	for (int k = lasti - 2, shift = 8; k >= 0 && shift < 32 && c[k] == EXTENDED_ARG;
	     k -= 2, shift += 8)
		arg |= (unsigned)c[k + 1] << shift;
	*ret_arg = arg;
	Py_DECREF(bytes);
	return true;
#endif
}

/* Whether the package a relative import in code resolves against (its
 * globals' __package__, which CPython takes first) is the one code's file
 * is in: the standard library's module that code is, or its parent for a
 * module that is not a package. The program can write __package__ into a
 * loaded module's namespace; `from .process import X` in concurrent.futures
 * would then import a package of its choosing. */
static bool relative_base_is_own(PyCodeObject *code, PyObject *globals)
{
	const char *file = PyUnicode_AsUTF8(code->co_filename);
	PyObject *package;
	char own[256];
	size_t n;

	if (!file || !PyDict_Check(globals) || !sb_guard_stdlib_module(file, own, sizeof(own)))
		return false;
	n = strlen(file);
	if (!(n > 12 && streq(file + n - 12, "/__init__.py"))) {
		char *dot = strrchr(own, '.');

		if (!dot)
			return false;
		*dot = '\0';
	}
	package = PyDict_GetItemString(globals, "__package__"); /* borrowed */
	return package && PyUnicode_Check(package) &&
	       PyUnicode_CompareWithASCIIString(package, own) == 0;
}

bool sb_guard_frame_imports_literal(PyFrameObject *frame, PyObject *name, PyObject *globals,
				    int level)
{
	PyCodeObject *code = PyFrame_GetCode(frame);
	PyObject *literal, *own_globals = NULL;
	unsigned oparg;
	bool r = false;
	int op;

	if (!PyUnicode_Check(name) || !instruction_at(code, PyFrame_GetLasti(frame), &op, &oparg) ||
	    op != IMPORT_NAME)
		goto out;
	literal =
	    PyTuple_Check(code->co_names) && oparg < (unsigned)PyTuple_GET_SIZE(code->co_names)
		? PyTuple_GET_ITEM(code->co_names, oparg)
		: NULL;
	if (!literal || PyUnicode_Compare(literal, name) != 0)
		goto out;
	/* A relative import resolves against the importer's globals: its own,
	 * with its own package in them, or a name its code does not write. */
	if (level > 0) {
		own_globals = PyFrame_GetGlobals(frame);
		if (own_globals != globals || !relative_base_is_own(code, globals))
			goto out;
	}
	r = true;
out:
	Py_XDECREF(own_globals);
	Py_DECREF(code);
	PyErr_Clear();
	return r;
}

bool sb_guard_program_started(void)
{
	return known.program_started;
}

void sb_guard_note_program_start(void)
{
	known.program_started = true;
}

void sb_guard_note_main_module(void)
{
	known.main_run_pending = !known.main_frame;
}

bool sb_guard_is_main_run_frame(PyFrameObject *frame)
{
	PyFrameObject *back;

	if (!frame || (!known.main_frame && !known.main_run_pending))
		return false;
	if (known.main_frame)
		return frame == known.main_frame;
	if (!sb_guard_frame_is(frame, "/runpy.py", "_run_module_as_main"))
		return false;
	back = PyFrame_GetBack(frame);
	Py_XDECREF(back);
	if (back)
		return false;
	known.main_run_pending = false;
	known.main_frame = (PyFrameObject *)Py_NewRef(frame);
	return true;
}

bool sb_guard_in_main_run(void)
{
	PyFrameObject *f = PyEval_GetFrame(), *back; /* borrowed */
	bool main = false;

	if (!f || (!known.main_frame && !known.main_run_pending))
		return false;
	Py_INCREF(f);
	for (int depth = 0; f && depth < 256; depth++) {
		const char *file = frame_file(f);

		if (!file || !sb_guard_is_runtime_file(file))
			break;
		back = PyFrame_GetBack(f);
		if (!back) {
			main = sb_guard_is_main_run_frame(f);
			break;
		}
		Py_DECREF(f);
		f = back;
	}
	Py_XDECREF(f);
	return main;
}

bool sb_guard_serving_import(void)
{
	const struct sb_import_request *req;

	return sb_guard_requester(&req, NULL) == SB_ASKED_FOR_REQUEST ||
	       sb_guard_in_runtime_section() || sb_guard_in_main_run();
}

int sb_guard_runtime_prepare(const char *profile_path)
{
	if (profile_path && !(known.profile_path = strdup(profile_path)))
		return -ENOMEM;
	return 0;
}

/* The site-packages and dist-packages directories of sys.path, before the
 * program runs (what it adds later is its own). */
static int site_dirs_activate(void)
{
	PyObject *path = PySys_GetObject("path"); /* borrowed */
	Py_ssize_t n;

	if (!path || !PyList_Check(path))
		return 0;
	n = PyList_GET_SIZE(path);
	known.site_dirs = calloc((size_t)n + 1, sizeof(char *));
	if (!known.site_dirs)
		return -ENOMEM;
	for (Py_ssize_t k = 0; k < n; k++) {
		PyObject *item = PyList_GET_ITEM(path, k);
		const char *dir = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
		const char *base;
		char *copy;
		size_t len;

		if (!dir) {
			PyErr_Clear();
			continue;
		}
		len = strlen(dir);
		while (len > 1 && dir[len - 1] == '/')
			len--;
		base = memrchr(dir, '/', len);
		base = base ? base + 1 : dir;
		if ((size_t)(dir + len - base) != strlen("site-packages") ||
		    (strncmp(base, "site-packages", strlen("site-packages")) != 0 &&
		     strncmp(base, "dist-packages", strlen("dist-packages")) != 0))
			continue;
		copy = strndup(dir, len);
		if (!copy)
			return -ENOMEM;
		/* A directory named by a detour ("/x/../site-packages") is
		 * not one a name can be checked against. */
		if (copy[0] != '/' || !plain_relative(copy)) {
			free(copy);
			continue;
		}
		known.site_dirs[known.n_site_dirs++] = copy;
	}
	return 0;
}

int sb_guard_runtime_activate(void)
{
	PyObject *stdlib_dir = PySys_GetObject("_stdlib_dir"); /* borrowed */

	if (stdlib_dir && PyUnicode_Check(stdlib_dir)) {
		const char *dir = PyUnicode_AsUTF8(stdlib_dir);

		if (dir && !(known.stdlib_dir = strdup(dir)))
			return -ENOMEM;
		if (known.stdlib_dir) {
			known.stdlib_dir_len = strlen(known.stdlib_dir);
			while (known.stdlib_dir_len > 1 &&
			       known.stdlib_dir[known.stdlib_dir_len - 1] == '/')
				known.stdlib_dir_len--;
		}
	}
	PyErr_Clear();
	return site_dirs_activate();
}

void sb_guard_runtime_arm(void)
{
	sb_guard_run.armed = true;
}

void sb_guard_runtime_release(void)
{
	free(known.profile_path);
	free(known.stdlib_dir);
	for (size_t i = 0; i < known.n_site_dirs; i++)
		free(known.site_dirs[i]);
	free(known.site_dirs);
	memset(&known, 0, sizeof(known));
	memset(&sb_guard_run, 0, sizeof(sb_guard_run));
}
