/* SPDX-License-Identifier: MIT */
#include "eval-callables.h"

#include <math.h>

#include "eval-attr.h"
#include "eval-errors.h"
#include "eval-format.h"
#include "eval-iter.h"
#include "eval-ops.h"
#include "eval-regex.h"
#include "eval-runtime.h"
#include "eval-state.h"
#include "util.h"

enum kind {
	K_SHIM,		/* the guarded builtin of that name */
	K_ATTRGETTER,	/* operator.attrgetter(names...): each name checked */
	K_METHODCALLER, /* operator.methodcaller(name, ...): the name checked */
	K_GETTER,	/* what the guarded attrgetter makes: reads through the guard */
	K_CALLER,	/* what the guarded methodcaller makes */
	K_NAME_ARG,	/* __getattribute__/__getattr__: the name argument checked */
	K_OP,		/* a big-integer operator: charged as the operator */
	K_FACTORIAL,
	K_COMB,
	K_PERM,
	K_ISQRT,
	K_GCD,
	K_PROD,
	K_REFUSE, /* refused when read */
};

struct entry {
	const char *module; /* as the callable tells it (_operator for operator.mul) */
	const char *name;
	enum kind kind;
	int op; /* K_OP: enum sb_eval_op */
	const char *hint;
	bool reflected; /* K_OP: __rmul__ and the like, self is the right operand */
};

#define FRAMES_HINT  "it hands over frames, and through them every namespace of the program"
#define OBJECTS_HINT "it hands over any object of the interpreter, the eval guard's own included"
#define BYNAME_HINT                                                                                \
	"it calls whatever its data names, out of the eval guard's sight; no eval- rule allows it"
#define MEMBERS_HINT                                                                               \
	"it reads attributes by name out of the eval guard's sight (__globals__ among them); no "  \
	"eval- rule allows it"
#define IMPORT_HINT                                                                                \
	"it imports by a string, past eval-import; write an import statement, which eval-import "  \
	"checks"
#define DIGITS_HINT                                                                                \
	"it lifts the bound on int/str conversions, quadratic in C, that eval-timeout relies on"

/* Matched by the callable's own module and name: what any spelling that
 * reaches the object (module attribute, from-import, __dict__, type())
 * finds. */
