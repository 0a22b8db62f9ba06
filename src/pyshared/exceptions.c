/* SPDX-License-Identifier: MIT */
/* The exception classes of the reference (spec section 4). Each Rule* class
 * derives first from the built-in exception the same failure would raise
 * without a sandbox (so `except FileNotFoundError` and `e.errno` keep working;
 * OSError's __new__ parses the arguments) and then from SandBoxError. The
 * classes are held in C: rebinding the module's attributes changes nothing for
 * the code that raises them. */
#include "exceptions.h"

#include <stdbool.h>

#include "py-helpers.h"
#include "util.h"

static PyObject *classes_made[SB_EXC__N];

static const struct {
	enum sb_exc id;
	const char *name;
	PyObject **base;   /* the built-in base, NULL for none */
	bool sandbox_base; /* also derives from SandBoxError */
	const char *doc;
} classes[] = {
    {SB_EXC_SANDBOX_ERROR, "SandBoxError", &PyExc_RuntimeError, false,
     "Base class of every refusal by py-sandboxes."},
    {SB_EXC_FILE_NOT_FOUND, "RuleFileNotFoundError", &PyExc_FileNotFoundError, true,
     "A path that no rule exposes, or that an ignore= rule hides (errno ENOENT)."},
    {SB_EXC_PERMISSION, "RulePermissionError", &PyExc_PermissionError, true,
     "A write under an expose-ro grant."},
    {SB_EXC_CONNECTION_REFUSED, "RuleSocketConnectionRefusedError", &PyExc_ConnectionRefusedError,
     true, "A resolution, connect, bind or send refused by net="},
    {SB_EXC_MODULE_NOT_FOUND, "RuleModuleNotFoundError", &PyExc_ModuleNotFoundError, true,
     "An import refused by python-import=."},
    {SB_EXC_API_PERMISSION, "RuleApiPermissionError", &PyExc_PermissionError, true,
     "A call of the sensitive-API registry refused by python-api=; see .qualname, .category."},
    {SB_EXC_ATTRIBUTE, "RuleAttributeError", &PyExc_AttributeError, true, "Reserved."},
    {SB_EXC_EVAL_PERMISSION, "RuleEvalPermissionError", &PyExc_PermissionError, true,
     "A construct refused by the eval guard at run time."},
    {SB_EXC_EVAL_SYNTAX, "EvalSyntaxRejected", &PyExc_SyntaxError, true,
     "Source refused by the eval guard before it runs."},
    {SB_EXC_CONFIG_SYNTAX, "ConfigSyntaxError", NULL, true, "An invalid profile."},
    {SB_EXC_PROTOCOL, "SandBoxProtocolError", NULL, true,
     "A failure of the partial-mode transport (never the application's own error)."},
    {SB_EXC_BASE_EXCEPTION, "SandBoxBaseExceptionError", NULL, true,
     "SystemExit, KeyboardInterrupt or another BaseException raised in a sandboxed call."},
    /* The base comes from _pickle at run time (see make_class). */
    {SB_EXC_RESTRICTED_UNPICKLING, "RestrictedUnpicklingError", NULL, true,
     "A result or exception payload the parent refused to rebuild."},
    /* Must escape `except Exception` and `except SandBoxError`. */
    {SB_EXC_EVAL_INTERRUPTED, "EvalInterrupted", &PyExc_BaseException, false,
     "An evaluation stopped by a budget or its timeout (a BaseException)."},
    /* A warning, not a refusal: not a SandBoxError either. */
    {SB_EXC_CONTEXT_WARNING, "SandboxContextWarning", &PyExc_Warning, false,
     "A namespace handed to eval()/exec() holds something the evaluated code can reach "
     "beyond its eval-* rules (a module, a capability builtin, a callable)."},
};

static PyObject *unpickling_error(void)
{
	PyObject *mod = PyImport_ImportModule("_pickle"), *cls;

	if (!mod)
		return NULL;
	cls = PyObject_GetAttrString(mod, "UnpicklingError");
	Py_DECREF(mod);
	return cls;
}

static PyObject *make_class(size_t i)
{
	PyObject *sandbox_error = classes_made[SB_EXC_SANDBOX_ERROR];
	PyObject *base = NULL, *bases, *cls;
	char qualified[128];

	if (classes[i].id == SB_EXC_RESTRICTED_UNPICKLING) {
		base = unpickling_error();
		if (!base)
			return NULL;
	} else if (classes[i].base) {
		base = Py_NewRef(*classes[i].base);
	}
	snprintf(qualified, sizeof(qualified), "pysandboxes.%s", classes[i].name);
	if (base && classes[i].sandbox_base)
		bases = PyTuple_Pack(2, base, sandbox_error);
	else
		bases = PyTuple_Pack(1, base ? base : sandbox_error);
	Py_XDECREF(base);
	if (!bases)
		return NULL;
	cls = PyErr_NewExceptionWithDoc(qualified, classes[i].doc, bases, NULL);
	Py_DECREF(bases);
	return cls;
}

/* The row of class id: the table is in enum order. */
static size_t row_of(enum sb_exc which)
{
	size_t i = 0;

	while (i < ELEMENTSOF(classes) && classes[i].id != which)
		i++;
	return i;
}

