/* SPDX-License-Identifier: MIT */
/* The eval layer's static check and rewrite (src/eval/eval-ast.c,
 * eval-rewrite.c, eval-report.c) in an embedded CPython, as eval-run.c's
 * check_source() runs them: a source parsed with the layer's flags, checked
 * against a profile's eval-* rules, refused with a report or rewritten and
 * compiled. Nothing evaluated runs.
 *
 * Input: a mode byte (eval, exec, single; the profile: byte / 3), the eval-*
 * rule lines, NUL, the source.
 *
 * Oracle, for a source the check accepts, from a walk of CPython's own
 * (ast.walk, written again here, not the layer's walker): every node is in the
 * minimal core or allowed by eval-syntax; every attribute is allowed (never a
 * frame attribute, never __globals__/__builtins__; a dunder by eval-magic, the
 * others by eval-attribute, format/format_map only by their exact grant);
 * every dunder identifier by eval-magic; every import by eval-import; every
 * call of a name the source does not bind by eval-call; no name or text
 * mentions the reserved prefix. Then the rewrite: no attribute read, no
 * allocating operator, no loop, function, lambda, except clause or format
 * spec is left without its helper, and the rewritten tree compiles exactly
 * when the original does. A refused source gets a report. */
#include <string.h>

#include "eval-ast.h"
#include "eval-grammar.h"
#include "eval-profile.h"
#include "eval-report.h"
#include "eval-rewrite.h"
#include "eval-runtime.h"
#include "fuzz.h"
#include "fuzz-python.h"
#include "guard-observer.h"
#include "report-denials.h"
#include "util.h"

/* The guard and the run report are not linked: learning is off, and a
 * refusal is not reported anywhere. */
const struct sb_guard_observer *sb_guard_observer;
enum sb_refusal_answer sb_guard_refused(const struct sb_refusal *r _unused_)
{
	return SB_REFUSE;
}
void sb_report_denial(enum sb_report_denial_kind kind _unused_, const char *subject _unused_,
		      const char *message _unused_)
{
}

/* What a tree uses, from CPython's ast.walk: the walker of the layer is what
 * is under test. */
