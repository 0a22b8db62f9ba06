/* SPDX-License-Identifier: MIT */
/* The files part's C wrappers (guard-files-wrap.h). Every wrapper turns a
 * path-like or buffer argument into str/bytes once, before the original
 * sees it: the audit event then carries the very string the system call
 * gets, so a __fspath__ that answers differently on its second call, or a
 * bytearray changed by a warning filter, cannot split check and use. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-files-wrap.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "guard-files-cache.h"
#include "guard-files-check.h"
#include "guard-files-listing.h"
#include "guard-runtime.h"
#include "pysandboxes-module.h"
#include "util.h"

/* Interned keyword names, made once by sb_files_wrap_activate(): looking a C string
 * up in a dict would create a str object on every call. */
static struct {
	PyObject *dir_fd, *follow_symlinks, *fspath;
} keys;

enum wrap_kind {
	WRAP_CONVERT,  /* raises its own event: only make the path a str/bytes */
	WRAP_OPEN,     /* os.open: the "open" event lacks dir_fd */
	WRAP_READ,     /* no event: decide here */
	WRAP_WRITE,    /* no event, creates a node: decide here */
	WRAP_READLINK, /* no event, and the answer must not name an outside path */
	WRAP_LIST,     /* listdir/scandir: hide ignored entries */
	WRAP_REFUSE,   /* changes what every path means (chroot): never */
};

struct wrapped {
	const char *module; /* "posix" (also set in os), "_io" (also io, builtins) */
	const char *name;
	enum wrap_kind kind;
	unsigned n_paths; /* path arguments: positions 0..n-1 */
	const char *kw[2];
	bool follow;	    /* default of follow_symlinks */
	bool probe;	    /* a metadata probe the import machinery makes (see probe_exempt()) */
	PyObject *original; /* a strong reference, reachable from C only */
	PyMethodDef def;
	bool doc_owned; /* def.ml_doc was allocated (else: the original's) */
};

enum {
	W_OPEN,
	W_IO_OPEN,
	W_STAT,
	W_LSTAT,
	W_ACCESS,
	W_STATVFS,
	W_PATHCONF,
	W_CHROOT,
	W_READLINK,
	W_MKFIFO,
	W_MKNOD,
	W_LISTDIR,
	W_SCANDIR,
	W_CHDIR,
	W_CHMOD,
	W_CHOWN,
	W_LCHOWN,
	W_MKDIR,
	W_REMOVE,
	W_UNLINK,
	W_RMDIR,
	W_RENAME,
	W_REPLACE,
	W_LINK,
	W_SYMLINK,
	W_TRUNCATE,
	W_UTIME,
	W_GETXATTR,
	W_SETXATTR,
	W_LISTXATTR,
	W_REMOVEXATTR,
	W__N,
};

static struct wrapped wrapped[W__N] = {
    [W_OPEN] = {"posix", "open", WRAP_OPEN, 1, {"path"}, true},
    [W_IO_OPEN] = {"_io", "open", WRAP_CONVERT, 1, {"file"}, true},
    [W_STAT] = {"posix", "stat", WRAP_READ, 1, {"path"}, true, true},
    [W_LSTAT] = {"posix", "lstat", WRAP_READ, 1, {"path"}, false, true},
    [W_ACCESS] = {"posix", "access", WRAP_READ, 1, {"path"}, true, true},
    [W_STATVFS] = {"posix", "statvfs", WRAP_READ, 1, {"path"}, true},
    [W_PATHCONF] = {"posix", "pathconf", WRAP_READ, 1, {"path"}, true},
    [W_CHROOT] = {"posix", "chroot", WRAP_REFUSE, 1, {"path"}, true},
    [W_READLINK] = {"posix", "readlink", WRAP_READLINK, 1, {"path"}, false},
    [W_MKFIFO] = {"posix", "mkfifo", WRAP_WRITE, 1, {"path"}, false},
    [W_MKNOD] = {"posix", "mknod", WRAP_WRITE, 1, {"path"}, false},
    [W_LISTDIR] = {"posix", "listdir", WRAP_LIST, 1, {"path"}, true},
    [W_SCANDIR] = {"posix", "scandir", WRAP_LIST, 1, {"path"}, true},
    [W_CHDIR] = {"posix", "chdir", WRAP_CONVERT, 1, {"path"}, true},
    [W_CHMOD] = {"posix", "chmod", WRAP_CONVERT, 1, {"path"}, true},
    [W_CHOWN] = {"posix", "chown", WRAP_CONVERT, 1, {"path"}, true},
    [W_LCHOWN] = {"posix", "lchown", WRAP_CONVERT, 1, {"path"}, false},
    [W_MKDIR] = {"posix", "mkdir", WRAP_CONVERT, 1, {"path"}, false},
    [W_REMOVE] = {"posix", "remove", WRAP_CONVERT, 1, {"path"}, false},
    [W_UNLINK] = {"posix", "unlink", WRAP_CONVERT, 1, {"path"}, false},
    [W_RMDIR] = {"posix", "rmdir", WRAP_CONVERT, 1, {"path"}, false},
    [W_RENAME] = {"posix", "rename", WRAP_CONVERT, 2, {"src", "dst"}, false},
    [W_REPLACE] = {"posix", "replace", WRAP_CONVERT, 2, {"src", "dst"}, false},
    [W_LINK] = {"posix", "link", WRAP_CONVERT, 2, {"src", "dst"}, true},
    [W_SYMLINK] = {"posix", "symlink", WRAP_CONVERT, 2, {"src", "dst"}, false},
    [W_TRUNCATE] = {"posix", "truncate", WRAP_CONVERT, 1, {"path"}, true},
    [W_UTIME] = {"posix", "utime", WRAP_CONVERT, 1, {"path"}, true},
    [W_GETXATTR] = {"posix", "getxattr", WRAP_CONVERT, 1, {"path"}, true},
    [W_SETXATTR] = {"posix", "setxattr", WRAP_CONVERT, 1, {"path"}, true},
    [W_LISTXATTR] = {"posix", "listxattr", WRAP_CONVERT, 1, {"path"}, true},
    [W_REMOVEXATTR] = {"posix", "removexattr", WRAP_CONVERT, 1, {"path"}, true},
};

