/* SPDX-License-Identifier: MIT */
/* The API guard's wrappers (guard-api-wrap.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-api-wrap.h"

#include "eval.h"
#include "guard-api-check.h"
#include "guard-part.h"
#include "guard-runtime.h"
#include "util.h"

/* Events a wrapper is about to cause, per thread: a count, restored when the
 * wrapped call returns. */
static _Thread_local unsigned claims[SB_API_EV__N];

struct tracked_module {
	PyObject *key;	/* the name as a str, made when first needed (module_key) */
	PyObject *done; /* the module object every entry was installed on */
};

static struct {
	PyObject *original[SB_API_N_WRAPS]; /* strong; only C holds them */
	PyObject *wrapper[SB_API_N_WRAPS];
	PyObject *attr_key[SB_API_N_WRAPS]; /* sb_api_wraps[i].attr as a str */
	/* Each module's entries as a chain (first[m], then next[i]), linked
	 * by sb_api_wrap_prepare(): installing on a module walks its own
	 * entries. */
	short first[SB_API_M__N], next[SB_API_N_WRAPS];
	struct tracked_module tracked[SB_API_M__N];
	bool pending; /* a tracked module was still initialising at the last scan */
	/* "__spec__" and "_initializing", interned once: sb_api_module_initializing()
	 * runs for every new guarded module and every pass it stays pending. */
	PyObject *spec_key, *initializing_key;
} wrap;

static PyMethodDef defs[SB_API_N_WRAPS];

static bool is_our_wrapper(PyObject *o, size_t *ret_index)
{
	PyCFunctionObject *f = (PyCFunctionObject *)o;

	if (!o || !PyCFunction_Check(o) || f->m_ml < defs || f->m_ml >= defs + SB_API_N_WRAPS)
		return false;
	if (ret_index)
		*ret_index = (size_t)(f->m_ml - defs);
	return true;
}

static int check_entry(size_t i)
{
	if (!sb_guard_armed() || sb_api_wraps[i].fn == SB_API_NO_FN)
		return 0;
	if ((sb_api_wraps[i].flags & SB_API_F_EXEMPT_LIBRARY) && sb_api_caller_is_library())
		return 0;
	if (sb_api_wraps[i].flags & SB_API_F_ANY_OF)
		return sb_api_allowed(sb_api_wraps[i].fn) ? 0 : sb_api_check(sb_api_wraps[i].alias);
	if (sb_api_check(sb_api_wraps[i].fn) < 0)
		return -1;
	if (sb_api_wraps[i].alias != SB_API_NO_FN && sb_api_check(sb_api_wraps[i].alias) < 0)
		return -1;
	return 0;
}

static int install_on_module(const char *name, PyObject *module);

static PyObject *module_name_of(PyObject *module)
{
	return PyModule_Check(module) ? PyModule_GetNameObject(module) : NULL;
}

/* After _imp created or executed a module: wrap its functions before the
 * module is handed to anyone. */
static int imp_hook_done(PyObject *module)
{
	PyObject *name;
	const char *s;
	int r = 0;

	if (!module || !PyModule_Check(module))
		return 0;
	name = module_name_of(module);
	if (!name) {
		PyErr_Clear();
		return 0;
	}
	s = PyUnicode_AsUTF8(name);
	if (s) {
		r = install_on_module(s, module);
		if (r >= 0)
			r = sb_guard_module_loaded(s, module);
	} else
		PyErr_Clear();
	Py_DECREF(name);
	return r;
}

static enum sb_eval_builtin dynamic_builtin(size_t i)
{
	if (streq(sb_api_wraps[i].attr, "compile"))
		return SB_EVAL_BUILTIN_COMPILE;
	return streq(sb_api_wraps[i].attr, "exec") ? SB_EVAL_BUILTIN_EXEC : SB_EVAL_BUILTIN_EVAL;
}

static unsigned dynamic_budget(size_t i, PyObject *const *args, Py_ssize_t nargs)
{
	/* eval/exec of a string compile then run (two events); of a code
	 * object, run only; compile() raises one. */
	if (streq(sb_api_wraps[i].attr, "compile"))
		return 1;
	return nargs > 0 && PyCode_Check(args[0]) ? 1 : 2;
}

