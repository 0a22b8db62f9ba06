/* SPDX-License-Identifier: MIT */
#include "eval-rewrite.h"

#include "eval-ast.h"
#include "eval-helpers.h"
#include "eval-runtime.h"
#include "util.h"

enum cls {
	C_ATTRIBUTE,
	C_BINOP,
	C_AUGASSIGN,
	C_FOR,
	C_ASYNCFOR,
	C_WHILE,
	C_COMPREHENSION,
	C_FUNCTIONDEF,
	C_ASYNCFUNCTIONDEF,
	C_LAMBDA,
	C_EXCEPTHANDLER,
	C_FORMATTEDVALUE,
	C_NAME,
	C_CONSTANT,
	C_CALL,
	C_EXPR,
	C_BOOLOP,
	C_OR,
	C_LOAD,
	C_SUBSCRIPT,
	C_ADD,
	C_MULT,
	C_POW,
	C_LSHIFT,
	C_MOD,
	C_FLOORDIV,
	C__N,
};

static const char *const cls_names[C__N] = {
    "Attribute",     "BinOp",	      "AugAssign",
    "For",	     "AsyncFor",      "While",
    "comprehension", "FunctionDef",   "AsyncFunctionDef",
    "Lambda",	     "ExceptHandler", "FormattedValue",
    "Name",	     "Constant",      "Call",
    "Expr",	     "BoolOp",	      "Or",
    "Load",	     "Subscript",     "Add",
    "Mult",	     "Pow",	      "LShift",
    "Mod",	     "FloorDiv",
};

static struct {
	bool ready;
	PyObject *cls[C__N];
	PyObject *load, * or ;
	PyObject *empty;
	PyTypeObject *base; /* ast.AST */
} rw;

static int ready(void)
{
	if (rw.ready)
		return 0;
	for (size_t i = 0; i < C__N; i++)
		if (!(rw.cls[i] = sb_eval_ast_class(cls_names[i])))
			return -1;
	rw.base = (PyTypeObject *)PyObject_GetAttrString(sb_eval_ast_module(), "AST");
	if (!rw.base)
		return -1;
	rw.load = PyObject_CallNoArgs(rw.cls[C_LOAD]);
	rw.or = PyObject_CallNoArgs(rw.cls[C_OR]);
	rw.empty = PyTuple_New(0);
	if (!rw.load || !rw.or || !rw.empty)
		return -1;
	rw.ready = true;
	return 0;
}

static bool is(PyObject *node, enum cls c)
{
	return node && (PyObject *)Py_TYPE(node) == rw.cls[c];
}

static int copy_position(PyObject *to, PyObject *from)
{
	static const char *const attrs[] = {"lineno", "col_offset", "end_lineno", "end_col_offset"};

	for (size_t i = 0; i < ELEMENTSOF(attrs); i++) {
		PyObject *v = PyObject_GetAttrString(from, attrs[i]);
		int r;

		if (!v) {
			PyErr_Clear();
			continue;
		}
		r = PyObject_SetAttrString(to, attrs[i], v);
		Py_DECREF(v);
		if (r < 0)
			return -1;
	}
	return 0;
}

/* A node of class c with the given fields (NULL-terminated name, value
 * pairs; values stolen), at the position of where. */
static PyObject *node(enum cls c, PyObject *where, ...)
{
	PyObject *n = PyObject_Call(rw.cls[c], rw.empty, NULL);
	va_list ap;
	const char *field;
	int r = n ? 0 : -1;

	va_start(ap, where);
	while ((field = va_arg(ap, const char *))) {
		PyObject *v = va_arg(ap, PyObject *);

		if (r == 0)
			r = v ? PyObject_SetAttrString(n, field, v) : -1;
		Py_XDECREF(v);
	}
	va_end(ap);
	if (r == 0 && where)
		r = copy_position(n, where);
	if (r < 0)
		Py_CLEAR(n);
	return n;
}

/* A list of n objects (new references taken), like PyTuple_Pack. */
static PyObject *list_of(Py_ssize_t n, ...)
{
	PyObject *list = PyList_New(n);
	va_list ap;

	if (!list)
		return NULL;
	va_start(ap, n);
	for (Py_ssize_t i = 0; i < n; i++)
		PyList_SET_ITEM(list, i, Py_NewRef(va_arg(ap, PyObject *)));
	va_end(ap);
	return list;
}

