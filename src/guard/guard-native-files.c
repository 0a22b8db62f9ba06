/* SPDX-License-Identifier: MIT */
/* Files, devices and sockets that the standard library's C modules open in
 * C, below any audit event the files part judges (CPython 3.11 as Debian
 * ships it, lib-dynload and the built-in modules audited one by one):
 * readline's history and init files, POSIX shared memory and named
 * semaphores (/dev/shm), dbm databases, the files the C library's name
 * service reads for pwd, grp and spwd (/etc/passwd, /etc/group,
 * /etc/shadow), OpenSSL's certificate, key and DH files (ssl's loaders, and
 * the files SSL_CERT_FILE / SSL_CERT_DIR name), pseudo-terminals
 * (os.openpty, os.forkpty: /dev/ptmx), OSS audio devices, curses' terminfo
 * database named by TERMINFO, libuuid's daemon socket and clock file, and
 * syslog's Unix socket /dev/log. Without this, a program reads what
 * ignore= hides or what no rule grants through a C library, with the guard
 * alone (os-sandbox=none) or where the kernel layer cannot tell (a Unix
 * socket's connect()). Their functions are replaced, in the module (or the
 * type, for a method), by wrappers that ask the files part first (and the
 * named semaphore type's constructor by a checking one); syslog, forkpty
 * and the setting of TZ raise an event, judged here (and sethostname,
 * refused: no file, but the host's name, which nothing else judges). These
 * modules load late (readline with the REPL, _posixshmem with
 * multiprocessing): the wrappers go in when _imp creates the module
 * (sb_guard_module_loaded). */
#include "guard-part.h"

#include <descrobject.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <syslog.h>
#include <unistd.h>

#include "guard-files-check.h"
#include "guard-net.h"
#include "guard-runtime.h"
#include "pysandboxes-module.h"
#include "util.h"

enum native_path {
	PATH_ARG,      /* a path argument; None: env's value, else the library's default */
	PATH_SHM_NAME, /* a POSIX shared-memory name: /dev/shm/<name> */
	PATH_SEM_NAME, /* a POSIX semaphore name: /dev/shm/sem.<name> */
	PATH_FIXED,    /* always the file default_file (absolute) */
	/* ossaudiodev.open([device, ]mode): one argument is the mode. */
	PATH_OSS_OPEN,
	/* OpenSSL's defaults: SSL_CERT_FILE, and SSL_CERT_DIR's directories,
	 * when set (unset: the system's CA store, readable without a rule). */
	PATH_SSL_DEFAULTS,
	/* ncurses' terminfo database: TERMINFO, TERMINFO_DIRS, ~/.terminfo
	 * (the system's directories are data, like the time zones). */
	PATH_TERMINFO,
	/* libuuid: the uuidd socket, then its clock file, each when present. */
	PATH_UUIDD,
	/* An entry of a name-service database (default_file) by id or name:
	 * the process's own user and groups pass; any other, refused as
	 * "not found" (KeyError), as the C library reports a database it
	 * cannot read, so that callers catching it (tarfile, expanduser)
	 * keep working; the refusal, with the rule to add, is its message. */
	PATH_NSS_ENTRY,
};

/* A type's method replaced in each copy of its module (a multi-phase
 * module made again gets new types): the originals, by type. */
#define NATIVE_TYPES 4

struct native_fn {
	const char *module;
	const char *name;
	enum native_path kind;
	Py_ssize_t at;		  /* position of the path (or name) argument */
	const char *kw;		  /* its keyword, NULL if positional-only */
	Py_ssize_t flags;	  /* position of the open flags / dbm flag, -1: fixed */
	bool write;		  /* with flags: when they do not say */
	const char *default_file; /* absolute, or under $HOME: when the path is None */
	const char *env;	  /* names the path, when set and the path is None */
	const char *type;	  /* a method of this type of the module, not a function */
	Py_ssize_t at2;		  /* a second path (or directory) argument ... */
	const char *kw2;	  /* ... with this keyword; NULL: none */
	bool dir2;		  /* it is a directory whose entries the library opens */
	/* The C function converts the path with PyUnicode_FSConverter: it is
	 * handed the bytes checked, not the object (whose __fspath__ could
	 * answer otherwise the second time). */
	bool as_bytes;
	PyObject *original;		   /* a strong reference, reachable from C only */
	PyTypeObject *types[NATIVE_TYPES]; /* a method's: the types ... */
	PyObject *originals[NATIVE_TYPES]; /* ... and their descriptors */
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
	N_OPENPTY_POSIX,
	N_GETGROUPLIST_OS,
	N_GETLOGIN_OS,
	N_OPENPTY_OS,
	N_SSL_VERIFY_LOCATIONS,
	N_SSL_CERT_CHAIN,
	N_SSL_DH_PARAMS,
	N_SSL_DEFAULT_PATHS,
	N_SSL_DECODE_CERT,
	N_OSS_OPEN,
	N_OSS_OPENMIXER,
	N_CURSES_SETUPTERM,
	N_CURSES_INITSCR,
	N_UUID_TIME_SAFE,
	N__N,
};