/* The import machinery stats every sys.path directory and candidate file on
 * each import: exempting those probes (only stat/lstat/access, only when the
 * innermost frame is importlib's bootstrap serving an import a door let
 * through) keeps imports as fast as without the guard. What it then opens is
 * still checked ("open"). Not when the program calls the machinery itself
 * (_bootstrap_external._path_stat(), a FileFinder of its own): then the
 * answer would be the program's. */
static bool probe_exempt(const struct wrapped *w)
{
	return w->probe && sb_guard_caller_is_import_bootstrap() && sb_guard_serving_import();
}

/* A path-like or buffer argument as the str/bytes the original will use. */
static PyObject *convert(PyObject *o)
{
	if (PyUnicode_Check(o) || PyBytes_Check(o) || PyLong_Check(o) || o == Py_None)
		return Py_NewRef(o);
	/* Looked up as PyOS_FSPath() looks it up: in the type's MRO (its
	 * method cache), running no Python code on the way. */
	if (_PyType_Lookup(Py_TYPE(o), keys.fspath))
		return PyOS_FSPath(o);
	/* bytearray, memoryview: copied now, so a warning filter run by the
	 * original (DeprecationWarning) cannot change it after the check. */
	if (PyObject_CheckBuffer(o))
		return PyBytes_FromObject(o);
	return Py_NewRef(o);
}

static int kw_int(PyObject *o, int dflt, bool *present)
{
	long v;

	if (present)
		*present = o && o != Py_None;
	if (!o || o == Py_None)
		return dflt;
	v = PyLong_AsLong(o);
	if (v == -1 && PyErr_Occurred()) {
		PyErr_Clear();
		return dflt;
	}
	return v < INT_MIN || v > INT_MAX ? dflt : (int)v;
}

static bool kw_true(PyObject *o, bool dflt)
{
	int r;

	if (!o)
		return dflt;
	r = PyObject_IsTrue(o);
	if (r < 0) {
		PyErr_Clear();
		return dflt;
	}
	return r;
}

/* "/proc/self/fd/N/rel" in the type of rel (str or bytes). */
static PyObject *through_proc(int dir_fd, PyObject *rel)
{
	if (PyBytes_Check(rel))
		return PyBytes_FromFormat("/proc/self/fd/%d/%s", dir_fd, PyBytes_AS_STRING(rel));
	return PyUnicode_FromFormat("/proc/self/fd/%d/%U", dir_fd, rel);
}

/* The index in the keyword part of a vectorcall of the argument called
 * name (key: its interned str, NULL to compare by text only), or -1. */
static Py_ssize_t kw_index(PyObject *kwnames, PyObject *key, const char *name)
{
	Py_ssize_t n = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;

	for (Py_ssize_t i = 0; key && i < n; i++)
		if (PyTuple_GET_ITEM(kwnames, i) == key)
			return i;
	for (Py_ssize_t i = 0; i < n; i++)
		if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), name) == 0)
			return i;
	return -1;
}

/* os.stat(path) whose last name's link status the cache does not know
 * (resolved: the path if it is no link): one lstat() answers both questions.
 * For a name that is no link, stat() and lstat() return the same, so the
 * program gets the lstat() result, decided on the path the very same system
 * call showed to be no link; a link goes the usual way (the resolver, then
 * stat()). A failure (a missing name) is decided on the path as the resolver
 * would append it, and the program gets lstat()'s error, which is stat()'s. */
