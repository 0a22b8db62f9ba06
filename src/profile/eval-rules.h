/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"

/* eval-* keys (spec section 5). Parsed and validated now; enforced by the
 * dynamic-code layer. */
enum sb_eval_list_key {
	SB_EVAL_SYNTAX,
	SB_EVAL_CALL,
	SB_EVAL_ATTRIBUTE,
	SB_EVAL_IMPORT,
	SB_EVAL_MAGIC,
	SB_EVAL_LIST__N,
};

enum sb_eval_scalar_key {
	SB_EVAL_NAMESPACE,
	SB_EVAL_TIMEOUT, /* milliseconds */
	SB_EVAL_MAX_ITERATIONS,
	SB_EVAL_MAX_CALL_DEPTH,
	SB_EVAL_MAX_DEPTH,
	SB_EVAL_MAX_NODES,
	SB_EVAL_MAX_ALLOC, /* bytes */
	SB_EVAL_MAX_LEAKED_THREADS,
	SB_EVAL_SCALAR__N,
};

enum sb_eval_namespace {
	SB_EVAL_NAMESPACE_ADAPTIVE,
	SB_EVAL_NAMESPACE_CLOSED,
	SB_EVAL_NAMESPACE_CALLER,
};

struct sb_eval_item {
	char *value; /* a group, an ast class name, a name or a '*' pattern */
	bool deny;
	struct sb_origin origin;
};

struct sb_eval_profile {
	char *name; /* NULL for the default profile, "llm" for eval-syntax:llm=... */
	struct sb_eval_item *items[SB_EVAL_LIST__N];
	size_t n_items[SB_EVAL_LIST__N];
	unsigned long long scalars[SB_EVAL_SCALAR__N]; /* defaults filled in */
	bool scalar_set[SB_EVAL_SCALAR__N];
	struct sb_origin scalar_origin[SB_EVAL_SCALAR__N];
};

struct sb_eval_config {
	struct sb_eval_profile *profiles; /* profiles[0], when present, may be the default */
	size_t n_profiles;
	bool any_key; /* at least one eval-* line: eval/exec/compile become guarded */
};

/* Handles one line whose key starts with "eval-" (key may carry ":profile").
 * Errors and warnings go to diags with the given origin. Returns 0 (also when the
 * line had an error, which is then in diags) or -ENOMEM. */
int sb_eval_config_add(struct sb_eval_config *cfg, const char *key, const char *value,
		       struct sb_origin origin, struct sb_diags *diags);
void sb_eval_config_done(struct sb_eval_config *cfg);
/* The profile of that name, NULL for the default; NULL if absent. */
const struct sb_eval_profile *sb_eval_config_find(const struct sb_eval_config *cfg,
						  const char *name);
const char *sb_eval_list_key_name(enum sb_eval_list_key k);
const char *sb_eval_scalar_key_name(enum sb_eval_scalar_key k);
