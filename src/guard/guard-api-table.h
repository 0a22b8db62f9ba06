/* SPDX-License-Identifier: MIT */
#pragma once

/* What the API guard guards where (guard-api-table.c): the modules that hold
 * wrapped functions (guard-api-modules.h) and the wrapped functions
 * (guard-api-wraps.h), each a list with one line per item, expanded here
 * into enums and tables. Pure data, no Python. */

#include <stdbool.h>
#include <stddef.h>

#include "api-registry.h"

enum sb_api_module {
#define SB_API_MODULE(id, name, made_by_imp) SB_API_M_##id,
#include "guard-api-modules.h"
#undef SB_API_MODULE
	SB_API_M__N,
};

/* Written at build time by src/tools/api-modules-gen.c, which checks the
 * order: the names in strcmp order, and whether only _imp makes each. */
extern const char *const sb_api_module_names[SB_API_M__N];
extern const bool sb_api_module_made_by_imp[SB_API_M__N];

/* The module id of a module's name, or -1 when it holds nothing guarded. */
int sb_api_module_id(const char *name);

/* Audit-event families a wrapper can claim. */
enum sb_api_family {
	SB_API_EV_NONE,
	SB_API_EV_SYSTEM,
	SB_API_EV_EXEC,
	SB_API_EV_POSIX_SPAWN,
	SB_API_EV_FORK,
	SB_API_EV_FORKPTY,
	SB_API_EV_KILL,
	SB_API_EV_KILLPG,
	SB_API_EV_SETRLIMIT,
	SB_API_EV_PRLIMIT,
	SB_API_EV_STRING_AT,
	SB_API_EV_WSTRING_AT,
	SB_API_EV_DYNAMIC,
	SB_API_EV__N,
};

enum {
	/* Not judged when the caller is the interpreter's library or
	 * site-packages: code generation (dataclasses, namedtuple, typing) and
	 * frame access (logging, warnings) are the runtime's own business. */
	SB_API_F_EXEMPT_LIBRARY = 1 << 0,
	/* Installed on a class (guarded through an instancemethod, so that
	 * instances bind it and isinstance/subclassing are untouched). */
	SB_API_F_METHOD = 1 << 1,
	/* Not a registry function: a hook into the import system, so that a
	 * module created behind builtins.__import__'s back is wrapped before
	 * anyone can call its functions. */
	SB_API_F_IMP_HOOK = 1 << 2,
	SB_API_F_AFTER_IMPORT = 1 << 3,
	/* Either name grants it (one function under two names); a refusal
	 * names the alias, the canonical one. */
	SB_API_F_ANY_OF = 1 << 4,
};

#define SB_API_NO_FN (-1)

/* One wrapped function. fn and alias are registry indices (SB_API_FN_*,
 * api-registry.h): known at compile time. */
struct sb_api_wrap {
	enum sb_api_module module;
	const char *cls; /* NULL for a module-level function */
	const char *attr;
	short fn;    /* the registry function; SB_API_NO_FN for the import hooks */
	short alias; /* another registry name for the same thing, or SB_API_NO_FN */
	enum sb_api_family family;
	unsigned flags;
};

/* How many lines guard-api-wraps.h expands to: a constant, for the
 * wrappers' own tables. */
enum {
	SB_API_N_WRAPS = 0
#define SB_WRAP_FN(m, a, fam)			 +1
#define SB_WRAP_FNX(m, a, fam)			 +1
#define SB_WRAP_OS(a, fam)			 +2
#define SB_WRAP_METHOD(m, c, a, fn)		 +1
#define SB_WRAP_METHOD_ALIAS(m, c, a, fn, alias) +1
#define SB_WRAP_ANY_OF(m, a, alias)		 +1
#define SB_WRAP_HOOK(m, a, flag)		 +1
#include "guard-api-wraps.h"
#undef SB_WRAP_FN
#undef SB_WRAP_FNX
#undef SB_WRAP_OS
#undef SB_WRAP_METHOD
#undef SB_WRAP_METHOD_ALIAS
#undef SB_WRAP_ANY_OF
#undef SB_WRAP_HOOK
};

extern const struct sb_api_wrap sb_api_wraps[SB_API_N_WRAPS];