static PyObject *stat_through_lstat(PyObject *path, const char *raw, const char *abs,
				    const char *resolved, struct sb_rc_hint *hint, bool *use_stat)
{
	PyObject *st = PyObject_Vectorcall(wrapped[W_LSTAT].original, &path, 1, NULL);
	PyObject *type, *value, *tb;
	struct sb_rc_slot *slot = NULL;
	int r;

	*use_stat = false;
	if (st) {
		PyObject *mode =
		    PyTuple_Check(st) && PyTuple_GET_SIZE(st) > 0 ? PyTuple_GET_ITEM(st, 0) : NULL;
		long m = mode && PyLong_Check(mode) ? PyLong_AsLong(mode) : -1;

		if (m == -1 || S_ISLNK(m)) {
			PyErr_Clear();
			Py_DECREF(st);
			*use_stat = true;
			return NULL;
		}
		slot = sb_rc_put_checked(abs, resolved, false, hint);
		r = sb_files_verdict(raw, abs, resolved, false, slot);
		if (r < 0)
			Py_CLEAR(st);
		else if (r == 0)
			sb_rc_allow_read(slot, hint);
		return st;
	}
	/* Missing (see DIR_MISSING in the cache): remembered, lstat() said
	 * ENOENT. */
	if (PyErr_ExceptionMatches(PyExc_FileNotFoundError))
		slot = sb_rc_put_checked(abs, resolved, true, hint);
	PyErr_Fetch(&type, &value, &tb);
	r = sb_files_verdict(raw, abs, resolved, false, slot);
	if (r < 0) {
		Py_XDECREF(type);
		Py_XDECREF(value);
		Py_XDECREF(tb);
		return NULL;
	}
	if (r == 0)
		sb_rc_allow_read(slot, hint);
	PyErr_Restore(type, value, tb);
	return NULL;
}

/* read_wrapped() once the cache has not answered: the decision (and, for
 * stat, possibly the call itself through stat_through_lstat()). The path is
 * str or bytes. */
static __attribute__((noinline)) PyObject *
read_decide_and_call(struct wrapped *w, PyObject *const *call, size_t nargsf, PyObject *kwnames,
		     const char *raw, size_t n, bool follow, struct sb_rc_hint *hint)
{
	char abs[PATH_MAX], resolved[PATH_MAX];
	PyObject *result = NULL;
	bool use_stat = true;
	int r;

	/* lstat() answers for stat() only when the kernel would not follow the
	 * last name anyway (lstat("link/") and lstat("link/.") do). */
	sb_files_metadata_only(w->probe);
	r = sb_files_check_raw_ex(raw, -1, false, follow,
				  w - wrapped == W_STAT && follow && wrapped[W_LSTAT].original &&
				      n && !sb_path_follows_last(raw, n),
				  abs, resolved, hint);
	if (r > 0) {
		result = stat_through_lstat(call[0], raw, abs, resolved, hint, &use_stat);
		/* A link: resolved and decided as any other path. */
		if (use_stat && sb_files_check_raw(raw, -1, false, follow, NULL) < 0)
			r = -1;
	}
	sb_files_metadata_only(false);
	if (r < 0) {
		Py_XDECREF(result);
		return NULL;
	}
	if (use_stat)
		result = PyObject_Vectorcall(w->original, call, nargsf, kwnames);
	return result;
}

/* stat, lstat and access called with one positional path, and at most
 * follow_symlinks: the common case (importlib's probes, os.path.exists,
 * pathlib), without call_wrapped_general()'s keyword handling. A path
 * allowed before goes straight to the original; the import machinery's
 * probes are exempted only after that (looking at the caller costs more than
 * the cache lookup). */
static PyObject *read_wrapped(struct wrapped *w, PyObject *const *args, PyObject *kwnames)
{
	bool follow = kwnames ? kw_true(args[1], w->follow) : w->follow;
	/* The keyword's value, if any, follows the path; the original gets
	 * the answer the decision used (a __bool__ could change its mind). */
	PyObject *call[2] = {convert(args[0]), follow ? Py_True : Py_False};
	PyObject *keep = NULL, *result = NULL;
	size_t nargsf = 1;
	const char *raw = NULL;
	struct sb_rc_hint hint = {0};
	size_t n;

	if (!call[0])
		return NULL;
	if (sb_files_ready() < 0)
		goto out;
	if (sb_rc_obj_read_allowed(call[0], follow, &hint)) {
		result = PyObject_Vectorcall(w->original, call, nargsf, kwnames);
		goto out;
	}
	if (sb_files_path_bytes(call[0], false, &raw, &keep) != SB_PATH_STRING) {
		Py_XDECREF(keep);
		PyErr_Clear();
		/* A held fd, or a type the original will refuse: the general
		 * path (check_obj) decides. */
		if (sb_files_check_obj(call[0], -1, false, follow, false) == 0)
			result = PyObject_Vectorcall(w->original, call, nargsf, kwnames);
		Py_DECREF(call[0]);
		return result;
	}
	n = strlen(raw);
	if (probe_exempt(w)) {
		result = PyObject_Vectorcall(w->original, call, nargsf, kwnames);
	} else {
		result = read_decide_and_call(w, call, nargsf, kwnames, raw, n, follow, &hint);
		if (hint.allowed)
			sb_rc_remember(call[0], follow);
	}
out:
	Py_XDECREF(keep);
	Py_DECREF(call[0]);
	return result;
}

