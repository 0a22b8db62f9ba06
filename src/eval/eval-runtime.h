/* SPDX-License-Identifier: MIT */
#pragma once

/* What the eval layer takes from the interpreter at activation, before the
 * program runs: the builtins module's own namespace, unwrapped copies of
 * compile/eval/exec (the guard wraps the builtins module's), the C modules
 * the checks read (_ast, _string), and the flag that marks the layer's own
 * compile/exec audit events. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "eval-builtin.h"

int sb_eval_runtime_activate(const char *profile_path, char **reterr);
void sb_eval_runtime_release(void);

/* The builtins module's dict (borrowed). */
PyObject *sb_eval_builtins_dict(void);
/* compile/eval/exec as CPython defines them, made from the builtins module's
 * method table: no wrapper of the guard in front (borrowed). */
PyObject *sb_eval_original(enum sb_eval_builtin which);
/* The _string module (formatter_parser, formatter_field_name_split). */
PyObject *sb_eval_string_module(void);
/* The _ast module. */
PyObject *sb_eval_ast_module(void);
/* The rule file, for "add ... to '<file>'". */
const char *sb_eval_profile_path(void);

/* A module the runtime loaded already (new reference), else NULL without an
 * exception: a lookup in sys.modules, never an import. */
PyObject *sb_eval_loaded_module(const char *name);

/* Nonzero while the layer compiles or runs on this thread what it compiled
 * itself: sb_eval_owns_event() reads it. */
extern _Thread_local unsigned sb_eval_own_events;

/* Learning mode (src/learn, through the guard's refusal hook): whether it
 * runs, and a record of something evaluated code used that the eval profile
 * of that name (NULL: the default one) does not allow (kind: enum
 * sb_eval_learn_kind). */
bool sb_eval_learning(void);
void sb_eval_record(const char *profile, int kind, const char *name);
