/* SPDX-License-Identifier: MIT */
/* expose-ro=, expose-rw=, ignore=: the files part of the guard. Decisions
 * are taken on the resolved path (src/policy/file-policy.c), from the audit
 * events CPython raises ("open", "os.remove", ...) and from C wrappers where
 * it raises none. In files:
 *
 *   guard-files.c          the events, the implicit grants, the life cycle;
 *   guard-files-check.c    the decisions;
 *   guard-files-cache.c    the resolution cache they go through;
 *   guard-files-wrap.c     the C wrappers;
 *   guard-files-listing.c  listings without the entries ignore= hides;
 *   guard-files-sqlite.c   the files SQLite opens itself (connect, ATTACH). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-part.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "guard-files-cache.h"
#include "guard-files-check.h"
#include "guard-files-exec.h"
#include "guard-files-listing.h"
#include "guard-files-move.h"
#include "guard-files-sqlite.h"
#include "guard-files-wrap.h"
#include "guard-observer.h"
#include "path0-modules.h"
#include "util.h"

static const char *const ca_stores[] = {
    "/etc/ssl", "/etc/pki", "/etc/ca-certificates", "/usr/share/ca-certificates", "/usr/share/pki",
};

/* The time zone database, which zoneinfo reads from Python (the kernel
 * layers grant it too: src/providers/grants.c); public data. */
static const char *const time_zones[] = {"/usr/share/zoneinfo", "/etc/localtime"};

/* ---- audit events ------------------------------------------------------- */

static PyObject *arg(PyObject *args, Py_ssize_t i)
{
	return PyTuple_Check(args) && PyTuple_GET_SIZE(args) > i ? PyTuple_GET_ITEM(args, i) : NULL;
}

static int arg_fd(PyObject *args, Py_ssize_t i)
{
	PyObject *o = arg(args, i);
	long fd;

	if (!o || !PyLong_Check(o))
		return -1;
	fd = PyLong_AsLong(o);
	if (fd == -1 && PyErr_Occurred())
		PyErr_Clear();
	/* The events report a missing dir_fd as -1; AT_FDCWD is the cwd too. */
	return fd < 0 || fd > INT_MAX ? -1 : (int)fd;
}

static bool open_writes(PyObject *mode, PyObject *flags)
{
	if (mode && PyUnicode_Check(mode)) {
		const char *m = PyUnicode_AsUTF8(mode);

		if (!m) {
			PyErr_Clear();
			return true;
		}
		/* A few characters: a loop costs less than strpbrk(). */
		for (; *m; m++)
			if (*m == 'w' || *m == 'a' || *m == 'x' || *m == '+')
				return true;
	}
	if (flags && PyLong_Check(flags)) {
		long f = PyLong_AsLong(flags);

		if (f == -1 && PyErr_Occurred()) {
			PyErr_Clear();
			return true;
		}
		if ((f & O_ACCMODE) != O_RDONLY || (f & (O_CREAT | O_TRUNC | O_APPEND)))
			return true;
#ifdef O_TMPFILE
		if ((f & O_TMPFILE) == O_TMPFILE)
			return true;
#endif
	}
	return false;
}

/* open(), io.open(), os.open(), io.FileIO, io.open_code(): (path, mode, flags).
 * A path-like object reaches this event only through io.FileIO() called
 * directly (open() and os.open() are wrapped and pass a str): FileIO has
 * already called its __fspath__, and a second call could answer otherwise. */
static int on_open(PyObject *args)
{
	return sb_files_check_obj(arg(args, 0), -1, open_writes(arg(args, 1), arg(args, 2)), true,
				  false);
}

/* A held descriptor (an int) names a file too: checked through it. */
static int check_read_or_fd(PyObject *o)
{
	if (o && PyLong_Check(o))
		return sb_files_check_fd_read(o);
	return sb_files_check_obj(o, -1, false, true, false);
}

static int on_read(PyObject *args)
{
	return check_read_or_fd(arg(args, 0));
}

