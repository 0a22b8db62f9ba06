/* SPDX-License-Identifier: MIT */
#pragma once

/* The files SQLite opens itself (guard-files-sqlite.c): the database of
 * sqlite3.connect() (the "sqlite3.connect" event), and those its SQL names
 * -- ATTACH DATABASE and VACUUM INTO open any file, with no audit event --
 * through an authorizer the guard puts on every connection as it is
 * initialised and that the program cannot take off: Connection.__init__
 * and set_authorizer() are replaced in the type, so that the program's own
 * authorizer runs after the guard's. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The part's handler of "sqlite3.connect". */
int sb_files_on_sqlite_connect(PyObject *args);
/* _sqlite3 created (guard-part.h module_loaded) or found loaded at
 * activation: its Connection's __init__ and set_authorizer replaced. 0, or
 * -1 with an exception. */
int sb_files_sqlite_module(PyObject *module);
/* After initialisation: _sqlite3 if it is loaded already. 0, or -1 with an
 * exception. */
int sb_files_sqlite_activate(void);
void sb_files_sqlite_release(void);
