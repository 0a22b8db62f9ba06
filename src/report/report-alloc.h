/* SPDX-License-Identifier: MIT */
#pragma once

#include <Python.h>

#include "report-shm.h"

/* The peak of the memory the program holds through Python's allocators
 * (PyMem_* and PyObject_*), without tracemalloc and without a table of
 * blocks: when a report is asked for, the interpreter is pre-initialised with
 * the malloc allocator in every domain instead of pymalloc
 * (sb_report_alloc_preconfig()), so that the size of any block, allocated
 * before the program started or after, is malloc_usable_size(); a wrapper
 * around the MEM and OBJ domains adds and subtracts it. What is measured is
 * the growth over what the interpreter held when the program started, as
 * malloc counts it (its usable size, a few bytes over the size asked);
 * its peak goes to shm->peak_python_alloc_bytes. */

/* Before Py_PreInitialize, when a report was asked for. */
void sb_report_alloc_preconfig(PyPreConfig *preconfig);
/* Just before the program runs. */
void sb_report_alloc_start(struct sb_report_shm *shm);
