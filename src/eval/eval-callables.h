/* SPDX-License-Identifier: MIT */
#pragma once

/* C callables that do, from a string or in one C call, what the eval layer
 * checks when evaluated code spells it out (spec section 5). Read off a
 * module, a type or an object -- `operator.attrgetter`, `builtins.getattr`,
 * `print.__self__.getattr`, `int.__floordiv__`, `math.factorial`, `from
 * operator import methodcaller`, `type(attrgetter('x'))` -- they would look
 * attributes up, or run quadratic big-integer work, out of the guard's
 * sight. So they come back:
 *   - as the guarded builtin of the same name (getattr, vars, eval...);
 *   - wrapped, the names they will look up checked against eval-attribute,
 *     eval-magic and the names no rule allows (attrgetter and methodcaller
 *     at creation, a dotted name part by part; __getattribute__ and
 *     __getattr__ at each call);
 *   - wrapped, their work charged as the operator's (operator.mul,
 *     int.__pow__, math.factorial, math.prod...);
 *   - or refused when read: what hands over frames, namespaces or any
 *     object by name, or imports past eval-import (sys._getframe,
 *     gc.get_referents, pickle.loads, inspect.getmembers,
 *     importlib.import_module, __setattr__, __reduce_ex__...). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "eval-profile.h"

/* value is obj.name (obj and name NULL: a value reached otherwise, type(x)
 * or an import's from-list): the guarded form of value, or value itself
 * (new reference); NULL with RuleEvalPermissionError when it is refused. */
PyObject *sb_eval_callable_wrap(struct sb_eval_rules *r, PyObject *obj, PyObject *name,
				PyObject *value);

/* What `from module import names` binds: a module of those names alone, each
 * read from module and passed through sb_eval_callable_wrap(). New
 * reference, NULL with an exception. */
PyObject *sb_eval_callable_from_import(struct sb_eval_rules *r, PyObject *module,
				       PyObject *fromlist);

/* The guarded attribute read the helper and the getattr/hasattr/vars shims
 * share: the name is checked (a refusal raises, whatever a default says),
 * str.format and the regular-expression engine come back wrapped. New
 * reference, NULL with an exception. */
PyObject *sb_eval_getattr(struct sb_eval_rules *r, PyObject *obj, PyObject *name);
/* What sb_eval_getattr() hands back for value, read as obj.name by a path
 * that checked name already (a guarded __getattribute__, a module's
 * __dict__): value guarded, wrapped or refused as the read would have it.
 * New reference, NULL with an exception. */
PyObject *sb_eval_attr_result(struct sb_eval_rules *r, PyObject *obj, PyObject *name,
			      PyObject *value);

/* The guarded builtin of this name (eval-shims.c), borrowed; plugged in by
 * eval.c, which sits above both (the shims read attributes through this
 * file). */
typedef PyObject *(*sb_eval_shim_fn)(struct sb_eval_rules *r, const char *name);
void sb_eval_callables_plug(sb_eval_shim_fn lookup);
