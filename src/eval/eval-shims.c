/* SPDX-License-Identifier: MIT */
#include "eval-shims.h"

#include "eval-attr.h"
#include "eval-callables.h"
#include "eval-errors.h"
#include "eval-format.h"
#include "eval-grammar.h"
#include "eval-helpers.h"
#include "eval-iter.h"
#include "eval-learn.h"
#include "eval-ops.h"
#include "eval-runtime.h"
#include "eval-state.h"
#include "util.h"

static struct sb_eval_rules *rules_of(PyObject *self)
{
	struct sb_eval_rules *r = sb_eval_rules_of(self);

	if (!r)
		PyErr_SetString(PyExc_SystemError, "a guarded builtin without its profile");
	return r;
}

static int nargs_between(const char *name, Py_ssize_t nargs, Py_ssize_t lo, Py_ssize_t hi)
{
	if (nargs >= lo && nargs <= hi)
		return 0;
	PyErr_Format(PyExc_TypeError, "%s expected %zd to %zd arguments, got %zd", name, lo, hi,
		     nargs);
	return -1;
}

static PyObject *s_getattr(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	PyObject *v;

	if (!r || nargs_between("getattr", nargs, 2, 3) < 0)
		return NULL;
	v = sb_eval_getattr(r, args[0], args[1]);
	/* A refusal is a PermissionError: only a missing attribute falls back
	 * to the default. */
	if (!v && nargs == 3 && PyErr_ExceptionMatches(PyExc_AttributeError)) {
		PyErr_Clear();
		return Py_NewRef(args[2]);
	}
	return v;
}

static PyObject *s_hasattr(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	PyObject *v;

	if (!r || nargs_between("hasattr", nargs, 2, 2) < 0)
		return NULL;
	v = sb_eval_getattr(r, args[0], args[1]);
	if (v) {
		Py_DECREF(v);
		Py_RETURN_TRUE;
	}
	if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
		PyErr_Clear();
		Py_RETURN_FALSE;
	}
	return NULL;
}

static PyObject *s_vars(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	PyObject *name, *v;

	if (!r || nargs_between("vars", nargs, 0, 1) < 0)
		return NULL;
	if (nargs == 0) {
		sb_eval_deny(r, "vars()", -1,
			     "vars() with no argument hands over the evaluation's namespace");
		return NULL;
	}
	name = PyUnicode_InternFromString("__dict__");
	if (!name)
		return NULL;
	v = sb_eval_getattr(r, args[0], name);
	Py_DECREF(name);
	return v;
}

static PyObject *refused(PyObject *self, const char *what, const char *hint)
{
	struct sb_eval_rules *r = rules_of(self);

	if (r)
		sb_eval_deny(r, what, -1, hint);
	return NULL;
}

static PyObject *s_setattr(PyObject *self, PyObject *const *a _unused_, Py_ssize_t n _unused_)
{
	return refused(self, "setattr", "evaluated code reads attributes, it never writes them");
}

static PyObject *s_delattr(PyObject *self, PyObject *const *a _unused_, Py_ssize_t n _unused_)
{
	return refused(self, "delattr", "evaluated code reads attributes, it never deletes them");
}

static PyObject *s_globals(PyObject *self, PyObject *const *a _unused_, Py_ssize_t n _unused_)
{
	return refused(self, "globals()", "it hands over the evaluation's namespace");
}

static PyObject *s_breakpoint(PyObject *self, PyObject *const *a _unused_, Py_ssize_t n _unused_)
{
	return refused(self, "breakpoint()", "the debugger reaches the whole process");
}

static PyObject *s_type(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);

	if (!r)
		return NULL;
	/* type(attrgetter('x')) is the raw attrgetter: guarded as it is when
	 * read off its module. */
	if (nargs == 1)
		return sb_eval_callable_wrap(r, NULL, NULL, (PyObject *)Py_TYPE(args[0]));
	return refused(self, "type(name, bases, dict)",
		       "evaluated code does not make classes "
		       "this way");
}

static PyObject *s_dir(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	PyObject *names, *out;

	if (!r || nargs_between("dir", nargs, 0, 1) < 0)
		return NULL;
	if (nargs == 0)
		return refused(self, "dir()",
			       "dir() with no argument lists the evaluation's "
			       "namespace");
	names = PyObject_Dir(args[0]);
	if (!names)
		return NULL;
	out = PyList_New(0);
	for (Py_ssize_t i = 0; out && i < PyList_GET_SIZE(names); i++) {
		PyObject *name = PyList_GET_ITEM(names, i);

		if (sb_eval_attr_allowed(r, name) && PyList_Append(out, name) < 0)
			Py_CLEAR(out);
	}
	Py_DECREF(names);
	return out;
}