static const char reference_py[] =
    "import ast\n"
    "BINDING = {'FunctionDef': ('name',), 'AsyncFunctionDef': ('name',),\n"
    "           'ClassDef': ('name',), 'arg': ('arg',), 'ExceptHandler': ('name',),\n"
    "           'MatchAs': ('name',), 'MatchStar': ('name',), 'MatchMapping': ('rest',)}\n"
    "IDENT = dict(BINDING, Global=('names',), Nonlocal=('names',), keyword=('arg',),\n"
    "             alias=('asname',), MatchClass=('kwd_attrs',), Name=('id',))\n"
    "def uses(tree):\n"
    "    nodes, attrs, idents, imports, calls, bound = set(), set(), set(), [], set(), set()\n"
    "    for n in ast.walk(tree):\n"
    "        k = type(n).__name__\n"
    "        nodes.add(k)\n"
    "        for f in IDENT.get(k, ()):\n"
    "            v = getattr(n, f, None)\n"
    "            for s in (v if isinstance(v, list) else [v]):\n"
    "                if isinstance(s, str):\n"
    "                    idents.add(s)\n"
    "        for f in BINDING.get(k, ()):\n"
    "            if isinstance(getattr(n, f, None), str):\n"
    "                bound.add(getattr(n, f))\n"
    "        if k == 'Name' and not isinstance(n.ctx, ast.Load):\n"
    "            bound.add(n.id)\n"
    "        elif k == 'Attribute':\n"
    "            attrs.add(n.attr)\n"
    "        elif k == 'Import':\n"
    "            for a in n.names:\n"
    "                imports.append(a.name)\n"
    "                bound.add(a.asname or a.name.split('.')[0])\n"
    "        elif k == 'ImportFrom':\n"
    "            imports.append(n.module or '')\n"
    "            bound.update(a.asname or a.name for a in n.names)\n"
    "        elif k == 'Call' and isinstance(n.func, ast.Name):\n"
    "            calls.add(n.func.id)\n"
    "        elif k in ('FunctionDef', 'AsyncFunctionDef', 'ClassDef'):\n"
    "            calls.update(d.id for d in n.decorator_list if isinstance(d, ast.Name))\n"
    "    return (sorted(nodes), sorted(attrs), sorted(idents), imports, sorted(calls - bound))\n"
    "HELPER = '__sb_'\n"
    "ALLOCATING = (ast.Add, ast.Mult, ast.Pow, ast.LShift, ast.Mod)\n"
    "def helper_call(n, name=None):\n"
    "    return (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and\n"
    "            n.func.id.startswith(HELPER) and (name is None or n.func.id == name))\n"
    "def helper_stmt(n, name):\n"
    "    return isinstance(n, ast.Expr) and helper_call(n.value, name)\n"
    "def unguarded(tree):\n"
    "    '''What the rewrite left without its helper: None, or a description.'''\n"
    "    for n in ast.walk(tree):\n"
    "        k = type(n).__name__\n"
    "        if k == 'Attribute' and isinstance(n.ctx, ast.Load):\n"
    "            return 'an attribute read .' + n.attr\n"
    "        if k == 'BinOp' and isinstance(n.op, ALLOCATING):\n"
    "            return 'an operator ' + type(n.op).__name__\n"
    "        if k == 'AugAssign' and isinstance(n.op, ALLOCATING) and\\\n"
    "                not helper_call(n.value, '__sb_aug__'):\n"
    "            return 'an augmented ' + type(n.op).__name__\n"
    "        if k in ('For', 'comprehension') and not helper_call(n.iter, '__sb_iter__'):\n"
    "            return 'the iterable of a ' + k\n"
    "        if k in ('While', 'AsyncFor') and not helper_stmt(n.body[0], '__sb_tick__'):\n"
    "            return 'the body of a ' + k\n"
    "        if k in ('FunctionDef', 'AsyncFunctionDef') and\\\n"
    "                not any(helper_stmt(s, '__sb_enter__') for s in n.body[:2]):\n"
    "            return 'the entry of ' + n.name\n"
    "        if k == 'Lambda' and not (isinstance(n.body, ast.BoolOp) and\n"
    "                                  helper_call(n.body.values[0], '__sb_enter__')):\n"
    "            return 'the entry of a lambda'\n"
    "        if k == 'ExceptHandler' and n.type is not None and\\\n"
    "                not helper_call(n.type, '__sb_catch__'):\n"
    "            return 'an except clause'\n"
    "        if k == 'FormattedValue' and n.format_spec is not None:\n"
    "            return 'a format spec'\n"
    "    return None\n"
    "def compiles(tree, mode):\n"
    "    try:\n"
    "        compile(tree, '<eval>', mode, 0, True)\n"
    "        return None\n"
    "    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError) as e:\n"
    "        return type(e).__name__ + ': ' + str(e)\n";

static PyObject *fn_uses, *fn_unguarded, *fn_compiles;

int LLVMFuzzerInitialize(int *argc _unused_, char ***argv _unused_)
{
	_cleanup_free_ char *err = NULL;
	PyObject *globals;

	fuzz_python_start();
	if (sb_eval_runtime_activate(NULL, &err) < 0) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
	globals = PyDict_New();
	if (!globals || PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) < 0)
		abort();
	if (!PyRun_String(reference_py, Py_file_input, globals, globals)) {
		PyErr_Print();
		abort();
	}
	fn_uses = PyDict_GetItemString(globals, "uses");
	fn_unguarded = PyDict_GetItemString(globals, "unguarded");
	fn_compiles = PyDict_GetItemString(globals, "compiles");
	if (!fn_uses || !fn_unguarded || !fn_compiles)
		abort();
	return 0;
}

/* The eval-* lines of text into cfg; other lines are ignored. */
static void load_rules(const char *text, size_t len, struct sb_eval_config *cfg,
		       struct sb_diags *diags)
{
	_cleanup_free_ char *copy = strndup(text, len);
	char *save = NULL;
	unsigned line = 0;

	if (!copy)
		return;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(l, '=');

		line++;
		if (!eq || !startswith(l, "eval-"))
			continue;
		*eq = '\0';
		if (sb_eval_config_add(cfg, l, eq + 1, (struct sb_origin){"fuzz", line}, diags) < 0)
			return;
	}
}

static const char *utf8(PyObject *s)
{
	const char *t = PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;

	FUZZ_ASSERT(t, "not a str");
	return t;
}

