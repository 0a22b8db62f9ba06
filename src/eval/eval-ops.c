/* SPDX-License-Identifier: MIT */
#include "eval-ops.h"

#include <math.h>

#include "eval-errors.h"
#include "util.h"

/* Big-integer work, in units of about 8 ns (a 30-bit digit operation of
 * CPython's Karatsuba multiplication, measured on 3.11), charged to the
 * iteration budget at this rate: one iteration is about what a loop's turn
 * costs, so eval-max-iterations bounds the time spent in C too. */
#define SB_EVAL_UNITS_PER_ITERATION 50.0
/* Below this many digits CPython multiplies the schoolbook way. */
#define SB_EVAL_KARATSUBA_CUTOFF 70.0
/* What one work unit costs, at most, for the deadline: a unit is measured
 * between 5 and 16 ns on 3.11 (multiplication, division, factorial), and
 * the deadline check errs towards refusing. */
#define SB_EVAL_NS_PER_UNIT 16.0

static const char *const op_text[SB_EVAL_OP__N] = {"+", "*", "**", "<<", "%", "//", "divmod"};

double sb_eval_int_bits(PyObject *n)
{
	size_t bits = _PyLong_NumBits(n);

	if (bits == (size_t)-1) {
		PyErr_Clear();
		return INFINITY;
	}
	return (double)bits;
}

/* An int operand as a double (inf when it does not fit in a long long). */
double sb_eval_int_value(PyObject *n)
{
	int overflow = 0;
	long long v = PyLong_AsLongLongAndOverflow(n, &overflow);

	if (overflow)
		return overflow > 0 ? INFINITY : -INFINITY;
	if (v == -1 && PyErr_Occurred()) {
		PyErr_Clear();
		return INFINITY;
	}
	return (double)v;
}

static bool is_int(PyObject *o)
{
	return PyLong_Check(o);
}

/* The bytes a sequence's items take, when it is one whose size is known:
 * -1 otherwise. *kind: 1 for bytes-like and lists, the str kind for str. */
static double seq_bytes(PyObject *o, int *family)
{
	if (PyUnicode_Check(o)) {
		*family = 1;
		return (double)PyUnicode_GET_LENGTH(o) * PyUnicode_KIND(o);
	}
	if (PyBytes_Check(o) || PyByteArray_Check(o)) {
		*family = 2;
		return (double)PyObject_Size(o);
	}
	if (PyList_Check(o) || PyTuple_Check(o)) {
		*family = PyList_Check(o) ? 3 : 4;
		return (double)Py_SIZE(o) * sizeof(PyObject *);
	}
	*family = 0;
	return -1;
}

/* A short str or bytes as written, else its type and length. */
static void operand_text(PyObject *o, char *buf, size_t size)
{
	PyObject *repr = NULL;
	const char *t;

	if ((PyUnicode_Check(o) && PyUnicode_GET_LENGTH(o) <= 16) ||
	    (PyBytes_Check(o) && PyBytes_GET_SIZE(o) <= 16))
		repr = PyObject_Repr(o);
	t = repr ? PyUnicode_AsUTF8(repr) : NULL;
	if (t)
		snprintf(buf, size, "%s", t);
	else if (PySequence_Check(o) && PyObject_Size(o) >= 0)
		snprintf(buf, size, "<%s of %zd items>", Py_TYPE(o)->tp_name, PyObject_Size(o));
	else
		snprintf(buf, size, "<%s>", Py_TYPE(o)->tp_name);
	PyErr_Clear();
	Py_XDECREF(repr);
}

