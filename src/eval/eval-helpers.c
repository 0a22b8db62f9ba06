/* SPDX-License-Identifier: MIT */
/* The helpers the rewrite injects (eval-rewrite.c), each a C function bound
 * to its profile. */
#include "eval-helpers.h"

#include "eval-callables.h"
#include "eval-errors.h"
#include "eval-format.h"
#include "eval-iter.h"
#include "eval-ops.h"
#include "eval-state.h"
#include "util.h"

static struct sb_eval_rules *rules_of(PyObject *self)
{
	struct sb_eval_rules *r = sb_eval_rules_of(self);

	if (!r)
		PyErr_SetString(PyExc_SystemError, "an eval guard helper without its profile");
	return r;
}

static int arity(const char *name, Py_ssize_t nargs, Py_ssize_t n)
{
	if (nargs == n)
		return 0;
	PyErr_Format(PyExc_TypeError, "%s expects %zd arguments", name, n);
	return -1;
}

static PyObject *h_getattr(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);

	if (!r || arity(SB_EVAL_H_GETATTR, nargs, 2) < 0)
		return NULL;
	return sb_eval_getattr(r, args[0], args[1]);
}

static int op_arg(PyObject *o)
{
	long op = PyLong_Check(o) ? PyLong_AsLong(o) : -1;

	if (op < 0 || op >= SB_EVAL_OP__N) {
		PyErr_SetString(PyExc_SystemError, "an eval guard helper with an unknown operator");
		return -1;
	}
	return (int)op;
}

static PyObject *h_binop(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	struct sb_eval_state *s;
	int op;

	if (!r || arity(SB_EVAL_H_BINOP, nargs, 3) < 0 || (op = op_arg(args[0])) < 0)
		return NULL;
	s = sb_eval_state_for(r);
	if (!s || sb_eval_op_check(s, (enum sb_eval_op)op, args[1], args[2]) < 0)
		return NULL;
	return sb_eval_op_apply((enum sb_eval_op)op, args[1], args[2]);
}

/* target op= value: the check of target op value, then value for the
 * statement's own in-place operation. */
static PyObject *h_aug(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	struct sb_eval_state *s;
	int op;

	if (!r || arity(SB_EVAL_H_AUG, nargs, 3) < 0 || (op = op_arg(args[0])) < 0)
		return NULL;
	s = sb_eval_state_for(r);
	if (!s || sb_eval_op_check(s, (enum sb_eval_op)op, args[1], args[2]) < 0)
		return NULL;
	return Py_NewRef(args[2]);
}

static PyObject *h_iter(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	struct sb_eval_state *s;

	if (!r || arity(SB_EVAL_H_ITER, nargs, 1) < 0 || !(s = sb_eval_state_for(r)))
		return NULL;
	return sb_eval_iter_new(s, args[0]);
}

static PyObject *h_tick(PyObject *self, PyObject *const *args _unused_, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	struct sb_eval_state *s;

	if (!r || arity(SB_EVAL_H_TICK, nargs, 0) < 0 || !(s = sb_eval_state_for(r)))
		return NULL;
	if (sb_eval_state_tick(s) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *h_enter(PyObject *self, PyObject *const *args _unused_, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	struct sb_eval_state *s;

	if (!r || arity(SB_EVAL_H_ENTER, nargs, 0) < 0 || !(s = sb_eval_state_for(r)))
		return NULL;
	if (sb_eval_state_enter_call(s) < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* Every direct subclass of BaseException but EvalInterrupted: what a bare
 * `except:` or `except BaseException:` of evaluated code catches. */
static PyObject *catchable(PyObject *interrupted)
{
	PyObject *subclasses = PyObject_CallMethod(PyExc_BaseException, "__subclasses__", NULL);
	PyObject *out = NULL, *list = PyList_New(0);

	if (!subclasses || !list || !PyList_Check(subclasses))
		goto out;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(subclasses); i++) {
		PyObject *c = PyList_GET_ITEM(subclasses, i);

		if (c != interrupted && PyList_Append(list, c) < 0)
			goto out;
	}
	out = PyList_AsTuple(list);
out:
	Py_XDECREF(subclasses);
	Py_XDECREF(list);
	return out;
}

/* The types an except clause may catch, EvalInterrupted taken out: the
 * budgets' interruption cannot be swallowed by the code it stops. */
static PyObject *catch_filter(PyObject *types, PyObject *interrupted, int depth)
{
	if (types == Py_None)
		return catchable(interrupted);
	if (PyTuple_Check(types) && depth < 8) {
		PyObject *list = PyList_New(0), *out;

		if (!list)
			return NULL;
		for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(types); i++) {
			PyObject *f =
			    catch_filter(PyTuple_GET_ITEM(types, i), interrupted, depth + 1);
			int e;

			if (!f) {
				Py_DECREF(list);
				return NULL;
			}
			if (PyTuple_Check(f)) {
				e = PyList_SetSlice(list, PyList_GET_SIZE(list),
						    PyList_GET_SIZE(list), f);
			} else {
				e = PyList_Append(list, f);
			}
			Py_DECREF(f);
			if (e < 0) {
				Py_DECREF(list);
				return NULL;
			}
		}
		out = PyList_AsTuple(list);
		Py_DECREF(list);
		return out;
	}
	if (PyType_Check(types) &&
	    PyType_IsSubtype((PyTypeObject *)interrupted, (PyTypeObject *)types)) {
		if (types == interrupted)
			return PyTuple_New(0);
		return catchable(interrupted);
	}
	return Py_NewRef(types);
}

static PyObject *h_catch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *interrupted;

	if (!rules_of(self) || arity(SB_EVAL_H_CATCH, nargs, 1) < 0)
		return NULL;
	interrupted = sb_eval_interrupted_class();
	if (!interrupted)
		return NULL;
	return catch_filter(args[0], interrupted, 0);
}

static PyObject *h_format(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct sb_eval_rules *r = rules_of(self);
	struct sb_eval_state *s;

	if (!r || arity(SB_EVAL_H_FORMAT, nargs, 3) < 0 || !(s = sb_eval_state_for(r)))
		return NULL;
	return sb_eval_format_field(s, args[0], args[1], args[2]);
}

#define HELPER(name, fn)                                                                           \
	{                                                                                          \
		name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL,                              \
		    "A helper of the eval guard."                                                  \
	}

static PyMethodDef helpers[] = {
    HELPER(SB_EVAL_H_GETATTR, h_getattr), HELPER(SB_EVAL_H_BINOP, h_binop),
    HELPER(SB_EVAL_H_AUG, h_aug),	  HELPER(SB_EVAL_H_ITER, h_iter),
    HELPER(SB_EVAL_H_TICK, h_tick),	  HELPER(SB_EVAL_H_ENTER, h_enter),
    HELPER(SB_EVAL_H_CATCH, h_catch),	  HELPER(SB_EVAL_H_FORMAT, h_format),
};

int sb_eval_helpers_add(struct sb_eval_rules *r, PyObject *dict)
{
	if (!r->helpers) {
		PyObject *made = PyDict_New();

		if (!made)
			return -1;
		for (size_t i = 0; i < ELEMENTSOF(helpers); i++) {
			PyObject *f = PyCFunction_NewEx(&helpers[i], r->handle, NULL);
			int e = f ? PyDict_SetItemString(made, helpers[i].ml_name, f) : -1;

			Py_XDECREF(f);
			if (e < 0) {
				Py_DECREF(made);
				return -1;
			}
		}
		r->helpers = made;
	}
	return PyDict_Update(dict, r->helpers);
}