/* chroot() changes what every path the guard decides on names, and the
 * guard's resolutions (its cache, /proc/self/fd links, which show paths
 * from the old root) would no longer be the kernel's: refused whatever the
 * rules. (The seccomp filter refuses it too; with os-sandbox=none and root,
 * this is what holds.) */
static void refuse_root_change(PyObject *path)
{
	const char *raw = PyUnicode_Check(path) ? PyUnicode_AsUTF8(path)
			  : PyBytes_Check(path) ? PyBytes_AS_STRING(path)
						: NULL;
	_cleanup_free_ char *text = NULL;

	if (!raw) {
		PyErr_Clear();
		raw = "?";
	}
	if (asprintf(&text,
		     "chroot('%s') is refused by the file guard whatever the rules: it would "
		     "change what every path names",
		     raw) < 0) {
		PyErr_NoMemory();
		return;
	}
	sb_raise_permission(EPERM, raw, text);
}

/* *slot as an exact int, converted once (its __index__ called once): a
 * number the original parses again must be the one the decision used.
 * None and exact ints stay; the new int is owned by *owned. */
static int exact_int(PyObject **slot, PyObject **owned)
{
	if (*slot == Py_None || PyLong_CheckExact(*slot))
		return 0;
	*owned = PyNumber_Index(*slot);
	if (!*owned)
		return -1;
	*slot = *owned;
	return 0;
}

/* A file created or changed with the set-user-ID or set-group-ID bit: made by
 * a program python-sb runs as root (without user=), it would be a set-ID
 * root executable in a writable grant for anyone who reaches the directory
 * after the run. Refused whatever the grants. */
