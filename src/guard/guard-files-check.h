/* SPDX-License-Identifier: MIT */
#pragma once

/* The files part's decisions: a path argument (a raw path, relative to a
 * dir_fd or the cwd, or a Python path object) resolved through the cache
 * (guard-files-cache.h) and judged by the file policy
 * (src/policy/file-policy.h) on its resolved path; a refusal a missing rule
 * explains is offered to the guard's observer (guard-observer.h). The
 * events (guard-files.c), the C wrappers (guard-files-wrap.c), the filtered
 * listings (guard-files-listing.c) and the other parts
 * (sb_guard_file_check()) decide through these. Each decision returns 0, or
 * -1 with the pysandboxes exception set. GIL held. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdbool.h>

#include "file-policy.h"
#include "profile.h"

struct sb_rc_slot;
struct sb_rc_hint;

/* Life cycle (guard-files.c): the policy of the profile before the
 * interpreter exists (0 or -errno); implicit grants, resolved at the first
 * decision rather than at every start (0 or -ENOMEM; link_too: also the
 * link path itself, if it is one); freed after the run. */
int sb_files_check_prepare(const struct sb_profile *profile);
/* A site directory whose .pth files the next start runs before the guard:
 * no grant lets the program change them (sb_file_policy_startup_code()). */
int sb_files_add_startup_dir(const char *dir);
int sb_files_grant_later(const char *path, bool file, bool writable, bool link_too,
			 const char *why);
void sb_files_check_release(void);
/* sys.path[0] when it is not granted at all (no module there is allowed):
 * the import machinery's listing of it is refused quietly. 0 or -ENOMEM. */
int sb_files_path0_unlisted(const char *dir);
/* One more expose rule after the start (e->resolved absolute), and the
 * current directory forgotten: python-sb serve's fork server grants each
 * run's directory in the run's own process (sb_guard_fork_child()). 0 or
 * -errno. */
int sb_files_expose(const struct sb_expose_rule *e);

/* The implicit grants resolved: call before looking at the cache. 0, or -1
 * with an exception. Inline: asked before every decision. Hidden, so that
 * python-sb does not export it with the interpreter's symbols. */
extern bool sb_files_grants_pending __attribute__((visibility("hidden")));
int sb_files_resolve_grants(void);
static inline int sb_files_ready(void)
{
	return sb_files_grants_pending ? sb_files_resolve_grants() : 0;
}

/* The decision for one raw path (relative to dir_fd when >= 0, else to the
 * cwd); resolved_out, when given, receives the resolved path. */
int sb_files_check_raw(const char *raw, int dir_fd, bool write, bool follow, char *resolved_out);
/* sb_files_check_raw() after its fast path, into the caller's abs and
 * resolved. With last_unknown (a read that follows the last name), 1 when
 * only the last name's link status is missing: resolved is then right if it
 * is no link, and the decision is the caller's (sb_files_verdict()). hint as
 * for sb_rc_resolve(). */
int sb_files_check_raw_ex(const char *raw, int dir_fd, bool write, bool follow, bool last_unknown,
			  char abs[PATH_MAX], char resolved[PATH_MAX], struct sb_rc_hint *hint);
/* The verdict on a resolved path and what follows from it (the observer's
 * note, the refusal); slot is the cache entry of this very resolution, if
 * any. 0 when the policy allows, 1 when the observer let a refusal go
 * ahead (nothing to remember), -1 refused. */
int sb_files_verdict(const char *raw, const char *abs, const char *resolved, bool write,
		     struct sb_rc_slot *slot);
/* One path argument of an event or a wrapper: a held fd passes (a
 * capability), None is the current directory; a path-like object only with
 * allow_pathlike (the event comes from Python code whose os calls are
 * wrapped). */
int sb_files_check_obj(PyObject *o, int dir_fd, bool write, bool follow, bool allow_pathlike);
/* Attribute changes: both the link and its target must be writable; for a
 * held descriptor, the file it names (sb_files_check_fd_change()). */
/* The source of a rename (relative to dir_fd when >= 0): a write, and no
 * ignore= rule may hide a path below it. 0, or -1 with the exception set. */
int sb_files_check_move_source(PyObject *o, int dir_fd);
int sb_files_check_obj_both(PyObject *o, int dir_fd, bool allow_pathlike);
/* A change through a held descriptor o (an int): the file it names must be
 * writable; a descriptor with no file-system name passes. */
int sb_files_check_fd_change(PyObject *o);
/* A listing or an attribute read through a held descriptor o (an int): the
 * file it names must be readable. */
int sb_files_check_fd_read(PyObject *o);
/* For the other parts: AF_UNIX socket paths (the network part), files
 * extension modules open (guard-native-files.c). Allowed before the guard
 * is armed. */
int sb_guard_file_check(const char *path, bool write);

/* Set by the stat(), lstat() and access() wrappers around their decision:
 * then a directory on the way to a grant passes, without being remembered
 * as readable, and a path given to sb_files_add_quiet_probe() is refused as
 * absent (FileNotFoundError) without being reported. */
void sb_files_metadata_only(bool on);
/* A fixed path the standard library stat()s for itself (resolved), whose
 * refusal, and that of any path below it, is no denial of the program's. 0,
 * -ENOMEM or -ENOSPC (16 at most). */
int sb_files_add_quiet_probe(const char *resolved);
/* The same for sysconfig's Modules/Setup and Modules/Setup.local beside the
 * real path of executable (the launcher binary), resolved when first
 * needed. 0 or -ENOMEM. */
int sb_files_quiet_source_tree(const char *executable);

/* ignore= rules: whether there are any, and whether one hides the entry
 * name of the resolved directory dir from a listing. */
bool sb_files_has_ignores(void);
bool sb_files_entry_ignored(const char *dir, const char *name);

enum sb_path_kind {
	SB_PATH_STRING,	     /* *ret is the path, owned by the object or *keep */
	SB_PATH_FD,	     /* a held descriptor: a capability */
	SB_PATH_NONE,	     /* None: the current directory for listdir() and friends */
	SB_PATH_UNCHECKABLE, /* a type whose value could change between check and use */
	SB_PATH_ERROR,	     /* an exception is set */
};

/* The bytes of a path argument, as CPython encodes a str for the system
 * call; a path-like object only with allow_pathlike. */
enum sb_path_kind sb_files_path_bytes(PyObject *o, bool allow_pathlike, const char **ret,
				      PyObject **keep);
/* The directory a dir_fd stands for, through /proc/self/fd; -EBADF when it
 * cannot be named. */
int sb_files_dir_fd_path(int fd, char out[PATH_MAX]);
/* The refusals of what cannot be decided: a path the guard cannot resolve
 * (why says what), an argument of a type whose value could change between
 * check and use. -1 with the exception set. */
int sb_files_refuse_unresolvable(const char *raw, const char *why);
int sb_files_refuse_uncheckable(PyObject *o);
