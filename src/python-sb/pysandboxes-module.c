/* SPDX-License-Identifier: MIT */
/* The built-in module `pysandboxes` inside python-sb: the exception classes
 * of the reference and sandbox_denials(). Each Rule* class derives first from
 * the built-in exception the same failure would raise without a sandbox (so
 * `except FileNotFoundError` and `e.errno` keep working; OSError's __new__
 * parses the arguments) and then from SandBoxError. The guard raises the
 * classes it created, held in C: rebinding the module's attributes changes
 * nothing. */
#include "guard.h"

#include "util.h"

static PyObject *sandbox_error;
static PyObject *rule_file_not_found;
static PyObject *rule_permission;
static PyObject *rule_connection_refused;
static PyObject *rule_module_not_found;
static PyObject *rule_api_permission;

static const struct {
	const char *name;
	PyObject **slot;   /* kept in C when the guard raises it */
	PyObject **base;   /* the built-in base, NULL for none */
	bool sandbox_base; /* also derives from SandBoxError */
	const char *doc;
} classes[] = {
    {"SandBoxError", &sandbox_error, &PyExc_RuntimeError, false,
     "Base class of every refusal by py-sandboxes."},
    {"RuleFileNotFoundError", &rule_file_not_found, &PyExc_FileNotFoundError, true,
     "A path that no rule exposes, or that an ignore= rule hides (errno ENOENT)."},
    {"RulePermissionError", &rule_permission, &PyExc_PermissionError, true,
     "A write under an expose-ro grant."},
    {"RuleSocketConnectionRefusedError", &rule_connection_refused, &PyExc_ConnectionRefusedError,
     true, "A resolution, connect, bind or send refused by net="},
    {"RuleModuleNotFoundError", &rule_module_not_found, &PyExc_ModuleNotFoundError, true,
     "An import refused by python-import=."},
    {"RuleApiPermissionError", &rule_api_permission, &PyExc_PermissionError, true,
     "A call of the sensitive-API registry refused by python-api=; see .qualname, .category."},
    {"RuleAttributeError", NULL, &PyExc_AttributeError, true, "Reserved."},
    {"RuleEvalPermissionError", NULL, &PyExc_PermissionError, true,
     "A construct refused by the eval guard at run time."},
    {"EvalSyntaxRejected", NULL, &PyExc_SyntaxError, true,
     "Source refused by the eval guard before it runs."},
    {"ConfigSyntaxError", NULL, NULL, true, "An invalid profile."},
    {"SandBoxProtocolError", NULL, NULL, true, "A failure of the partial-mode transport."},
    {"SandBoxBaseExceptionError", NULL, NULL, true,
     "SystemExit, KeyboardInterrupt or another BaseException raised in a sandboxed call."},
};

static int add_classes(PyObject *module)
{
	for (size_t i = 0; i < ELEMENTSOF(classes); i++) {
		PyObject *bases, *cls;
		char qualified[128];

		snprintf(qualified, sizeof(qualified), "pysandboxes.%s", classes[i].name);
		if (classes[i].base && classes[i].sandbox_base)
			bases = PyTuple_Pack(2, *classes[i].base, sandbox_error);
		else
			bases = PyTuple_Pack(1, classes[i].base ? *classes[i].base : sandbox_error);
		if (!bases)
			return -1;
		cls = PyErr_NewExceptionWithDoc(qualified, classes[i].doc, bases, NULL);
		Py_DECREF(bases);
		if (!cls)
			return -1;
		if (PyModule_AddObjectRef(module, classes[i].name, cls) < 0) {
			Py_DECREF(cls);
			return -1;
		}
		if (classes[i].slot)
			*classes[i].slot = cls; /* keeps the reference for the guard */
		else
			Py_DECREF(cls);
	}
	/* EvalInterrupted must escape `except Exception` and `except SandBoxError`. */
	{
		PyObject *cls = PyErr_NewExceptionWithDoc(
		    "pysandboxes.EvalInterrupted",
		    "An evaluation stopped by a budget or its timeout (a BaseException).",
		    PyExc_BaseException, NULL);

		if (!cls || PyModule_AddObject(module, "EvalInterrupted", cls) < 0) {
			Py_XDECREF(cls);
			return -1;
		}
	}
	return 0;
}

/* Collects refusals innermost first: causes and contexts before the
 * exception that carries them, group members in order. */
static int collect_denials(PyObject *exc, PyObject *out, PyObject *seen, int depth)
{
	PyObject *id, *members;
	int r;

	if (!exc || exc == Py_None || depth > 64)
		return 0;
	id = PyLong_FromVoidPtr(exc);
	if (!id)
		return -1;
	r = PySet_Contains(seen, id);
	if (r == 0)
		r = PySet_Add(seen, id);
	Py_DECREF(id);
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
		if (r < 0)
			return -1;
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
	if (PyObject_IsInstance(exc, sandbox_error) == 1) {
		PyObject *line = PyUnicode_FromFormat("%s: %S", Py_TYPE(exc)->tp_name, exc);
		const char *dot;

		if (!line)
			return -1;
		/* "pysandboxes.RulePermissionError: …" reads as the class name. */
		dot = strrchr(Py_TYPE(exc)->tp_name, '.');
		if (dot) {
			Py_DECREF(line);
			line = PyUnicode_FromFormat("%s: %S", dot + 1, exc);
			if (!line)
				return -1;
		}
		r = PyList_Append(out, line);
		Py_DECREF(line);
		return r;
	}
	return 0;
}