int sb_files_refuse_set_id(const char *raw, unsigned long mode)
{
	_cleanup_free_ char *text = NULL;

	if (asprintf(&text,
		     "Cannot give '%s' the mode %#lo: set-user-ID and set-group-ID files are "
		     "refused by the file guard whatever the rules",
		     raw, mode) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return sb_raise_permission(EPERM, raw, text);
}

/* mknod() of a character or block device: a node in a writable grant that
 * opens any device (/dev/kmsg, a disk) whatever the rules say of /dev.
 * Refused whatever the grants (with os-sandbox=none and root, nothing else
 * holds: the other providers leave no CAP_MKNOD). Regular files, FIFOs and
 * sockets stay the writes they are. The mode is made an exact int first, so
 * that the original creates the node this decided on. */
static int refuse_device_node(PyObject **stack, Py_ssize_t nargs, PyObject *kwnames, PyObject *path,
			      PyObject **owned)
{
	Py_ssize_t at = nargs > 1 ? 1 : -1;
	const char *raw = PyUnicode_Check(path) ? PyUnicode_AsUTF8(path)
			  : PyBytes_Check(path) ? PyBytes_AS_STRING(path)
						: NULL;
	_cleanup_free_ char *text = NULL;
	unsigned long mode = 0600; /* the default: a regular file */

	if (at < 0) {
		at = kw_index(kwnames, NULL, "mode");
		if (at >= 0)
			at += nargs;
	}
	if (at >= 0) {
		if (exact_int(&stack[at], owned) < 0)
			return -1;
		if (stack[at] != Py_None) {
			long m = PyLong_AsLong(stack[at]);

			if (m == -1 && PyErr_Occurred())
				return -1;
			mode = (unsigned long)m;
		}
	}
	if (!raw) {
		PyErr_Clear();
		raw = "?";
	}
	switch (mode & S_IFMT) {
	case 0:
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
		return mode & (S_ISUID | S_ISGID) ? sb_files_refuse_set_id(raw, mode) : 0;
	default:
		break;
	}
	if (asprintf(&text,
		     "mknod('%s') of a device is refused by the file guard whatever the rules: "
		     "a device node opens the device wherever it is made",
		     raw) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return sb_raise_permission(EPERM, raw, text);
}

/* os.open(path, flags, mode): a file it creates (O_CREAT, O_TMPFILE) with a
 * set-ID bit (see sb_files_refuse_set_id()). The flags and the mode are
 * made exact ints first, so that the original creates the file this decided
 * on. */
static int refuse_set_id_create(PyObject **stack, Py_ssize_t nargs, PyObject *kwnames,
				PyObject *path, PyObject **owned, PyObject **owned_flags)
{
	Py_ssize_t at_flags = nargs > 1 ? 1 : -1, at_mode = nargs > 2 ? 2 : -1;
	const char *raw = PyUnicode_Check(path) ? PyUnicode_AsUTF8(path)
			  : PyBytes_Check(path) ? PyBytes_AS_STRING(path)
						: NULL;
	long flags, mode;

	if (at_flags < 0 && (at_flags = kw_index(kwnames, NULL, "flags")) >= 0)
		at_flags += nargs;
	if (at_mode < 0 && (at_mode = kw_index(kwnames, NULL, "mode")) >= 0)
		at_mode += nargs;
	if (at_mode < 0 || at_flags < 0)
		return 0; /* the default mode, or no flags: the original refuses */
	if (exact_int(&stack[at_flags], owned_flags) < 0 || exact_int(&stack[at_mode], owned) < 0)
		return -1;
	flags = PyLong_AsLong(stack[at_flags]);
	mode = stack[at_mode] == Py_None ? 0 : PyLong_AsLong(stack[at_mode]);
	if (PyErr_Occurred())
		return -1;
	if (!(flags & O_CREAT) && (flags & O_TMPFILE) != O_TMPFILE)
		return 0;
	if (!(mode & (S_ISUID | S_ISGID)))
		return 0;
	if (!raw) {
		PyErr_Clear();
		raw = "?";
	}
	return sb_files_refuse_set_id(raw, (unsigned long)mode);
}

#define WRAP_MAX_ARGS 16 /* os functions take at most 7 */

/* A vectorcall: the arguments stay in the caller's array (which Python code
 * cannot change, unlike a dict passed as **kwargs) and are copied into a
 * stack array only to replace converted paths; no tuple or dict is built on
 * the way to the original. */
static __attribute__((noinline)) PyObject *
call_wrapped_general(struct wrapped *w, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *stack[WRAP_MAX_ARGS], *paths[2] = {NULL, NULL}, *result = NULL;
	PyObject *rewritten = NULL, *new_kwnames = NULL, *call_kwnames = kwnames;
	PyObject *ints[3] = {NULL, NULL, NULL}; /* dir_fd, a mode, flags: exact ints */
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, i_dir_fd, i_follow;
	bool armed = sb_guard_armed();
	int dir_fd;
	bool has_dir_fd;

	if (nargs + nkw > WRAP_MAX_ARGS)
		return PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments", w->name,
				    WRAP_MAX_ARGS);
	memcpy(stack, args, (size_t)(nargs + nkw) * sizeof(*stack));
	for (unsigned i = 0; i < w->n_paths; i++) {
		Py_ssize_t at = (Py_ssize_t)i < nargs ? (Py_ssize_t)i : -1;
		PyObject *o;

		if (at < 0) {
			at = kw_index(kwnames, NULL, w->kw[i]);
			if (at < 0)
				continue;
			at += nargs;
		}
		o = stack[at];
		paths[i] = convert(o);
		if (!paths[i])
			goto out;
		stack[at] = paths[i]; /* owned by paths[i] */
	}
	i_dir_fd = kw_index(kwnames, keys.dir_fd, "dir_fd");
	/* The original parses dir_fd again, through __index__, which could
	 * answer another directory the second time: it gets the very int the
	 * decision used. */
	if (i_dir_fd >= 0 && exact_int(&stack[nargs + i_dir_fd], &ints[0]) < 0)
		goto out;
	dir_fd = kw_int(i_dir_fd < 0 ? NULL : stack[nargs + i_dir_fd], -1, &has_dir_fd);
	if (armed && paths[0]) {
		bool follow;

		i_follow = kw_index(kwnames, keys.follow_symlinks, "follow_symlinks");
		follow = kw_true(i_follow < 0 ? NULL : stack[nargs + i_follow], w->follow);
		/* The original gets the answer the decision used: a __bool__
		 * asked twice could answer otherwise the second time. */
		if (i_follow >= 0)
			stack[nargs + i_follow] = follow ? Py_True : Py_False;
		switch (w->kind) {
		case WRAP_REFUSE:
			refuse_root_change(paths[0]);
			goto out;
		case WRAP_READ:
		case WRAP_READLINK: {
			int r;

			if (probe_exempt(w))
				break;
			sb_files_metadata_only(w->probe);
			r = sb_files_check_obj(paths[0], dir_fd, false, follow, false);
			sb_files_metadata_only(false);
			if (r < 0)
				goto out;
			break;
		}
		case WRAP_WRITE:
			if (w - wrapped == W_MKNOD &&
			    refuse_device_node(stack, nargs, kwnames, paths[0], &ints[1]) < 0)
				goto out;
			if (sb_files_check_obj(paths[0], dir_fd, true, false, false) < 0)
				goto out;
			break;
		case WRAP_OPEN:
			if (refuse_set_id_create(stack, nargs, kwnames, paths[0], &ints[1],
						 &ints[2]) < 0)
				goto out;
			/* The "open" event only has the relative name: hand the
			 * original a path through the descriptor instead, which
			 * names the same directory and which the event can
			 * resolve. A dir_fd that /proc cannot name is refused. */
			if (has_dir_fd && (PyUnicode_Check(paths[0]) || PyBytes_Check(paths[0]))) {
				char base[PATH_MAX];
				const char *raw = PyUnicode_Check(paths[0])
						      ? PyUnicode_AsUTF8(paths[0])
						      : PyBytes_AS_STRING(paths[0]);
				Py_ssize_t at =
				    nargs > 0 ? 0 : nargs + kw_index(kwnames, NULL, "path");
				Py_ssize_t k = 0;

				if (!raw)
					goto out;
				if (raw[0] == '/')
					break;
				if (sb_files_dir_fd_path(dir_fd, base) < 0) {
					sb_files_refuse_unresolvable(
					    raw, "its dir_fd is not a directory that "
						 "/proc/self/fd can name");
					goto out;
				}
				rewritten = through_proc(dir_fd, paths[0]);
				if (!rewritten)
					goto out;
				stack[at] = rewritten;
				/* Without dir_fd (has_dir_fd: it is a keyword). */
				new_kwnames = PyTuple_New(nkw - 1);
				if (!new_kwnames)
					goto out;
				for (Py_ssize_t j = 0; j < nkw; j++) {
					if (j == i_dir_fd)
						continue;
					PyTuple_SET_ITEM(new_kwnames, k,
							 Py_NewRef(PyTuple_GET_ITEM(kwnames, j)));
					stack[nargs + k++] = stack[nargs + j];
				}
				call_kwnames = new_kwnames;
			}
			break;
		default:
			break;
		}
	}
	result = PyObject_Vectorcall(w->original, stack, nargs, call_kwnames);
	/* A new root or cwd: what was resolved before may mean another file. */
	if (w - wrapped == W_CHROOT || w - wrapped == W_CHDIR)
		sb_rc_clear();
	if (!result || !armed)
		goto out;
	if (w->kind == WRAP_LIST) {
		result = sb_files_filter_listing(paths[0], result, w - wrapped == W_SCANDIR);
	} else if (w->kind == WRAP_READLINK && (PyUnicode_Check(result) || PyBytes_Check(result))) {
		/* Where the link points is itself information: refused, as
		 * for reading the target, when it leads outside. */
		char where[PATH_MAX], joined[PATH_MAX];
		PyObject *keep;
		const char *raw = NULL, *target = NULL;
		_cleanup_free_ char *dir = NULL;
		int r = 0;

		if (sb_files_path_bytes(paths[0], false, &raw, &keep) != SB_PATH_STRING)
			goto out;
		Py_XDECREF(keep);
		if (sb_files_check_raw(raw, dir_fd, false, false, where) < 0 ||
		    sb_files_path_bytes(result, false, &target, &keep) != SB_PATH_STRING) {
			Py_CLEAR(result);
			goto out;
		}
		dir = sb_path_dirname(where);
		if (!dir)
			r = -1;
		else if (target[0] == '/')
			r = snprintf(joined, sizeof(joined), "%s", target);
		else
			r = snprintf(joined, sizeof(joined), "%s/%s", dir, target);
		Py_XDECREF(keep);
		if (r < 0 || r >= (int)sizeof(joined) ||
		    sb_files_check_raw(joined, -1, false, true, NULL) < 0) {
			if (!PyErr_Occurred())
				sb_files_refuse_unresolvable(raw, "its target is too long");
			else if (PyErr_ExceptionMatches(PyExc_FileNotFoundError)) {
				/* Name the link, not its target. */
				PyErr_Clear();
				sb_files_refuse_unresolvable(
				    raw, "it is a symbolic link that leads outside "
					 "the exposed directories");
			}
			Py_CLEAR(result);
		}
	}
out:
	Py_XDECREF(paths[0]);
	Py_XDECREF(paths[1]);
	Py_XDECREF(ints[0]);
	Py_XDECREF(ints[1]);
	Py_XDECREF(ints[2]);
	Py_XDECREF(rewritten);
	Py_XDECREF(new_kwnames);
	return result;
}

/* The common cases first, in a function small enough to be inlined into
 * each wrapper; the rest in call_wrapped_general(). */
static inline PyObject *call_wrapped(struct wrapped *w, PyObject *const *args, Py_ssize_t nargs,
				     PyObject *kwnames)
{
	if (!w->original)
		return PyErr_Format(PyExc_RuntimeError, "%s is not available", w->name);
	/* A wrapper whose function raises its own event: the paths are already
	 * str or bytes (nothing to convert, nothing a second __fspath__ call
	 * could change). Straight to the original. */
	if (w->kind == WRAP_CONVERT && nargs >= (Py_ssize_t)w->n_paths && w - wrapped != W_CHROOT &&
	    w - wrapped != W_CHDIR) {
		bool plain = true;

		for (unsigned i = 0; plain && i < w->n_paths; i++)
			plain = PyUnicode_CheckExact(args[i]) || PyBytes_CheckExact(args[i]);
		if (plain)
			return PyObject_Vectorcall(w->original, args, (size_t)nargs, kwnames);
	}
	/* stat(path), stat(path, follow_symlinks=...) (pathlib), and the
	 * like. The keyword is matched by identity: CPython interns keyword
	 * names written in the source; anything else goes the general way. */
	if (w->kind == WRAP_READ && nargs == 1 && sb_guard_armed() &&
	    (!kwnames || (PyTuple_GET_SIZE(kwnames) == 1 &&
			  PyTuple_GET_ITEM(kwnames, 0) == keys.follow_symlinks)))
		return read_wrapped(w, args, kwnames);
	return call_wrapped_general(w, args, nargs, kwnames);
}

/* One C function per wrapper: with m_self NULL (so that gc.get_referents()
 * of a wrapper does not lead to the original), the function itself must
 * know which entry it stands for. */
#define WRAPPER(idx)                                                                               \
	static PyObject *wrap_##idx(PyObject *self _unused_, PyObject *const *args,                \
				    Py_ssize_t nargs, PyObject *kwnames)                           \
	{                                                                                          \
		return call_wrapped(&wrapped[idx], args, nargs, kwnames);                          \
	}