static const struct entry table[] = {
    {"builtins", "getattr", K_SHIM, 0, NULL},
    {"builtins", "hasattr", K_SHIM, 0, NULL},
    {"builtins", "vars", K_SHIM, 0, NULL},
    {"builtins", "dir", K_SHIM, 0, NULL},
    {"builtins", "setattr", K_SHIM, 0, NULL},
    {"builtins", "delattr", K_SHIM, 0, NULL},
    {"builtins", "globals", K_SHIM, 0, NULL},
    {"builtins", "locals", K_SHIM, 0, NULL},
    {"builtins", "breakpoint", K_SHIM, 0, NULL},
    {"builtins", "format", K_SHIM, 0, NULL},
    {"builtins", "pow", K_SHIM, 0, NULL},
    {"builtins", "divmod", K_SHIM, 0, NULL},
    {"builtins", "round", K_SHIM, 0, NULL},
    {"builtins", "eval", K_SHIM, 0, NULL},
    {"builtins", "exec", K_SHIM, 0, NULL},
    {"builtins", "compile", K_SHIM, 0, NULL},
    {"builtins", "__import__", K_SHIM, 0, NULL},
    {"builtins", "sum", K_SHIM, 0, NULL},
    {"builtins", "any", K_SHIM, 0, NULL},
    {"builtins", "all", K_SHIM, 0, NULL},
    {"builtins", "sorted", K_SHIM, 0, NULL},
    {"builtins", "min", K_SHIM, 0, NULL},
    {"builtins", "max", K_SHIM, 0, NULL},
    {"builtins", "iter", K_SHIM, 0, NULL},
    {"builtins", "type", K_SHIM, 0, NULL},
    {"builtins", "range", K_SHIM, 0, NULL},
    {"operator", "attrgetter", K_ATTRGETTER, 0, NULL},
    {"operator", "methodcaller", K_METHODCALLER, 0, NULL},
    {"_operator", "add", K_OP, SB_EVAL_OP_ADD, NULL},
    {"_operator", "iadd", K_OP, SB_EVAL_OP_ADD, NULL},
    {"_operator", "concat", K_OP, SB_EVAL_OP_ADD, NULL},
    {"_operator", "iconcat", K_OP, SB_EVAL_OP_ADD, NULL},
    {"_operator", "mul", K_OP, SB_EVAL_OP_MUL, NULL},
    {"_operator", "imul", K_OP, SB_EVAL_OP_MUL, NULL},
    {"_operator", "pow", K_OP, SB_EVAL_OP_POW, NULL},
    {"_operator", "ipow", K_OP, SB_EVAL_OP_POW, NULL},
    {"_operator", "lshift", K_OP, SB_EVAL_OP_LSHIFT, NULL},
    {"_operator", "ilshift", K_OP, SB_EVAL_OP_LSHIFT, NULL},
    {"_operator", "mod", K_OP, SB_EVAL_OP_MOD, NULL},
    {"_operator", "imod", K_OP, SB_EVAL_OP_MOD, NULL},
    {"_operator", "floordiv", K_OP, SB_EVAL_OP_FLOORDIV, NULL},
    {"_operator", "ifloordiv", K_OP, SB_EVAL_OP_FLOORDIV, NULL},
    {"math", "factorial", K_FACTORIAL, 0, NULL},
    {"math", "comb", K_COMB, 0, NULL},
    {"math", "perm", K_PERM, 0, NULL},
    {"math", "isqrt", K_ISQRT, 0, NULL},
    {"math", "gcd", K_GCD, 0, NULL},
    {"math", "lcm", K_GCD, 0, NULL},
    {"math", "prod", K_PROD, 0, NULL},
    {"sys", "_getframe", K_REFUSE, 0, FRAMES_HINT},
    {"sys", "_current_frames", K_REFUSE, 0, FRAMES_HINT},
    {"sys", "settrace", K_REFUSE, 0, FRAMES_HINT},
    {"sys", "setprofile", K_REFUSE, 0, FRAMES_HINT},
    {"sys", "set_int_max_str_digits", K_REFUSE, 0, DIGITS_HINT},
    {"gc", "get_objects", K_REFUSE, 0, OBJECTS_HINT},
    {"gc", "get_referents", K_REFUSE, 0, OBJECTS_HINT},
    {"gc", "get_referrers", K_REFUSE, 0, OBJECTS_HINT},
    {"_pickle", "loads", K_REFUSE, 0, BYNAME_HINT},
    {"_pickle", "load", K_REFUSE, 0, BYNAME_HINT},
    {"_pickle", "Unpickler", K_REFUSE, 0, BYNAME_HINT},
    {"pickle", "loads", K_REFUSE, 0, BYNAME_HINT},
    {"pickle", "load", K_REFUSE, 0, BYNAME_HINT},
    {"pickle", "_loads", K_REFUSE, 0, BYNAME_HINT},
    {"pickle", "_load", K_REFUSE, 0, BYNAME_HINT},
    {"pickle", "_Unpickler", K_REFUSE, 0, BYNAME_HINT},
    {"marshal", "loads", K_REFUSE, 0, BYNAME_HINT},
    {"marshal", "load", K_REFUSE, 0, BYNAME_HINT},
    {"importlib", "import_module", K_REFUSE, 0, IMPORT_HINT},
    {"importlib", "reload", K_REFUSE, 0, IMPORT_HINT},
    {"inspect", "getattr_static", K_REFUSE, 0, MEMBERS_HINT},
    {"inspect", "getmembers", K_REFUSE, 0, MEMBERS_HINT},
    {"inspect", "getmembers_static", K_REFUSE, 0, MEMBERS_HINT},
    {"inspect", "getclosurevars", K_REFUSE, 0, MEMBERS_HINT},
    {"inspect", "currentframe", K_REFUSE, 0, FRAMES_HINT},
    {"inspect", "stack", K_REFUSE, 0, FRAMES_HINT},
    {"inspect", "trace", K_REFUSE, 0, FRAMES_HINT},
    {"inspect", "getouterframes", K_REFUSE, 0, FRAMES_HINT},
    {"inspect", "getinnerframes", K_REFUSE, 0, FRAMES_HINT},
    {"inspect", "getgeneratorlocals", K_REFUSE, 0, FRAMES_HINT},
    {"inspect", "getcoroutinelocals", K_REFUSE, 0, FRAMES_HINT},
};

/* Matched by the attribute's name, whatever object it was read from: the
 * slots that take an attribute name, and the operators' slots. */
