/* SPDX-License-Identifier: MIT */
#pragma once

/* eval-max-alloc before the operators that allocate (spec section 5):
 * `10 ** 10**9` and `[0] * 10**10` are refused before CPython starts on them
 * in C, where nothing could stop it. The size of the result is worked out
 * from the operands: bit lengths for integers, lengths and item sizes for
 * str, bytes, bytearray, list and tuple. Big-integer products and powers are
 * charged to eval-max-iterations as well, by the work they take. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "eval-state.h"

/* The operators checked before they run, as __sb_binop__'s first argument. */
enum sb_eval_op {
	SB_EVAL_OP_ADD,
	SB_EVAL_OP_MUL,
	SB_EVAL_OP_POW,
	SB_EVAL_OP_LSHIFT,
	SB_EVAL_OP_MOD,
	SB_EVAL_OP__N,
};

/* 0, or -1 with RuleEvalPermissionError (eval-max-alloc or
 * eval-max-iterations). */
int sb_eval_op_check(struct sb_eval_state *s, enum sb_eval_op op, PyObject *left, PyObject *right);
/* pow(base, exp, mod): the work of a modular power with a long exponent. */
int sb_eval_op_check_modpow(struct sb_eval_state *s, PyObject *base, PyObject *exp, PyObject *mod);
/* left op right (new reference), NULL with an exception. */
PyObject *sb_eval_op_apply(enum sb_eval_op op, PyObject *left, PyObject *right);

/* The widths and precisions of a printf-style template (`'%*d' % (n, 1)`),
 * those a '*' takes from values included. */
int sb_eval_printf_check(struct sb_eval_state *s, PyObject *template, PyObject *values);
/* The numbers of a format spec (">10.3f"): a width or a precision past
 * eval-max-alloc pads the result in C. */
int sb_eval_spec_check(struct sb_eval_state *s, PyObject *spec);
