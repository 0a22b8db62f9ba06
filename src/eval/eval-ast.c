/* SPDX-License-Identifier: MIT */
#include "eval-ast.h"

#include "eval-code.h"
#include "eval-grammar.h"
#include "eval-learn.h"
#include "eval-runtime.h"
#include "util.h"

/* The nodes the walk treats apart, by their index in sb_eval_nodes. */
enum special {
	N_NAME,
	N_ATTRIBUTE,
	N_CALL,
	N_FUNCTIONDEF,
	N_ASYNCFUNCTIONDEF,
	N_CLASSDEF,
	N_ARG,
	N_KEYWORD,
	N_ALIAS,
	N_IMPORT,
	N_IMPORTFROM,
	N_EXCEPTHANDLER,
	N_GLOBAL,
	N_NONLOCAL,
	N_MATCHAS,
	N_MATCHSTAR,
	N_MATCHMAPPING,
	N_MATCHCLASS,
	N_WITH,
	N_ASYNCWITH,
	N_AWAIT,
	N_ASYNCFOR,
	N_LAMBDA,
	N_STORE,
	N_DEL,
	N_SPECIAL__N,
};

static const char *const special_names[N_SPECIAL__N] = {
    "Name",	  "Attribute",	   "Call",	 "FunctionDef", "AsyncFunctionDef",
    "ClassDef",	  "arg",	   "keyword",	 "alias",	"Import",
    "ImportFrom", "ExceptHandler", "Global",	 "Nonlocal",	"MatchAs",
    "MatchStar",  "MatchMapping",  "MatchClass", "With",	"AsyncWith",
    "Await",	  "AsyncFor",	   "Lambda",	 "Store",	"Del",
};

#define TYPE_INDEX_SIZE 512

static struct {
	bool ready;
	PyObject *base; /* ast.AST */
	PyObject **types;
	PyObject **fields;
	PyTypeObject *index_keys[TYPE_INDEX_SIZE];
	int index_values[TYPE_INDEX_SIZE];
	int special[N_SPECIAL__N];
	PyObject *s_lineno, *s_col, *s_end_lineno, *s_end_col, *s_fields;
} ast;

static size_t type_slot(const void *t)
{
	return ((uintptr_t)t >> 4) & (TYPE_INDEX_SIZE - 1);
}

static int ast_ready(void)
{
	PyObject *mod;

	if (ast.ready)
		return 0;
	mod = sb_eval_ast_module();
	if (!mod)
		return -1;
	ast.types = calloc(sb_eval_n_nodes, sizeof(PyObject *));
	ast.fields = calloc(sb_eval_n_nodes, sizeof(PyObject *));
	if (!ast.types || !ast.fields) {
		PyErr_NoMemory();
		return -1;
	}
	ast.base = PyObject_GetAttrString(mod, "AST");
	ast.s_lineno = PyUnicode_InternFromString("lineno");
	ast.s_col = PyUnicode_InternFromString("col_offset");
	ast.s_end_lineno = PyUnicode_InternFromString("end_lineno");
	ast.s_end_col = PyUnicode_InternFromString("end_col_offset");
	ast.s_fields = PyUnicode_InternFromString("_fields");
	if (!ast.base || !ast.s_lineno || !ast.s_col || !ast.s_end_lineno || !ast.s_end_col ||
	    !ast.s_fields)
		return -1;
	for (size_t i = 0; i < sb_eval_n_nodes; i++) {
		PyObject *t = PyObject_GetAttrString(mod, sb_eval_nodes[i].name);
		size_t k;

		if (!t || !PyType_Check(t)) {
			/* A node of another Python release. */
			Py_XDECREF(t);
			PyErr_Clear();
			continue;
		}
		ast.types[i] = t;
		ast.fields[i] = PyObject_GetAttr(t, ast.s_fields);
		if (!ast.fields[i] || !PyTuple_Check(ast.fields[i]))
			return -1;
		for (k = type_slot(t); ast.index_keys[k]; k = (k + 1) & (TYPE_INDEX_SIZE - 1))
			;
		ast.index_keys[k] = (PyTypeObject *)t;
		ast.index_values[k] = (int)i;
	}
	for (size_t s = 0; s < N_SPECIAL__N; s++)
		ast.special[s] = sb_eval_node_find(special_names[s]);
	ast.ready = true;
	return 0;
}