WRAPPER(W_OPEN)
WRAPPER(W_IO_OPEN)
WRAPPER(W_STAT)
WRAPPER(W_LSTAT)
WRAPPER(W_ACCESS)
WRAPPER(W_STATVFS)
WRAPPER(W_PATHCONF)
WRAPPER(W_CHROOT)
WRAPPER(W_READLINK)
WRAPPER(W_MKFIFO)
WRAPPER(W_MKNOD)
WRAPPER(W_LISTDIR)
WRAPPER(W_SCANDIR)
WRAPPER(W_CHDIR)
WRAPPER(W_CHMOD)
WRAPPER(W_CHOWN)
WRAPPER(W_LCHOWN)
WRAPPER(W_MKDIR)
WRAPPER(W_REMOVE)
WRAPPER(W_UNLINK)
WRAPPER(W_RMDIR)
WRAPPER(W_RENAME)
WRAPPER(W_REPLACE)
WRAPPER(W_LINK)
WRAPPER(W_SYMLINK)
WRAPPER(W_TRUNCATE)
WRAPPER(W_UTIME)
WRAPPER(W_GETXATTR)
WRAPPER(W_SETXATTR)
WRAPPER(W_LISTXATTR)
WRAPPER(W_REMOVEXATTR)

static PyObject *(*const wrapper_fn[W__N])(PyObject *, PyObject *const *, Py_ssize_t,
					   PyObject *) = {
    [W_OPEN] = wrap_W_OPEN,
    [W_IO_OPEN] = wrap_W_IO_OPEN,
    [W_STAT] = wrap_W_STAT,
    [W_LSTAT] = wrap_W_LSTAT,
    [W_ACCESS] = wrap_W_ACCESS,
    [W_STATVFS] = wrap_W_STATVFS,
    [W_PATHCONF] = wrap_W_PATHCONF,
    [W_CHROOT] = wrap_W_CHROOT,
    [W_READLINK] = wrap_W_READLINK,
    [W_MKFIFO] = wrap_W_MKFIFO,
    [W_MKNOD] = wrap_W_MKNOD,
    [W_LISTDIR] = wrap_W_LISTDIR,
    [W_SCANDIR] = wrap_W_SCANDIR,
    [W_CHDIR] = wrap_W_CHDIR,
    [W_CHMOD] = wrap_W_CHMOD,
    [W_CHOWN] = wrap_W_CHOWN,
    [W_LCHOWN] = wrap_W_LCHOWN,
    [W_MKDIR] = wrap_W_MKDIR,
    [W_REMOVE] = wrap_W_REMOVE,
    [W_UNLINK] = wrap_W_UNLINK,
    [W_RMDIR] = wrap_W_RMDIR,
    [W_RENAME] = wrap_W_RENAME,
    [W_REPLACE] = wrap_W_REPLACE,
    [W_LINK] = wrap_W_LINK,
    [W_SYMLINK] = wrap_W_SYMLINK,
    [W_TRUNCATE] = wrap_W_TRUNCATE,
    [W_UTIME] = wrap_W_UTIME,
    [W_GETXATTR] = wrap_W_GETXATTR,
    [W_SETXATTR] = wrap_W_SETXATTR,
    [W_LISTXATTR] = wrap_W_LISTXATTR,
    [W_REMOVEXATTR] = wrap_W_REMOVEXATTR,
};