/* locals(): the frame's names without what the guard put there. */
static PyObject *s_locals(PyObject *self, PyObject *const *a _unused_, Py_ssize_t nargs)
{
	PyObject *locals, *out, *key, *value;
	Py_ssize_t pos = 0;

	if (!rules_of(self) || nargs_between("locals", nargs, 0, 0) < 0)
		return NULL;
	locals = PyEval_GetLocals(); /* borrowed */
	out = PyDict_New();
	if (!locals || !out)
		return out;
	if (!PyDict_Check(locals)) {
		Py_DECREF(out);
		return refused(self, "locals()", "this namespace is not a dict");
	}
	while (PyDict_Next(locals, &pos, &key, &value)) {
		const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;

		if (k && (streq(k, "__builtins__") || startswith(k, SB_EVAL_RESERVED_PREFIX)))
			continue;
		PyErr_Clear();
		if (PyDict_SetItem(out, key, value) < 0) {
			Py_DECREF(out);
			return NULL;
		}
	}
	return out;
}

static PyObject *s_format(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	struct sb_eval_state *s;
	PyObject *empty, *out;

	if (!r || nargs_between("format", nargs, 1, 2) < 0 || !(s = sb_eval_state_for(r)))
		return NULL;
	if (nargs == 2)
		return sb_eval_format_value(s, args[0], args[1]);
	empty = PyUnicode_FromString("");
	out = empty ? sb_eval_format_value(s, args[0], empty) : NULL;
	Py_XDECREF(empty);
	return out;
}

static PyObject *s_range(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	struct sb_eval_state *s;
	PyObject *tuple, *out;

	if (!r || !(s = sb_eval_state_for(r)))
		return NULL;
	tuple = PyTuple_New(nargs);
	if (!tuple)
		return NULL;
	for (Py_ssize_t i = 0; i < nargs; i++)
		PyTuple_SET_ITEM(tuple, i, Py_NewRef(args[i]));
	out = sb_eval_range_new(s, tuple);
	Py_DECREF(tuple);
	return out;
}

static PyObject *s_pow(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	struct sb_eval_state *s;

	if (!r || nargs_between("pow", nargs, 2, 3) < 0 || !(s = sb_eval_state_for(r)))
		return NULL;
	if (nargs == 3 && args[2] != Py_None) {
		if (sb_eval_op_check_modpow(s, args[0], args[1], args[2]) < 0)
			return NULL;
		return PyNumber_Power(args[0], args[1], args[2]);
	}
	if (sb_eval_op_check(s, SB_EVAL_OP_POW, args[0], args[1]) < 0)
		return NULL;
	return PyNumber_Power(args[0], args[1], Py_None);
}

/* divmod(a, b): the work of a // b. */
static PyObject *s_divmod(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	struct sb_eval_state *s;

	if (!r || nargs_between("divmod", nargs, 2, 2) < 0 || !(s = sb_eval_state_for(r)))
		return NULL;
	if (sb_eval_op_check(s, SB_EVAL_OP_DIVMOD, args[0], args[1]) < 0)
		return NULL;
	return PyNumber_Divmod(args[0], args[1]);
}

/* round(n, -k) of an int computes 10 ** k, then divides n by it: both in
 * one C call. */
