/* SPDX-License-Identifier: MIT */
/* queue-front.h. Connections to Redis are pooled (one per job-pool thread
 * at most: a BLPOP holds its connection); a connection that broke is
 * dropped, and while Redis does not answer, requests fail at once (503)
 * instead of each waiting for a connection timeout, until the monitor or
 * the back-off lets the next attempt through. A connection that broke
 * while it waited in the pool says nothing about Redis now (it restarted
 * since, its "timeout" setting or a proxy closed idle clients, CLIENT
 * KILL): the command is tried once more on a new connection, and only
 * that one's failure marks Redis down. */
#include "queue-front.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <time.h>

#include "queue-job.h"
#include "util.h"

#define CONNECT_MS 1000
/* Above the longest BLPOP (WAIT_CHUNK_MS). */
#define COMMAND_MS    3000
#define WAIT_CHUNK_MS 1000
#define MONITOR_MS    1000

struct pooled {
	struct sb_queue_conn *conn;
	struct pooled *next;
};

struct sb_runner {
	struct sb_queue_front_config cfg;
	pthread_mutex_t lock;
	struct pooled *idle;
	char *down; /* why Redis is unreachable; NULL while it answers */
	uint64_t retry_at_ns;
	struct sb_queue_backoff backoff;
	uint64_t depth;
	pthread_t monitor;
	pthread_cond_t stop_cond;
	bool stopping, monitor_started;
};

static void event(struct sb_runner *q, const char *fmt, ...) _printf_(2, 3);
static void event(struct sb_runner *q, const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;
	int n;

	if (!q->cfg.event)
		return;
	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n >= 0)
		q->cfg.event(q->cfg.event_data, msg);
	else
		msg = NULL;
}

/* Under the lock. */
static void mark_down(struct sb_runner *q, const char *why)
{
	bool was_up = !q->down;

	free(q->down);
	q->down = strdup(why ? why : "Redis is unreachable");
	q->retry_at_ns = sb_monotonic_ns() + sb_queue_backoff_next(&q->backoff) * 1000000ULL;
	if (was_up)
		event(q, "queue %s unreachable: %s (503 until it answers; retrying with back-off)",
		      q->cfg.addr->display, why ? why : "?");
}

static void mark_up(struct sb_runner *q)
{
	if (q->down)
		event(q, "queue %s reachable again", q->cfg.addr->display);
	free(q->down);
	q->down = NULL;
	sb_queue_backoff_reset(&q->backoff);
}

/* A connection: 1 with *ret taken from the pool, 0 with a new one; -errno
 * with *reterr (503). */
static int take_conn(struct sb_runner *q, bool force, struct sb_queue_conn **ret, char **reterr)
{
	struct pooled *p;
	int r;

	pthread_mutex_lock(&q->lock);
	p = q->idle;
	if (p) {
		q->idle = p->next;
		pthread_mutex_unlock(&q->lock);
		*ret = p->conn;
		free(p);
		return 1;
	}
	if (q->down && !force && sb_monotonic_ns() < q->retry_at_ns) {
		r = sb_error(reterr, -EHOSTUNREACH, "%s", q->down);
		pthread_mutex_unlock(&q->lock);
		return r;
	}
	pthread_mutex_unlock(&q->lock);

	r = sb_queue_connect(q->cfg.addr, CONNECT_MS, COMMAND_MS, ret, reterr);
	if (r >= 0) {
		_cleanup_free_ char *err = NULL;

		r = sb_queue_ensure_group(*ret, q->cfg.addr->stream, &err);
		if (r < 0) {
			sb_queue_disconnect(*ret);
			*ret = NULL;
			if (reterr)
				*reterr = TAKE_PTR(err);
		}
	}
	pthread_mutex_lock(&q->lock);
	if (r < 0)
		mark_down(q, reterr ? *reterr : NULL);
	else
		mark_up(q);
	pthread_mutex_unlock(&q->lock);
	return r < 0 ? r : 0;
}

static void give_conn(struct sb_runner *q, struct sb_queue_conn *c)
{
	struct pooled *p;

	if (!c)
		return;
	if (sb_queue_conn_broken(c) || !(p = malloc(sizeof(*p)))) {
		sb_queue_disconnect(c);
		return;
	}
	p->conn = c;
	pthread_mutex_lock(&q->lock);
	p->next = q->idle;
	q->idle = p;
	pthread_mutex_unlock(&q->lock);
}