/* libreadline's defaults: history_filename() is $HOME/.history and the init
 * file $INPUTRC, else ~/.inputrc (the program may set INPUTRC itself: libreadline
 * reads the file it names, and prints its lines in its complaints). */
static struct native_fn native[N__N] = {
    [N_READ_HISTORY] = {"readline", "read_history_file", PATH_ARG, 0, NULL, -1, false, ".history"},
    [N_WRITE_HISTORY] = {"readline", "write_history_file", PATH_ARG, 0, NULL, -1, true, ".history"},
    [N_APPEND_HISTORY] = {"readline", "append_history_file", PATH_ARG, 1, NULL, -1, true,
			  ".history"},
    [N_READ_INIT] = {"readline", "read_init_file", PATH_ARG, 0, NULL, -1, false, ".inputrc",
		     "INPUTRC"},
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
    /* A pseudo-terminal pair: /dev/ptmx, then /dev/pts/N, read-write
     * (forkpty raises os.forkpty: judged with the events below). */
    [N_OPENPTY_POSIX] = {"posix", "openpty", PATH_FIXED, 0, NULL, -1, true, "/dev/ptmx"},
    [N_OPENPTY_OS] = {"os", "openpty", PATH_FIXED, 0, NULL, -1, true, "/dev/ptmx"},
    /* OpenSSL reads these files itself (BIO_new_file, PEM_read): none goes
     * through io.open. capath is a directory of hashed names, each opened
     * when a certificate is looked up. */
    [N_SSL_VERIFY_LOCATIONS] = {"_ssl", "load_verify_locations", PATH_ARG, 0, "cafile", -1, false,
				.type = "_SSLContext", .as_bytes = true, .at2 = 1, .kw2 = "capath",
				.dir2 = true},
    [N_SSL_CERT_CHAIN] = {"_ssl", "load_cert_chain", PATH_ARG, 0, "certfile", -1, false,
			  .type = "_SSLContext", .as_bytes = true, .at2 = 1, .kw2 = "keyfile"},
    [N_SSL_DH_PARAMS] = {"_ssl", "load_dh_params", PATH_ARG, 0, NULL, -1, false,
			 .type = "_SSLContext", .as_bytes = true},
    [N_SSL_DEFAULT_PATHS] = {"_ssl", "set_default_verify_paths", PATH_SSL_DEFAULTS, 0, NULL, -1,
			     false, .type = "_SSLContext"},
    [N_SSL_DECODE_CERT] = {"_ssl", "_test_decode_cert", PATH_ARG, 0, NULL, -1, false,
			   .as_bytes = true},
    /* The OSS devices: AUDIODEV / MIXERDEV, else /dev/dsp, /dev/mixer. */
    [N_OSS_OPEN] = {"ossaudiodev", "open", PATH_OSS_OPEN, 0, NULL, -1, false, "/dev/dsp",
		    "AUDIODEV"},
    [N_OSS_OPENMIXER] = {"ossaudiodev", "openmixer", PATH_ARG, 0, NULL, -1, true, "/dev/mixer",
			 "MIXERDEV"},
    [N_CURSES_SETUPTERM] = {"_curses", "setupterm", PATH_TERMINFO, 0, NULL, -1, false},
    [N_CURSES_INITSCR] = {"_curses", "initscr", PATH_TERMINFO, 0, NULL, -1, false},
    [N_UUID_TIME_SAFE] = {"_uuid", "generate_time_safe", PATH_UUIDD, 0, NULL, -1, false},
};

