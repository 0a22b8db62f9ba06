/* SPDX-License-Identifier: MIT */
#include "eval-run.h"

#include "eval-alloc.h"
#include "eval-ast.h"
#include "eval-code.h"
#include "eval-errors.h"
#include "eval-grammar.h"
#include "eval-learn.h"
#include "eval-namespace.h"
#include "eval-report.h"
#include "eval-rewrite.h"
#include "eval-runtime.h"
#include "eval-state.h"
#include "eval-thread.h"
#include "util.h"

/* A source longer than this many bytes per allowed node is refused before it
 * is parsed: its tree alone would cost more memory than the check saves. */
#define SB_EVAL_BYTES_PER_NODE 16
#define SB_EVAL_SOURCE_MIN     65536

static const char *const mode_names[SB_EVAL_MODE__N] = {"eval", "exec", "single"};
static const int mode_starts[SB_EVAL_MODE__N] = {Py_eval_input, Py_file_input, Py_single_input};

/* ---- arguments ------------------------------------------------------------ */

/* Positional arguments, then keywords by name (a NULL name: positional
 * only). out[] gets borrowed references, NULL when absent. */
static int parse_args(const char *fn, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
		      const char *const *names, size_t n, size_t required, PyObject **out)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (Py_ssize_t)i < nargs ? args[i] : NULL;
	if ((size_t)nargs > n) {
		PyErr_Format(PyExc_TypeError, "%s() takes at most %zu arguments (%zd given)", fn, n,
			     nargs);
		return -1;
	}
	for (Py_ssize_t k = 0; kwnames && k < PyTuple_GET_SIZE(kwnames); k++) {
		PyObject *key = PyTuple_GET_ITEM(kwnames, k);
		size_t i;

		for (i = 0; i < n; i++)
			if (names[i] && PyUnicode_CompareWithASCIIString(key, names[i]) == 0)
				break;
		if (i == n || out[i]) {
			PyErr_Format(PyExc_TypeError,
				     "%s() got an unexpected keyword argument '%U'", fn, key);
			return -1;
		}
		out[i] = args[nargs + k];
	}
	for (size_t i = 0; i < required; i++)
		if (!out[i]) {
			PyErr_Format(PyExc_TypeError, "%s() missing required argument %zu", fn,
				     i + 1);
			return -1;
		}
	return 0;
}

/* The source as a str (new reference): str, or bytes-like as UTF-8. */
static PyObject *source_text(PyObject *source, const char *fn)
{
	if (PyUnicode_Check(source))
		return Py_NewRef(source);
	if (PyBytes_Check(source))
		return PyUnicode_DecodeUTF8(PyBytes_AS_STRING(source), PyBytes_GET_SIZE(source),
					    "strict");
	if (PyByteArray_Check(source))
		return PyUnicode_DecodeUTF8(PyByteArray_AS_STRING(source),
					    PyByteArray_GET_SIZE(source), "strict");
	PyErr_Format(PyExc_TypeError, "%s() arg 1 must be a string, bytes or code object", fn);
	return NULL;
}

/* ---- the verdict ------------------------------------------------------------ */

/* A report with a single violation, for a source refused before its tree
 * could be walked. */
static PyObject *refusal_without_tree(struct sb_eval_rules *r, const char *source,
				      enum sb_eval_scalar_key key, const char *message)
{
	struct sb_eval_violation v = {.line = 1, .col = 0, .end_line = -1, .end_col = -1};
	struct sb_eval_check c = {.violations = &v, .n_violations = 1};
	char *rule = NULL;
	PyObject *report;

	if (asprintf(&rule, "%s%s=<more>", sb_eval_scalar_key_name(key), r->key_suffix) < 0)
		rule = NULL;
	v.message = (char *)message;
	v.hint = rule;
	report = sb_eval_report_make(&c, r, source);
	free(rule);
	return report;
}

static void record_violations(struct sb_eval_rules *r, const struct sb_eval_check *c)
{
	for (size_t i = 0; i < c->n_violations; i++)
		if (c->violations[i].learn_kind >= 0 && c->violations[i].learn_name)
			sb_eval_record(r->name, c->violations[i].learn_kind,
				       c->violations[i].learn_name);
	for (char **n = c->also_nodes; n && *n; n++)
		sb_eval_record(r->name, SB_EVAL_LEARN_NODE, *n);
}

/* Parses text with the layer's own parse: the "compile" audit event it
 * raises is the layer's. */
