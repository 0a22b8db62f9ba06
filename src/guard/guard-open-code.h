/* SPDX-License-Identifier: MIT */
#pragma once

/* The bytecode caches of the code exempt by its file name (the standard
 * library's, site-packages'), read once (guard-open-code.c).
 *
 * importlib reads a module's .pyc with io.open_code() and unmarshals it;
 * the guard then admits the code's file name, when it is one of those, only
 * if the bytes are that module's cache (guard-code.c). Proving it by
 * reading the file a second time cost every import four system calls and a
 * copy of the file through the cache (about 1 % of a small program's
 * start), so the guard serves io.open_code() of such a cache (a .pyc in
 * a __pycache__ of the tree) itself: it raises the same "open" event
 * io.open() would, reads the file in one pass into a bytes object it keeps
 * a reference to, and hands back an io.BytesIO over it, whose read()
 * returns that very object. When those bytes come back to marshal.loads()
 * (a view of them), their address is the proof: the guard holds them, and
 * bytes cannot change. Any other data (a sourceless module's .pyc, which
 * importlib reads with FileIO) still takes the second read. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <stddef.h>

/* Installs the hook with PyFile_SetOpenCodeHook(), before
 * Py_InitializeFromConfig(): CPython keeps the first hook for the
 * process and refuses to replace it. 0 or -EBUSY. */
int sb_open_code_install(void);

/* Takes _io and its BytesIO from sys.modules, after
 * Py_InitializeFromConfig() and before the program: from then on the hook
 * serves the standard library's caches (before, its place is not known).
 * 0 or -ENOENT. */
int sb_open_code_activate(void);
/* Forgets the records, after Py_FinalizeEx(). */
void sb_open_code_release(void);

/* Whether data[0..len) is what the hook read from `path` (a library's
 * cache), after its first skip bytes: the very buffer, still held. The
 * record is dropped when it matches (importlib unmarshals a
 * cache once; a second look takes the second read). */
bool sb_open_code_served(const char *path, size_t skip, const char *data, size_t len);
