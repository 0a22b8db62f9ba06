/* SPDX-License-Identifier: MIT */
/* Learning: env reads, exit signals, stdlib names (learn-python.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "learn-python.h"

#include <frameobject.h>
#include <signal.h>

#include "guard-runtime.h"
#include "util.h"

static struct {
	const struct sb_learn_env_sink *sink;
	PyObject *getitem, *setitem, *delitem, *keys; /* os._Environ's originals */
	/* dict(os.environ), {**os.environ}: C code calls keys(), then looks
	 * every key up from the same frame and instruction. */
	PyFrameObject *copy_frame;
	int copy_lasti;
	Py_ssize_t copy_left;
	volatile sig_atomic_t exit_signal;
} lp;

/* Whether this lookup is one of a copy that keys() announced. */
static bool copy_lookup(void)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */

	if (lp.copy_left <= 0 || !frame || frame != lp.copy_frame ||
	    PyFrame_GetLasti(frame) != lp.copy_lasti)
		return false;
	lp.copy_left--;
	return true;
}

/* Whether code comes from the standard module name: frozen in 3.11 ("<frozen
 * os>"), or its source file when frozen modules are off. */
static bool is_module_file(const char *file, const char *name)
{
	const char *rest = startswith(file, "<frozen ");
	size_t n = strlen(file), k = strlen(name);

	if (rest)
		return strncmp(rest, name, k) == 0 && streq(rest + k, ">");
	return n > k + 4 && file[n - k - 4] == '/' && strncmp(file + n - k - 3, name, k) == 0 &&
	       streq(file + n - 3, ".py");
}

/* Whether a lookup is part of a copy or a walk of the whole mapping
 * (os.environ.copy(), items(), repr) rather than a read of one variable:
 * subprocess and many libraries copy the environment, which says nothing
 * about what the program needs. */
static bool bulk_lookup(void)
{
	static const char *const bulk[] = {"__iter__", "copy",	  "__repr__", "__eq__",
					   "__or__",   "__ror__", "__ior__",  "__reduce__"};
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	bool result = false;

	Py_XINCREF(frame);
	while (frame) {
		PyCodeObject *code = PyFrame_GetCode(frame);
		const char *file = PyUnicode_AsUTF8(code->co_filename);
		const char *name = PyUnicode_AsUTF8(code->co_name);
		bool mapping_code = file && (is_module_file(file, "os") ||
					     is_module_file(file, "_collections_abc"));
		PyFrameObject *back;

		if (!file || !name)
			PyErr_Clear();
		Py_DECREF(code);
		if (!mapping_code)
			break;
		for (size_t i = 0; name && i < ELEMENTSOF(bulk); i++)
			if (streq(name, bulk[i]))
				result = true;
		back = PyFrame_GetBack(frame);
		Py_DECREF(frame);
		frame = back;
		if (result)
			break;
	}
	Py_XDECREF(frame);
	return result;
}

/* The key as text: os.environ has str keys, os.environb bytes. */
static bool key_text(PyObject *key, char *buf, size_t size)
{
	const char *s = NULL;
	Py_ssize_t n = 0;

	if (PyUnicode_Check(key))
		s = PyUnicode_AsUTF8AndSize(key, &n);
	else if (PyBytes_Check(key))
		s = PyBytes_AS_STRING(key), n = PyBytes_GET_SIZE(key);
	if (!s) {
		PyErr_Clear();
		return false;
	}
	if ((size_t)n >= size || strlen(s) != (size_t)n)
		return false;
	memcpy(buf, s, (size_t)n + 1);
	return true;
}

static PyObject *call_original(PyObject *original, PyObject *const *args, Py_ssize_t nargs)
{
	return PyObject_Vectorcall(original, args, (size_t)nargs, NULL);
}

static PyObject *environ_getitem(PyObject *unused _unused_, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *result = call_original(lp.getitem, args, nargs);
	char name[256];

	/* Only a variable that exists: reading an absent one behaves the same
	 * without a rule. */
	if (result && nargs == 2 && sb_guard_armed() && key_text(args[1], name, sizeof(name)) &&
	    !copy_lookup() && !bulk_lookup())
		lp.sink->read(name);
	return result;
}

static PyObject *environ_keys(PyObject *unused _unused_, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *result = call_original(lp.keys, args, nargs);
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */

	/* Only the frame's own pointer and instruction are kept, never a
	 * reference: the next keys() call replaces them. */
	if (result && nargs == 1 && frame) {
		lp.copy_frame = frame;
		lp.copy_lasti = PyFrame_GetLasti(frame);
		lp.copy_left = PyObject_Length(args[0]);
		if (lp.copy_left < 0) {
			PyErr_Clear();
			lp.copy_left = 0;
		}
	}
	return result;
}

static PyObject *environ_write(PyObject *original, PyObject *const *args, Py_ssize_t nargs)
{
	char name[256];

	/* What the program sets or removes itself (load_dotenv) is not a
	 * variable it needs from the host. */
	if (nargs >= 2 && sb_guard_armed() && key_text(args[1], name, sizeof(name)))
		lp.sink->written(name);
	return call_original(original, args, nargs);
}