PyObject *sb_eval_ast_class(const char *name)
{
	int i;

	if (ast_ready() < 0)
		return NULL;
	i = sb_eval_node_find(name);
	if (i < 0 || !ast.types[i]) {
		PyErr_Format(PyExc_SystemError, "no ast class %s", name);
		return NULL;
	}
	return ast.types[i];
}

PyObject *sb_eval_ast_base(void)
{
	return ast_ready() < 0 ? NULL : ast.base;
}

/* The node's index in sb_eval_nodes; -1 for an AST node this table does not
 * know (a later Python's), -2 for what is not a node. */
static int node_index(PyObject *node)
{
	PyTypeObject *t = Py_TYPE(node);

	for (size_t k = type_slot(t); ast.index_keys[k]; k = (k + 1) & (TYPE_INDEX_SIZE - 1))
		if (ast.index_keys[k] == t)
			return ast.index_values[k];
	return PyObject_TypeCheck(node, (PyTypeObject *)ast.base) ? -1 : -2;
}

static bool is(int index, enum special s)
{
	return index >= 0 && index == ast.special[s];
}

/* ---- the walk ------------------------------------------------------------- */

/* A node's position, read only when a violation needs it: most nodes have
 * none, and four attribute reads per node would double the walk. */
struct pos {
	PyObject *node; /* read from it (borrowed, or held by a call site); NULL: read */
	int attr_len;	/* > 0: the caret goes under the last attr_len bytes (an attribute) */
	int line, col, end_line, end_col;
	/* Where a node without a position of its own (arguments, comprehension,
	 * match_case, withitem) is reported: its parent's (borrowed: the tree
	 * holds it while it is walked). */
	PyObject *parent;
};

#define POS(l, c, el, ec) ((struct pos){NULL, 0, l, c, el, ec})

static struct pos at(PyObject *node)
{
	return (struct pos){node, 0, -1, -1, -1, -1};
}

struct call_site {
	PyObject *name;
	struct pos pos;
	bool decorator;
};

struct walker {
	struct sb_eval_rules *r;
	struct sb_eval_check *c;
	PyObject *bound; /* names the source binds: calling them needs no eval-call */
	PyObject *loads; /* names it reads, when the free ones are asked for */
	struct call_site *calls;
	size_t n_calls, cap_calls;
	size_t cap_violations;
};

static int int_attr(PyObject *node, PyObject *name)
{
	PyObject *v = PyObject_GetAttr(node, name);
	long n = -1;

	if (v && PyLong_Check(v))
		n = PyLong_AsLong(v);
	Py_XDECREF(v);
	PyErr_Clear();
	return (int)n;
}

static void resolve(struct pos *p)
{
	PyObject *from = p->node;

	if (!from)
		return;
	if (p->parent && int_attr(from, ast.s_lineno) < 0)
		from = p->parent;
	*p = (struct pos){NULL,
			  p->attr_len,
			  int_attr(from, ast.s_lineno),
			  int_attr(from, ast.s_col),
			  int_attr(from, ast.s_end_lineno),
			  int_attr(from, ast.s_end_col)};
	/* The caret goes under an attribute's name, after the dot. */
	if (p->attr_len > 0 && p->end_line >= 0 && p->end_col >= p->attr_len)
		*p = POS(p->end_line, p->end_col - p->attr_len, p->end_line, p->end_col);
}

static int add_violation(struct walker *w, struct pos p, int learn_kind, const char *learn_name,
			 char *rule, char *narrower, const char *warning, const char *hint,
			 const char *fmt, ...) _printf_(9, 10);
/* Takes rule and narrower (malloc'ed or NULL). 0, or -1 with MemoryError. */
static int add_violation(struct walker *w, struct pos p, int learn_kind, const char *learn_name,
			 char *rule, char *narrower, const char *warning, const char *hint,
			 const char *fmt, ...)
{
	struct sb_eval_check *c = w->c;
	struct sb_eval_violation *v;
	va_list ap;
	int n;

	resolve(&p);
	if (c->n_violations == w->cap_violations) {
		size_t cap = w->cap_violations ? 2 * w->cap_violations : 8;
		struct sb_eval_violation *grown = realloc(c->violations, cap * sizeof(*grown));

		if (!grown)
			goto oom;
		c->violations = grown;
		w->cap_violations = cap;
	}
	v = &c->violations[c->n_violations];
	*v = (struct sb_eval_violation){p.line, p.col, p.end_line, p.end_col};
	v->learn_kind = learn_kind;
	va_start(ap, fmt);
	n = vasprintf(&v->message, fmt, ap);
	va_end(ap);
	if (n < 0)
		goto oom;
	v->rule = rule;
	v->narrower = narrower;
	v->warning = warning ? strdup(warning) : NULL;
	v->hint = hint ? strdup(hint) : NULL;
	v->learn_name = learn_name ? strdup(learn_name) : NULL;
	c->n_violations++;
	if ((warning && !v->warning) || (hint && !v->hint) || (learn_name && !v->learn_name))
		goto oom_counted;
	return 0;
oom:
	free(rule);
	free(narrower);
oom_counted:
	PyErr_NoMemory();
	return -1;
}