/* Under no lock. */
static void drop_idle(struct sb_runner *q)
{
	struct pooled *stale;

	pthread_mutex_lock(&q->lock);
	stale = q->idle;
	q->idle = NULL;
	pthread_mutex_unlock(&q->lock);
	while (stale) {
		struct pooled *p = stale;

		stale = p->next;
		sb_queue_disconnect(p->conn);
		free(p);
	}
}

/* A command failed on a connection made for it: a broken one means Redis
 * went away. */
static void failed_on(struct sb_runner *q, struct sb_queue_conn *c, const char *why)
{
	if (!sb_queue_conn_broken(c))
		return;
	pthread_mutex_lock(&q->lock);
	mark_down(q, why);
	pthread_mutex_unlock(&q->lock);
	/* The others were made before the same failure (a Redis restart):
	 * dropped, rather than each failing a request of its own. */
	drop_idle(q);
}

/* After a command returned r on *c: when it failed, *c being old (pooled, or
 * the monitor's) and broken, 1 with a new connection in *c, on which the
 * command is tried once more (*reterr, the first failure's, is dropped); 0
 * when there is nothing to renew; -errno with *reterr when no connection
 * could be made (Redis marked down). */
static int renew_if_stale(struct sb_runner *q, int r, bool old, struct sb_queue_conn **c,
			  char **reterr)
{
	if (r >= 0 || !old || !sb_queue_conn_broken(*c))
		return 0;
	free(*reterr);
	*reterr = NULL;
	/* Made before the same event: broken too, most likely. */
	drop_idle(q);
	sb_queue_disconnect(*c);
	*c = NULL;
	r = take_conn(q, true, c, reterr);
	return r < 0 ? r : 1;
}

static void *monitor_main(void *data)
{
	struct sb_runner *q = data;
	struct sb_queue_conn *c = NULL;

	pthread_mutex_lock(&q->lock);
	while (!q->stopping) {
		struct timespec until;
		uint64_t depth = 0;
		char *err = NULL;
		int r, r_renew;

		pthread_mutex_unlock(&q->lock);
		r = c ? 1 : take_conn(q, true, &c, &err);
		if (r >= 0) {
			bool old = r == 1;

			r = sb_queue_depth(c, q->cfg.addr->stream, &depth, &err);
			r_renew = renew_if_stale(q, r, old, &c, &err);
			if (r_renew != 0)
				r = r_renew < 0
					? r_renew
					: sb_queue_depth(c, q->cfg.addr->stream, &depth, &err);
			if (r < 0 && c) {
				failed_on(q, c, err);
				if (sb_queue_conn_broken(c)) {
					sb_queue_disconnect(c);
					c = NULL;
				}
			}
		}
		free(err);
		pthread_mutex_lock(&q->lock);
		if (r >= 0)
			q->depth = depth;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += MONITOR_MS / 1000;
		if (!q->stopping)
			pthread_cond_timedwait(&q->stop_cond, &q->lock, &until);
	}
	pthread_mutex_unlock(&q->lock);
	sb_queue_disconnect(c);
	return NULL;
}

static void front_close(struct sb_runner *q)
{
	if (!q)
		return;
	if (q->monitor_started) {
		pthread_mutex_lock(&q->lock);
		q->stopping = true;
		pthread_cond_broadcast(&q->stop_cond);
		pthread_mutex_unlock(&q->lock);
		pthread_join(q->monitor, NULL);
	}
	while (q->idle) {
		struct pooled *p = q->idle;

		q->idle = p->next;
		sb_queue_disconnect(p->conn);
		free(p);
	}
	free(q->down);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->stop_cond);
	free(q);
}