static void check_attribute(struct sb_eval_rules *r, PyObject *name)
{
	const char *s = utf8(name);

	FUZZ_ASSERT(!sb_eval_is_frame_attribute(s) && !sb_eval_is_namespace_attribute(s),
		    "attribute '%s' accepted", s);
	if (sb_eval_is_dunder(s)) {
		FUZZ_ASSERT(sb_eval_names_allows(&r->magic, name),
			    "attribute '%s' accepted without eval-magic", s);
		return;
	}
	FUZZ_ASSERT(sb_eval_names_allows(&r->attribute, name),
		    "attribute '%s' accepted without eval-attribute", s);
	if (streq(s, "format"))
		FUZZ_ASSERT(r->format_granted, "'format' accepted without its exact grant");
	if (streq(s, "format_map"))
		FUZZ_ASSERT(r->format_map_granted, "'format_map' accepted without its exact grant");
}

/* An accepted source: what the reference sees in its tree is allowed. */
static void check_accepted(struct sb_eval_rules *r, PyObject *tree)
{
	PyObject *u = PyObject_CallOneArg(fn_uses, tree);
	PyObject *nodes, *attrs, *idents, *imports, *calls;

	if (!u) {
		/* A tree too deep for the reference's own walk. */
		FUZZ_ASSERT(PyErr_ExceptionMatches(PyExc_RecursionError) ||
				PyErr_ExceptionMatches(PyExc_MemoryError),
			    "the reference failed");
		PyErr_Clear();
		return;
	}
	FUZZ_ASSERT(PyArg_ParseTuple(u, "OOOOO", &nodes, &attrs, &idents, &imports, &calls),
		    "uses()");
	for (Py_ssize_t k = 0; k < PyList_GET_SIZE(nodes); k++) {
		const char *s = utf8(PyList_GET_ITEM(nodes, k));
		int i = sb_eval_node_find(s);

		FUZZ_ASSERT(i >= 0, "node %s is in no table, and accepted", s);
		FUZZ_ASSERT(sb_eval_node_implicit((size_t)i) || r->syntax[i],
			    "node %s accepted without eval-syntax", s);
	}
	for (Py_ssize_t k = 0; k < PyList_GET_SIZE(attrs); k++)
		check_attribute(r, PyList_GET_ITEM(attrs, k));
	for (Py_ssize_t k = 0; k < PyList_GET_SIZE(idents); k++) {
		PyObject *name = PyList_GET_ITEM(idents, k);
		const char *s = utf8(name);

		FUZZ_ASSERT(!strstr(s, SB_EVAL_RESERVED_PREFIX), "the name '%s' accepted", s);
		if (sb_eval_is_dunder(s))
			FUZZ_ASSERT(!sb_eval_is_namespace_attribute(s) &&
					sb_eval_names_allows(&r->magic, name),
				    "the name '%s' accepted without eval-magic", s);
	}
	for (Py_ssize_t k = 0; k < PyList_GET_SIZE(imports); k++)
		FUZZ_ASSERT(sb_eval_names_allows(&r->import, PyList_GET_ITEM(imports, k)),
			    "import '%s' accepted without eval-import",
			    utf8(PyList_GET_ITEM(imports, k)));
	for (Py_ssize_t k = 0; k < PyList_GET_SIZE(calls); k++)
		FUZZ_ASSERT(sb_eval_names_allows(&r->call, PyList_GET_ITEM(calls, k)),
			    "call to '%s' accepted without eval-call",
			    utf8(PyList_GET_ITEM(calls, k)));
	Py_DECREF(u);
}

/* The rewrite of an accepted tree leaves nothing unguarded and compiles as
 * the source does. */
static void check_rewrite(PyObject *tree, PyObject *original, const char *mode)
{
	PyObject *left, *before, *after;

	if (sb_eval_rewrite(tree) < 0) {
		FUZZ_ASSERT(PyErr_ExceptionMatches(PyExc_RecursionError) ||
				PyErr_ExceptionMatches(PyExc_MemoryError),
			    "the rewrite failed");
		PyErr_Clear();
		return;
	}
	left = PyObject_CallOneArg(fn_unguarded, tree);
	if (!left) {
		PyErr_Clear(); /* too deep for the reference */
		return;
	}
	FUZZ_ASSERT(left == Py_None, "the rewrite left %s", utf8(left));
	Py_DECREF(left);
	before = PyObject_CallFunction(fn_compiles, "Os", original, mode);
	after = PyObject_CallFunction(fn_compiles, "Os", tree, mode);
	FUZZ_ASSERT(before && after, "compiles()");
	/* A tree too deep for the compiler either way says nothing. */
	if (!startswith(before == Py_None ? "" : utf8(before), "RecursionError") &&
	    !startswith(after == Py_None ? "" : utf8(after), "RecursionError"))
		FUZZ_ASSERT((before == Py_None) == (after == Py_None),
			    "the source compiles: %s; rewritten: %s",
			    before == Py_None ? "yes" : utf8(before),
			    after == Py_None ? "yes" : utf8(after));
	Py_DECREF(before);
	Py_DECREF(after);
}

