/* SPDX-License-Identifier: MIT */
/* Files that extension modules open in C, below any audit event: readline's
 * history and init files, POSIX shared memory (/dev/shm), dbm databases.
 * CPython 3.11 raises no event for them, so their functions are replaced, in
 * the module, by wrappers that ask the files part first. These modules load
 * late (readline with the REPL, _posixshmem with multiprocessing): the
 * wrappers go in when _imp creates the module (sb_guard_module_loaded). */
#include "guard-part.h"

#include <fcntl.h>

#include "guard-files-check.h"
#include "guard-runtime.h"
#include "util.h"

enum native_path {
	PATH_ARG,      /* a path argument; None: the library's default */
	PATH_SHM_NAME, /* a POSIX shared-memory name: /dev/shm/<name> */
};

struct native_fn {
	const char *module;
	const char *name;
	enum native_path kind;
	Py_ssize_t at;		  /* position of the path (or name) argument */
	const char *kw;		  /* its keyword, NULL if positional-only */
	Py_ssize_t flags;	  /* position of the open flags / dbm flag, -1: fixed */
	bool write;		  /* with flags: when they do not say */
	const char *default_file; /* under $HOME, when the path is None */
	PyObject *original;	  /* a strong reference, reachable from C only */
	PyMethodDef def;
};

enum {
	N_READ_HISTORY,
	N_WRITE_HISTORY,
	N_APPEND_HISTORY,
	N_READ_INIT,
	N_SHM_OPEN,
	N_SHM_UNLINK,
	N_DBM_OPEN,
	N_GDBM_OPEN,
	N__N,
};

/* libreadline's defaults: history_filename() is $HOME/.history and the init
 * file ~/.inputrc (INPUTRC is not in a sandboxed environment unless a rule
 * maps it, and then it names a file the rules must cover anyway). */
static struct native_fn native[N__N] = {
    [N_READ_HISTORY] = {"readline", "read_history_file", PATH_ARG, 0, NULL, -1, false, ".history"},
    [N_WRITE_HISTORY] = {"readline", "write_history_file", PATH_ARG, 0, NULL, -1, true, ".history"},
    [N_APPEND_HISTORY] = {"readline", "append_history_file", PATH_ARG, 1, NULL, -1, true,
			  ".history"},
    [N_READ_INIT] = {"readline", "read_init_file", PATH_ARG, 0, NULL, -1, false, ".inputrc"},
    [N_SHM_OPEN] = {"_posixshmem", "shm_open", PATH_SHM_NAME, 0, "path", 1, false},
    [N_SHM_UNLINK] = {"_posixshmem", "shm_unlink", PATH_SHM_NAME, 0, "path", -1, true},
    [N_DBM_OPEN] = {"_dbm", "open", PATH_ARG, 0, NULL, 1, false},
    [N_GDBM_OPEN] = {"_gdbm", "open", PATH_ARG, 0, NULL, 1, false},
};

static PyObject *argument(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, Py_ssize_t at,
			  const char *kw)
{
	if (at < nargs)
		return args[at];
	for (Py_ssize_t i = 0; kw && kwnames && i < PyTuple_GET_SIZE(kwnames); i++)
		if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), kw) == 0)
			return args[nargs + i];
	return NULL;
}

/* Whether the call may write, from its flags argument: os.O_* for
 * shm_open(), "r"/"w"/"c"/"n" for dbm (absent: "r"). */
static bool call_writes(const struct native_fn *fn, PyObject *flags)
{
	if (!flags)
		return fn->write;
	if (PyLong_Check(flags)) {
		long f = PyLong_AsLong(flags);

		if (f == -1 && PyErr_Occurred()) {
			PyErr_Clear();
			return true;
		}
		return (f & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0;
	}
	if (PyUnicode_Check(flags)) {
		const char *f = PyUnicode_AsUTF8(flags);

		if (!f) {
			PyErr_Clear();
			return true;
		}
		return f[0] != 'r';
	}
	return true;
}

/* 0 to go on, -1 with an exception (a refusal, or a path we cannot read). */
static int check_call(const struct native_fn *fn, PyObject *const *args, Py_ssize_t nargs,
		      PyObject *kwnames)
{
	PyObject *path = argument(args, nargs, kwnames, fn->at, fn->kw), *bytes = NULL;
	PyObject *flags = fn->flags >= 0 ? argument(args, nargs, kwnames, fn->flags, NULL) : NULL;
	_cleanup_free_ char *full = NULL;
	const char *raw;
	int r;

	if (!path || path == Py_None) {
		const char *home = getenv("HOME");

		/* A missing argument is the C function's to report. */
		if (!fn->default_file)
			return 0;
		/* No HOME: libreadline falls back to the current directory. */
		if (asprintf(&full, "%s/%s", home && *home ? home : ".", fn->default_file) < 0) {
			full = NULL;
			PyErr_NoMemory();
			return -1;
		}
		return sb_guard_file_check(full, call_writes(fn, flags));
	}
	if (!PyUnicode_FSConverter(path, &bytes))
		return -1;
	raw = PyBytes_AS_STRING(bytes);
	if (fn->kind == PATH_SHM_NAME) {
		/* glibc: shm_open("/x") is /dev/shm/x; a name with another '/' is
		 * EINVAL there, so only the leading ones are dropped. */
		while (*raw == '/')
			raw++;
		if (asprintf(&full, "/dev/shm/%s", raw) < 0) {
			full = NULL;
			Py_DECREF(bytes);
			PyErr_NoMemory();
			return -1;
		}
		raw = full;
	}
	r = sb_guard_file_check(raw, call_writes(fn, flags));
	Py_DECREF(bytes);
	return r;
}

static PyObject *call_native(struct native_fn *fn, PyObject *const *args, Py_ssize_t nargs,
			     PyObject *kwnames)
{
	PyObject *original = fn->original, *result;

	if (!original)
		return PyErr_Format(PyExc_RuntimeError, "%s.%s is not available", fn->module,
				    fn->name);
	if (sb_guard_armed() && check_call(fn, args, nargs, kwnames) < 0)
		return NULL;
	Py_INCREF(original);
	result = PyObject_Vectorcall(original, args, (size_t)nargs, kwnames);
	Py_DECREF(original);
	return result;
}

/* One C function per wrapper: with m_self NULL, nothing reachable from a
 * wrapper (gc.get_referents, __self__) leads to the original. */
#define NATIVE_WRAPPER(idx)                                                                        \
	static PyObject *wrap_##idx(PyObject *self _unused_, PyObject *const *args,                \
				    Py_ssize_t nargs, PyObject *kwnames)                           \
	{                                                                                          \
		return call_native(&native[idx], args, nargs, kwnames);                            \
	}
