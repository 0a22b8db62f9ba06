/* SPDX-License-Identifier: MIT */
#pragma once

/* The helpers the rewrite injects into checked code (eval-rewrite.c) and the
 * guarded builtins a namespace binds under their own names (eval-shims.c).
 * Both are C functions bound to their profile. The helpers' names start with
 * the reserved prefix: a source that mentions it is refused, so evaluated
 * code can neither call, rebind nor shadow them. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "eval-attr.h"
#include "eval-ops.h"
#include "eval-profile.h"

#define SB_EVAL_H_GETATTR "__sb_getattr__" /* (obj, name): an attribute read */
#define SB_EVAL_H_BINOP	  "__sb_binop__"   /* (op, left, right): an operator that allocates */
#define SB_EVAL_H_AUG	  "__sb_aug__"	   /* (op, target, value) -> value: x op= value */
#define SB_EVAL_H_ITER	  "__sb_iter__"	   /* (iterable): for loops, comprehensions */
#define SB_EVAL_H_TICK	  "__sb_tick__"	   /* (): a while or async for iteration */
#define SB_EVAL_H_ENTER	  "__sb_enter__"   /* (): a function's entry */
#define SB_EVAL_H_CATCH	  "__sb_catch__"   /* (types): an except clause's types */
#define SB_EVAL_H_FORMAT  "__sb_format__"  /* (value, conversion, spec): an f-string field */

/* Adds the helpers bound to r to dict. 0, or -1 with an exception. */
int sb_eval_helpers_add(struct sb_eval_rules *r, PyObject *dict);
