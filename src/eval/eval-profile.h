/* SPDX-License-Identifier: MIT */
#pragma once

/* The eval-* profiles compiled for enforcement: the parsed lines
 * (src/profile/eval-rules.h) become one struct per profile, C data made
 * before the interpreter exists, then Python sets made on first use (the
 * attribute groups are computed from the running interpreter). Held in C
 * statics only: no Python object refers to them. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "eval-rules.h"

/* One list key resolved: exact names as Python sets (str hashes are cached,
 * so a lookup costs one probe) and the '*' patterns. DENY wins. */
struct sb_eval_names {
	PyObject *allow, *deny; /* sets of str */
	char **allow_patterns, **deny_patterns;
};

enum sb_eval_mode {
	SB_EVAL_MODE_EVAL,
	SB_EVAL_MODE_EXEC,
	SB_EVAL_MODE_SINGLE,
	SB_EVAL_MODE__N,
};

struct sb_eval_rules {
	char *name;	  /* NULL for the default profile */
	char *tag;	  /* "<eval>" or "<eval:llm>": file name and report header */
	char *key_suffix; /* "" or ":llm", for the rule lines messages suggest */
	bool *syntax;	  /* per sb_eval_nodes entry: allowed */
	enum sb_eval_namespace ns;
	unsigned long long timeout_ms, max_iterations, max_call_depth, max_depth, max_nodes,
	    max_alloc, max_leaked_threads;
	/* The lines as parsed, for what needs the interpreter. */
	char **items[SB_EVAL_LIST__N];
	bool *item_deny[SB_EVAL_LIST__N];

	/* Made by sb_eval_rules_ready(), GIL held. */
	bool ready;
	struct sb_eval_names call, attribute, import, magic;
	bool format_granted, format_map_granted; /* exact eval-attribute grants */
	PyObject *handle;			 /* what the helpers and shims are bound to */
	PyObject *helpers;			 /* name -> helper function (eval-helpers.c) */
	PyObject *shims;			 /* name -> guarded builtin (eval-shims.c) */
	PyObject *builtins;		     /* __builtins__ of a namespace built from eval-call */
	PyObject *verdicts[SB_EVAL_MODE__N]; /* source -> verdict (eval-code.c) */
};

/* Compiles the profiles; no Python. 0 or -ENOMEM. The default profile always
 * exists (with the defaults when the file has no line for it). */
int sb_eval_rules_prepare(const struct sb_eval_config *cfg);
void sb_eval_rules_release(void);

/* The profile of that name (NULL: the default), or NULL. */
struct sb_eval_rules *sb_eval_rules_find(const char *name);
size_t sb_eval_rules_count(void);
struct sb_eval_rules *sb_eval_rules_at(size_t i);

/* Makes the Python half; 0, or -1 with an exception. */
int sb_eval_rules_ready(struct sb_eval_rules *r);

/* The rules a helper or shim was bound to (its m_self). */
struct sb_eval_rules *sb_eval_rules_of(PyObject *handle);

/* Whether the key allows name (a str): DENY wins, then an exact or pattern
 * allow. */
bool sb_eval_names_allows(const struct sb_eval_names *n, PyObject *name);
/* Whether the key denies name explicitly. */
bool sb_eval_names_denies(const struct sb_eval_names *n, PyObject *name);

/* The rule line that would allow value ("eval-call:llm=len"), malloc'ed. */
char *sb_eval_rule_line(const struct sb_eval_rules *r, enum sb_eval_list_key key,
			const char *value);

/* "eval-timeout:llm=2s": a budget as the profile spells it, for
 * EvalInterrupted's reason. */
void sb_eval_budget_text(const struct sb_eval_rules *r, enum sb_eval_scalar_key key, char *buf,
			 size_t size);
