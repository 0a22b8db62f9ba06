/* SPDX-License-Identifier: MIT */
#pragma once

/* The budgets of one evaluation while it runs: iterations, call depth, the
 * timeout, allocations. The helpers the rewrite injects charge the state of
 * the evaluation running on their thread; code an evaluation made and the
 * program runs later (a lambda passed as a sort key, a generator) charges a
 * per-thread "detached" state, renewed at each outermost call into it. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "eval-profile.h"

struct sb_eval_state {
	PyObject_HEAD struct sb_eval_rules *rules;
	struct sb_eval_state *parent; /* the enclosing evaluation on this thread */
	uint64_t serial;	      /* unique, for the allocator's records */
	atomic_bool interrupted;      /* sticky: every later check raises again */
	char reason[128];	      /* written before interrupted is set */
	bool active;		      /* running: the deadline applies */
	bool learning;		      /* run-time refusals are recorded, not raised */
	bool detached;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
	unsigned long long iterations, max_iterations;
	long long live_alloc; /* bytes allocated while it ran, still alive */
	unsigned long long max_alloc;
};

/* The evaluation running on this thread (innermost), or NULL. */
extern _Thread_local struct sb_eval_state *sb_eval_current;

/* A new state for rules (new reference), NULL with an exception. */
struct sb_eval_state *sb_eval_state_new(struct sb_eval_rules *r, bool learning);
/* Makes s the running evaluation of this thread: its deadline starts now,
 * bounded by the enclosing evaluation's, and so is its iteration budget. */
void sb_eval_state_push(struct sb_eval_state *s);
/* Ends it: the enclosing evaluation is charged its iterations. */
void sb_eval_state_pop(struct sb_eval_state *s);

/* The state a helper bound to rules charges (borrowed): the running
 * evaluation, else this thread's detached state (made when needed); NULL
 * with an exception. */
struct sb_eval_state *sb_eval_state_for(struct sb_eval_rules *r);

/* One loop or comprehension iteration: 0, or -1 with EvalInterrupted when a
 * budget is spent or the evaluation was interrupted. */
int sb_eval_state_tick(struct sb_eval_state *s);
/* Entry into a function of evaluated code: its depth among the evaluated
 * frames on the stack is checked against eval-max-call-depth (generators
 * and lambdas included), and it counts as an iteration. */
int sb_eval_state_enter_call(struct sb_eval_state *s);

/* Marks s interrupted because of budget key (safe from another thread with
 * the GIL held); the first reason stays. */
void sb_eval_state_interrupt(struct sb_eval_state *s, enum sb_eval_scalar_key key);
/* Raises EvalInterrupted with s's reason; -1. */
int sb_eval_state_raise(struct sb_eval_state *s);

uint64_t sb_eval_now_ns(void);
