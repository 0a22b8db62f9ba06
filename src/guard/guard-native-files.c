/* SPDX-License-Identifier: MIT */
/* Files that extension modules open in C, below any audit event: readline's
 * history and init files, POSIX shared memory and named semaphores
 * (/dev/shm), dbm databases, and the files the C library's name service
 * reads for pwd, grp and spwd (/etc/passwd, /etc/group, /etc/shadow).
 * CPython 3.11 raises no event for them, so their functions are replaced, in
 * the module, by wrappers that ask the files part first (and the named
 * semaphore type's constructor by a checking one). These modules load late
 * (readline with the REPL, _posixshmem with multiprocessing): the wrappers
 * go in when _imp creates the module (sb_guard_module_loaded). */
#include "guard-part.h"

#include <fcntl.h>
#include <unistd.h>

#include "guard-files-check.h"
#include "guard-runtime.h"
#include "util.h"

enum native_path {
	PATH_ARG,      /* a path argument; None: the library's default */
	PATH_SHM_NAME, /* a POSIX shared-memory name: /dev/shm/<name> */
	PATH_SEM_NAME, /* a POSIX semaphore name: /dev/shm/sem.<name> */
	PATH_FIXED,    /* always the file default_file (absolute) */
	/* An entry of a name-service database (default_file) by id or name:
	 * the process's own user and groups pass; any other, refused as
	 * "not found" (KeyError), as the C library reports a database it
	 * cannot read, so that callers catching it (tarfile, expanduser)
	 * keep working; the refusal, with the rule to add, is its message. */
	PATH_NSS_ENTRY,
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
	N_SEM_UNLINK,
	N_GETPWUID,
	N_GETPWNAM,
	N_GETPWALL,
	N_GETGRGID,
	N_GETGRNAM,
	N_GETGRALL,
	N_GETSPNAM,
	N_GETSPALL,
	N_GETGROUPLIST_POSIX,
	N_GETLOGIN_POSIX,
	N_GETGROUPLIST_OS,
	N_GETLOGIN_OS,
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
    [N_SEM_UNLINK] = {"_multiprocessing", "sem_unlink", PATH_SEM_NAME, 0, NULL, -1, true},
    /* The name service's files databases (nsswitch.conf's "files"). */
    [N_GETPWUID] = {"pwd", "getpwuid", PATH_NSS_ENTRY, 0, NULL, -1, false, "/etc/passwd"},
    [N_GETPWNAM] = {"pwd", "getpwnam", PATH_NSS_ENTRY, 0, NULL, -1, false, "/etc/passwd"},
    [N_GETPWALL] = {"pwd", "getpwall", PATH_FIXED, 0, NULL, -1, false, "/etc/passwd"},
    [N_GETGRGID] = {"grp", "getgrgid", PATH_NSS_ENTRY, 0, NULL, -1, false, "/etc/group"},
    [N_GETGRNAM] = {"grp", "getgrnam", PATH_NSS_ENTRY, 0, NULL, -1, false, "/etc/group"},
    [N_GETGRALL] = {"grp", "getgrall", PATH_FIXED, 0, NULL, -1, false, "/etc/group"},
    [N_GETSPNAM] = {"spwd", "getspnam", PATH_FIXED, 0, NULL, -1, false, "/etc/shadow"},
    [N_GETSPALL] = {"spwd", "getspall", PATH_FIXED, 0, NULL, -1, false, "/etc/shadow"},
    [N_GETGROUPLIST_POSIX] = {"posix", "getgrouplist", PATH_FIXED, 0, NULL, -1, false,
			      "/etc/group"},
    [N_GETGROUPLIST_OS] = {"os", "getgrouplist", PATH_FIXED, 0, NULL, -1, false, "/etc/group"},
    /* The login records. */
    [N_GETLOGIN_POSIX] = {"posix", "getlogin", PATH_FIXED, 0, NULL, -1, false, "/var/run/utmp"},
    [N_GETLOGIN_OS] = {"os", "getlogin", PATH_FIXED, 0, NULL, -1, false, "/var/run/utmp"},
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

/* Whether id (an int object) is the process's own user or one of its
 * groups. */
static bool own_id(PyObject *id, bool group)
{
	long v = PyLong_Check(id) ? PyLong_AsLong(id) : -1;
	gid_t groups[256];
	int n;

	if (v == -1 && PyErr_Occurred()) {
		PyErr_Clear();
		return false;
	}
	if (!group)
		return v >= 0 && ((uid_t)v == getuid() || (uid_t)v == geteuid());
	if (v >= 0 && ((gid_t)v == getgid() || (gid_t)v == getegid()))
		return true;
	n = getgroups((int)ELEMENTSOF(groups), groups);
	for (int i = 0; i < n; i++)
		if (v >= 0 && groups[i] == (gid_t)v)
			return true;
	return false;
}

/* PATH_NSS_ENTRY: the process's own ids pass; otherwise the file's rule
 * decides, and a refusal is reported as the entry not found. */
static int check_nss_entry(const struct native_fn *fn, PyObject *key)
{
	PyObject *type, *value, *tb, *text;

	if (key && PyLong_Check(key) && own_id(key, streq(fn->module, "grp")))
		return 0;
	if (sb_guard_file_check(fn->default_file, false) == 0)
		return 0;
	PyErr_Fetch(&type, &value, &tb);
	text = value ? PyObject_Str(value) : NULL;
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
	if (!text)
		return -1;
	PyErr_Format(PyExc_KeyError, "%s(): not found: %U", fn->name, text);
	Py_DECREF(text);
	return -1;
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

	if (fn->kind == PATH_FIXED)
		return sb_guard_file_check(fn->default_file, false);
	if (fn->kind == PATH_NSS_ENTRY)
		return check_nss_entry(fn, path);
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
	if (fn->kind == PATH_SHM_NAME || fn->kind == PATH_SEM_NAME) {
		/* glibc: shm_open("/x") is /dev/shm/x and sem_open("/x")
		 * /dev/shm/sem.x; a name with another '/' is EINVAL there, so
		 * only the leading ones are dropped. */
		while (*raw == '/')
			raw++;
		if (asprintf(&full, "/dev/shm/%s%s", fn->kind == PATH_SEM_NAME ? "sem." : "", raw) <
		    0) {
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
NATIVE_WRAPPER(N_SEM_UNLINK)
NATIVE_WRAPPER(N_GETPWUID)
NATIVE_WRAPPER(N_GETPWNAM)
NATIVE_WRAPPER(N_GETPWALL)
NATIVE_WRAPPER(N_GETGRGID)
NATIVE_WRAPPER(N_GETGRNAM)
NATIVE_WRAPPER(N_GETGRALL)
NATIVE_WRAPPER(N_GETSPNAM)
NATIVE_WRAPPER(N_GETSPALL)
NATIVE_WRAPPER(N_GETGROUPLIST_POSIX)
NATIVE_WRAPPER(N_GETGROUPLIST_OS)
NATIVE_WRAPPER(N_GETLOGIN_POSIX)
NATIVE_WRAPPER(N_GETLOGIN_OS)

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
    [N_SEM_UNLINK] = wrap_N_SEM_UNLINK,
    [N_GETPWUID] = wrap_N_GETPWUID,
    [N_GETPWNAM] = wrap_N_GETPWNAM,
    [N_GETPWALL] = wrap_N_GETPWALL,
    [N_GETGRGID] = wrap_N_GETGRGID,
    [N_GETGRNAM] = wrap_N_GETGRNAM,
    [N_GETGRALL] = wrap_N_GETGRALL,
    [N_GETSPNAM] = wrap_N_GETSPNAM,
    [N_GETSPALL] = wrap_N_GETSPALL,
    [N_GETGROUPLIST_POSIX] = wrap_N_GETGROUPLIST_POSIX,
    [N_GETGROUPLIST_OS] = wrap_N_GETGROUPLIST_OS,
    [N_GETLOGIN_POSIX] = wrap_N_GETLOGIN_POSIX,
    [N_GETLOGIN_OS] = wrap_N_GETLOGIN_OS,
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

/* _multiprocessing.SemLock(kind, value, maxvalue, name, unlink) creates a
 * named semaphore (sem_open(name, O_CREAT | O_EXCL): /dev/shm/sem.<name>),
 * and SemLock._rebuild(handle, kind, maxvalue, name) opens one by name: the
 * type's constructor and that class method are replaced in C (the type is
 * immutable to Python code), so that instances, isinstance() and
 * subclasses stay as they are. */
static struct {
	newfunc original_new;
	PyObject *original_rebuild; /* the class method descriptor */
	PyMethodDef rebuild_def;
} semlock;

static int check_semaphore(PyObject *name)
{
	PyObject *arg[1] = {name};

	if (!name || name == Py_None || !sb_guard_armed())
		return 0;
	return check_call(&(struct native_fn){.kind = PATH_SEM_NAME, .write = true, .flags = -1},
			  arg, 1, NULL);
}

static PyObject *guarded_semlock_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	PyObject *name = PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 3
			     ? PyTuple_GET_ITEM(args, 3)
			     : (kwds ? PyDict_GetItemString(kwds, "name") : NULL);

	if (check_semaphore(name) < 0)
		return NULL;
	return semlock.original_new(type, args, kwds);
}

static PyObject *guarded_semlock_rebuild(PyObject *cls, PyObject *const *args, Py_ssize_t nargs,
					 PyObject *kwnames)
{
	PyObject *bound, *result;

	if (check_semaphore(nargs > 3 ? args[3] : NULL) < 0)
		return NULL;
	bound =
	    Py_TYPE(semlock.original_rebuild)->tp_descr_get(semlock.original_rebuild, NULL, cls);
	if (!bound)
		return NULL;
	result = PyObject_Vectorcall(bound, args, (size_t)nargs, kwnames);
	Py_DECREF(bound);
	return result;
}

static int wrap_semlock(PyObject *module)
{
	PyObject *type = PyObject_GetAttrString(module, "SemLock"), *dict, *current, *wrapper;
	PyTypeObject *t;
	int r = -1;

	if (!type) {
		PyErr_Clear();
		return 0;
	}
	if (!PyType_Check(type)) {
		Py_DECREF(type);
		return 0;
	}
	t = (PyTypeObject *)type;
	if (t->tp_new != guarded_semlock_new) {
		semlock.original_new = t->tp_new;
		t->tp_new = guarded_semlock_new;
	}
	dict = t->tp_dict;
	current = PyDict_GetItemString(dict, "_rebuild"); /* borrowed */
	if (current && Py_TYPE(current)->tp_descr_get && !semlock.original_rebuild) {
		semlock.original_rebuild = Py_NewRef(current);
		semlock.rebuild_def = (PyMethodDef){
		    .ml_name = "_rebuild",
		    .ml_meth = (PyCFunction)(void (*)(void))guarded_semlock_rebuild,
		    .ml_flags = METH_FASTCALL | METH_KEYWORDS | METH_CLASS,
		    .ml_doc = "Checked by the py-sandbox files guard, then the original.",
		};
		wrapper = PyDescr_NewClassMethod(t, &semlock.rebuild_def);
		if (!wrapper || PyDict_SetItemString(dict, "_rebuild", wrapper) < 0) {
			Py_XDECREF(wrapper);
			goto out;
		}
		Py_DECREF(wrapper);
		PyType_Modified(t);
	}
	r = 0;
out:
	Py_DECREF(type);
	return r;
}

static int native_module_loaded(const char *name, PyObject *module)
{
	for (size_t i = 0; i < N__N; i++)
		if (streq(native[i].module, name) && wrap_in(module, i) < 0)
			return -1;
	if (streq(name, "_multiprocessing") && wrap_semlock(module) < 0)
		return -1;
	return 0;
}

static int native_prepare(const struct sb_profile *profile _unused_,
			  const struct sb_interp_paths *interp _unused_, char **reterr _unused_)
{
	return 0;
}

/* Modules loaded before the guard existed (a sitecustomize importing
 * readline; posix, os, pwd) are wrapped now, each looked up once with a
 * plain look in sys.modules (no import is in progress at activation); the
 * rest when they load. */
static int native_activate(char **reterr)
{
	PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
	int r = 0;

	for (size_t i = 0; r >= 0 && i < N__N; i++) {
		PyObject *module;

		/* The table lists a module's functions together (_multiprocessing's
		 * SemLock comes with its sem_unlink). */
		if (i > 0 && streq(native[i].module, native[i - 1].module))
			continue;
		module = PyDict_GetItemString(modules, native[i].module); /* borrowed */
		if (module)
			r = native_module_loaded(native[i].module, module);
	}
	if (r < 0 || PyErr_Occurred()) {
		PyErr_Clear();
		*reterr = strdup("cannot install the files guard for extension modules");
		return -EIO;
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
	memset(&semlock, 0, sizeof(semlock));
}

const struct sb_guard_part sb_guard_native_files_part = {
    .name = "native-files",
    .prepare = native_prepare,
    .activate = native_activate,
    .release = native_release,
    .module_loaded = native_module_loaded,
};
