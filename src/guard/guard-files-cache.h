/* SPDX-License-Identifier: MIT */
#pragma once

/* The files part's resolution cache ("rc"): for an absolute lexical path,
 * what the resolver answered, so that a repeated decision needs no system
 * call and a new one in a known directory needs at most one. It remembers
 * resolutions only, never verdicts except "a read of this entry was allowed"
 * (valid while there are no ignore= rules); every write decision empties it.
 * guard-files-cache.c says why that is safe. All storage is static: nothing
 * is allocated on the hot path. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

/* An entry: valid until the next sb_rc_clear(). */
struct sb_rc_slot;

/* What a lookup learnt about a key, for the next step not to hash and probe
 * it again. */
struct sb_rc_hint {
	uint32_t h;  /* rc_hash() of the key */
	bool valid;  /* h is set */
	bool follow; /* the key's follow */
	bool absent; /* the key was looked up and is not cached */
	/* Set by the decision: a read of the key was allowed and its entry
	 * says so (a path object may be remembered: sb_rc_remember()). */
	bool allowed;
};

enum sb_rc_walk {
	SB_RC_FALLBACK = -1, /* a link or an oddity: ask sb_path_resolve() */
	SB_RC_DONE = 0,	     /* out is the resolution */
	SB_RC_LAST_UNKNOWN,  /* out is the resolution if the last name is no link */
};

/* Life cycle (guard-files.c): off when another thread or process may change
 * the namespace between a decision and its system call (never used then);
 * remember_reads when a read's verdict depends on the resolved path alone
 * (no ignore= rules). */
void sb_rc_init(bool off, bool remember_reads);
void sb_rc_release(void);
/* The directories the implicit grants showed to be canonical, once they are
 * resolved (within the first decision). */
void sb_rc_seed(char *const *dirs, size_t n_dirs);

/* Before every write decision (and a new root or cwd): forget everything. */
void sb_rc_clear(void);
/* A second thread or process: never again. */
void sb_rc_disable(void);
/* os.chdir, os.fchdir: the cached current directory is dropped. */
void sb_rc_cwd_changed(void);
/* The current directory, from the cache when it is valid. */
bool sb_rc_cwd(char out[PATH_MAX]);

/* The hot path: whether a read of raw (n = strlen(raw), follow) was allowed
 * before with nothing changed since; hint receives what the lookup found. */
bool sb_rc_read_allowed(const char *raw, size_t n, bool follow, struct sb_rc_hint *hint);
/* The same for a path object: the one remembered last (sb_rc_remember()),
 * or its text when it is an exact str or bytes. Call sb_files_ready()
 * first. */
bool sb_rc_obj_read_allowed(PyObject *o, bool follow, struct sb_rc_hint *hint);
/* Remembers o after a read of it was allowed from, or into, the cache. */
void sb_rc_remember(PyObject *o, bool follow);

/* sb_path_resolve(raw, base, follow) through the cache, abs being
 * sb_path_absolute(raw, base): enum sb_rc_walk. *ret_slot is abs's entry
 * when it is cached. With last_unknown, the last name's link status is left
 * to the caller (SB_RC_LAST_UNKNOWN). */
int sb_rc_resolve(const char *raw, const char *abs, bool follow, bool last_unknown,
		  char out[PATH_MAX], struct sb_rc_slot **ret_slot, struct sb_rc_hint *hint);
/* The policy allowed a read of the entry's path: remembered (unless reads are
 * not, see sb_rc_init()), and hint->allowed set, so that the caller may
 * remember its path object (sb_rc_remember()). slot and hint may be NULL. */
void sb_rc_allow_read(struct sb_rc_slot *slot, struct sb_rc_hint *hint);
/* The entry's last name did not exist (nor anything below it). */
bool sb_rc_missing(const struct sb_rc_slot *slot);
/* Enters abs -> resolved (follow) that the caller's own lstat() showed to be
 * no link (missing: ENOENT); NULL when not cached (/proc, a full table). hint
 * as sb_rc_resolve() left it. */
struct sb_rc_slot *sb_rc_put_checked(const char *abs, const char *resolved, bool missing,
				     const struct sb_rc_hint *hint);

/* Whether the kernel follows the last component of raw (len bytes) whatever
 * the call: a trailing '/' or "." names what a link there points to, even for
 * lstat or unlink ("link/." is the target directory). */
static inline bool sb_path_follows_last(const char *raw, size_t len)
{
	return raw[len - 1] == '/' || (raw[len - 1] == '.' && (len == 1 || raw[len - 2] == '/'));
}
