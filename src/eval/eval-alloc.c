/* SPDX-License-Identifier: MIT */
#include "eval-alloc.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "eval-state.h"
#include "util.h"

/* Smaller blocks are not counted; smaller requests never fail because of
 * the budget (CPython's own small allocations need not learn to fail). */
#define TRACK_MIN  512
#define REFUSE_MIN 4096

enum { DOMAIN_RAW, DOMAIN_MEM, DOMAIN_OBJ, DOMAIN__N };

static const PyMemAllocatorDomain domains[DOMAIN__N] = {PYMEM_DOMAIN_RAW, PYMEM_DOMAIN_MEM,
							PYMEM_DOMAIN_OBJ};

struct block {
	void *ptr; /* NULL: an empty slot */
	size_t size;
	size_t charged; /* what its evaluation was charged (less than size when it grew) */
	uint64_t serial;
};

/* The blocks evaluations allocated, by address: open addressing, at most
 * half full, in memory from libc (not from the hooked allocator). The hooks
 * run on any thread, with or without the GIL: a mutex guards the table, and
 * the count lets a free skip it when there is nothing to look up. */
static struct {
	PyMemAllocatorEx prev[DOMAIN__N];
	bool hooked[DOMAIN__N];
	bool usable_size; /* the raw domain is plain malloc: sizes can be asked */
	pthread_mutex_t lock;
	struct block *slots;
	size_t cap;
	atomic_size_t n;
} al = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t slot_of(const void *p, size_t cap)
{
	uintptr_t h = (uintptr_t)p;

	h ^= h >> 15;
	h *= 0x9E3779B97F4A7C15u;
	return (size_t)(h >> 9) & (cap - 1);
}

static struct block *find(void *p)
{
	if (!al.cap)
		return NULL;
	for (size_t i = slot_of(p, al.cap);; i = (i + 1) & (al.cap - 1)) {
		if (al.slots[i].ptr == p)
			return &al.slots[i];
		if (!al.slots[i].ptr)
			return NULL;
	}
}

static void remove_at(struct block *b)
{
	size_t i = (size_t)(b - al.slots), j = i;

	al.slots[i] = (struct block){0};
	atomic_fetch_sub(&al.n, 1);
	for (;;) {
		size_t home;

		j = (j + 1) & (al.cap - 1);
		if (!al.slots[j].ptr)
			return;
		home = slot_of(al.slots[j].ptr, al.cap);
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			al.slots[i] = al.slots[j];
			al.slots[j] = (struct block){0};
			i = j;
		}
	}
}

/* Inserts under the lock; a record that cannot be kept is lost (the block
 * is then not counted), never the allocation. */
static void insert(struct block b)
{
	size_t i;

	if (2 * (atomic_load(&al.n) + 1) > al.cap) {
		size_t cap = al.cap ? 2 * al.cap : 1024;
		struct block *slots = calloc(cap, sizeof(*slots)), *old = al.slots;

		if (!slots)
			return;
		for (size_t k = 0; k < al.cap; k++) {
			if (!old[k].ptr)
				continue;
			for (i = slot_of(old[k].ptr, cap); slots[i].ptr; i = (i + 1) & (cap - 1))
				;
			slots[i] = old[k];
		}
		al.slots = slots;
		al.cap = cap;
		free(old);
	}
	for (i = slot_of(b.ptr, al.cap); al.slots[i].ptr; i = (i + 1) & (al.cap - 1))
		;
	al.slots[i] = b;
	atomic_fetch_add(&al.n, 1);
}

/* Whether s may take n more bytes; when not, it is interrupted, and a large
 * request fails. */
static bool refused(struct sb_eval_state *s, size_t n)
{
	if (s->live_alloc + (long long)n <= (long long)s->max_alloc)
		return false;
	sb_eval_state_interrupt(s, SB_EVAL_MAX_ALLOC);
	return n >= REFUSE_MIN;
}

static void charge(struct sb_eval_state *s, void *p, size_t size, size_t charged)
{
	s->live_alloc += (long long)charged;
	pthread_mutex_lock(&al.lock);
	insert((struct block){p, size, charged, s->serial});
	pthread_mutex_unlock(&al.lock);
}

static void *hook_malloc(void *ctx, size_t n)
{
	int d = (int)(intptr_t)ctx;
	struct sb_eval_state *s = sb_eval_current;
	void *p;

	if (!s || n < TRACK_MIN)
		return al.prev[d].malloc(al.prev[d].ctx, n);
	if (refused(s, n))
		return NULL;
	p = al.prev[d].malloc(al.prev[d].ctx, n);
	if (p)
		charge(s, p, n, n);
	return p;
}