static int record_only(struct walker *w, const char *node)
{
	if (sb_strv_contains(w->c->also_nodes, node) || sb_strv_push(&w->c->also_nodes, node) >= 0)
		return 0;
	PyErr_NoMemory();
	return -1;
}

static int violation_node(struct walker *w, int index, struct pos p)
{
	const struct sb_eval_node_info *info = &sb_eval_nodes[index];

	resolve(&p);
	/* The helper nodes of a construct (an import's alias, a function's
	 * arguments) add nothing to its own report on the same line. */
	for (size_t i = 0; info->group && i < w->c->n_violations; i++) {
		const struct sb_eval_violation *v = &w->c->violations[i];
		int other = v->learn_kind == SB_EVAL_LEARN_NODE && v->learn_name
				? sb_eval_node_find(v->learn_name)
				: -1;

		if (other >= 0 && v->line == p.line && sb_eval_nodes[other].group &&
		    streq(sb_eval_nodes[other].group, info->group))
			return record_only(w, info->name);
	}
	char *rule =
	    sb_eval_rule_line(w->r, SB_EVAL_SYNTAX, info->group ? info->group : info->name);
	char *narrower = info->group ? sb_eval_rule_line(w->r, SB_EVAL_SYNTAX, info->name) : NULL;

	if (!rule || (info->group && !narrower)) {
		free(rule);
		free(narrower);
		PyErr_NoMemory();
		return -1;
	}
	return add_violation(w, p, SB_EVAL_LEARN_NODE, info->name, rule, narrower, NULL, NULL,
			     "'%s' is not allowed", info->name);
}

#define MAGIC_WARNING "a dunder reaches the object model: it may open the whole type hierarchy"
#define RESERVED_HINT "names starting with __sb_ belong to the eval guard's helpers: rename it"

/* A name with the reserved prefix: reported once per line. The scan of the
 * text finds it where it is spelt; the tree, where Unicode normalisation
 * made it (a fullwidth low line is '_' to the parser). */
static int check_reserved(struct walker *w, const char *s, struct pos p, bool *found)
{
	*found = strstr(s, SB_EVAL_RESERVED_PREFIX) != NULL;
	if (!*found)
		return 0;
	resolve(&p);
	for (size_t i = 0; i < w->c->n_violations; i++)
		if (w->c->violations[i].reserved && w->c->violations[i].line == p.line)
			return 0;
	if (add_violation(w, p, -1, NULL, NULL, NULL, NULL, RESERVED_HINT,
			  "the name '%s' uses the prefix '%s'", s, SB_EVAL_RESERVED_PREFIX) < 0)
		return -1;
	w->c->violations[w->c->n_violations - 1].reserved = true;
	return 0;
}

/* A dunder used as a name (identifier, parameter, definition...). */
static int check_identifier(struct walker *w, PyObject *name, struct pos p, const char *kind)
{
	const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
	bool reserved;

	if (!s)
		return PyErr_Occurred() ? -1 : 0;
	if (check_reserved(w, s, p, &reserved) < 0)
		return -1;
	if (reserved || !sb_eval_is_dunder(s))
		return 0;
	if (sb_eval_is_namespace_attribute(s))
		return add_violation(w, p, -1, NULL, NULL, NULL, NULL,
				     "it hands over the evaluation's own namespace, whose helpers "
				     "enforce the budgets: no eval- rule allows it",
				     "%s '%s' is not allowed", kind, s);
	if (sb_eval_names_allows(&w->r->magic, name))
		return 0;
	return add_violation(w, p, SB_EVAL_LEARN_MAGIC, s,
			     sb_eval_rule_line(w->r, SB_EVAL_MAGIC, s), NULL, MAGIC_WARNING, NULL,
			     "%s '%s' is not allowed", kind, s);
}

