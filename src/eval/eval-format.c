/* SPDX-License-Identifier: MIT */
#include "eval-format.h"

#include "eval-attr.h"
#include "eval-ops.h"
#include "eval-runtime.h"
#include "util.h"

/* Attribute reads of a field ("0.a.b[1].c"): each attribute is checked; an
 * index is data. */
static int check_field_name(struct sb_eval_rules *r, PyObject *field_name)
{
	PyObject *split, *rest, *item;
	int e = 0;

	split = PyObject_CallMethod(sb_eval_string_module(), "formatter_field_name_split", "O",
				    field_name);
	if (!split)
		return -1;
	if (!PyTuple_Check(split) || PyTuple_GET_SIZE(split) != 2) {
		Py_DECREF(split);
		PyErr_SetString(PyExc_SystemError, "unexpected formatter_field_name_split result");
		return -1;
	}
	rest = PyObject_GetIter(PyTuple_GET_ITEM(split, 1));
	Py_DECREF(split);
	if (!rest)
		return -1;
	while (e == 0 && (item = PyIter_Next(rest))) {
		if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 2 &&
		    PyObject_IsTrue(PyTuple_GET_ITEM(item, 0)) == 1 &&
		    PyUnicode_Check(PyTuple_GET_ITEM(item, 1)))
			e = sb_eval_attr_check(r, PyTuple_GET_ITEM(item, 1));
		Py_DECREF(item);
	}
	Py_DECREF(rest);
	return e < 0 || PyErr_Occurred() ? -1 : 0;
}

/* Every field of template; *nested when a spec takes a field ("{:{}}"),
 * whose width only the arguments tell. */
static int check_template(struct sb_eval_state *s, PyObject *template, bool *nested, int depth)
{
	PyObject *it, *item;
	int e = 0;

	if (depth > 2)
		return 0; /* str.format itself refuses deeper nesting */
	it = PyObject_CallMethod(sb_eval_string_module(), "formatter_parser", "O", template);
	if (!it)
		return -1;
	while (e == 0 && (item = PyIter_Next(it))) {
		PyObject *field, *spec;

		if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 4) {
			Py_DECREF(item);
			continue;
		}
		field = PyTuple_GET_ITEM(item, 1);
		spec = PyTuple_GET_ITEM(item, 2);
		if (PyUnicode_Check(field) && PyUnicode_GET_LENGTH(field) > 0)
			e = check_field_name(s->rules, field);
		if (e == 0 && PyUnicode_Check(spec) && PyUnicode_GET_LENGTH(spec) > 0) {
			if (PyUnicode_FindChar(spec, '{', 0, PyUnicode_GET_LENGTH(spec), 1) >= 0) {
				*nested = true;
				e = check_template(s, spec, nested, depth + 1);
			} else {
				e = sb_eval_spec_check(s, spec);
			}
		}
		Py_DECREF(item);
	}
	Py_DECREF(it);
	return e < 0 || PyErr_Occurred() ? -1 : 0;
}

/* The integers a nested spec may take its width from. */
static int check_width_values(struct sb_eval_state *s, PyObject *values)
{
	PyObject *it = PyObject_GetIter(values), *v;
	int e = 0;

	if (!it) {
		PyErr_Clear();
		return 0;
	}
	while (e == 0 && (v = PyIter_Next(it))) {
		if (PyLong_Check(v) && !PyBool_Check(v)) {
			PyObject *text = PyObject_Str(v);

			e = text ? sb_eval_spec_check(s, text) : -1;
			Py_XDECREF(text);
		}
		Py_DECREF(v);
	}
	Py_DECREF(it);
	return e < 0 || PyErr_Occurred() ? -1 : 0;
}

static int check_call(struct sb_eval_rules *r, PyObject *template, PyObject *args, PyObject *kwargs,
		      bool map)
{
	struct sb_eval_state *s = sb_eval_state_for(r);
	bool nested = false;

	if (!s || check_template(s, template, &nested, 0) < 0)
		return -1;
	if (!nested)
		return 0;
	if (map) {
		PyObject *m = args && PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
		PyObject *values = m && PyDict_Check(m) ? PyDict_Values(m) : NULL;
		int e = m && PyDict_Check(m) && !values ? -1 : 0;

		if (values)
			e = check_width_values(s, values);
		Py_XDECREF(values);
		return e;
	}
	if (args && check_width_values(s, args) < 0)
		return -1;
	if (kwargs && PyDict_Check(kwargs)) {
		PyObject *values = PyDict_Values(kwargs);
		int e = values ? check_width_values(s, values) : -1;

		Py_XDECREF(values);
		return e;
	}
	return 0;
}

/* ---- str.format and format_map -------------------------------------------- */

typedef struct {
	PyObject_HEAD struct sb_eval_rules *rules;
	PyObject *template; /* NULL: unbound (str.format), the template comes first */
	PyObject *method;
	bool map;
} format_wrapper;

static void wrapper_dealloc(PyObject *self)
{
	format_wrapper *w = (format_wrapper *)self;

	Py_XDECREF(w->template);
	Py_XDECREF(w->method);
	PyObject_Free(self);
}

static PyObject *wrapper_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
	format_wrapper *w = (format_wrapper *)self;
	PyObject *template = w->template;
	int e;

	if (!template && PyTuple_GET_SIZE(args) > 0 && PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
		PyObject *rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));

		if (!rest)
			return NULL;
		e = check_call(w->rules, PyTuple_GET_ITEM(args, 0), rest, kwargs, w->map);
		Py_DECREF(rest);
	} else if (template) {
		e = check_call(w->rules, template, args, kwargs, w->map);
	} else {
		e = 0; /* not a str template: str.format raises its own TypeError */
	}
	if (e < 0)
		return NULL;
	return PyObject_Call(w->method, args, kwargs);
}

