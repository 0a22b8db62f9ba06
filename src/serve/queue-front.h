/* SPDX-License-Identifier: MIT */
#pragma once

#include "queue-redis.h"
#include "runner.h"

/* python-sb serve --queue redis://... (docs/serve-queue.md): the front end's
 * runner. It runs nothing: POST /v1/runs's checked spec becomes a job queued
 * on the stream (atomically refused, 429, when the stream is at --queue-depth),
 * and the worker thread of the job pool that took it waits for its result
 * (BLPOP on the job's done list, then the result key: the key is the truth,
 * the list only a wake-up) up to wait_ms, or answers 202 at once for
 * "wait": false; GET /v1/runs/{id} reads the result. Redis unreachable: 503
 * for anything it cannot queue, a monitor thread reconnecting with back-off. */

struct sb_queue_front_config {
	const struct sb_queue_addr *addr;
	size_t max_depth;	  /* --queue-depth: 429 at this many jobs in the stream */
	unsigned result_ttl_s;	  /* --result-ttl */
	unsigned wait_ms;	  /* --queue-wait: a synchronous POST's limit, then 504 */
	struct sb_run_limits max; /* the front end's limits: those lowered travel */
	void (*event)(void *data, const char *message);
	void *event_data;
};

int sb_queue_front_open(const struct sb_queue_front_config *cfg, struct sb_runner **ret,
			char **reterr);
/* The stream's length as last read by the monitor (the backlog), and
 * whether Redis answered then. */
void sb_queue_front_depth(struct sb_runner *runner, uint64_t *ret_depth, bool *ret_up);

extern const struct sb_runner_ops sb_runner_queue_front;