static int check_attribute_name(struct walker *w, PyObject *name, struct pos p)
{
	const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
	bool reserved;

	if (!s)
		return PyErr_Occurred() ? -1 : 0;
	if (check_reserved(w, s, p, &reserved) < 0)
		return -1;
	if (reserved)
		return 0;
	if (sb_eval_is_frame_attribute(s))
		return add_violation(w, p, -1, NULL, NULL, NULL, NULL,
				     "it reaches a frame, and through it the program's globals: "
				     "no eval- rule allows it",
				     "attribute '%s' is not allowed", s);
	if (sb_eval_is_dunder(s))
		return check_identifier(w, name, p, "attribute");
	if (sb_eval_names_allows(&w->r->attribute, name) &&
	    (!sb_eval_is_blind_attribute(s) ||
	     (streq(s, "format") ? w->r->format_granted : w->r->format_map_granted)))
		return 0;
	return add_violation(w, p, SB_EVAL_LEARN_ATTRIBUTE, s,
			     sb_eval_rule_line(w->r, SB_EVAL_ATTRIBUTE, s), NULL,
			     sb_eval_is_blind_attribute(s)
				 ? "it reads attributes in C from its template, which is then "
				   "checked at run time; an f-string is checked like any code"
				 : NULL,
			     NULL, "attribute '%s' is not allowed", s);
}

static int check_module(struct walker *w, PyObject *module, struct pos p)
{
	const char *s = module && PyUnicode_Check(module) ? PyUnicode_AsUTF8(module) : NULL;
	char top[128];

	if (!s)
		return PyErr_Occurred() ? -1 : 0;
	if (sb_eval_names_allows(&w->r->import, module))
		return 0;
	snprintf(top, sizeof(top), "%.*s", (int)strcspn(s, "."), s);
	return add_violation(w, p, SB_EVAL_LEARN_IMPORT, s,
			     sb_eval_rule_line(w->r, SB_EVAL_IMPORT, s), NULL,
			     sb_eval_import_warning(top), NULL, "import '%s' is not allowed", s);
}

static int add_call(struct walker *w, PyObject *name, struct pos p, bool decorator)
{
	if (w->n_calls == w->cap_calls) {
		size_t cap = w->cap_calls ? 2 * w->cap_calls : 8;
		struct call_site *grown = realloc(w->calls, cap * sizeof(*grown));

		if (!grown) {
			PyErr_NoMemory();
			return -1;
		}
		w->calls = grown;
		w->cap_calls = cap;
	}
	/* The node outlives the walk's own reference to it. */
	Py_XINCREF(p.node);
	w->calls[w->n_calls++] = (struct call_site){Py_NewRef(name), p, decorator};
	return 0;
}

static int bind(struct walker *w, PyObject *name)
{
	return name && PyUnicode_Check(name) ? PySet_Add(w->bound, name) : 0;
}

/* A field of node (new reference), or NULL without an exception: from the
 * node's own dict (an AST node keeps its fields there), else from its class
 * (the default of an optional field). Faster than the generic attribute
 * look-up, which would run for every field of every node. */
static PyObject *field_obj(PyObject *node, PyObject *name)
{
	PyObject *dict = PyObject_GenericGetDict(node, NULL), *v = NULL;

	if (dict) {
		v = PyDict_GetItemWithError(dict, name);
		Py_XINCREF(v);
		Py_DECREF(dict);
	}
	if (!v && !PyErr_Occurred())
		v = PyObject_GetAttr(node, name);
	if (!v)
		PyErr_Clear();
	return v;
}

/* field_obj() by a C name (a string literal: interned once, by address). */
PyObject *sb_eval_ast_field(PyObject *node, const char *name)
{
	static struct {
		const char *name;
		PyObject *str;
	} names[24];
	PyObject *key = NULL;
	size_t i;

	for (i = 0; i < ELEMENTSOF(names) && names[i].name; i++)
		if (names[i].name == name) {
			key = names[i].str;
			break;
		}
	if (!key) {
		key = PyUnicode_InternFromString(name);
		if (!key) {
			PyErr_Clear();
			return NULL;
		}
		if (i < ELEMENTSOF(names))
			names[i].name = name, names[i].str = key;
		else
			Py_DECREF(key); /* more names than slots: looked up each time */
	}
	return field_obj(node, key);
}