PyObject *sb_exc_class(enum sb_exc which)
{
	size_t i = row_of(which);

	if (i == ELEMENTSOF(classes)) {
		PyErr_SetString(PyExc_SystemError, "unknown pysandboxes exception class");
		return NULL;
	}
	/* Made once per process, on first use: a refusal needs its own class
	 * and SandBoxError, not the dozen others (and not _pickle for
	 * RestrictedUnpicklingError's base). Every module object, the guard
	 * and the worker share these, so `except` clauses written against any
	 * of them keep matching. */
	if (!classes_made[which]) {
		PyObject *cls;

		if (which != SB_EXC_SANDBOX_ERROR && !sb_exc_class(SB_EXC_SANDBOX_ERROR))
			return NULL;
		cls = make_class(i);
		if (!cls)
			return NULL;
		/* Making it can run Python code (_pickle's import, a finalizer
		 * the collector calls) and so let another thread make it too:
		 * the first one made stays the only one. */
		if (classes_made[which])
			Py_DECREF(cls);
		else
			classes_made[which] = cls;
	}
	return classes_made[which];
}

const char *sb_exc_name(enum sb_exc which)
{
	size_t i = row_of(which);

	return i < ELEMENTSOF(classes) ? classes[i].name : NULL;
}

int sb_exc_find(PyObject *name)
{
	for (size_t i = 0; PyUnicode_Check(name) && i < ELEMENTSOF(classes); i++)
		if (PyUnicode_CompareWithASCIIString(name, classes[i].name) == 0)
			return (int)classes[i].id;
	return -1;
}

static int add_classes(PyObject *module, bool all)
{
	for (size_t i = 0; i < ELEMENTSOF(classes); i++) {
		PyObject *cls;

		if (!all && classes[i].id == SB_EXC_RESTRICTED_UNPICKLING)
			continue;
		cls = sb_exc_class(classes[i].id);
		if (!cls || PyModule_AddObjectRef(module, classes[i].name, cls) < 0)
			return -1;
	}
	return 0;
}

int sb_exc_add_classes(PyObject *module)
{
	return add_classes(module, true);
}

int sb_exc_add_ready_classes(PyObject *module)
{
	return add_classes(module, false);
}

/* 1 when the exception carries the denials recorded in the worker (they
 * include its own line), 0 when not, -1 on error. */
static int append_recorded(PyObject *exc, PyObject *out)
{
	PyObject *recorded = PyObject_GetAttrString(exc, SB_DENIALS_ATTR);
	int r = 0;

	if (!recorded) {
		if (!PyErr_ExceptionMatches(PyExc_AttributeError))
			return -1;
		PyErr_Clear();
		return 0;
	}
	if (PyList_Check(recorded) || PyTuple_Check(recorded)) {
		PyObject *seq = PySequence_Fast(recorded, "denials");

		for (Py_ssize_t i = 0; seq && r == 0 && i < PySequence_Fast_GET_SIZE(seq); i++) {
			PyObject *item = PySequence_Fast_GET_ITEM(seq, i);

			if (PyUnicode_Check(item))
				r = PyList_Append(out, item);
		}
		if (!seq)
			r = -1;
		else if (PySequence_Fast_GET_SIZE(seq) > 0)
			r = 1;
		Py_XDECREF(seq);
	}
	Py_DECREF(recorded);
	return r;
}

/* Collects refusals innermost first: causes and contexts before the
 * exception that carries them, group members in order. */
static int collect_denials(PyObject *exc, PyObject *out, PyObject *seen, int depth)
{
	PyObject *sandbox_error = classes_made[SB_EXC_SANDBOX_ERROR];
	PyObject *members;
	int r;

	if (!exc || exc == Py_None || depth > 64)
		return 0;
	r = sb_py_visit_once(seen, exc);
	if (r != 0)
		return r < 0 ? -1 : 0;

	if (PyExceptionInstance_Check(exc)) {
		PyObject *cause = PyException_GetCause(exc);
		PyObject *context = PyException_GetContext(exc);

		r = collect_denials(cause, out, seen, depth + 1);
		if (r >= 0)
			r = collect_denials(context, out, seen, depth + 1);
		Py_XDECREF(cause);
		Py_XDECREF(context);
		if (r >= 0)
			r = append_recorded(exc, out);
		if (r < 0)
			return -1;
		if (r > 0)
			return 0;
	}
	if (PyObject_IsInstance(exc, PyExc_BaseExceptionGroup) == 1) {
		members = PyObject_GetAttrString(exc, "exceptions");
		if (!members)
			return -1;
		for (Py_ssize_t i = 0; PyTuple_Check(members) && i < PyTuple_GET_SIZE(members); i++)
			if (collect_denials(PyTuple_GET_ITEM(members, i), out, seen, depth + 1) <
			    0) {
				Py_DECREF(members);
				return -1;
			}
		Py_DECREF(members);
	}
	if (sandbox_error && PyObject_IsInstance(exc, sandbox_error) == 1) {
		/* "RulePermissionError: …" reads as the class name. */
		const char *name = Py_TYPE(exc)->tp_name, *dot = strrchr(name, '.');
		PyObject *line = PyUnicode_FromFormat("%s: %S", dot ? dot + 1 : name, exc);

		if (!line)
			return -1;
		r = PyList_Append(out, line);
		Py_DECREF(line);
		return r;
	}
	return 0;
}

PyObject *sb_exc_sandbox_denials(PyObject *self _unused_, PyObject *exc)
{
	PyObject *out = PyList_New(0), *seen = PySet_New(NULL);

	if (!out || !seen || collect_denials(exc, out, seen, 0) < 0) {
		Py_XDECREF(out);
		Py_XDECREF(seen);
		return NULL;
	}
	Py_DECREF(seen);
	return out;
}