/* Where an argument is in a vectorcall's args (positional, else by its
 * keyword), -1 when absent. */
static Py_ssize_t argument_index(PyObject *const *args _unused_, Py_ssize_t nargs,
				 PyObject *kwnames, Py_ssize_t at, const char *kw)
{
	if (at < nargs)
		return at;
	for (Py_ssize_t i = 0; kw && kwnames && i < PyTuple_GET_SIZE(kwnames); i++)
		if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), kw) == 0)
			return nargs + i;
	return -1;
}

static PyObject *argument(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, Py_ssize_t at,
			  const char *kw)
{
	Py_ssize_t i = argument_index(args, nargs, kwnames, at, kw);

	return i < 0 ? NULL : args[i];
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

/* A directory whose entries a library opens by name (OpenSSL's capath, a
 * terminfo directory), depth levels down: the directory, and each entry as
 * the file it leads to (a link in a granted directory may lead anywhere, an
 * ignore= rule may hide one of them). */
static int check_dir_entries(const char *dir, int depth)
{
	struct dirent *de;
	DIR *d;
	int r = sb_guard_file_check(dir, false);

	if (r < 0 || depth <= 0 || !sb_guard_armed())
		return r;
	d = opendir(dir);
	/* Not a directory, or none: nothing more for the library to open. */
	if (!d)
		return 0;
	while (r >= 0 && (de = readdir(d))) {
		char *entry;

		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (asprintf(&entry, "%s/%s", dir, de->d_name) < 0) {
			PyErr_NoMemory();
			r = -1;
			break;
		}
		r = check_dir_entries(entry, depth - 1);
		free(entry);
	}
	closedir(d);
	return r;
}

/* A ':'-separated list of directories (SSL_CERT_DIR, TERMINFO_DIRS); empty
 * elements are the library's defaults. */
static int check_dir_list(const char *list, int depth)
{
	_cleanup_free_ char *copy = strdup(list);
	char *save = NULL;

	if (!copy) {
		PyErr_NoMemory();
		return -1;
	}
	for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save))
		if (check_dir_entries(p, depth) < 0)
			return -1;
	return 0;
}

/* The file a path argument left out (None) stands for: env's value, else
 * default_file (absolute, or under $HOME). *ret NULL: none. */
static int default_path(const struct native_fn *fn, char **ret)
{
	const char *value = fn->env ? getenv(fn->env) : NULL, *home;

	*ret = NULL;
	if (value && *value)
		*ret = strdup(value);
	else if (!fn->default_file)
		return 0;
	else if (fn->default_file[0] == '/')
		*ret = strdup(fn->default_file);
	else {
		home = getenv("HOME");
		/* No HOME: libreadline falls back to the current directory. */
		if (asprintf(ret, "%s/%s", home && *home ? home : ".", fn->default_file) < 0)
			*ret = NULL;
	}
	if (!*ret) {
		PyErr_NoMemory();
		return -1;
	}
	return 0;
}

/* One path argument (or its default), read or written, or a directory of
 * entries; *checked, when given, receives the bytes judged (new reference,
 * NULL for a default). */
