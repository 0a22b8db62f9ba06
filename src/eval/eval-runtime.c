/* SPDX-License-Identifier: MIT */
#include "eval-runtime.h"

#include "guard-observer.h"
#include "util.h"

_Thread_local unsigned sb_eval_own_events;

static struct {
	PyObject *builtins_dict;
	PyObject *original[SB_EVAL_BUILTIN__N];
	PyObject *string_module, *ast_module;
	char *profile_path;
} rt;

/* One of the builtins module's functions, made again from its method table:
 * what the guard installed in the module's dict is a wrapper. */
static PyObject *unwrapped(PyObject *module, const char *name)
{
	PyModuleDef *def = PyModule_GetDef(module);
	PyObject *modname;

	for (PyMethodDef *m = def ? def->m_methods : NULL; m && m->ml_name; m++) {
		PyObject *f;

		if (!streq(m->ml_name, name))
			continue;
		modname = PyModule_GetNameObject(module);
		if (!modname)
			return NULL;
		f = PyCFunction_NewEx(m, module, modname);
		Py_DECREF(modname);
		return f;
	}
	PyErr_Format(PyExc_SystemError, "builtins.%s not found", name);
	return NULL;
}

int sb_eval_runtime_activate(const char *profile_path, char **reterr)
{
	static const char *const names[SB_EVAL_BUILTIN__N] = {
	    [SB_EVAL_BUILTIN_EVAL] = "eval",
	    [SB_EVAL_BUILTIN_EXEC] = "exec",
	    [SB_EVAL_BUILTIN_COMPILE] = "compile",
	};
	PyObject *builtins = sb_eval_loaded_module("builtins");

	rt.profile_path = strdup(profile_path ? profile_path : ".py-sandboxes");
	if (!rt.profile_path)
		return -ENOMEM;
	if (!builtins)
		goto fail;
	rt.builtins_dict = Py_NewRef(PyModule_GetDict(builtins));
	for (size_t i = 0; i < SB_EVAL_BUILTIN__N; i++)
		if (!(rt.original[i] = unwrapped(builtins, names[i])))
			goto fail;
	Py_CLEAR(builtins);
	/* Both are built into the interpreter: importing them reads no file,
	 * and the guard is not armed yet, so the import is the runtime's. */
	rt.string_module = PyImport_ImportModule("_string");
	rt.ast_module = PyImport_ImportModule("_ast");
	if (!rt.string_module || !rt.ast_module)
		goto fail;
	return 0;
fail:
	Py_XDECREF(builtins);
	PyErr_Clear();
	return sb_error(reterr, -EIO, "cannot set up the eval guard (builtins, _ast, _string)");
}

void sb_eval_runtime_release(void)
{
	free(rt.profile_path);
	/* The objects belonged to the finalized interpreter: dropped. */
	memset(&rt, 0, sizeof(rt));
}

PyObject *sb_eval_builtins_dict(void)
{
	return rt.builtins_dict;
}

PyObject *sb_eval_original(enum sb_eval_builtin which)
{
	return (unsigned)which < SB_EVAL_BUILTIN__N ? rt.original[which] : NULL;
}

PyObject *sb_eval_string_module(void)
{
	return rt.string_module;
}

PyObject *sb_eval_ast_module(void)
{
	return rt.ast_module;
}

const char *sb_eval_profile_path(void)
{
	return rt.profile_path ? rt.profile_path : ".py-sandboxes";
}

PyObject *sb_eval_loaded_module(const char *name)
{
	PyObject *key = PyUnicode_FromString(name), *m;

	if (!key)
		return NULL;
	m = PyImport_GetModule(key);
	Py_DECREF(key);
	if (!m)
		PyErr_Clear();
	return m;
}

bool sb_eval_learning(void)
{
	return sb_guard_observed();
}

void sb_eval_record(const char *profile, int kind, const char *name)
{
	/* Learning goes ahead with what it records; the answer changes nothing
	 * (the layer only records while learning, where it allows anyway). */
	(void)sb_guard_refused(&(struct sb_refusal){
	    .kind = SB_REFUSAL_EVAL, .subject = name, .eval_kind = kind, .eval_profile = profile});
}
