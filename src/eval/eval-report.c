/* SPDX-License-Identifier: MIT */
#include "eval-report.h"

#include "eval-runtime.h"
#include "exceptions.h"
#include "report-denials.h"
#include "util.h"

/* At most this many violations are rendered in a report. */
#define SB_EVAL_REPORT_MAX 50

/* Line n (1-based) of source, without its end of line; NULL when absent. */
static char *source_line(const char *source, int n)
{
	const char *s = source, *end;

	if (!source || n < 1)
		return NULL;
	for (int i = 1; i < n; i++) {
		s = strchr(s, '\n');
		if (!s)
			return NULL;
		s++;
	}
	end = s + strcspn(s, "\r\n");
	return strndup(s, (size_t)(end - s));
}

/* Characters (not bytes: col_offset counts UTF-8 bytes) in text[0, bytes). */
static size_t chars_in(const char *text, size_t bytes)
{
	size_t n = 0;

	for (size_t i = 0; i < bytes && text[i]; i++)
		n += ((unsigned char)text[i] & 0xC0) != 0x80;
	return n;
}

static int caret(struct sb_buf *b, const char *line, const struct sb_eval_violation *v)
{
	size_t len = strlen(line), col = v->col < 0 ? 0 : (size_t)v->col, end;
	int r = sb_buf_puts(b, "      ");

	if (col > len)
		col = len;
	end = v->end_line == v->line && v->end_col > v->col ? (size_t)v->end_col : len;
	if (end > len)
		end = len;
	if (end <= col)
		end = col + 1;
	/* The caret line keeps the line's tabs so that it stays aligned. */
	for (size_t i = 0; r >= 0 && i < col; i++)
		if (((unsigned char)line[i] & 0xC0) != 0x80)
			r = sb_buf_putc(b, line[i] == '\t' ? '\t' : ' ');
	for (size_t i = 0, n = chars_in(line + col, end - col); r >= 0 && i < (n ? n : 1); i++)
		r = sb_buf_putc(b, '^');
	return r;
}

static char *render(const struct sb_eval_violation *v, const char *source)
{
	_cleanup_free_ char *line = v->line > 0 ? source_line(source, v->line) : NULL;
	struct sb_buf b = {0};
	int r;

	r = sb_buf_printf(&b, "  line %d, col %d: %s", v->line, v->col, v->message);
	if (r >= 0 && line && *line) {
		r = sb_buf_printf(&b, "\n      %s\n", line);
		if (r >= 0)
			r = caret(&b, line, v);
	}
	if (r >= 0 && v->rule)
		r = sb_buf_printf(&b, "\n    add: %s", v->rule);
	if (r >= 0 && v->narrower)
		r = sb_buf_printf(&b, "        (or, narrower: %s)", v->narrower);
	if (r >= 0 && v->warning)
		r = sb_buf_printf(&b, "\n    warning: %s", v->warning);
	if (r >= 0 && !v->rule && v->hint)
		r = sb_buf_printf(&b, "\n    %s", v->hint);
	if (r < 0) {
		sb_buf_reset(&b);
		return NULL;
	}
	return sb_buf_steal(&b);
}

