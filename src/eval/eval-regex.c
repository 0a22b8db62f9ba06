/* SPDX-License-Identifier: MIT */
#include "eval-regex.h"

#include "eval-errors.h"
#include "eval-ops.h"
#include "eval-state.h"
#include "eval-runtime.h"
#include "util.h"

/* The re functions that run the engine, and where their flags argument
 * sits (the pattern comes first). */
static const struct {
	const char *name;
	Py_ssize_t flags_at, text_at; /* text_at -1: no text */
} module_functions[] = {
    {"compile", 1, -1}, {"match", 2, 1}, {"search", 2, 1}, {"fullmatch", 2, 1}, {"findall", 2, 1},
    {"finditer", 2, 1}, {"split", 3, 1}, {"sub", 4, 2},	   {"subn", 4, 2},
};

/* A compiled pattern's methods, and where their text sits. */
static const struct {
	const char *name;
	Py_ssize_t text_at;
} pattern_methods[] = {
    {"match", 0}, {"search", 0}, {"fullmatch", 0}, {"findall", 0}, {"finditer", 0},
    {"split", 0}, {"sub", 1},	 {"subn", 1},	   {"scanner", 0},
};

/* The opcodes of re's parser, read from its constants module. */
enum re_op {
	OP_MAX_REPEAT,
	OP_MIN_REPEAT,
	OP_POSSESSIVE_REPEAT,
	OP_SUBPATTERN,
	OP_BRANCH,
	OP_ATOMIC_GROUP,
	OP_ASSERT,
	OP_ASSERT_NOT,
	OP_GROUPREF,
	OP_GROUPREF_EXISTS,
	OP_GROUPREF_IGNORE,
	OP_GROUPREF_UNI_IGNORE,
	OP_GROUPREF_LOC_IGNORE,
	OP_LITERAL,
	OP__N,
};

static const char *const op_names[OP__N] = {
    "MAX_REPEAT",
    "MIN_REPEAT",
    "POSSESSIVE_REPEAT",
    "SUBPATTERN",
    "BRANCH",
    "ATOMIC_GROUP",
    "ASSERT",
    "ASSERT_NOT",
    "GROUPREF",
    "GROUPREF_EXISTS",
    "GROUPREF_IGNORE",
    "GROUPREF_UNI_IGNORE",
    "GROUPREF_LOC_IGNORE",
    "LITERAL",
};

/* A bounded repeat of more than this many is treated as unbounded. */
#define SB_EVAL_RE_WIDE_REPEAT 16
#define SB_EVAL_RE_MAX_DEPTH   200

static struct {
	PyObject *parse; /* re._parser.parse */
	PyObject *ops[OP__N];
	PyObject *maxrepeat;
	PyObject
	    *verdicts; /* (pattern, flags) -> the unbounded repeats (int) or the problem (str) */
} re;

static int re_ready(void)
{
	PyObject *parser, *constants;

	if (re.parse)
		return 0;
	/* The pattern exists, so re is loaded, and with it its parser. */
	parser = sb_eval_loaded_module("re._parser");
	if (!parser)
		parser = sb_eval_loaded_module("sre_parse");
	constants = sb_eval_loaded_module("re._constants");
	if (!constants)
		constants = sb_eval_loaded_module("sre_constants");
	if (!parser || !constants) {
		Py_XDECREF(parser);
		Py_XDECREF(constants);
		PyErr_SetString(PyExc_RuntimeError,
				"the eval guard cannot find re's parser to check the pattern");
		return -1;
	}
	re.parse = PyObject_GetAttrString(parser, "parse");
	re.maxrepeat = PyObject_GetAttrString(constants, "MAXREPEAT");
	for (size_t i = 0; i < OP__N; i++) {
		re.ops[i] = PyObject_GetAttrString(constants, op_names[i]);
		if (!re.ops[i])
			PyErr_Clear(); /* an opcode of another Python release */
	}
	re.verdicts = PyDict_New();
	Py_DECREF(parser);
	Py_DECREF(constants);
	if (!re.parse || !re.maxrepeat || !re.verdicts) {
		Py_CLEAR(re.parse);
		return -1;
	}
	return 0;
}

static int op_of(PyObject *op)
{
	for (size_t i = 0; i < OP__N; i++)
		if (re.ops[i] && op == re.ops[i])
			return (int)i;
	return -1;
}

/* Whether the alternatives of a branch start with distinct literals: only
 * then can the engine not try one after another on the same text. */
