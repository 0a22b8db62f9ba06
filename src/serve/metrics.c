/* SPDX-License-Identifier: MIT */
/* metrics.h. Counters under one mutex: they are touched once per request. */
#include "metrics.h"

#include <pthread.h>

#include "pool.h"

static const unsigned codes[] = {200, 202, 400, 403, 404, 405, 429, 500, 503, 504};
static const char *const outcomes[] = {"ok", "error", "timeout", "limit", "signal", "failed"};
/* Seconds: from a trivial run (a few ms with a fork server) to the longest
 * timeout a profile is likely to set. */
static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

struct histogram {
	uint64_t counts[ELEMENTSOF(buckets)];
	uint64_t total;
	double sum;
};

struct counters {
	uint64_t http[ELEMENTSOF(codes) + 1]; /* the last: any other code */
	uint64_t runs[ELEMENTSOF(outcomes)];
	struct histogram run_seconds, queue_seconds;
};

struct sb_metrics {
	pthread_mutex_t lock;
	struct counters c;
	bool queued; /* --queue redis:// */
	uint64_t stream_depth;
	bool stream_up;
};

struct sb_metrics *sb_metrics_new(void)
{
	struct sb_metrics *m = calloc(1, sizeof(*m));

	if (m)
		pthread_mutex_init(&m->lock, NULL);
	return m;
}

void sb_metrics_free(struct sb_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void sb_metrics_http(struct sb_metrics *m, unsigned status)
{
	size_t i = 0;

	while (i < ELEMENTSOF(codes) && codes[i] != status)
		i++;
	pthread_mutex_lock(&m->lock);
	m->c.http[i]++;
	pthread_mutex_unlock(&m->lock);
}

const char *sb_metrics_outcome(const struct sb_job *job)
{
	json_t *r = job->result.report, *v;

	if (job->error < 0 || !r)
		return "failed";
	if (json_is_true(json_object_get(r, "timed_out")))
		return "timeout";
	v = json_object_get(r, "limit_exceeded");
	if (v && !json_is_null(v))
		return "limit";
	v = json_object_get(r, "signal");
	if (v && !json_is_null(v))
		return "signal";
	return json_integer_value(json_object_get(r, "exit_code")) == 0 ? "ok" : "error";
}

static void observe(struct histogram *h, double seconds)
{
	for (size_t i = 0; i < ELEMENTSOF(buckets); i++)
		if (seconds <= buckets[i])
			h->counts[i]++;
	h->total++;
	h->sum += seconds;
}

void sb_metrics_run(struct sb_metrics *m, const struct sb_job *job)
{
	const char *outcome = sb_metrics_outcome(job);
	size_t i = 0;

	while (i < ELEMENTSOF(outcomes) - 1 && !streq(outcomes[i], outcome))
		i++;
	pthread_mutex_lock(&m->lock);
	m->c.runs[i]++;
	observe(&m->c.run_seconds, (double)(job->finished_ns - job->started_ns) / 1e9);
	observe(&m->c.queue_seconds, (double)(job->started_ns - job->enqueued_ns) / 1e9);
	pthread_mutex_unlock(&m->lock);
}

void sb_metrics_stream(struct sb_metrics *m, uint64_t depth, bool up)
{
	pthread_mutex_lock(&m->lock);
	m->queued = true;
	m->stream_depth = depth;
	m->stream_up = up;
	pthread_mutex_unlock(&m->lock);
}

static int render_histogram(struct sb_buf *out, const char *name, const char *help,
			    const struct histogram *h)
{
	int r = sb_buf_printf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(buckets); i++)
		r = sb_buf_printf(out, "%s_bucket{le=\"%g\"} %llu\n", name, buckets[i],
				  (unsigned long long)h->counts[i]);
	if (r >= 0)
		r = sb_buf_printf(out, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n",
				  name, (unsigned long long)h->total, name, h->sum, name,
				  (unsigned long long)h->total);
	return r;
}

int sb_metrics_render(struct sb_metrics *m, struct sb_pool *pool, bool draining, struct sb_buf *out)
{
	unsigned queued, busy, workers, queue_cap;
	struct counters snap;
	uint64_t stream_depth;
	bool queued_mode, stream_up;
	int r;

	sb_pool_counts(pool, &queued, &busy, &workers, &queue_cap);
	pthread_mutex_lock(&m->lock);
	snap = m->c;
	queued_mode = m->queued;
	stream_depth = m->stream_depth;
	stream_up = m->stream_up;
	pthread_mutex_unlock(&m->lock);

	r = sb_buf_puts(out, "# HELP python_sb_http_requests_total HTTP responses by status "
			     "code.\n# TYPE python_sb_http_requests_total counter\n");
	for (size_t i = 0; r >= 0 && i <= ELEMENTSOF(codes); i++)
		if (i < ELEMENTSOF(codes))
			r = sb_buf_printf(out, "python_sb_http_requests_total{code=\"%u\"} %llu\n",
					  codes[i], (unsigned long long)snap.http[i]);
		else
			r = sb_buf_printf(out,
					  "python_sb_http_requests_total{code=\"other\"} %llu\n",
					  (unsigned long long)snap.http[i]);
	if (r >= 0)
		r = sb_buf_puts(out, "# HELP python_sb_runs_total Runs by outcome.\n"
				     "# TYPE python_sb_runs_total counter\n");
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(outcomes); i++)
		r = sb_buf_printf(out, "python_sb_runs_total{outcome=\"%s\"} %llu\n", outcomes[i],
				  (unsigned long long)snap.runs[i]);
	if (r >= 0)
		r = render_histogram(out, "python_sb_run_duration_seconds",
				     "Time from the start of a run to its report.",
				     &snap.run_seconds);
	if (r >= 0)
		r = render_histogram(out, "python_sb_queue_wait_seconds",
				     "Time a run waited in the queue.", &snap.queue_seconds);
	if (r >= 0)
		r = sb_buf_printf(
		    out,
		    "# HELP python_sb_queue_depth Runs waiting for a worker.\n"
		    "# TYPE python_sb_queue_depth gauge\npython_sb_queue_depth %u\n"
		    "# HELP python_sb_queue_capacity Runs that may wait.\n"
		    "# TYPE python_sb_queue_capacity gauge\npython_sb_queue_capacity %u\n"
		    "# HELP python_sb_workers_busy Workers running a program.\n"
		    "# TYPE python_sb_workers_busy gauge\npython_sb_workers_busy %u\n"
		    "# HELP python_sb_workers Workers.\n"
		    "# TYPE python_sb_workers gauge\npython_sb_workers %u\n"
		    "# HELP python_sb_draining 1 once SIGTERM was received.\n"
		    "# TYPE python_sb_draining gauge\npython_sb_draining %d\n",
		    queued, queue_cap, busy, workers, draining ? 1 : 0);
	if (r >= 0 && queued_mode)
		r = sb_buf_printf(
		    out,
		    "# HELP python_sb_queue_stream_depth Jobs in the Redis stream (waiting or "
		    "running), as last read.\n"
		    "# TYPE python_sb_queue_stream_depth gauge\npython_sb_queue_stream_depth %llu\n"
		    "# HELP python_sb_queue_up 1 while Redis answers.\n"
		    "# TYPE python_sb_queue_up gauge\npython_sb_queue_up %d\n",
		    (unsigned long long)stream_depth, stream_up ? 1 : 0);
	return r;
}
