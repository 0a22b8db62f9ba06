/* SPDX-License-Identifier: MIT */
#pragma once

/* The static check (spec section 5): one walk over the parsed tree collects
 * every way the source leaves its profile's sub-language -- nodes, calls,
 * attributes, dunder names, imports, the node count and the nesting depth --
 * each with its position and the rule that would allow it. The tree comes
 * from the layer's own parse (compile(..., PyCF_ONLY_AST)): nothing else
 * holds it. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "eval-profile.h"

struct sb_eval_violation {
	int line, col, end_line, end_col; /* col 0-based; end_* -1 when unknown */
	char *message;			  /* "'While' is not allowed" */
	char *rule;			  /* the line to add, NULL when no rule allows it */
	char *narrower;			  /* a narrower alternative (the node for a group) */
	char *warning;			  /* what granting it widens, or NULL */
	char *hint;			  /* when no rule allows it: why */
	int learn_kind;			  /* enum sb_eval_learn_kind, or -1 */
	bool reserved;			  /* a mention of the guard's reserved prefix */
	char *learn_name;		  /* what learning records */
};

struct sb_eval_check {
	struct sb_eval_violation *violations;
	size_t n_violations;
	size_t nodes, depth;
	unsigned flags;	   /* SB_EVAL_CODE_* (eval-code.h) */
	char **also_nodes; /* denied nodes reported with their construct: for learning */
	char **free_names; /* read, not bound, not builtins (when asked for) */
};

/* Checks tree (an ast.mod) against r; source is the text, scanned for the
 * guard's reserved prefix; want_free_names fills ret->free_names. 0
 * (violations in *ret, sorted by position), or -1 with an exception. */
int sb_eval_ast_check(PyObject *tree, const char *source, struct sb_eval_rules *r,
		      bool want_free_names, struct sb_eval_check *ret);
void sb_eval_check_done(struct sb_eval_check *c);

/* The ast class called name (borrowed), NULL with an exception: the rewrite
 * makes its nodes with them. */
PyObject *sb_eval_ast_class(const char *name);
/* ast.AST (borrowed), NULL with an exception. */
PyObject *sb_eval_ast_base(void);
/* A field of an AST node (new reference), or NULL without an exception:
 * faster than the generic attribute look-up (name: a string literal). */
PyObject *sb_eval_ast_field(PyObject *node, const char *name);
PyObject *sb_eval_ast_field_obj(PyObject *node, PyObject *name);
/* The _fields of a known node's class (borrowed), NULL for others. */
PyObject *sb_eval_ast_fields(PyObject *node);
