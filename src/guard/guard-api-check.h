/* SPDX-License-Identifier: MIT */
#pragma once

/* The API guard's decisions (guard-api-check.c): the python-api= rules
 * flattened, before the interpreter exists, into one verdict per registry
 * function (the hot path is an array read) and one per category for what
 * is no registry function; a refusal is offered to the guard's observer
 * (guard-observer.h) before it is raised. The wrappers (guard-api-wrap.c)
 * and the event handlers (guard-api.c) decide through these. */

#include <stdbool.h>

#include "api-registry.h"
#include "profile.h"

/* Life cycle (guard-api.c): the verdicts (0 or -ENOMEM); freed after the
 * run. */
int sb_api_check_prepare(const struct sb_profile *profile);
void sb_api_check_release(void);

/* Whether the rules allow registry function fn (SB_API_FN_*). */
bool sb_api_allowed(int fn);
/* Whether a category (or `*`) rule grants what is no registry function. */
bool sb_api_category_allowed(enum sb_api_category category);
/* Whether some unpickling entry point is allowed (which grants the lookups
 * of pickle.find_class). */
bool sb_api_any_deserialization(void);

/* 0 when fn is allowed; else its refusal: 0 when the observer recorded it
 * and lets it go ahead, -1 with RuleApiPermissionError set. */
int sb_api_check(int fn);
/* The refusal of an operation outside the registry (marshal.loads,
 * code-object construction, frame attributes) that only a category rule can
 * grant: 0 when the observer lets it go ahead, else -1 with
 * RuleApiPermissionError set. */
int sb_api_deny_outside_registry(const char *what, enum sb_api_category category);

/* Whether the caller (the innermost frame) is the interpreter's library or
 * site-packages, whose frame access is the runtime's own business. */
bool sb_api_caller_is_library(void);
/* Whether the caller is code under a site-packages directory of sys.path
 * (sb_guard_is_site_file()): third-party libraries generate code (attrs,
 * pydantic) and read frames as the standard library does. */
bool sb_api_caller_in_site_packages(void);