/* "10 ** 1000000000", "'str' * 100000000": what the refusal names. */
static char *describe(enum sb_eval_op op, PyObject *left, PyObject *right)
{
	char l[64], r[64], *s;

	if (is_int(left) && sb_eval_int_bits(left) < 60)
		snprintf(l, sizeof(l), "%lld", (long long)sb_eval_int_value(left));
	else if (is_int(left))
		snprintf(l, sizeof(l), "<int of %.0f bits>", sb_eval_int_bits(left));
	else
		operand_text(left, l, sizeof(l));
	if (is_int(right) && sb_eval_int_bits(right) < 60)
		snprintf(r, sizeof(r), "%lld", (long long)sb_eval_int_value(right));
	else if (is_int(right))
		snprintf(r, sizeof(r), "<int of %.0f bits>", sb_eval_int_bits(right));
	else
		operand_text(right, r, sizeof(r));
	if (op == SB_EVAL_OP_DIVMOD ? asprintf(&s, "divmod(%s, %s)", l, r) < 0
				    : asprintf(&s, "%s %s %s", l, op_text[op], r) < 0)
		return NULL;
	return s;
}

static int refuse(struct sb_eval_state *s, enum sb_eval_op op, PyObject *left, PyObject *right,
		  enum sb_eval_scalar_key key)
{
	_cleanup_free_ char *what = describe(op, left, right);

	if (!what) {
		PyErr_NoMemory();
		return -1;
	}
	return sb_eval_deny_budget(s->rules, what, key, NULL);
}

int sb_eval_work_deadline(struct sb_eval_state *s, double ns, const char *what)
{
	if (s->active && ns >= 1e6 && (double)sb_eval_now_ns() + ns > (double)s->deadline_ns)
		return sb_eval_deny_budget(s->rules, what, SB_EVAL_TIMEOUT, NULL);
	return 0;
}

int sb_eval_work_charge(struct sb_eval_state *s, double units, const char *what)
{
	double iterations = units / SB_EVAL_UNITS_PER_ITERATION;
	double ns = units * SB_EVAL_NS_PER_UNIT;

	if (iterations < 1)
		return 0;
	if ((double)s->iterations + iterations > (double)s->max_iterations)
		return sb_eval_deny_budget(s->rules, what, SB_EVAL_MAX_ITERATIONS, NULL);
	/* The C call cannot be stopped once it runs: work that would end past
	 * the deadline is refused before it starts, whatever eval-max-iterations
	 * allows (a profile may raise it far past the timeout). */
	if (sb_eval_work_deadline(s, ns, what) < 0)
		return -1;
	s->iterations += (unsigned long long)iterations;
	return 0;
}

/* Charges work units for op; refuses as the operator written out. */
static int charge(struct sb_eval_state *s, double units, enum sb_eval_op op, PyObject *left,
		  PyObject *right)
{
	_cleanup_free_ char *what = NULL;

	if (units / SB_EVAL_UNITS_PER_ITERATION < 1)
		return 0;
	what = describe(op, left, right);
	if (!what) {
		PyErr_NoMemory();
		return -1;
	}
	return sb_eval_work_charge(s, units, what);
}

/* The cost of multiplying numbers of na and nb digits. */
double sb_eval_mul_units(double na, double nb)
{
	double lo = na < nb ? na : nb, hi = na < nb ? nb : na;

	if (lo < SB_EVAL_KARATSUBA_CUTOFF)
		return lo * hi;
	return hi / lo * pow(lo, 1.585);
}

/* CPython 3.11 divides the schoolbook way (x_divrem): one pass over the
 * divisor's digits per digit of the quotient. A one-digit divisor takes a
 * linear path. */
double sb_eval_div_units(double na, double nb)
{
	if (nb < 2 || na < nb)
		return na;
	return (na - nb + 1) * nb;
}