int sb_queue_front_open(const struct sb_queue_front_config *cfg, struct sb_runner **ret,
			char **reterr _unused_)
{
	struct sb_runner *q = calloc(1, sizeof(*q));
	sigset_t all, saved;
	int r;

	if (!q)
		return -ENOMEM;
	q->cfg = *cfg;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->stop_cond, NULL);
	/* Redis down at start is not fatal: the front end answers 503 until it
	 * is there (the monitor's first attempt logs it). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	r = -pthread_create(&q->monitor, NULL, monitor_main, q);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (r < 0) {
		front_close(q);
		return r;
	}
	q->monitor_started = true;
	*ret = q;
	return 0;
}

void sb_queue_front_depth(struct sb_runner *q, uint64_t *ret_depth, bool *ret_up)
{
	pthread_mutex_lock(&q->lock);
	*ret_depth = q->depth;
	*ret_up = !q->down;
	pthread_mutex_unlock(&q->lock);
}

static int reply(struct sb_run_result *res, unsigned status, json_t *body)
{
	if (!body)
		return -ENOMEM;
	res->http_status = status;
	res->reply = body;
	if (status == 200)
		res->report = json_incref(json_object_get(body, "report"));
	return 0;
}

static int unavailable(struct sb_run_result *res, const char *why)
{
	res->unavailable = true;
	res->error = strdup(why && *why ? why : "the queue (Redis) is unreachable");
	return res->error ? 0 : -ENOMEM;
}

static int answer_result(struct sb_run_result *res, const char *text)
{
	unsigned status;
	json_t *body;

	if (sb_queue_result_decode(text, &status, &body) < 0) {
		res->error = strdup("the job's result in Redis is not one python-sb serve wrote");
		return res->error ? 0 : -ENOMEM;
	}
	return reply(res, status, body);
}

static int answer_pending(struct sb_run_result *res, const char *id, unsigned status,
			  const char *message)
{
	res->id = strdup(id);
	if (!res->id)
		return -ENOMEM;
	return reply(
	    res, status,
	    message ? json_pack("{s:s, s:s, s:s}", "id", id, "status", "pending", "error", message)
		    : json_pack("{s:s, s:s}", "id", id, "status", "pending"));
}

static int poll_run(struct sb_runner *q, const char *id, struct sb_run_result *res)
{
	_cleanup_free_ char *err = NULL, *text = NULL;
	struct sb_queue_conn *c = NULL;
	bool pooled;
	int r;

	r = take_conn(q, false, &c, &err);
	if (r < 0)
		return unavailable(res, err);
	pooled = r == 1;
	r = sb_queue_poll(c, q->cfg.addr->stream, id, &text, &err);
	switch (renew_if_stale(q, r, pooled, &c, &err)) {
	case 0:
		break;
	case 1:
		r = sb_queue_poll(c, q->cfg.addr->stream, id, &text, &err);
		break;
	default:
		return unavailable(res, err);
	}
	if (r < 0 && r != -ENOENT)
		failed_on(q, c, err);
	give_conn(q, c);
	if (r == -ENOENT) {
		char msg[160];

		snprintf(msg, sizeof(msg),
			 "no such run: never queued, or its result expired (kept %u s)",
			 q->cfg.result_ttl_s);
		return reply(res, 404, json_pack("{s:s, s:n}", "error", msg, "field"));
	}
	if (r < 0)
		return r == -ENOMEM ? r : unavailable(res, err);
	if (r == 0)
		return answer_pending(res, id, 202, NULL);
	return answer_result(res, text);
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
			      .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* Until the result is there or the deadline: through Redis restarts too (a
 * connection that breaks is made anew, with back-off). */
static int wait_result(struct sb_runner *q, const char *id, struct sb_queue_conn *c,
		       struct sb_run_result *res)
{
	uint64_t deadline = sb_monotonic_ns() + q->cfg.wait_ms * 1000000ULL;
	struct sb_queue_backoff backoff = {0};
	char msg[256];