static int check_path(const struct native_fn *fn, PyObject *path, bool write, bool dir,
		      PyObject **checked)
{
	_cleanup_free_ char *full = NULL;
	PyObject *bytes = NULL;
	const char *raw;
	int r;

	if (!path || path == Py_None) {
		if (default_path(fn, &full) < 0)
			return -1;
		/* A missing argument is the C function's to report. */
		if (!full)
			return 0;
		return dir ? check_dir_entries(full, 1) : sb_guard_file_check(full, write);
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
	r = dir ? check_dir_entries(raw, 1) : sb_guard_file_check(raw, write);
	if (r >= 0 && checked)
		*checked = Py_NewRef(bytes);
	Py_DECREF(bytes);
	return r;
}

/* What ncurses' setupterm() reads besides the system's directories. */
static int check_terminfo(void)
{
	const char *v = getenv("TERMINFO"), *home = getenv("HOME");
	_cleanup_free_ char *own = NULL;

	/* TERMINFO is a directory (letter/name) or a hashed database file. */
	if (v && *v && check_dir_entries(v, 2) < 0)
		return -1;
	v = getenv("TERMINFO_DIRS");
	if (v && *v && check_dir_list(v, 2) < 0)
		return -1;
	if (!home || !*home)
		return 0;
	if (asprintf(&own, "%s/.terminfo", home) < 0) {
		own = NULL;
		PyErr_NoMemory();
		return -1;
	}
	/* Absent, it is no file ncurses opens: no refusal for it. */
	if (access(own, F_OK) < 0)
		return 0;
	return check_dir_entries(own, 2);
}

/* libuuid's uuid_generate_time_safe(): asks uuidd on its socket, else keeps
 * its clock in a file it creates (as root), each only where it exists. */
static int check_uuidd(void)
{
	if (access("/run/uuidd/request", F_OK) == 0 &&
	    sb_guard_net_check_unix_path("/run/uuidd/request", "connect (libuuid)") < 0)
		return -1;
	if (access("/var/lib/libuuid", F_OK) == 0)
		return sb_guard_file_check("/var/lib/libuuid/clock.txt", true);
	return 0;
}

/* 0 to go on, -1 with an exception (a refusal, or a path we cannot read).
 * checked[0], checked[1]: for as_bytes, the bytes of the path arguments
 * judged (new references), to hand the C function in their place. */
static int check_call(const struct native_fn *fn, PyObject *const *args, Py_ssize_t nargs,
		      PyObject *kwnames, PyObject *checked[2])
{
	PyObject *path = argument(args, nargs, kwnames, fn->at, fn->kw);
	PyObject *flags = fn->flags >= 0 ? argument(args, nargs, kwnames, fn->flags, NULL) : NULL;
	const char *v;

	switch (fn->kind) {
	case PATH_FIXED:
		return sb_guard_file_check(fn->default_file, fn->write);
	case PATH_NSS_ENTRY:
		return check_nss_entry(fn, path);
	case PATH_OSS_OPEN: {
		/* open(mode) or open(device, mode): anything but "r" writes. */
		PyObject *mode = nargs >= 2 ? args[1] : nargs == 1 ? args[0] : NULL;
		const char *m = mode && PyUnicode_Check(mode) ? PyUnicode_AsUTF8(mode) : NULL;

		if (!m)
			PyErr_Clear();
		return check_path(fn, nargs >= 2 ? args[0] : NULL, !m || !streq(m, "r"), false,
				  NULL);
	}
	case PATH_SSL_DEFAULTS:
		/* OpenSSL reads them at this call (X509_LOOKUP_load_file, and
		 * the directories at each lookup). */
		v = getenv("SSL_CERT_FILE");
		if (v && *v && sb_guard_file_check(v, false) < 0)
			return -1;
		v = getenv("SSL_CERT_DIR");
		return v && *v ? check_dir_list(v, 1) : 0;
	case PATH_TERMINFO:
		return check_terminfo();
	case PATH_UUIDD:
		return check_uuidd();
	default:
		break;
	}
	if (check_path(fn, path, call_writes(fn, flags), false, fn->as_bytes ? &checked[0] : NULL) <
	    0)
		return -1;
	if (!fn->kw2)
		return 0;
	return check_path(&(struct native_fn){.kind = PATH_ARG},
			  argument(args, nargs, kwnames, fn->at2, fn->kw2), false, fn->dir2,
			  fn->as_bytes ? &checked[1] : NULL);
}

/* The original of a method, for the type of self (or the base it is
 * inherited from). */
static PyObject *method_original(struct native_fn *fn, PyObject *self)
{
	PyObject *mro = self ? Py_TYPE(self)->tp_mro : NULL;

	for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); i++)
		for (size_t t = 0; t < NATIVE_TYPES && fn->types[t]; t++)
			if ((PyObject *)fn->types[t] == PyTuple_GET_ITEM(mro, i))
				return fn->originals[t];
	return NULL;
}

