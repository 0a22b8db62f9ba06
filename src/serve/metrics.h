/* SPDX-License-Identifier: MIT */
#pragma once

#include "util.h"

struct sb_job;
struct sb_pool;

/* The service's counters, and GET /metrics in the Prometheus text format
 * (version 0.0.4): requests by status code, runs by outcome, run and queue
 * time histograms, queue depth and busy workers. */

struct sb_metrics;

struct sb_metrics *sb_metrics_new(void);
void sb_metrics_free(struct sb_metrics *m);

/* A response sent with this status. */
void sb_metrics_http(struct sb_metrics *m, unsigned status);
/* A run that ended (the job's result and times). */
void sb_metrics_run(struct sb_metrics *m, const struct sb_job *job);
/* The run's outcome: ok, error, timeout, limit, signal, failed. */
const char *sb_metrics_outcome(const struct sb_job *job);

/* --queue redis://: the stream's length as last read, and whether Redis
 * answered then (the gauges python_sb_queue_stream_depth, python_sb_queue_up). */
void sb_metrics_stream(struct sb_metrics *m, uint64_t depth, bool up);

/* The exposition text. 0 or -ENOMEM. */
int sb_metrics_render(struct sb_metrics *m, struct sb_pool *pool, bool draining,
		      struct sb_buf *out);
