/* SPDX-License-Identifier: MIT */
/* pool.h. One mutex guards the queue and the counts; the runs themselves
 * happen outside it. */
#include "pool.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "util.h"

struct sb_pool {
	pthread_mutex_t lock;
	pthread_cond_t work; /* a job was queued, or stopping */
	pthread_cond_t idle; /* a job finished */
	struct sb_job *head, *tail;
	unsigned queued; /* jobs waiting, and places reserved for them */
	unsigned busy;	 /* jobs running */
	unsigned queue_cap;
	unsigned n_workers;
	bool draining, stopping;
	pthread_t *threads;
	const struct sb_runner_ops *ops;
	struct sb_runner *runner;
};

static void *worker_main(void *data)
{
	struct sb_pool *p = data;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct sb_job *job;

		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->work, &p->lock);
		if (!p->head)
			break;
		job = p->head;
		p->head = job->next;
		if (!p->head)
			p->tail = NULL;
		p->queued--;
		p->busy++;
		pthread_mutex_unlock(&p->lock);

		job->started_ns = sb_monotonic_ns();
		job->error = p->ops->run(p->runner, &job->spec, &job->result);
		job->finished_ns = sb_monotonic_ns();
		job->done(job, job->data);

		pthread_mutex_lock(&p->lock);
		p->busy--;
		pthread_cond_broadcast(&p->idle);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int sb_pool_start(unsigned workers, unsigned queue_cap, const struct sb_runner_ops *ops,
		  struct sb_runner *runner, struct sb_pool **ret)
{
	struct sb_pool *p = calloc(1, sizeof(*p));
	sigset_t all, saved;
	int r = 0;

	if (!p)
		return -ENOMEM;
	p->threads = calloc(workers, sizeof(*p->threads));
	if (!p->threads) {
		free(p);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->idle, NULL);
	p->queue_cap = queue_cap;
	p->ops = ops;
	p->runner = runner;
	/* Workers take no signal: the main thread handles them all. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	for (; p->n_workers < workers; p->n_workers++) {
		r = -pthread_create(&p->threads[p->n_workers], NULL, worker_main, p);
		if (r < 0)
			break;
	}
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (r < 0) {
		sb_pool_stop(p);
		return r;
	}
	*ret = p;
	return 0;
}

int sb_pool_reserve(struct sb_pool *p)
{
	int r = 0;

	pthread_mutex_lock(&p->lock);
	if (p->draining)
		r = -ESHUTDOWN;
	/* A free worker takes the job at once; otherwise it waits in the
	 * queue, if there is room. */
	else if (p->queued + p->busy >= p->n_workers + p->queue_cap)
		r = -EAGAIN;
	else
		p->queued++;
	pthread_mutex_unlock(&p->lock);
	return r;
}

void sb_pool_submit(struct sb_pool *p, struct sb_job *job)
{
	job->next = NULL;
	job->enqueued_ns = sb_monotonic_ns();
	pthread_mutex_lock(&p->lock);
	if (p->tail)
		p->tail->next = job;
	else
		p->head = job;
	p->tail = job;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
}

void sb_pool_drain(struct sb_pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->draining = true;
	while (p->queued > 0 || p->busy > 0)
		pthread_cond_wait(&p->idle, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

void sb_pool_stop(struct sb_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->n_workers; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->idle);
	free(p->threads);
	free(p);
}

void sb_pool_counts(struct sb_pool *p, unsigned *ret_queued, unsigned *ret_busy,
		    unsigned *ret_workers, unsigned *ret_queue_cap)
{
	pthread_mutex_lock(&p->lock);
	*ret_queued = p->queued;
	*ret_busy = p->busy;
	*ret_workers = p->n_workers;
	*ret_queue_cap = p->queue_cap;
	pthread_mutex_unlock(&p->lock);
}

char *sb_pool_unavailable(struct sb_pool *p)
{
	return p->ops->unavailable ? p->ops->unavailable(p->runner) : NULL;
}