static PyObject *call_native(struct native_fn *fn, PyObject *self, PyObject *const *args,
			     Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *original = fn->type ? method_original(fn, self) : fn->original, *result = NULL;
	PyObject *checked[2] = {NULL, NULL}, **stack = NULL;
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, off = fn->type ? 1 : 0;

	if (!original)
		return PyErr_Format(PyExc_RuntimeError, "%s.%s is not available", fn->module,
				    fn->name);
	if (sb_guard_armed() && check_call(fn, args, nargs, kwnames, checked) < 0)
		goto out;
	Py_INCREF(original);
	if (!fn->type && !checked[0] && !checked[1]) {
		result = PyObject_Vectorcall(original, args, (size_t)nargs, kwnames);
		Py_DECREF(original);
		goto out;
	}
	/* A method: self first; the paths judged in place of their objects. */
	stack = PyMem_Malloc(sizeof(PyObject *) * (size_t)(off + nargs + nkw));
	if (!stack) {
		Py_DECREF(original);
		PyErr_NoMemory();
		goto out;
	}
	if (off)
		stack[0] = self;
	memcpy(stack + off, args, sizeof(PyObject *) * (size_t)(nargs + nkw));
	for (int k = 0; k < 2; k++) {
		Py_ssize_t i = k ? argument_index(args, nargs, kwnames, fn->at2, fn->kw2)
				 : argument_index(args, nargs, kwnames, fn->at, fn->kw);

		if (checked[k] && i >= 0)
			stack[off + i] = checked[k];
	}
	result = PyObject_Vectorcall(original, stack, (size_t)(off + nargs), kwnames);
	Py_DECREF(original);
	PyMem_Free(stack);
out:
	Py_XDECREF(checked[0]);
	Py_XDECREF(checked[1]);
	return result;
}

/* One C function per wrapper: with m_self NULL, nothing reachable from a
 * wrapper (gc.get_referents, __self__) leads to the original. */
#define NATIVE_WRAPPER(idx)                                                                        \
	static PyObject *wrap_##idx(PyObject *self, PyObject *const *args, Py_ssize_t nargs,       \
				    PyObject *kwnames)                                             \
	{                                                                                          \
		return call_native(&native[idx], self, args, nargs, kwnames);                      \
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
NATIVE_WRAPPER(N_OPENPTY_POSIX)
NATIVE_WRAPPER(N_OPENPTY_OS)
NATIVE_WRAPPER(N_SSL_VERIFY_LOCATIONS)
NATIVE_WRAPPER(N_SSL_CERT_CHAIN)
NATIVE_WRAPPER(N_SSL_DH_PARAMS)
NATIVE_WRAPPER(N_SSL_DEFAULT_PATHS)
NATIVE_WRAPPER(N_SSL_DECODE_CERT)
NATIVE_WRAPPER(N_OSS_OPEN)
NATIVE_WRAPPER(N_OSS_OPENMIXER)
NATIVE_WRAPPER(N_CURSES_SETUPTERM)
NATIVE_WRAPPER(N_CURSES_INITSCR)
NATIVE_WRAPPER(N_UUID_TIME_SAFE)

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
    [N_OPENPTY_POSIX] = wrap_N_OPENPTY_POSIX,
    [N_OPENPTY_OS] = wrap_N_OPENPTY_OS,
    [N_SSL_VERIFY_LOCATIONS] = wrap_N_SSL_VERIFY_LOCATIONS,
    [N_SSL_CERT_CHAIN] = wrap_N_SSL_CERT_CHAIN,
    [N_SSL_DH_PARAMS] = wrap_N_SSL_DH_PARAMS,
    [N_SSL_DEFAULT_PATHS] = wrap_N_SSL_DEFAULT_PATHS,
    [N_SSL_DECODE_CERT] = wrap_N_SSL_DECODE_CERT,
    [N_OSS_OPEN] = wrap_N_OSS_OPEN,
    [N_OSS_OPENMIXER] = wrap_N_OSS_OPENMIXER,
    [N_CURSES_SETUPTERM] = wrap_N_CURSES_SETUPTERM,
    [N_CURSES_INITSCR] = wrap_N_CURSES_INITSCR,
    [N_UUID_TIME_SAFE] = wrap_N_UUID_TIME_SAFE,
};

static void init_def(struct native_fn *fn, size_t i)
{
	if (fn->def.ml_name)
		return;
	fn->def.ml_name = fn->name;
	fn->def.ml_meth = (PyCFunction)(void (*)(void))native_wrapper[i];
	fn->def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
	fn->def.ml_doc = "Checked by the py-sandbox files guard, then the original.";
}