/* os.chdir and os.fchdir: the cached cwd is dropped (the event comes before
 * the change; the next decision asks getcwd again). */
static int on_chdir(PyObject *args)
{
	int r = check_read_or_fd(arg(args, 0));

	sb_rc_cwd_changed();
	return r;
}

/* A second thread or process could change the namespace between another's
 * write decision and its system call: no resolution cache from now on. */
static int on_new_actor(PyObject *args _unused_)
{
	sb_rc_disable();
	return 0;
}

/* os.listdir/os.scandir with None: the cwd. */
static int on_list(PyObject *args)
{
	return check_read_or_fd(arg(args, 0));
}

/* (path, ..., dir_fd) with dir_fd at index i */
static int on_attr_change(PyObject *args, Py_ssize_t dir_fd_index)
{
	return sb_files_check_obj_both(arg(args, 0), dir_fd_index ? arg_fd(args, dir_fd_index) : -1,
				       false);
}

/* ("os.chmod", path or fd, mode, dir_fd): also no set-ID bit (see
 * sb_files_refuse_set_id()), on a directory neither: seccomp cannot tell a
 * directory from a file and refuses the bits to native code alike, so the
 * two layers give one answer. */
static int on_chmod(PyObject *args)
{
	PyObject *o = arg(args, 0), *m = arg(args, 1), *keep = NULL;
	long mode = m && PyLong_Check(m) ? PyLong_AsLong(m) : 0;
	const char *raw = NULL;
	int r;

	if (on_attr_change(args, 2) < 0)
		return -1;
	if (mode == -1 && PyErr_Occurred())
		return -1;
	if (!(mode & (S_ISUID | S_ISGID)))
		return 0;
	if (o && PyLong_Check(o))
		raw = "<descriptor>";
	else if (sb_files_path_bytes(o, false, &raw, &keep) != SB_PATH_STRING)
		raw = "?";
	if (PyErr_Occurred())
		PyErr_Clear();
	r = sb_files_refuse_set_id(raw, (unsigned long)mode);
	Py_XDECREF(keep);
	return r;
}

static int on_chown(PyObject *args)
{
	return on_attr_change(args, 3);
}

static int on_utime(PyObject *args)
{
	return on_attr_change(args, 3);
}

static int on_xattr_write(PyObject *args)
{
	return on_attr_change(args, 0);
}

static int on_create_or_remove(PyObject *args, Py_ssize_t dir_fd_index)
{
	return sb_files_check_obj(arg(args, 0), arg_fd(args, dir_fd_index), true, false, false);
}

static int on_mkdir(PyObject *args)
{
	return on_create_or_remove(args, 2);
}

static int on_remove(PyObject *args)
{
	return on_create_or_remove(args, 1);
}

static int on_truncate(PyObject *args)
{
	PyObject *o = arg(args, 0);

	if (o && PyLong_Check(o))
		return sb_files_check_fd_change(o);
	return sb_files_check_obj(o, -1, true, true, false);
}

static int on_rename(PyObject *args)
{
	if (sb_files_check_move_source(arg(args, 0), arg_fd(args, 2)) < 0 ||
	    sb_files_check_obj(arg(args, 1), arg_fd(args, 3), true, false, false) < 0)
		return -1;
	return sb_files_check_moved_links(arg(args, 0), arg_fd(args, 2), arg(args, 1),
					  arg_fd(args, 3), true);
}

/* A hard link to a file is a second name with the same permissions: linking
 * a read-only file into a writable directory would make it writable. */
static int on_link(PyObject *args)
{
	if (sb_files_check_obj_both(arg(args, 0), arg_fd(args, 2), false) < 0 ||
	    sb_files_check_obj(arg(args, 1), arg_fd(args, 3), true, false, false) < 0)
		return -1;
	/* link() does not follow a symbolic link: the new name is the link
	 * itself, in another directory (the event does not say whether
	 * linkat() will follow it: judged as if not). */
	return sb_files_check_moved_links(arg(args, 0), arg_fd(args, 2), arg(args, 1),
					  arg_fd(args, 3), false);
}

