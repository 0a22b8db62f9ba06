/* SPDX-License-Identifier: MIT */
#pragma once

/* The pysandboxes exception classes and sandbox_denials(): one source compiled
 * into python-sb's built-in `pysandboxes` module and into the `pysandboxes._core`
 * extension an ordinary python3 imports. Both create classes whose module is
 * `pysandboxes` with the same names, so an exception crosses the partial-mode
 * boundary by (module, qualname). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

enum sb_exc {
	SB_EXC_SANDBOX_ERROR,
	SB_EXC_FILE_NOT_FOUND,
	SB_EXC_PERMISSION,
	SB_EXC_CONNECTION_REFUSED,
	SB_EXC_MODULE_NOT_FOUND,
	SB_EXC_API_PERMISSION,
	SB_EXC_ATTRIBUTE,
	SB_EXC_EVAL_PERMISSION,
	SB_EXC_EVAL_SYNTAX,
	SB_EXC_CONFIG_SYNTAX,
	SB_EXC_PROTOCOL,
	SB_EXC_BASE_EXCEPTION,
	SB_EXC_RESTRICTED_UNPICKLING,
	SB_EXC_EVAL_INTERRUPTED,
	SB_EXC_CONTEXT_WARNING,
	SB_EXC__N,
};

/* Where partial mode keeps the denials recorded in the worker: pickle drops
 * the exception chain, so the worker lists them and the parent attaches the
 * list to the exception it rebuilds. sandbox_denials() reads it. */
#define SB_DENIALS_ATTR "__pysandboxes_denials__"

/* Adds every class to module (each made once per process, on first use).
 * 0 or -1 with an exception set. */
int sb_exc_add_classes(PyObject *module);

/* The same without the classes whose base needs an import (Restricted-
 * UnpicklingError's, from _pickle): for a module that makes those in its
 * __getattr__ (sb_exc_find, sb_exc_class). */
int sb_exc_add_ready_classes(PyObject *module);

/* The class (borrowed), made with SandBoxError on first use; NULL with an
 * exception set if that fails. */
PyObject *sb_exc_class(enum sb_exc which);

/* The class's name ("SandBoxError"), NULL for no class. */
const char *sb_exc_name(enum sb_exc which);

/* The class named name (a str), or -1 (no exception) for none. */
int sb_exc_find(PyObject *name);

/* sandbox_denials(e), a METH_O function. */
PyObject *sb_exc_sandbox_denials(PyObject *self, PyObject *exc);