static bool branch_disjoint(PyObject *alternatives)
{
	PyObject *seen = PySet_New(NULL);
	bool disjoint = seen != NULL;

	for (Py_ssize_t i = 0; disjoint && i < PyList_GET_SIZE(alternatives); i++) {
		PyObject *alt = PyList_GET_ITEM(alternatives, i), *first;

		first = PySequence_GetItem(alt, 0);
		if (!first || !PyTuple_Check(first) || PyTuple_GET_SIZE(first) != 2 ||
		    op_of(PyTuple_GET_ITEM(first, 0)) != OP_LITERAL ||
		    PySet_Contains(seen, PyTuple_GET_ITEM(first, 1)) != 0 ||
		    PySet_Add(seen, PyTuple_GET_ITEM(first, 1)) < 0)
			disjoint = false;
		Py_XDECREF(first);
	}
	PyErr_Clear();
	Py_XDECREF(seen);
	return disjoint;
}

/* Walks a parsed subpattern: *variable when it can match texts of many
 * lengths (an unbounded repeat); *problem set to what makes it explode. */
static int analyze(PyObject *sub, bool in_repeat, bool *variable, const char **problem,
		   int *wide_count, int depth)
{
	PyObject *items;
	int e = 0;

	if (depth > SB_EVAL_RE_MAX_DEPTH) {
		*problem = "a pattern nested this deep";
		return 0;
	}
	items = PySequence_Fast(sub, "subpattern");
	if (!items)
		return -1;
	for (Py_ssize_t i = 0; e == 0 && !*problem && i < PySequence_Fast_GET_SIZE(items); i++) {
		PyObject *item = PySequence_Fast_GET_ITEM(items, i), *av;
		bool inner = false;
		int op, unused = 0;

		if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2)
			continue;
		op = op_of(PyTuple_GET_ITEM(item, 0));
		av = PyTuple_GET_ITEM(item, 1);
		switch (op) {
		case OP_MAX_REPEAT:
		case OP_MIN_REPEAT: {
			PyObject *lo, *hi;
			bool wide;

			if (!PyTuple_Check(av) || PyTuple_GET_SIZE(av) != 3)
				break;
			lo = PyTuple_GET_ITEM(av, 0);
			hi = PyTuple_GET_ITEM(av, 1);
			wide = PyObject_RichCompareBool(hi, lo, Py_NE) == 1 &&
			       (PyObject_RichCompareBool(hi, re.maxrepeat, Py_GE) == 1 ||
				PyLong_AsLong(hi) - PyLong_AsLong(lo) > SB_EVAL_RE_WIDE_REPEAT);
			PyErr_Clear();
			*wide_count += wide;
			e = analyze(PyTuple_GET_ITEM(av, 2), in_repeat || wide, &inner, problem,
				    wide_count, depth + 1);
			if (wide && inner && !*problem)
				*problem = "a repeat inside a repeat";
			*variable = *variable || wide || inner;
			break;
		}
		case OP_POSSESSIVE_REPEAT:
			/* No backtracking into it: judged on its own. */
			if (PyTuple_Check(av) && PyTuple_GET_SIZE(av) == 3)
				e = analyze(PyTuple_GET_ITEM(av, 2), false, &inner, problem,
					    &unused, depth + 1);
			break;
		case OP_ATOMIC_GROUP:
			e = analyze(av, false, &inner, problem, &unused, depth + 1);
			break;
		case OP_ASSERT:
		case OP_ASSERT_NOT:
			if (PyTuple_Check(av) && PyTuple_GET_SIZE(av) == 2)
				e = analyze(PyTuple_GET_ITEM(av, 1), false, &inner, problem,
					    wide_count, depth + 1);
			break;
		case OP_SUBPATTERN:
			if (PyTuple_Check(av) && PyTuple_GET_SIZE(av) == 4) {
				e = analyze(PyTuple_GET_ITEM(av, 3), in_repeat, &inner, problem,
					    wide_count, depth + 1);
				*variable = *variable || inner;
			}
			break;
		case OP_BRANCH:
			if (!PyTuple_Check(av) || PyTuple_GET_SIZE(av) != 2 ||
			    !PyList_Check(PyTuple_GET_ITEM(av, 1)))
				break;
			for (Py_ssize_t k = 0;
			     e == 0 && !*problem && k < PyList_GET_SIZE(PyTuple_GET_ITEM(av, 1));
			     k++)
				e = analyze(PyList_GET_ITEM(PyTuple_GET_ITEM(av, 1), k), in_repeat,
					    &inner, problem, wide_count, depth + 1);
			if (e == 0 && in_repeat && !*problem &&
			    !branch_disjoint(PyTuple_GET_ITEM(av, 1)))
				*problem = "an alternation inside a repeat";
			*variable = *variable || inner;
			break;
		case OP_GROUPREF:
		case OP_GROUPREF_EXISTS:
		case OP_GROUPREF_IGNORE:
		case OP_GROUPREF_UNI_IGNORE:
		case OP_GROUPREF_LOC_IGNORE:
			*problem = "a backreference";
			break;
		default:
			break;
		}
	}
	Py_DECREF(items);
	return e;
}