/* os.symlink(target, link, dir_fd): the link's place must be writable, and
 * its target, resolved from the link's directory as the kernel will, within
 * the grants: a link to /etc in a writable directory is refused. */
static int on_symlink(PyObject *args)
{
	char where[PATH_MAX];
	PyObject *keep = NULL;
	const char *target = NULL;
	_cleanup_free_ char *dir = NULL;
	int r;

	switch (sb_files_path_bytes(arg(args, 1), false, &target, &keep)) {
	case SB_PATH_STRING:
		break;
	case SB_PATH_ERROR:
		return -1;
	default:
		return sb_files_refuse_uncheckable(arg(args, 1));
	}
	r = sb_files_check_raw(target, arg_fd(args, 2), true, false, where);
	Py_XDECREF(keep);
	if (r < 0)
		return -1;
	switch (sb_files_path_bytes(arg(args, 0), false, &target, &keep)) {
	case SB_PATH_STRING:
		break;
	case SB_PATH_ERROR:
		return -1;
	default:
		return sb_files_refuse_uncheckable(arg(args, 0));
	}
	dir = sb_path_dirname(where);
	if (!dir) {
		Py_XDECREF(keep);
		PyErr_NoMemory();
		return -1;
	}
	if (target[0] == '/') {
		r = sb_files_check_raw(target, -1, false, true, NULL);
	} else {
		char joined[PATH_MAX];

		if (snprintf(joined, sizeof(joined), "%s/%s", dir, target) >= (int)sizeof(joined))
			r = sb_files_refuse_unresolvable(target, "it is too long");
		else
			r = sb_files_check_raw(joined, -1, false, true, NULL);
	}
	Py_XDECREF(keep);
	return r;
}

/* shutil and sqlite3 events come from Python code with the program's own
 * arguments (str or path-like): checked early for a clear message, the os
 * calls they make are checked again on str paths. */
static int on_copy(PyObject *args)
{
	if (sb_files_check_obj(arg(args, 0), -1, false, true, true) < 0)
		return -1;
	return sb_files_check_obj(arg(args, 1), -1, true, true, true);
}

static int on_rmtree(PyObject *args)
{
	return sb_files_check_obj(arg(args, 0), arg_fd(args, 1), true, false, true);
}

static int on_move(PyObject *args)
{
	if (sb_files_check_obj(arg(args, 0), -1, true, false, true) < 0)
		return -1;
	return sb_files_check_obj(arg(args, 1), -1, true, true, true);
}

static int on_shutil_chown(PyObject *args)
{
	return sb_files_check_obj(arg(args, 0), -1, true, true, true);
}

static int on_make_archive(PyObject *args)
{
	if (sb_files_check_obj(arg(args, 0), -1, true, true, true) < 0)
		return -1;
	return sb_files_check_obj(arg(args, 2), -1, false, true, true);
}

static int on_unpack_archive(PyObject *args)
{
	if (sb_files_check_obj(arg(args, 0), -1, false, true, true) < 0)
		return -1;
	return sb_files_check_obj(arg(args, 1), -1, true, true, true);
}

static const struct sb_audit_handler file_handlers[] = {
    {"open", on_open},
    {"_thread.start_joinable_thread", on_new_actor},
    {"_thread.start_new_thread", on_new_actor},
    {"os.chdir", on_chdir},
    {"os.exec", on_new_actor},
    {"os.fork", on_new_actor},
    {"os.forkpty", on_new_actor},
    {"os.posix_spawn", on_new_actor},
    {"os.spawn", on_new_actor},
    {"os.system", on_new_actor},
    {"subprocess.Popen", on_new_actor},
    {"os.chmod", on_chmod},
    {"os.chown", on_chown},
    {"os.getxattr", on_read},
    {"os.link", on_link},
    {"os.listdir", on_list},
    {"os.listxattr", on_list},
    {"os.mkdir", on_mkdir},
    {"os.removexattr", on_xattr_write},
    {"os.remove", on_remove},
    {"os.rename", on_rename},
    {"os.rmdir", on_remove},
    {"os.scandir", on_list},
    {"os.setxattr", on_xattr_write},
    {"os.symlink", on_symlink},
    {"os.truncate", on_truncate},
    {"os.utime", on_utime},
    {"shutil.chown", on_shutil_chown},
    {"shutil.copyfile", on_copy},
    {"shutil.copymode", on_copy},
    {"shutil.copystat", on_copy},
    {"shutil.copytree", on_copy},
    {"shutil.make_archive", on_make_archive},
    {"shutil.move", on_move},
    {"shutil.rmtree", on_rmtree},
    {"shutil.unpack_archive", on_unpack_archive},
    {"sqlite3.connect", sb_files_on_sqlite_connect},
};