static PyObject *constant(PyObject *value, PyObject *where)
{
	return node(C_CONSTANT, where, "value", value, "kind", Py_NewRef(Py_None), NULL);
}

/* helper(args...) at where; args stolen. */
static PyObject *call_helper(const char *helper, PyObject *where, PyObject *args)
{
	PyObject *name;

	if (!args)
		return NULL;
	name = node(C_NAME, where, "id", PyUnicode_InternFromString(helper), "ctx",
		    Py_NewRef(rw.load), NULL);
	if (!name) {
		Py_DECREF(args);
		return NULL;
	}
	return node(C_CALL, where, "func", name, "args", args, "keywords", PyList_New(0), NULL);
}

static PyObject *helper_stmt(const char *helper, PyObject *where)
{
	PyObject *call = call_helper(helper, where, PyList_New(0));

	return call ? node(C_EXPR, where, "value", call, NULL) : NULL;
}

static int op_of(PyObject *op)
{
	static const struct {
		enum cls c;
		enum sb_eval_op op;
	} ops[] = {
	    {C_ADD, SB_EVAL_OP_ADD}, {C_MULT, SB_EVAL_OP_MUL},
	    {C_POW, SB_EVAL_OP_POW}, {C_LSHIFT, SB_EVAL_OP_LSHIFT},
	    {C_MOD, SB_EVAL_OP_MOD}, {C_FLOORDIV, SB_EVAL_OP_FLOORDIV},
	};

	for (size_t i = 0; i < ELEMENTSOF(ops); i++)
		if (is(op, ops[i].c))
			return (int)ops[i].op;
	return -1;
}

static PyObject *field(PyObject *n, const char *name)
{
	PyObject *v = sb_eval_ast_field(n, name);

	if (!v && !PyErr_Occurred())
		PyErr_Format(PyExc_SystemError, "an AST node without %s", name);
	return v;
}

/* A fresh Load of an augmented assignment's target, when reading it again
 * has no effect of its own: a name, or a subscript of a name by a name or a
 * constant. NULL without an exception otherwise. */
static PyObject *reread(PyObject *target)
{
	PyObject *value = NULL, *slice = NULL, *out = NULL;

	if (is(target, C_NAME))
		return node(C_NAME, target, "id", field(target, "id"), "ctx", Py_NewRef(rw.load),
			    NULL);
	if (!is(target, C_SUBSCRIPT))
		return NULL;
	value = field(target, "value");
	slice = field(target, "slice");
	if (value && slice && is(value, C_NAME) && (is(slice, C_NAME) || is(slice, C_CONSTANT))) {
		PyObject *v =
		    node(C_NAME, value, "id", field(value, "id"), "ctx", Py_NewRef(rw.load), NULL);
		PyObject *s = is(slice, C_NAME) ? node(C_NAME, slice, "id", field(slice, "id"),
						       "ctx", Py_NewRef(rw.load), NULL)
						: Py_NewRef(slice);

		if (v && s)
			out = node(C_SUBSCRIPT, target, "value", v, "slice", s, "ctx",
				   Py_NewRef(rw.load), NULL);
		else {
			Py_XDECREF(v);
			Py_XDECREF(s);
		}
	}
	Py_XDECREF(value);
	Py_XDECREF(slice);
	if (!out)
		PyErr_Clear();
	return out;
}

static int insert_first(PyObject *n, PyObject *stmt, bool after_docstring)
{
	PyObject *body = field(n, "body");
	Py_ssize_t at = 0;
	int r = -1;

	if (body && PyList_Check(body) && stmt) {
		if (after_docstring && PyList_GET_SIZE(body) > 0) {
			PyObject *first = PyList_GET_ITEM(body, 0), *v = NULL;

			if (PyObject_TypeCheck(first, (PyTypeObject *)rw.cls[C_EXPR]))
				v = field(first, "value");
			if (v && is(v, C_CONSTANT)) {
				PyObject *c = field(v, "value");

				at = c && PyUnicode_Check(c) ? 1 : 0;
				Py_XDECREF(c);
			}
			Py_XDECREF(v);
			PyErr_Clear();
		}
		r = PyList_Insert(body, at, stmt);
	}
	Py_XDECREF(body);
	Py_XDECREF(stmt);
	return r;
}