/* The type `name` of module (a new reference), or NULL with no exception
 * when this build of the module has none. */
static PyTypeObject *module_type(PyObject *module, const char *name)
{
	PyObject *type = PyObject_GetAttrString(module, name);

	if (!type) {
		PyErr_Clear();
		return NULL;
	}
	if (!PyType_Check(type)) {
		Py_DECREF(type);
		return NULL;
	}
	return (PyTypeObject *)type;
}

/* A method of a type of the module: its descriptor replaced in the type's
 * dictionary (the type is immutable to Python code), so that instances,
 * isinstance() and subclasses (ssl.SSLContext) stay as they are. */
static int wrap_method_in(PyObject *module, size_t i)
{
	struct native_fn *fn = &native[i];
	PyTypeObject *t = module_type(module, fn->type);
	PyObject *current, *wrapper;
	size_t slot;
	int r = -1;

	if (!t)
		return 0;
	current = PyDict_GetItemString(t->tp_dict, fn->name); /* borrowed */
	if (!current || !PyObject_TypeCheck(current, &PyMethodDescr_Type)) {
		/* Not in this build; or not the C method it should be: fail closed. */
		r = current ? (PyErr_Format(PyExc_ImportError,
					    "%s.%s.%s is not a method the files guard can wrap",
					    fn->module, fn->type, fn->name),
			       -1)
			    : 0;
		goto out;
	}
	if (((PyMethodDescrObject *)current)->d_method->ml_meth ==
	    (PyCFunction)(void (*)(void))native_wrapper[i]) {
		r = 0;
		goto out;
	}
	for (slot = 0; slot < NATIVE_TYPES && fn->types[slot] && fn->types[slot] != t; slot++)
		;
	if (slot == NATIVE_TYPES) {
		PyErr_Format(PyExc_ImportError, "%s made too often: the files guard cannot wrap it",
			     fn->module);
		goto out;
	}
	init_def(fn, i);
	wrapper = PyDescr_NewMethod(t, &fn->def);
	if (!wrapper)
		goto out;
	/* The type's own reference keeps it alive; it stays in the table for
	 * the wrapper to find, reachable from C only. */
	fn->types[slot] = (PyTypeObject *)Py_NewRef(t);
	fn->originals[slot] = Py_NewRef(current);
	r = PyDict_SetItemString(t->tp_dict, fn->name, wrapper);
	Py_DECREF(wrapper);
	PyType_Modified(t);
out:
	Py_DECREF(t);
	return r;
}

static int wrap_in(PyObject *module, size_t i)
{
	struct native_fn *fn = &native[i];
	PyObject *current, *wrapper, *modname;
	int r;

	if (fn->type)
		return wrap_method_in(module, i);

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
	init_def(fn, i);
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
			  arg, 1, NULL, (PyObject *[2]){NULL, NULL});
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
	PyTypeObject *t = module_type(module, "SemLock");
	PyObject *dict, *current, *wrapper;
	int r = -1;

	if (!t)
		return 0;
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
	Py_DECREF(t);
	return r;
}

/* syslog: glibc's syslog() sends to the Unix socket /dev/log (openlog()
 * already, with LOG_NDELAY), and with LOG_CONS writes what it could not
 * send to /dev/console; CPython raises events before both (syslog.syslog
 * before the openlog() it makes itself). Judged as socket.connect() to the
 * path: an expose-rw grant. The options of the last openlog() that went
 * ahead are what glibc uses. */
static long syslog_options;

static int check_syslog(long options, bool sending)
{
	if ((sending || (options & LOG_NDELAY)) &&
	    sb_guard_net_check_unix_path("/dev/log", "connect (syslog)") < 0)
		return -1;
	if (options & LOG_CONS)
		return sb_guard_file_check("/dev/console", true);
	return 0;
}

static int on_syslog_openlog(PyObject *args)
{
	PyObject *o =
	    PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;
	long options = o && PyLong_Check(o) ? PyLong_AsLong(o) : 0;

	if (options == -1 && PyErr_Occurred())
		return -1;
	if (sb_guard_armed() && check_syslog(options, false) < 0)
		return -1;
	syslog_options = options;
	return 0;
}