/* Whether the profile lets the program start a thread or a process: then the
 * resolution cache is never used (see there). Any ALLOW that could cover such
 * a function counts, whatever DENY rules say. */
static bool grants_other_actors(const struct sb_profile *profile)
{
	for (size_t i = 0; i < profile->n_apis; i++) {
		const struct sb_api_rule *a = &profile->apis[i];
		enum sb_api_category c;

		if (a->deny)
			continue;
		if (a->kind == SB_API_TARGET_ALL)
			return true;
		c = a->kind == SB_API_TARGET_CATEGORY ? a->category
		    : a->function		      ? a->function->category
						      : SB_API_CATEGORY__N;
		if (c == SB_API_PROCESS_EXEC || c == SB_API_PROCESS_CONTROL || c == SB_API_THREADS)
			return true;
	}
	return false;
}

/* The launcher named sys.path[0] and its modules: add_sys_path0() grants no
 * more than that. */
static bool path0_known;

/* The files the standard library looks for with os.path.isfile() for
 * itself, on its own initiative (CPython 3.11): mimetypes.knownfiles, which
 * mimetypes.init() reads when present. Refused as absent: the rule they
 * would need is expose-ro=/etc, and mimetypes has its own table. */
static const char *const mimetypes_knownfiles[] = {
    "/etc/mime.types",
    "/etc/httpd/mime.types",
    "/etc/httpd/conf/mime.types",
    "/etc/apache/mime.types",
    "/etc/apache2/mime.types",
    "/usr/local/etc/httpd/conf/mime.types",
    "/usr/local/lib/netscape/mime.types",
    "/usr/local/etc/mime.types",
};

/* The time zone directories zoneinfo searches after the one granted (CPython's
 * default TZPATH, Debian's too), which it lists for available_timezones() and
 * looks a missing key up in: absent on Debian, and /etc's if not. */
static const char *const tzpath_rest[] = {"/usr/lib/zoneinfo", "/usr/share/lib/zoneinfo",
					  "/etc/zoneinfo"};

