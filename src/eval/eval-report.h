/* SPDX-License-Identifier: MIT */
#pragma once

/* EvalSyntaxRejected, the report of a refused source (spec section 5): "N
 * rules violated in <eval:profile>", then every violation with its line and
 * column, the source line and a caret under the construct, the exact rule to
 * add and a warning where the grant widens access. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "eval-ast.h"

/* The report of c as a Python object (new reference) the cache can keep:
 * sb_eval_raise_rejection() raises it. NULL with an exception. */
PyObject *sb_eval_report_make(const struct sb_eval_check *c, const struct sb_eval_rules *r,
			      const char *source);
/* Raises EvalSyntaxRejected from a report; -1. */
int sb_eval_raise_rejection(PyObject *report);
