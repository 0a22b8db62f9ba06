/* SPDX-License-Identifier: MIT */
#pragma once

/* os.listdir() and os.scandir() without the entries ignore= rules hide
 * (guard-files-listing.c): the wrappers (guard-files-wrap.c) pass the
 * original's result through. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

/* After initialisation: the filtering iterator's type. 0, or -1 with an
 * exception. */
int sb_files_listing_activate(void);

/* The listing of path (the argument the original got: str, bytes, an fd or
 * None) with the ignored entries left out: a list for listdir(), an iterator
 * over result for scandir(). Takes result's reference; NULL with an
 * exception when result is NULL or on error. Without ignore= rules, result
 * itself. */
PyObject *sb_files_filter_listing(PyObject *path, PyObject *result, bool scandir);
