/* SPDX-License-Identifier: MIT */
#pragma once

/* Formatting reads attributes and allocates in C, out of the rewrite's
 * sight: `'{0.__class__}'.format(x)` has no Attribute node, and
 * `f'{1:0100000000d}'` pads in C. The templates are checked field by field
 * before the C code runs: each attribute of a field against the attribute
 * rules, each width and precision against eval-max-alloc. That covers
 * str.format and format_map (returned wrapped by the attribute read),
 * f-string specs (the rewrite's __sb_format__), the format() builtin (a
 * shim), and string.Formatter, whose get_field and format_field are wrapped
 * on the class while an evaluation runs on the thread. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "eval-profile.h"
#include "eval-state.h"

/* The bound or unbound str.format/str.format_map that obj.name gave
 * (new reference), checking its template when called. */
PyObject *sb_eval_format_wrap(struct sb_eval_rules *r, PyObject *obj, PyObject *name,
			      PyObject *method);
/* format(value, spec), spec checked first. */
PyObject *sb_eval_format_value(struct sb_eval_state *s, PyObject *value, PyObject *spec);
/* __sb_format__(value, conversion, spec): an f-string field with a spec. */
PyObject *sb_eval_format_field(struct sb_eval_state *s, PyObject *value, PyObject *conversion,
			       PyObject *spec);
/* Wraps string.Formatter's get_field and format_field once the module is
 * loaded (again after it is reloaded). 0, or -1 with an exception. */
int sb_eval_format_patch_formatter(void);