static PyObject *call_entry(size_t i, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	enum sb_api_family family = sb_api_wraps[i].family;
	PyObject *original = wrap.original[i], *result;
	unsigned saved = 0;

	if (!original) {
		PyErr_Format(PyExc_RuntimeError, "%s is not available", sb_api_wraps[i].attr);
		return NULL;
	}
	/* The eval layer (src/eval) runs the program's own eval/exec/compile:
	 * guarded under eval-* keys, learned as eval-* rules while learning. */
	if (family == SB_API_EV_DYNAMIC && sb_guard_armed() && sb_eval_takes_over() &&
	    !sb_api_caller_is_library())
		return sb_eval_builtin(dynamic_builtin(i), args, nargs, kwnames);
	if (check_entry(i) < 0)
		return NULL;
	if (family != SB_API_EV_NONE) {
		saved = claims[family];
		/* A library caller's eval/exec/compile is not a grant: the
		 * "compile" event decides whose source it is (on_compile). */
		claims[family] = family != SB_API_EV_DYNAMIC ? 1
				 : sb_api_allowed(sb_api_wraps[i].fn)
				     ? dynamic_budget(i, args, nargs)
				     : 0;
	}
	/* The original may be released by a re-wrap while it runs. */
	Py_INCREF(original);
	result = PyObject_Vectorcall(original, args, (size_t)nargs, kwnames);
	Py_DECREF(original);
	if (family != SB_API_EV_NONE)
		claims[family] = saved;
	if (result && (sb_api_wraps[i].flags & SB_API_F_IMP_HOOK)) {
		/* create_*() returns the new module, exec_*() takes it. */
		PyObject *module = startswith(sb_api_wraps[i].attr, "create") ? result
				   : nargs > 0				      ? args[0]
									      : NULL;

		if (imp_hook_done(module) < 0)
			Py_CLEAR(result);
	}
	if (result && (sb_api_wraps[i].flags & SB_API_F_AFTER_IMPORT) && sb_guard_armed() &&
	    sb_guard_after_import() < 0)
		Py_CLEAR(result);
	return result;
}

/* One C function per entry, so that a wrapper needs no m_self: nothing
 * reachable from it (gc.get_referents, __self__) leads to the original. */
#define TRAMP(b, k)                                                                                \
	static PyObject *tramp_##b##_##k(PyObject *self _unused_, PyObject *const *args,           \
					 Py_ssize_t nargs, PyObject *kwnames)                      \
	{                                                                                          \
		return call_entry(8 * (b) + (k), args, nargs, kwnames);                            \
	}
#define TRAMP8(b)                                                                                  \
	TRAMP(b, 0)                                                                                \
	TRAMP(b, 1)                                                                                \
	TRAMP(b, 2) TRAMP(b, 3) TRAMP(b, 4) TRAMP(b, 5) TRAMP(b, 6) TRAMP(b, 7)
#define P8(b)                                                                                      \
	tramp_##b##_0, tramp_##b##_1, tramp_##b##_2, tramp_##b##_3, tramp_##b##_4, tramp_##b##_5,  \
	    tramp_##b##_6, tramp_##b##_7

TRAMP8(0)
TRAMP8(1)
TRAMP8(2)
TRAMP8(3)
TRAMP8(4)
TRAMP8(5)
TRAMP8(6)
TRAMP8(7)
TRAMP8(8)
TRAMP8(9)
TRAMP8(10)
TRAMP8(11)
TRAMP8(12)
TRAMP8(13)
TRAMP8(14)
TRAMP8(15)
TRAMP8(16)
TRAMP8(17)

typedef PyObject *(*tramp_fn)(PyObject *, PyObject *const *, Py_ssize_t, PyObject *);
static const tramp_fn tramps[] = {P8(0),  P8(1),  P8(2),  P8(3),  P8(4),  P8(5),
				  P8(6),  P8(7),  P8(8),  P8(9),  P8(10), P8(11),
				  P8(12), P8(13), P8(14), P8(15), P8(16), P8(17)};
_Static_assert(ELEMENTSOF(tramps) >= SB_API_N_WRAPS, "add TRAMP8 rows");

/* The name of module m as a str (the key in sys.modules, and the wrappers'
 * __module__): sys.modules' own key when activation found the module there,
 * else made (interned) when first needed; borrowed. */
static PyObject *module_key(enum sb_api_module m)
{
	if (!wrap.tracked[m].key)
		wrap.tracked[m].key = PyUnicode_InternFromString(sb_api_module_names[m]);
	return wrap.tracked[m].key;
}

/* Entry i's attribute name as a str (borrowed), made once and shared with a
 * neighbour of the same name: OS() puts posix.X and os.X side by side. */
static PyObject *attr_key(size_t i)
{
	if (wrap.attr_key[i])
		return wrap.attr_key[i];
	if (i > 0 && wrap.attr_key[i - 1] && streq(sb_api_wraps[i - 1].attr, sb_api_wraps[i].attr))
		wrap.attr_key[i] = Py_NewRef(wrap.attr_key[i - 1]);
	else if (i + 1 < SB_API_N_WRAPS && wrap.attr_key[i + 1] &&
		 streq(sb_api_wraps[i + 1].attr, sb_api_wraps[i].attr))
		wrap.attr_key[i] = Py_NewRef(wrap.attr_key[i + 1]);
	else
		wrap.attr_key[i] = PyUnicode_FromString(sb_api_wraps[i].attr);
	return wrap.attr_key[i];
}