/* The rules' Python objects: sb_eval_rules_release() leaves them to the
 * interpreter's end, which is when python-sb calls it. */
static void release_rules(void)
{
	for (size_t i = 0; i < sb_eval_rules_count(); i++) {
		struct sb_eval_rules *r = sb_eval_rules_at(i);

		Py_CLEAR(r->handle);
	}
	sb_eval_rules_release();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int starts[] = {Py_eval_input, Py_file_input, Py_single_input};
	static const char *const modes[] = {"eval", "exec", "single"};
	struct sb_eval_config cfg = {0};
	struct sb_diags diags = {0};
	const uint8_t *sep;
	_cleanup_free_ char *source = NULL;
	struct sb_eval_rules *r;
	struct sb_eval_check c;
	PyObject *tree = NULL, *original = NULL, *filename;
	PyCompilerFlags cf = {.cf_flags = PyCF_ONLY_AST | PyCF_SOURCE_IS_UTF8 | PyCF_IGNORE_COOKIE,
			      .cf_feature_version = PY_MINOR_VERSION};
	unsigned mode;

	if (size < 1 || size > 64 * 1024)
		return 0;
	mode = data[0] % 3;
	sep = memchr(data + 1, '\0', size - 1);
	if (!sep)
		return 0;
	load_rules((const char *)data + 1, (size_t)(sep - data - 1), &cfg, &diags);
	if (diags.n_errors > 0) {
		/* The launcher stops at the rules. */
		sb_diags_done(&diags);
		sb_eval_config_done(&cfg);
		return 0;
	}
	sb_diags_done(&diags);
	/* The source as eval-run.c gets it: a str's UTF-8, no NUL. */
	source = strndup((const char *)sep + 1, size - (size_t)(sep + 1 - data));
	if (!source || strlen(source) != size - (size_t)(sep + 1 - data) ||
	    sb_eval_rules_prepare(&cfg) < 0) {
		sb_eval_config_done(&cfg);
		return 0;
	}
	sb_eval_config_done(&cfg);
	r = sb_eval_rules_at((data[0] / 3) % sb_eval_rules_count());
	FUZZ_ASSERT(sb_eval_rules_ready(r) == 0, "the rules' Python half");

	filename = PyUnicode_FromString(r->tag);
	tree = filename ? Py_CompileStringObject(source, filename, starts[mode], &cf, -1) : NULL;
	if (tree)
		original = Py_CompileStringObject(source, filename, starts[mode], &cf, -1);
	Py_XDECREF(filename);
	if (!tree || !original) {
		PyErr_Clear(); /* not Python, or the layer refuses it unparsed */
		goto out;
	}
	if (sb_eval_ast_check(tree, source, r, true, &c) < 0) {
		FUZZ_ASSERT(PyErr_ExceptionMatches(PyExc_RecursionError) ||
				PyErr_ExceptionMatches(PyExc_MemoryError),
			    "the check failed");
		PyErr_Clear();
		goto out;
	}
	if (c.n_violations > 0) {
		PyObject *report = sb_eval_report_make(&c, r, source);

		FUZZ_ASSERT(report, "a refusal without a report");
		Py_DECREF(report);
		for (size_t i = 0; i < c.n_violations; i++)
			FUZZ_ASSERT(c.violations[i].message && c.violations[i].line >= 1,
				    "a violation without a message or a line");
	} else {
		FUZZ_ASSERT(!strstr(source, SB_EVAL_RESERVED_PREFIX),
			    "a source that mentions the prefix is accepted");
		FUZZ_ASSERT(c.nodes <= r->max_nodes && c.depth <= r->max_depth,
			    "over a static budget and accepted");
		check_accepted(r, tree);
		check_rewrite(tree, original, modes[mode]);
	}
	sb_eval_check_done(&c);
out:
	Py_XDECREF(tree);
	Py_XDECREF(original);
	PyErr_Clear();
	release_rules();
	return 0;
}
