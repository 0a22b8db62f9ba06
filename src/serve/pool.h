/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "runner.h"

/* The job pool: a fixed number of worker threads and a bounded queue, so that
 * the memory a burst of requests takes is bounded too. A request that finds
 * the queue full is refused (429) before anything is stored for it. */

struct sb_job {
	struct sb_run_spec spec;
	struct sb_run_result result;
	int error; /* the runner's -errno; 0 */
	uint64_t enqueued_ns, started_ns, finished_ns;
	/* Called on the worker's thread when the run is over. */
	void (*done)(struct sb_job *job, void *data);
	void *data;
	struct sb_job *next;
};

struct sb_pool;

int sb_pool_start(unsigned workers, unsigned queue_cap, const struct sb_runner_ops *ops,
		  struct sb_runner *runner, struct sb_pool **ret);
/* Takes a place in the queue: 0; -EAGAIN when it is full, -ESHUTDOWN while
 * draining. A place taken must be given to sb_pool_submit(). */
int sb_pool_reserve(struct sb_pool *p);
/* Queues the job in the place reserved for it. */
void sb_pool_submit(struct sb_pool *p, struct sb_job *job);
/* No new job from now on; waits until every queued and running job is done. */
void sb_pool_drain(struct sb_pool *p);
/* Stops the workers (after a drain) and frees the pool. */
void sb_pool_stop(struct sb_pool *p);
void sb_pool_counts(struct sb_pool *p, unsigned *ret_queued, unsigned *ret_busy,
		    unsigned *ret_workers, unsigned *ret_queue_cap);

/* The runner's unavailable() (runner.h): NULL while it can run programs. */
char *sb_pool_unavailable(struct sb_pool *p);