static PyObject *parse(struct sb_eval_rules *r, const char *text, enum sb_eval_mode mode, int flags)
{
	/* The text is a str's UTF-8: a coding cookie in it says nothing, as
	 * for CPython's eval of a str. */
	PyCompilerFlags cf = {.cf_flags =
				  flags | PyCF_ONLY_AST | PyCF_SOURCE_IS_UTF8 | PyCF_IGNORE_COOKIE,
			      .cf_feature_version = PY_MINOR_VERSION};
	PyObject *filename = PyUnicode_FromString(r->tag), *tree;

	if (!filename)
		return NULL;
	sb_eval_own_events++;
	tree = Py_CompileStringObject(text, filename, mode_starts[mode], &cf, -1);
	sb_eval_own_events--;
	Py_DECREF(filename);
	return tree;
}

static PyObject *compile_tree(struct sb_eval_rules *r, PyObject *tree, enum sb_eval_mode mode,
			      int flags)
{
	PyObject *code;

	sb_eval_own_events++;
	code = PyObject_CallFunction(sb_eval_original(SB_EVAL_BUILTIN_COMPILE), "Ossii", tree,
				     r->tag, mode_names[mode], flags & ~PyCF_ONLY_AST, 1);
	sb_eval_own_events--;
	return code;
}

struct checked {
	PyObject *tree;	   /* the parsed tree, checked */
	char **free_names; /* asked for: read and not bound (learning) */
	PyObject *code;	   /* rewritten and compiled; NULL when not asked for */
	unsigned flags;
	PyObject *report; /* EvalSyntaxRejected's report when refused */
};

/* Checks text under r: *out gets the tree, and the code when compile_it.
 * learning records what is missing instead of refusing it. 0, or -1 with an
 * exception (a SyntaxError of the source among them). */
static int check_source(struct sb_eval_rules *r, PyObject *text_obj, enum sb_eval_mode mode,
			int flags, bool learning, bool compile_it, struct checked *out)
{
	/* Only learning asks which of the caller's variables a bare eval()
	 * reads (compile_it is then false). */
	bool want_free = learning && !compile_it;
	Py_ssize_t size;
	const char *text = PyUnicode_AsUTF8AndSize(text_obj, &size);
	size_t limit = r->max_nodes * SB_EVAL_BYTES_PER_NODE;
	struct sb_eval_check c;

	*out = (struct checked){0};
	if (!text)
		return -1;
	if (strlen(text) != (size_t)size) {
		PyErr_SetString(PyExc_ValueError, "source code string cannot contain null bytes");
		return -1;
	}
	if (limit < SB_EVAL_SOURCE_MIN)
		limit = SB_EVAL_SOURCE_MIN;
	if ((size_t)size > limit && !learning) {
		char message[160];

		snprintf(message, sizeof(message),
			 "the source is %zd bytes, more than eval-max-nodes allows to parse", size);
		out->report = refusal_without_tree(r, "", SB_EVAL_MAX_NODES, message);
		return out->report ? 0 : -1;
	}
	out->tree = parse(r, text, mode, flags);
	if (!out->tree) {
		/* A tree too deep to be built is refused like one too deep to
		 * walk, not with a RecursionError. */
		if (!PyErr_ExceptionMatches(PyExc_RecursionError) &&
		    !PyErr_ExceptionMatches(PyExc_MemoryError))
			return -1;
		PyErr_Clear();
		out->report =
		    refusal_without_tree(r, text, SB_EVAL_MAX_DEPTH,
					 "the source nests deeper than the eval guard walks");
		return out->report ? 0 : -1;
	}
	if (sb_eval_ast_check(out->tree, text, r, want_free, &c) < 0)
		goto fail;
	if (want_free)
		out->free_names = TAKE_PTR(c.free_names);
	out->flags = c.flags;
	if (learning)
		record_violations(r, &c);
	else if (c.n_violations > 0) {
		out->report = sb_eval_report_make(&c, r, text);
		sb_eval_check_done(&c);
		return out->report ? 0 : -1;
	}
	sb_eval_check_done(&c);
	if (!compile_it)
		return 0;
	if (sb_eval_rewrite(out->tree) < 0)
		goto fail;
	out->code = compile_tree(r, out->tree, mode, flags);
	if (!out->code || sb_eval_code_register(out->code, r, out->flags) < 0)
		goto fail;
	return 0;
fail:
	Py_CLEAR(out->tree);
	Py_CLEAR(out->code);
	return -1;
}