static int check_int_op(struct sb_eval_state *s, enum sb_eval_op op, PyObject *left,
			PyObject *right)
{
	double budget_bits = (double)s->max_alloc * 8, lb = sb_eval_int_bits(left),
	       rb = sb_eval_int_bits(right);
	double exponent, result_bits;

	switch (op) {
	case SB_EVAL_OP_MUL:
		if (lb + rb > budget_bits)
			return refuse(s, op, left, right, SB_EVAL_MAX_ALLOC);
		return charge(s, sb_eval_mul_units(lb / 30, rb / 30), op, left, right);
	case SB_EVAL_OP_POW:
		exponent = sb_eval_int_value(right);
		if (exponent <= 1 || lb <= 1)
			return 0; /* 0, 1, -1, negative or tiny exponents: small or a float */
		result_bits = (lb - 1) * exponent;
		if (result_bits > budget_bits)
			return refuse(s, op, left, right, SB_EVAL_MAX_ALLOC);
		return charge(s, pow(result_bits / 30, 1.585), op, left, right);
	case SB_EVAL_OP_LSHIFT:
		exponent = sb_eval_int_value(right);
		if (exponent <= 0 || lb == 0)
			return 0;
		if (lb + exponent > budget_bits)
			return refuse(s, op, left, right, SB_EVAL_MAX_ALLOC);
		return 0;
	case SB_EVAL_OP_MOD:
	case SB_EVAL_OP_FLOORDIV:
	case SB_EVAL_OP_DIVMOD:
		/* The result is no larger than the operands, but the work is
		 * quadratic: (1 << 4_000_000) // ((1 << 2_000_000) + 1) holds the
		 * interpreter for seconds in one C call. */
		return charge(s, sb_eval_div_units(lb / 30 + 1, rb / 30 + 1), op, left, right);
	default:
		return 0;
	}
}

int sb_eval_op_check(struct sb_eval_state *s, enum sb_eval_op op, PyObject *left, PyObject *right)
{
	double budget = (double)s->max_alloc, ls, rs;
	int lf, rf;

	if (is_int(left) && is_int(right))
		return check_int_op(s, op, left, right);
	switch (op) {
	case SB_EVAL_OP_ADD:
		ls = seq_bytes(left, &lf);
		rs = seq_bytes(right, &rf);
		if (ls >= 0 && rs >= 0 && lf == rf && ls + rs > budget)
			return refuse(s, op, left, right, SB_EVAL_MAX_ALLOC);
		return 0;
	case SB_EVAL_OP_MUL:
		/* A repetition, either way round. */
		for (int k = 0; k < 2; k++) {
			PyObject *seq = k ? right : left, *count = k ? left : right;
			double size = seq_bytes(seq, &lf), n;

			if (size < 0 || !is_int(count))
				continue;
			n = sb_eval_int_value(count);
			if (n > 0 && size * n > budget)
				return refuse(s, op, left, right, SB_EVAL_MAX_ALLOC);
		}
		return 0;
	case SB_EVAL_OP_MOD:
		if (PyUnicode_Check(left) || PyBytes_Check(left) || PyByteArray_Check(left))
			return sb_eval_printf_check(s, left, right);
		return 0;
	default:
		return 0;
	}
}

int sb_eval_op_check_modpow(struct sb_eval_state *s, PyObject *base, PyObject *exp, PyObject *mod)
{
	double eb, md, units;

	if (!is_int(base) || !is_int(exp) || !is_int(mod))
		return 0;
	/* One modular multiplication per bit of the exponent, and as many
	 * squarings; a negative exponent first inverts the base, an extended
	 * gcd as quadratic as a division; the base is reduced modulo mod. */
	eb = sb_eval_int_bits(exp);
	md = sb_eval_int_bits(mod) / 30 + 1;
	units = 2 * eb * sb_eval_mul_units(md, md) +
		sb_eval_div_units(sb_eval_int_bits(base) / 30 + 1, md);
	if (sb_eval_int_value(exp) < 0)
		units += md * md;
	return charge(s, units, SB_EVAL_OP_POW, base, exp);
}

PyObject *sb_eval_op_apply(enum sb_eval_op op, PyObject *left, PyObject *right)
{
	switch (op) {
	case SB_EVAL_OP_ADD:
		return PyNumber_Add(left, right);
	case SB_EVAL_OP_MUL:
		return PyNumber_Multiply(left, right);
	case SB_EVAL_OP_POW:
		return PyNumber_Power(left, right, Py_None);
	case SB_EVAL_OP_LSHIFT:
		return PyNumber_Lshift(left, right);
	case SB_EVAL_OP_MOD:
		return PyNumber_Remainder(left, right);
	case SB_EVAL_OP_FLOORDIV:
		return PyNumber_FloorDivide(left, right);
	case SB_EVAL_OP_DIVMOD:
		return PyNumber_Divmod(left, right);
	default:
		PyErr_SetString(PyExc_SystemError, "unknown eval guard operator");
		return NULL;
	}
}

