/* SPDX-License-Identifier: MIT */
#pragma once

#include "queue-redis.h"
#include "request.h"
#include "runner.h"

/* python-sb serve --worker --queue redis://... (docs/serve-queue.md): threads
 * that each take one job at a time from the stream's consumer group (first
 * the jobs other workers left pending longer than the visibility timeout,
 * XAUTOCLAIM; else new ones, XREADGROUP), check it as a request of their own
 * (request.h, with this worker's limits), run it with the local runner (the
 * fork server, or --fresh-exec) and write the reply the local service would
 * send as the job's result (queue-redis.h's complete: once, acknowledged,
 * deleted). A job delivered more than max_deliveries times (its workers died
 * running it) is failed with a result saying so. */

struct sb_queue_worker_config {
	const struct sb_queue_addr *addr;
	unsigned threads;
	const struct sb_runner_ops *ops;
	struct sb_runner *runner;
	const struct sb_request_policy *policy;
	unsigned result_ttl_s;
	uint64_t visibility_ms;
	unsigned max_deliveries;
	void (*event)(void *data, const char *message);
	void *event_data;
};

struct sb_queue_worker;

int sb_queue_worker_start(const struct sb_queue_worker_config *cfg, struct sb_queue_worker **ret);
/* No new job from now on; the jobs running finish and their results are
 * written (while Redis answers); then the threads end and w is freed. */
void sb_queue_worker_stop(struct sb_queue_worker *w);