static const struct entry dunders[] = {
    {NULL, "__getattribute__", K_NAME_ARG, 0, NULL},
    {NULL, "__getattr__", K_NAME_ARG, 0, NULL},
    {NULL, "__setattr__", K_REFUSE, 0, "evaluated code reads attributes, it never writes them"},
    {NULL, "__delattr__", K_REFUSE, 0, "evaluated code reads attributes, it never deletes them"},
    {NULL, "__reduce__", K_REFUSE, 0,
     "it hands over the raw getattr and constructors; no eval- rule allows it"},
    {NULL, "__reduce_ex__", K_REFUSE, 0,
     "it hands over the raw getattr and constructors; no eval- rule allows it"},
    {NULL, "__add__", K_OP, SB_EVAL_OP_ADD, NULL},
    {NULL, "__radd__", K_OP, SB_EVAL_OP_ADD, NULL, true},
    {NULL, "__iadd__", K_OP, SB_EVAL_OP_ADD, NULL},
    {NULL, "__mul__", K_OP, SB_EVAL_OP_MUL, NULL},
    {NULL, "__rmul__", K_OP, SB_EVAL_OP_MUL, NULL, true},
    {NULL, "__imul__", K_OP, SB_EVAL_OP_MUL, NULL},
    {NULL, "__pow__", K_OP, SB_EVAL_OP_POW, NULL},
    {NULL, "__rpow__", K_OP, SB_EVAL_OP_POW, NULL, true},
    {NULL, "__ipow__", K_OP, SB_EVAL_OP_POW, NULL},
    {NULL, "__lshift__", K_OP, SB_EVAL_OP_LSHIFT, NULL},
    {NULL, "__rlshift__", K_OP, SB_EVAL_OP_LSHIFT, NULL, true},
    {NULL, "__ilshift__", K_OP, SB_EVAL_OP_LSHIFT, NULL},
    {NULL, "__mod__", K_OP, SB_EVAL_OP_MOD, NULL},
    {NULL, "__rmod__", K_OP, SB_EVAL_OP_MOD, NULL, true},
    {NULL, "__imod__", K_OP, SB_EVAL_OP_MOD, NULL},
    {NULL, "__floordiv__", K_OP, SB_EVAL_OP_FLOORDIV, NULL},
    {NULL, "__rfloordiv__", K_OP, SB_EVAL_OP_FLOORDIV, NULL, true},
    {NULL, "__ifloordiv__", K_OP, SB_EVAL_OP_FLOORDIV, NULL},
    {NULL, "__divmod__", K_OP, SB_EVAL_OP_DIVMOD, NULL},
    {NULL, "__rdivmod__", K_OP, SB_EVAL_OP_DIVMOD, NULL, true},
};

/* attrgetter and methodcaller are not made at all: their objects would read
 * in C, and hand back the raw str.format, re.match or attrgetter the guard
 * wraps. The guarded forms read through sb_eval_getattr(). */
static const struct entry getter_entry = {NULL, "attrgetter", K_GETTER, 0, NULL, false};
static const struct entry caller_entry = {NULL, "methodcaller", K_CALLER, 0, NULL, false};

typedef struct {
	PyObject_HEAD struct sb_eval_rules *rules;
	PyObject *func; /* K_GETTER: the names; K_CALLER: (name, args, kwargs) */
	PyObject *self; /* the bound instance of a slot, NULL when unbound */
	const struct entry *e;
} guarded;

static PyTypeObject guarded_type;

static void guarded_dealloc(PyObject *o)
{
	guarded *g = (guarded *)o;

	Py_XDECREF(g->func);
	Py_XDECREF(g->self);
	PyObject_Free(o);
}

static PyObject *guarded_repr(PyObject *o)
{
	return PyUnicode_FromFormat("<guarded %s>", ((guarded *)o)->e->name);
}

/* Splits a dotted name (attrgetter's 'a.b.c') and checks every part. */
static int check_name(struct sb_eval_rules *r, PyObject *name, bool dotted)
{
	PyObject *parts, *dot;
	int e = 0;

	if (!PyUnicode_Check(name))
		return 0; /* the callable raises its own TypeError */
	if (!dotted)
		return sb_eval_attr_check(r, name);
	dot = PyUnicode_FromString(".");
	parts = dot ? PyUnicode_Split(name, dot, -1) : NULL;
	Py_XDECREF(dot);
	if (!parts)
		return -1;
	for (Py_ssize_t i = 0; e == 0 && i < PyList_GET_SIZE(parts); i++)
		e = sb_eval_attr_check(r, PyList_GET_ITEM(parts, i));
	Py_DECREF(parts);
	return e;
}

