/* SPDX-License-Identifier: MIT */
#pragma once

/* What the wrapper providers (bwrap, firejail) share: finding the wrapper's
 * binary, their <name>.<key> parameters, building a command line, and the
 * paths ignore= hides inside the exposed trees. */

#include <stdbool.h>
#include <stddef.h>

#include "boundary.h"
#include "profile.h"
#include "util.h"

/* Looks name up in path_env (a PATH value; NULL or empty: the usual system
 * directories). 0 with *ret (malloc'ed), or -ENOENT with *reterr naming the
 * Debian package that provides it. The binary runs outside the sandbox: one
 * found inside an expose-rw tree of p (NULL: not checked), or that another
 * user than root and the caller could have changed (it or a directory above
 * it), is -EPERM with *reterr saying so. */
int sb_wrap_find_binary(const char *name, const char *package, const char *path_env,
			const struct sb_profile *p, char **ret, char **reterr);

/* The probe of a wrapper: its binary on the caller's PATH. */
int sb_wrap_probe_binary(const char *name, const char *package, char **reterr);

/* Appends each string up to NULL; 0 or -ENOMEM. */
int sb_argv_add(char ***argv, ...) __attribute__((sentinel));

/* The profile's first net= ALLOW rule (the one a refusal names), or NULL. */
const struct sb_net_rule *sb_wrap_first_allow_rule(const struct sb_profile *p);

/* --explain's lines of a wrapper's grants ("rw"/"ro", the path, why) and
 * notes, after its heading line. */
int sb_wrap_explain_grants(const struct sb_boundary *b, const char *heading, struct sb_buf *out);

/* What to change when a wrapper's command line would hold more grants than
 * the tool takes: the modules beside the script when they are most of them,
 * else the expose-* and ignore= rules. */
const char *sb_wrap_too_many_grants_hint(const struct sb_boundary *b);

/* The value of the last <provider>.<key> line, or NULL. */
const char *sb_wrap_param(const struct sb_profile *p, enum sb_os_sandbox provider, const char *key);
/* A boolean parameter's value (the profile check accepted it). */
bool sb_wrap_param_true(const char *value);

/* The paths ignore= hides that exist now, inside the exposed trees (found by
 * walking the trees when a pattern is relative, by glob(3) when absolute) and
 * inside the provider's other grants (absolute patterns only). The guard's
 * own decision (sb_file_policy_entry_ignored()) says what is hidden; a hidden
 * directory is not walked into. */
struct sb_wrap_ignored {
	char *path;
	bool dir;	   /* a directory (a placeholder directory masks it) */
	bool in_writable;  /* inside an expose-rw tree */
	const char *under; /* the exposed root it is in, NULL for another grant */
};

struct sb_wrap_ignored_set {
	struct sb_wrap_ignored *items;
	size_t n;
};

/* Past these, a provider would need too many mounts, or start-up would walk
 * too long: the run stops (fail closed) and says why. */
#define SB_WRAP_MAX_IGNORED	   4096
#define SB_WRAP_MAX_WALKED_ENTRIES 200000

/* 0, -E2BIG with *reterr past the limits, -ENOMEM. */
int sb_wrap_collect_ignored(const struct sb_boundary *b, const struct sb_profile *p,
			    struct sb_wrap_ignored_set *ret, char **reterr);
void sb_wrap_ignored_done(struct sb_wrap_ignored_set *s);