#define field sb_eval_ast_field

PyObject *sb_eval_ast_field_obj(PyObject *node, PyObject *name)
{
	return field_obj(node, name);
}

PyObject *sb_eval_ast_fields(PyObject *node)
{
	int i = node_index(node);

	return i >= 0 ? ast.fields[i] : NULL;
}

/* A str field of node (new reference), or NULL without an exception when
 * absent or None. */
static PyObject *str_field(PyObject *node, const char *name)
{
	PyObject *v = field(node, name);

	if (v && !PyUnicode_Check(v))
		Py_CLEAR(v);
	return v;
}

/* The name a node binds in its field name (none when absent): bound in the
 * evaluated code's scope, and checked as an identifier of that kind. */
static int bind_name_field(struct walker *w, PyObject *node, const char *name, struct pos p,
			   const char *kind)
{
	PyObject *v = str_field(node, name);
	int r = v ? bind(w, v) : 0;

	if (v && r == 0)
		r = check_identifier(w, v, p, kind);
	Py_XDECREF(v);
	return r;
}

/* What a node of index i means beyond its own type: names, calls,
 * attributes, imports. */
static int check_node(struct walker *w, PyObject *node, int i, struct pos p)
{
	PyObject *v = NULL, *list = NULL;
	int r = 0;

	if (is(i, N_NAME)) {
		PyObject *ctx = field(node, "ctx");
		int ci = ctx ? node_index(ctx) : -2;

		Py_XDECREF(ctx);
		PyErr_Clear();
		v = str_field(node, "id");
		if (v && (is(ci, N_STORE) || is(ci, N_DEL)))
			r = bind(w, v);
		else if (v && w->loads)
			r = PySet_Add(w->loads, v);
		if (v && r == 0)
			r = check_identifier(w, v, p, "identifier");
	} else if (is(i, N_ATTRIBUTE)) {
		PyObject *ctx = field(node, "ctx");
		int ci = ctx ? node_index(ctx) : -2;

		Py_XDECREF(ctx);
		PyErr_Clear();
		v = str_field(node, "attr");
		if (v) {
			Py_ssize_t len = 0;

			if (PyUnicode_AsUTF8AndSize(v, &len))
				p.attr_len = (int)len;
			PyErr_Clear();
		}
		if (v && (is(ci, N_STORE) || is(ci, N_DEL)))
			r = add_violation(w, p, -1, NULL, NULL, NULL, NULL,
					  "evaluated code reads attributes, it never writes them: "
					  "no eval- rule allows it",
					  "%s attribute '%s' is not allowed",
					  is(ci, N_STORE) ? "assigning to" : "deleting",
					  PyUnicode_AsUTF8(v));
		else if (v)
			r = check_attribute_name(w, v, p);
	} else if (is(i, N_CALL)) {
		PyObject *func = field(node, "func");

		w->c->flags |= SB_EVAL_CODE_CALLS;
		if (func && node_index(func) == ast.special[N_NAME]) {
			v = str_field(func, "id");
			if (v)
				r = add_call(w, v, p, false);
		}
		Py_XDECREF(func);
		PyErr_Clear();
	} else if (is(i, N_FUNCTIONDEF) || is(i, N_ASYNCFUNCTIONDEF) || is(i, N_CLASSDEF)) {
		v = str_field(node, "name");
		if (v)
			r = bind(w, v);
		if (v && r == 0)
			r = check_identifier(w, v, p, "definition");
		if (is(i, N_CLASSDEF))
			w->c->flags |= SB_EVAL_CODE_CALLS;
		list = field(node, "decorator_list");
		for (Py_ssize_t k = 0;
		     r == 0 && list && PyList_Check(list) && k < PyList_GET_SIZE(list); k++) {
			PyObject *d = PyList_GET_ITEM(list, k), *dn;

			w->c->flags |= SB_EVAL_CODE_CALLS;
			if (node_index(d) != ast.special[N_NAME])
				continue;
			dn = str_field(d, "id");
			if (dn)
				r = add_call(w, dn, at(d), true);
			Py_XDECREF(dn);
		}
		PyErr_Clear();
	} else if (is(i, N_ARG)) {
		r = bind_name_field(w, node, "arg", p, "parameter");
	} else if (is(i, N_KEYWORD)) {
		v = str_field(node, "arg");
		if (v)
			r = check_identifier(w, v, p, "keyword");
	} else if (is(i, N_EXCEPTHANDLER) || is(i, N_MATCHAS) || is(i, N_MATCHSTAR)) {
		r = bind_name_field(w, node, "name", p, "name");
	} else if (is(i, N_MATCHMAPPING)) {
		r = bind_name_field(w, node, "rest", p, "name");
	} else if (is(i, N_MATCHCLASS)) {
		/* `case C(x=0)` reads the attribute x of the subject in C. */
		list = field(node, "kwd_attrs");
		for (Py_ssize_t k = 0;
		     r == 0 && list && PyList_Check(list) && k < PyList_GET_SIZE(list); k++)
			r = check_attribute_name(w, PyList_GET_ITEM(list, k), p);
		PyErr_Clear();
	} else if (is(i, N_GLOBAL) || is(i, N_NONLOCAL)) {
		list = field(node, "names");
		for (Py_ssize_t k = 0;
		     r == 0 && list && PyList_Check(list) && k < PyList_GET_SIZE(list); k++)
			r = check_identifier(w, PyList_GET_ITEM(list, k), p, "name");
		PyErr_Clear();
	} else if (is(i, N_IMPORT) || is(i, N_IMPORTFROM)) {
		bool from = is(i, N_IMPORTFROM);

		w->c->flags |= SB_EVAL_CODE_CALLS;
		if (from) {
			PyObject *lv = field(node, "level");
			int level = lv && PyLong_Check(lv) ? (int)PyLong_AsLong(lv) : 0;

			Py_XDECREF(lv);
			PyErr_Clear();
			v = str_field(node, "module");
			if (level > 0 || !v)
				r = add_violation(w, p, -1, NULL, NULL, NULL, NULL,
						  "evaluated code has no package to be relative to",
						  "a relative import is not allowed");
			else
				r = check_module(w, v, p);
		}
		list = field(node, "names");
		for (Py_ssize_t k = 0;
		     r == 0 && list && PyList_Check(list) && k < PyList_GET_SIZE(list); k++) {
			PyObject *alias = PyList_GET_ITEM(list, k);
			PyObject *name = str_field(alias, "name"), *as = str_field(alias, "asname");

			if (!name) {
				Py_XDECREF(as);
				continue;
			}
			if (from && PyUnicode_CompareWithASCIIString(name, "*") == 0)
				r = add_violation(w, p, -1, NULL, NULL, NULL, NULL,
						  "it binds names the check cannot see",
						  "'from ... import *' is not allowed");
			else if (from)
				r = check_identifier(w, name, p, "imported name");
			else
				r = check_module(w, name, p);
			if (r == 0 && as)
				r = check_identifier(w, as, p, "name");
			if (r == 0) {
				PyObject *bound_name = as ? Py_NewRef(as) : NULL;

				if (!bound_name && from)
					bound_name = Py_NewRef(name);
				else if (!bound_name) {
					Py_ssize_t dot = PyUnicode_FindChar(
					    name, '.', 0, PyUnicode_GET_LENGTH(name), 1);

					bound_name = dot >= 0 ? PyUnicode_Substring(name, 0, dot)
							      : Py_NewRef(name);
				}
				r = bound_name ? bind(w, bound_name) : -1;
				Py_XDECREF(bound_name);
			}
			Py_DECREF(name);
			Py_XDECREF(as);
		}
		PyErr_Clear();
	} else if (is(i, N_WITH) || is(i, N_ASYNCWITH) || is(i, N_AWAIT) || is(i, N_ASYNCFOR)) {
		w->c->flags |= SB_EVAL_CODE_CALLS;
	}
	Py_XDECREF(v);
	Py_XDECREF(list);
	return r;
}

