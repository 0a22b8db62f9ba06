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
