/* SPDX-License-Identifier: MIT */
#pragma once

/* Iterations counted where they happen, C included. A for loop or a
 * comprehension iterates through an iterator that charges its evaluation one
 * iteration per item (__sb_iter__). range() gives a range that does the same
 * when C iterates it (sum(range(10**12)), list(range(...))): the budget and
 * the timeout then hold inside C builtins too. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "eval-state.h"

/* iter(iterable), charging s per item (new reference). */
PyObject *sb_eval_iter_new(struct sb_eval_state *s, PyObject *iterable);
/* range(*args): a range, or for more items than C should run through
 * unchecked, a range-like object whose iterators charge s. */
PyObject *sb_eval_range_new(struct sb_eval_state *s, PyObject *args);
