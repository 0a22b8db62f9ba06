/* SPDX-License-Identifier: MIT */
/* report-alloc.h. The MEM and OBJ domains are only called with the GIL held:
 * the counters need no lock. The raw domain (called without the GIL, by the
 * interpreter for its own structures rather than for the program's objects)
 * is left alone. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <malloc.h>
#include <stdint.h>

#include "report-alloc.h"
#include "util.h"

static struct {
	struct sb_report_shm *shm;
	PyMemAllocatorEx mem, obj; /* the interpreter's own: malloc's */
	int64_t current;	   /* may go below 0: blocks from before the start, freed */
	int64_t peak;
} al;

static inline void grew(int64_t delta)
{
	al.current += delta;
	if (al.current > al.peak) {
		al.peak = al.current;
		al.shm->peak_python_alloc_bytes = (uint64_t)al.peak;
	}
}

static void *hook_malloc(void *ctx, size_t size)
{
	PyMemAllocatorEx *a = ctx;
	void *p = a->malloc(a->ctx, size);

	if (p)
		grew((int64_t)malloc_usable_size(p));
	return p;
}

static void *hook_calloc(void *ctx, size_t nelem, size_t elsize)
{
	PyMemAllocatorEx *a = ctx;
	void *p = a->calloc(a->ctx, nelem, elsize);

	if (p)
		grew((int64_t)malloc_usable_size(p));
	return p;
}

static void *hook_realloc(void *ctx, void *ptr, size_t size)
{
	PyMemAllocatorEx *a = ctx;
	int64_t before = ptr ? (int64_t)malloc_usable_size(ptr) : 0;
	void *p = a->realloc(a->ctx, ptr, size);

	/* On failure the old block is still there, still counted. */
	if (p)
		grew((int64_t)malloc_usable_size(p) - before);
	return p;
}

static void hook_free(void *ctx, void *ptr)
{
	PyMemAllocatorEx *a = ctx;

	if (ptr)
		al.current -= (int64_t)malloc_usable_size(ptr);
	a->free(a->ctx, ptr);
}

void sb_report_alloc_preconfig(PyPreConfig *preconfig)
{
	/* Every block a malloc block: its size is known without a table, and
	 * no lookup per allocation (a table cost 2.5 times the run time of an
	 * allocation-heavy program; bench/README.md). */
	preconfig->allocator = PYMEM_ALLOCATOR_MALLOC;
}

void sb_report_alloc_start(struct sb_report_shm *shm)
{
	PyMemAllocatorEx mem = {&al.mem, hook_malloc, hook_calloc, hook_realloc, hook_free};
	PyMemAllocatorEx obj = {&al.obj, hook_malloc, hook_calloc, hook_realloc, hook_free};
	PyMemAllocatorEx check;

	if (al.shm)
		return;
	al.shm = shm;
	/* Only if both domains are malloc's: a pymalloc block has no
	 * malloc_usable_size(). */
	PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &al.mem);
	PyMem_GetAllocator(PYMEM_DOMAIN_OBJ, &al.obj);
	PyMem_GetAllocator(PYMEM_DOMAIN_RAW, &check);
	if (al.mem.malloc != check.malloc || al.obj.malloc != check.malloc) {
		shm->flags |= SB_REPORT_F_ALLOC_PARTIAL;
		return;
	}
	/* After initialisation a new allocator must wrap the existing one
	 * (the PyMem_SetAllocator contract): these call it for every block. */
	PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &mem);
	PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &obj);
}
