/* SPDX-License-Identifier: MIT */
#pragma once

/* Whose code is running: the interpreter's own (its standard library, the
 * import machinery, a runtime section opened from C) or the program's. The
 * guard's parts ask this before charging an event to the profile; learning
 * and the partial-mode worker ask whether the guard is armed and open runtime
 * sections. The state is C data no Python object refers to; audit-guard.c
 * sets it up (sb_guard_runtime_prepare/activate/arm/release). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <stdbool.h>

/* Read on every audit event and wrapped call: inline, from one struct that
 * only guard-runtime.c writes. Hidden, so that python-sb does not export it
 * with the interpreter's symbols (-export-dynamic). */
struct sb_guard_run_state {
	bool armed;	   /* the program's code is about to run */
	bool section_open; /* a runtime section is open, on some thread */
};
extern struct sb_guard_run_state sb_guard_run __attribute__((visibility("hidden")));

/* True once the program's code is about to run (events before that are the
 * runtime's own start-up). */
static inline bool sb_guard_armed(void)
{
	return sb_guard_run.armed;
}

/* The rule file, for messages that say where to add a rule. */
const char *sb_guard_profile_path(void);

/* The module if the runtime loaded it already (new reference), else NULL
 * without an exception: a lookup in sys.modules, not an import, which would
 * go through the guarded __import__. */
PyObject *sb_guard_loaded_module(const char *name);

/* Whether the innermost Python frame belongs to the interpreter's own library
 * (or the import machinery) rather than to the program. */
bool sb_guard_caller_is_runtime(void);

/* Whether the innermost Python frame is importlib's bootstrap (its stat
 * probes and bytecode-cache writes). */
bool sb_guard_caller_is_import_bootstrap(void);

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
/* The dotted name of the standard library's module whose code file is (a
 * co_filename): "x.y" for "<frozen x.y>", or for "/x/y.py" and
 * "/x/y/__init__.py" under the standard library's directory (not its
 * site-packages), into buf. false when file is none of these (or the name
 * would not fit): then sb_guard_is_stdlib_source() is false for every
 * module of the standard library. */
bool sb_guard_stdlib_module(const char *file, char *buf, size_t size);
/* Whether code (a frame's) is the standard library's function `function`
 * of the module rel ("/pkgutil.py", "resolve_name"): the tables of stdlib
 * functions the guard treats apart are matched with these. */
bool sb_guard_code_is(PyCodeObject *code, const char *file_rel, const char *function);
bool sb_guard_frame_is(PyFrameObject *frame, const char *file_rel, const char *function);

/* Life cycle (audit-guard.c): the rule file's name before the interpreter
 * exists (0 or -ENOMEM); the standard library's directory once it is
 * initialised (0 or -ENOMEM); armed just before the program runs; all of it
 * forgotten after the interpreter is gone. */
int sb_guard_runtime_prepare(const char *profile_path);
int sb_guard_runtime_activate(void);
void sb_guard_runtime_arm(void);
void sb_guard_runtime_release(void);
