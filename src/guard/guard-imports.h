/* SPDX-License-Identifier: MIT */
#pragma once

/* What the imports part (guard-imports.c) tells the other parts. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <stdbool.h>

/* When frame is importlib's _call_with_frames_removed(exec, code, namespace)
 * or runpy's _run_code(): the name of the module whose code it is about to
 * run and the namespace it runs in (new references; both NULL otherwise),
 * and whether that is the interpreter's own `-m` main module. No exception
 * is left set. */
void sb_guard_module_run_target(PyFrameObject *frame, PyObject **ret_name, PyObject **ret_ns,
				bool *ret_as_main);