static int files_prepare(const struct sb_profile *profile, const struct sb_interp_paths *interp,
			 char **reterr _unused_)
{
	int r = sb_files_check_prepare(profile);

	if (interp)
		sb_files_exec_prepare(interp->files_confined, interp->files_hidden,
				      interp->provider);

	sb_rc_init(grants_other_actors(profile), !sb_files_has_ignores());
	for (char **d = interp ? interp->dirs : NULL; r >= 0 && d && *d; d++)
		r = sb_files_grant_later(*d, false, false, false, "the interpreter's files");
	/* Each link of the chain (readlink of it) and its target. */
	for (char **f = interp ? interp->files : NULL; r >= 0 && f && *f; f++)
		r = sb_files_grant_later(*f, true, false, true, "the interpreter's files");
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(ca_stores); i++)
		r = sb_files_grant_later(ca_stores[i], false, false, false, "a CA store");
	if (r >= 0)
		r = sb_files_grant_later(time_zones[0], false, false, false, "time zones");
	if (r >= 0)
		r = sb_files_grant_later(time_zones[1], true, false, true, "the time zone");
	/* What the kernel boundary grants too: harmless, and needed by
	 * subprocess.DEVNULL, os.urandom fallbacks, and the like. */
	if (r >= 0)
		r = sb_files_grant_later("/dev/null", true, true, false, "a device");
	if (r >= 0)
		r = sb_files_grant_later("/dev/zero", true, false, false, "a device");
	if (r >= 0)
		r = sb_files_grant_later("/dev/urandom", true, false, false, "a device");
	if (r >= 0)
		r = sb_files_grant_later("/dev/random", true, false, false, "a device");
	if (r >= 0 && interp && interp->files)
		r = sb_files_quiet_source_tree(interp->files[0]);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(mimetypes_knownfiles); i++)
		r = sb_files_add_quiet_probe(mimetypes_knownfiles[i]);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(tzpath_rest); i++)
		r = sb_files_add_quiet_probe(tzpath_rest[i]);
	/* What the kernel grants of sys.path[0] (path0-modules.h): its
	 * listing and the allowed modules' files, nothing where no module is
	 * allowed. While learning, the directory stays readable as a whole
	 * (add_sys_path0()): what the program reads there is learned, not
	 * refused. */
	if (r >= 0 && interp && interp->path0 && !sb_guard_observed()) {
		path0_known = true;
		r = interp->path0_modules ? sb_files_grant_later(interp->path0, true, false, false,
								 "sys.path[0]: its listing only")
					  : sb_files_path0_unlisted(interp->path0);
	}
	for (char **m = path0_known ? interp->path0_modules : NULL; r >= 0 && m && *m; m++)
		r = sb_files_grant_later(*m, false, false, true, SB_PATH0_MODULE_WHY);
	return r < 0 ? r : 0;
}

static int add_sys_path(void)
{
	PyObject *path = PySys_GetObject("path"); /* borrowed */
	char cwd[PATH_MAX];

	if (!path || !PyList_Check(path))
		return 0;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(path); i++) {
		PyObject *item = PyList_GET_ITEM(path, i), *keep;
		const char *dir = NULL;
		enum sb_path_kind k = sb_files_path_bytes(item, false, &dir, &keep);
		int r = 0;

		if (k == SB_PATH_STRING) {
			char abs[PATH_MAX];

			/* '' is the current directory (-c, -m, the REPL); a
			 * relative entry is made absolute now, as it means now. */
			if (!*dir)
				dir = getcwd(cwd, sizeof(cwd));
			else if (dir[0] != '/' && getcwd(cwd, sizeof(cwd)) &&
				 (size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, dir) <
				     sizeof(abs))
				dir = abs; /* joined, not normalised: ".." is the resolver's */
			if (dir && dir[0] == '/')
				r = sb_files_grant_later(dir, false, false, false,
							 "a sys.path entry");
		}
		Py_XDECREF(keep);
		PyErr_Clear();
		if (r < 0)
			return r;
	}
	return 0;
}

/* The entry Py_RunMain() will put first in sys.path, after activate(): the
 * script's directory, or the current directory for -m, -c, stdin and the
 * REPL; none with -P/-I (safe_path). Imports from it must keep working. */
static int add_sys_path0(void)
{
	PyObject *flags = PySys_GetObject("flags"), *argv = PySys_GetObject("argv"); /* borrowed */
	PyObject *safe = flags ? PyObject_GetAttrString(flags, "safe_path") : NULL, *keep;
	const char *arg0 = NULL;
	char cwd[PATH_MAX];
	int r = 0;

	if (path0_known) {
		Py_XDECREF(safe);
		return 0;
	}
	if (safe && PyObject_IsTrue(safe) == 1) {
		Py_DECREF(safe);
		return 0;
	}
	Py_XDECREF(safe);
	PyErr_Clear();
	if (!argv || !PyList_Check(argv) || PyList_GET_SIZE(argv) < 1 ||
	    sb_files_path_bytes(PyList_GET_ITEM(argv, 0), false, &arg0, &keep) != SB_PATH_STRING) {
		PyErr_Clear();
		return 0;
	}
	if (!*arg0 || streq(arg0, "-m") || streq(arg0, "-c") || streq(arg0, "-")) {
		if (getcwd(cwd, sizeof(cwd)))
			r = sb_files_grant_later(cwd, false, false, false, "a sys.path entry");
	} else {
		/* CPython puts the directory of the script's real path there. */
		_cleanup_free_ char *real = realpath(arg0, NULL), *dir = NULL;

		dir = real ? sb_path_dirname(real) : NULL;
		if (dir)
			r = sb_files_grant_later(dir, false, false, false, "a sys.path entry");
	}
	Py_XDECREF(keep);
	return r;
}

