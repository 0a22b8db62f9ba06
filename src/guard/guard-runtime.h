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

/* ---- Who asked ------------------------------------------------------------
 *
 * The import machinery (importlib's bootstrap, its loaders, zipimport) acts
 * on a name or a spec handed to it: its frames say nothing about whose
 * request it serves, and the program can call any of its functions
 * directly (they are reachable through sys.modules). So what it does is
 * charged to the request it serves: an import request made through one of
 * the guard's doors (the __import__ wrapper, importlib's import functions,
 * _imp's module creation), recorded here for the time it is served, or,
 * when the machinery was not entered through a door, to the code that
 * called it. */

/* An import request being served on this thread, the innermost first. The
 * struct lives on the stack of the door that was asked. */
struct sb_import_request {
	struct sb_import_request *outer;
	void *frame; /* the frame that asked (identity only); NULL: none */
	/* The absolute module name asked for (its top-level package alone
	 * when the whole name does not fit), "" when none fits or none is
	 * known: a copy, which nothing the request runs can change. */
	char name[128];
	/* An extension or built-in module's creation or execution: the names
	 * its C code imports are written in it, its own. */
	bool c_code;
	/* _imp making or executing an extension module whose shared object
	 * lies in the standard library's or a site-packages tree (the file
	 * _imp loads, or the one the module's definition lives in): its C code
	 * is the library's (sb_guard_library_extension_acting()). */
	bool library_extension;
};

/* Opens a request for name (copied; NULL: none known), asked by the
 * innermost frame; closed in reverse order. */
void sb_guard_request_enter(struct sb_import_request *r, const char *name, bool c_code);
void sb_guard_request_leave(struct sb_import_request *r);

enum sb_requester {
	/* The program's code: the innermost frame, or the first frame past
	 * the import machinery. */
	SB_ASKED_BY_PROGRAM,
	/* The standard library's code (not the import machinery): the first
	 * frame past the machinery, or the innermost frame. What it asks for
	 * is its own only when the name is written in its code; a name it
	 * computes (__import__(name), importlib.import_module(name)) may be
	 * the program's. */
	SB_ASKED_BY_STDLIB,
	/* The import machinery serving an open request (*ret_request). */
	SB_ASKED_FOR_REQUEST,
	/* No Python frame at all and no open request: the interpreter (its
	 * start, a C callback such as atexit or a thread's start). */
	SB_ASKED_BY_NOBODY,
};

/* Who asked for what is happening now: the innermost frame, or for the
 * import machinery's frames the request they serve or the first frame past
 * them. *ret_frame (a new reference, for SB_ASKED_BY_STDLIB and
 * SB_ASKED_BY_PROGRAM) is that frame. No exception is left set. */
enum sb_requester sb_guard_requester(const struct sb_import_request **ret_request,
				     PyFrameObject **ret_frame);
/* Whether the C code of a library extension module is acting on its own
 * account now: the innermost request is _imp making or executing such a
 * module for the import machinery (the request's frame is the machinery's)
 * and no Python frame has been pushed since (the innermost frame is still
 * the request's), so no Python code of the program is running. A C callable
 * the program planted (a finalizer that gc runs meanwhile) runs under the
 * same frames: what this exempts must be harmless in any hands. */
bool sb_guard_library_extension_acting(void);
/* Whether code of this file (a co_filename) is the import machinery. */
bool sb_guard_is_import_machinery(const char *file);
/* Whether frame is executing an import statement (IMPORT_NAME) for name
 * at this level, with globals its own: the name is written in its code. */
bool sb_guard_frame_imports_literal(PyFrameObject *frame, PyObject *name, PyObject *globals,
				    int level);
/* Whether the program's own code has started (the interpreter raised
 * cpython.run_file, run_command, run_module, run_stdin...): the frameless
 * requests before that are the interpreter's start. */
bool sb_guard_program_started(void);
void sb_guard_note_program_start(void);
/* The interpreter's `python-sb -m module`: cpython.run_module was raised
 * and runpy's _run_module_as_main is about to be called from C. */
void sb_guard_note_main_module(void);
/* Whether frame is runpy's _run_module_as_main that the interpreter called
 * for -m (the first one met with no frame below it after
 * sb_guard_note_main_module(), kept alive so that no later frame takes its
 * place), not one the program called or planted as a callback. */
bool sb_guard_is_main_run_frame(PyFrameObject *frame);
/* Whether every frame from the innermost out is the runtime's and the
 * outermost is the interpreter's -m run: the interpreter loading the
 * program's main module, as it does a script. */
bool sb_guard_in_main_run(void);
/* Whether the import machinery is at work for an import a door let through
 * (the import guard judged it), for the interpreter's -m, or for a runtime
 * section: what it does then (stat probes, compiling a module's source,
 * reading its bytecode cache) is the runtime's own. */
bool sb_guard_serving_import(void);

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
 * NULL when file is not the standard library's (site-packages excluded,
 * and a name with a "." or ".." component or an empty one). */
const char *sb_guard_runtime_relative(const char *file);
/* The part of file after the site-packages or dist-packages directory of
 * sys.path it lies under ("/attr/_make.py"), or NULL. The directories are
 * sys.path's when the guard was activated, before the program ran. */
const char *sb_guard_site_relative(const char *file);
/* Whether code from this file (a co_filename) is a third-party library's:
 * under such a directory. The API guard exempts it as a path (dynamic code,
 * frames: guard-api-check.h). */
bool sb_guard_is_site_file(const char *file);
/* Whether a co_filename is one the guard exempts by its name: the standard
 * library's (or frozen) or a site-packages directory's. No code object may
 * carry one unless it came from that very file (guard-code.h). A name with
 * a "." or ".." component or an empty one is neither: importlib joins
 * sys.path entries as they are, so such a name can lead anywhere. */
bool sb_guard_is_library_file(const char *file);
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
/* The local variable `name` of frame (a new reference), or NULL (no
 * exception) when it has none. */
PyObject *sb_guard_frame_local(PyFrameObject *frame, const char *name);

/* Life cycle (audit-guard.c): the rule file's name before the interpreter
 * exists (0 or -ENOMEM); the standard library's directory once it is
 * initialised (0 or -ENOMEM); armed just before the program runs; all of it
 * forgotten after the interpreter is gone. */
int sb_guard_runtime_prepare(const char *profile_path);
int sb_guard_runtime_activate(void);
void sb_guard_runtime_arm(void);
void sb_guard_runtime_release(void);