static PyObject *arg(PyObject *args, Py_ssize_t i)
{
	return i < PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, i) : NULL;
}

static bool small_int(PyObject *o, double *v)
{
	if (!o || !PyLong_Check(o))
		return false;
	*v = sb_eval_int_value(o);
	return isfinite(*v);
}

/* A result of rb bits built by binary splitting: refused past
 * eval-max-alloc, charged like a product of its size. */
static int check_product(struct sb_eval_state *s, const char *what, double rb, double factor)
{
	if (rb <= 0)
		return 0;
	if (rb > (double)s->max_alloc * 8)
		return sb_eval_deny_budget(s->rules, what, SB_EVAL_MAX_ALLOC, NULL);
	return sb_eval_work_charge(s, factor * pow(rb / 30 + 1, 1.585), what);
}

static int check_math(struct sb_eval_state *s, const guarded *g, PyObject *args)
{
	PyObject *a0 = arg(args, 0), *a1 = arg(args, 1);
	char what[96];
	double n, k, bits, log2n;

	snprintf(what, sizeof(what), "math.%s()", g->e->name);
	switch (g->e->kind) {
	case K_FACTORIAL:
		if (!a0 || !PyLong_Check(a0))
			return 0;
		if (!small_int(a0, &n))
			return sb_eval_deny_budget(s->rules, what, SB_EVAL_MAX_ALLOC, NULL);
		return n > 2 ? check_product(s, what, n * log2(n / M_E), 2) : 0;
	case K_COMB:
	case K_PERM:
		if (!a0 || !PyLong_Check(a0))
			return 0;
		if (!small_int(a0, &n))
			n = INFINITY; /* past a long long */
		log2n = isfinite(n) ? log2(n) : sb_eval_int_bits(a0);
		if (a1 && a1 != Py_None) {
			if (!PyLong_Check(a1))
				return 0;
			if (!small_int(a1, &k))
				k = INFINITY;
		} else {
			k = n;
		}
		if (k < 0 || k > n)
			return 0;
		if (g->e->kind == K_COMB && n - k < k)
			k = n - k;
		if (n < 2 || k < 1)
			return 0;
		return check_product(s, what, k * log2n, 4);
	case K_ISQRT:
		if (!a0 || !PyLong_Check(a0))
			return 0;
		bits = sb_eval_int_bits(a0) / 30 + 1;
		return sb_eval_work_charge(s, bits * bits / 10, what);
	case K_GCD: {
		double most = 0;

		for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++)
			if (PyLong_Check(PyTuple_GET_ITEM(args, i)))
				most = fmax(most, sb_eval_int_bits(PyTuple_GET_ITEM(args, i)));
		most = most / 30 + 1;
		/* Lehmer's gcd is quadratic; lcm multiplies and divides too. */
		return sb_eval_work_charge(s, (double)PyTuple_GET_SIZE(args) * most * most / 2,
					   what);
	}
	default:
		return 0;
	}
}

/* math.prod: the products are the program's `*`, each checked as one. */
static PyObject *guarded_prod(struct sb_eval_state *s, PyObject *args, PyObject *kwargs)
{
	PyObject *it, *acc, *item, *start = NULL;

	if (PyTuple_GET_SIZE(args) != 1) {
		PyErr_SetString(PyExc_TypeError, "prod() takes exactly one positional argument");
		return NULL;
	}
	if (kwargs && PyDict_GET_SIZE(kwargs) > 0) {
		start = PyDict_GetItemString(kwargs, "start");
		if (!start || PyDict_GET_SIZE(kwargs) > 1) {
			PyErr_SetString(PyExc_TypeError, "prod() takes only the keyword 'start'");
			return NULL;
		}
	}
	it = sb_eval_iter_new(s, PyTuple_GET_ITEM(args, 0));
	if (!it)
		return NULL;
	acc = start ? Py_NewRef(start) : PyLong_FromLong(1);
	while (acc && (item = PyIter_Next(it))) {
		PyObject *next = NULL;

		if (sb_eval_op_check(s, SB_EVAL_OP_MUL, acc, item) == 0)
			next = PyNumber_Multiply(acc, item);
		Py_DECREF(item);
		Py_SETREF(acc, next);
	}
	Py_DECREF(it);
	if (acc && PyErr_Occurred())
		Py_CLEAR(acc);
	return acc;
}

