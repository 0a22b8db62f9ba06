/* SPDX-License-Identifier: MIT */
#include "eval-iter.h"

#include "util.h"

/* A range with at most this many items is handed out as a plain range: C
 * runs through it in well under a millisecond, between two checks. */
#define SB_EVAL_RANGE_PLAIN_MAX 10000

typedef struct {
	PyObject_HEAD PyObject *inner;
	struct sb_eval_state *state;
} counting_iter;

static int iter_traverse(PyObject *self, visitproc visit, void *arg)
{
	counting_iter *it = (counting_iter *)self;

	Py_VISIT(it->inner);
	return 0;
}

static int iter_clear(PyObject *self)
{
	counting_iter *it = (counting_iter *)self;

	Py_CLEAR(it->inner);
	return 0;
}

static void iter_dealloc(PyObject *self)
{
	counting_iter *it = (counting_iter *)self;

	PyObject_GC_UnTrack(self);
	Py_CLEAR(it->inner);
	Py_CLEAR(it->state);
	PyObject_GC_Del(self);
}

static PyObject *iter_next(PyObject *self)
{
	counting_iter *it = (counting_iter *)self;

	if (!it->inner)
		return NULL;
	if (sb_eval_state_tick(it->state) < 0)
		return NULL;
	return Py_TYPE(it->inner)->tp_iternext(it->inner);
}

static PyTypeObject iter_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pysandboxes.counting_iterator",
    .tp_basicsize = sizeof(counting_iter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = iter_traverse,
    .tp_clear = iter_clear,
    .tp_dealloc = iter_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = iter_next,
    .tp_doc = "An iterator whose items are charged to an evaluation's budget.",
};

PyObject *sb_eval_iter_new(struct sb_eval_state *s, PyObject *iterable)
{
	PyObject *inner;
	counting_iter *it;

	if (PyType_Ready(&iter_type) < 0)
		return NULL;
	if (Py_TYPE(iterable) == &iter_type && ((counting_iter *)iterable)->state == s)
		return Py_NewRef(iterable);
	inner = PyObject_GetIter(iterable);
	if (!inner)
		return NULL;
	it = PyObject_GC_New(counting_iter, &iter_type);
	if (!it) {
		Py_DECREF(inner);
		return NULL;
	}
	it->inner = inner;
	it->state = (struct sb_eval_state *)Py_NewRef((PyObject *)s);
	PyObject_GC_Track(it);
	return (PyObject *)it;
}

/* ---- range ------------------------------------------------------------------ */

typedef struct {
	PyObject_HEAD PyObject *range;
	struct sb_eval_state *state;
} counting_range;

static PyTypeObject range_type;

static void range_dealloc(PyObject *self)
{
	counting_range *r = (counting_range *)self;

	Py_CLEAR(r->range);
	Py_CLEAR(r->state);
	PyObject_Free(self);
}

static PyObject *wrap_range(struct sb_eval_state *s, PyObject *range)
{
	Py_ssize_t n = PyObject_Size(range);
	counting_range *r;

	/* An overflowing length means a very long range. */
	if (n < 0)
		PyErr_Clear();
	if (n >= 0 && n <= SB_EVAL_RANGE_PLAIN_MAX)
		return range;
	r = PyObject_New(counting_range, &range_type);
	if (!r) {
		Py_DECREF(range);
		return NULL;
	}
	r->range = range;
	r->state = (struct sb_eval_state *)Py_NewRef((PyObject *)s);
	return (PyObject *)r;
}

static PyObject *range_iter(PyObject *self)
{
	counting_range *r = (counting_range *)self;

	return sb_eval_iter_new(r->state, r->range);
}

static PyObject *range_reversed(PyObject *self, PyObject *unused _unused_)
{
	counting_range *r = (counting_range *)self;
	PyObject *rev = PyObject_CallMethod(r->range, "__reversed__", NULL), *it;

	if (!rev)
		return NULL;
	it = sb_eval_iter_new(r->state, rev);
	Py_DECREF(rev);
	return it;
}

static Py_ssize_t range_length(PyObject *self)
{
	return PyObject_Size(((counting_range *)self)->range);
}

static PyObject *range_subscript(PyObject *self, PyObject *key)
{
	counting_range *r = (counting_range *)self;
	PyObject *item = PyObject_GetItem(r->range, key);

	/* A slice of a range is a range: it counts too. */
	if (item && PyRange_Check(item))
		return wrap_range(r->state, item);
	return item;
}

static int range_contains(PyObject *self, PyObject *value)
{
	return PySequence_Contains(((counting_range *)self)->range, value);
}

static PyObject *range_repr(PyObject *self)
{
	return PyObject_Repr(((counting_range *)self)->range);
}

static Py_hash_t range_hash(PyObject *self)
{
	return PyObject_Hash(((counting_range *)self)->range);
}

static PyObject *range_richcompare(PyObject *self, PyObject *other, int op)
{
	PyObject *o = Py_TYPE(other) == &range_type ? ((counting_range *)other)->range : other;

	return PyObject_RichCompare(((counting_range *)self)->range, o, op);
}

static int range_bool(PyObject *self)
{
	return PyObject_IsTrue(((counting_range *)self)->range);
}

/* The range's own attributes; nothing else of the inner range. */
static PyObject *range_getattro(PyObject *self, PyObject *name)
{
	static const char *const forwarded[] = {"start", "stop", "step", "count", "index"};

	for (size_t i = 0; i < ELEMENTSOF(forwarded); i++)
		if (PyUnicode_CompareWithASCIIString(name, forwarded[i]) == 0)
			return PyObject_GetAttr(((counting_range *)self)->range, name);
	return PyObject_GenericGetAttr(self, name);
}

static PySequenceMethods range_as_sequence = {
    .sq_length = range_length,
    .sq_contains = range_contains,
};

static PyMappingMethods range_as_mapping = {
    .mp_length = range_length,
    .mp_subscript = range_subscript,
};

static PyNumberMethods range_as_number = {
    .nb_bool = range_bool,
};

static PyMethodDef range_methods[] = {
    {"__reversed__", range_reversed, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject range_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "range",
    .tp_basicsize = sizeof(counting_range),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = range_dealloc,
    .tp_repr = range_repr,
    .tp_hash = range_hash,
    .tp_richcompare = range_richcompare,
    .tp_iter = range_iter,
    .tp_getattro = range_getattro,
    .tp_as_sequence = &range_as_sequence,
    .tp_as_mapping = &range_as_mapping,
    .tp_as_number = &range_as_number,
    .tp_methods = range_methods,
    .tp_doc = "range(), whose iterations are charged to an evaluation's budget.",
};

PyObject *sb_eval_range_new(struct sb_eval_state *s, PyObject *args)
{
	PyObject *range;

	if (PyType_Ready(&range_type) < 0)
		return NULL;
	range = PyObject_Call((PyObject *)&PyRange_Type, args, NULL);
	if (!range)
		return NULL;
	return wrap_range(s, range);
}
