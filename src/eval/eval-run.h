/* SPDX-License-Identifier: MIT */
#pragma once

/* One guarded evaluation from end to end: the source checked (or its
 * verdict found in the cache), rewritten and compiled; the namespace built;
 * the code run under its budgets, on the caller's thread or on an evaluation
 * thread. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "eval-profile.h"
#include "eval-builtin.h"

/* eval/exec/compile with their builtin's arguments, under r: the program's
 * (r is then the default profile) or evaluated code's (the profile of the
 * code that calls them). */
PyObject *sb_eval_run_builtin(struct sb_eval_rules *r, enum sb_eval_builtin which,
			      PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

/* guarded_eval(source, profile=, names=, mode=) under r: the value of an
 * expression ("eval"), or the names a block bound ("exec"). */
PyObject *sb_eval_run_guarded(struct sb_eval_rules *r, PyObject *source, PyObject *names,
			      enum sb_eval_mode mode);

/* Learning with no eval-* key: what the source uses is recorded as eval-*
 * rules, and the builtin runs as CPython's own. */
PyObject *sb_eval_run_learning(enum sb_eval_builtin which, PyObject *const *args, Py_ssize_t nargs,
			       PyObject *kwnames);