struct frame {
	PyObject *node;	  /* strong */
	PyObject *parent; /* borrowed (the tree holds it), NULL for the root */
	size_t depth;
};

static int push(struct frame **stack, size_t *n, size_t *cap, PyObject *node, PyObject *parent,
		size_t depth)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		struct frame *grown = realloc(*stack, c * sizeof(*grown));

		if (!grown) {
			PyErr_NoMemory();
			return -1;
		}
		*stack = grown;
		*cap = c;
	}
	(*stack)[(*n)++] = (struct frame){Py_NewRef(node), parent, depth};
	return 0;
}

/* The children of a node are its _fields that hold nodes or lists of them;
 * a node this table does not know has its fields walked all the same. */
static int push_children(struct frame **stack, size_t *n, size_t *cap, PyObject *node, int i,
			 size_t depth)
{
	PyObject *fields =
	    i >= 0 ? Py_XNewRef(ast.fields[i]) : PyObject_GetAttr(node, ast.s_fields);
	int r = 0;

	if (!fields || !PyTuple_Check(fields)) {
		Py_XDECREF(fields);
		PyErr_Clear();
		return 0;
	}
	/* Reversed, so that the stack pops them in source order. */
	for (Py_ssize_t f = PyTuple_GET_SIZE(fields) - 1; r == 0 && f >= 0; f--) {
		PyObject *v = field_obj(node, PyTuple_GET_ITEM(fields, f));

		if (!v) {
			PyErr_Clear();
			continue;
		}
		if (PyList_Check(v)) {
			for (Py_ssize_t k = PyList_GET_SIZE(v) - 1; r == 0 && k >= 0; k--)
				if (node_index(PyList_GET_ITEM(v, k)) != -2)
					r = push(stack, n, cap, PyList_GET_ITEM(v, k), node,
						 depth + 1);
		} else if (node_index(v) != -2) {
			r = push(stack, n, cap, v, node, depth + 1);
		}
		Py_DECREF(v);
	}
	Py_DECREF(fields);
	return r;
}

