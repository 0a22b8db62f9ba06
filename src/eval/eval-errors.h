/* SPDX-License-Identifier: MIT */
#pragma once

/* The exceptions the eval layer raises at run time, built from the classes
 * of src/pyshared/exceptions.c. Each function sets the exception and returns
 * -1, so a check can `return sb_eval_deny(...)`. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "eval-profile.h"

/* RuleEvalPermissionError(target, rule_key, hint): "'x' is denied by the eval
 * guard. Add `eval-magic=x` to '<file>' to allow it". key is the list key
 * that would allow target, or -1 when no rule does: hint then says why (and
 * replaces the "Add" sentence when given). */
int sb_eval_deny(const struct sb_eval_rules *r, const char *target, int key, const char *hint);
/* RuleEvalPermissionError for an operation refused before it runs because
 * it would spend more than budget key (eval-max-alloc: the memory it would
 * allocate; eval-max-iterations: the work); why, when not NULL, says how
 * ("N threads still run past their timeout, more than"). */
int sb_eval_deny_budget(const struct sb_eval_rules *r, const char *what,
			enum sb_eval_scalar_key key, const char *why);
/* EvalInterrupted(reason): "evaluation interrupted: <reason>", .reason. */
int sb_eval_raise_interrupted(const char *reason);
/* The EvalInterrupted class (borrowed), NULL with an exception. */
PyObject *sb_eval_interrupted_class(void);