static int check_call(struct sb_eval_state *s, const guarded *g, PyObject *args)
{
	PyObject *left, *right;
	Py_ssize_t n = PyTuple_GET_SIZE(args), base = g->self ? 0 : 1;

	switch (g->e->kind) {
	case K_ATTRGETTER:
		for (Py_ssize_t i = 0; i < n; i++)
			if (check_name(s->rules, PyTuple_GET_ITEM(args, i), true) < 0)
				return -1;
		return 0;
	case K_METHODCALLER:
		return n > 0 ? check_name(s->rules, PyTuple_GET_ITEM(args, 0), false) : 0;
	case K_NAME_ARG:
		/* Bound: (name); unbound: (obj, name). */
		return n > base ? check_name(s->rules, PyTuple_GET_ITEM(args, base), false) : 0;
	case K_OP:
		left = g->self ? g->self : arg(args, 0);
		right = arg(args, base);
		if (!left || !right)
			return 0;
		if (g->e->op == SB_EVAL_OP_POW && arg(args, base + 1) &&
		    arg(args, base + 1) != Py_None)
			return sb_eval_op_check_modpow(s, left, right, arg(args, base + 1));
		if (g->e->reflected)
			return sb_eval_op_check(s, (enum sb_eval_op)g->e->op, right, left);
		return sb_eval_op_check(s, (enum sb_eval_op)g->e->op, left, right);
	default:
		return check_math(s, g, args);
	}
}

static PyObject *made(struct sb_eval_rules *r, const struct entry *e, PyObject *func)
{
	guarded *g;

	if (!func || PyType_Ready(&guarded_type) < 0) {
		Py_XDECREF(func);
		return NULL;
	}
	g = PyObject_New(guarded, &guarded_type);
	if (!g) {
		Py_DECREF(func);
		return NULL;
	}
	g->rules = r;
	g->func = func;
	g->self = NULL;
	g->e = e;
	return (PyObject *)g;
}

/* attrgetter('a.b')(obj): obj.a.b, each step a guarded read. */
static PyObject *get_dotted(struct sb_eval_rules *r, PyObject *obj, PyObject *name)
{
	PyObject *dot = PyUnicode_FromString("."), *parts, *v = Py_NewRef(obj);

	parts = dot ? PyUnicode_Split(name, dot, -1) : NULL;
	Py_XDECREF(dot);
	for (Py_ssize_t i = 0; parts && v && i < PyList_GET_SIZE(parts); i++)
		Py_SETREF(v, sb_eval_getattr(r, v, PyList_GET_ITEM(parts, i)));
	if (!parts)
		Py_CLEAR(v);
	Py_XDECREF(parts);
	return v;
}

static PyObject *getter_call(guarded *g, PyObject *args, PyObject *kwargs)
{
	Py_ssize_t n = PyTuple_GET_SIZE(g->func);
	PyObject *out;

	if (PyTuple_GET_SIZE(args) != 1 || (kwargs && PyDict_GET_SIZE(kwargs) > 0)) {
		PyErr_SetString(PyExc_TypeError, "attrgetter expected 1 argument");
		return NULL;
	}
	if (n == 1)
		return get_dotted(g->rules, PyTuple_GET_ITEM(args, 0),
				  PyTuple_GET_ITEM(g->func, 0));
	out = PyTuple_New(n);
	for (Py_ssize_t i = 0; out && i < n; i++) {
		PyObject *v =
		    get_dotted(g->rules, PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(g->func, i));

		if (!v)
			Py_CLEAR(out);
		else
			PyTuple_SET_ITEM(out, i, v);
	}
	return out;
}

static PyObject *caller_call(guarded *g, PyObject *args, PyObject *kwargs)
{
	PyObject *method, *out, *kw = PyTuple_GET_ITEM(g->func, 2);

	if (PyTuple_GET_SIZE(args) != 1 || (kwargs && PyDict_GET_SIZE(kwargs) > 0)) {
		PyErr_SetString(PyExc_TypeError, "methodcaller expected 1 argument");
		return NULL;
	}
	method = sb_eval_getattr(g->rules, PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(g->func, 0));
	if (!method)
		return NULL;
	out = PyObject_Call(method, PyTuple_GET_ITEM(g->func, 1), kw == Py_None ? NULL : kw);
	Py_DECREF(method);
	return out;
}

