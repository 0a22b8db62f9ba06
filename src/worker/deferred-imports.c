/* SPDX-License-Identifier: MIT */
#include "deferred-imports.h"

#include <frameobject.h>

#include <stdbool.h>

#include "exceptions.h"
#include "util.h"

/* The module dictionary whose top-level code runs now, borrowed; NULL
 * otherwise. */
static PyObject *running;

/* A name bound in place of a refused module (or of a name imported from
 * one): every use but its repr raises the refusal again. */
typedef struct {
	PyObject_HEAD PyObject *name; /* the refused top-level module (str) */
	PyObject *message;	      /* the refusal's text (str) */
} refused_object;

static PyTypeObject refused_type;

static PyObject *refused_new(PyObject *name, PyObject *message)
{
	refused_object *o = PyObject_New(refused_object, &refused_type);

	if (!o)
		return NULL;
	Py_INCREF(name);
	Py_INCREF(message);
	o->name = name;
	o->message = message;
	return (PyObject *)o;
}

static void refused_dealloc(PyObject *self)
{
	refused_object *o = (refused_object *)self;

	Py_XDECREF(o->name);
	Py_XDECREF(o->message);
	PyObject_Free(self);
}

/* The refusal, raised again where the name is used. */
static PyObject *refuse_again(PyObject *self)
{
	refused_object *o = (refused_object *)self;
	PyObject *cls = sb_exc_class(SB_EXC_MODULE_NOT_FOUND), *exc;

	if (!cls)
		return NULL;
	exc = PyObject_CallFunctionObjArgs(cls, o->message, NULL);
	if (exc && PyObject_SetAttrString(exc, "name", o->name) == 0)
		PyErr_SetObject(cls, exc);
	Py_XDECREF(exc);
	return NULL;
}

/* While the top level runs, `from m import x` (and `import m.x as y`) takes
 * an attribute of the placeholder: another placeholder. */
static PyObject *refused_getattro(PyObject *self, PyObject *attr _unused_)
{
	refused_object *o = (refused_object *)self;

	if (running)
		return refused_new(o->name, o->message);
	return refuse_again(self);
}

static PyObject *refused_call(PyObject *self, PyObject *args _unused_, PyObject *kwargs _unused_)
{
	return refuse_again(self);
}

static PyObject *refused_repr(PyObject *self)
{
	return PyUnicode_FromFormat("<refused in the sandbox: %U>",
				    ((refused_object *)self)->message);
}

static PyTypeObject refused_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pysandboxes.RefusedImport",
    .tp_basicsize = sizeof(refused_object),
    .tp_dealloc = refused_dealloc,
    .tp_getattro = refused_getattro,
    .tp_call = refused_call,
    .tp_repr = refused_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A name of the caller's top level whose module the worker's rules refuse.",
};

/* An import statement of the running module's top level: its own frame,
 * an absolute import. */
static bool top_level_statement(PyObject *globals, PyObject *level)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyObject *frame_globals;
	PyCodeObject *code;
	bool top;

	if (!running || globals != running || !frame || (level && PyLong_AsLong(level) != 0)) {
		PyErr_Clear();
		return false;
	}
	code = PyFrame_GetCode(frame);
	frame_globals = PyFrame_GetGlobals(frame);
	top = code && frame_globals == running &&
	      PyUnicode_CompareWithASCIIString(code->co_name, "<module>") == 0;
	Py_XDECREF(frame_globals);
	Py_XDECREF(code);
	return top;
}

/* The guard's builtins.__import__, kept while ours stands in for it. */
static PyObject *guard_import;

/* builtins.__import__(name, globals, locals, fromlist, level) as the
 * guard has it; a refusal of a top-level statement deferred. */
static PyObject *deferring_import(PyObject *self _unused_, PyObject *args, PyObject *kwargs)
{
	PyObject *globals = NULL, *level = NULL, *et, *ev, *etb, *name, *message, *r;

	if (!guard_import) {
		PyErr_SetString(PyExc_ImportError, "__import__ is gone");
		return NULL;
	}
	r = PyObject_Call(guard_import, args, kwargs);
	if (r || !PyErr_ExceptionMatches(sb_exc_class(SB_EXC_MODULE_NOT_FOUND)))
		return r;
	if (PyTuple_GET_SIZE(args) >= 2)
		globals = PyTuple_GET_ITEM(args, 1);
	if (PyTuple_GET_SIZE(args) >= 5)
		level = PyTuple_GET_ITEM(args, 4);
	if (kwargs && !level)
		level = PyDict_GetItemString(kwargs, "level");
	PyErr_Fetch(&et, &ev, &etb);
	PyErr_NormalizeException(&et, &ev, &etb);
	if (!top_level_statement(globals, level) || !ev) {
		PyErr_Restore(et, ev, etb);
		return NULL;
	}
	name = PyObject_GetAttrString(ev, "name");
	message = PyObject_Str(ev);
	if (name && message && PyUnicode_Check(name))
		r = refused_new(name, message);
	else
		PyErr_Clear();
	Py_XDECREF(name);
	Py_XDECREF(message);
	if (!r) {
		PyErr_Restore(et, ev, etb);
		return NULL;
	}
	Py_XDECREF(et);
	Py_XDECREF(ev);
	Py_XDECREF(etb);
	return r;
}

static PyMethodDef deferring_import_def = {
    "__import__", (PyCFunction)(void (*)(void))deferring_import, METH_VARARGS | METH_KEYWORDS,
    "__import__ of the caller's script in the worker (see deferred-imports.h)."};

int sb_deferred_imports_begin(PyObject *module)
{
	PyObject *builtins = PyImport_AddModule("builtins"), *fn; /* borrowed */
	PyObject *dict = PyModule_GetDict(module);		  /* borrowed */
	int r;

	if (!builtins || !dict || PyType_Ready(&refused_type) < 0)
		return -1;
	/* builtins itself, not a copy in the module's namespace: whatever the
	 * guard puts there later is what the module's functions see. */
	Py_CLEAR(guard_import);
	guard_import = PyObject_GetAttrString(builtins, "__import__");
	fn = guard_import ? PyCFunction_New(&deferring_import_def, NULL) : NULL;
	r = fn ? PyObject_SetAttrString(builtins, "__import__", fn) : -1;
	Py_XDECREF(fn);
	if (r == 0)
		running = dict;
	return r;
}

void sb_deferred_imports_end(void)
{
	PyObject *builtins = PyImport_AddModule("builtins"); /* borrowed */
	PyObject *et, *ev, *etb;

	running = NULL;
	if (!guard_import)
		return;
	PyErr_Fetch(&et, &ev, &etb);
	if (!builtins || PyObject_SetAttrString(builtins, "__import__", guard_import) < 0)
		/* The guard's wrapper cannot be put back: ours stays, and
		 * defers nothing from now on. */
		PyErr_Clear();
	PyErr_Restore(et, ev, etb);
}
