/* SPDX-License-Identifier: MIT */
#pragma once

/* The run-time attribute check (spec section 5): every attribute read of
 * evaluated code -- the rewritten dot, getattr, hasattr, vars, the fields of
 * a format template, the names operator.attrgetter/methodcaller and
 * __getattribute__ are given (eval-callables.h) -- is checked here, whatever
 * spelling led to the name.
 * The read itself is sb_eval_getattr() (eval-helpers.h). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "eval-profile.h"

/* Whether the attribute rules allow name, silently (dir() filtering). */
bool sb_eval_attr_allowed(const struct sb_eval_rules *r, PyObject *name);
/* The check alone: 0, or -1 with RuleEvalPermissionError (learning: the name
 * is recorded and 0 returned). */
int sb_eval_attr_check(struct sb_eval_rules *r, PyObject *name);
