/* SPDX-License-Identifier: MIT */
#pragma once

/* Code objects (guard-code.c): which may carry a file name exempt from the
 * program's rules (the standard library's, site-packages'), and which code
 * the standard library builds and runs as its own work.
 *
 * Every decision that exempts "the standard library's code" (an import
 * statement written in it, a frame it reads, code it generates) or
 * "site-packages code" (dynamic code, frames: guard-api-check.h) tells that
 * code by its co_filename. That holds only if no code object the program
 * made can carry such a name: so every way a code object comes into being
 * with one -- compile(), marshal (a sourceless .pyc beside the script, a
 * zip on sys.path, marshal.loads() of bytes), code.replace() and
 * CodeType(), _imp._fix_co_filename(), _imp.get_frozen_object() with data
 * -- is checked against the file itself, whatever the python-api= grants
 * say (a grant of dynamic code or deserialization is not a grant of the
 * libraries' exemptions). A name the program's sys.path entries could lead
 * anywhere ("<stdlib>/../../tmp/x.py") is no library's
 * (sb_guard_is_library_file()). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <stdbool.h>

/* Whether code's co_filename is the standard library's (or frozen): code
 * whose functions never run on their own (guard-api.c). */
bool sb_code_is_runtime(PyCodeObject *code);

/* Whether code's co_filename is exempt by its name: the standard
 * library's (or frozen) or site-packages' (sb_guard_is_library_file()). */
bool sb_code_is_library(PyCodeObject *code);

/* compile(source, filename) with filename a library's: 0 when source is
 * that file's content (the import machinery compiling a module without a
 * bytecode cache), else -1 with the refusal set. */
int sb_code_check_compile(PyObject *source, const char *filename);
/* marshal.loads(data) returned result: 0 when no code object in it carries
 * a library's file name, or when data is that module's bytecode cache (its
 * __pycache__ file or, sourceless, the .pyc beside it; header aside); else
 * -1 with the refusal set. data NULL (marshal.load() of a file): no such
 * code object passes. */
int sb_code_check_unmarshalled(PyObject *result, PyObject *data);
/* The refusal of a code object given a library's file name by `what`: -1
 * with RuleApiPermissionError set. */
int sb_code_refuse_laundering(const char *what, const char *filename);

/* Whether the innermost frame is one of the standard library's code
 * generators (namedtuple, dataclasses, typing's forward references...)
 * compiling or running code built from its own template, entered through
 * its public interface (not one of its private helpers called by the
 * program with the program's text), from inputs that cannot carry code
 * (identifiers, a type expression). source: what a "compile" event
 * compiles, NULL for an "exec" event. */
bool sb_code_generated_by_stdlib(PyObject *source);
/* Whether the innermost frame is the standard library's function that
 * derives code objects from existing ones (types.coroutine()). */
bool sb_code_derived_by_stdlib(void);

/* The wrappers of guard-api-wraps.h's CODE_ORIGIN lines: before the call
 * (_imp._fix_co_filename, _imp.get_frozen_object) and on its result
 * (marshal.loads, marshal.load). 0, or -1 with the refusal set. */
int sb_code_check_call(const char *function, PyObject *const *args, Py_ssize_t nargs);
int sb_code_check_result(const char *function, PyObject *result, PyObject *const *args,
			 Py_ssize_t nargs);
