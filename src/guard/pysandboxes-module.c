/* SPDX-License-Identifier: MIT */
/* The built-in module `pysandboxes` inside python-sb: the exception classes
 * of the reference and sandbox_denials() (src/pyshared/exceptions.c, shared
 * with the pysandboxes package an ordinary python3 imports), and the partial-
 * mode API as it behaves inside the sandbox: @sandbox calls directly,
 * sandboxes() and run() start nothing, is_in_sandbox() is True. So a module
 * written for partial mode imports and runs unchanged in the worker or under
 * python-sb. The guard raises the classes held in C: rebinding the module's
 * attributes changes nothing. */
#include "pysandboxes-module.h"

#include "eval.h"
#include "exceptions.h"
#include "guard-runtime.h"
#include "report-denials.h"
#include "util.h"

static PyObject *sandbox(PyObject *self, PyObject *args, PyObject *kwargs);
static PyMethodDef sandbox_def;

/* Refused as the package refuses it, so that code runs alike in both. */
static int refuse_generator(PyObject *fn)
{
	PyObject *code = PyObject_GetAttrString(fn, "__code__"), *module, *qualname;
	int flags = code && PyCode_Check(code) ? ((PyCodeObject *)code)->co_flags : 0;

	Py_XDECREF(code);
	PyErr_Clear();
	if (!(flags & (CO_GENERATOR | CO_ASYNC_GENERATOR)))
		return 0;
	module = PyObject_GetAttrString(fn, "__module__");
	qualname = module ? PyObject_GetAttrString(fn, "__qualname__") : NULL;
	PyErr_Clear();
	PyErr_Format(PyExc_TypeError,
		     "@sandbox cannot run %S.%S: it is %s function, and its values would have "
		     "to cross from the sandbox one by one; return a list (or another value) "
		     "instead",
		     module ? module : Py_None, qualname ? qualname : Py_None,
		     flags & CO_ASYNC_GENERATOR ? "an async generator" : "a generator");
	Py_XDECREF(module);
	Py_XDECREF(qualname);
	return -1;
}

/* Inside the sandbox the decorated function is the function: the worker
 * finds it by module and qualname and calls it directly. @sandbox(timeout=)
 * concerns the caller, which enforces it. */
static PyObject *sandbox(PyObject *self _unused_, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = {"fn", "timeout", NULL};
	PyObject *fn = NULL, *timeout = Py_None;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$O:sandbox", kwlist, &fn, &timeout))
		return NULL;
	if (!fn)
		return PyCFunction_NewEx(&sandbox_def, NULL, NULL);
	if (!PyCallable_Check(fn)) {
		PyErr_SetString(PyExc_TypeError, "@sandbox applies to a function");
		return NULL;
	}
	if (refuse_generator(fn) < 0)
		return NULL;
	return Py_NewRef(fn);
}

static PyMethodDef sandbox_def = {
    "sandbox", (PyCFunction)(void (*)(void))sandbox, METH_VARARGS | METH_KEYWORDS,
    "@sandbox or @sandbox(timeout=...): inside the sandbox, the function itself."};

/* A context manager for `with` and `async with` that starts nothing: the
 * code already runs in the sandbox. */
static PyObject *sandboxes(PyObject *self _unused_, PyObject *args _unused_,
			   PyObject *kwargs _unused_)
{
	struct sb_runtime_section section;
	PyObject *contextlib, *cm;

	sb_guard_runtime_enter(&section);
	contextlib = PyImport_ImportModule("contextlib");
	sb_guard_runtime_leave(&section);
	if (!contextlib)
		return NULL;
	cm = PyObject_CallMethod(contextlib, "nullcontext", NULL);
	Py_DECREF(contextlib);
	return cm;
}

/* The counterpart of asyncio.run(); the keyword arguments (rules, init_fn...)
 * concern the parent's sandbox and change nothing here. */
static PyObject *run(PyObject *self _unused_, PyObject *args, PyObject *kwargs _unused_)
{
	struct sb_runtime_section section;
	PyObject *coro, *asyncio, *result;

	if (!PyArg_ParseTuple(args, "O:run", &coro))
		return NULL;
	if (!PyCoro_CheckExact(coro)) {
		PyErr_Format(PyExc_ValueError, "a coroutine was expected, got %R", coro);
		return NULL;
	}
	sb_guard_runtime_enter(&section);
	asyncio = PyImport_ImportModule("asyncio");
	sb_guard_runtime_leave(&section);
	if (!asyncio)
		return NULL;
	result = PyObject_CallMethod(asyncio, "run", "O", coro);
	Py_DECREF(asyncio);
	return result;
}

