/* SPDX-License-Identifier: MIT */
#pragma once

/* The namespace evaluated code runs in (spec section 5, eval-namespace):
 *   closed     built from eval-call alone: the caller's dicts are ignored;
 *   adaptive   a globals dict the caller passes is used, its __builtins__
 *              (CPython's automatic injection of every builtin is never
 *              honoured: without one, eval-call gives it); a bare eval(e)
 *              sees nothing of the caller's globals or locals;
 *   guarded_eval  eval-call plus the names passed, whatever the mode.
 * Whatever the caller supplies, the capability builtins in it are replaced
 * by their guarded forms and the helpers are added; a caller's dict gets its
 * own __builtins__ back when the evaluation ends. Each risky value a caller
 * supplies raises a SandboxContextWarning, once per call site. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "eval-profile.h"

struct sb_eval_ns {
	PyObject *globals, *locals; /* what the code runs with */
	PyObject *caller_dict;	    /* a caller's dict whose __builtins__ was replaced */
	PyObject *saved_builtins;   /* its value before (NULL: it had none) */
	bool context;		    /* the caller supplied the namespace */
};

/* globals_arg, locals_arg: eval's and exec's arguments (NULL or None when
 * absent); names: guarded_eval's (NULL otherwise, and then the profile's
 * mode applies). 0, or -1 with an exception. */
int sb_eval_namespace_open(struct sb_eval_rules *r, PyObject *globals_arg, PyObject *locals_arg,
			   PyObject *names, bool guarded_eval, struct sb_eval_ns *ns);
void sb_eval_namespace_close(struct sb_eval_ns *ns);

/* "s.py:3": the file (its base name) and line of the Python code calling;
 * malloc'ed, NULL when none. */
char *sb_eval_namespace_call_site(void);
/* For learning: the call site whose namespace came from the caller. */
void sb_eval_namespace_record_context(const struct sb_eval_rules *r);

/* The __builtins__ of a namespace built from eval-call (borrowed, made once
 * per profile). NULL with an exception. */
PyObject *sb_eval_builtins_for(struct sb_eval_rules *r);
