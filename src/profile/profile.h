/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "api-registry.h"
#include "diag.h"
#include "eval-rules.h"
#include "identity.h"
#include "net-rule.h"
#include "profile-limits.h"

/* The profile language (.py-sandboxes), parsed into plain data. Loading reads
 * files and nothing else; sb_profile_check() then looks at the file system
 * (expose-* must exist, learn= parent directory) and cross-checks the keys. */

/* os-sandbox=: auto, or one of the providers of os-sandbox-list.h. */
enum sb_os_sandbox {
	SB_OS_UNSET, /* no os-sandbox line: behaves as auto */
	SB_OS_AUTO,
#define SB_OS_SANDBOX(id, name) SB_OS_##id,
#include "os-sandbox-list.h"
#undef SB_OS_SANDBOX
	SB_OS__N,
};

enum sb_result_mode {
	SB_RESULT_DATA_ONLY,
	SB_RESULT_OBJECTS,
};

enum sb_learn_mode {
	SB_LEARN_OFF,
	SB_LEARN_FILE, /* learn=<file> or --learn[=file] */
};

/* How a profile is run: its rules enforced, or learned (spec section 6: what
 * they would refuse is recorded and allowed). The launcher decides it
 * (sb_learn_wanted()) and hands it to each stage that treats learning its own
 * way (provider selection, the kernel boundary, the environment); the profile
 * itself is never rewritten. */
enum sb_rules_mode {
	SB_MODE_ENFORCE,
	SB_MODE_LEARN,
};

enum sb_env_kind {
	SB_ENV_LITERAL, /* env=NAME=text (expanded once) */
	SB_ENV_FORWARD, /* env=NAME=${HOST} or ${HOST:-default} */
};

struct sb_env_rule {
	char *name; /* exact name, or a single-'*' pattern */
	bool is_pattern;
	enum sb_env_kind kind;
	char *value;	 /* LITERAL: the expanded text */
	char *host_name; /* FORWARD: host variable (a pattern for a pattern rule) */
	char *fallback;	 /* FORWARD: expanded default of ${X:-d}, NULL if none */
	char *written;	 /* the value as written (--explain: no expanded secret) */
	struct sb_origin origin;
};

struct sb_name_rule {
	char *name; /* unenv= name/pattern, ignore= glob, python-import= module */
	struct sb_origin origin;
};

struct sb_expose_rule {
	char *path;	/* as written after ${} and ~ expansion */
	char *resolved; /* realpath, filled by sb_profile_check() */
	bool writable;
	struct sb_origin origin;
};

struct sb_provider_param {
	enum sb_os_sandbox os_sandbox; /* SB_OS_BWRAP */
	char *provider;		       /* "bwrap" */
	char *key;		       /* "share-net" */
	char *value;
	struct sb_origin origin;
};

/* Scalar keys that may appear once; indices into sb_profile.scalar_origin.
 * The lists: scalar-key-list.h, then limit-key-list.h. */
enum sb_scalar_key {
#define SB_SCALAR_KEY(id, key, parse) SB_KEY_##id,
#include "scalar-key-list.h"
#undef SB_SCALAR_KEY
#define SB_LIMIT_KEY(id, key, unit, field, rlimit) SB_KEY_##id,
#include "limit-key-list.h"
#undef SB_LIMIT_KEY
	SB_SCALAR__N,
};

struct sb_profile {
	char **files; /* every rule file read, in order; origins point here */
	/* Rule files that do not exist but would be read once created: missing
	 * includes, a .py-sandboxes the lookup tries before the one it chose.
	 * The kernel boundary and the guard keep both kinds out of the
	 * program's reach. */
	char **missing_files;
	char *root_file;   /* the file named by the caller, NULL when none */
	bool root_missing; /* the root file does not exist (learning trigger) */

	enum sb_os_sandbox os_sandbox;
	bool py_sandbox;
	enum sb_learn_mode learn;
	char *learn_file; /* absolute or relative to cwd, already resolved */
	bool learn_requested_by_cli;
	bool learn_locked; /* learn=false in a file: learning and command-line rules refused */
	int port;	   /* -1 when unset */
	enum sb_result_mode result_mode;
	bool result_guard;
	struct sb_limits limits; /* limit-*, timeout: our extension */
	struct sb_identity user; /* user=UID[:GID]: our extension */
	bool scalar_set[SB_SCALAR__N];
	struct sb_origin scalar_origin[SB_SCALAR__N];

	struct sb_env_rule *envs;
	size_t n_envs;
	struct sb_name_rule *unenvs;
	size_t n_unenvs;
	struct sb_expose_rule *exposes;
	size_t n_exposes;
	struct sb_name_rule *ignores;
	size_t n_ignores;
	struct sb_net_rule *nets;
	size_t n_nets;
	bool import_all; /* python-import=* */
	struct sb_origin import_all_origin;
	struct sb_name_rule *imports;
	size_t n_imports;
	struct sb_api_rule *apis;
	size_t n_apis;
	struct sb_eval_config eval;
	struct sb_provider_param *params;
	size_t n_params;
	/* Origins of the rules that came from the command line, for learn=false. */
	bool has_cli_rules;
	/* Which file (and line) asked for learning, for the learn=false message. */
	struct sb_origin learn_origin;
	struct sb_origin learn_lock_origin;
};

/* Looks up a host variable; NULL when unset. */
typedef const char *(*sb_getenv_fn)(const char *name, void *userdata);

struct sb_load_options {
	const char *path;	/* root rule file; NULL or missing: built-in defaults */
	char *const *cli_rules; /* "key=value" from the command line, highest priority */
	sb_getenv_fn getenv;	/* host environment for ${} */
	void *getenv_userdata;
	const char *cwd;	    /* for "./" includes and relative paths */
	const char *home;	    /* for "~" */
	const char *learn_default;  /* where a bare --learn writes; NULL: ./.py-sandboxes */
	size_t max_file_size;	    /* 0: 1 MiB */
	unsigned max_include_depth; /* 0: 32 */
};

/* Loads the root file, its includes and the command-line rules.
 * Returns 0 and *ret; or -EINVAL when diags holds at least one error (*ret is
 * still set so that callers can show partial results); or another -errno for
 * a failure unrelated to the profile text (OOM). */
int sb_profile_load(const struct sb_load_options *opts, struct sb_profile **ret,
		    struct sb_diags *diags);

/* Second step: checks that need the file system or several keys at once. Fills
 * sb_expose_rule.resolved. Returns 0, -EINVAL when it added errors, -ENOMEM. */
int sb_profile_check(struct sb_profile *p, const struct sb_load_options *opts,
		     struct sb_diags *diags);

struct sb_profile *sb_profile_free(struct sb_profile *p);
static inline void sb_profile_freep(struct sb_profile **p)
{
	sb_profile_free(*p);
}

const char *sb_os_sandbox_name(enum sb_os_sandbox o);
/* -EINVAL when unknown. */
int sb_os_sandbox_from_name(const char *name);
const char *sb_scalar_key_name(enum sb_scalar_key k);
/* Whether s is a module name python-import= takes: dotted identifiers (ASCII
 * letters, digits, '_', and any non-ASCII byte), no '*'. Learning writes an
 * import only when this accepts it. */
bool sb_profile_module_name_valid(const char *s);
/* The same rule for one name (dotted false: an identifier, as eval-* lists
 * take) or a dotted one. */
bool sb_profile_name_valid(const char *s, bool dotted);