/* The wrapper's docstring: the original's, in CPython's layout
 * "name(sig)\n--\n\n" + text, so that inspect.signature() still works. The
 * wrapper has no module as self: "name($module, /, path...)" becomes
 * "name(path...)". NULL when the original's can be used as it is. */
static char *wrapper_doc(const char *name, const char *doc)
{
	size_t n = strlen(name), rest_len;
	const char *rest;
	char *text;

	if (!doc || strncmp(doc, name, n) != 0 || doc[n] != '(')
		return NULL;
	rest = startswith(doc + n + 1, "$module, /, ");
	if (!rest)
		return NULL;
	rest_len = strlen(rest);
	text = malloc(n + 1 + rest_len + 1);
	if (!text)
		return NULL;
	memcpy(text, doc, n + 1);
	memcpy(text + n + 1, rest, rest_len + 1);
	return text;
}

/* The modules a wrapper goes into, looked up once per activation. */
enum home {
	HOME_POSIX,
	HOME_OS,
	HOME_IO_C,
	HOME_IO,
	HOME_BUILTINS,
	HOME__N,
};

static const char *const home_names[HOME__N] = {"posix", "os", "_io", "io", "builtins"};

/* Replaces name in every module that exports the original object under it:
 * posix and os (os re-exports posix's functions), _io, io and builtins. */
