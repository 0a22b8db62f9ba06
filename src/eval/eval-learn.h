/* SPDX-License-Identifier: MIT */
#pragma once

/* Learning of the eval-* rules (spec section 6), the pure half: what the eval
 * layer saw evaluated code use, and the rule lines that would allow it. No
 * Python. Groups replace their nodes only when every node of the group was
 * seen, and a line never holds a pattern: learning does not generalise. */

#include <stdbool.h>
#include <stddef.h>

#include "eval-rules.h"

enum sb_eval_learn_kind {
	SB_EVAL_LEARN_NODE,	 /* an ast class name (eval-syntax) */
	SB_EVAL_LEARN_CALL,	 /* a called name (eval-call) */
	SB_EVAL_LEARN_ATTRIBUTE, /* an ordinary attribute (eval-attribute) */
	SB_EVAL_LEARN_IMPORT,	 /* a module name (eval-import) */
	SB_EVAL_LEARN_MAGIC,	 /* a dunder name (eval-magic) */
	/* "file:line" of an eval() whose namespace came from the caller
	 * (eval-namespace=adaptive with a globals dict): a comment. */
	SB_EVAL_LEARN_CONTEXT,
	/* "file:line:a,b": a bare eval() that read its caller's variables a
	 * and b, which a guarded one does not see: a comment. */
	SB_EVAL_LEARN_FREE,
	SB_EVAL_LEARN__N,
};

struct sb_eval_learned {
	char **records; /* "<kind> <profile> <name>", in arrival order, unique */
};

/* profile: NULL or "" for the default profile. 0 or -ENOMEM; -EINVAL for a
 * name with a space or a newline, which no rule could hold. */
int sb_eval_learned_add(struct sb_eval_learned *l, enum sb_eval_learn_kind kind,
			const char *profile, const char *name);
void sb_eval_learned_done(struct sb_eval_learned *l);

/* The lines missing from the eval rules of configs (the loaded profile and,
 * for --learn=<other file>, that file's; NULL entries skipped): one line per
 * key and profile ("eval-syntax:llm=arith, Lambda"), comments for the
 * caller-supplied namespaces. A name a profile denies explicitly is not
 * emitted: DENY is a decision, not a missing rule. *ret_lines is a NULL-
 * terminated vector (NULL when there is nothing), *ret_rules how many of its
 * lines are rules. 0 or -ENOMEM. */
int sb_eval_learned_lines(const struct sb_eval_learned *l,
			  const struct sb_eval_config *const *configs, size_t n_configs,
			  char ***ret_lines, size_t *ret_rules);