static int width_refused(struct sb_eval_state *s, double width)
{
	_cleanup_free_ char *what = NULL;

	if (width <= (double)s->max_alloc)
		return 0;
	if (asprintf(&what, "a format width or precision of %.0f", width) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return sb_eval_deny_budget(s->rules, what, SB_EVAL_MAX_ALLOC, NULL);
}

/* Reads the code point at i of a str or the byte at i of a bytes-like. */
static Py_UCS4 char_at(PyObject *t, Py_ssize_t i)
{
	if (PyUnicode_Check(t))
		return PyUnicode_READ_CHAR(t, i);
	if (PyBytes_Check(t))
		return (unsigned char)PyBytes_AS_STRING(t)[i];
	return (unsigned char)PyByteArray_AS_STRING(t)[i];
}

/* A run of digits at *i, as a double (inf past a double's range: still
 * refused), or -1 when there is none. */
static double digits(PyObject *t, Py_ssize_t len, Py_ssize_t *i)
{
	double v = -1;

	while (*i < len && char_at(t, *i) >= '0' && char_at(t, *i) <= '9') {
		v = (v < 0 ? 0 : v * 10) + (char_at(t, *i) - '0');
		(*i)++;
	}
	return v;
}

static PyObject *star_value(PyObject *values, Py_ssize_t index)
{
	if (PyTuple_Check(values))
		return index < PyTuple_GET_SIZE(values) ? PyTuple_GET_ITEM(values, index) : NULL;
	return index == 0 ? values : NULL;
}

static int star_check(struct sb_eval_state *s, PyObject *values, Py_ssize_t *arg)
{
	PyObject *v = star_value(values, (*arg)++);

	if (!v || !is_int(v) || PyBool_Check(v))
		return 0;
	return width_refused(s, fabs(sb_eval_int_value(v)));
}

int sb_eval_printf_check(struct sb_eval_state *s, PyObject *t, PyObject *values)
{
	Py_ssize_t len = PyUnicode_Check(t) ? PyUnicode_GET_LENGTH(t) : PyObject_Size(t);
	Py_ssize_t arg = 0;

	for (Py_ssize_t i = 0; i < len; i++) {
		double v;

		if (char_at(t, i) != '%')
			continue;
		if (++i >= len)
			break;
		if (char_at(t, i) == '%')
			continue;
		if (char_at(t, i) == '(') {
			int depth = 1;

			while (++i < len && depth > 0)
				depth += char_at(t, i) == '(' ? 1 : char_at(t, i) == ')' ? -1 : 0;
		}
		while (i < len && char_at(t, i) && char_at(t, i) < 128 &&
		       strchr("-+ #0", (int)char_at(t, i)))
			i++;
		if (i < len && char_at(t, i) == '*') {
			i++;
			if (star_check(s, values, &arg) < 0)
				return -1;
		} else if ((v = digits(t, len, &i)) >= 0 && width_refused(s, v) < 0) {
			return -1;
		}
		if (i < len && char_at(t, i) == '.') {
			i++;
			if (i < len && char_at(t, i) == '*') {
				i++;
				if (star_check(s, values, &arg) < 0)
					return -1;
			} else if ((v = digits(t, len, &i)) >= 0 && width_refused(s, v) < 0) {
				return -1;
			}
		}
		/* The conversion itself consumes a value. */
		arg++;
		i--;
	}
	return 0;
}

int sb_eval_spec_check(struct sb_eval_state *s, PyObject *spec)
{
	Py_ssize_t len;

	if (!PyUnicode_Check(spec))
		return 0;
	len = PyUnicode_GET_LENGTH(spec);
	for (Py_ssize_t i = 0; i < len; i++) {
		double v = digits(spec, len, &i);

		if (v >= 0 && width_refused(s, v) < 0)
			return -1;
	}
	return 0;
}