/* Whether a sys.path entry is a site directory by its name. */
static bool site_dir_name(const char *dir)
{
	const char *base = strrchr(dir, '/');

	base = base ? base + 1 : dir;
	return streq(base, "site-packages") || streq(base, "dist-packages");
}

/* The directories whose .pth files site ran before the guard was armed, and
 * will run at the next start: sys.path's site directories, and the user site
 * (site.USER_SITE, set even when it does not exist yet, which a program
 * could create). A later run runs that code unguarded: no grant lets the
 * program write it. */
static int add_startup_dirs(void)
{
	PyObject *path = PySys_GetObject("path"); /* borrowed */
	PyObject *name = PyUnicode_FromString("site"), *site = NULL, *user = NULL;
	int r = 0;

	for (Py_ssize_t i = 0; path && PyList_Check(path) && r >= 0 && i < PyList_GET_SIZE(path);
	     i++) {
		PyObject *item = PyList_GET_ITEM(path, i);
		const char *dir = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;

		if (dir && dir[0] == '/' && site_dir_name(dir))
			r = sb_files_add_startup_dir(dir);
		PyErr_Clear();
	}
	/* From sys.modules, not by an import (-S: no site, nothing ran). */
	site = name ? PyImport_GetModule(name) : NULL;
	user = site ? PyObject_GetAttrString(site, "USER_SITE") : NULL;
	if (r >= 0 && user && PyUnicode_Check(user)) {
		const char *dir = PyUnicode_AsUTF8(user);

		if (dir && dir[0] == '/')
			r = sb_files_add_startup_dir(dir);
	}
	PyErr_Clear();
	Py_XDECREF(user);
	Py_XDECREF(site);
	Py_XDECREF(name);
	return r;
}

static int files_activate(char **reterr)
{
	int r;

	r = add_sys_path0();
	if (r >= 0)
		r = add_sys_path();
	if (r >= 0)
		r = add_startup_dirs();
	if (r < 0)
		return r;
	if (sb_files_listing_activate() < 0 || sb_files_wrap_activate() < 0 ||
	    sb_files_sqlite_activate() < 0) {
		PyErr_Clear();
		*reterr = strdup("cannot install the files guard");
		return -EIO;
	}
	return 0;
}

/* _imp made a module: SQLite's connections are guarded from the start, and
 * a fresh posix or _io (del sys.modules['posix'] then import, or
 * _imp.create_builtin()) gets the file wrappers the first one got: without
 * them its mkfifo(), stat(), chroot()... decided nothing. */
static int files_module_loaded(const char *name, PyObject *module)
{
	if (streq(name, "_sqlite3"))
		return sb_files_sqlite_module(module);
	if (streq(name, "posix") || streq(name, "_io"))
		return sb_files_wrap_module(name, module);
	return 0;
}

static void files_release(void)
{
	path0_known = false;
	sb_files_exec_prepare(false, false, NULL);
	sb_files_sqlite_release();
	sb_files_wrap_release();
	sb_files_check_release();
	sb_rc_release();
}

const struct sb_guard_part sb_guard_files_part = {
    .name = "files",
    .prepare = files_prepare,
    .activate = files_activate,
    .release = files_release,
    .handlers = file_handlers,
    .n_handlers = ELEMENTSOF(file_handlers),
    .module_loaded = files_module_loaded,
};