static void checked_done(struct checked *c)
{
	sb_strv_free(c->free_names);
	c->free_names = NULL;
	Py_CLEAR(c->tree);
	Py_CLEAR(c->code);
	Py_CLEAR(c->report);
}

/* The checked code of a source (new reference) and its flags: from the
 * cache, or checked now and cached. NULL with an exception (EvalSyntaxRejected
 * for a refused source). */
static PyObject *verdict_code(struct sb_eval_rules *r, PyObject *text, enum sb_eval_mode mode,
			      int flags, bool learning, unsigned *ret_flags)
{
	PyObject *key = flags ? Py_BuildValue("(Oi)", text, flags) : Py_NewRef(text), *code = NULL;
	struct sb_eval_verdict *v;
	struct checked c;

	if (!key)
		return NULL;
	/* Learning records on every run: no cache. */
	v = learning ? NULL : sb_eval_verdict_lookup(r, mode, key);
	if (v) {
		Py_INCREF(v);
	} else if (check_source(r, text, mode, flags, learning, true, &c) == 0) {
		v = sb_eval_verdict_store(r, mode, learning ? NULL : key, c.code, c.flags,
					  c.report);
		checked_done(&c);
	}
	Py_DECREF(key);
	if (!v)
		return NULL;
	if (v->rejection) {
		sb_eval_raise_rejection(v->rejection);
	} else {
		*ret_flags = v->flags;
		code = Py_NewRef(v->code);
	}
	Py_DECREF(v);
	return code;
}

/* ---- running ------------------------------------------------------------------ */

static PyObject *run_here(struct sb_eval_state *s, PyObject *code, PyObject *globals,
			  PyObject *locals)
{
	PyObject *result;

	sb_eval_state_push(s);
	result = PyEval_EvalCode(code, globals, locals);
	sb_eval_state_pop(s);
	sb_eval_alloc_forget(s);
	/* Code that caught an exception after its budget ran out (a
	 * MemoryError of the allocation budget) still ends interrupted. */
	if (atomic_load(&s->interrupted)) {
		Py_CLEAR(result);
		PyErr_Clear();
		sb_eval_state_raise(s);
	}
	return result;
}

struct code_work {
	struct sb_eval_work base;
	struct sb_eval_state *state;
	PyObject *code, *globals, *locals;
};

static PyObject *code_work_run(struct sb_eval_work *w)
{
	struct code_work *cw = (struct code_work *)w;

	return run_here(cw->state, cw->code, cw->globals, cw->locals);
}

static void code_work_release(struct sb_eval_work *w)
{
	struct code_work *cw = (struct code_work *)w;

	Py_XDECREF((PyObject *)cw->state);
	Py_XDECREF(cw->code);
	Py_XDECREF(cw->globals);
	Py_XDECREF(cw->locals);
	free(cw);
}

/* Code that calls something runs on an evaluation thread, unless this
 * thread already runs an evaluation (it is then one, or its caller waits). */
static PyObject *run_code(struct sb_eval_rules *r, PyObject *code, unsigned flags,
			  struct sb_eval_ns *ns, bool learning)
{
	struct sb_eval_state *s = sb_eval_state_new(r, learning);
	struct code_work *cw;
	PyObject *result;

	if (!s)
		return NULL;
	if (!(flags & SB_EVAL_CODE_CALLS) || sb_eval_current) {
		result = run_here(s, code, ns->globals, ns->locals);
		Py_DECREF(s);
		return result;
	}
	cw = calloc(1, sizeof(*cw));
	if (!cw) {
		Py_DECREF(s);
		return PyErr_NoMemory();
	}
	*cw = (struct code_work){{code_work_run, code_work_release},
				 s,
				 Py_NewRef(code),
				 Py_NewRef(ns->globals),
				 Py_NewRef(ns->locals)};
	result = sb_eval_thread_run(s, &cw->base);
	return result;
}

/* ---- eval, exec, compile ---------------------------------------------------- */

static PyObject *refuse_foreign_code(struct sb_eval_rules *r)
{
	sb_eval_deny(r, "a code object", -1,
		     "exec() and eval() run only code objects the guarded compile() made; pass "
		     "the source instead");
	return NULL;
}

