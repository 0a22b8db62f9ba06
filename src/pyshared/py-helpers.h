/* SPDX-License-Identifier: MIT */
#pragma once

/* Small object-graph helpers shared by the pysandboxes extension and
 * python-sb's worker (the same source is compiled into both). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* obj.a.b.c for the dotted name "a.b.c", one attribute at a time (no
 * import). Steals obj; a new reference, or NULL with an exception. */
PyObject *sb_py_getattr_path(PyObject *obj, const char *dotted);

/* Marks obj as visited in the set seen (by identity): 1 if it was already
 * there, 0 if it was just added, -1 with an exception. */
int sb_py_visit_once(PyObject *seen, PyObject *obj);