NATIVE_WRAPPER(N_READ_HISTORY)
NATIVE_WRAPPER(N_WRITE_HISTORY)
NATIVE_WRAPPER(N_APPEND_HISTORY)
NATIVE_WRAPPER(N_READ_INIT)
NATIVE_WRAPPER(N_SHM_OPEN)
NATIVE_WRAPPER(N_SHM_UNLINK)
NATIVE_WRAPPER(N_DBM_OPEN)
NATIVE_WRAPPER(N_GDBM_OPEN)

static PyObject *(*const native_wrapper[N__N])(PyObject *, PyObject *const *, Py_ssize_t,
					       PyObject *) = {
    [N_READ_HISTORY] = wrap_N_READ_HISTORY,
    [N_WRITE_HISTORY] = wrap_N_WRITE_HISTORY,
    [N_APPEND_HISTORY] = wrap_N_APPEND_HISTORY,
    [N_READ_INIT] = wrap_N_READ_INIT,
    [N_SHM_OPEN] = wrap_N_SHM_OPEN,
    [N_SHM_UNLINK] = wrap_N_SHM_UNLINK,
    [N_DBM_OPEN] = wrap_N_DBM_OPEN,
    [N_GDBM_OPEN] = wrap_N_GDBM_OPEN,
};

static int wrap_in(PyObject *module, size_t i)
{
	struct native_fn *fn = &native[i];
	PyObject *current, *wrapper, *modname;
	int r;

	current = PyObject_GetAttrString(module, fn->name);
	if (!current) {
		/* Not in this build of the module. */
		PyErr_Clear();
		return 0;
	}
	if (PyCFunction_Check(current) &&
	    PyCFunction_GET_FUNCTION(current) == (PyCFunction)(void (*)(void))native_wrapper[i]) {
		Py_DECREF(current);
		return 0;
	}
	/* A single-phase module re-created from its cached copy hands out the
	 * same C functions: keep the first original. */
	if (!fn->original)
		fn->original = Py_NewRef(current);
	Py_DECREF(current);
	if (!fn->def.ml_name) {
		fn->def.ml_name = fn->name;
		fn->def.ml_meth = (PyCFunction)(void (*)(void))native_wrapper[i];
		fn->def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
		fn->def.ml_doc = "Checked by the py-sandbox files guard, then the original.";
	}
	modname = PyUnicode_FromString(fn->module);
	wrapper = modname ? PyCFunction_NewEx(&fn->def, NULL, modname) : NULL;
	Py_XDECREF(modname);
	if (!wrapper)
		return -1;
	r = PyObject_SetAttrString(module, fn->name, wrapper);
	Py_DECREF(wrapper);
	return r;
}

static int native_module_loaded(const char *name, PyObject *module)
{
	for (size_t i = 0; i < N__N; i++)
		if (streq(native[i].module, name) && wrap_in(module, i) < 0)
			return -1;
	return 0;
}

static int native_prepare(const struct sb_profile *profile _unused_,
			  const struct sb_interp_paths *interp _unused_, char **reterr _unused_)
{
	return 0;
}

/* Modules loaded before the guard existed (a sitecustomize importing
 * readline) are wrapped now; the rest when they load. */
static int native_activate(char **reterr)
{
	for (size_t i = 0; i < N__N; i++) {
		PyObject *module = sb_guard_loaded_module(native[i].module);
		int r = module ? wrap_in(module, i) : PyErr_Occurred() ? -1 : 0;

		Py_XDECREF(module);
		if (r < 0) {
			PyErr_Clear();
			*reterr = strdup("cannot install the files guard for extension modules");
			return -EIO;
		}
	}
	return 0;
}

static void native_release(void)
{
	/* The originals belonged to the finalized interpreter: drop, don't DECREF. */
	for (size_t i = 0; i < N__N; i++) {
		native[i].original = NULL;
		native[i].def = (PyMethodDef){0};
	}
}

const struct sb_guard_part sb_guard_native_files_part = {
    .name = "native-files",
    .prepare = native_prepare,
    .activate = native_activate,
    .release = native_release,
    .module_loaded = native_module_loaded,
};