/* compile() as CPython's own: only its "compile" event is the layer's. */
static PyObject *compile_unguarded(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *code;

	sb_eval_own_events++;
	code = PyObject_Vectorcall(sb_eval_original(SB_EVAL_BUILTIN_COMPILE), args, (size_t)nargs,
				   kwnames);
	sb_eval_own_events--;
	return code;
}

/* eval/exec as CPython runs them (eval-namespace=caller, and learning with
 * no eval-* key): the caller's namespace, the builtins injected, no rewrite.
 * The layer compiles the source itself; what the code does then is judged
 * by the guard like anything the program does. */
static PyObject *run_unguarded(enum sb_eval_builtin which, PyObject *const *args, Py_ssize_t nargs,
			       PyObject *kwnames)
{
	static const char *const names[] = {NULL, "globals", "locals", "closure"};
	bool exec = which == SB_EVAL_BUILTIN_EXEC;
	PyObject *a[4] = {0}, *code, *globals, *locals, *result;
	int e;

	if (parse_args(exec ? "exec" : "eval", args, nargs, kwnames, names, exec ? 4 : 3, 1, a) < 0)
		return NULL;
	if (a[3] && a[3] != Py_None) {
		PyErr_SetString(PyExc_TypeError,
				"exec(closure=...) is not supported by the eval guard");
		return NULL;
	}
	if (PyCode_Check(a[0])) {
		/* The event CPython raises: the API guard judges a guarded
		 * module's body by what it is, whoever runs it. */
		sb_eval_own_events++;
		e = PySys_Audit("exec", "O", a[0]);
		sb_eval_own_events--;
		if (e < 0)
			return NULL;
		code = Py_NewRef(a[0]);
	} else {
		PyObject *text = source_text(a[0], exec ? "exec" : "eval"), *filename;
		PyCompilerFlags cf = {.cf_flags = PyCF_SOURCE_IS_UTF8 | PyCF_IGNORE_COOKIE};
		const char *s;

		if (!text)
			return NULL;
		s = PyUnicode_AsUTF8(text);
		while (s && !exec && (*s == ' ' || *s == '\t'))
			s++;
		PyEval_MergeCompilerFlags(&cf);
		filename = PyUnicode_FromString("<string>");
		sb_eval_own_events++;
		code = s && filename
			   ? Py_CompileStringObject(s, filename,
						    exec ? Py_file_input : Py_eval_input, &cf, -1)
			   : NULL;
		sb_eval_own_events--;
		Py_XDECREF(filename);
		Py_DECREF(text);
		if (!code)
			return NULL;
	}
	globals = a[1] && a[1] != Py_None ? a[1] : PyEval_GetGlobals();
	locals = a[2] && a[2] != Py_None   ? a[2]
		 : a[1] && a[1] != Py_None ? globals
					   : PyEval_GetLocals();
	if (!globals || !PyDict_Check(globals) || !locals) {
		Py_DECREF(code);
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError, "globals must be a dict");
		return NULL;
	}
	if (!PyDict_GetItemString(globals, "__builtins__") &&
	    PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) < 0) {
		Py_DECREF(code);
		return NULL;
	}
	result = PyEval_EvalCode(code, globals, locals);
	Py_DECREF(code);
	if (result && exec)
		Py_SETREF(result, Py_NewRef(Py_None));
	return result;
}

