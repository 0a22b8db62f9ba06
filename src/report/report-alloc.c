/* SPDX-License-Identifier: MIT */
/* report-alloc.h. The wrapped allocators are those of PYMEM_DOMAIN_MEM and
 * PYMEM_DOMAIN_OBJ, which are only called with the GIL held: the table needs
 * no lock. The raw domain (called without the GIL, and by the interpreter
 * for its own structures rather than for the program's objects) is left
 * alone. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "report-alloc.h"
#include "util.h"

#define TABLE_MIN (1u << 16)

struct block {
	uintptr_t ptr; /* 0: empty */
	size_t size;
};

static struct {
	struct sb_report_shm *shm;
	PyMemAllocatorEx mem, obj; /* the interpreter's own */
	struct block *table;
	size_t cap, n; /* cap: a power of two, at most half full */
	size_t current, peak;
	bool partial; /* the table could not grow: new blocks are not counted */
} al;

static size_t block_hash(uintptr_t p, size_t cap)
{
	return (size_t)(((uint64_t)p >> 4) * 0x9e3779b97f4a7c15ULL >> 20) & (cap - 1);
}

static bool grow(void)
{
	size_t ncap = al.cap ? al.cap * 2 : TABLE_MIN;
	struct block *n = calloc(ncap, sizeof(*n));

	if (!n)
		return false;
	for (size_t i = 0; i < al.cap; i++) {
		size_t j;

		if (!al.table[i].ptr)
			continue;
		for (j = block_hash(al.table[i].ptr, ncap); n[j].ptr; j = (j + 1) & (ncap - 1))
			;
		n[j] = al.table[i];
	}
	free(al.table);
	al.table = n;
	al.cap = ncap;
	return true;
}

static void track(void *p, size_t size)
{
	size_t i;

	if (!p || al.partial)
		return;
	if ((al.n + 1) * 2 > al.cap && !grow()) {
		al.partial = true;
		al.shm->flags |= SB_REPORT_F_ALLOC_PARTIAL;
		return;
	}
	for (i = block_hash((uintptr_t)p, al.cap); al.table[i].ptr; i = (i + 1) & (al.cap - 1))
		;
	al.table[i] = (struct block){(uintptr_t)p, size};
	al.n++;
	al.current += size;
	if (al.current > al.peak) {
		al.peak = al.current;
		al.shm->peak_python_alloc_bytes = al.peak;
	}
}

/* Linear probing with backward-shift deletion: no tombstones, so a lookup
 * that misses (a block from before the start) stops at the first hole. */
static void untrack(void *p)
{
	size_t i, j, mask = al.cap - 1;

	if (!p || !al.table)
		return;
	for (i = block_hash((uintptr_t)p, al.cap); al.table[i].ptr != (uintptr_t)p;
	     i = (i + 1) & mask)
		if (!al.table[i].ptr)
			return;
	al.current -= al.table[i].size;
	al.n--;
	for (j = (i + 1) & mask; al.table[j].ptr; j = (j + 1) & mask) {
		size_t home = block_hash(al.table[j].ptr, al.cap);

		/* Move j back into the hole unless its home lies cyclically in
		 * (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			al.table[i] = al.table[j];
			i = j;
		}
	}
	al.table[i] = (struct block){0};
}

static void *hook_malloc(void *ctx, size_t size)
{
	PyMemAllocatorEx *a = ctx;
	void *p = a->malloc(a->ctx, size);

	track(p, size);
	return p;
}

static void *hook_calloc(void *ctx, size_t nelem, size_t elsize)
{
	PyMemAllocatorEx *a = ctx;
	void *p = a->calloc(a->ctx, nelem, elsize);

	track(p, nelem * elsize);
	return p;
}

static void *hook_realloc(void *ctx, void *ptr, size_t size)
{
	PyMemAllocatorEx *a = ctx;
	void *p = a->realloc(a->ctx, ptr, size);

	/* On failure the old block is still there, and still counted. */
	if (p) {
		untrack(ptr);
		track(p, size);
	}
	return p;
}

static void hook_free(void *ctx, void *ptr)
{
	PyMemAllocatorEx *a = ctx;

	untrack(ptr);
	a->free(a->ctx, ptr);
}

void sb_report_alloc_start(struct sb_report_shm *shm)
{
	PyMemAllocatorEx mem = {&al.mem, hook_malloc, hook_calloc, hook_realloc, hook_free};
	PyMemAllocatorEx obj = {&al.obj, hook_malloc, hook_calloc, hook_realloc, hook_free};

	if (al.shm)
		return;
	al.shm = shm;
	if (!grow()) {
		al.partial = true;
		shm->flags |= SB_REPORT_F_ALLOC_PARTIAL;
		return;
	}
	/* After initialisation a new allocator must wrap the existing one
	 * (the PyMem_SetAllocator contract): these call it for every block. */
	PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &al.mem);
	PyMem_GetAllocator(PYMEM_DOMAIN_OBJ, &al.obj);
	PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &mem);
	PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &obj);
}