static PyObject *environ_setitem(PyObject *unused _unused_, PyObject *const *args, Py_ssize_t nargs)
{
	return environ_write(lp.setitem, args, nargs);
}

static PyObject *environ_delitem(PyObject *unused _unused_, PyObject *const *args, Py_ssize_t nargs)
{
	return environ_write(lp.delitem, args, nargs);
}

static PyMethodDef environ_defs[] = {
    {"__getitem__", (PyCFunction)(void (*)(void))environ_getitem, METH_FASTCALL, NULL},
    {"__setitem__", (PyCFunction)(void (*)(void))environ_setitem, METH_FASTCALL, NULL},
    {"__delitem__", (PyCFunction)(void (*)(void))environ_delitem, METH_FASTCALL, NULL},
    {"keys", (PyCFunction)(void (*)(void))environ_keys, METH_FASTCALL, NULL},
};

/* Replaces os._Environ's item methods (os.environ and os.environb are its
 * instances; os.getenv, get() and `in` go through __getitem__). */
static int wrap_environ(void)
{
	PyObject *os = sb_guard_loaded_module("os"), *cls;
	PyObject **originals[] = {&lp.getitem, &lp.setitem, &lp.delitem, &lp.keys};
	int r = -1;

	if (!os)
		return PyErr_Occurred() ? -1 : 0;
	cls = PyObject_GetAttrString(os, "_Environ");
	Py_DECREF(os);
	if (!cls)
		return -1;
	for (size_t i = 0; i < ELEMENTSOF(environ_defs); i++) {
		PyObject *fn, *method;

		*originals[i] = PyObject_GetAttrString(cls, environ_defs[i].ml_name);
		if (!*originals[i])
			goto out;
		fn = PyCFunction_New(&environ_defs[i], NULL);
		method = fn ? PyInstanceMethod_New(fn) : NULL;
		Py_XDECREF(fn);
		if (!method)
			goto out;
		if (PyObject_SetAttrString(cls, environ_defs[i].ml_name, method) < 0) {
			Py_DECREF(method);
			goto out;
		}
		Py_DECREF(method);
	}
	r = 0;
out:
	Py_DECREF(cls);
	return r;
}

/* SIGTERM and SIGQUIT end the program through SystemExit, so that the
 * interpreter unwinds and finalizes, and the learn file is written; the
 * launcher then dies of the same signal. */
static PyObject *exit_handler(PyObject *unused _unused_, PyObject *const *args, Py_ssize_t nargs)
{
	long signo = nargs >= 1 ? PyLong_AsLong(args[0]) : SIGTERM;

	if (signo == -1 && PyErr_Occurred())
		return NULL;
	if (!lp.exit_signal)
		lp.exit_signal = (sig_atomic_t)signo;
	PyErr_SetObject(PyExc_SystemExit, PyLong_FromLong(128 + signo));
	return NULL;
}

static PyMethodDef exit_handler_def = {
    "_pysandboxes_learning_exit", (PyCFunction)(void (*)(void))exit_handler, METH_FASTCALL,
    "Ends a learning run on SIGTERM/SIGQUIT so that the learned rules are written."};

static int install_signal_handlers(void)
{
	static const int signals[] = {SIGTERM, SIGQUIT};
	PyObject *mod = PyImport_ImportModule("_signal"), *handler;
	int r = 0;

	if (!mod)
		return -1;
	handler = PyCFunction_New(&exit_handler_def, NULL);
	if (!handler) {
		Py_DECREF(mod);
		return -1;
	}
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(signals); i++) {
		PyObject *res = PyObject_CallMethod(mod, "signal", "iO", signals[i], handler);

		if (!res)
			r = -1;
		Py_XDECREF(res);
	}
	Py_DECREF(handler);
	Py_DECREF(mod);
	return r;
}

static int stdlib_names(char ***ret)
{
	PyObject *names = PySys_GetObject("stdlib_module_names"); /* borrowed */
	PyObject *it, *item;
	int r = 0;

	if (!names)
		return 0;
	it = PyObject_GetIter(names);
	if (!it)
		return -1;
	while (r >= 0 && (item = PyIter_Next(it))) {
		const char *s = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;

		if (s && sb_strv_push(ret, s) < 0)
			r = -1;
		Py_DECREF(item);
	}
	Py_DECREF(it);
	if (r < 0)
		PyErr_NoMemory();
	return PyErr_Occurred() ? -1 : 0;
}

int sb_learn_python_activate(const struct sb_learn_env_sink *sink, char ***ret_stdlib,
			     char **reterr)
{
	lp.sink = sink;
	if (stdlib_names(ret_stdlib) < 0 || wrap_environ() < 0 || install_signal_handlers() < 0) {
		PyErr_Clear();
		return sb_error(reterr, -EIO, "cannot set up learning in the interpreter");
	}
	return 0;
}

int sb_learn_python_exit_signal(void)
{
	return lp.exit_signal;
}
