/* SPDX-License-Identifier: MIT */
#pragma once

/* The API guard's C wrappers (guard-api-wrap.c): each function of
 * guard-api-wraps.h is replaced, in every module that holds it and in
 * modules loaded later (after an import, or as _imp creates them), by a
 * wrapper that decides (guard-api-check.h) before calling the original. A
 * wrapper whose call causes an audit event "claims" it, so that the event
 * handler (guard-api.c) only judges calls that reached the original by some
 * path around the wrappers. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "guard-api-table.h"

/* Life cycle (guard-api.c): the wrappers' method table before the
 * interpreter exists; after initialisation, installed on the modules loaded
 * so far (0, or -1 with an exception); dropped after the run. */
void sb_api_wrap_prepare(void);
int sb_api_wrap_activate(void);
void sb_api_wrap_release(void);

/* The part's after_import (guard-part.h): the guarded modules written in
 * Python, wrapped when they appear in sys.modules. */
int sb_api_wrap_after_import(void);

/* Whether a wrapper announced the event of this family that is being raised
 * on this thread; the claim is used up. */
bool sb_api_claimed(enum sb_api_family family);

/* The module object every wrapper of m was installed on (borrowed), NULL
 * if none yet. */
PyObject *sb_api_wrapped_module(enum sb_api_module m);
/* Whether module is still running its body (its spec says _initializing). */
bool sb_api_module_initializing(PyObject *module);
