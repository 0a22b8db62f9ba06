/* SPDX-License-Identifier: MIT */
/* The files part's decisions (guard-files-check.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-files-check.h"

#include <sys/stat.h>

#include "guard-files-cache.h"
#include "guard-observer.h"
#include "guard-runtime.h"
#include "pysandboxes-module.h"
#include "util.h"

/* An implicit grant not resolved yet (see resolve_pending()). */
struct pending_grant {
	char *path; /* absolute */
	bool file, writable;
	bool link_too; /* also the link path itself, if it is one */
	const char *why;
};

static struct {
	struct sb_file_policy policy;
	bool prepared;
	struct pending_grant *pending;
	size_t n_pending;
	/* sys.path[0] when no module there is allowed: not even listed. */
	char *path0_unlisted;
	/* Set around the decision of a stat(), lstat() or access()
	 * (sb_files_metadata_only()). */
	bool metadata_only;
	/* Fixed paths the standard library probes for itself
	 * (sb_files_add_quiet_probe()). */
	char *quiet_probes[16];
	/* The launcher binary, whose source-tree markers join them at the
	 * first refusal (sb_files_quiet_source_tree()). */
	char *source_tree_exe;
} files;

bool sb_files_grants_pending;

/* The directory a dir_fd stands for, through /proc/self/fd; -EBADF when it
 * cannot be named (not a directory, deleted, no /proc): such fds are refused. */
int sb_files_dir_fd_path(int fd, char out[PATH_MAX])
{
	char link[64];
	struct stat st;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
		return -EBADF;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, PATH_MAX - 1);
	if (n <= 0 || out[0] != '/')
		return -EBADF;
	out[n] = '\0';
	if (n > 10 && streq(out + n - 10, " (deleted)"))
		return -EBADF;
	return 0;
}