static PyObject *create(guarded *g, PyObject *args, PyObject *kwargs)
{
	Py_ssize_t n = PyTuple_GET_SIZE(args);

	if (g->e->kind == K_ATTRGETTER) {
		if (n == 0 || (kwargs && PyDict_GET_SIZE(kwargs) > 0)) {
			PyErr_SetString(PyExc_TypeError, "attrgetter expected 1 or more arguments");
			return NULL;
		}
		for (Py_ssize_t i = 0; i < n; i++)
			if (!PyUnicode_Check(PyTuple_GET_ITEM(args, i))) {
				PyErr_SetString(PyExc_TypeError, "attribute name must be a string");
				return NULL;
			}
		return made(g->rules, &getter_entry, Py_NewRef(args));
	}
	if (n == 0 || !PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
		PyErr_SetString(PyExc_TypeError, "method name must be a string");
		return NULL;
	}
	return made(g->rules, &caller_entry,
		    Py_BuildValue("(ONO)", PyTuple_GET_ITEM(args, 0), PyTuple_GetSlice(args, 1, n),
				  kwargs ? kwargs : Py_None));
}

static PyObject *guarded_call(PyObject *o, PyObject *args, PyObject *kwargs)
{
	guarded *g = (guarded *)o;
	struct sb_eval_state *s;
	PyObject *out;

	switch (g->e->kind) {
	case K_GETTER:
		return getter_call(g, args, kwargs);
	case K_CALLER:
		return caller_call(g, args, kwargs);
	default:
		break;
	}
	s = sb_eval_state_for(g->rules);
	if (!s)
		return NULL;
	if (g->e->kind == K_PROD)
		return guarded_prod(s, args, kwargs);
	/* The names are checked when the getter is made: a refusal comes
	 * where the name is written. */
	if (check_call(s, g, args) < 0)
		return NULL;
	if (g->e->kind == K_ATTRGETTER || g->e->kind == K_METHODCALLER)
		return create(g, args, kwargs);
	out = PyObject_Call(g->func, args, kwargs);
	if (out && g->e->kind == K_NAME_ARG) {
		/* What the slot read is handed back as the dot would. */
		PyObject *target = g->self ? g->self : arg(args, 0);
		PyObject *name = arg(args, g->self ? 0 : 1);

		if (target && name && PyUnicode_Check(name))
			Py_SETREF(out, sb_eval_attr_result(g->rules, target, name, out));
	}
	return out;
}

static PyTypeObject guarded_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pysandboxes.eval_guarded_callable",
    .tp_basicsize = sizeof(guarded),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = guarded_dealloc,
    .tp_repr = guarded_repr,
    .tp_call = guarded_call,
    .tp_doc = "A callable the eval guard checks before it runs.",
};

/* The module and name a C function, a type or a Python function tells
 * about itself; false for anything else. */
static bool identify(PyObject *v, const char **module, const char **name, PyObject **hold)
{
	*hold = NULL;
	if (PyCFunction_Check(v)) {
		PyObject *self = PyCFunction_GET_SELF(v);
		PyObject *m = ((PyCFunctionObject *)v)->m_module;

		/* A module's function, or one the API guard wrapped: it keeps
		 * the module's name in __module__. */
		if (self && PyModule_Check(self))
			*module = PyModule_GetName(self);
		else if (!self && m && PyUnicode_Check(m))
			*module = PyUnicode_AsUTF8(m);
		else
			return false;
		*name = ((PyCFunctionObject *)v)->m_ml->ml_name;
	} else if (PyType_Check(v)) {
		const char *full = ((PyTypeObject *)v)->tp_name, *dot = strrchr(full, '.');

		if (v == (PyObject *)&PyType_Type || v == (PyObject *)&PyRange_Type) {
			*module = "builtins";
			*name = full;
			return true;
		}
		if (!dot) {
			/* A class written in Python: its __module__. */
			PyObject *m = PyObject_GetAttrString(v, "__module__");

			if (!m || !PyUnicode_Check(m)) {
				Py_XDECREF(m);
				PyErr_Clear();
				return false;
			}
			*hold = m;
			*module = PyUnicode_AsUTF8(m);
			*name = full;
		} else {
			/* "operator.attrgetter": compared as module "operator". */
			static _Thread_local char buf[64];
			size_t len = (size_t)(dot - full);

			if (len >= sizeof(buf))
				return false;
			memcpy(buf, full, len);
			buf[len] = '\0';
			*module = buf;
			*name = dot + 1;
		}
	} else if (PyFunction_Check(v)) {
		PyObject *m = ((PyFunctionObject *)v)->func_module;
		PyObject *q = ((PyFunctionObject *)v)->func_qualname;

		if (!m || !PyUnicode_Check(m) || !q || !PyUnicode_Check(q))
			return false;
		*module = PyUnicode_AsUTF8(m);
		*name = PyUnicode_AsUTF8(q);
	} else {
		return false;
	}
	if (!*module || !*name) {
		PyErr_Clear();
		Py_CLEAR(*hold);
		return false;
	}
	return true;
}

