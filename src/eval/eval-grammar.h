/* SPDX-License-Identifier: MIT */
#pragma once

/* The vocabulary of the eval-* rules (spec section 5), as plain data: the
 * ast node classes and their eval-syntax groups, the minimal core, and the
 * names the eval guard treats apart. No Python: the profile parser
 * (src/profile/eval-rules.c) and learning (eval-learn.c) read it as well as
 * the checker. */

#include <stdbool.h>
#include <stddef.h>

enum {
	/* Always allowed: the minimal core of the spec (parse roots, literals,
	 * names, containers, Expr, Pass). */
	SB_EVAL_NODE_CORE = 1 << 0,
	/* Operators, comparison operators, boolean operators, expression
	 * contexts: they carry no capability of their own (`arith` names BinOp,
	 * not Add). */
	SB_EVAL_NODE_MARKER = 1 << 1,
	/* Structurally available, each gated by its own key: Attribute by
	 * eval-attribute/eval-magic, Call by eval-call, keyword by its Call. */
	SB_EVAL_NODE_GATED = 1 << 2,
};

struct sb_eval_node_info {
	const char *name;  /* the ast class name */
	const char *group; /* its eval-syntax group, NULL for none */
	unsigned flags;
};

/* Every concrete node class of the ast module in CPython 3.11 to 3.14; a node
 * a later release adds is not in the table, so it is denied by default. */
extern const struct sb_eval_node_info sb_eval_nodes[];
extern const size_t sb_eval_n_nodes;

/* The eval-syntax groups, in the spec's order. */
extern const char *const sb_eval_syntax_groups[];
extern const size_t sb_eval_n_syntax_groups;

/* Index in sb_eval_nodes, or -1. */
int sb_eval_node_find(const char *name);
/* Whether name is an eval-syntax group. */
bool sb_eval_is_syntax_group(const char *name);
/* Whether node i is allowed whatever the rules (core, marker or gated). */
static inline bool sb_eval_node_implicit(size_t i)
{
	return sb_eval_nodes[i].flags != 0;
}

/* eval-attribute groups; their members come from the running interpreter. */
extern const char *const sb_eval_attribute_groups[];
extern const size_t sb_eval_n_attribute_groups;
bool sb_eval_is_attribute_group(const char *name);

/* str.format and str.format_map resolve attributes in C from the template:
 * only an exact eval-attribute grant opens them, and the template is then
 * checked field by field at run time. */
bool sb_eval_is_blind_attribute(const char *name);

/* Capability builtins: each is a guarded shim or reaches its own guard, but
 * granting one still widens what the evaluated code can reach. */
bool sb_eval_is_sensitive_call(const char *name);

/* Attributes the eval guard refuses whatever the rules: the frame-capture
 * attributes of the spec, and the two that hand over an evaluation's own
 * namespace (its helpers enforce the budgets). */
bool sb_eval_is_frame_attribute(const char *name);
bool sb_eval_is_namespace_attribute(const char *name);

/* The prefix of the eval guard's own helpers: a source that mentions it is
 * refused, a rule that names it grants nothing. */
#define SB_EVAL_RESERVED_PREFIX "__sb_"

/* "__x__": a name eval-magic governs. */
bool sb_eval_is_dunder(const char *name);

/* What granting eval-import of this top-level module widens, for the
 * report's warning; NULL when nothing is worth saying. */
const char *sb_eval_import_warning(const char *module);
