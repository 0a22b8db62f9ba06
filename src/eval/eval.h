/* SPDX-License-Identifier: MIT */
#pragma once

/* The eval-* layer (spec section 5): eval/exec/compile of strings, guarded.
 *
 * A source handed over by the program is parsed, checked against the
 * sub-language its profile declares (eval-syntax, eval-call, eval-attribute,
 * eval-import, eval-magic, the static budgets), rewritten so that what the
 * check cannot see is enforced while it runs (attribute reads, allocations,
 * iterations, call depth, the timeout), compiled, and run in a namespace
 * built from the profile. Everything that decides lives in C: the rules, the
 * verdicts, the budgets and the code objects this layer made are in C
 * statics no Python object refers to.
 *
 * This is the layer's whole interface. The guard calls it from three places
 * (src/guard/guard-eval.c, guard-api.c's dynamic-code wrappers and its
 * compile/exec audit events) and the pysandboxes module exposes
 * guarded_eval(). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "eval-builtin.h"

struct sb_profile;

/* Before the interpreter exists (no Python): compiles the profiles. 0 or
 * -errno with *reterr. */
int sb_eval_prepare(const struct sb_profile *profile, char **reterr);
/* After initialisation, before the guard is armed (imports are then the
 * runtime's): the interpreter's pieces the layer needs. profile_path is for
 * messages. 0 or -errno with *reterr. */
int sb_eval_activate(const char *profile_path, char **reterr);
void sb_eval_release(void);

/* Whether the program's eval/exec/compile go to sb_eval_builtin(): the
 * profile has eval-* keys, or learning runs and python-api does not grant
 * dynamic-code (eval constructs are then learned as eval-* rules). */
bool sb_eval_takes_over(void);

/* builtins.eval/exec/compile called by the program (not by a library the
 * guard exempts). The arguments are the builtin's own. */
PyObject *sb_eval_builtin(enum sb_eval_builtin which, PyObject *const *args, Py_ssize_t nargs,
			  PyObject *kwnames);

/* Whether the "compile" or "exec" audit event being raised on this thread is
 * the eval layer's own work (parsing a source it checks, compiling the
 * checked code): the API guard lets it through. */
bool sb_eval_owns_event(void);

/* pysandboxes.guarded_eval(source, profile=None, names=None, mode="eval"). */
PyObject *sb_eval_guarded_eval(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
			       PyObject *kwnames);

/* After an import that changed sys.modules: puts the eval layer's checks on
 * string.Formatter when it appears. 0, or -1 with an exception. */
int sb_eval_after_import(void);