static PyObject *run_eval_exec(struct sb_eval_rules *r, enum sb_eval_builtin which,
			       PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	static const char *const names[] = {NULL, "globals", "locals", "closure"};
	bool exec = which == SB_EVAL_BUILTIN_EXEC, learning = sb_eval_learning();
	const char *fn = exec ? "exec" : "eval";
	PyObject *a[4] = {0}, *code = NULL, *text = NULL, *result = NULL;
	struct sb_eval_ns ns;
	unsigned flags = 0;

	if (parse_args(fn, args, nargs, kwnames, names, exec ? 4 : 3, 1, a) < 0)
		return NULL;
	if (a[3] && a[3] != Py_None) {
		sb_eval_deny(r, "exec(closure=...)", -1, "evaluated code gets no closure cells");
		return NULL;
	}
	if (PyCode_Check(a[0])) {
		const struct sb_eval_code_info *info = sb_eval_code_find(a[0]);

		if (!info)
			return refuse_foreign_code(r);
		r = info->rules;
		flags = info->flags;
		code = Py_NewRef(a[0]);
	} else {
		PyCompilerFlags cf = {.cf_flags = 0};

		text = source_text(a[0], fn);
		if (!text)
			return NULL;
		if (!exec) {
			/* eval() ignores leading blanks, as CPython's does. */
			Py_ssize_t i = 0, n = PyUnicode_GET_LENGTH(text);
			PyObject *stripped;

			while (i < n && (PyUnicode_READ_CHAR(text, i) == ' ' ||
					 PyUnicode_READ_CHAR(text, i) == '\t'))
				i++;
			stripped = i ? PyUnicode_Substring(text, i, n) : Py_NewRef(text);
			Py_SETREF(text, stripped);
			if (!text)
				return NULL;
		}
		/* The caller's `from __future__` features, as eval and exec of a
		 * string inherit them. */
		PyEval_MergeCompilerFlags(&cf);
		if (r->ns == SB_EVAL_NAMESPACE_CALLER && !learning) {
			struct checked c;
			int e = check_source(r, text, exec ? SB_EVAL_MODE_EXEC : SB_EVAL_MODE_EVAL,
					     cf.cf_flags & PyCF_MASK, false, false, &c);

			Py_DECREF(text);
			if (e == 0 && c.report)
				sb_eval_raise_rejection(c.report);
			else if (e == 0)
				result = run_unguarded(which, args, nargs, kwnames);
			checked_done(&c);
			return result;
		}
		code = verdict_code(r, text, exec ? SB_EVAL_MODE_EXEC : SB_EVAL_MODE_EVAL,
				    cf.cf_flags & PyCF_MASK, learning, &flags);
		Py_DECREF(text);
		if (!code)
			return NULL;
	}
	if (sb_eval_namespace_open(r, a[1], a[2], NULL, false, &ns) == 0) {
		result = run_code(r, code, flags, &ns, learning);
		sb_eval_namespace_close(&ns);
	}
	Py_DECREF(code);
	if (result && exec) {
		Py_DECREF(result);
		Py_RETURN_NONE;
	}
	return result;
}

static int mode_of(PyObject *mode)
{
	for (size_t i = 0; mode && PyUnicode_Check(mode) && i < SB_EVAL_MODE__N; i++)
		if (PyUnicode_CompareWithASCIIString(mode, mode_names[i]) == 0)
			return (int)i;
	PyErr_SetString(PyExc_ValueError,
			"compile() mode must be 'exec', 'eval' or 'single' under the eval guard");
	return -1;
}

/* An AST handed to compile(): checked as the source it stands for. */
static PyObject *ast_source(PyObject *tree)
{
	PyObject *ast = sb_eval_loaded_module("ast"), *text;

	if (!ast) {
		PyErr_SetString(
		    PyExc_TypeError,
		    "compile() of an AST object needs the ast module under the eval guard");
		return NULL;
	}
	text = PyObject_CallMethod(ast, "unparse", "O", tree);
	Py_DECREF(ast);
	return text;
}

static PyObject *run_compile(struct sb_eval_rules *r, PyObject *const *args, Py_ssize_t nargs,
			     PyObject *kwnames)
{
	static const char *const names[] = {
	    "source", "filename", "mode", "flags", "dont_inherit", "optimize", "_feature_version"};
	PyObject *a[7], *text, *code, *base;
	PyCompilerFlags cf = {.cf_flags = 0};
	bool learning = sb_eval_learning();
	unsigned flags = 0;
	int mode, f = 0;

	if (parse_args("compile", args, nargs, kwnames, names, 7, 3, a) < 0)
		return NULL;
	if ((mode = mode_of(a[2])) < 0)
		return NULL;
	if (a[3]) {
		f = PyLong_AsLong(a[3]);
		if (f == -1 && PyErr_Occurred())
			return NULL;
	}
	if (!a[4] || PyObject_IsTrue(a[4]) == 0)
		PyEval_MergeCompilerFlags(&cf);
	f |= cf.cf_flags & PyCF_MASK;
	base = sb_eval_ast_base();
	if (!base)
		return NULL;
	text = PyObject_TypeCheck(a[0], (PyTypeObject *)base) ? ast_source(a[0])
							      : source_text(a[0], "compile");
	if (!text)
		return NULL;
	if (f & PyCF_ONLY_AST) {
		/* An AST only: checked, and returned as parsed. */
		struct checked c;
		PyObject *tree = NULL;

		if (check_source(r, text, (enum sb_eval_mode)mode, f & ~PyCF_ONLY_AST, learning,
				 false, &c) == 0) {
			if (c.report)
				sb_eval_raise_rejection(c.report);
			else
				tree = Py_NewRef(c.tree);
		}
		checked_done(&c);
		Py_DECREF(text);
		return tree;
	}
	code = verdict_code(r, text, (enum sb_eval_mode)mode, f, learning, &flags);
	Py_DECREF(text);
	return code;
}

