/* SPDX-License-Identifier: MIT */
#include "eval-state.h"

#include <time.h>

#include "eval-code.h"
#include "eval-errors.h"
#include "util.h"

_Thread_local struct sb_eval_state *sb_eval_current;
/* Code an evaluation made, run later by the program on this thread. */
static _Thread_local struct sb_eval_state *detached;
static uint64_t next_serial = 1;

static void state_dealloc(PyObject *self)
{
	PyObject_Free(self);
}

/* No attribute, no method: an opaque object the helpers' iterators hold. */
static PyTypeObject state_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pysandboxes.eval_state",
    .tp_basicsize = sizeof(struct sb_eval_state),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = state_dealloc,
    .tp_doc = "The budgets of one guarded evaluation.",
};

uint64_t sb_eval_now_ns(void)
{
	struct timespec ts;

	/* The coarse clock reads the vDSO's last tick: a few nanoseconds, and
	 * a few milliseconds of resolution are plenty for a timeout. */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct sb_eval_state *sb_eval_state_new(struct sb_eval_rules *r, bool learning)
{
	struct sb_eval_state *s;

	if (PyType_Ready(&state_type) < 0)
		return NULL;
	s = PyObject_New(struct sb_eval_state, &state_type);
	if (!s)
		return NULL;
	s->rules = r;
	s->parent = NULL;
	s->serial = next_serial++;
	atomic_init(&s->interrupted, false);
	s->reason[0] = '\0';
	s->active = false;
	s->learning = learning;
	s->detached = false;
	s->deadline_ns = sb_eval_now_ns() + r->timeout_ms * 1000000u;
	s->iterations = 0;
	s->max_iterations = r->max_iterations;
	s->live_alloc = 0;
	s->max_alloc = r->max_alloc;
	return s;
}

/* CPython (3.11+) bounds int <-> str conversions of other bases than
 * powers of two, quadratic in C, at sys.int_max_str_digits (4300 by
 * default): str(10 ** 10**6) would hold the interpreter for seconds. The
 * program may have lifted it (sys.set_int_max_str_digits(0), -X
 * int_max_str_digits); while an evaluation runs it is the default again.
 * Counted: evaluations nest and leaked threads run on. */
#define SB_EVAL_INT_MAX_STR_DIGITS 4300
static unsigned pinned;
static long pinned_saved = -1;

static long int_digits_get(void)
{
	PyObject *get = PySys_GetObject("get_int_max_str_digits"); /* borrowed */
	PyObject *v = get ? PyObject_CallNoArgs(get) : NULL;
	long n = v && PyLong_Check(v) ? PyLong_AsLong(v) : -1;

	Py_XDECREF(v);
	PyErr_Clear();
	return n;
}

static void int_digits_set(long n)
{
	PyObject *set = PySys_GetObject("set_int_max_str_digits"); /* borrowed */
	PyObject *v = set ? PyObject_CallFunction(set, "l", n) : NULL;

	Py_XDECREF(v);
	PyErr_Clear();
}

static void int_digits_pin(void)
{
	PyObject *type, *value, *tb;
	long n;

	if (pinned++ > 0)
		return;
	PyErr_Fetch(&type, &value, &tb);
	n = int_digits_get();
	pinned_saved = -1;
	if (n == 0 || n > SB_EVAL_INT_MAX_STR_DIGITS) {
		pinned_saved = n;
		int_digits_set(SB_EVAL_INT_MAX_STR_DIGITS);
	}
	PyErr_Restore(type, value, tb);
}

static void int_digits_unpin(void)
{
	PyObject *type, *value, *tb;

	if (pinned == 0 || --pinned > 0)
		return;
	/* The evaluation may end with its exception set: kept. */
	PyErr_Fetch(&type, &value, &tb);
	if (pinned_saved >= 0)
		int_digits_set(pinned_saved);
	pinned_saved = -1;
	PyErr_Restore(type, value, tb);
}

void sb_eval_state_push(struct sb_eval_state *s)
{
	struct sb_eval_state *parent = sb_eval_current;

	s->deadline_ns = sb_eval_now_ns() + s->rules->timeout_ms * 1000000u;
	if (parent) {
		unsigned long long left = parent->max_iterations > parent->iterations
					      ? parent->max_iterations - parent->iterations
					      : 0;

		if (parent->deadline_ns < s->deadline_ns)
			s->deadline_ns = parent->deadline_ns;
		if (left < s->max_iterations)
			s->max_iterations = left;
	}
	s->parent = parent;
	s->active = true;
	sb_eval_current = s;
	int_digits_pin();
}

void sb_eval_state_pop(struct sb_eval_state *s)
{
	int_digits_unpin();
	sb_eval_current = s->parent;
	if (s->parent)
		s->parent->iterations += s->iterations;
	s->parent = NULL;
	s->active = false;
}

struct sb_eval_state *sb_eval_state_for(struct sb_eval_rules *r)
{
	if (sb_eval_current)
		return sb_eval_current;
	if (!detached || detached->rules != r) {
		struct sb_eval_state *s = sb_eval_state_new(r, false);

		if (!s)
			return NULL;
		s->detached = true;
		s->active = true;
		Py_XSETREF(detached, s);
	}
	return detached;
}

/* A detached state starts afresh at each outermost call into evaluated code:
 * every call the program makes gets the whole budget. */
static void detached_renew(struct sb_eval_state *s)
{
	atomic_store(&s->interrupted, false);
	s->reason[0] = '\0';
	s->iterations = 0;
	s->deadline_ns = sb_eval_now_ns() + s->rules->timeout_ms * 1000000u;
}

void sb_eval_state_interrupt(struct sb_eval_state *s, enum sb_eval_scalar_key key)
{
	if (atomic_load(&s->interrupted))
		return;
	sb_eval_budget_text(s->rules, key, s->reason, sizeof(s->reason));
	atomic_store(&s->interrupted, true);
}

int sb_eval_state_raise(struct sb_eval_state *s)
{
	return sb_eval_raise_interrupted(s->reason[0] ? s->reason : "interrupted");
}

int sb_eval_state_tick(struct sb_eval_state *s)
{
	if (atomic_load_explicit(&s->interrupted, memory_order_acquire))
		return sb_eval_state_raise(s);
	if (++s->iterations > s->max_iterations) {
		sb_eval_state_interrupt(s, SB_EVAL_MAX_ITERATIONS);
		return sb_eval_state_raise(s);
	}
	if (s->active && sb_eval_now_ns() > s->deadline_ns) {
		sb_eval_state_interrupt(s, SB_EVAL_TIMEOUT);
		return sb_eval_state_raise(s);
	}
	return 0;
}

/* Function frames count; the evaluation's own module frame and the frames
 * of comprehensions (an implementation detail of 3.11) do not. */
static bool counts_as_call(PyCodeObject *code)
{
	static const char *const hidden[] = {"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"};

	if (!(code->co_flags & CO_OPTIMIZED))
		return false;
	for (size_t i = 0; i < ELEMENTSOF(hidden); i++)
		if (PyUnicode_CompareWithASCIIString(code->co_name, hidden[i]) == 0)
			return false;
	return true;
}

/* How many calls of evaluated code are on the stack, from the innermost
 * frame down to the first frame that is not evaluated code, stopping past
 * limit. Frames reached through a C function (map, sorted) chain as well:
 * a recursion through C is still seen. */
static unsigned long long evaluated_depth(unsigned long long limit)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	unsigned long long depth = 0;

	Py_XINCREF(frame);
	while (frame && depth <= limit) {
		PyCodeObject *code = PyFrame_GetCode(frame);
		PyFrameObject *back;
		bool ours = sb_eval_code_find((PyObject *)code) != NULL;

		if (ours && counts_as_call(code))
			depth++;
		Py_DECREF(code);
		if (!ours)
			break;
		back = PyFrame_GetBack(frame);
		Py_DECREF(frame);
		frame = back;
	}
	Py_XDECREF(frame);
	return depth;
}

int sb_eval_state_enter_call(struct sb_eval_state *s)
{
	unsigned long long limit = s->rules->max_call_depth, depth = evaluated_depth(limit);

	if (s->detached && depth <= 1)
		detached_renew(s);
	if (depth > limit) {
		sb_eval_state_interrupt(s, SB_EVAL_MAX_CALL_DEPTH);
		return sb_eval_state_raise(s);
	}
	return sb_eval_state_tick(s);
}
