/* SPDX-License-Identifier: MIT */
#include "eval-errors.h"

#include "eval-runtime.h"
#include "exceptions.h"
#include "report-denials.h"
#include "util.h"

static int set_str(PyObject *obj, const char *attr, const char *value)
{
	PyObject *v = value ? PyUnicode_FromString(value) : Py_NewRef(Py_None);
	int r;

	if (!v)
		return -1;
	r = PyObject_SetAttrString(obj, attr, v);
	Py_DECREF(v);
	return r;
}

static int raise_eval_permission(const char *target, const char *rule_key, const char *hint,
				 const char *message)
{
	PyObject *cls = sb_exc_class(SB_EXC_EVAL_PERMISSION), *exc;

	if (!cls)
		return -1;
	sb_report_denial(SB_REPORT_DENIAL_EVAL, target, message);
	exc = PyObject_CallFunction(cls, "is", EPERM, message);
	if (!exc)
		return -1;
	if (set_str(exc, "target", target) == 0 && set_str(exc, "rule_key", rule_key) == 0 &&
	    set_str(exc, "hint", hint) == 0)
		PyErr_SetObject(cls, exc);
	Py_DECREF(exc);
	return -1;
}

int sb_eval_deny(const struct sb_eval_rules *r, const char *target, int key, const char *hint)
{
	_cleanup_free_ char *message = NULL, *rule = NULL, *rule_key = NULL;
	int n;

	if (key >= 0) {
		rule = sb_eval_rule_line(r, (enum sb_eval_list_key)key, target);
		if (!rule ||
		    asprintf(&rule_key, "%s%s", sb_eval_list_key_name(key), r->key_suffix) < 0) {
			rule_key = NULL;
			PyErr_NoMemory();
			return -1;
		}
	}
	if (rule && hint)
		n = asprintf(&message,
			     "'%s' is denied by the eval guard. Add `%s` to '%s' to allow it (%s)",
			     target, rule, sb_eval_profile_path(), hint);
	else if (rule)
		n = asprintf(&message,
			     "'%s' is denied by the eval guard. Add `%s` to '%s' to allow it",
			     target, rule, sb_eval_profile_path());
	else
		n = asprintf(&message, "'%s' is denied by the eval guard: %s", target,
			     hint ? hint : "no eval- rule allows it");
	if (n < 0) {
		message = NULL;
		PyErr_NoMemory();
		return -1;
	}
	return raise_eval_permission(target, rule_key, hint, message);
}

int sb_eval_deny_budget(const struct sb_eval_rules *r, const char *what,
			enum sb_eval_scalar_key key, const char *why)
{
	_cleanup_free_ char *message = NULL, *rule_key = NULL;
	char budget[96];

	sb_eval_budget_text(r, key, budget, sizeof(budget));
	if (!why)
		why = key == SB_EVAL_MAX_ALLOC ? "it would allocate more than"
					       : "it would take more than";
	if (asprintf(&message,
		     "%s is denied by the eval guard: %s %s allows (raise it in '%s' to allow it)",
		     what, why, budget, sb_eval_profile_path()) < 0 ||
	    asprintf(&rule_key, "%s%s", sb_eval_scalar_key_name(key), r->key_suffix) < 0) {
		message = rule_key = NULL;
		PyErr_NoMemory();
		return -1;
	}
	return raise_eval_permission(what, rule_key, NULL, message);
}

PyObject *sb_eval_interrupted_class(void)
{
	return sb_exc_class(SB_EXC_EVAL_INTERRUPTED);
}

int sb_eval_raise_interrupted(const char *reason)
{
	PyObject *cls = sb_eval_interrupted_class(), *exc;

	if (!cls)
		return -1;
	exc = PyObject_CallFunction(cls, "N",
				    PyUnicode_FromFormat("evaluation interrupted: %s", reason));
	if (!exc)
		return -1;
	if (set_str(exc, "reason", reason) == 0)
		PyErr_SetObject(cls, exc);
	Py_DECREF(exc);
	return -1;
}