/* Whether entry i's wrapper has anything to do: refuse a call, claim an
 * event for a family, or hook the import system. A spelling the rules allow
 * outright keeps its original function (nothing to create and install at
 * every start for, e.g., python-api=ALLOW:threads). */
static bool entry_needed(size_t i)
{
	const struct sb_api_wrap *e = &sb_api_wraps[i];

	return e->fn == SB_API_NO_FN || e->family != SB_API_EV_NONE || !sb_api_allowed(e->fn) ||
	       (e->alias != SB_API_NO_FN && !sb_api_allowed(e->alias));
}

/* Puts entry i's wrapper on target (a module or a class). 0 also when the
 * attribute does not exist in this Python version. */
static int install(size_t i, PyObject *target)
{
	/* A module's namespace is its dict: going to it directly skips the
	 * generic attribute machinery, ~90 times on every start. */
	PyObject *dict = PyModule_Check(target) ? PyModule_GetDict(target) : NULL;
	PyObject *name = attr_key(i), *current, *original, *value;
	size_t j;
	bool ours;
	int r;

	if (!name)
		return -1;
	if (dict) {
		/* A lookup that fails (a planted key whose __eq__ raises) must
		 * not leave the function unwrapped: the error propagates. */
		current = PyDict_GetItemWithError(dict, name); /* borrowed */
		if (!current)
			return PyErr_Occurred() ? -1 : 0;
		Py_INCREF(current);
	} else {
		current = PyObject_GetAttr(target, name);
		if (!current) {
			PyErr_Clear();
			return 0;
		}
	}
	ours = is_our_wrapper(current, &j);
	if (ours && j == i) {
		Py_DECREF(current);
		return 0;
	}
	if (!entry_needed(i)) {
		/* Another spelling's wrapper copied here (signal.alarm from
		 * _signal) would refuse what this spelling's rule allows. */
		value = ours ? wrap.original[j] : NULL;
		Py_DECREF(current);
		if (!value)
			return 0;
		return dict ? PyDict_SetItem(dict, name, value)
			    : PyObject_SetAttr(target, name, value);
	}
	/* Another spelling's wrapper (signal.alarm copied from the wrapped
	 * _signal): wrap the original behind it, so that each spelling needs
	 * its own grant and no more. */
	original = ours ? wrap.original[j] : current;
	if (!original) {
		Py_DECREF(current);
		return 0;
	}
	Py_INCREF(original);
	Py_XSETREF(wrap.original[i], original);
	Py_DECREF(current);
	if (!wrap.wrapper[i]) {
		PyObject *modname = module_key(sb_api_wraps[i].module);

		if (!modname)
			return -1;
		wrap.wrapper[i] = PyCFunction_NewEx(&defs[i], NULL, modname);
		if (!wrap.wrapper[i])
			return -1;
		/* m_self NULL, m_module a str: a wrapper is in no reference
		 * cycle, and the collector need not visit it on every pass. */
		PyObject_GC_UnTrack(wrap.wrapper[i]);
	}
	if (sb_api_wraps[i].flags & SB_API_F_METHOD) {
		value = PyInstanceMethod_New(wrap.wrapper[i]);
		if (!value)
			return -1;
	} else {
		value = Py_NewRef(wrap.wrapper[i]);
	}
	r = dict ? PyDict_SetItem(dict, name, value) : PyObject_SetAttr(target, name, value);
	Py_DECREF(value);
	return r;
}

/* Module-level entries only when the module may not be complete (_imp's
 * create step); the classes come with the after_import scan. */
static int install_on_module(const char *name, PyObject *module)
{
	int m = sb_api_module_id(name);

	for (int i = m >= 0 ? wrap.first[m] : -1; i >= 0; i = wrap.next[i])
		if (!(sb_api_wraps[i].flags & SB_API_F_METHOD) && install((size_t)i, module) < 0)
			return -1;
	return 0;
}

/* Every entry of module m, then m is done until sys.modules holds another
 * module under its name. */
static int install_all(enum sb_api_module m, PyObject *module)
{
	for (int i = wrap.first[m]; i >= 0; i = wrap.next[i]) {
		PyObject *cls;
		int r;

		if (!(sb_api_wraps[i].flags & SB_API_F_METHOD)) {
			if (install((size_t)i, module) < 0)
				return -1;
			continue;
		}
		cls = PyObject_GetAttrString(module, sb_api_wraps[i].cls);
		if (!cls) {
			PyErr_Clear();
			continue;
		}
		r = PyType_Check(cls) ? install((size_t)i, cls) : 0;
		Py_DECREF(cls);
		if (r < 0)
			return -1;
	}
	Py_INCREF(module);
	Py_XSETREF(wrap.tracked[m].done, module);
	return 0;
}