/* Replaces field name of n by helper(value) (iterators, except types). */
static int wrap_field(PyObject *n, const char *name, const char *helper, PyObject *where)
{
	PyObject *v = field(n, name), *arg, *call;
	int r;

	if (!v)
		return -1;
	arg = v == Py_None ? constant(Py_NewRef(Py_None), where) : Py_NewRef(v);
	call = arg ? call_helper(helper, v == Py_None ? where : v, list_of(1, arg)) : NULL;
	Py_XDECREF(arg);
	Py_DECREF(v);
	if (!call)
		return -1;
	r = PyObject_SetAttrString(n, name, call);
	Py_DECREF(call);
	return r;
}

static PyObject *rewrite(PyObject *n, int depth);

/* Rewrites the children of n, replacing those that change. */
static int rewrite_children(PyObject *n, int depth)
{
	PyObject *fields = Py_XNewRef(sb_eval_ast_fields(n));
	int r = 0;

	if (!fields)
		fields = PyObject_GetAttrString((PyObject *)Py_TYPE(n), "_fields");
	if (!fields || !PyTuple_Check(fields)) {
		Py_XDECREF(fields);
		PyErr_Clear();
		return 0;
	}
	for (Py_ssize_t f = 0; r == 0 && f < PyTuple_GET_SIZE(fields); f++) {
		PyObject *name = PyTuple_GET_ITEM(fields, f), *v = sb_eval_ast_field_obj(n, name);

		if (!v)
			continue;
		if (PyList_Check(v)) {
			for (Py_ssize_t k = 0; r == 0 && k < PyList_GET_SIZE(v); k++) {
				PyObject *child = PyList_GET_ITEM(v, k), *out;

				if (!PyObject_TypeCheck(child, rw.base))
					continue;
				out = rewrite(child, depth + 1);
				if (!out)
					r = -1;
				else if (out != child)
					r = PyList_SetItem(v, k, out); /* steals out */
				else
					Py_DECREF(out);
			}
		} else if (PyObject_TypeCheck(v, rw.base)) {
			PyObject *out = rewrite(v, depth + 1);

			if (!out)
				r = -1;
			else if (out != v)
				r = PyObject_SetAttr(n, name, out);
			Py_XDECREF(out);
		}
		Py_DECREF(v);
	}
	Py_DECREF(fields);
	return r;
}