static int walk(struct walker *w, PyObject *tree)
{
	struct frame *stack = NULL;
	size_t n = 0, cap = 0;
	int r = push(&stack, &n, &cap, tree, NULL, 1);

	while (r == 0 && n > 0) {
		struct frame f = stack[--n];
		int i = node_index(f.node);
		struct pos p = at(f.node);

		p.parent = f.parent;
		w->c->nodes++;
		if (f.depth > w->c->depth)
			w->c->depth = f.depth;
		if (i == -1)
			r = add_violation(w, p, -1, NULL, NULL, NULL, NULL,
					  "this version of the eval guard does not know it, and "
					  "denies it",
					  "'%s' is not allowed", Py_TYPE(f.node)->tp_name);
		else if (i >= 0 && !w->r->syntax[i])
			r = violation_node(w, i, p);
		if (r == 0 && i >= 0)
			r = check_node(w, f.node, i, p);
		if (r == 0)
			r = push_children(&stack, &n, &cap, f.node, i, f.depth);
		Py_DECREF(f.node);
	}
	while (n > 0)
		Py_DECREF(stack[--n].node);
	free(stack);
	return r;
}

/* Calls of names the source does not bind itself must be in eval-call: the
 * builtins namespace is built from the same list. */
static int check_calls(struct walker *w)
{
	for (size_t k = 0; k < w->n_calls; k++) {
		struct call_site *cs = &w->calls[k];
		const char *s = PyUnicode_AsUTF8(cs->name);
		int bound = PySet_Contains(w->bound, cs->name);

		if (!s || bound < 0)
			return -1;
		if (bound || strstr(s, SB_EVAL_RESERVED_PREFIX) ||
		    sb_eval_names_allows(&w->r->call, cs->name))
			continue;
		if (add_violation(
			w, cs->pos, SB_EVAL_LEARN_CALL, s, sb_eval_rule_line(w->r, SB_EVAL_CALL, s),
			NULL,
			sb_eval_is_sensitive_call(s)
			    ? "a capability builtin: guarded, but it widens what the code "
			      "reaches"
			    : NULL,
			NULL, "%s '%s' is not allowed", cs->decorator ? "decorator" : "call to",
			s) < 0)
			return -1;
	}
	return 0;
}

/* Every mention of the prefix in the text (names, strings, comments). */
static int scan_reserved(struct walker *w, const char *source)
{
	int line = 1;
	const char *line_start = source;

	for (const char *s = source; s && *s; s++) {
		if (*s == '\n') {
			line++;
			line_start = s + 1;
			continue;
		}
		if (*s != '_' || !startswith(s, SB_EVAL_RESERVED_PREFIX))
			continue;
		if (add_violation(w,
				  POS(line, (int)(s - line_start), line, (int)(s - line_start) + 5),
				  -1, NULL, NULL, NULL, NULL, RESERVED_HINT,
				  "the source mentions '%s'", SB_EVAL_RESERVED_PREFIX) < 0)
			return -1;
		w->c->violations[w->c->n_violations - 1].reserved = true;
		s += strlen(SB_EVAL_RESERVED_PREFIX) - 1;
	}
	return 0;
}