int sb_files_refuse_unresolvable(const char *raw, const char *why)
{
	_cleanup_free_ char *text = NULL;

	if (asprintf(&text,
		     "Access to '%s' must be accepted by a rule: %s, so the guard cannot tell "
		     "which file it names. Add 'expose-ro=<dir>' to '%s' and use a path",
		     raw, why, sb_guard_profile_path()) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return sb_raise_file_not_found(raw, text);
}

static bool is_directory(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Raises the refusal for a verdict. Only on the refusal path: may allocate. */
static int refuse(enum sb_fp_verdict v, const struct sb_fp_grant *g, const struct sb_fp_ignore *ig,
		  const char *raw, const char *abs, const char *resolved, bool write, bool missing)
{
	_cleanup_free_ char *text = NULL, *dir = NULL;
	const char *key = write ? "expose-rw" : "expose-ro";
	int r = -1;

	switch (v) {
	case SB_FP_RULE_FILE: {
		const char *rules = sb_file_policy_rule_file(&files.policy, resolved);

		if (rules && streq(rules, resolved))
			r = asprintf(
			    &text,
			    "Cannot change '%s': python-sb takes its rules from it (the "
			    "profile, an include, the learn file, or any .py-sandboxes), and no "
			    "grant lets a program it runs change them",
			    raw);
		else
			r = asprintf(
			    &text,
			    "Cannot change '%s': it holds '%s', a file python-sb takes its "
			    "rules from, and no grant lets a program it runs move or remove it",
			    raw, rules ? rules : "?");
		break;
	}
	case SB_FP_STARTUP_CODE:
		r = asprintf(
		    &text,
		    "Cannot change '%s': the interpreter runs it at start-up, before the "
		    "guard (sitecustomize, usercustomize, what a site directory holds: its "
		    ".pth files and the modules they import; or a directory on their way), "
		    "and no grant lets a program change that",
		    raw);
		break;
	case SB_FP_IGNORED:
		r = asprintf(&text, "Access to '%s' is ignored by rule 'ignore=%s' from %s", raw,
			     ig->pattern, ig->origin);
		break;
	case SB_FP_READ_ONLY:
		/* Never a read-write grant of '/' or a system directory: the
		 * file's own directory when it is one of the program's, else
		 * nothing to add. */
		if (sb_file_policy_system_dir(g->dir)) {
			_cleanup_free_ char *by = NULL;

			dir = sb_path_dirname(resolved);
			if (!dir ||
			    (g->implicit
				 ? asprintf(&by, "it is exposed read-only without a rule (%s)",
					    g->why)
				 : asprintf(&by, "rule 'expose-ro=%s' from %s grants reading only",
					    g->written, g->origin)) < 0) {
				by = NULL;
				break;
			}
			if (sb_file_policy_system_dir(dir))
				r = asprintf(
				    &text,
				    "Cannot write to '%s': %s, and no rule should grant "
				    "writing in the system directory '%s': write elsewhere",
				    abs, by, dir);
			else
				r = asprintf(
				    &text,
				    "Cannot write to '%s': %s. Add 'expose-rw=%s' to '%s' to "
				    "allow writing",
				    abs, by, dir, sb_guard_profile_path());
		} else if (g->implicit)
			r = asprintf(&text,
				     "Cannot write to '%s%s'. It is exposed read-only without a "
				     "rule (%s). Add 'expose-rw=%s' to '%s' to allow writing",
				     g->dir, g->file || streq(g->dir, "/") ? "" : "/", g->why,
				     g->dir, sb_guard_profile_path());
		else
			r = asprintf(&text,
				     "Cannot write to '%s%s'. Rule 'expose-ro=%s' from %s. Use "
				     "'expose-rw=%s' instead to allow writing",
				     g->dir, streq(g->dir, "/") ? "" : "/", g->written, g->origin,
				     g->written);
		break;
	case SB_FP_NOT_EXPOSED:
	default:
		/* A symbolic link that leads outside: name the path the program
		 * used, not where the link points (readlink would not tell). */
		/* missing: resolved does not exist, nor does what abs leads
		 * to (no stat needed to tell they are no directories). */
		if (!streq(abs, resolved) && (missing || !is_directory(abs)) &&
		    strncmp(abs, resolved, strlen(abs)) != 0) {
			_cleanup_free_ char *parent = sb_path_dirname(abs);

			if (parent && sb_file_policy_grant_for(&files.policy, parent))
				r = asprintf(
				    &text,
				    "Access to '%s' must be accepted by a rule: it leads "
				    "through a symbolic link outside the exposed directories. "
				    "Add '%s=<the link target's directory>' to '%s'",
				    abs, key, sb_guard_profile_path());
		}
		if (r < 0) {
			/* Reading a directory exposes it; a file, its directory. */
			dir = !missing && !write && is_directory(resolved)
				  ? strdup(resolved)
				  : sb_path_dirname(resolved);
			if (!dir)
				break;
			if (write && sb_file_policy_system_dir(dir))
				r = asprintf(
				    &text,
				    "Access to '%s' must be accepted by a rule, and no rule "
				    "should grant writing in the system directory '%s': write "
				    "elsewhere",
				    abs, dir);
			else
				r = asprintf(&text,
					     "Access to '%s' must be accepted by a rule. Add "
					     "'%s=%s' to '%s'",
					     abs, key, dir, sb_guard_profile_path());
		}
		break;
	}
	if (r < 0) {
		text = NULL;
		PyErr_NoMemory();
		return -1;
	}
	if (v == SB_FP_READ_ONLY || v == SB_FP_RULE_FILE || v == SB_FP_STARTUP_CODE)
		return sb_raise_permission(EACCES, raw, text);
	return sb_raise_file_not_found(raw, text);
}

/* The decision, for the observer. While learning, sys.path[0] (the script's
 * directory, or the cwd) is readable as a whole by an implicit grant of the
 * guard, but replayed only its listing and the files of the modules
 * python-import= allows are (path0-modules.h), so the profile must name what
 * the program read there: the directory of a file the program opened. What
 * the import machinery read there needs no rule but the learned import. */
static void note_decided(const char *resolved, bool write, enum sb_fp_verdict v,
			 const struct sb_fp_grant *g)
{
	const char *needed = NULL;

	if (v == SB_FP_ALLOW && g && g->implicit && streq(g->why, "a sys.path entry") &&
	    !sb_guard_caller_is_import_bootstrap())
		needed = resolved;
	sb_guard_note_file(resolved, write, needed);
}

/* The lexical absolute form of raw (relative to dir_fd, or the cwd) into
 * abs, and the directory it is relative to into base (*basep NULL for an
 * absolute raw). 0, or -1 with the exception set. */
static int absolute(const char *raw, int dir_fd, char abs[PATH_MAX], char base[PATH_MAX],
		    const char **basep)
{
	*basep = NULL;
	if (raw[0] != '/') {
		if (dir_fd >= 0) {
			if (sb_files_dir_fd_path(dir_fd, base) < 0)
				return sb_files_refuse_unresolvable(
				    raw, "its dir_fd is not a directory that "
					 "/proc/self/fd can name");
		} else if (!sb_rc_cwd(base)) {
			return sb_files_refuse_unresolvable(
			    raw, "the current directory cannot be named");
		}
		*basep = base;
	}
	if (sb_path_absolute(raw, *basep, abs) < 0)
		return sb_files_refuse_unresolvable(raw, "it is too long or loops");
	return 0;
}

/* A __pycache__ directory, or a file in one. */
static bool in_bytecode_cache(const char *resolved)
{
	const char *c = strstr(resolved, "/__pycache__");

	return c && (c[12] == '\0' || (c[12] == '/' && !strchr(c + 13, '/')));
}

void sb_files_metadata_only(bool on)
{
	files.metadata_only = on;
}

int sb_files_add_quiet_probe(const char *resolved)
{
	for (size_t i = 0; i < ELEMENTSOF(files.quiet_probes); i++)
		if (!files.quiet_probes[i]) {
			files.quiet_probes[i] = strdup(resolved);
			return files.quiet_probes[i] ? 0 : -ENOMEM;
		}
	return -ENOSPC;
}

int sb_files_quiet_source_tree(const char *executable)
{
	free(files.source_tree_exe);
	files.source_tree_exe = executable ? strdup(executable) : NULL;
	return !executable || files.source_tree_exe ? 0 : -ENOMEM;
}

/* sysconfig, on import, asks whether the interpreter runs from CPython's
 * source tree: a stat() of Modules/Setup and Modules/Setup.local beside the
 * real path of sys.executable (the launcher binary). Resolved at the first
 * refusal, not at every start. */
static void add_source_tree_probes(void)
{
	static const char *const markers[] = {"/Modules/Setup", "/Modules/Setup.local"};
	_cleanup_free_ char *exe = TAKE_PTR(files.source_tree_exe);
	char resolved[PATH_MAX], probe[PATH_MAX];
	char *slash;

	if (!exe || sb_path_resolve(exe, "/", true, resolved) < 0)
		return;
	slash = strrchr(resolved, '/');
	if (!slash)
		return;
	*slash = '\0';
	for (size_t i = 0; i < ELEMENTSOF(markers); i++)
		if (snprintf(probe, sizeof(probe), "%s%s", resolved, markers[i]) <
			(int)sizeof(probe) &&
		    sb_files_add_quiet_probe(probe) < 0)
			return; /* the probe is reported: nothing worse */
}

/* The path or a path below it. */
static bool quiet_probe(const char *resolved)
{
	if (files.source_tree_exe)
		add_source_tree_probes();
	for (size_t i = 0; i < ELEMENTSOF(files.quiet_probes) && files.quiet_probes[i]; i++) {
		const char *rest = startswith(resolved, files.quiet_probes[i]);

		if (rest && (*rest == '\0' || *rest == '/'))
			return true;
	}
	return false;
}

/* linecache's search for a traceback's source file under a relative name
 * (a Cython extension's "yaml/_yaml.pyx"): it stat()s the name in the
 * current directory and in each sys.path entry, and takes any OSError for
 * "not there". A refusal there suggested a rule for a directory that does
 * not exist. A name the program passes that is absolute is judged as any. */
static bool linecache_source_search(void)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyObject *filename;
	bool relative;

	if (!frame || !sb_guard_frame_is(frame, "/linecache.py", "updatecache"))
		return false;
	filename = sb_guard_frame_local(frame, "filename");
	relative = filename && PyUnicode_Check(filename) && PyUnicode_GET_LENGTH(filename) > 0 &&
		   PyUnicode_READ_CHAR(filename, 0) != '/';
	Py_XDECREF(filename);
	return relative;
}

/* The verdict on a resolved path, and what follows from it: the observer's
 * note, the refusal. slot is the cache entry this very resolution came from,
 * if any (NULL when the resolver itself answered, e.g. for a path with
 * ".."), for the message. */
int sb_files_verdict(const char *raw, const char *abs, const char *resolved, bool write,
		     struct sb_rc_slot *slot)
{
	const struct sb_fp_grant *g;
	const struct sb_fp_ignore *ig;
	enum sb_fp_verdict v;

	v = sb_file_policy_decide(&files.policy, raw, abs, resolved, write, &g, &ig);
	if (sb_guard_observed())
		note_decided(resolved, write, v, g);
	if (v == SB_FP_ALLOW)
		return 0;
	if (files.metadata_only && v == SB_FP_NOT_EXPOSED && !write) {
		/* A directory on the way to a grant: realpath() of a granted
		 * path lstat()s each. It exists whatever the answer, and its
		 * listing and other entries stay refused: not remembered as a
		 * read, which the cache would serve to an open() or a listing. */
		if (sb_file_policy_leads_to_grant(&files.policy, resolved))
			return 1;
		/* The standard library's own probe of a fixed path, or
		 * linecache's search for a source by a relative name: refused
		 * as absent, which is what it takes it to be (a rule to
		 * suggest would be /etc's, or a directory that is not there),
		 * and not reported. */
		if (quiet_probe(resolved) || linecache_source_search()) {
			errno = ENOENT;
			PyErr_SetFromErrnoWithFilename(PyExc_OSError, raw);
			return -1;
		}
	}
	/* What a rule would allow is offered to the observer: not a refusal by
	 * an ignore= rule, a decision; nor the import machinery's
	 * bytecode-cache writes, which fail harmlessly without an observer
	 * too. */
	/* The import machinery's bytecode cache beside a module it may read
	 * but not write (or, in sys.path[0], whose cache was not granted), or
	 * its listing of a sys.path[0] that holds no allowed module: the
	 * machinery takes any OSError there as "no cache", "nothing here", and
	 * goes on, so the refusal is no denial of the program's to report. */
	if (sb_guard_caller_is_import_bootstrap() &&
	    (in_bytecode_cache(resolved) ||
	     (files.path0_unlisted && streq(resolved, files.path0_unlisted)))) {
		errno = write ? EACCES : ENOENT;
		PyErr_SetFromErrnoWithFilename(PyExc_OSError, raw);
		return -1;
	}
	if (v != SB_FP_IGNORED && v != SB_FP_RULE_FILE && v != SB_FP_STARTUP_CODE &&
	    sb_guard_observed() && !(write && sb_guard_caller_is_import_bootstrap()) &&
	    sb_guard_refused(&(struct sb_refusal){
		.kind = SB_REFUSAL_FILE, .subject = resolved, .write = write}) == SB_RECORDED_ALLOW)
		return 1;
	return refuse(v, g, ig, raw, abs, resolved, write, sb_rc_missing(slot));
}

/* sb_files_check_raw() after its fast path, into the caller's abs and resolved. With
 * last_unknown (a read that follows the last name), 1 when only the last
 * name's link status is missing: resolved is then right if it is no link,
 * and the decision is the caller's (see stat_through_lstat() in guard-files-wrap.c). hint as for
 * sb_rc_resolve(). */
int sb_files_check_raw_ex(const char *raw, int dir_fd, bool write, bool follow, bool last_unknown,
			  char abs[PATH_MAX], char resolved[PATH_MAX], struct sb_rc_hint *hint)
{
	char base[PATH_MAX];
	const char *basep;
	struct sb_rc_slot *slot = NULL;
	int walk = SB_RC_FALLBACK, r;

	/* A write may change the namespace: forget every resolution before it
	 * happens, and remember none made for it (see the resolution cache). */
	if (write)
		sb_rc_clear();
	if (absolute(raw, dir_fd, abs, base, &basep) < 0)
		return -1;
	if (!write)
		walk = sb_rc_resolve(raw, abs, follow, last_unknown, resolved, &slot, hint);
	if (walk == SB_RC_LAST_UNKNOWN)
		return 1;
	if (walk != SB_RC_DONE && sb_path_resolve(raw, basep, follow, resolved) < 0)
		return sb_files_refuse_unresolvable(raw, "it is too long or loops");
	r = sb_files_verdict(raw, abs, resolved, write, slot);
	if (r < 0)
		return -1;
	if (r == 0 && !write)
		sb_rc_allow_read(slot, hint);
	return 0;
}

/* The decision for one raw path (relative to dir_fd when >= 0, else to the
 * cwd). resolved_out, when given, receives the resolved path. 0, or -1 with
 * the exception set. */
int sb_files_check_raw(const char *raw, int dir_fd, bool write, bool follow, char *resolved_out)
{
	char abs[PATH_MAX], resolved[PATH_MAX];
	struct sb_rc_hint hint = {0};
	int r;

	if (sb_files_ready() < 0)
		return -1;
	if (!write && !resolved_out && sb_rc_read_allowed(raw, strlen(raw), follow, &hint))
		return 0;
	r = sb_files_check_raw_ex(raw, dir_fd, write, follow, false, abs, resolved, &hint);
	if (r == 0 && resolved_out)
		memcpy(resolved_out, resolved, strlen(resolved) + 1);
	return r;
}

/* The bytes of a path argument. A str is encoded as CPython encodes it for
 * the system call; a path-like object only when from_python (the event comes
 * from Python code that will call os functions, which are wrapped). */
enum sb_path_kind sb_files_path_bytes(PyObject *o, bool allow_pathlike, const char **ret,
				      PyObject **keep)
{
	*keep = NULL;
	if (!o || o == Py_None)
		return SB_PATH_NONE;
	/* The common case, read in place: an ASCII str is its UTF-8. */
	if (PyUnicode_CheckExact(o) && PyUnicode_IS_COMPACT_ASCII(o)) {
		const char *s = (const char *)PyUnicode_DATA(o);

		if (memchr(s, '\0', (size_t)PyUnicode_GET_LENGTH(o)))
			return SB_PATH_UNCHECKABLE;
		*ret = s;
		return SB_PATH_STRING;
	}
	if (PyLong_Check(o) || (!PyUnicode_Check(o) && !PyBytes_Check(o) && PyIndex_Check(o)))
		return SB_PATH_FD;
	if (!PyUnicode_Check(o) && !PyBytes_Check(o)) {
		if (!allow_pathlike)
			return SB_PATH_UNCHECKABLE;
		*keep = PyOS_FSPath(o);
		if (!*keep)
			return PyErr_ExceptionMatches(PyExc_TypeError)
				   ? (PyErr_Clear(), SB_PATH_UNCHECKABLE)
				   : SB_PATH_ERROR;
		o = *keep;
	}
	if (PyUnicode_Check(o)) {
		Py_ssize_t n;
		const char *s = PyUnicode_AsUTF8AndSize(o, &n);

		/* UTF-8 is the file system encoding here (UTF-8 mode or a UTF-8
		 * locale); undecodable bytes (surrogateescape) need the real
		 * encoder. */
		if (!s) {
			PyObject *b;

			PyErr_Clear();
			b = PyUnicode_EncodeFSDefault(o);
			Py_XDECREF(*keep);
			*keep = b;
			if (!b)
				return SB_PATH_ERROR;
			o = b;
		} else {
			if ((size_t)n != strlen(s))
				return SB_PATH_UNCHECKABLE;
			*ret = s;
			return SB_PATH_STRING;
		}
	}
	*ret = PyBytes_AS_STRING(o);
	if ((size_t)PyBytes_GET_SIZE(o) != strlen(*ret))
		return SB_PATH_UNCHECKABLE;
	return SB_PATH_STRING;
}

int sb_files_refuse_uncheckable(PyObject *o)
{
	_cleanup_free_ char *text = NULL;

	if (asprintf(&text,
		     "A path given as a %s object cannot be checked by the guard; pass a str or "
		     "bytes path (os.fspath(p))",
		     Py_TYPE(o)->tp_name) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return sb_raise_permission(EACCES, NULL, text);
}

/* Checks one path argument of an event or wrapper: held fds pass (a
 * capability), None means the current directory. */
int sb_files_check_obj(PyObject *o, int dir_fd, bool write, bool follow, bool allow_pathlike)
{
	PyObject *keep;
	const char *raw = NULL;
	struct sb_rc_hint hint = {0};
	int r;

	/* Also for a held fd (os.chmod(fd), os.truncate(fd)...): any write
	 * empties the resolution cache (see there). */
	if (write)
		sb_rc_clear();
	else if (o) {
		/* The hot path: open() of a path read before. dir_fd does
		 * not matter: only absolute paths are found. */
		if (sb_files_ready() < 0)
			return -1;
		if (sb_rc_obj_read_allowed(o, follow, &hint))
			return 0;
	}
	switch (sb_files_path_bytes(o, allow_pathlike, &raw, &keep)) {
	case SB_PATH_FD:
		return 0;
	case SB_PATH_NONE:
		return sb_files_check_raw(".", -1, write, follow, NULL);
	case SB_PATH_UNCHECKABLE:
		return sb_files_refuse_uncheckable(o);
	case SB_PATH_ERROR:
		return -1;
	case SB_PATH_STRING:
		break;
	}
	if (write) {
		r = sb_files_check_raw(raw, dir_fd, write, follow, NULL);
	} else {
		char abs[PATH_MAX], resolved[PATH_MAX];

		/* Looked up already (hint): straight to the resolution. */
		r = sb_files_check_raw_ex(raw, dir_fd, false, follow, false, abs, resolved, &hint);
		if (r == 0 && hint.allowed)
			sb_rc_remember(o, follow);
	}
	Py_XDECREF(keep);
	return r;
}

/* A change made through a held descriptor (fchmod, fchown, futimes,
 * fsetxattr, ftruncate), or a listing or attribute read through one: the
 * descriptor says nothing of the rules (stdin, a file opened read-only, a
 * directory inherited), the file it names does. Named through
 * /proc/self/fd; a descriptor with no name in the file system (a pipe, a
 * socket, an unlinked file) has nothing the rules protect. */
static int check_fd(PyObject *o, bool write)
{
	char link[64], path[PATH_MAX];
	long fd = PyLong_AsLong(o);
	ssize_t n;

	if (fd == -1 && PyErr_Occurred())
		return -1;
	if (fd < 0 || fd > INT_MAX)
		return 0; /* the system call refuses it (EBADF) */
	snprintf(link, sizeof(link), "/proc/self/fd/%ld", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		return errno == ENOENT ? 0
				       : sb_files_refuse_unresolvable(link, "/proc cannot name it");
	path[n] = '\0';
	if (path[0] != '/' || (n > 10 && streq(path + n - 10, " (deleted)")))
		return 0;
	return sb_files_check_raw(path, -1, write, true, NULL);
}

int sb_files_check_fd_change(PyObject *o)
{
	return check_fd(o, true);
}

int sb_files_check_fd_read(PyObject *o)
{
	return check_fd(o, false);
}

/* The source of a rename: a write of it, and, when it is a directory, the
 * paths below it change names: one an ignore= rule hides by its path
 * (ignore=/data/private/key) would come out under a name the rule does not
 * match (rename /data/private to /data/public). Refused when a rule may hide
 * something below it. */
int sb_files_check_move_source(PyObject *o, int dir_fd)
{
	_cleanup_free_ char *text = NULL;
	const struct sb_fp_ignore *ig;
	char resolved[PATH_MAX];
	const char *raw = NULL;
	PyObject *keep;
	int r;

	switch (sb_files_path_bytes(o, false, &raw, &keep)) {
	case SB_PATH_STRING:
		break;
	case SB_PATH_ERROR:
		return -1;
	case SB_PATH_UNCHECKABLE:
		return sb_files_refuse_uncheckable(o);
	default:
		return sb_files_check_obj(o, dir_fd, true, false, false);
	}
	r = sb_files_check_raw(raw, dir_fd, true, false, resolved);
	if (r < 0 || !(ig = sb_file_policy_ignore_below(&files.policy, resolved)))
		goto out;
	if (asprintf(&text,
		     "Cannot move '%s': rule 'ignore=%s' from %s may hide paths below it, which "
		     "would not be hidden under their new names",
		     raw, ig->pattern, ig->origin) < 0) {
		text = NULL;
		r = -1;
		PyErr_NoMemory();
		goto out;
	}
	r = sb_raise_permission(EACCES, raw, text);
out:
	Py_XDECREF(keep);
	return r;
}

/* Attribute changes (chmod, chown, utime, xattrs, link sources): the event
 * does not say whether follow_symlinks was given, so both the link and its
 * target must be writable. */
int sb_files_check_obj_both(PyObject *o, int dir_fd, bool allow_pathlike)
{
	if (o &&
	    (PyLong_Check(o) || (!PyUnicode_Check(o) && !PyBytes_Check(o) && PyIndex_Check(o))))
		return PyLong_Check(o) ? sb_files_check_fd_change(o) : 0;
	if (sb_files_check_obj(o, dir_fd, true, true, allow_pathlike) < 0)
		return -1;
	return sb_files_check_obj(o, dir_fd, true, false, allow_pathlike);
}

int sb_guard_file_check(const char *path, bool write)
{
	if (!files.prepared || !sb_guard_armed())
		return 0;
	return sb_files_check_raw(path, -1, write, true, NULL);
}

int sb_files_add_startup_dir(const char *dir)
{
	return sb_file_policy_add_startup_dir(&files.policy, dir);
}

int sb_files_grant_later(const char *path, bool file, bool writable, bool link_too, const char *why)
{
	struct pending_grant *p;

	if (!path || !*path)
		return 0;
	p = realloc(files.pending, (files.n_pending + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	files.pending = p;
	p[files.n_pending] = (struct pending_grant){
	    .path = strdup(path),
	    .file = file,
	    .writable = writable,
	    .link_too = link_too,
	    .why = why,
	};
	if (!p[files.n_pending].path)
		return -ENOMEM;
	files.n_pending++;
	sb_files_grants_pending = true;
	return 0;
}

/* The link itself: an exact grant of its own path. */
static int grant_link(const char *path, const char *why)
{
	char hop[PATH_MAX];
	struct sb_fp_grant *grants;
	char *copy;

	/* A file that resolved to its own path has no link on the way: the
	 * grant of its target is that of the link path already. */
	for (size_t i = 0; i < files.policy.n_implicit; i++)
		if (files.policy.implicit[i].file && streq(files.policy.implicit[i].dir, path))
			return 0;
	if (sb_path_resolve(path, "/", false, hop) < 0)
		return 0;
	grants = realloc(files.policy.implicit, (files.policy.n_implicit + 1) * sizeof(*grants));
	if (!grants)
		return -ENOMEM;
	files.policy.implicit = grants;
	copy = strdup(hop);
	if (!copy)
		return -ENOMEM;
	grants[files.policy.n_implicit++] = (struct sb_fp_grant){
	    .dir = copy,
	    .len = strlen(copy),
	    .implicit = true,
	    .file = true,
	    .why = why,
	};
	return 0;
}

/* The implicit grants are resolved (realpath and stat of each, ~70 system
 * calls) at the first decision rather than on every start: a program that
 * opens nothing never pays for them. Resolving late changes nothing: every
 * change to the file system the guard mediates is itself a decision, made
 * after this, and paths relative to the current directory were made
 * absolute when they were recorded. */
static int resolve_pending(void)
{
	int r = 0;

	for (size_t i = 0; i < files.n_pending; i++) {
		const struct pending_grant *p = &files.pending[i];

		if (r >= 0)
			r = sb_file_policy_add_implicit(&files.policy, p->path, p->file,
							p->writable, p->why);
		if (r >= 0 && p->link_too)
			r = grant_link(p->path, p->why);
		free(p->path);
	}
	free(files.pending);
	files.pending = NULL;
	files.n_pending = 0;
	sb_files_grants_pending = false;
	if (r >= 0)
		sb_rc_seed(files.policy.canonical, files.policy.n_canonical);
	return r;
}

int sb_files_resolve_grants(void)
{
	if (resolve_pending() < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return 0;
}

int sb_files_expose(const struct sb_expose_rule *e)
{
	int r = sb_file_policy_add_grant(&files.policy, e);

	/* Only wider: what the cache remembers stays right, but not the
	 * current directory, which the caller changed from C. */
	if (r >= 0)
		sb_rc_cwd_changed();
	return r;
}

int sb_files_check_prepare(const struct sb_profile *profile)
{
	int r = sb_file_policy_init(&files.policy, profile);

	if (r >= 0)
		files.prepared = true;
	return r;
}

void sb_files_check_release(void)
{
	for (size_t i = 0; i < files.n_pending; i++)
		free(files.pending[i].path);
	free(files.pending);
	files.pending = NULL;
	files.n_pending = 0;
	sb_files_grants_pending = false;
	sb_file_policy_done(&files.policy);
	files.prepared = false;
	free(files.path0_unlisted);
	files.path0_unlisted = NULL;
	for (size_t i = 0; i < ELEMENTSOF(files.quiet_probes); i++)
		free(TAKE_PTR(files.quiet_probes[i]));
	free(TAKE_PTR(files.source_tree_exe));
	files.metadata_only = false;
}

int sb_files_path0_unlisted(const char *dir)
{
	free(files.path0_unlisted);
	files.path0_unlisted = dir ? strdup(dir) : NULL;
	return !dir || files.path0_unlisted ? 0 : -ENOMEM;
}

bool sb_files_has_ignores(void)
{
	return files.policy.n_ignores > 0;
}

bool sb_files_entry_ignored(const char *dir, const char *name)
{
	const struct sb_fp_ignore *ig;

	return sb_file_policy_entry_ignored(&files.policy, dir, name, &ig);
}