static PyTypeObject wrapper_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pysandboxes.guarded_format",
    .tp_basicsize = sizeof(format_wrapper),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = wrapper_dealloc,
    .tp_call = wrapper_call,
    .tp_doc = "str.format, its template checked by the eval guard.",
};

PyObject *sb_eval_format_wrap(struct sb_eval_rules *r, PyObject *obj, PyObject *name,
			      PyObject *method)
{
	bool map = PyUnicode_CompareWithASCIIString(name, "format_map") == 0;
	format_wrapper *w;

	if (!map && PyUnicode_CompareWithASCIIString(name, "format") != 0)
		return Py_NewRef(method);
	if (!PyUnicode_Check(obj) &&
	    !(PyType_Check(obj) && PyType_IsSubtype((PyTypeObject *)obj, &PyUnicode_Type)))
		return Py_NewRef(method);
	if (PyType_Ready(&wrapper_type) < 0)
		return NULL;
	w = PyObject_New(format_wrapper, &wrapper_type);
	if (!w)
		return NULL;
	w->rules = r;
	w->template = PyUnicode_Check(obj) ? Py_NewRef(obj) : NULL;
	w->method = Py_NewRef(method);
	w->map = map;
	return (PyObject *)w;
}

/* ---- format() and f-string specs ------------------------------------------ */

PyObject *sb_eval_format_value(struct sb_eval_state *s, PyObject *value, PyObject *spec)
{
	if (spec && sb_eval_spec_check(s, spec) < 0)
		return NULL;
	return PyObject_Format(value, spec);
}

PyObject *sb_eval_format_field(struct sb_eval_state *s, PyObject *value, PyObject *conversion,
			       PyObject *spec)
{
	long c = PyLong_Check(conversion) ? PyLong_AsLong(conversion) : -1;
	PyObject *converted, *out;

	if (sb_eval_spec_check(s, spec) < 0)
		return NULL;
	switch (c) {
	case 's':
		converted = PyObject_Str(value);
		break;
	case 'r':
		converted = PyObject_Repr(value);
		break;
	case 'a':
		converted = PyObject_ASCII(value);
		break;
	default:
		converted = Py_NewRef(value);
		break;
	}
	if (!converted)
		return NULL;
	out = PyObject_Format(converted, spec);
	Py_DECREF(converted);
	return out;
}

/* ---- string.Formatter ------------------------------------------------------ */

static struct {
	PyObject *cls; /* the class wrapped */
	PyObject *get_field, *format_field;
} formatter;

/* get_field(self, field_name, args, kwargs): while an evaluation runs on
 * this thread, the field's attributes pass the attribute rules first. */
static PyObject *guarded_get_field(PyObject *unused _unused_, PyObject *const *args,
				   Py_ssize_t nargs, PyObject *kwnames)
{
	if (sb_eval_current && nargs >= 2 && PyUnicode_Check(args[1]) &&
	    check_field_name(sb_eval_current->rules, args[1]) < 0)
		return NULL;
	return PyObject_Vectorcall(formatter.get_field, args, (size_t)nargs, kwnames);
}

/* format_field(self, value, format_spec): the spec's widths. */
static PyObject *guarded_format_field(PyObject *unused _unused_, PyObject *const *args,
				      Py_ssize_t nargs, PyObject *kwnames)
{
	if (sb_eval_current && nargs >= 3 && sb_eval_spec_check(sb_eval_current, args[2]) < 0)
		return NULL;
	return PyObject_Vectorcall(formatter.format_field, args, (size_t)nargs, kwnames);
}

static PyMethodDef guarded_defs[] = {
    {"get_field", (PyCFunction)(void (*)(void))guarded_get_field, METH_FASTCALL | METH_KEYWORDS,
     "string.Formatter.get_field, its attributes checked by the eval guard."},
    {"format_field", (PyCFunction)(void (*)(void))guarded_format_field,
     METH_FASTCALL | METH_KEYWORDS,
     "string.Formatter.format_field, its spec checked by the eval guard."},
};

static int wrap_method(PyObject *cls, PyMethodDef *def, PyObject **original)
{
	PyObject *dict = ((PyTypeObject *)cls)->tp_dict, *current, *f, *m;
	int r;

	current = PyDict_GetItemString(dict, def->ml_name); /* borrowed */
	if (!current)
		return 0;
	f = PyCFunction_New(def, NULL);
	m = f ? PyInstanceMethod_New(f) : NULL;
	Py_XDECREF(f);
	if (!m)
		return -1;
	Py_XSETREF(*original, Py_NewRef(current));
	r = PyObject_SetAttrString(cls, def->ml_name, m);
	Py_DECREF(m);
	return r;
}

int sb_eval_format_patch_formatter(void)
{
	PyObject *string = sb_eval_loaded_module("string"), *cls;
	int r = 0;

	if (!string)
		return 0;
	cls = PyObject_GetAttrString(string, "Formatter");
	Py_DECREF(string);
	if (!cls || !PyType_Check(cls)) {
		Py_XDECREF(cls);
		PyErr_Clear();
		return 0;
	}
	if (cls != formatter.cls) {
		r = wrap_method(cls, &guarded_defs[0], &formatter.get_field);
		if (r == 0)
			r = wrap_method(cls, &guarded_defs[1], &formatter.format_field);
		if (r == 0)
			Py_XSETREF(formatter.cls, Py_NewRef(cls));
	}
	Py_DECREF(cls);
	return r;
}
