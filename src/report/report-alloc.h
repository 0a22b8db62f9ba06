/* SPDX-License-Identifier: MIT */
#pragma once

#include "report-shm.h"

/* The peak of the memory the program holds through Python's allocators
 * (PyMem_* and PyObject_*), without tracemalloc: a wrapper around the
 * interpreter's own allocators that keeps the size of every block allocated
 * from the start of the program in an address-keyed table, so that a free
 * can be subtracted. Blocks allocated before the start are not counted, nor
 * their release. The peak goes to shm->peak_python_alloc_bytes. */
void sb_report_alloc_start(struct sb_report_shm *shm);
