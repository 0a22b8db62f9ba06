/* SPDX-License-Identifier: MIT */
#include "eval-namespace.h"

#include "eval-grammar.h"
#include "eval-helpers.h"
#include "eval-learn.h"
#include "eval-runtime.h"
#include "eval-shims.h"
#include "exceptions.h"
#include "util.h"

static bool syntax_allows(const struct sb_eval_rules *r, const char *node)
{
	int i = sb_eval_node_find(node);

	return i >= 0 && r->syntax[i];
}

/* Replaces in dict every builtin that has a guarded form by that form, and
 * adds the helpers. */
static int guard_builtins(struct sb_eval_rules *r, PyObject *dict)
{
	PyObject *key, *value, *keys = PyDict_Keys(dict);
	int e = keys ? 0 : -1;

	for (Py_ssize_t i = 0; e == 0 && i < PyList_GET_SIZE(keys); i++) {
		const char *name;

		key = PyList_GET_ITEM(keys, i);
		name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
		if (!name) {
			PyErr_Clear();
			continue;
		}
		value = sb_eval_shim(r, name);
		if (value)
			e = PyDict_SetItem(dict, key, value);
		else if (PyErr_Occurred())
			e = -1;
	}
	Py_XDECREF(keys);
	return e == 0 ? sb_eval_helpers_add(r, dict) : -1;
}

PyObject *sb_eval_builtins_for(struct sb_eval_rules *r)
{
	PyObject *real = sb_eval_builtins_dict(), *b, *key, *value;
	Py_ssize_t pos = 0;

	if (r->builtins)
		return r->builtins;
	if (sb_eval_rules_ready(r) < 0)
		return NULL;
	b = PyDict_New();
	if (!b)
		return NULL;
	while (PyDict_Next(real, &pos, &key, &value)) {
		if (!PyUnicode_Check(key) || !sb_eval_names_allows(&r->call, key))
			continue;
		if (PyDict_SetItem(b, key, value) < 0)
			goto fail;
	}
	/* What statements need, not names the code may call. */
	if (syntax_allows(r, "ClassDef") &&
	    (value = PyDict_GetItemString(real, "__build_class__")) &&
	    PyDict_SetItemString(b, "__build_class__", value) < 0)
		goto fail;
	if ((syntax_allows(r, "Import") || syntax_allows(r, "ImportFrom")) &&
	    (value = PyDict_GetItemString(real, "__import__")) &&
	    PyDict_SetItemString(b, "__import__", value) < 0)
		goto fail;
	/* A class body reads __name__ for its __module__. */
	value = PyUnicode_FromString(r->tag);
	if (!value || PyDict_SetItemString(b, "__name__", value) < 0) {
		Py_XDECREF(value);
		goto fail;
	}
	Py_DECREF(value);
	if (guard_builtins(r, b) < 0)
		goto fail;
	r->builtins = b;
	return b;
fail:
	Py_DECREF(b);
	return NULL;
}

/* A copy of what a caller put under __builtins__ (a dict or a module), its
 * capability builtins guarded: "used as is" stays true of everything else. */
static PyObject *caller_builtins(struct sb_eval_rules *r, PyObject *supplied)
{
	PyObject *copy;

	if (PyModule_Check(supplied))
		supplied = PyModule_GetDict(supplied);
	copy = PyDict_Check(supplied) ? PyDict_Copy(supplied) : PyDict_New();
	if (!copy)
		return NULL;
	if (!PyDict_Check(supplied) && PyDict_Merge(copy, supplied, 1) < 0) {
		Py_DECREF(copy);
		return NULL;
	}
	if (guard_builtins(r, copy) < 0) {
		Py_DECREF(copy);
		return NULL;
	}
	return copy;
}

/* ---- what a caller supplies ------------------------------------------------ */

enum grade {
	GRADE_NONE,
	GRADE_WEAK,   /* runs code outside the sub-language */
	GRADE_STRONG, /* reaches what the guard closes elsewhere */
};

static bool scalar(PyObject *v)
{
	return v == Py_None || PyLong_Check(v) || PyFloat_Check(v) || PyComplex_Check(v) ||
	       PyUnicode_Check(v) || PyBytes_Check(v);
}

