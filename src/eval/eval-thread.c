/* SPDX-License-Identifier: MIT */
#include "eval-thread.h"

#include <pthread.h>
#include <time.h>

#include "eval-errors.h"
#include "util.h"

/* The caller wakes up this often while it waits, to run the signal handlers
 * (Ctrl-C) of the main thread. */
#define SB_EVAL_WAIT_SLICE_NS 100000000ull

struct worker;

struct job {
	pthread_mutex_t lock;
	pthread_cond_t done_cond;
	bool done, abandoned;
	struct sb_eval_work *work;
	struct sb_eval_state *state; /* strong */
	PyObject *context;	     /* the caller's context variables, copied */
	PyObject *result, *exc_type, *exc_value, *exc_tb;
};

struct worker {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *job; /* posted, not picked up yet */
	unsigned long ident;
	bool busy; /* between a job's posting and the end of its run (GIL held) */
	struct worker *next;
};

/* Touched with the GIL held, but for each worker's job hand-over (its lock). */
static struct {
	struct worker *workers;
	unsigned leaked;
	PyInterpreterState *interp;
	bool atfork;
} pool;

unsigned sb_eval_thread_leaked(void)
{
	return pool.leaked;
}

static void job_free(struct job *j)
{
	/* GIL held. */
	Py_XDECREF(j->result);
	Py_XDECREF(j->exc_type);
	Py_XDECREF(j->exc_value);
	Py_XDECREF(j->exc_tb);
	Py_XDECREF(j->context);
	Py_XDECREF((PyObject *)j->state);
	if (j->work)
		j->work->release(j->work);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->done_cond);
	free(j);
}

static void run_job(struct worker *w, struct job *j)
{
	PyObject *result = NULL;
	bool abandoned;

	if (PyContext_Enter(j->context) == 0) {
		result = j->work->run(j->work);
		/* The context's own exit must not hide the run's exception. */
		{
			PyObject *t, *v, *tb;

			PyErr_Fetch(&t, &v, &tb);
			if (PyContext_Exit(j->context) < 0)
				PyErr_Clear();
			PyErr_Restore(t, v, tb);
		}
	}
	pthread_mutex_lock(&j->lock);
	abandoned = j->abandoned;
	if (!abandoned) {
		j->result = result;
		if (!result) {
			PyErr_Fetch(&j->exc_type, &j->exc_value, &j->exc_tb);
			PyErr_NormalizeException(&j->exc_type, &j->exc_value, &j->exc_tb);
			if (j->exc_value && j->exc_tb)
				PyException_SetTraceback(j->exc_value, j->exc_tb);
		}
		j->done = true;
		pthread_cond_signal(&j->done_cond);
	}
	pthread_mutex_unlock(&j->lock);
	if (abandoned) {
		/* Nobody waits: the caller had its EvalInterrupted. */
		Py_XDECREF(result);
		PyErr_Clear();
		job_free(j);
		pool.leaked--;
		/* The interruption sent to stop this run must not hit the next. */
		PyThreadState_SetAsyncExc(w->ident, NULL);
	}
	w->busy = false;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	PyThreadState *ts = PyThreadState_New(pool.interp);

	w->ident = PyThread_get_thread_ident();
	for (;;) {
		struct job *j;

		pthread_mutex_lock(&w->lock);
		while (!w->job)
			pthread_cond_wait(&w->cond, &w->lock);
		j = w->job;
		w->job = NULL;
		pthread_mutex_unlock(&w->lock);
		PyEval_RestoreThread(ts);
		run_job(w, j);
		PyEval_SaveThread();
	}
	return NULL;
}

/* A forked child has none of its parent's threads. */
static void forget_workers(void)
{
	pool.workers = NULL;
	pool.leaked = 0;
}

static struct worker *idle_worker(void)
{
	struct worker *w;
	pthread_attr_t attr;
	pthread_t thread;
	int r;

	for (w = pool.workers; w; w = w->next)
		if (!w->busy)
			return w;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (!pool.interp)
		pool.interp = PyInterpreterState_Get();
	if (!pool.atfork)
		pool.atfork = pthread_atfork(NULL, NULL, forget_workers) == 0;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&thread, &attr, worker_main, w);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		free(w);
		errno = r;
		return NULL;
	}
	w->next = pool.workers;
	pool.workers = w;
	return w;
}