	for (;;) {
		_cleanup_free_ char *err = NULL, *text = NULL;
		uint64_t now = sb_monotonic_ns();
		uint64_t left_ms = now < deadline ? (deadline - now) / 1000000 : 0;
		int r = 0;

		if (left_ms == 0)
			break;
		if (!c)
			r = take_conn(q, true, &c, &err);
		if (r >= 0)
			r = sb_queue_wait_done(
			    c, q->cfg.addr->stream, id,
			    left_ms < WAIT_CHUNK_MS ? (unsigned)left_ms : WAIT_CHUNK_MS, &err);
		if (r >= 0) {
			free(err);
			err = NULL;
			r = sb_queue_poll(c, q->cfg.addr->stream, id, &text, &err);
		}
		if (r == 1) {
			give_conn(q, c);
			return answer_result(res, text);
		}
		if (r == -ENOENT) {
			/* Redis lost it: restarted without persistence. */
			give_conn(q, c);
			return unavailable(res, "the job was lost by Redis (restarted without its "
						"data?) before it had a result: send it again");
		}
		if (r == -ENOMEM) {
			give_conn(q, c);
			return r;
		}
		if (r < 0) {
			if (c) {
				failed_on(q, c, err);
				if (sb_queue_conn_broken(c)) {
					sb_queue_disconnect(c);
					c = NULL;
				}
			}
			now = sb_monotonic_ns();
			left_ms = now < deadline ? (deadline - now) / 1000000 : 0;
			uint64_t pause = sb_queue_backoff_next(&backoff);

			sleep_ms(pause < left_ms ? pause : left_ms);
		} else {
			sb_queue_backoff_reset(&backoff);
		}
	}
	give_conn(q, c);
	snprintf(msg, sizeof(msg),
		 "no result within %u s (the job is queued or running): poll GET /v1/runs/%s",
		 (q->cfg.wait_ms + 999) / 1000, id);
	return answer_pending(res, id, 504, msg);
}

static int front_run(struct sb_runner *q, const struct sb_run_spec *spec, struct sb_run_result *res)
{
	_cleanup_free_ char *err = NULL, *job = NULL;
	struct sb_queue_conn *c = NULL;
	char id[SB_QUEUE_ID_LEN + 1];
	bool pooled;
	int r;

	*res = (struct sb_run_result){0};
	if (spec->poll_id)
		return poll_run(q, spec->poll_id, res);
	r = sb_queue_id_new(id);
	if (r >= 0)
		r = sb_queue_job_encode(id, spec, &q->cfg.max, &job);
	if (r < 0)
		return r;
	r = take_conn(q, false, &c, &err);
	if (r < 0)
		return unavailable(res, err);
	pooled = r == 1;
	r = sb_queue_enqueue(c, q->cfg.addr->stream, id, job, q->cfg.max_depth, &err);
	/* Once more on a new connection: were the first script run after all,
	 * the job has two entries and still one result (queue-redis.c's
	 * complete). */
	switch (renew_if_stale(q, r, pooled, &c, &err)) {
	case 0:
		break;
	case 1:
		r = sb_queue_enqueue(c, q->cfg.addr->stream, id, job, q->cfg.max_depth, &err);
		break;
	default:
		return unavailable(res, err);
	}
	if (r == -EAGAIN) {
		char msg[160];

		give_conn(q, c);
		snprintf(msg, sizeof(msg),
			 "the queue holds %zu jobs or more (--queue-depth): try again later",
			 q->cfg.max_depth);
		return reply(res, 429, json_pack("{s:s, s:n}", "error", msg, "field"));
	}
	if (r < 0) {
		/* Not queued (the script is atomic): nothing was accepted. */
		failed_on(q, c, err);
		give_conn(q, c);
		return r == -ENOMEM ? r : unavailable(res, err);
	}
	if (spec->no_wait) {
		give_conn(q, c);
		res->id = strdup(id);
		if (!res->id)
			return -ENOMEM;
		return reply(res, 202, json_pack("{s:s, s:s}", "id", id, "status", "queued"));
	}
	return wait_result(q, id, c, res);
}

static char *front_unavailable(struct sb_runner *q)
{
	char *why;

	pthread_mutex_lock(&q->lock);
	why = q->down ? strdup(q->down) : NULL;
	if (q->down && !why)
		why = calloc(1, 1);
	pthread_mutex_unlock(&q->lock);
	return why;
}

static int front_open(const struct sb_runner_config *cfg _unused_, struct sb_runner **ret _unused_,
		      char **reterr)
{
	return sb_error(reterr, -EINVAL, "the queue's front end opens with sb_queue_front_open()");
}

const struct sb_runner_ops sb_runner_queue_front = {
    .name = "queue",
    .open = front_open,
    .run = front_run,
    .close = front_close,
    .unavailable = front_unavailable,
};
