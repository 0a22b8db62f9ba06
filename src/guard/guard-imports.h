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

#include "guard-runtime.h"

/* _imp is about to create or execute a module (create_builtin(spec),
 * create_dynamic(spec), exec_builtin(module), exec_dynamic(module),
 * init_frozen(name)), or importlib.reload(module) to run one again: judged
 * as an import asked by its caller (there is no "import" event for a
 * built-in or frozen module, and the program can call _imp directly); then
 * *r is the open request (of the module's C code, for _imp), to be left
 * with sb_guard_request_leave() once the call returns. 0, or -1 with the
 * refusal set (no request opened). */
int sb_guard_imp_enter(const char *function, PyObject *const *args, Py_ssize_t nargs,
		       struct sb_import_request *r);