static struct timespec abs_time(uint64_t ns)
{
	return (struct timespec){(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
}

/* Waits (without the GIL) until the job is done, the deadline passes or a
 * slice ends. */
static bool wait_slice(struct job *j, uint64_t deadline)
{
	uint64_t until = sb_monotonic_ns() + SB_EVAL_WAIT_SLICE_NS;
	struct timespec ts;
	bool done;

	if (until > deadline)
		until = deadline;
	ts = abs_time(until);
	Py_BEGIN_ALLOW_THREADS;
	pthread_mutex_lock(&j->lock);
	while (!j->done && pthread_cond_timedwait(&j->done_cond, &j->lock, &ts) == 0)
		;
	done = j->done;
	pthread_mutex_unlock(&j->lock);
	Py_END_ALLOW_THREADS;
	return done;
}

/* Leaves the job to its thread, told to stop: true when it finished first. */
static bool abandon(struct worker *w, struct job *j)
{
	bool done;

	pthread_mutex_lock(&j->lock);
	done = j->done;
	if (!done) {
		j->abandoned = true;
		pool.leaked++;
		/* Both at once: the flag stops it at its next check, the
		 * asynchronous exception at its next bytecode (a blocking call
		 * that returns). */
		sb_eval_state_interrupt(j->state, SB_EVAL_TIMEOUT);
		PyThreadState_SetAsyncExc(w->ident, sb_eval_interrupted_class());
	}
	pthread_mutex_unlock(&j->lock);
	return done;
}

static PyObject *collect(struct job *j)
{
	PyObject *result = TAKE_PTR(j->result);

	if (!result) {
		PyErr_Restore(j->exc_type, j->exc_value, j->exc_tb);
		j->exc_type = j->exc_value = j->exc_tb = NULL;
	}
	job_free(j);
	return result;
}

PyObject *sb_eval_thread_run(struct sb_eval_state *s, struct sb_eval_work *work)
{
	struct sb_eval_rules *r = s->rules;
	struct worker *w;
	struct job *j;

	if (pool.leaked >= r->max_leaked_threads && pool.leaked > 0) {
		char why[96];

		work->release(work);
		snprintf(why, sizeof(why),
			 "%u evaluation thread%s still run%s past %s timeout, as many as",
			 pool.leaked, pool.leaked == 1 ? "" : "s", pool.leaked == 1 ? "s" : "",
			 pool.leaked == 1 ? "its" : "their");
		sb_eval_deny_budget(r, "a new evaluation", SB_EVAL_MAX_LEAKED_THREADS, why);
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	w = j ? idle_worker() : NULL;
	if (!w) {
		int e = errno;

		free(j);
		work->release(work);
		PyErr_Format(PyExc_RuntimeError,
			     "the eval guard cannot start an evaluation thread: %s",
			     strerror(j ? e : ENOMEM));
		return NULL;
	}
	pthread_mutex_init(&j->lock, NULL);
	{
		pthread_condattr_t attr;

		pthread_condattr_init(&attr);
		pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		pthread_cond_init(&j->done_cond, &attr);
		pthread_condattr_destroy(&attr);
	}
	j->work = work;
	j->state = (struct sb_eval_state *)Py_NewRef((PyObject *)s);
	j->context = PyContext_CopyCurrent();
	if (!j->context) {
		job_free(j);
		return NULL;
	}
	w->busy = true;
	pthread_mutex_lock(&w->lock);
	w->job = j;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);

	for (;;) {
		/* The state's deadline is on the coarse clock, the wait on the
		 * precise one: convert through the time left. */
		uint64_t coarse = sb_eval_now_ns();
		uint64_t left = s->deadline_ns > coarse ? s->deadline_ns - coarse : 0;

		if (wait_slice(j, sb_monotonic_ns() + left))
			return collect(j);
		if (sb_eval_now_ns() >= s->deadline_ns)
			break;
		if (PyErr_CheckSignals() < 0) {
			/* Ctrl-C: the caller stops waiting, and so does its thread. */
			PyObject *t, *v, *tb;

			PyErr_Fetch(&t, &v, &tb);
			if (abandon(w, j))
				Py_XDECREF(collect(j));
			PyErr_Clear();
			PyErr_Restore(t, v, tb);
			return NULL;
		}
	}
	if (abandon(w, j))
		return collect(j);
	return sb_eval_state_raise(s), NULL;
}
