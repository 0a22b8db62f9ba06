/* SPDX-License-Identifier: MIT */
#pragma once

/* The guarded builtins (spec section 5): bound under their own names when
 * eval-call grants them, in place of the builtins, whose raw forms would
 * reopen by name what the namespace shut.
 *   getattr, hasattr   the name is checked; a default never swallows a refusal
 *   vars(o)            gated by eval-magic=__dict__; vars() refused
 *   setattr, delattr   refused
 *   type(x)            works; type(name, bases, dict) refused
 *   dir(o)             filtered; dir() refused
 *   globals, breakpoint refused; locals() without the namespace's internals
 *   format             the spec's widths checked
 *   range              counted when long (eval-iter.h)
 *   pow                checked as ** is
 *   divmod             checked as // is
 *   round              round(n, -k) charged (10 ** k, then a division)
 *   eval, exec, compile guarded again, under the same profile
 *   __import__         eval-import, then the program's own import rules */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "eval-builtin.h"
#include "eval-profile.h"

/* The guarded builtin standing for name under r (borrowed), or NULL (no
 * exception) when name has none. */
PyObject *sb_eval_shim(struct sb_eval_rules *r, const char *name);

/* What the eval, exec and compile shims hand their arguments to: the runner
 * (eval-run.c) sits above the namespace these shims are bound in, so eval.c
 * plugs it in before any namespace is built. */
typedef PyObject *(*sb_eval_runner)(struct sb_eval_rules *r, enum sb_eval_builtin which,
				    PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
void sb_eval_shims_plug(sb_eval_runner run);
