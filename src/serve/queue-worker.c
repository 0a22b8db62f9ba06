/* SPDX-License-Identifier: MIT */
/* queue-worker.h. A thread keeps one connection; when it breaks, the thread
 * reconnects with back-off. A result that cannot be written (Redis down) is
 * retried until it is, or until the worker stops: then the job stays pending
 * and another worker runs it again after the visibility timeout. */
#include "queue-worker.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "queue-job.h"
#include "run-reply.h"
#include "util.h"

#define CONNECT_MS 1000
#define COMMAND_MS 5000
/* XREADGROUP's block: how soon a thread sees the stop. */
#define READ_BLOCK_MS 1000

struct sb_queue_worker {
	struct sb_queue_worker_config cfg;
	atomic_bool stopping;
	atomic_bool down;	 /* the last attempt to reach Redis failed (logged once) */
	atomic_bool runner_down; /* the runner cannot run programs (logged once) */
	pthread_t *threads;
	unsigned n_threads;
	char host[64];
};

struct thread_state {
	struct sb_queue_worker *w;
	unsigned index;
	char consumer[128];
	struct sb_queue_conn *conn;
	struct sb_queue_backoff backoff;
	uint64_t next_claim_ns;
	uint64_t next_forget_ns;
};

static void event(struct sb_queue_worker *w, const char *fmt, ...) _printf_(2, 3);
static void event(struct sb_queue_worker *w, const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;
	int n;

	if (!w->cfg.event)
		return;
	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n >= 0)
		w->cfg.event(w->cfg.event_data, msg);
	else
		msg = NULL;
}

/* Sleeps up to ms, sooner when the worker stops. */
static void pause_ms(struct sb_queue_worker *w, unsigned ms)
{
	for (unsigned slept = 0; slept < ms && !atomic_load(&w->stopping); slept += 50) {
		struct timespec ts = {.tv_nsec = 50 * 1000000L};

		nanosleep(&ts, NULL);
	}
}

static void drop_conn(struct thread_state *t)
{
	sb_queue_disconnect(t->conn);
	t->conn = NULL;
}

/* A command failed: a broken connection is dropped (the next round makes a
 * new one), a refusal logged. */
static void failed(struct thread_state *t, const char *what, const char *err)
{
	struct sb_queue_worker *w = t->w;

	if (t->conn && sb_queue_conn_broken(t->conn)) {
		drop_conn(t);
		if (!atomic_exchange(&w->down, true))
			event(w, "queue %s: %s failed: %s (reconnecting with back-off)",
			      w->cfg.addr->display, what, err ? err : "?");
	} else {
		event(w, "queue %s: %s failed: %s", w->cfg.addr->display, what, err ? err : "?");
	}
}

static int ensure_conn(struct thread_state *t)
{
	struct sb_queue_worker *w = t->w;
	_cleanup_free_ char *err = NULL;
	int r;

	if (t->conn)
		return 0;
	r = sb_queue_connect(w->cfg.addr, CONNECT_MS, COMMAND_MS, &t->conn, &err);
	if (r >= 0) {
		r = sb_queue_ensure_group(t->conn, w->cfg.addr->stream, &err);
		if (r < 0)
			drop_conn(t);
	}
	if (r < 0) {
		if (!atomic_exchange(&w->down, true))
			event(w, "queue %s unreachable: %s (retrying with back-off)",
			      w->cfg.addr->display, err ? err : strerror(-r));
		pause_ms(w, sb_queue_backoff_next(&t->backoff));
		return r;
	}
	sb_queue_backoff_reset(&t->backoff);
	if (atomic_exchange(&w->down, false))
		event(w, "queue %s reachable again", w->cfg.addr->display);
	return 0;
}

/* Writes the job's result, through Redis outages, unless the worker stops
 * first (the job then stays pending: another worker takes it). */
static void complete(struct thread_state *t, const struct sb_queue_entry *e, const char *id,
		     unsigned status, json_t *body, const char *stat)
{
	struct sb_queue_worker *w = t->w;
	_cleanup_free_ char *result = NULL;

	if (!body || sb_queue_result_encode(status, body, &result) < 0) {
		event(w, "job %s: out of memory for its result (left pending)", id);
		return;
	}
	for (;;) {
		_cleanup_free_ char *err = NULL;
		int r = ensure_conn(t);

		if (r >= 0) {
			r = sb_queue_complete(t->conn, w->cfg.addr->stream, e->entry_id, id, result,
					      w->cfg.result_ttl_s, stat, &err);
			if (r >= 0)
				return;
			failed(t, "writing a result", err);
			if (t->conn)
				return; /* refused by Redis: no retry would do better */
		}
		if (atomic_load(&w->stopping)) {
			event(w,
			      "job %s: stopping with Redis unreachable: its result is not "
			      "written; the job stays pending for another worker",
			      id);
			return;
		}
	}
}