bool sb_api_module_initializing(PyObject *module)
{
	PyObject *spec = NULL, *flag = NULL;
	bool initializing = false;

	if (!wrap.spec_key)
		wrap.spec_key = PyUnicode_InternFromString("__spec__");
	if (!wrap.initializing_key)
		wrap.initializing_key = PyUnicode_InternFromString("_initializing");
	if (wrap.spec_key && wrap.initializing_key)
		spec = PyObject_GetAttr(module, wrap.spec_key);
	if (spec && spec != Py_None)
		flag = PyObject_GetAttr(spec, wrap.initializing_key);
	if (flag)
		initializing = PyObject_IsTrue(flag) > 0;
	PyErr_Clear();
	Py_XDECREF(flag);
	Py_XDECREF(spec);
	return initializing;
}

/* After an import that changed sys.modules: each guarded module written in
 * Python, looked up by its interned name (the others: made_by_imp). */
static int scan_modules(void)
{
	PyObject *modules = PyImport_GetModuleDict(); /* borrowed */

	wrap.pending = false;
	for (size_t m = 0; m < SB_API_M__N; m++) {
		PyObject *key, *module;

		if (sb_api_module_made_by_imp[m])
			continue;
		key = module_key((enum sb_api_module)m);
		if (!key)
			return -1;
		module = PyDict_GetItemWithError(modules, key); /* borrowed */
		if (!module) {
			if (PyErr_Occurred())
				return -1;
			continue;
		}
		if (module == wrap.tracked[m].done)
			continue;
		/* A module still running its body (an import inside it) gets
		 * its functions later: come back after the next import. */
		if (sb_api_module_initializing(module)) {
			wrap.pending = true;
			continue;
		}
		if (install_all((enum sb_api_module)m, module) < 0)
			return -1;
	}
	return 0;
}

/* At activation: the modules the runtime loaded so far (os, posix, _thread,
 * builtins, _imp...), found in one pass over sys.modules, with no string made
 * for the ~20 guarded modules that are not there; the rest are wrapped as
 * they are imported. No import is in progress at this point, so no module is
 * still initialising. The modules are collected first: installing looks up
 * classes, which may run Python code that changes sys.modules. */
static int install_loaded(void)
{
	PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
	PyObject *found[SB_API_M__N] = {0}, *key, *value;
	Py_ssize_t pos = 0;
	int r = 0;

	while (PyDict_Next(modules, &pos, &key, &value)) {
		const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
		int m = name ? sb_api_module_id(name) : -1;

		if (!name)
			PyErr_Clear();
		if (m < 0 || found[m])
			continue;
		found[m] = Py_NewRef(value);
		if (!wrap.tracked[m].key && PyUnicode_CheckExact(key))
			wrap.tracked[m].key = Py_NewRef(key);
	}
	for (size_t m = 0; m < SB_API_M__N; m++) {
		if (found[m] && r == 0)
			r = install_all((enum sb_api_module)m, found[m]);
		Py_XDECREF(found[m]);
	}
	return r;
}

/* sb_guard_after_import() calls this only when sys.modules changed, or when
 * it asked to be called again (1: a module was still initialising). */
int sb_api_wrap_after_import(void)
{
	if (scan_modules() < 0)
		return -1;
	return wrap.pending ? 1 : 0;
}

void sb_api_wrap_prepare(void)
{
	for (size_t m = 0; m < SB_API_M__N; m++)
		wrap.first[m] = -1;
	for (size_t i = SB_API_N_WRAPS; i-- > 0;) {
		defs[i] = (PyMethodDef){
		    .ml_name = sb_api_wraps[i].attr,
		    .ml_meth = (PyCFunction)(void (*)(void))tramps[i],
		    .ml_flags = METH_FASTCALL | METH_KEYWORDS,
		    .ml_doc = "Guarded by the python-api= rules of py-sandboxes.",
		};
		wrap.next[i] = wrap.first[sb_api_wraps[i].module];
		wrap.first[sb_api_wraps[i].module] = (short)i;
	}
}

int sb_api_wrap_activate(void)
{
	return install_loaded();
}

void sb_api_wrap_release(void)
{
	/* The Python objects belonged to the finalized interpreter: drop them,
	 * don't DECREF. */
	memset(&wrap, 0, sizeof(wrap));
}

bool sb_api_claimed(enum sb_api_family family)
{
	if (claims[family] == 0)
		return false;
	claims[family]--;
	return true;
}

PyObject *sb_api_wrapped_module(enum sb_api_module m)
{
	return wrap.tracked[m].done;
}