static const struct entry *find_value(PyObject *v)
{
	const char *module, *name;
	const struct entry *found = NULL;
	PyObject *hold, *self = PyCFunction_Check(v) ? PyCFunction_GET_SELF(v) : NULL;

	/* The guard's own replacements of builtins (__import__, eval...) tell
	 * no module: found by identity in the builtins module. */
	if (PyCFunction_Check(v) && !self) {
		PyObject *builtins = sb_eval_builtins_dict();

		for (size_t i = 0; builtins && i < ELEMENTSOF(table); i++)
			if (streq(table[i].module, "builtins") &&
			    PyDict_GetItemString(builtins, table[i].name) == v)
				return &table[i];
	}
	if (!identify(v, &module, &name, &hold))
		return NULL;
	for (size_t i = 0; !found && i < ELEMENTSOF(table); i++)
		if (streq(table[i].module, module) && streq(table[i].name, name))
			found = &table[i];
	Py_XDECREF(hold);
	return found;
}

static const struct entry *find_name(PyObject *name)
{
	const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;

	if (!s) {
		PyErr_Clear();
		return NULL;
	}
	if (s[0] != '_' || s[1] != '_')
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(dunders); i++)
		if (streq(dunders[i].name, s))
			return &dunders[i];
	return NULL;
}

static PyObject *make(struct sb_eval_rules *r, const struct entry *e, PyObject *value)
{
	guarded *g;

	if (PyType_Ready(&guarded_type) < 0)
		return NULL;
	g = PyObject_New(guarded, &guarded_type);
	if (!g)
		return NULL;
	g->rules = r;
	g->func = Py_NewRef(value);
	g->self = NULL;
	g->e = e;
	/* A slot bound to its instance (method-wrapper, builtin method) takes
	 * the instance as its first operand; a module's function does not. */
	if (e->module == NULL && !PyType_Check(value)) {
		PyObject *self = PyObject_GetAttrString(value, "__self__");

		if (self && self != Py_None)
			g->self = self;
		else
			Py_XDECREF(self);
		PyErr_Clear();
	}
	return (PyObject *)g;
}

/* The __dict__ of a module or a type: a copy holding the names the
 * attribute rules allow, each value as the dot would hand it back (the raw
 * attrgetter of vars(operator), the __globals__ descriptor of a function's
 * type are not in it). */
static _Thread_local int expanding;

static PyObject *wrap_namespace(struct sb_eval_rules *r, PyObject *obj, PyObject *mapping)
{
	PyObject *items = PyMapping_Items(mapping), *out = PyDict_New();

	if (!items || !out)
		goto fail;
	expanding++;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
		PyObject *kv = PyList_GET_ITEM(items, i), *k = PyTuple_GET_ITEM(kv, 0), *w;

		if (!PyUnicode_Check(k) || !sb_eval_attr_allowed(r, k))
			continue;
		w = sb_eval_attr_result(r, obj, k, PyTuple_GET_ITEM(kv, 1));
		if (!w) {
			if (!PyErr_ExceptionMatches(PyExc_PermissionError))
				goto fail_expanding;
			PyErr_Clear();
			continue;
		}
		if (PyDict_SetItem(out, k, w) < 0) {
			Py_DECREF(w);
			goto fail_expanding;
		}
		Py_DECREF(w);
	}
	expanding--;
	Py_DECREF(items);
	return out;
fail_expanding:
	expanding--;
fail:
	Py_XDECREF(items);
	Py_XDECREF(out);
	return NULL;
}

static sb_eval_shim_fn shim_lookup;

void sb_eval_callables_plug(sb_eval_shim_fn lookup)
{
	shim_lookup = lookup;
}

