/* SPDX-License-Identifier: MIT */
#pragma once

/* What the py-sandbox guard's parts share. Each part (imports, files,
 * network, sensitive APIs) keeps its compiled rules in C statics, prepared
 * before the interpreter exists (no Python) and activated after it is
 * initialised, just before the program runs; the audit hook in
 * audit-guard.c dispatches events to the parts' handler tables. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
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

/* Runs every part's after_import (called by the import wrapper). */
int sb_guard_after_import(void);
/* Runs every part's module_loaded. */
int sb_guard_module_loaded(const char *name, PyObject *module);

extern const struct sb_guard_part sb_guard_imports_part;
extern const struct sb_guard_part sb_guard_files_part;
extern const struct sb_guard_part sb_guard_net_part;
/* Resolves and pins the host names of the net= rules; for the launcher to call
 * before the kernel boundary (the net part's prepare() does it otherwise).
 * Warnings ("file:line: message") are for the caller to print. 0 or -errno. */
int sb_guard_net_resolve(const struct sb_profile *profile, char ***ret_warnings, char **reterr);
extern const struct sb_guard_part sb_guard_api_part;
extern const struct sb_guard_part sb_guard_native_files_part;
/* The eval-* layer (src/eval; guard-eval.c adapts it). */
extern const struct sb_guard_part sb_guard_eval_part;

/* True once the program's code is about to run (events before that are the
 * runtime's own start-up). */
bool sb_guard_armed(void);

/* The module if the runtime loaded it already (new reference), else NULL
 * without an exception: a lookup in sys.modules, not an import, which would
 * go through the guarded __import__. */
PyObject *sb_guard_loaded_module(const char *name);

/* The rule file, for messages that say where to add a rule. */
const char *sb_guard_profile_path(void);

/* Whether the innermost Python frame belongs to the interpreter's own library
 * (or the import machinery) rather than to the program. */
bool sb_guard_caller_is_runtime(void);

/* A runtime section, entered and left only from C (the partial-mode worker's
 * own machinery: unpickling a request, importing the function's module). While
 * it is open, the imports it asks for and the globals an unpickler looks up
 * ("import", "exec", "pickle.find_class", the __import__ wrapper) are the
 * runtime's when they happen on the same thread, with the frame the section
 * was entered from or under runtime frames (importlib, runpy) that lead back
 * to it: neither charged to the profile nor refused. Code that runs in new
 * frames (the module's body, the function, a __reduce__ written in Python) is
 * the program's as usual, and the sensitive-API registry is never exempted.
 * Sections nest; the struct lives on the caller's stack. */
struct sb_runtime_section {
	void *saved_tstate;
	void *saved_frame;
	bool saved_active;
};
void sb_guard_runtime_enter(struct sb_runtime_section *s);
void sb_guard_runtime_leave(struct sb_runtime_section *s);
/* Whether the calling code runs inside an open runtime section (C code of
 * ours, or runtime frames it called). */
bool sb_guard_in_runtime_section(void);
/* Whether code from this file (a co_filename) is the interpreter's own
 * library: under the standard library's directory (not its site-packages)
 * or frozen. */
bool sb_guard_is_runtime_file(const char *file);
/* The part of file after the standard library's directory ("/os.py"), or
 * NULL when file is not the standard library's (site-packages excluded). */
const char *sb_guard_runtime_relative(const char *file);
/* Whether file is the standard library's module rel ("/runpy.py"), from
 * the standard library's directory or frozen ("<frozen runpy>"). */
bool sb_guard_is_stdlib_source(const char *file, const char *rel);
/* Whether code (a frame's) is the standard library's function `function`
 * of the module rel ("/pkgutil.py", "resolve_name"): the tables of stdlib
 * functions the guard treats apart are matched with these. */
bool sb_guard_code_is(PyCodeObject *code, const char *file_rel, const char *function);
bool sb_guard_frame_is(PyFrameObject *frame, const char *file_rel, const char *function);

/* When frame is importlib's _call_with_frames_removed(exec, code, namespace)
 * or runpy's _run_code(): the name of the module whose code it is about to
 * run and the namespace it runs in (new references; both NULL otherwise),
 * and whether that is the interpreter's own `-m` main module. No exception
 * is left set. (guard-imports.c) */
void sb_guard_module_run_target(PyFrameObject *frame, PyObject **ret_name, PyObject **ret_ns,
				bool *ret_as_main);

/* Raising the pysandboxes exception classes (pysandboxes-module.c). Each sets
 * the exception and returns -1 (so a handler can `return sb_raise_...`). */
int sb_raise_file_not_found(const char *path, const char *message);
int sb_raise_permission(int errnum, const char *path, const char *message);
int sb_raise_connection_refused(const char *message);
int sb_raise_module_not_found(const char *name, const char *message);
int sb_raise_api_denied(const char *qualname, const char *category);
/* RuleApiPermissionError with .qualname and .category, and this message. */
int sb_raise_api_error(const char *qualname, const char *category, const char *message);

/* The built-in module "pysandboxes", registered with PyImport_AppendInittab
 * before initialisation. */
PyObject *sb_pysandboxes_module_init(void);

/* The files part's decision for one path (AF_UNIX socket paths: the network
 * part): 0, or -1 with the pysandboxes exception set. */
int sb_guard_file_check(const char *path, bool write);
