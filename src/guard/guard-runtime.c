/* SPDX-License-Identifier: MIT */
/* Whose code is running: the interpreter's or the program's (guard-runtime.h). */
#include "guard-runtime.h"

#include "util.h"

struct sb_guard_run_state sb_guard_run;

/* All of it plain C data: no Python object holds it, so no introspection
 * (__subclasses__, gc.get_referents, closures) can reach or reset it. */
static struct {
	char *profile_path;
	char *stdlib_dir; /* code there is the runtime's, not the program's */
	size_t stdlib_dir_len;
	/* The open runtime section (sb_guard_runtime_enter), if any. */
	void *section_tstate;
	void *section_frame;
} known;

const char *sb_guard_profile_path(void)
{
	return known.profile_path ? known.profile_path : ".py-sandboxes";
}

static bool is_import_machinery(const char *file)
{
	if (startswith(file, "<frozen importlib"))
		return true;
	if (!known.stdlib_dir || strncmp(file, known.stdlib_dir, known.stdlib_dir_len) != 0)
		return false;
	return startswith(file + known.stdlib_dir_len, "/importlib/") != NULL;
}

const char *sb_guard_runtime_relative(const char *file)
{
	const char *rel;

	if (!known.stdlib_dir || strncmp(file, known.stdlib_dir, known.stdlib_dir_len) != 0)
		return NULL;
	rel = file + known.stdlib_dir_len;
	if (*rel != '/')
		return NULL;
	/* Some builds (pyenv, venvs of them) keep third-party packages inside the
	 * standard library tree: those are not the runtime. */
	if (startswith(rel, "/site-packages/") || startswith(rel, "/dist-packages/"))
		return NULL;
	return rel;
}

bool sb_guard_is_stdlib_source(const char *file, const char *rel)
{
	const char *mine = sb_guard_runtime_relative(file), *f;
	const char *end = rel + strlen(rel);

	if (mine)
		return streq(mine, rel);
	/* "<frozen collections>" for "/collections/__init__.py", "<frozen
	 * runpy>" for "/runpy.py": compare the dotted module name. */
	f = startswith(file, "<frozen ");
	if (!f || *rel != '/')
		return false;
	if (end - rel > 12 && streq(end - 12, "/__init__.py"))
		end -= 12;
	else if (end - rel > 3 && streq(end - 3, ".py"))
		end -= 3;
	else
		return false;
	for (const char *r = rel + 1; r < end; r++, f++)
		if (*f != (*r == '/' ? '.' : *r))
			return false;
	return streq(f, ">");
}

bool sb_guard_stdlib_module(const char *file, char *buf, size_t size)
{
	const char *rel = sb_guard_runtime_relative(file), *frozen;
	size_t n;

	if (!rel) {
		frozen = startswith(file, "<frozen ");
		n = frozen ? strlen(frozen) : 0;
		if (n < 2 || frozen[n - 1] != '>' || n - 1 >= size)
			return false;
		memcpy(buf, frozen, n - 1);
		buf[n - 1] = '\0';
		return true;
	}
	n = strlen(rel);
	if (n > 12 && streq(rel + n - 12, "/__init__.py"))
		n -= 12;
	else if (n > 3 && streq(rel + n - 3, ".py"))
		n -= 3;
	else
		return false;
	/* After the leading '/': a path of names without dots. */
	rel++, n--;
	if (n == 0 || n >= size)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (rel[i] == '.')
			return false;
		buf[i] = rel[i] == '/' ? '.' : rel[i];
	}
	buf[n] = '\0';
	return true;
}

bool sb_guard_code_is(PyCodeObject *code, const char *file_rel, const char *function)
{
	const char *file = PyUnicode_AsUTF8(code->co_filename);

	if (!file) {
		PyErr_Clear();
		return false;
	}
	return sb_guard_is_stdlib_source(file, file_rel) &&
	       PyUnicode_CompareWithASCIIString(code->co_name, function) == 0;
}

bool sb_guard_frame_is(PyFrameObject *frame, const char *file_rel, const char *function)
{
	PyCodeObject *code = PyFrame_GetCode(frame);
	bool is = sb_guard_code_is(code, file_rel, function);

	Py_DECREF(code);
	return is;
}

bool sb_guard_is_runtime_file(const char *file)
{
	return startswith(file, "<frozen ") || sb_guard_runtime_relative(file);
}

void sb_guard_runtime_enter(struct sb_runtime_section *s)
{
	s->saved_active = sb_guard_run.section_open;
	s->saved_tstate = known.section_tstate;
	s->saved_frame = known.section_frame;
	known.section_tstate = PyThreadState_Get();
	known.section_frame = PyEval_GetFrame();
	sb_guard_run.section_open = true;
}