PyObject *sb_eval_callable_wrap(struct sb_eval_rules *r, PyObject *obj, PyObject *name,
				PyObject *value)
{
	const struct entry *e = name ? find_name(name) : NULL;

	if (e && (PyFunction_Check(value) || PyMethod_Check(value)))
		e = NULL; /* a method written in Python runs as Python, checked or not */
	if (!e && !expanding && name && obj && (PyModule_Check(obj) || PyType_Check(obj)) &&
	    PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "__dict__") == 0 &&
	    (PyDict_Check(value) || Py_IS_TYPE(value, &PyDictProxy_Type)))
		return wrap_namespace(r, obj, value);
	if (!e && (PyCFunction_Check(value) || PyType_Check(value) || PyFunction_Check(value)))
		e = find_value(value);
	if (!e)
		return Py_NewRef(value);
	if (e->kind == K_REFUSE) {
		char what[128];

		snprintf(what, sizeof(what), "%s%s%s", e->module ? e->module : "",
			 e->module ? "." : "", e->name);
		sb_eval_deny(r, what, -1, e->hint);
		return NULL;
	}
	if (e->kind == K_SHIM) {
		PyObject *shim = shim_lookup ? shim_lookup(r, e->name) : NULL;

		if (shim)
			return Py_NewRef(shim);
		if (!PyErr_Occurred())
			PyErr_Format(PyExc_SystemError, "the eval guard has no guarded %s",
				     e->name);
		return NULL;
	}
	if (!PyCallable_Check(value))
		return Py_NewRef(value);
	return make(r, e, value);
}

PyObject *sb_eval_callable_from_import(struct sb_eval_rules *r, PyObject *module,
				       PyObject *fromlist)
{
	PyObject *seq, *name, *out;

	name = PyObject_GetAttrString(module, "__name__");
	if (!name)
		return NULL;
	out = PyModule_NewObject(name);
	Py_DECREF(name);
	seq = out ? PySequence_Fast(fromlist, "the from-list must be a sequence") : NULL;
	if (!seq) {
		Py_XDECREF(out);
		return NULL;
	}
	for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
		PyObject *n = PySequence_Fast_GET_ITEM(seq, i), *v, *w;

		if (!PyUnicode_Check(n))
			continue;
		v = PyObject_GetAttr(module, n);
		if (!v) {
			/* Not there: the import statement says so itself. */
			if (!PyErr_ExceptionMatches(PyExc_AttributeError))
				goto fail;
			PyErr_Clear();
			continue;
		}
		w = sb_eval_callable_wrap(r, module, n, v);
		Py_DECREF(v);
		if (!w || PyObject_SetAttr(out, n, w) < 0) {
			Py_XDECREF(w);
			goto fail;
		}
		Py_DECREF(w);
	}
	Py_DECREF(seq);
	return out;
fail:
	Py_DECREF(seq);
	Py_DECREF(out);
	return NULL;
}

PyObject *sb_eval_attr_result(struct sb_eval_rules *r, PyObject *obj, PyObject *name,
			      PyObject *value)
{
	PyObject *out, *wrapped;

	/* What looks attributes up by a string, or runs big-integer work in
	 * one C call, comes back guarded (or is refused). */
	out = sb_eval_callable_wrap(r, obj, name, value);
	if (!out)
		return NULL;
	/* The methods that read attributes or run an engine in C come back
	 * wrapped, their arguments checked when they are called. */
	if (PyUnicode_Check(obj) || PyType_Check(obj)) {
		wrapped = sb_eval_format_wrap(r, obj, name, out);
		Py_DECREF(out);
		out = wrapped;
	}
	if (out && (PyModule_Check(obj) || !PyType_Check(obj))) {
		wrapped = sb_eval_regex_wrap(r, obj, name, out);
		Py_DECREF(out);
		out = wrapped;
	}
	return out;
}

PyObject *sb_eval_getattr(struct sb_eval_rules *r, PyObject *obj, PyObject *name)
{
	PyObject *value, *out;

	if (!PyUnicode_Check(name)) {
		PyErr_Format(PyExc_TypeError, "attribute name must be string, not '%.200s'",
			     Py_TYPE(name)->tp_name);
		return NULL;
	}
	if (sb_eval_attr_check(r, name) < 0)
		return NULL;
	value = PyObject_GetAttr(obj, name);
	if (!value)
		return NULL;
	out = sb_eval_attr_result(r, obj, name, value);
	Py_DECREF(value);
	return out;
}
