/* SPDX-License-Identifier: MIT */
#pragma once

/* The file decisions of the Python guard as plain C data: expose-ro/-rw
 * grants, ignore= globs and the implicit read-only grants (the interpreter's
 * own tree, sys.path, CA stores). Built once (this may allocate); decisions
 * afterwards only walk these arrays and use the caller's stack buffers, so
 * the hot path neither allocates nor re-parses rules. */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "profile.h"

enum sb_fp_verdict {
	SB_FP_ALLOW,
	SB_FP_NOT_EXPOSED,  /* no grant covers the path: ENOENT */
	SB_FP_IGNORED,	    /* an ignore= rule hides it: ENOENT */
	SB_FP_READ_ONLY,    /* a write under a read-only grant: EACCES */
	SB_FP_RULE_FILE,    /* a write to a file python-sb takes rules from: EACCES */
	SB_FP_STARTUP_CODE, /* a write to code site runs before the guard: EACCES */
};

struct sb_fp_grant {
	char *dir; /* resolved, no trailing '/' except for "/" itself */
	size_t len;
	bool writable;
	bool implicit;
	bool file;	 /* an exact file rather than a directory tree */
	char *written;	 /* explicit: the rule's path as written */
	char *origin;	 /* explicit: "file:line" */
	const char *why; /* implicit: what it is ("the interpreter's files") */
};

struct sb_fp_ignore {
	char *pattern;
	bool absolute; /* starts with '/': matched against full paths */
	char *origin;  /* "file:line" */
};

struct sb_file_policy {
	struct sb_fp_grant *grants; /* explicit, longest dir first */
	size_t n_grants;
	struct sb_fp_grant *implicit; /* implicit, any order */
	size_t n_implicit;
	struct sb_fp_ignore *ignores;
	size_t n_ignores;
	/* Directories the implicit grants showed to be canonical (existing, no
	 * link in them), to resolve the next ones with fewer system calls. */
	char **canonical;
	size_t n_canonical;
	/* Every file python-sb takes rules from (the profile, its includes,
	 * those it would read if they appeared, the learn file), resolved:
	 * no grant lets the program change them. */
	char **rule_files;
	size_t n_rule_files;
	/* The site directories whose code site runs at start-up, before the
	 * guard is armed (.pth files, the modules they import), resolved:
	 * sys.path's site-packages, the user site even when it does not exist
	 * yet. */
	char **startup_dirs;
	size_t n_startup_dirs;
};

/* Compiles the profile's expose-ro, expose-rw and ignore rules. 0 or -ENOMEM. */
int sb_file_policy_init(struct sb_file_policy *p, const struct sb_profile *profile);
/* Adds the grant of one more expose rule (e->resolved absolute), as if the
 * profile had it: python-sb serve's fork server grants each run's directory
 * this way. 0, -EINVAL or -ENOMEM. */
int sb_file_policy_add_grant(struct sb_file_policy *p, const struct sb_expose_rule *e);
/* Adds an implicit grant of dir (or file) when it exists; path need not be
 * resolved (it is, here). Missing paths are skipped. 0 or -ENOMEM. */
int sb_file_policy_add_implicit(struct sb_file_policy *p, const char *path, bool file,
				bool writable, const char *why);
void sb_file_policy_done(struct sb_file_policy *p);
/* Adds a site directory (need not exist) to startup_dirs. 0 or -ENOMEM. */
int sb_file_policy_add_startup_dir(struct sb_file_policy *p, const char *dir);
/* When a write to resolved would change code that site runs at the next
 * start, before the guard is armed: a sitecustomize or usercustomize module
 * (any file or directory of that name, its cached bytecode included),
 * anything in a startup directory (its .pth files, and the modules they and
 * sitecustomize import), the directory itself or a directory on its way (a
 * rename would put another one in its place). The startup directory or
 * resolved; NULL otherwise. */
const char *sb_file_policy_startup_code(const struct sb_file_policy *p, const char *resolved);

/* Lexically absolute: base (an absolute directory) joined with path unless
 * path is absolute, "." and ".." folded. 0 or -ENAMETOOLONG. */
int sb_path_absolute(const char *path, const char *base, char out[PATH_MAX]);

/* Resolves path as the kernel would (relative to base), following every
 * symbolic link, and the last component too when follow_last. A missing tail
 * (a file about to be created) is appended lexically after its deepest
 * existing ancestor, after following a dangling link there, so that a link
 * that points outside cannot be used to create a file outside. An ancestor
 * that cannot be inspected (EACCES, ENOTDIR) ends the walk the same way: the
 * kernel will not get further either. 0, -ELOOP or -ENAMETOOLONG. */
int sb_path_resolve(const char *path, const char *base, bool follow_last, char out[PATH_MAX]);
/* The same; *complete (when given) tells whether every component that was
 * inspected existed, i.e. no tail was appended lexically. */
int sb_path_resolve_ex(const char *path, const char *base, bool follow_last, char out[PATH_MAX],
		       bool *complete);

/* The decision for one path. raw is the path as given (for the basename
 * rule), abs its lexical absolute form, resolved the result of
 * sb_path_resolve(). *ret_grant is the grant that decided (for messages),
 * *ret_ignore the ignore rule that hid it. */
enum sb_fp_verdict sb_file_policy_decide(const struct sb_file_policy *p, const char *raw,
					 const char *abs, const char *resolved, bool write,
					 const struct sb_fp_grant **ret_grant,
					 const struct sb_fp_ignore **ret_ignore);

/* Whether the entry name of directory dir (resolved) is hidden by an ignore=
 * rule, for filtering listings; *ret_ignore as above. */
bool sb_file_policy_entry_ignored(const struct sb_file_policy *p, const char *dir, const char *name,
				  const struct sb_fp_ignore **ret_ignore);

/* The first ignore= rule that may hide a path below the directory dir
 * (resolved), when its match may depend on dir's own path: an absolute
 * pattern, or a relative one that can span names. Moving dir would give such paths names the
 * rule no longer matches. Errs towards a rule (a pattern whose '*' could
 * take dir's path). NULL when none. */
const struct sb_fp_ignore *sb_file_policy_ignore_below(const struct sb_file_policy *p,
						       const char *dir);

/* When a write to resolved would change a file python-sb takes rules from:
 * that file (resolved itself, or the rule file below the directory resolved
 * names, which a rename or removal of the directory would move). Any entry
 * named .py-sandboxes counts: the rule-file lookup of a later run may find
 * it. NULL otherwise. */
const char *sb_file_policy_rule_file(const struct sb_file_policy *p, const char *resolved);

/* Whether a read-write grant of dir would give away the system: '/', a
 * top-level directory, or anything under /usr, /etc, /bin, /sbin, /lib*,
 * /boot, /dev, /proc, /sys, /run. No message ever suggests one. */
bool sb_file_policy_system_dir(const char *dir);

/* Whether the resolved directory dir lies on the way to a grant (explicit or
 * implicit): a proper ancestor of its path, "/" included. */
bool sb_file_policy_leads_to_grant(const struct sb_file_policy *p, const char *dir);

/* The grant (explicit first, then implicit) that covers a resolved path, NULL
 * when none does. */
const struct sb_fp_grant *sb_file_policy_grant_for(const struct sb_file_policy *p,
						   const char *resolved);