static int refuse(struct sb_eval_rules *r, PyObject *pattern, PyObject *problem)
{
	_cleanup_free_ char *what = NULL, *hint = NULL;
	PyObject *text = PyObject_Repr(pattern);
	const char *t = text ? PyUnicode_AsUTF8(text) : NULL;
	int n;

	if (!t) {
		Py_XDECREF(text);
		return -1;
	}
	n = asprintf(&what, "the regular expression %.80s%s", t, strlen(t) > 80 ? "..." : "");
	Py_DECREF(text);
	if (n < 0) {
		what = NULL;
		PyErr_NoMemory();
		return -1;
	}
	if (asprintf(&hint,
		     "%s can make the re engine backtrack exponentially, holding the interpreter "
		     "beyond eval-timeout; no eval- rule allows it: rewrite the pattern, or have "
		     "the program pass a linear-time engine such as re2",
		     PyUnicode_AsUTF8(problem)) < 0) {
		hint = NULL;
		PyErr_NoMemory();
		return -1;
	}
	return sb_eval_deny(r, what, -1, hint);
}

/* 0 when the engine may run pattern, -1 with an exception otherwise.
 * *degree: how many unbounded repeats the engine may backtrack into. */
static int check_pattern(struct sb_eval_rules *r, PyObject *pattern, PyObject *flags, int *degree)
{
	PyObject *key, *verdict, *parsed;
	const char *problem = NULL;
	bool variable = false;
	int e, wide = 0;

	*degree = 0;
	if (!PyUnicode_Check(pattern) && !PyBytes_Check(pattern))
		return 0; /* re raises its own TypeError */
	if (re_ready() < 0)
		return -1;
	key = PyTuple_Pack(2, pattern, flags ? flags : Py_None);
	if (!key)
		return -1;
	verdict = PyDict_GetItemWithError(re.verdicts, key); /* borrowed */
	if (!verdict && !PyErr_Occurred()) {
		parsed = flags ? PyObject_CallFunctionObjArgs(re.parse, pattern, flags, NULL)
			       : PyObject_CallFunctionObjArgs(re.parse, pattern, NULL);
		if (!parsed) {
			/* Not a valid pattern: re itself says so when it runs. */
			PyErr_Clear();
			Py_DECREF(key);
			return 0;
		}
		e = analyze(parsed, false, &variable, &problem, &wide, 0);
		Py_DECREF(parsed);
		if (e < 0) {
			Py_DECREF(key);
			return -1;
		}
		verdict = problem ? PyUnicode_FromString(problem) : PyLong_FromLong(wide);
		if (!verdict || PyDict_SetItem(re.verdicts, key, verdict) < 0) {
			Py_XDECREF(verdict);
			Py_DECREF(key);
			return -1;
		}
		Py_DECREF(verdict); /* the dict holds it */
	}
	Py_DECREF(key);
	if (!verdict)
		return -1;
	if (PyLong_Check(verdict)) {
		*degree = (int)PyLong_AsLong(verdict);
		return 0;
	}
	return refuse(r, pattern, verdict);
}

typedef struct {
	PyObject_HEAD struct sb_eval_rules *rules;
	PyObject *func;
	PyObject *pattern; /* a compiled pattern's method: its pattern object */
	Py_ssize_t flags_at, text_at;
} regex_wrapper;

static void wrapper_dealloc(PyObject *self)
{
	regex_wrapper *w = (regex_wrapper *)self;

	Py_XDECREF(w->func);
	Py_XDECREF(w->pattern);
	PyObject_Free(self);
}

static int check_compiled(struct sb_eval_rules *r, PyObject *compiled, int *degree)
{
	PyObject *pattern = PyObject_GetAttrString(compiled, "pattern");
	PyObject *flags = PyObject_GetAttrString(compiled, "flags");
	int e = pattern && flags ? check_pattern(r, pattern, flags, degree) : -1;

	Py_XDECREF(pattern);
	Py_XDECREF(flags);
	return e;
}

static bool is_compiled(PyObject *o)
{
	return streq(Py_TYPE(o)->tp_name, "re.Pattern");
}