PyObject *sb_eval_run_builtin(struct sb_eval_rules *r, enum sb_eval_builtin which,
			      PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	if (sb_eval_rules_ready(r) < 0)
		return NULL;
	if (which == SB_EVAL_BUILTIN_COMPILE)
		return run_compile(r, args, nargs, kwnames);
	return run_eval_exec(r, which, args, nargs, kwnames);
}

PyObject *sb_eval_run_guarded(struct sb_eval_rules *r, PyObject *source, PyObject *names,
			      enum sb_eval_mode mode)
{
	bool learning = sb_eval_learning();
	struct sb_eval_ns ns;
	PyObject *code, *result = NULL;
	unsigned flags = 0;

	if (sb_eval_rules_ready(r) < 0)
		return NULL;
	if (!PyUnicode_Check(source)) {
		PyErr_SetString(PyExc_TypeError, "guarded_eval(): source must be a str");
		return NULL;
	}
	code = verdict_code(r, source, mode, 0, learning, &flags);
	if (!code)
		return NULL;
	if (sb_eval_namespace_open(r, NULL, NULL, names, true, &ns) == 0) {
		result = run_code(r, code, flags, &ns, learning);
		if (result && mode != SB_EVAL_MODE_EVAL) {
			/* A block: the names it bound. */
			Py_SETREF(result, PyDict_Copy(ns.globals));
			if (result && PyDict_DelItemString(result, "__builtins__") < 0)
				Py_CLEAR(result);
		}
		sb_eval_namespace_close(&ns);
	}
	Py_DECREF(code);
	return result;
}

static void record_free_names(struct sb_eval_rules *r, char **names)
{
	_cleanup_free_ char *site = sb_eval_namespace_call_site();
	struct sb_buf record = {0};

	if (!site || sb_buf_puts(&record, site) < 0)
		return;
	for (char **n = names; *n; n++)
		if (sb_buf_printf(&record, "%c%s", n == names ? ':' : ',', *n) < 0) {
			sb_buf_reset(&record);
			return;
		}
	sb_eval_record(r->name, SB_EVAL_LEARN_FREE, record.data);
	sb_buf_reset(&record);
}

PyObject *sb_eval_run_learning(enum sb_eval_builtin which, PyObject *const *args, Py_ssize_t nargs,
			       PyObject *kwnames)
{
	struct sb_eval_rules *r = sb_eval_rules_find(NULL);
	PyObject *source = nargs > 0 ? args[0] : NULL, *text = NULL;
	int mode = which == SB_EVAL_BUILTIN_EXEC ? SB_EVAL_MODE_EXEC : SB_EVAL_MODE_EVAL;

	if (r && sb_eval_rules_ready(r) < 0)
		return NULL;
	if (which == SB_EVAL_BUILTIN_COMPILE && nargs >= 3) {
		mode = mode_of(args[2]);
		PyErr_Clear();
	}
	if (r && source && mode >= 0 && (PyUnicode_Check(source) || PyBytes_Check(source)))
		text = source_text(source, "eval");
	PyErr_Clear();
	if (text) {
		struct checked c;

		bool bare = which != SB_EVAL_BUILTIN_COMPILE && (nargs < 2 || args[1] == Py_None);

		if (check_source(r, text, (enum sb_eval_mode)mode, 0, true, false, &c) == 0) {
			/* A bare eval() reading its caller's variables, which a
			 * guarded one will not see: a comment says so. */
			if (bare && c.free_names)
				record_free_names(r, c.free_names);
			checked_done(&c);
		}
		/* A source that does not parse is CPython's to report. */
		PyErr_Clear();
		Py_DECREF(text);
		/* A namespace handed over is written as a comment (eval-learn.c). */
		if (which != SB_EVAL_BUILTIN_COMPILE && nargs > 1 && PyDict_Check(args[1]))
			sb_eval_namespace_record_context(r);
	}
	if (which == SB_EVAL_BUILTIN_COMPILE)
		return compile_unguarded(args, nargs, kwnames);
	return run_unguarded(which, args, nargs, kwnames);
}
