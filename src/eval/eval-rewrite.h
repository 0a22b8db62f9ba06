/* SPDX-License-Identifier: MIT */
#pragma once

/* The rewrite of a checked tree (spec section 5): what the static check
 * cannot decide is handed to the helpers while the code runs. Attribute
 * reads, the operators that allocate (+ * ** << %) and their augmented
 * assignments, for loops and comprehensions (an iterator that counts), while
 * loops, function and lambda entries (call depth), except clauses (the
 * budget's interruption cannot be caught) and f-string format specs (widths)
 * go through the helpers of eval-helpers.h. Positions are kept, so
 * tracebacks point at the source as written. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Rewrites tree in place. 0, or -1 with an exception. */
int sb_eval_rewrite(PyObject *tree);