static void *hook_calloc(void *ctx, size_t nelem, size_t elsize)
{
	int d = (int)(intptr_t)ctx;
	struct sb_eval_state *s = sb_eval_current;
	size_t n;
	void *p;

	if (!s || __builtin_mul_overflow(nelem, elsize, &n) || n < TRACK_MIN)
		return al.prev[d].calloc(al.prev[d].ctx, nelem, elsize);
	if (refused(s, n))
		return NULL;
	p = al.prev[d].calloc(al.prev[d].ctx, nelem, elsize);
	if (p)
		charge(s, p, n, n);
	return p;
}

/* Takes p's record out (a copy in *b), if it has one. */
static bool take(void *p, struct block *b)
{
	struct block *found;

	if (!p || atomic_load(&al.n) == 0)
		return false;
	pthread_mutex_lock(&al.lock);
	found = find(p);
	if (found) {
		*b = *found;
		remove_at(found);
	}
	pthread_mutex_unlock(&al.lock);
	return found != NULL;
}

static void *hook_realloc(void *ctx, void *p, size_t n)
{
	int d = (int)(intptr_t)ctx;
	struct sb_eval_state *s = sb_eval_current;
	struct block old = {0};
	bool had = take(p, &old), mine = had && s && old.serial == s->serial;
	size_t before = had ? old.size : 0, growth, charged;
	void *q;

	/* An untracked block's size, when the allocator can say it. */
	if (!had && p && s && d == DOMAIN_RAW && al.usable_size)
		before = malloc_usable_size(p);
	growth = n > before ? n - before : 0;
	if (s && n >= TRACK_MIN && refused(s, growth)) {
		if (had) {
			pthread_mutex_lock(&al.lock);
			insert(old);
			pthread_mutex_unlock(&al.lock);
		}
		return NULL;
	}
	q = al.prev[d].realloc(al.prev[d].ctx, p, n);
	if (!q) {
		if (had) {
			pthread_mutex_lock(&al.lock);
			insert(old);
			pthread_mutex_unlock(&al.lock);
		}
		return NULL;
	}
	if (mine)
		s->live_alloc -= (long long)old.charged;
	if (s && n >= TRACK_MIN) {
		charged = mine ? old.charged + growth : growth;
		if (n < before)
			charged = mine && old.charged > before - n ? old.charged - (before - n) : 0;
		charge(s, q, n, charged);
	}
	return q;
}

static void hook_free(void *ctx, void *p)
{
	int d = (int)(intptr_t)ctx;
	struct sb_eval_state *s;
	struct block b;

	if (take(p, &b) && (s = sb_eval_current) && s->serial == b.serial)
		s->live_alloc -= (long long)b.charged;
	al.prev[d].free(al.prev[d].ctx, p);
}

void sb_eval_alloc_forget(struct sb_eval_state *s)
{
	if (atomic_load(&al.n) == 0)
		return;
	pthread_mutex_lock(&al.lock);
	for (size_t i = 0; i < al.cap; i++)
		while (al.slots[i].ptr && al.slots[i].serial == s->serial)
			remove_at(&al.slots[i]);
	pthread_mutex_unlock(&al.lock);
}

/* A fork while another thread holds the table's lock would leave the child
 * a lock nobody releases. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&al.lock);
}

static void fork_done(void)
{
	pthread_mutex_unlock(&al.lock);
}

int sb_eval_alloc_install(void)
{
	bool direct;

	if (al.hooked[DOMAIN_RAW])
		return 0;
	if (pthread_atfork(fork_prepare, fork_done, fork_done) != 0)
		return -1;
	for (size_t d = 0; d < DOMAIN__N; d++)
		PyMem_GetAllocator(domains[d], &al.prev[d]);
	/* The raw allocator CPython starts with has no context; debug hooks
	 * (-X dev, PYTHONMALLOC=debug) and tracing ones have, and their blocks
	 * are not malloc's to measure. */
	al.usable_size = al.prev[DOMAIN_RAW].ctx == NULL;
	/* pymalloc hands every request over 512 bytes to the raw domain; with
	 * PYTHONMALLOC=malloc (or --report's malloc allocator) the object
	 * domains go straight to malloc, and are hooked too. The run report
	 * wraps these domains later (sb_report_collector_start(), after the
	 * guard is armed), on top of this hook: a wrapper installed before it
	 * would make the object domains look like pymalloc and go unhooked
	 * (test_eval.py: test_alloc_budget_in_c_under_the_run_report). */
	direct = al.prev[DOMAIN_OBJ].malloc == al.prev[DOMAIN_RAW].malloc;
	for (size_t d = 0; d < DOMAIN__N; d++) {
		PyMemAllocatorEx hook = {(void *)(intptr_t)d, hook_malloc, hook_calloc,
					 hook_realloc, hook_free};

		if (d != DOMAIN_RAW && !direct)
			continue;
		PyMem_SetAllocator(domains[d], &hook);
		al.hooked[d] = true;
	}
	return 0;
}