/* An unbounded repeat backtracks over every length of the run it matched,
 * at every start: `\d+x` on a run of n digits takes n ** 2 / 2 steps of the
 * engine (9 to 15 ns each measured, 46 s for n = 100_000), d repeats in sequence
 * (`a*a*a*b`, `.*.*=.*`) n ** (d + 1) / (d + 1)!. One C call, out of reach
 * of any check once it runs: refused before it starts when that bound
 * would end past eval-timeout's deadline. The bound is the worst case: a
 * text too long for it is the program's to match (or eval-timeout's to
 * raise). */
#define SB_EVAL_RE_NS_PER_STEP 16.0

static int charge_text(struct sb_eval_rules *r, const regex_wrapper *w, PyObject *args,
		       PyObject *kwargs, int degree)
{
	PyObject *text = NULL;
	struct sb_eval_state *s;
	double n, steps = 1;
	char what[160];

	if (degree < 1 || w->text_at < 0)
		return 0;
	if (PyTuple_GET_SIZE(args) > w->text_at)
		text = PyTuple_GET_ITEM(args, w->text_at);
	else if (kwargs)
		text = PyDict_GetItemString(kwargs, "string");
	if (!text || !(PyUnicode_Check(text) || PyBytes_Check(text) || PyByteArray_Check(text)))
		return 0;
	n = (double)PyObject_Size(text);
	for (int k = 1; k <= degree + 1; k++)
		steps *= n / k;
	snprintf(what, sizeof(what),
		 "a regular expression with %d unbounded repeat%s on a text of %.0f characters",
		 degree, degree > 1 ? "s" : "", n);
	s = sb_eval_state_for(r);
	return s ? sb_eval_work_deadline(s, steps * SB_EVAL_RE_NS_PER_STEP, what) : -1;
}

static PyObject *wrapper_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
	regex_wrapper *w = (regex_wrapper *)self;
	PyObject *pattern = NULL, *flags = NULL;
	int e, degree = 0;

	if (w->pattern) {
		e = check_compiled(w->rules, w->pattern, &degree);
	} else {
		pattern = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0)
			  : kwargs		     ? PyDict_GetItemString(kwargs, "pattern")
						     : NULL;
		flags = PyTuple_GET_SIZE(args) > w->flags_at ? PyTuple_GET_ITEM(args, w->flags_at)
			: kwargs			     ? PyDict_GetItemString(kwargs, "flags")
							     : NULL;
		if (!pattern)
			e = 0;
		else if (is_compiled(pattern))
			e = check_compiled(w->rules, pattern, &degree);
		else
			e = check_pattern(w->rules, pattern, flags, &degree);
	}
	if (e < 0 || charge_text(w->rules, w, args, kwargs, degree) < 0)
		return NULL;
	return PyObject_Call(w->func, args, kwargs);
}

static PyTypeObject wrapper_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pysandboxes.guarded_regex",
    .tp_basicsize = sizeof(regex_wrapper),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = wrapper_dealloc,
    .tp_call = wrapper_call,
    .tp_doc = "A re engine entry, its pattern checked by the eval guard.",
};

static bool is_re_module(PyObject *o)
{
	PyObject *name;
	bool re_module;

	if (!PyModule_Check(o))
		return false;
	name = PyModule_GetNameObject(o);
	re_module = name && PyUnicode_CompareWithASCIIString(name, "re") == 0;
	Py_XDECREF(name);
	PyErr_Clear();
	return re_module;
}

PyObject *sb_eval_regex_wrap(struct sb_eval_rules *r, PyObject *obj, PyObject *name,
			     PyObject *value)
{
	Py_ssize_t flags_at = -1, text_at = -1;
	bool compiled = false;
	regex_wrapper *w;

	if (is_re_module(obj)) {
		for (size_t i = 0; i < ELEMENTSOF(module_functions); i++)
			if (PyUnicode_CompareWithASCIIString(name, module_functions[i].name) == 0) {
				flags_at = module_functions[i].flags_at;
				text_at = module_functions[i].text_at;
			}
	} else if (is_compiled(obj)) {
		for (size_t i = 0; i < ELEMENTSOF(pattern_methods); i++)
			if (PyUnicode_CompareWithASCIIString(name, pattern_methods[i].name) == 0) {
				compiled = true;
				text_at = pattern_methods[i].text_at;
			}
	}
	if (flags_at < 0 && !compiled)
		return Py_NewRef(value);
	if (PyType_Ready(&wrapper_type) < 0)
		return NULL;
	w = PyObject_New(regex_wrapper, &wrapper_type);
	if (!w)
		return NULL;
	w->rules = r;
	w->func = Py_NewRef(value);
	w->pattern = compiled ? Py_NewRef(obj) : NULL;
	w->flags_at = flags_at;
	w->text_at = text_at;
	return (PyObject *)w;
}