static bool module_is_strong(PyObject *module)
{
	static const char *const strong[] = {"os",	  "posix",   "nt",     "subprocess",
					     "importlib", "ctypes",  "socket", "_socket",
					     "sys",	  "builtins"};
	const char *m = module && PyUnicode_Check(module) ? PyUnicode_AsUTF8(module) : NULL;
	size_t n;

	if (!m) {
		PyErr_Clear();
		return false;
	}
	n = strcspn(m, ".");
	for (size_t i = 0; i < ELEMENTSOF(strong); i++)
		if (strlen(strong[i]) == n && strncmp(m, strong[i], n) == 0)
			return true;
	return false;
}

static enum grade grade_of(PyObject *v)
{
	if (PyModule_Check(v))
		return GRADE_STRONG;
	if (PyCallable_Check(v)) {
		PyObject *name = PyObject_GetAttrString(v, "__name__");
		PyObject *module = PyObject_GetAttrString(v, "__module__");
		const char *n = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
		bool strong = (n && sb_eval_is_sensitive_call(n)) || module_is_strong(module);

		Py_XDECREF(name);
		Py_XDECREF(module);
		PyErr_Clear();
		return strong ? GRADE_STRONG : GRADE_WEAK;
	}
	if (scalar(v))
		return GRADE_NONE;
	if (PyList_Check(v) || PyTuple_Check(v) || PyAnySet_Check(v) || PyDict_Check(v)) {
		PyObject *items = PyDict_Check(v) ? PyDict_Values(v) : PySequence_List(v);
		bool plain = items != NULL;

		for (Py_ssize_t i = 0; plain && i < PyList_GET_SIZE(items); i++)
			plain = scalar(PyList_GET_ITEM(items, i));
		Py_XDECREF(items);
		PyErr_Clear();
		return plain ? GRADE_NONE : GRADE_WEAK;
	}
	return GRADE_WEAK;
}

/* One SandboxContextWarning per risky name; the warnings module shows each
 * once per call site (the message names the value). */
static int warn_context(PyObject *mapping)
{
	PyObject *cls, *items, *key, *value;
	int e = 0;

	if (!mapping || !PyDict_Check(mapping))
		return 0;
	cls = sb_exc_class(SB_EXC_CONTEXT_WARNING);
	items = cls ? PyDict_Items(mapping) : NULL;
	if (!items)
		return -1;
	for (Py_ssize_t i = 0; e == 0 && i < PyList_GET_SIZE(items); i++) {
		PyObject *item = PyList_GET_ITEM(items, i);
		enum grade g;
		const char *k;
		char *message;

		key = PyTuple_GET_ITEM(item, 0);
		value = PyTuple_GET_ITEM(item, 1);
		k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
		if (!k) {
			PyErr_Clear();
			continue;
		}
		if (streq(k, "__builtins__") || (g = grade_of(value)) == GRADE_NONE)
			continue;
		if (asprintf(
			&message,
			"eval() namespace provides %s '%s': %s. Acknowledge with eval-call=%s, "
			"or use eval-namespace=closed",
			PyModule_Check(value) ? "module" : "value", k,
			g == GRADE_STRONG ? "the evaluated code can reach everything it exposes"
					  : "it runs code outside the sub-language",
			k) < 0) {
			PyErr_NoMemory();
			e = -1;
			break;
		}
		e = PyErr_WarnEx(cls, message, 1);
		free(message);
	}
	Py_DECREF(items);
	return e;
}

char *sb_eval_namespace_call_site(void)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyCodeObject *code;
	const char *file, *base;
	char *site = NULL;

	if (!frame)
		return NULL;
	code = PyFrame_GetCode(frame);
	file = PyUnicode_AsUTF8(code->co_filename);
	if (file) {
		base = strrchr(file, '/');
		if (asprintf(&site, "%s:%d", base ? base + 1 : file, PyFrame_GetLineNumber(frame)) <
		    0)
			site = NULL;
		/* A record holds no blank (eval-learn.c). */
		for (char *c = site; c && *c; c++)
			if (*c == ' ' || *c == '\n')
				*c = '_';
	}
	PyErr_Clear();
	Py_DECREF(code);
	return site;
}

/* For learning: where the caller's namespace came from ("s.py:3"). */
void sb_eval_namespace_record_context(const struct sb_eval_rules *r)
{
	_cleanup_free_ char *site = NULL;

	if (!sb_eval_learning())
		return;
	site = sb_eval_namespace_call_site();
	if (site)
		sb_eval_record(r->name, SB_EVAL_LEARN_CONTEXT, site);
}

