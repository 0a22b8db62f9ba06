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
	SB_EXC__N,
};

/* Where partial mode keeps the denials recorded in the worker: pickle drops
 * the exception chain, so the worker lists them and the parent attaches the
 * list to the exception it rebuilds. sandbox_denials() reads it. */
#define SB_DENIALS_ATTR "__pysandboxes_denials__"

/* Creates the classes (once per process) and adds them to module. 0 or -1
 * with an exception set. */
int sb_exc_add_classes(PyObject *module);

/* The class (borrowed), or NULL before sb_exc_add_classes(). */
PyObject *sb_exc_class(enum sb_exc which);

/* sandbox_denials(e), a METH_O function. */
PyObject *sb_exc_sandbox_denials(PyObject *self, PyObject *exc);
