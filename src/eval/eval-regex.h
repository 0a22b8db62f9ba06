/* SPDX-License-Identifier: MIT */
#pragma once

/* Catastrophic backtracking in `re` (spec section 5, a known gap of the
 * original): a match is one C call that holds the interpreter, beyond the
 * reach of any tick or timeout. So the patterns the engine would explore in
 * exponential time are refused before it starts: a repeat inside a repeat
 * (`(a+)+`), an ambiguous alternation inside a repeat (`(a|ab)*`), a
 * backreference. Unbounded repeats backtrack polynomially (`\d+x` on a long
 * run of digits, `a*a*a*b`, `.*.*=.*`): the worst case, from the text's
 * length, is weighed against eval-timeout before the engine starts. What reaches the engine from
 * evaluated code goes through
 * the attribute read: `re.match`..., and a compiled pattern's methods, come
 * back wrapped. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "eval-profile.h"

/* value is obj.name: the wrapped engine entry when obj is the re module or
 * a compiled pattern, else value itself (new reference). */
PyObject *sb_eval_regex_wrap(struct sb_eval_rules *r, PyObject *obj, PyObject *name,
			     PyObject *value);
