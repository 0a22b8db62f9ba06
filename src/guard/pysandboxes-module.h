/* SPDX-License-Identifier: MIT */
#pragma once

/* The built-in module `pysandboxes` of python-sb, and the guard's refusals
 * as its exception classes (pysandboxes-module.c; the classes themselves are
 * src/pyshared/exceptions.c). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Registered with PyImport_AppendInittab before initialisation. */
PyObject *sb_pysandboxes_module_init(void);

/* Each sets the exception and returns -1 (so a handler can `return
 * sb_raise_...`). */
int sb_raise_file_not_found(const char *path, const char *message);
int sb_raise_permission(int errnum, const char *path, const char *message);
int sb_raise_connection_refused(const char *message);
int sb_raise_module_not_found(const char *name, const char *message);
int sb_raise_api_denied(const char *qualname, const char *category);
/* RuleApiPermissionError with .qualname and .category, and this message. */
int sb_raise_api_error(const char *qualname, const char *category, const char *message);