static int on_syslog_syslog(PyObject *args _unused_)
{
	return sb_guard_armed() ? check_syslog(syslog_options, true) : 0;
}

/* forkpty() opens /dev/ptmx as openpty() does (os.forkpty's other judge,
 * the python-api registry, is about the process). */
static int on_forkpty(PyObject *args _unused_)
{
	return sb_guard_file_check("/dev/ptmx", true);
}

/* The C library reads the time zone file TZ names (":/path" or "/path",
 * or a name under TZDIR) at tzset() and at the conversions that call it:
 * everywhere time is shown. Judged as a read when the program sets either
 * (os.environ, os.putenv); a name under the system's zoneinfo is readable
 * without a rule, "../" climbing out of it is not. */
static int on_putenv(PyObject *args)
{
	PyObject *key =
	    PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 0) : NULL;
	PyObject *value = key ? PyTuple_GET_ITEM(args, 1) : NULL, *kb = NULL, *vb = NULL;
	_cleanup_free_ char *full = NULL;
	const char *k, *v, *dir;
	int r = 0;

	if (!key || !sb_guard_armed())
		return 0;
	if (!PyUnicode_FSConverter(key, &kb))
		return -1;
	if (!PyUnicode_FSConverter(value, &vb)) {
		Py_DECREF(kb);
		return -1;
	}
	k = PyBytes_AS_STRING(kb);
	v = PyBytes_AS_STRING(vb);
	if (streq(k, "TZDIR") && *v) {
		r = sb_guard_file_check(v, false);
	} else if (streq(k, "TZ")) {
		v += *v == ':';
		dir = getenv("TZDIR");
		/* glibc's default TZDIR; a relative name may climb out of it. */
		if (!dir || !*dir)
			dir = "/usr/share/zoneinfo";
		if (*v == '/')
			r = sb_guard_file_check(v, false);
		else if (*v) {
			if (asprintf(&full, "%s/%s", dir, v) < 0) {
				full = NULL;
				r = -1;
				PyErr_NoMemory();
			} else {
				r = sb_guard_file_check(full, false);
			}
		}
	}
	Py_DECREF(kb);
	Py_DECREF(vb);
	return r;
}

/* sethostname() changes the name of the host (as root, outside a UTS
 * namespace, with the guard alone): no rule allows it, as the kernel
 * layers' seccomp filter allows it to none. */
static int on_sethostname(PyObject *args)
{
	PyObject *o =
	    PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
	PyObject *text = o ? PyObject_Str(o) : NULL;
	const char *name = text ? PyUnicode_AsUTF8(text) : NULL;
	_cleanup_free_ char *message = NULL;

	if (!sb_guard_armed()) {
		Py_XDECREF(text);
		return 0;
	}
	if (!name) {
		PyErr_Clear();
		name = "?";
	}
	if (asprintf(&message,
		     "socket.sethostname('%s') is refused by the guard whatever the rules: it "
		     "would change the host's name",
		     name) < 0) {
		message = NULL;
		Py_XDECREF(text);
		PyErr_NoMemory();
		return -1;
	}
	sb_raise_permission(EPERM, name, message);
	Py_XDECREF(text);
	return -1;
}

/* TIOCSTI pushes characters into a terminal's input queue, TIOCLINUX's
 * selection paste does the same on a console: on the terminal python-sb was
 * started from, the program types commands into the user's shell, which runs
 * them once it exits (CVE-2016-7545 and kin). The kernel layers' seccomp
 * filter allows neither; with the guard alone, this is where they stop. The
 * kernel compares the request on 32 bits. */
