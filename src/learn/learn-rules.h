/* SPDX-License-Identifier: MIT */
#pragma once

/* Learning mode, the pure half: what a run observed (plain data filled by the
 * launcher's recorder) and the profile lines that would have allowed it
 * (spec §6). No Python, no printing; the only system calls are stat() of the
 * observed paths, to pick directories that exist. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api-registry.h"
#include "eval-learn.h"
#include "profile.h"
#include "str-index.h"

struct sb_learn_path {
	char *path; /* absolute, resolved */
	bool write;
	bool native; /* only the native observer saw it (not the Python guard) */
};

struct sb_learn_net {
	char *host;	   /* a name as the program wrote it, or a numeric address */
	unsigned protocol; /* SB_NET_TCP or SB_NET_UDP */
	uint16_t port;
	unsigned direction; /* SB_NET_IN or SB_NET_OUT */
	bool native;
};

/* A set of strings with constant-time lookup: a learning run may check the
 * same paths hundreds of thousands of times. */
struct sb_learn_strset {
	char **slots; /* open addressing, NULL = empty */
	size_t cap, n;
};
/* 1 when added, 0 when present already, -ENOMEM. */
int sb_learn_strset_add(struct sb_learn_strset *s, const char *key);
bool sb_learn_strset_contains(const struct sb_learn_strset *s, const char *key);
void sb_learn_strset_done(struct sb_learn_strset *s);

struct sb_learn_set {
	struct sb_learn_path *paths;
	size_t n_paths;
	struct sb_str_index path_index; /* over paths */
	struct sb_learn_net *nets;
	size_t n_nets;
	char **imports; /* top-level module names */
	char **envs;	/* variables the program read */
	bool *api;	/* per sb_api_registry entry: called while not allowed */
	bool api_category[SB_API_CATEGORY__N]; /* operations only a category grants */
	/* System calls of native code that no rule allows (the kernel boundary
	 * refuses them): written as comments, for the reviewer. */
	char **refused_syscalls;
	/* Partial mode: results sent back to the parent, and what the first one
	 * data-only would have refused needed (NULL: every result was data). */
	size_t n_results;
	char *result_needs_objects;
	/* What evaluated code used (src/eval/eval-learn.h). */
	struct sb_eval_learned eval;
};

/* Each 0 or -ENOMEM. Repeats merge: a path keeps `write` if any access
 * wrote, and is native only if no guard record names it. */
int sb_learn_set_add_path(struct sb_learn_set *s, const char *path, bool write, bool native);
int sb_learn_set_add_net(struct sb_learn_set *s, const char *host, unsigned protocol, uint16_t port,
			 unsigned direction, bool native);
int sb_learn_set_add_import(struct sb_learn_set *s, const char *name);
int sb_learn_set_add_env(struct sb_learn_set *s, const char *name);
int sb_learn_set_add_api(struct sb_learn_set *s, const struct sb_api_function *fn);
void sb_learn_set_add_api_category(struct sb_learn_set *s, enum sb_api_category c);
int sb_learn_set_add_refused_syscall(struct sb_learn_set *s, const char *name);
/* A result of partial mode: needs_objects is NULL when remote-result-mode=
 * data-only accepts it, else what it needed ("module.Class"). */
int sb_learn_set_add_result(struct sb_learn_set *s, const char *needs_objects);
void sb_learn_set_done(struct sb_learn_set *s);

/* Where the run happened. */
struct sb_learn_context {
	const char *cwd;
	const char *program_dir;     /* the script's directory (or the cwd); NULL: unknown */
	const char *home;	     /* NULL or "/": no "~/" rewriting */
	const char *tmpdir;	     /* TMPDIR, or NULL for /tmp */
	char *const *env;	     /* host environment (KEY=VALUE): the tool variables */
	char *const *skip_dirs;	     /* the interpreter's tree: never emitted */
	char *const *stdlib_modules; /* sys.stdlib_module_names; NULL: every name external */
	const char *learn_file;	     /* the file being written (realpath if it exists) */
	/* The learn file's own rules when it is not the loaded profile
	 * (--learn=<other file>): what it has already is not missing. */
	const struct sb_profile *learn_profile;
};

enum sb_learn_section {
	SB_LEARN_ENVS,
	SB_LEARN_FILES,
	SB_LEARN_SOCKET,
	SB_LEARN_IMPORT,
	SB_LEARN_API,
	SB_LEARN_EVAL,
	SB_LEARN_RESULT,
	SB_LEARN__N,
};

struct sb_learn_rules {
	char **lines[SB_LEARN__N]; /* per marker block: rule lines and their comments */
	size_t n_rules;		   /* rule lines, comments not counted */
	/* Lines of the learn file to comment out: an expose-ro= of a directory
	 * that a learned expose-rw= of the same directory replaces (both would
	 * be a configuration error). */
	unsigned *replaced_lines;
	size_t n_replaced;
	/* For the learning report: a result needed remote-result-mode=objects
	 * (written, or refused by the profile's data-only). NULL when none. */
	char *warning;
	/* For the learning report: grants to check ('/' refused, a directory
	 * above the program's own). NULL when none. */
	char **warnings;
};

/* The lines that are missing from profile for what set observed: expose-*
 * of the parent directory of each file (expose-rw where something was
 * written, nested duplicates removed, paths rewritten to ./, ~/, ${TMPDIR},
 * ${VIRTUAL_ENV}...), net=, python-import= grouped, env=, python-api=, and
 * remote-result-mode= once when no profile sets it (data-only when every
 * result was data, else objects under a comment naming the cause). The
 * interpreter's tree, /proc and /sys are never emitted. 0 or -ENOMEM. */
int sb_learn_rules_build(const struct sb_learn_set *set, const struct sb_learn_context *ctx,
			 const struct sb_profile *profile, struct sb_learn_rules *ret);
void sb_learn_rules_done(struct sb_learn_rules *r);

/* "learning_guard_files"... the name inside "# <...>" and "# </...>". */
const char *sb_learn_section_marker(enum sb_learn_section s);

/* A directory as the profile should spell it: "${VIRTUAL_ENV}/x", "./x", "~/x",
 * "${TMPDIR:-/tmp}/x" or the absolute path. NULL on OOM. */
char *sb_learn_rewrite_path(const char *path, const struct sb_learn_context *ctx);

/* Which group an imported top-level module belongs to. */
enum sb_learn_import_group {
	SB_LEARN_IMPORT_DANGEROUS,
	SB_LEARN_IMPORT_STDLIB,
	SB_LEARN_IMPORT_EXTERNAL,
	SB_LEARN_IMPORT_DEPRECATED,
};
enum sb_learn_import_group sb_learn_import_group(const char *name, char *const *stdlib_modules);