static int install(struct wrapped *w, size_t idx, PyObject *const homes[HOME__N])
{
	static const enum home posix_homes[] = {HOME_POSIX, HOME_OS};
	static const enum home io_homes[] = {HOME_IO_C, HOME_IO, HOME_BUILTINS};
	bool io = streq(w->module, "_io");
	const enum home *targets = io ? io_homes : posix_homes;
	size_t n_targets = io ? ELEMENTSOF(io_homes) : ELEMENTSOF(posix_homes);
	PyObject *module = homes[targets[0]], *key, *modname, *fn;
	int r = -1;

	if (!module)
		return 0;
	key = PyUnicode_InternFromString(w->name);
	if (!key)
		return -1;
	w->original = PyDict_GetItemWithError(PyModule_GetDict(module), key);
	if (!w->original) {
		Py_DECREF(key);
		/* Not built on this platform: nothing to wrap. */
		return PyErr_Occurred() ? -1 : 0;
	}
	Py_INCREF(w->original);
	w->def.ml_name = w->name;
	w->def.ml_meth = (PyCFunction)(void (*)(void))wrapper_fn[idx];
	w->def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
	w->def.ml_doc = NULL;
	w->doc_owned = false;
	if (PyCFunction_Check(w->original)) {
		const char *doc = ((PyCFunctionObject *)w->original)->m_ml->ml_doc;
		char *text = wrapper_doc(w->name, doc);

		/* The original's text lives as long as its module's code. */
		w->def.ml_doc = text ? text : doc;
		w->doc_owned = text != NULL;
	}
	modname = PyUnicode_InternFromString(w->module);
	fn = modname ? PyCFunction_NewEx(&w->def, NULL, modname) : NULL;
	Py_XDECREF(modname);
	if (!fn)
		goto out;
	for (size_t i = 0; i < n_targets; i++) {
		PyObject *m = homes[targets[i]], *dict, *cur;

		if (!m)
			continue;
		dict = PyModule_GetDict(m);
		cur = PyDict_GetItemWithError(dict, key); /* borrowed */
		/* Only where it is the same function (os.open is posix.open;
		 * builtins.open is _io.open). */
		if (cur == w->original && PyDict_SetItem(dict, key, fn) < 0)
			goto out;
		if (!cur && PyErr_Occurred())
			goto out;
	}
	r = 0;
out:
	Py_XDECREF(fn);
	Py_DECREF(key);
	return r;
}

int sb_files_wrap_activate(void)
{
	PyObject *homes[HOME__N] = {NULL};
	int r = -1;

	keys.dir_fd = PyUnicode_InternFromString("dir_fd");
	keys.follow_symlinks = PyUnicode_InternFromString("follow_symlinks");
	keys.fspath = PyUnicode_InternFromString("__fspath__");
	if (!keys.dir_fd || !keys.follow_symlinks || !keys.fspath)
		goto out;
	for (size_t i = 0; i < HOME__N; i++) {
		homes[i] = sb_guard_loaded_module(home_names[i]);
		if (!homes[i] && PyErr_Occurred())
			goto out;
	}
	for (size_t i = 0; i < W__N; i++)
		if (install(&wrapped[i], i, homes) < 0)
			goto out;
	r = 0;
out:
	for (size_t i = 0; i < HOME__N; i++)
		Py_XDECREF(homes[i]);
	return r;
}

int sb_files_wrap_module(const char *name, PyObject *module)
{
	PyObject *dict = PyModule_Check(module) ? PyModule_GetDict(module) : NULL;

	if (!dict || !wrapped[W_OPEN].def.ml_meth)
		return 0;
	for (size_t i = 0; i < W__N; i++) {
		struct wrapped *w = &wrapped[i];
		PyObject *key, *cur, *modname, *fn;
		int r;

		if (!w->original || !streq(w->module, name))
			continue;
		key = PyUnicode_InternFromString(w->name);
		if (!key)
			return -1;
		cur = PyDict_GetItemWithError(dict, key); /* borrowed */
		/* A fresh module's own function: the C function the wrapper's
		 * original is (another module object, the same code). */
		if (!cur || !PyCFunction_Check(cur) || !PyCFunction_Check(w->original) ||
		    PyCFunction_GET_FUNCTION(cur) != PyCFunction_GET_FUNCTION(w->original)) {
			Py_DECREF(key);
			if (PyErr_Occurred())
				return -1;
			continue;
		}
		modname = PyUnicode_InternFromString(w->module);
		fn = modname ? PyCFunction_NewEx(&w->def, NULL, modname) : NULL;
		Py_XDECREF(modname);
		r = fn ? PyDict_SetItem(dict, key, fn) : -1;
		Py_XDECREF(fn);
		Py_DECREF(key);
		if (r < 0)
			return -1;
	}
	return 0;
}

void sb_files_wrap_release(void)
{
	for (size_t i = 0; i < W__N; i++) {
		if (wrapped[i].doc_owned)
			free((char *)wrapped[i].def.ml_doc);
		/* The originals belonged to the finalized interpreter: drop,
		 * don't DECREF. */
		wrapped[i].original = NULL;
		wrapped[i].def = (PyMethodDef){0};
	}
	/* Like the originals: the finalized interpreter's objects. */
	keys.dir_fd = keys.follow_symlinks = keys.fspath = NULL;
}