static int on_ioctl(PyObject *args)
{
	PyObject *o =
	    PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;
	unsigned long request = o ? PyLong_AsUnsignedLongMask(o) : 0;
	const char *name;
	_cleanup_free_ char *message = NULL;

	if (PyErr_Occurred())
		PyErr_Clear();
	switch ((unsigned)request) {
	case TIOCSTI:
		name = "TIOCSTI";
		break;
	case TIOCLINUX:
		name = "TIOCLINUX";
		break;
	default:
		return 0;
	}
	if (!sb_guard_armed())
		return 0;
	if (asprintf(&message,
		     "fcntl.ioctl(%s) is refused by the guard whatever the rules: it would type "
		     "into the terminal",
		     name) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	sb_raise_permission(EPERM, name, message);
	return -1;
}

/* fcntl.fcntl(): the commands the seccomp filter allows
 * (kernel/seccomp-filter.c, fcntl_table: keep the two in step), refused
 * otherwise whatever the rules. Those left out reach other processes:
 * F_SETOWN/F_SETOWN_EX with O_ASYNC, and F_SETSIG, make the kernel send a
 * signal of the program's choice (SIGKILL included) to any process its
 * credentials may signal at the next I/O on the descriptor, past the
 * python-api rules of os.kill (with os-sandbox=none, root killed any process
 * and nobody the caller's other ones); F_SETLEASE stalls other processes'
 * opens of a file; F_NOTIFY signals on directory changes. An unknown
 * command is refused: the kernel's list grows. */
static const unsigned fcntl_allowed[] = {
    F_DUPFD,	 F_GETFD,      F_SETFD,	      F_GETFL,	       F_SETFL,	     F_GETLK,
    F_SETLK,	 F_SETLKW,     F_GETOWN,      F_GETSIG,	       F_GETOWN_EX,  F_OFD_GETLK,
    F_OFD_SETLK, F_OFD_SETLKW, F_GETLEASE,    F_DUPFD_CLOEXEC, F_SETPIPE_SZ, F_GETPIPE_SZ,
    F_ADD_SEALS, F_GET_SEALS,  F_GET_RW_HINT, F_SET_RW_HINT,
};

static int on_fcntl(PyObject *args)
{
	PyObject *o =
	    PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;
	long cmd = o && PyLong_Check(o) ? PyLong_AsLong(o) : -1;
	_cleanup_free_ char *message = NULL;

	if (cmd == -1 && PyErr_Occurred())
		PyErr_Clear();
	for (size_t i = 0; i < ELEMENTSOF(fcntl_allowed); i++)
		if (cmd == (long)fcntl_allowed[i])
			return 0;
	if (!sb_guard_armed())
		return 0;
	if (asprintf(&message,
		     "fcntl.fcntl() command %ld is refused by the guard whatever the rules: "
		     "F_SETOWN, F_SETOWN_EX and F_SETSIG would signal other processes, "
		     "F_SETLEASE stall their opens, F_NOTIFY watch directories",
		     cmd) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	sb_raise_permission(EPERM, NULL, message);
	return -1;
}

static const struct sb_audit_handler native_handlers[] = {
    {"fcntl.fcntl", on_fcntl},
    {"fcntl.ioctl", on_ioctl},
    {"os.forkpty", on_forkpty},
    {"os.putenv", on_putenv},
    {"socket.sethostname", on_sethostname},
    {"syslog.openlog", on_syslog_openlog},
    {"syslog.syslog", on_syslog_syslog},
};

/* readline's initialisation (rl_initialize(), when the module is made)
 * reads $INPUTRC, else ~/.inputrc where it exists, and prints the lines it
 * does not understand: judged before the module exists. */
static int native_module_loading(const char *name)
{
	const char *v = getenv("INPUTRC"), *home = getenv("HOME");
	_cleanup_free_ char *own = NULL;

	if (!streq(name, "readline"))
		return 0;
	if (v && *v)
		return sb_guard_file_check(v, false);
	if (!home || !*home)
		return 0;
	if (asprintf(&own, "%s/.inputrc", home) < 0) {
		own = NULL;
		PyErr_NoMemory();
		return -1;
	}
	return access(own, F_OK) == 0 ? sb_guard_file_check(own, false) : 0;
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
		memset(native[i].types, 0, sizeof(native[i].types));
		memset(native[i].originals, 0, sizeof(native[i].originals));
		native[i].def = (PyMethodDef){0};
	}
	syslog_options = 0;
	memset(&semlock, 0, sizeof(semlock));
}

const struct sb_guard_part sb_guard_native_files_part = {
    .name = "native-files",
    .prepare = native_prepare,
    .activate = native_activate,
    .release = native_release,
    .module_loaded = native_module_loaded,
    .module_loading = native_module_loading,
    .handlers = native_handlers,
    .n_handlers = ELEMENTSOF(native_handlers),
};