static PyObject *s_round(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	struct sb_eval_rules *r = rules_of(self);
	PyObject *real, *number = nargs > 0 ? args[0] : NULL, *ndigits = nargs > 1 ? args[1] : NULL;
	struct sb_eval_state *s;

	if (!r || !(s = sb_eval_state_for(r)))
		return NULL;
	for (Py_ssize_t k = 0; kwnames && k < PyTuple_GET_SIZE(kwnames); k++) {
		PyObject *key = PyTuple_GET_ITEM(kwnames, k);

		if (PyUnicode_CompareWithASCIIString(key, "ndigits") == 0)
			ndigits = args[nargs + k];
		else if (PyUnicode_CompareWithASCIIString(key, "number") == 0)
			number = args[nargs + k];
	}
	if (number && PyLong_Check(number) && ndigits && PyLong_Check(ndigits)) {
		double k = -sb_eval_int_value(ndigits), bits = k * 3.3219280948873622;
		char what[96];

		snprintf(what, sizeof(what), "round(<int of %.0f bits>, %.0f)",
			 sb_eval_int_bits(number), -k);
		if (k > 0 && bits > (double)s->max_alloc * 8) {
			sb_eval_deny_budget(r, what, SB_EVAL_MAX_ALLOC, NULL);
			return NULL;
		}
		if (k > 0 &&
		    sb_eval_work_charge(
			s,
			pow(bits / 30 + 1, 1.585) +
			    sb_eval_div_units(sb_eval_int_bits(number) / 30 + 1, bits / 30 + 1),
			what) < 0)
			return NULL;
	}
	real = PyDict_GetItemString(sb_eval_builtins_dict(), "round");
	if (!real) {
		PyErr_SetString(PyExc_NameError, "round not found");
		return NULL;
	}
	return PyObject_Vectorcall(real, args, (size_t)nargs, kwnames);
}

/* A builtin that runs through an iterable in C (sum, any, sorted...): the
 * iterable goes through a counting iterator, so that eval-max-iterations and
 * the timeout hold in that loop (sum([[0]] * 10**6, []) is quadratic). */
static PyObject *counting_call(PyObject *self, const char *builtin, PyObject *const *args,
			       Py_ssize_t nargs, PyObject *kwnames, bool only_alone)
{
	struct sb_eval_rules *r = rules_of(self);
	Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
	PyObject *real, *it, *out, **copy;
	struct sb_eval_state *s;

	if (!r || !(s = sb_eval_state_for(r)))
		return NULL;
	real = PyDict_GetItemString(sb_eval_builtins_dict(), builtin);
	if (!real) {
		PyErr_Format(PyExc_NameError, "%s not found", builtin);
		return NULL;
	}
	/* max(a, b) compares its arguments: nothing to iterate. */
	if (nargs < 1 || (only_alone && nargs > 1))
		return PyObject_Vectorcall(real, args, (size_t)nargs, kwnames);
	it = sb_eval_iter_new(s, args[0]);
	if (!it)
		return NULL;
	copy = PyMem_Malloc((size_t)total * sizeof(*copy));
	if (!copy) {
		Py_DECREF(it);
		return PyErr_NoMemory();
	}
	copy[0] = it;
	for (Py_ssize_t i = 1; i < total; i++)
		copy[i] = args[i];
	out = PyObject_Vectorcall(real, copy, (size_t)nargs, kwnames);
	PyMem_Free(copy);
	Py_DECREF(it);
	return out;
}

#define COUNTING(fn, name, alone)                                                                  \
	static PyObject *fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,               \
			    PyObject *kwnames)                                                     \
	{                                                                                          \
		return counting_call(self, name, args, nargs, kwnames, alone);                     \
	}
COUNTING(s_sum, "sum", false)
COUNTING(s_any, "any", false)
COUNTING(s_all, "all", false)
COUNTING(s_sorted, "sorted", false)
COUNTING(s_min, "min", true)
COUNTING(s_max, "max", true)

/* iter(x) and iter(callable, sentinel): the second calls in C until the
 * sentinel comes, forever if it never does. */
static PyObject *s_iter(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	struct sb_eval_state *s;
	PyObject *real, *inner, *out;

	if (!r || nargs_between("iter", nargs, 1, 2) < 0 || !(s = sb_eval_state_for(r)))
		return NULL;
	real = PyDict_GetItemString(sb_eval_builtins_dict(), "iter");
	inner = real ? PyObject_Vectorcall(real, args, (size_t)nargs, NULL) : NULL;
	if (!inner)
		return NULL;
	out = sb_eval_iter_new(s, inner);
	Py_DECREF(inner);
	return out;
}

static sb_eval_runner runner;

void sb_eval_shims_plug(sb_eval_runner run)
{
	runner = run;
}

static PyObject *s_eval(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
	struct sb_eval_rules *r = rules_of(self);

	return r ? runner(r, SB_EVAL_BUILTIN_EVAL, args, nargs, kw) : NULL;
}

static PyObject *s_exec(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
	struct sb_eval_rules *r = rules_of(self);

	return r ? runner(r, SB_EVAL_BUILTIN_EXEC, args, nargs, kw) : NULL;
}

static PyObject *s_compile(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
	struct sb_eval_rules *r = rules_of(self);

	return r ? runner(r, SB_EVAL_BUILTIN_COMPILE, args, nargs, kw) : NULL;
}