void sb_guard_runtime_leave(struct sb_runtime_section *s)
{
	sb_guard_run.section_open = s->saved_active;
	known.section_tstate = s->saved_tstate;
	known.section_frame = s->saved_frame;
}

static bool frame_is_runtime(PyFrameObject *frame)
{
	PyCodeObject *code = PyFrame_GetCode(frame);
	const char *file = PyUnicode_AsUTF8(code->co_filename);
	bool runtime = file && sb_guard_is_runtime_file(file);

	if (!file)
		PyErr_Clear();
	Py_DECREF(code);
	return runtime;
}

/* The section's own events: raised with the frame it was entered from, or
 * from runtime frames (the import machinery, runpy) that the section's C
 * code called, down to the first frame of the program (a module's body, a
 * function), whose events are the program's. */
bool sb_guard_in_runtime_section(void)
{
	PyFrameObject *frame;

	if (!sb_guard_run.section_open || PyThreadState_Get() != known.section_tstate)
		return false;
	frame = PyEval_GetFrame(); /* borrowed */
	if ((void *)frame == known.section_frame)
		return true;
	Py_XINCREF(frame);
	for (int depth = 0; frame && depth < 64 && frame_is_runtime(frame); depth++) {
		PyFrameObject *back = PyFrame_GetBack(frame);

		Py_DECREF(frame);
		frame = back;
		if ((void *)frame == known.section_frame) {
			Py_XDECREF(frame);
			return true;
		}
	}
	Py_XDECREF(frame);
	return false;
}

PyObject *sb_guard_loaded_module(const char *name)
{
	PyObject *key = PyUnicode_FromString(name), *m;

	if (!key)
		return NULL;
	m = PyImport_GetModule(key);
	Py_DECREF(key);
	return m;
}

/* Only the innermost frame counts: when it is the import machinery itself (a
 * loader importing _io to read a source file, `from pkg import sub` loading a
 * submodule of an admitted package), the request is the runtime's. */
bool sb_guard_caller_is_runtime(void)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyCodeObject *code;
	const char *file;
	bool runtime;

	if (sb_guard_in_runtime_section())
		return true;
	/* No Python frame at all: the interpreter itself is acting. */
	if (!frame)
		return true;
	code = PyFrame_GetCode(frame);
	file = PyUnicode_AsUTF8(code->co_filename);
	runtime = file && (is_import_machinery(file) || sb_guard_is_runtime_file(file));
	if (!file)
		PyErr_Clear();
	Py_DECREF(code);
	return runtime;
}

/* Only the innermost frame, and only importlib's frozen bootstrap
 * ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>"):
 * the files part exempts its stat probes and lets its bytecode-cache writes
 * fail unrecorded. */
bool sb_guard_caller_is_import_bootstrap(void)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyCodeObject *code;
	const char *file;
	bool r;

	if (!frame)
		return false;
	code = PyFrame_GetCode(frame);
	file = PyUnicode_AsUTF8(code->co_filename);
	r = file && startswith(file, "<frozen importlib._bootstrap");
	if (!file)
		PyErr_Clear();
	Py_DECREF(code);
	return r;
}

int sb_guard_runtime_prepare(const char *profile_path)
{
	if (profile_path && !(known.profile_path = strdup(profile_path)))
		return -ENOMEM;
	return 0;
}

int sb_guard_runtime_activate(void)
{
	PyObject *stdlib_dir = PySys_GetObject("_stdlib_dir"); /* borrowed */

	if (stdlib_dir && PyUnicode_Check(stdlib_dir)) {
		const char *dir = PyUnicode_AsUTF8(stdlib_dir);

		if (dir && !(known.stdlib_dir = strdup(dir)))
			return -ENOMEM;
		if (known.stdlib_dir) {
			known.stdlib_dir_len = strlen(known.stdlib_dir);
			while (known.stdlib_dir_len > 1 &&
			       known.stdlib_dir[known.stdlib_dir_len - 1] == '/')
				known.stdlib_dir_len--;
		}
	}
	PyErr_Clear();
	return 0;
}

void sb_guard_runtime_arm(void)
{
	sb_guard_run.armed = true;
}

void sb_guard_runtime_release(void)
{
	free(known.profile_path);
	free(known.stdlib_dir);
	memset(&known, 0, sizeof(known));
	memset(&sb_guard_run, 0, sizeof(sb_guard_run));
}