static char *scalar_rule(const struct sb_eval_rules *r, enum sb_eval_scalar_key key, size_t value)
{
	char *s;

	if (asprintf(&s, "%s%s=%zu", sb_eval_scalar_key_name(key), r->key_suffix, value) < 0)
		return NULL;
	return s;
}

static int cmp_violation(const void *a, const void *b)
{
	const struct sb_eval_violation *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->col < y->col ? -1 : x->col > y->col;
}

/* The names read but not bound, that are not builtins either: what a bare
 * eval() would take from its caller's variables. */
static int free_names(struct walker *w)
{
	PyObject *free = PyNumber_Subtract(w->loads, w->bound), *list;
	PyObject *builtins = sb_eval_builtins_dict();
	int e = 0;

	list = free ? PySequence_List(free) : NULL;
	Py_XDECREF(free);
	if (!list || PyList_Sort(list) < 0) {
		Py_XDECREF(list);
		return -1;
	}
	for (Py_ssize_t i = 0; e == 0 && i < PyList_GET_SIZE(list); i++) {
		PyObject *name = PyList_GET_ITEM(list, i);
		const char *s = PyUnicode_AsUTF8(name);

		if (!s)
			e = -1;
		else if (!builtins || !PyDict_GetItemWithError(builtins, name))
			e = PyErr_Occurred() || sb_strv_push(&w->c->free_names, s) < 0 ? -1 : 0;
	}
	Py_DECREF(list);
	if (e < 0 && !PyErr_Occurred())
		PyErr_NoMemory();
	return e;
}

int sb_eval_ast_check(PyObject *tree, const char *source, struct sb_eval_rules *r,
		      bool want_free_names, struct sb_eval_check *ret)
{
	struct walker w = {.r = r, .c = ret};
	char budget[96];
	int e;

	*ret = (struct sb_eval_check){0};
	if (ast_ready() < 0)
		return -1;
	w.bound = PySet_New(NULL);
	w.loads = want_free_names ? PySet_New(NULL) : NULL;
	if (!w.bound || (want_free_names && !w.loads)) {
		Py_XDECREF(w.bound);
		return -1;
	}
	e = scan_reserved(&w, source);
	if (e == 0)
		e = walk(&w, tree);
	if (e == 0)
		e = check_calls(&w);
	if (e == 0 && w.loads)
		e = free_names(&w);
	if (e == 0 && ret->nodes > r->max_nodes) {
		sb_eval_budget_text(r, SB_EVAL_MAX_NODES, budget, sizeof(budget));
		e = add_violation(&w, POS(1, 0, -1, -1), -1, NULL,
				  scalar_rule(r, SB_EVAL_MAX_NODES, ret->nodes), NULL, NULL, NULL,
				  "the source holds %zu nodes, more than %s", ret->nodes, budget);
	}
	if (e == 0 && ret->depth > r->max_depth) {
		sb_eval_budget_text(r, SB_EVAL_MAX_DEPTH, budget, sizeof(budget));
		e = add_violation(&w, POS(1, 0, -1, -1), -1, NULL,
				  scalar_rule(r, SB_EVAL_MAX_DEPTH, ret->depth), NULL, NULL, NULL,
				  "the source nests %zu levels deep, more than %s", ret->depth,
				  budget);
	}
	for (size_t k = 0; k < w.n_calls; k++) {
		Py_DECREF(w.calls[k].name);
		Py_XDECREF(w.calls[k].pos.node);
	}
	free(w.calls);
	Py_DECREF(w.bound);
	Py_XDECREF(w.loads);
	if (e < 0) {
		sb_eval_check_done(ret);
		return -1;
	}
	if (ret->n_violations > 1)
		qsort(ret->violations, ret->n_violations, sizeof(*ret->violations), cmp_violation);
	return 0;
}

void sb_eval_check_done(struct sb_eval_check *c)
{
	for (size_t i = 0; i < c->n_violations; i++) {
		struct sb_eval_violation *v = &c->violations[i];

		free(v->message);
		free(v->rule);
		free(v->narrower);
		free(v->warning);
		free(v->hint);
		free(v->learn_name);
	}
	free(c->violations);
	sb_strv_free(c->also_nodes);
	sb_strv_free(c->free_names);
	*c = (struct sb_eval_check){0};
}
