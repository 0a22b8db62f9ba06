/* SPDX-License-Identifier: MIT */
#pragma once

/* The caller's script, run again in the worker (as __mp_main__) to find its
 * functions, imports at its top level what the caller needs; the worker's
 * rules may refuse those modules. Such an import statement of the script's
 * own top level does not stop the worker: its names are bound to
 * placeholders that raise the refusal (RuleModuleNotFoundError, with its
 * rule) when a sandboxed function uses them, so that the worker needs a
 * module only where a sandboxed function needs it. No refused module's code
 * runs: a placeholder holds the refusal's text and nothing else. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Before module's code runs: builtins.__import__ becomes one that defers
 * the refusals of module's top-level import statements, until
 * sb_deferred_imports_end() puts the guard's back. 0, or -1 with an
 * exception set (nothing changed). */
int sb_deferred_imports_begin(PyObject *module);

/* After module's code ran (an exception set is kept). */
void sb_deferred_imports_end(void);
