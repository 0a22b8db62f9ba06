/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"

/* The sensitive-API registry of python-api= (spec section 4). */
enum sb_api_category {
	SB_API_PROCESS_EXEC,
	SB_API_PROCESS_CONTROL,
	SB_API_PRIVILEGES,
	SB_API_THREADS,
	SB_API_NATIVE,
	SB_API_INTROSPECTION,
	SB_API_DYNAMIC_CODE,
	SB_API_DESERIALIZATION,
	SB_API_CATEGORY__N,
};

struct sb_api_function {
	const char *qualname; /* "os.system", "posix.system", "subprocess.Popen" ... */
	enum sb_api_category category;
};

/* The index of each function in sb_api_registry: SB_API_FN_os_system ... (the
 * qualname with its dots as underscores), so that code naming a registry
 * function gets it at compile time, with no lookup at start and a typo a
 * compile error. */
enum sb_api_fn {
#define SB_API(id, qualname, category) SB_API_FN_##id,
#include "api-registry-list.h"
#undef SB_API
	SB_API_FN__N,
};

extern const struct sb_api_function sb_api_registry[SB_API_FN__N];
extern const size_t sb_api_registry_size;
/* sb_api_registry's indices in qualname order (strcmp), generated at build
 * time by src/tools/api-index-gen.c: sb_api_lookup() needs no index built at
 * start. */
extern const unsigned short sb_api_by_name[SB_API_FN__N];

/* "process-exec" ... ; NULL for an out-of-range value. */
const char *sb_api_category_name(enum sb_api_category c);
/* -EINVAL when the name is not a category. */
int sb_api_category_from_name(const char *name);
/* NULL when the function is not in the registry. */
const struct sb_api_function *sb_api_lookup(const char *qualname);

enum sb_api_target_kind {
	SB_API_TARGET_ALL,	/* "*" */
	SB_API_TARGET_CATEGORY, /* a category name */
	SB_API_TARGET_FUNCTION, /* a qualified function name of the registry */
};

/* One target of one python-api= line: a line "ALLOW:a, b" gives two rules. */
struct sb_api_rule {
	bool deny;
	enum sb_api_target_kind kind;
	enum sb_api_category category;		/* for CATEGORY */
	const struct sb_api_function *function; /* for FUNCTION */
	struct sb_origin origin;
};

/* Parses the value of a python-api= line into rules appended to the rules array (count in n_rules).
 * 0, or -EINVAL with *reterr set (malloc'ed message, e.g. unknown category with
 * the closest name), or -ENOMEM. Nothing is appended on error. */
int sb_api_rule_parse(const char *value, struct sb_origin origin, struct sb_api_rule **rules,
		      size_t *n_rules, char **reterr);

/* The decision for one registry function after flattening all rules: the most
 * specific rule wins (function > category > "*"); at equal specificity DENY wins;
 * no matching rule means denied. *ret_rule (may be NULL) gets the deciding rule
 * or NULL when the implicit default denied it. */
bool sb_api_is_allowed(const struct sb_api_rule *rules, size_t n_rules,
		       const struct sb_api_function *fn, const struct sb_api_rule **ret_rule);