/* __import__(name, globals, locals, fromlist, level): what an import
 * statement of evaluated code calls. */
static PyObject *s_import(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
	struct sb_eval_rules *r = rules_of(self);
	PyObject *name = nargs > 0 ? args[0] : NULL, *level = nargs > 4 ? args[4] : NULL;
	PyObject *real, *module, *fromlist, *out;

	if (!r)
		return NULL;
	if (!name || !PyUnicode_Check(name)) {
		PyErr_SetString(PyExc_TypeError, "__import__() argument 1 must be str");
		return NULL;
	}
	if (level && PyLong_Check(level) && PyLong_AsLong(level) != 0)
		return refused(self, "a relative import", "evaluated code has no package");
	if (!sb_eval_names_allows(&r->import, name)) {
		const char *s = PyUnicode_AsUTF8(name);

		if (!s)
			return NULL;
		if (!sb_eval_current || !sb_eval_current->learning) {
			sb_eval_deny(r, s, SB_EVAL_IMPORT, NULL);
			return NULL;
		}
		sb_eval_record(r->name, SB_EVAL_LEARN_IMPORT, s);
	}
	/* The builtins module's own __import__: the guard's import rules
	 * apply to it as to any import of the program. */
	real = PyDict_GetItemString(sb_eval_builtins_dict(), "__import__");
	if (!real) {
		PyErr_SetString(PyExc_ImportError, "__import__ not found");
		return NULL;
	}
	module = PyObject_Vectorcall(real, args, (size_t)nargs, kw);
	fromlist = nargs > 3 ? args[3] : NULL;
	for (Py_ssize_t k = 0; kw && k < PyTuple_GET_SIZE(kw); k++)
		if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kw, k), "fromlist") == 0)
			fromlist = args[nargs + k];
	/* `from operator import attrgetter` reads the module's attributes in
	 * C (IMPORT_FROM): what it binds is guarded as `operator.attrgetter`
	 * would be. */
	if (!module || !fromlist)
		return module;
	switch (PyObject_IsTrue(fromlist)) {
	case 0:
		return module;
	case 1:
		break;
	default:
		Py_DECREF(module);
		return NULL;
	}
	out = sb_eval_callable_from_import(r, module, fromlist);
	Py_DECREF(module);
	return out;
}

#define FAST(name, fn)                                                                             \
	{                                                                                          \
		name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL,                              \
		    "A builtin guarded by the eval guard."                                         \
	}
#define FASTKW(name, fn)                                                                           \
	{                                                                                          \
		name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL | METH_KEYWORDS,              \
		    "A builtin guarded by the eval guard."                                         \
	}

static PyMethodDef shims[] = {
    FAST("getattr", s_getattr),
    FAST("hasattr", s_hasattr),
    FAST("vars", s_vars),
    FAST("setattr", s_setattr),
    FAST("delattr", s_delattr),
    FAST("globals", s_globals),
    FAST("breakpoint", s_breakpoint),
    FAST("type", s_type),
    FAST("dir", s_dir),
    FAST("locals", s_locals),
    FAST("format", s_format),
    FAST("range", s_range),
    FAST("pow", s_pow),
    FAST("divmod", s_divmod),
    FASTKW("round", s_round),
    FASTKW("eval", s_eval),
    FASTKW("exec", s_exec),
    FASTKW("compile", s_compile),
    FASTKW("__import__", s_import),
    FASTKW("sum", s_sum),
    FASTKW("any", s_any),
    FASTKW("all", s_all),
    FASTKW("sorted", s_sorted),
    FASTKW("min", s_min),
    FASTKW("max", s_max),
    FAST("iter", s_iter),
};

PyObject *sb_eval_shim(struct sb_eval_rules *r, const char *name)
{
	PyObject *f;

	if (!r->shims) {
		PyObject *made = PyDict_New();

		if (!made)
			return NULL;
		for (size_t i = 0; i < ELEMENTSOF(shims); i++) {
			PyObject *fn = PyCFunction_NewEx(&shims[i], r->handle, NULL);
			int e = fn ? PyDict_SetItemString(made, shims[i].ml_name, fn) : -1;

			Py_XDECREF(fn);
			if (e < 0) {
				Py_DECREF(made);
				return NULL;
			}
		}
		r->shims = made;
	}
	f = PyDict_GetItemString(r->shims, name); /* borrowed */
	return f;
}
