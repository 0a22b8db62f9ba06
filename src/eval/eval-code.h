/* SPDX-License-Identifier: MIT */
#pragma once

/* The code objects the guarded compile made (spec: exec/eval of a code object
 * accept only these), with the profile that checked them; and the verdicts,
 * cached by source, so that a repeated expression is checked once. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "eval-profile.h"

enum {
	/* The code calls something (a call, a decorator, a class, a with, an
	 * import): it runs on an evaluation thread, whose caller survives a
	 * call that blocks. Code without calls runs on the caller's thread. */
	SB_EVAL_CODE_CALLS = 1 << 0,
};

struct sb_eval_code_info {
	struct sb_eval_rules *rules;
	unsigned flags;
};

/* Records code and every code object nested in it (functions, lambdas,
 * comprehensions) as made by the guarded compile for rules. Each record goes
 * when its code object is freed. 0, or -1 with an exception. */
int sb_eval_code_register(PyObject *code, struct sb_eval_rules *r, unsigned flags);
/* The record of a code object, or NULL. */
const struct sb_eval_code_info *sb_eval_code_find(PyObject *code);
void sb_eval_code_release(void);

/* A cached outcome of the check of one source. */
struct sb_eval_verdict {
	PyObject_HEAD PyObject *code; /* the checked, rewritten code; NULL if refused */
	unsigned flags;
	PyObject *rejection; /* the EvalSyntaxRejected arguments (eval-report.c) */
};

/* The verdict cached under key for rules and mode (borrowed), or NULL. */
struct sb_eval_verdict *sb_eval_verdict_lookup(struct sb_eval_rules *r, enum sb_eval_mode mode,
					       PyObject *key);
/* A new verdict holding code (or a rejection), cached under key when key is
 * not NULL. New reference, NULL with an exception. */
struct sb_eval_verdict *sb_eval_verdict_store(struct sb_eval_rules *r, enum sb_eval_mode mode,
					      PyObject *key, PyObject *code, unsigned flags,
					      PyObject *rejection);