/* (message, violations, rules, filename, lineno, offset, text) */
PyObject *sb_eval_report_make(const struct sb_eval_check *c, const struct sb_eval_rules *r,
			      const char *source)
{
	PyObject *violations = PyList_New(0), *rules = PyList_New(0), *report = NULL;
	_cleanup_free_ char *first_line = NULL;
	struct sb_buf msg = {0};
	int e = violations && rules ? 0 : -1;
	const struct sb_eval_violation *first = c->n_violations ? &c->violations[0] : NULL;

	if (e == 0 &&
	    sb_buf_printf(&msg, "%zu rule%s violated in %s (add to '%s')", c->n_violations,
			  c->n_violations == 1 ? "" : "s", r->tag, sb_eval_profile_path()) < 0)
		e = -1;
	for (size_t i = 0; e == 0 && i < c->n_violations; i++) {
		_cleanup_free_ char *block = NULL;

		/* A source with thousands of violations gets a report of a
		 * readable size; the count says how many there are. */
		if (i == SB_EVAL_REPORT_MAX) {
			if (sb_buf_printf(&msg, "\n\n  ... and %zu more", c->n_violations - i) < 0)
				e = -1;
			break;
		}
		block = render(&c->violations[i], source);
		PyObject *s =
		    block ? PyUnicode_DecodeUTF8(block, (Py_ssize_t)strlen(block), "replace")
			  : NULL;

		if (!block && !PyErr_Occurred())
			PyErr_NoMemory();
		e = s ? PyList_Append(violations, s) : -1;
		Py_XDECREF(s);
		if (e == 0 && sb_buf_printf(&msg, "\n\n%s", block) < 0)
			e = -1;
		if (e == 0 && c->violations[i].rule) {
			PyObject *rule = PyUnicode_FromString(c->violations[i].rule);
			int has = rule ? PySequence_Contains(rules, rule) : -1;

			e = has < 0 ? -1 : has ? 0 : PyList_Append(rules, rule);
			Py_XDECREF(rule);
		}
	}
	if (e == 0 && !msg.data)
		PyErr_NoMemory();
	else if (e == 0) {
		first_line = first ? source_line(source, first->line) : NULL;
		report = Py_BuildValue(
		    "(NOOsiiN)", PyUnicode_DecodeUTF8(msg.data, (Py_ssize_t)msg.len, "replace"),
		    violations, rules, r->tag, first ? first->line : 1,
		    first ? (int)chars_in(first_line ? first_line : "",
					  first->col < 0 ? 0 : (size_t)first->col) +
				1
			  : 1,
		    PyUnicode_DecodeUTF8(first_line ? first_line : "",
					 (Py_ssize_t)strlen(first_line ? first_line : ""),
					 "replace"));
	} else if (!PyErr_Occurred())
		PyErr_NoMemory();
	sb_buf_reset(&msg);
	Py_XDECREF(violations);
	Py_XDECREF(rules);
	return report;
}

/* The run report (--report) lists a rejection as one denial per rule that
 * would allow a part of it, or one without a rule when none would. */
static void report_denials(const char *filename, PyObject *message, PyObject *rules)
{
	Py_ssize_t n = PyList_Check(rules) ? PyList_GET_SIZE(rules) : 0;
	const char *text;

	for (Py_ssize_t i = 0; i < n; i++) {
		const char *rule = PyUnicode_AsUTF8(PyList_GET_ITEM(rules, i));
		_cleanup_free_ char *line = NULL;

		if (rule && asprintf(&line, "%s is rejected by the eval guard. Add `%s` to '%s'",
				     filename, rule, sb_eval_profile_path()) >= 0)
			sb_report_denial(SB_REPORT_DENIAL_EVAL, filename, line);
		else
			line = NULL;
		PyErr_Clear();
	}
	if (n == 0 && (text = PyUnicode_AsUTF8(message))) {
		_cleanup_free_ char *first = strndup(text, strcspn(text, "\n"));

		if (first)
			sb_report_denial(SB_REPORT_DENIAL_EVAL, filename, first);
	}
	PyErr_Clear();
}

int sb_eval_raise_rejection(PyObject *report)
{
	PyObject *cls = sb_exc_class(SB_EXC_EVAL_SYNTAX), *message, *violations, *rules, *exc;
	const char *filename;
	int lineno, offset;
	PyObject *text;

	if (!cls)
		return -1;
	if (!PyArg_ParseTuple(report, "OOOsiiO", &message, &violations, &rules, &filename, &lineno,
			      &offset, &text))
		return -1;
	report_denials(filename, message, rules);
	/* SyntaxError(msg, (filename, lineno, offset, text)): editors and
	 * tracebacks show the position the way they do for any syntax error. */
	exc = PyObject_CallFunction(cls, "O(siiO)", message, filename, lineno, offset, text);
	if (!exc)
		return -1;
	{
		/* Copies: a caller may change the lists it was given. */
		PyObject *v = PySequence_List(violations), *rl = PySequence_List(rules);

		if (v && rl && PyObject_SetAttrString(exc, "violations", v) == 0 &&
		    PyObject_SetAttrString(exc, "rules", rl) == 0)
			PyErr_SetObject(cls, exc);
		Py_XDECREF(v);
		Py_XDECREF(rl);
	}
	Py_DECREF(exc);
	return -1;
}