static PyObject *fresh_globals(struct sb_eval_rules *r)
{
	PyObject *builtins = sb_eval_builtins_for(r), *g;

	if (!builtins)
		return NULL;
	g = PyDict_New();
	if (g && PyDict_SetItemString(g, "__builtins__", builtins) < 0)
		Py_CLEAR(g);
	return g;
}

static int merge_names(PyObject *g, PyObject *names)
{
	PyObject *key, *value;
	Py_ssize_t pos = 0;

	if (!names || names == Py_None)
		return 0;
	if (!PyDict_Check(names)) {
		PyErr_SetString(PyExc_TypeError, "guarded_eval(): names must be a dict");
		return -1;
	}
	while (PyDict_Next(names, &pos, &key, &value)) {
		const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;

		if (!k) {
			PyErr_SetString(PyExc_TypeError, "guarded_eval(): names must be str");
			return -1;
		}
		if (streq(k, "__builtins__") || startswith(k, SB_EVAL_RESERVED_PREFIX)) {
			PyErr_Format(PyExc_ValueError,
				     "guarded_eval(): the name '%s' belongs to the eval guard", k);
			return -1;
		}
		if (PyDict_SetItem(g, key, value) < 0)
			return -1;
	}
	return 0;
}

int sb_eval_namespace_open(struct sb_eval_rules *r, PyObject *globals_arg, PyObject *locals_arg,
			   PyObject *names, bool guarded_eval, struct sb_eval_ns *ns)
{
	PyObject *builtins;

	*ns = (struct sb_eval_ns){0};
	if (globals_arg == Py_None)
		globals_arg = NULL;
	if (locals_arg == Py_None)
		locals_arg = NULL;
	if (sb_eval_rules_ready(r) < 0)
		return -1;
	if (guarded_eval || r->ns == SB_EVAL_NAMESPACE_CLOSED || !globals_arg) {
		ns->globals = fresh_globals(r);
		if (!ns->globals || (guarded_eval && merge_names(ns->globals, names) < 0))
			goto fail;
		/* A bare eval(e, None, locals) still gets the locals it names. */
		if (!guarded_eval && r->ns != SB_EVAL_NAMESPACE_CLOSED && locals_arg) {
			if (warn_context(locals_arg) < 0)
				goto fail;
			ns->locals = Py_NewRef(locals_arg);
			ns->context = true;
			sb_eval_namespace_record_context(r);
		} else {
			ns->locals = Py_NewRef(ns->globals);
		}
		return 0;
	}
	if (!PyDict_Check(globals_arg)) {
		PyErr_SetString(PyExc_TypeError, "globals must be a dict");
		return -1;
	}
	if (locals_arg && !PyMapping_Check(locals_arg)) {
		PyErr_SetString(PyExc_TypeError, "locals must be a mapping");
		return -1;
	}
	if (warn_context(globals_arg) < 0 || (locals_arg && warn_context(locals_arg) < 0))
		return -1;
	sb_eval_namespace_record_context(r);
	ns->saved_builtins = PyDict_GetItemString(globals_arg, "__builtins__");
	Py_XINCREF(ns->saved_builtins);
	builtins = ns->saved_builtins ? caller_builtins(r, ns->saved_builtins)
				      : Py_XNewRef(sb_eval_builtins_for(r));
	if (!builtins)
		goto fail;
	if (PyDict_SetItemString(globals_arg, "__builtins__", builtins) < 0) {
		Py_DECREF(builtins);
		goto fail;
	}
	Py_DECREF(builtins);
	ns->caller_dict = Py_NewRef(globals_arg);
	ns->globals = Py_NewRef(globals_arg);
	ns->locals = Py_NewRef(locals_arg ? locals_arg : globals_arg);
	ns->context = true;
	return 0;
fail:
	sb_eval_namespace_close(ns);
	return -1;
}

void sb_eval_namespace_close(struct sb_eval_ns *ns)
{
	PyObject *t, *v, *tb;

	PyErr_Fetch(&t, &v, &tb);
	if (ns->caller_dict) {
		/* The caller's dict gets its own __builtins__ back (or none, as
		 * it came); functions the code made keep the guarded one. */
		if (ns->saved_builtins)
			PyDict_SetItemString(ns->caller_dict, "__builtins__", ns->saved_builtins);
		else
			PyDict_DelItemString(ns->caller_dict, "__builtins__");
		PyErr_Clear();
	}
	Py_CLEAR(ns->caller_dict);
	Py_CLEAR(ns->saved_builtins);
	Py_CLEAR(ns->globals);
	Py_CLEAR(ns->locals);
	PyErr_Restore(t, v, tb);
}