static void process(struct thread_state *t, struct sb_queue_entry *e)
{
	struct sb_queue_worker *w = t->w;
	struct sb_run_spec spec = {0};
	struct sb_run_result res = {0};
	struct sb_request_error rerr = {0};
	_cleanup_free_ char *id = NULL, *err = NULL;
	unsigned status;
	json_t *body;
	int r;

	if (!e->job) {
		/* An entry without its job (deleted meanwhile): nothing to answer. */
		if (sb_queue_drop(t->conn, w->cfg.addr->stream, e->entry_id, &err) < 0)
			failed(t, "dropping an entry", err);
		return;
	}
	r = sb_queue_job_decode(e->job, w->cfg.policy, &id, &spec, &rerr);
	if (r < 0 && !id) {
		event(w, "entry %s is not a job (%s): dropped", e->entry_id,
		      rerr.message ? rerr.message : strerror(-r));
		if (sb_queue_drop(t->conn, w->cfg.addr->stream, e->entry_id, &err) < 0)
			failed(t, "dropping an entry", err);
		sb_request_error_done(&rerr);
		return;
	}
	if (r == -EINVAL) {
		/* Checked again here with this worker's limits: a front end with
		 * other limits, or another version. */
		body = sb_run_reply_error(rerr.message, rerr.field);
		complete(t, e, id, 400, body, "results");
		json_decref(body);
		sb_request_error_done(&rerr);
		return;
	}
	if (r < 0) {
		event(w, "job %s: out of memory (left pending)", id);
		return;
	}
	if (e->deliveries > w->cfg.max_deliveries) {
		char msg[512];

		snprintf(msg, sizeof(msg),
			 "the job was delivered %llu times and no worker finished it (each died or "
			 "was killed while running it, or its fork server did): it is not tried "
			 "again (--max-deliveries %u)",
			 (unsigned long long)e->deliveries, w->cfg.max_deliveries);
		event(w, "job %s: poisoned after %llu deliveries: failed", id,
		      (unsigned long long)e->deliveries);
		body = sb_run_reply_error(msg, NULL);
		complete(t, e, id, 500, body, "poisoned");
		json_decref(body);
		sb_run_spec_done(&spec);
		return;
	}
	r = w->cfg.ops->run(w->cfg.runner, &spec, &res);
	sb_run_spec_done(&spec);
	if (r >= 0 && res.error && res.unavailable) {
		/* The local service would answer 503: the job waits for another
		 * attempt (here or elsewhere) after the visibility timeout. */
		event(w, "job %s: not run (%s): left pending for another attempt", id, res.error);
		sb_run_result_done(&res);
		return;
	}
	body = sb_run_reply_body(r, &res, &status);
	sb_run_result_done(&res);
	complete(t, e, id, status, body, "results");
	json_decref(body);
}

/* XAUTOCLAIM scans the pending list a few entries at a time; more often than
 * the visibility timeout, so that a dead worker's job waits about that long. */
static uint64_t claim_interval_ns(const struct sb_queue_worker *w)
{
	uint64_t ms = w->cfg.visibility_ms / 4;

	if (ms < 200)
		ms = 200;
	if (ms > 5000)
		ms = 5000;
	return ms * 1000000ULL;
}

/* A worker whose runner cannot run programs (its fork server is down, or
 * fails to start) takes no job: each would be left pending and count as a
 * delivery, and a broken worker would end by failing innocent jobs as
 * poison. */
static bool runner_ready(struct thread_state *t)
{
	struct sb_queue_worker *w = t->w;
	_cleanup_free_ char *why =
	    w->cfg.ops->unavailable ? w->cfg.ops->unavailable(w->cfg.runner) : NULL;

	if (!why) {
		if (atomic_exchange(&w->runner_down, false))
			event(w, "the runner can run programs again: taking jobs");
		return true;
	}
	if (!atomic_exchange(&w->runner_down, true))
		event(w, "the runner cannot run programs (%s): no job taken until it can",
		      *why ? why : "?");
	pause_ms(w, 500);
	return false;
}

/* Consumers of workers that are gone stay in the group, each with an entry
 * in XINFO CONSUMERS, forever: once their entries have been claimed they
 * hold none, and one idle for twice the visibility timeout has not asked
 * for work in that time (a live thread asks every READ_BLOCK_MS, or holds
 * the entry it runs). Even a live one forgotten by mistake loses nothing:
 * only consumers without a pending entry go, and its next read makes it
 * again. One thread of each worker looks, once per visibility timeout. */