static PyObject *is_in_sandbox(PyObject *self _unused_, PyObject *unused _unused_)
{
	Py_RETURN_TRUE;
}

/* Module __getattr__ (PEP 562): the classes sb_exc_add_ready_classes()
 * leaves out, made on first use and then kept in the module's dict. */
static PyObject *module_getattr(PyObject *module, PyObject *name)
{
	struct sb_runtime_section section;
	int id = sb_exc_find(name);
	PyObject *cls;

	if (id < 0) {
		PyErr_Format(PyExc_AttributeError, "module 'pysandboxes' has no attribute '%U'",
			     name);
		return NULL;
	}
	/* RestrictedUnpicklingError's base comes from _pickle: the runtime's
	 * import, not the program's. */
	sb_guard_runtime_enter(&section);
	cls = sb_exc_class((enum sb_exc)id);
	sb_guard_runtime_leave(&section);
	if (!cls || PyModule_AddObjectRef(module, sb_exc_name((enum sb_exc)id), cls) < 0)
		return NULL;
	return Py_NewRef(cls);
}

static PyMethodDef module_methods[] = {
    {"__getattr__", module_getattr, METH_O, NULL},
    {"sandbox_denials", sb_exc_sandbox_denials, METH_O,
     "sandbox_denials(e) -> list of '<ExcName>: <msg>' for every refusal in e's chain."},
    {"is_in_sandbox", is_in_sandbox, METH_NOARGS, "True: this code runs under python-sb."},
    {"sandbox", (PyCFunction)(void (*)(void))sandbox, METH_VARARGS | METH_KEYWORDS,
     "@sandbox or @sandbox(timeout=...): inside the sandbox, the function itself."},
    {"sandboxes", (PyCFunction)(void (*)(void))sandboxes, METH_VARARGS | METH_KEYWORDS,
     "sandboxes(...): inside the sandbox, a context manager that starts nothing."},
    {"run", (PyCFunction)(void (*)(void))run, METH_VARARGS | METH_KEYWORDS,
     "run(coro, ...): inside the sandbox, asyncio.run(coro)."},
    {"guarded_eval", (PyCFunction)(void (*)(void))sb_eval_guarded_eval,
     METH_FASTCALL | METH_KEYWORDS,
     "guarded_eval(source, profile=None, names=None, mode='eval'): source checked and run by "
     "the eval guard under the eval-* profile of that name, in a namespace built from its "
     "eval-call plus names. mode='exec' runs a block and returns the names it bound."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "pysandboxes",
    "py-sandboxes, as seen from inside python-sb: exception classes and sandbox_denials().",
    -1,
    module_methods,
};

/* __all__, as the package's shim has it: `from pysandboxes import *` then
 * asks __getattr__ for the classes not made yet. */
static int add_all(PyObject *module)
{
	PyObject *all = PyList_New(0);
	int r = all ? 0 : -1;

	for (size_t i = 0; r == 0 && i < ELEMENTSOF(module_methods) + SB_EXC__N; i++) {
		const char *n = i < ELEMENTSOF(module_methods)
				    ? module_methods[i].ml_name
				    : sb_exc_name((enum sb_exc)(i - ELEMENTSOF(module_methods)));
		PyObject *name;

		if (!n || n[0] == '_')
			continue;
		name = PyUnicode_FromString(n);
		r = name ? PyList_Append(all, name) : -1;
		Py_XDECREF(name);
	}
	if (r == 0)
		r = PyModule_AddObjectRef(module, "__all__", all);
	Py_XDECREF(all);
	return r;
}

PyObject *sb_pysandboxes_module_init(void)
{
	PyObject *module = PyModule_Create(&module_def);

	if (!module)
		return NULL;
	if (sb_exc_add_ready_classes(module) < 0 || add_all(module) < 0 ||
	    PyModule_AddStringConstant(module, "__version__", SB_VERSION) < 0) {
		Py_DECREF(module);
		return NULL;
	}
	return module;
}

/* A refusal makes its own class and SandBoxError on first use (exceptions.c),
 * not the module: importing it and making the dozen other classes cost more
 * than the refusal itself. */
static int raise_oserror(PyObject *cls, int errnum, const char *path, const char *message)
{
	PyObject *exc;

	/* The message names the path, which need not be UTF-8 (bytes paths):
	 * decoded as the path is, or building the exception would raise
	 * UnicodeDecodeError in place of the refusal. */
	exc = path ? PyObject_CallFunction(cls, "iO&O&", errnum, PyUnicode_DecodeFSDefault, message,
					   PyUnicode_DecodeFSDefault, path)
		   : PyObject_CallFunction(cls, "iO&", errnum, PyUnicode_DecodeFSDefault, message);
	if (exc) {
		PyErr_SetObject(cls, exc);
		Py_DECREF(exc);
	}
	/* Some C callers report errno rather than the exception: CPython's
	 * "can't open file" for a script refused at its "open" event clears the
	 * exception and prints strerror(errno). Leave what the refusal means,
	 * not whatever building the exception left there. */
	errno = errnum;
	return -1;
}

int sb_raise_file_not_found(const char *path, const char *message)
{
	PyObject *cls = sb_exc_class(SB_EXC_FILE_NOT_FOUND);

	sb_report_denial(SB_REPORT_DENIAL_FILE, path, message);
	if (!cls)
		return -1;
	return raise_oserror(cls, ENOENT, path, message);
}

int sb_raise_permission(int errnum, const char *path, const char *message)
{
	PyObject *cls = sb_exc_class(SB_EXC_PERMISSION);

	sb_report_denial(SB_REPORT_DENIAL_FILE, path, message);
	if (!cls)
		return -1;
	return raise_oserror(cls, errnum, path, message);
}

int sb_raise_connection_refused(const char *message)
{
	PyObject *cls = sb_exc_class(SB_EXC_CONNECTION_REFUSED);

	sb_report_denial(SB_REPORT_DENIAL_NETWORK, NULL, message);
	if (!cls)
		return -1;
	return raise_oserror(cls, ECONNREFUSED, NULL, message);
}

int sb_raise_module_not_found(const char *name, const char *message)
{
	PyObject *cls = sb_exc_class(SB_EXC_MODULE_NOT_FOUND), *msg, *n;

	sb_report_denial(SB_REPORT_DENIAL_IMPORT, name, message);
	if (!cls)
		return -1;
	msg = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace");
	n = PyUnicode_DecodeUTF8(name, (Py_ssize_t)strlen(name), "replace");

	if (msg && n)
		PyErr_SetImportErrorSubclass(cls, msg, n, NULL);
	Py_XDECREF(msg);
	Py_XDECREF(n);
	return -1;
}

int sb_raise_api_error(const char *qualname, const char *category, const char *message)
{
	PyObject *cls = sb_exc_class(SB_EXC_API_PERMISSION), *exc, *q, *c;
	int r;

	sb_report_denial(SB_REPORT_DENIAL_API, qualname, message);
	if (!cls)
		return -1;
	/* It may name a path (a program to run), decoded as raise_oserror()
	 * decodes one. */
	exc = PyObject_CallFunction(cls, "iO&", EPERM, PyUnicode_DecodeFSDefault, message);
	if (!exc)
		return -1;
	q = PyUnicode_FromString(qualname);
	c = PyUnicode_FromString(category);
	r = q && c && PyObject_SetAttrString(exc, "qualname", q) == 0 &&
		    PyObject_SetAttrString(exc, "category", c) == 0
		? 0
		: -1;
	Py_XDECREF(q);
	Py_XDECREF(c);
	if (r == 0)
		PyErr_SetObject(cls, exc);
	Py_DECREF(exc);
	return -1;
}

int sb_raise_api_denied(const char *qualname, const char *category)
{
	_cleanup_free_ char *message = NULL;

	if (asprintf(&message,
		     "%s() is denied by the API guard (category: %s). Add `python-api=ALLOW:%s` "
		     "to '%s' to allow this function, or `python-api=ALLOW:%s` for the whole "
		     "category",
		     qualname, category, qualname, sb_guard_profile_path(), category) < 0) {
		message = NULL;
		PyErr_NoMemory();
		return -1;
	}
	return sb_raise_api_error(qualname, category, message);
}