static PyObject *sandbox_denials(PyObject *self _unused_, PyObject *exc)
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

static PyObject *is_in_sandbox(PyObject *self _unused_, PyObject *unused _unused_)
{
	Py_RETURN_TRUE;
}

static PyMethodDef module_methods[] = {
    {"sandbox_denials", sandbox_denials, METH_O,
     "sandbox_denials(e) -> list of '<ExcName>: <msg>' for every refusal in e's chain."},
    {"is_in_sandbox", is_in_sandbox, METH_NOARGS, "True: this code runs under python-sb."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "pysandboxes",
    "py-sandboxes, as seen from inside python-sb: exception classes and sandbox_denials().",
    -1,
    module_methods,
};

PyObject *sb_pysandboxes_module_init(void)
{
	PyObject *module = PyModule_Create(&module_def);

	if (!module)
		return NULL;
	if (add_classes(module) < 0 ||
	    PyModule_AddStringConstant(module, "__version__", SB_VERSION) < 0) {
		Py_DECREF(module);
		return NULL;
	}
	return module;
}

/* The classes are made on first use (a refusal, or `import pysandboxes`):
 * creating a dozen exception types costs about 3 % of a `-c pass` start-up. */
static int ensure_classes(void)
{
	PyObject *module;

	if (sandbox_error)
		return 0;
	module = PyImport_ImportModule("pysandboxes");
	if (!module)
		return -1;
	Py_DECREF(module);
	if (!sandbox_error) {
		PyErr_SetString(PyExc_RuntimeError, "pysandboxes exception classes missing");
		return -1;
	}
	return 0;
}

PyObject *sb_pysandboxes_api_error(void)
{
	return ensure_classes() < 0 ? NULL : rule_api_permission;
}

static int raise_oserror(PyObject *cls, int errnum, const char *path, const char *message)
{
	PyObject *exc;

	exc = path ? PyObject_CallFunction(cls, "isO&", errnum, message, PyUnicode_DecodeFSDefault,
					   path)
		   : PyObject_CallFunction(cls, "is", errnum, message);
	if (exc) {
		PyErr_SetObject(cls, exc);
		Py_DECREF(exc);
	}
	return -1;
}

int sb_raise_file_not_found(const char *path, const char *message)
{
	if (ensure_classes() < 0)
		return -1;
	return raise_oserror(rule_file_not_found, ENOENT, path, message);
}

int sb_raise_permission(int errnum, const char *path, const char *message)
{
	if (ensure_classes() < 0)
		return -1;
	return raise_oserror(rule_permission, errnum, path, message);
}

int sb_raise_connection_refused(const char *message)
{
	if (ensure_classes() < 0)
		return -1;
	return raise_oserror(rule_connection_refused, ECONNREFUSED, NULL, message);
}

int sb_raise_module_not_found(const char *name, const char *message)
{
	PyObject *msg, *n;

	if (ensure_classes() < 0)
		return -1;
	msg = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace");
	n = PyUnicode_DecodeUTF8(name, (Py_ssize_t)strlen(name), "replace");

	if (msg && n)
		PyErr_SetImportErrorSubclass(rule_module_not_found, msg, n, NULL);
	Py_XDECREF(msg);
	Py_XDECREF(n);
	return -1;
}

int sb_raise_api_denied(const char *qualname, const char *category)
{
	PyObject *exc;
	_cleanup_free_ char *message = NULL;

	if (ensure_classes() < 0)
		return -1;
	if (asprintf(&message,
		     "%s() is denied by the API guard (category: %s). Add `python-api=ALLOW:%s` "
		     "to '%s' to allow this function, or `python-api=ALLOW:%s` for the whole "
		     "category",
		     qualname, category, qualname, sb_guard_profile_path(), category) < 0) {
		message = NULL;
		PyErr_NoMemory();
		return -1;
	}
	exc = PyObject_CallFunction(rule_api_permission, "is", EPERM, message);
	if (!exc)
		return -1;
	{
		PyObject *q = PyUnicode_FromString(qualname), *c = PyUnicode_FromString(category);
		int r = (q && c && PyObject_SetAttrString(exc, "qualname", q) == 0 &&
			 PyObject_SetAttrString(exc, "category", c) == 0)
			    ? 0
			    : -1;

		Py_XDECREF(q);
		Py_XDECREF(c);
		if (r < 0) {
			Py_DECREF(exc);
			return -1;
		}
	}
	PyErr_SetObject(rule_api_permission, exc);
	Py_DECREF(exc);
	return -1;
}
