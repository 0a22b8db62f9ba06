/* SPDX-License-Identifier: MIT */
#pragma once

/* The interface of the py-sandbox guard's parts. Each part (imports, files,
 * network, sensitive APIs, files opened by extension modules) keeps its
 * compiled rules in C statics, prepared before the interpreter exists (no
 * Python) and activated after it is initialised, just before the program
 * runs; the audit hook in audit-guard.c dispatches events to the parts'
 * handler tables and implements the two calls below, with which a part
 * reaches the others. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "boundary.h"
#include "profile.h"

/* One audit event a part handles: 0 to allow, -1 with a Python exception set
 * to refuse. Several parts may handle the same event (socket.connect: the
 * network part for addresses, the files part for AF_UNIX paths); each is
 * called in turn until one refuses. */
struct sb_audit_handler {
	const char *event;
	int (*handle)(PyObject *args);
};

/* One part of the guard. prepare() runs before the interpreter exists and
 * must not touch Python (it compiles rules into C data); activate() runs after
 * initialisation, before the program (it may wrap functions that raise no
 * audit event); release() frees after the interpreter is gone. */
struct sb_guard_part {
	const char *name;
	int (*prepare)(const struct sb_profile *profile, const struct sb_interp_paths *interp,
		       char **reterr);
	int (*activate)(char **reterr);
	void (*release)(void);
	const struct sb_audit_handler *handlers;
	size_t n_handlers;
	/* Optional: called after an import through builtins.__import__ that
	 * changed sys.modules, to wrap functions of modules loaded late (those
	 * raising no audit event). 0; 1 to be called after the next import even
	 * if sys.modules does not change (a module still initialising); or -1
	 * with a Python exception. */
	int (*after_import)(void);
	/* Optional: called when _imp has created or executed an extension or
	 * built-in module, before anyone else sees it (guard-api.c's _imp
	 * hooks), to wrap its functions. 0, or -1 with a Python exception. */
	int (*module_loaded)(const char *name, PyObject *module);
};

/* The parts, in the order audit-guard.c prepares and activates them. */
extern const struct sb_guard_part sb_guard_imports_part;
extern const struct sb_guard_part sb_guard_files_part;
extern const struct sb_guard_part sb_guard_net_part;
extern const struct sb_guard_part sb_guard_api_part;
extern const struct sb_guard_part sb_guard_native_files_part;
/* The eval-* layer (src/eval; guard-eval.c adapts it). */
extern const struct sb_guard_part sb_guard_eval_part;

/* Runs every part's after_import (called by the import wrapper). */
int sb_guard_after_import(void);
/* Runs every part's module_loaded. */
int sb_guard_module_loaded(const char *name, PyObject *module);
