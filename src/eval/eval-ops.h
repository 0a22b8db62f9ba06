/* SPDX-License-Identifier: MIT */
#pragma once

/* eval-max-alloc before the operators that allocate (spec section 5):
 * `10 ** 10**9` and `[0] * 10**10` are refused before CPython starts on them
 * in C, where nothing could stop it. The size of the result is worked out
 * from the operands: bit lengths for integers, lengths and item sizes for
 * str, bytes, bytearray, list and tuple. The big-integer operations whose
 * work grows faster than their operands (products, powers, divisions and
 * remainders, which CPython does in one C call nothing interrupts) are
 * charged to eval-max-iterations by the work they take, and refused before
 * they start when that work would outlast what is left of eval-timeout. */

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
	SB_EVAL_OP_FLOORDIV,
	SB_EVAL_OP_DIVMOD, /* divmod(): not an operator, checked as // */
	SB_EVAL_OP__N,
};

/* 0, or -1 with RuleEvalPermissionError (eval-max-alloc or
 * eval-max-iterations). */
int sb_eval_op_check(struct sb_eval_state *s, enum sb_eval_op op, PyObject *left, PyObject *right);
/* pow(base, exp, mod): the work of a modular power with a long exponent. */
int sb_eval_op_check_modpow(struct sb_eval_state *s, PyObject *base, PyObject *exp, PyObject *mod);
/* Charges the work of one big-integer operation done in a single C call
 * (units of about 8 ns, see eval-ops.c): 0, or -1 with
 * RuleEvalPermissionError naming what (eval-max-iterations, or eval-timeout
 * when the work would end past the deadline). */
int sb_eval_work_charge(struct sb_eval_state *s, double units, const char *what);
/* Work of ns nanoseconds at most, in one C call that is not a loop's (a
 * regular expression's match): refused with eval-timeout when it would end
 * past the deadline; eval-max-iterations is not charged. */
int sb_eval_work_deadline(struct sb_eval_state *s, double ns, const char *what);
/* The work units of a product of numbers of na and nb 30-bit digits, and of
 * a division of na digits by nb. */
double sb_eval_mul_units(double na, double nb);
double sb_eval_div_units(double na, double nb);
/* The number of bits of an int (inf when it cannot be told). */
double sb_eval_int_bits(PyObject *n);
/* An int as a double (+-inf past a long long). */
double sb_eval_int_value(PyObject *n);
/* left op right (new reference), NULL with an exception. */
PyObject *sb_eval_op_apply(enum sb_eval_op op, PyObject *left, PyObject *right);

/* The widths and precisions of a printf-style template (`'%*d' % (n, 1)`),
 * those a '*' takes from values included. */
int sb_eval_printf_check(struct sb_eval_state *s, PyObject *template, PyObject *values);
/* The numbers of a format spec (">10.3f"): a width or a precision past
 * eval-max-alloc pads the result in C. */
int sb_eval_spec_check(struct sb_eval_state *s, PyObject *spec);