/* The node that replaces n (new reference; n itself when unchanged). */
static PyObject *rewrite(PyObject *n, int depth)
{
	int op;

	if (Py_EnterRecursiveCall(" while rewriting evaluated code"))
		return NULL;
	if (rewrite_children(n, depth) < 0)
		goto fail;
	if (is(n, C_ATTRIBUTE)) {
		PyObject *ctx = field(n, "ctx");
		bool load = is(ctx, C_LOAD);

		Py_XDECREF(ctx);
		if (load) {
			PyObject *value = field(n, "value"), *attr = field(n, "attr"), *name;

			PyObject *out = NULL;

			name = attr ? constant(attr, n) : NULL;
			Py_LeaveRecursiveCall();
			if (value && name)
				out = call_helper(SB_EVAL_H_GETATTR, n, list_of(2, value, name));
			Py_XDECREF(value);
			Py_XDECREF(name);
			return out;
		}
	} else if (is(n, C_BINOP)) {
		PyObject *o = field(n, "op");

		op = o ? op_of(o) : -1;
		Py_XDECREF(o);
		if (op >= 0) {
			PyObject *left = field(n, "left"), *right = field(n, "right");
			PyObject *code = constant(PyLong_FromLong(op), n), *args = NULL, *out;

			if (left && right && code)
				args = list_of(3, code, left, right);
			Py_XDECREF(left);
			Py_XDECREF(right);
			Py_XDECREF(code);
			out = call_helper(SB_EVAL_H_BINOP, n, args);
			Py_LeaveRecursiveCall();
			return out;
		}
	} else if (is(n, C_AUGASSIGN)) {
		PyObject *o = field(n, "op"), *target = field(n, "target");
		PyObject *again = NULL;

		op = o ? op_of(o) : -1;
		Py_XDECREF(o);
		if (op >= 0 && target)
			again = reread(target);
		Py_XDECREF(target);
		if (again) {
			PyObject *value = field(n, "value");
			PyObject *code = constant(PyLong_FromLong(op), n), *call = NULL;
			int r = -1;

			if (value && code)
				call =
				    call_helper(SB_EVAL_H_AUG, n, list_of(3, code, again, value));
			if (call)
				r = PyObject_SetAttrString(n, "value", call);
			Py_XDECREF(call);
			Py_XDECREF(value);
			Py_XDECREF(code);
			Py_DECREF(again);
			if (r < 0)
				goto fail;
		} else if (PyErr_Occurred()) {
			goto fail;
		}
	} else if (is(n, C_FOR) || is(n, C_COMPREHENSION)) {
		PyObject *it = field(n, "iter");
		int r = it ? wrap_field(n, "iter", SB_EVAL_H_ITER, it) : -1;

		Py_XDECREF(it);
		if (r < 0)
			goto fail;
	} else if (is(n, C_WHILE) || is(n, C_ASYNCFOR)) {
		if (insert_first(n, helper_stmt(SB_EVAL_H_TICK, n), false) < 0)
			goto fail;
	} else if (is(n, C_FUNCTIONDEF) || is(n, C_ASYNCFUNCTIONDEF)) {
		if (insert_first(n, helper_stmt(SB_EVAL_H_ENTER, n), true) < 0)
			goto fail;
	} else if (is(n, C_LAMBDA)) {
		/* A lambda's body is one expression: `__sb_enter__() or body`
		 * (the helper returns None). */
		PyObject *body = field(n, "body"), *enter, *values = NULL, *out = NULL;
		int r = -1;

		enter = body ? call_helper(SB_EVAL_H_ENTER, body, PyList_New(0)) : NULL;
		if (enter)
			values = list_of(2, enter, body);
		if (values)
			out = node(C_BOOLOP, body, "op", Py_NewRef(rw.or), "values", values, NULL);
		if (out)
			r = PyObject_SetAttrString(n, "body", out);
		Py_XDECREF(out);
		Py_XDECREF(enter);
		Py_XDECREF(body);
		if (r < 0)
			goto fail;
	} else if (is(n, C_EXCEPTHANDLER)) {
		if (wrap_field(n, "type", SB_EVAL_H_CATCH, n) < 0)
			goto fail;
	} else if (is(n, C_FORMATTEDVALUE)) {
		PyObject *spec = field(n, "format_spec");

		if (spec && spec != Py_None) {
			PyObject *value = field(n, "value"), *conv = field(n, "conversion"),
				 *call = NULL;
			PyObject *conv_node = conv ? constant(Py_NewRef(conv), n) : NULL;
			int r = -1;

			if (value && conv_node)
				call = call_helper(SB_EVAL_H_FORMAT, n,
						   list_of(3, value, conv_node, spec));
			if (call && PyObject_SetAttrString(n, "value", call) == 0 &&
			    PyObject_SetAttrString(n, "format_spec", Py_None) == 0) {
				PyObject *none = PyLong_FromLong(-1);

				r = none ? PyObject_SetAttrString(n, "conversion", none) : -1;
				Py_XDECREF(none);
			}
			Py_XDECREF(call);
			Py_XDECREF(value);
			Py_XDECREF(conv);
			Py_XDECREF(conv_node);
			if (r < 0) {
				Py_DECREF(spec);
				goto fail;
			}
		}
		Py_XDECREF(spec);
		if (PyErr_Occurred())
			goto fail;
	}
	Py_LeaveRecursiveCall();
	return Py_NewRef(n);
fail:
	Py_LeaveRecursiveCall();
	return NULL;
}

int sb_eval_rewrite(PyObject *tree)
{
	PyObject *out;

	if (ready() < 0)
		return -1;
	out = rewrite(tree, 0);
	if (!out)
		return -1;
	/* The root (a mod) is never replaced. */
	Py_DECREF(out);
	return 0;
}
