/* SPDX-License-Identifier: MIT */
#include "eval-code.h"

#include "util.h"

/* Open addressing over code object addresses, at most half full; an entry
 * leaves when its code object dies (a weak reference's callback), so an
 * address is never mistaken for a later object's. Only touched with the GIL
 * held. */
struct entry {
	PyObject *code; /* borrowed: the key; NULL for an empty slot */
	PyObject *weakref;
	struct sb_eval_code_info info;
};

static struct {
	struct entry *slots;
	size_t cap, n;
} codes;

/* A cache holds at most this many verdicts per profile and mode; when full
 * it starts again (a program evaluating ever new sources gains nothing from
 * keeping them). */
#define SB_EVAL_VERDICTS_MAX 512

static size_t slot_of(const void *p, size_t cap)
{
	uintptr_t h = (uintptr_t)p;

	h ^= h >> 17;
	h *= 0x9E3779B97F4A7C15u;
	return (size_t)(h >> 7) & (cap - 1);
}

static struct entry *find_slot(PyObject *code)
{
	if (!codes.cap)
		return NULL;
	for (size_t i = slot_of(code, codes.cap);; i = (i + 1) & (codes.cap - 1)) {
		if (codes.slots[i].code == code)
			return &codes.slots[i];
		if (!codes.slots[i].code)
			return NULL;
	}
}

/* Backward-shift deletion: no tombstones, lookups stay short. */
static void remove_slot(struct entry *e)
{
	size_t i = (size_t)(e - codes.slots), j = i;

	codes.slots[i] = (struct entry){0};
	codes.n--;
	for (;;) {
		size_t home;

		j = (j + 1) & (codes.cap - 1);
		if (!codes.slots[j].code)
			return;
		home = slot_of(codes.slots[j].code, codes.cap);
		/* Move j back to i when its home is not in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			codes.slots[i] = codes.slots[j];
			codes.slots[j] = (struct entry){0};
			i = j;
		}
	}
}

static int grow(void)
{
	size_t cap = codes.cap ? codes.cap * 2 : 256;
	struct entry *old = codes.slots, *slots = calloc(cap, sizeof(*slots));
	size_t old_cap = codes.cap;

	if (!slots)
		return -1;
	codes.slots = slots;
	codes.cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		size_t k;

		if (!old[i].code)
			continue;
		for (k = slot_of(old[i].code, cap); slots[k].code; k = (k + 1) & (cap - 1))
			;
		slots[k] = old[i];
	}
	free(old);
	return 0;
}

static PyObject *code_gone(PyObject *key, PyObject *weakref _unused_)
{
	struct entry *e = find_slot(PyLong_AsVoidPtr(key));

	if (e) {
		PyObject *ref = e->weakref;

		remove_slot(e);
		Py_XDECREF(ref);
	}
	PyErr_Clear();
	Py_RETURN_NONE;
}

static PyMethodDef code_gone_def = {"code_gone", code_gone, METH_O, NULL};

static int register_one(PyObject *code, struct sb_eval_rules *r, unsigned flags)
{
	PyObject *key, *callback, *ref;
	struct entry *e = find_slot(code);
	size_t k;

	if (e) {
		e->info = (struct sb_eval_code_info){r, flags};
		return 0;
	}
	if (2 * (codes.n + 1) > codes.cap && grow() < 0) {
		PyErr_NoMemory();
		return -1;
	}
	key = PyLong_FromVoidPtr(code);
	callback = key ? PyCFunction_New(&code_gone_def, key) : NULL;
	Py_XDECREF(key);
	if (!callback)
		return -1;
	ref = PyWeakref_NewRef(code, callback);
	Py_DECREF(callback);
	if (!ref)
		return -1;
	for (k = slot_of(code, codes.cap); codes.slots[k].code; k = (k + 1) & (codes.cap - 1))
		;
	codes.slots[k] = (struct entry){code, ref, {r, flags}};
	codes.n++;
	return 0;
}

int sb_eval_code_register(PyObject *code, struct sb_eval_rules *r, unsigned flags)
{
	PyObject *consts;

	if (!PyCode_Check(code))
		return 0;
	if (register_one(code, r, flags) < 0)
		return -1;
	consts = ((PyCodeObject *)code)->co_consts;
	for (Py_ssize_t i = 0; consts && i < PyTuple_GET_SIZE(consts); i++)
		if (PyCode_Check(PyTuple_GET_ITEM(consts, i)) &&
		    sb_eval_code_register(PyTuple_GET_ITEM(consts, i), r, flags) < 0)
			return -1;
	return 0;
}

const struct sb_eval_code_info *sb_eval_code_find(PyObject *code)
{
	struct entry *e = find_slot(code);

	return e ? &e->info : NULL;
}

void sb_eval_code_release(void)
{
	free(codes.slots);
	memset(&codes, 0, sizeof(codes));
}

/* ---- verdicts ------------------------------------------------------------- */

static void verdict_dealloc(PyObject *self)
{
	struct sb_eval_verdict *v = (struct sb_eval_verdict *)self;

	Py_XDECREF(v->code);
	Py_XDECREF(v->rejection);
	PyObject_Free(self);
}

static PyTypeObject verdict_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pysandboxes.eval_verdict",
    .tp_basicsize = sizeof(struct sb_eval_verdict),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = verdict_dealloc,
};

struct sb_eval_verdict *sb_eval_verdict_lookup(struct sb_eval_rules *r, enum sb_eval_mode mode,
					       PyObject *key)
{
	PyObject *cache = r->verdicts[mode], *v;

	if (!cache || !key)
		return NULL;
	v = PyDict_GetItemWithError(cache, key); /* borrowed */
	if (!v)
		PyErr_Clear();
	return (struct sb_eval_verdict *)v;
}

struct sb_eval_verdict *sb_eval_verdict_store(struct sb_eval_rules *r, enum sb_eval_mode mode,
					      PyObject *key, PyObject *code, unsigned flags,
					      PyObject *rejection)
{
	struct sb_eval_verdict *v;

	if (PyType_Ready(&verdict_type) < 0)
		return NULL;
	v = PyObject_New(struct sb_eval_verdict, &verdict_type);
	if (!v)
		return NULL;
	v->code = Py_XNewRef(code);
	v->flags = flags;
	v->rejection = Py_XNewRef(rejection);
	if (!key)
		return v;
	if (!r->verdicts[mode] && !(r->verdicts[mode] = PyDict_New()))
		goto fail;
	if (PyDict_GET_SIZE(r->verdicts[mode]) >= SB_EVAL_VERDICTS_MAX)
		PyDict_Clear(r->verdicts[mode]);
	if (PyDict_SetItem(r->verdicts[mode], key, (PyObject *)v) < 0)
		goto fail;
	return v;
fail:
	Py_DECREF(v);
	return NULL;
}
