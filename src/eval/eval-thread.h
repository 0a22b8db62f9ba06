/* SPDX-License-Identifier: MIT */
#pragma once

/* Evaluation threads (spec section 5): code that calls something runs on a
 * thread of its own while its caller waits at most until the evaluation's
 * deadline. A call that blocks in C (a sleep, a read) then costs the caller
 * its timeout, not its life: the caller gets EvalInterrupted and goes on,
 * and the thread, told to stop at its next check, is counted as leaked until
 * it does; eval-max-leaked-threads bounds how many are tolerated before new
 * evaluations are refused. The threads are C threads kept in a pool: no
 * Python object (threading.enumerate()) refers to them. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "eval-state.h"

/* The work a thread runs, GIL held: run() gives the result or NULL with an
 * exception; release() frees the work when nobody waits for it any more. */
struct sb_eval_work {
	PyObject *(*run)(struct sb_eval_work *w);
	void (*release)(struct sb_eval_work *w);
};

/* Runs w on an evaluation thread under s (in a copy of the caller's context
 * variables) and waits for it until s's deadline. The result (new
 * reference), or NULL with its exception: EvalInterrupted when the deadline
 * passed first; RuleEvalPermissionError when eval-max-leaked-threads threads
 * are still running or no thread could be started. w is released either
 * way. */
PyObject *sb_eval_thread_run(struct sb_eval_state *s, struct sb_eval_work *w);

/* Evaluation threads still running past their deadline. */
unsigned sb_eval_thread_leaked(void);