static void forget_gone_consumers(struct thread_state *t)
{
	struct sb_queue_worker *w = t->w;
	_cleanup_free_ char *err = NULL;
	unsigned n = 0;

	if (t->index != 0 || sb_monotonic_ns() < t->next_forget_ns)
		return;
	t->next_forget_ns = sb_monotonic_ns() + w->cfg.visibility_ms * 1000000ULL;
	if (sb_queue_forget_consumers(t->conn, w->cfg.addr->stream, NULL, 2 * w->cfg.visibility_ms,
				      &n, &err) < 0) {
		/* No stream or group yet (or Redis restarted empty): no consumer either. */
		if (!err || (!strstr(err, "NOGROUP") && !strstr(err, "no such key")))
			event(w, "cannot remove the consumers of workers gone: %s",
			      err ? err : "?");
	} else if (n > 0)
		event(w, "removed %u consumer%s of workers gone (nothing pending, idle %llu s)", n,
		      n == 1 ? "" : "s", (unsigned long long)(2 * w->cfg.visibility_ms / 1000));
}

/* At a clean exit: this thread's consumer, unless it holds an entry (a job
 * left pending for another attempt, which must stay claimable). */
static void forget_own_consumer(struct thread_state *t)
{
	_cleanup_free_ char *err = NULL;

	if (!t->conn || sb_queue_conn_broken(t->conn))
		return;
	if (sb_queue_forget_consumers(t->conn, t->w->cfg.addr->stream, t->consumer, 0, NULL, &err) <
	    0)
		event(t->w, "consumer %s: cannot remove it: %s", t->consumer, err ? err : "?");
}

static void *thread_main(void *data)
{
	struct thread_state *t = data;
	struct sb_queue_worker *w = t->w;

	while (!atomic_load(&w->stopping)) {
		_cleanup_free_ char *err = NULL;
		struct sb_queue_entry e = {0};
		int r = 0;

		if (!runner_ready(t))
			continue;
		if (ensure_conn(t) < 0)
			continue;
		forget_gone_consumers(t);
		if (sb_monotonic_ns() >= t->next_claim_ns) {
			r = sb_queue_claim_stale(t->conn, w->cfg.addr->stream, t->consumer,
						 w->cfg.visibility_ms, &e, &err);
			/* One claimed: there may be more, look again at once. */
			t->next_claim_ns = r == 1 ? 0 : sb_monotonic_ns() + claim_interval_ns(w);
			if (r == 1)
				event(w,
				      "entry %s: claimed from a worker that did not finish it "
				      "(delivery %llu)",
				      e.entry_id, (unsigned long long)e.deliveries);
		}
		if (r == 0)
			r = sb_queue_read_new(t->conn, w->cfg.addr->stream, t->consumer,
					      READ_BLOCK_MS, &e, &err);
		if (r < 0) {
			/* NOGROUP: Redis lost the group (restarted empty). */
			if (t->conn && !sb_queue_conn_broken(t->conn) && err &&
			    strstr(err, "NOGROUP")) {
				_cleanup_free_ char *gerr = NULL;

				if (sb_queue_ensure_group(t->conn, w->cfg.addr->stream, &gerr) < 0)
					failed(t, "making the consumer group", gerr);
				continue;
			}
			failed(t, "reading the stream", err);
			if (t->conn)
				pause_ms(w, sb_queue_backoff_next(&t->backoff));
			continue;
		}
		if (r == 1)
			process(t, &e);
		sb_queue_entry_done(&e);
	}
	forget_own_consumer(t);
	drop_conn(t);
	free(t);
	return NULL;
}

int sb_queue_worker_start(const struct sb_queue_worker_config *cfg, struct sb_queue_worker **ret)
{
	struct sb_queue_worker *w = calloc(1, sizeof(*w));
	sigset_t all, saved;
	int r = 0;

	if (!w)
		return -ENOMEM;
	w->cfg = *cfg;
	w->threads = calloc(cfg->threads, sizeof(*w->threads));
	if (!w->threads) {
		free(w);
		return -ENOMEM;
	}
	if (gethostname(w->host, sizeof(w->host) - 1) < 0)
		strcpy(w->host, "worker");
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	for (; w->n_threads < cfg->threads; w->n_threads++) {
		struct thread_state *t = calloc(1, sizeof(*t));

		if (!t) {
			r = -ENOMEM;
			break;
		}
		t->w = w;
		t->index = w->n_threads;
		/* A consumer per thread: its pending entries are its own. */
		snprintf(t->consumer, sizeof(t->consumer), "%s-%d-%u", w->host, (int)getpid(),
			 t->index);
		r = -pthread_create(&w->threads[w->n_threads], NULL, thread_main, t);
		if (r < 0) {
			free(t);
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (r < 0) {
		sb_queue_worker_stop(w);
		return r;
	}
	*ret = w;
	return 0;
}

void sb_queue_worker_stop(struct sb_queue_worker *w)
{
	if (!w)
		return;
	atomic_store(&w->stopping, true);
	for (unsigned i = 0; i < w->n_threads; i++)
		pthread_join(w->threads[i], NULL);
	free(w->threads);
	free(w);
}
