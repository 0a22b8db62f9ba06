/* SPDX-License-Identifier: MIT */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "audit-guard.h"

#include "util.h"

#define SB_SELFTEST_EVENT "pysandboxes.selftest"

/* All guard state is plain C data: no Python object holds it, so no
 * introspection (__subclasses__, gc.get_referents, closures) can reach or
 * reset it, unlike a guard written in Python. */
static struct {
	bool enabled; /* py-sandbox=true */
	bool armed;   /* user code is about to run */
	unsigned long selftest_hits;
	bool import_all;
	char **allowed; /* sorted top-level module names */
	size_t n_allowed;
	char *profile_path;
	char *stdlib_dir; /* imports made by the interpreter's own library are not charged */
	size_t stdlib_dir_len;
	PyObject *original_import;
} guard;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool top_level_allowed(const char *top)
{
	/* Our own package is always importable so that programs can catch our
	 * exception classes. */
	if (guard.import_all || streq(top, "pysandboxes"))
		return true;
	return guard.n_allowed > 0 &&
	       bsearch(&top, guard.allowed, guard.n_allowed, sizeof(char *), cmp_str) != NULL;
}

static bool is_import_machinery(const char *file)
{
	const char *rel;

	if (startswith(file, "<frozen importlib"))
		return true;
	if (!guard.stdlib_dir || strncmp(file, guard.stdlib_dir, guard.stdlib_dir_len) != 0)
		return false;
	rel = file + guard.stdlib_dir_len;
	return startswith(rel, "/importlib/") != NULL;
}

static bool is_runtime_file(const char *file)
{
	const char *rel;

	if (startswith(file, "<frozen "))
		return true;
	if (!guard.stdlib_dir || strncmp(file, guard.stdlib_dir, guard.stdlib_dir_len) != 0)
		return false;
	rel = file + guard.stdlib_dir_len;
	if (*rel != '/')
		return false;
	/* Some builds (pyenv, venvs of them) keep third-party packages inside the
	 * standard library tree: those are not the runtime. */
	return !startswith(rel, "/site-packages/") && !startswith(rel, "/dist-packages/");
}

/* Whether the code asking for the import belongs to the interpreter's own
 * library (json importing re) rather than to the program. Only the innermost
 * Python frame counts: when it is the import machinery itself (a loader
 * importing _io to read a source file, `from pkg import sub` loading a
 * submodule of an already admitted package), the request is the runtime's. */
static bool importer_is_runtime(void)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyCodeObject *code;
	const char *file;
	bool runtime;

	/* No Python frame at all: the interpreter itself is importing. */
	if (!frame)
		return true;
	code = PyFrame_GetCode(frame);
	file = PyUnicode_AsUTF8(code->co_filename);
	runtime = file && (is_import_machinery(file) || is_runtime_file(file));
	if (!file)
		PyErr_Clear();
	Py_DECREF(code);
	return runtime;
}

static int deny_import(const char *module, size_t top_len)
{
	_cleanup_free_ char *text = NULL;
	PyObject *msg, *name;

	/* PyUnicode_FromFormat has no "%.*s": format in C first. */
	if (asprintf(
		&text,
		"Module named '%.*s' is not allowed by a rule. Add 'python-import=%.*s' to '%s'",
		(int)top_len, module, (int)top_len, module,
		guard.profile_path ? guard.profile_path : ".py-sandboxes") < 0) {
		text = NULL;
		PyErr_NoMemory();
		return -1;
	}
	msg = PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "replace");
	name = PyUnicode_DecodeUTF8(module, (Py_ssize_t)top_len, "replace");
	if (msg && name)
		PyErr_SetImportErrorSubclass(PyExc_ModuleNotFoundError, msg, name, NULL);
	Py_XDECREF(msg);
	Py_XDECREF(name);
	return -1;
}

/* 0 when allowed, -1 with an exception set when refused. */
static int check_import(const char *module)
{
	size_t top_len = strcspn(module, ".");
	char top[256];

	if (top_len == 0)
		return 0;
	if (top_len >= sizeof(top))
		return importer_is_runtime() ? 0 : deny_import(module, top_len);
	memcpy(top, module, top_len);
	top[top_len] = '\0';
	if (top_level_allowed(top) || importer_is_runtime())
		return 0;
	return deny_import(module, top_len);
}

static int sb_audit_hook(const char *event, PyObject *args, void *userdata _unused_)
{
	if (!guard.armed) {
		if (streq(event, SB_SELFTEST_EVENT))
			guard.selftest_hits++;
		return 0;
	}
	if (event[0] == 'i' && streq(event, "import")) {
		PyObject *module = PyTuple_GetItem(args, 0);
		const char *name = module ? PyUnicode_AsUTF8(module) : NULL;

		if (!name)
			return -1;
		return check_import(name);
	}
	return 0;
}

/* The "import" audit event only fires for modules that are not loaded yet;
 * `import os` of an already loaded module goes through builtins.__import__
 * alone, so that is wrapped too. */
static PyObject *sb_guarded_import(PyObject *self _unused_, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = {"name", "globals", "locals", "fromlist", "level", NULL};
	PyObject *name, *globals = NULL, *locals = NULL, *fromlist = NULL;
	int level = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "U|OOOi:__import__", kwlist, &name, &globals,
					 &locals, &fromlist, &level))
		return NULL;
	if (guard.armed) {
		const char *module = NULL;

		if (level == 0) {
			module = PyUnicode_AsUTF8(name);
		} else if (globals && PyDict_Check(globals)) {
			/* A relative import stays inside the importer's top-level
			 * package. */
			PyObject *pkg = PyDict_GetItemString(globals, "__package__");

			if (!pkg || !PyUnicode_Check(pkg))
				pkg = PyDict_GetItemString(globals, "__name__");
			if (pkg && PyUnicode_Check(pkg))
				module = PyUnicode_AsUTF8(pkg);
		}
		if (module && check_import(module) < 0)
			return NULL;
		if (!module && PyErr_Occurred())
			return NULL;
	}
	return PyObject_Call(guard.original_import, args, kwds);
}

static PyMethodDef sb_import_def = {
    "__import__", (PyCFunction)(void (*)(void))sb_guarded_import, METH_VARARGS | METH_KEYWORDS,
    "__import__(name, globals=None, locals=None, fromlist=(), "
    "level=0)\n\nImport a module (checked by python-import= rules)."};

int sb_guard_prepare(const struct sb_profile *profile, const char *profile_path)
{
	guard.enabled = profile->py_sandbox;
	guard.import_all = profile->import_all;
	if (profile_path && !(guard.profile_path = strdup(profile_path)))
		return -ENOMEM;
	if (profile->n_imports) {
		guard.allowed = calloc(profile->n_imports, sizeof(char *));
		if (!guard.allowed)
			return -ENOMEM;
		for (size_t i = 0; i < profile->n_imports; i++) {
			/* Only top-level names can ever match; dotted ones were
			 * warned about when the profile was read. */
			if (strchr(profile->imports[i].name, '.'))
				continue;
			guard.allowed[guard.n_allowed] = strdup(profile->imports[i].name);
			if (!guard.allowed[guard.n_allowed])
				return -ENOMEM;
			guard.n_allowed++;
		}
		qsort(guard.allowed, guard.n_allowed, sizeof(char *), cmp_str);
	}
	/* Registered before Py_InitializeFromConfig(): CPython keeps such hooks
	 * in the runtime, ahead of any hook Python code could add. */
	if (PySys_AddAuditHook(sb_audit_hook, NULL) < 0)
		return -EPERM;
	return 0;
}

static int wrap_builtin_import(char **reterr)
{
	PyObject *builtins = PyImport_ImportModule("builtins");
	PyObject *wrapper = NULL;
	int r = -1;

	if (!builtins)
		goto out;
	guard.original_import = PyObject_GetAttrString(builtins, "__import__");
	if (!guard.original_import)
		goto out;
	wrapper = PyCFunction_NewEx(&sb_import_def, NULL, NULL);
	if (!wrapper)
		goto out;
	r = PyObject_SetAttrString(builtins, "__import__", wrapper);
out:
	Py_XDECREF(wrapper);
	Py_XDECREF(builtins);
	if (r < 0) {
		PyErr_Clear();
		*reterr = strdup("cannot install the import guard");
		return -EIO;
	}
	return 0;
}

int sb_guard_activate(char **reterr)
{
	unsigned long before = guard.selftest_hits;
	PyObject *stdlib_dir;

	if (!guard.enabled)
		return 0;
	/* A guard that silently never runs is worse than none: prove it fires. */
	if (PySys_Audit(SB_SELFTEST_EVENT, NULL) < 0 || guard.selftest_hits != before + 1) {
		PyErr_Clear();
		*reterr = strdup("the audit hook did not fire; refusing to run unguarded");
		return -EIO;
	}
	stdlib_dir = PySys_GetObject("_stdlib_dir"); /* borrowed */
	if (stdlib_dir && PyUnicode_Check(stdlib_dir)) {
		const char *dir = PyUnicode_AsUTF8(stdlib_dir);

		if (dir && !(guard.stdlib_dir = strdup(dir)))
			return -ENOMEM;
		if (guard.stdlib_dir) {
			guard.stdlib_dir_len = strlen(guard.stdlib_dir);
			while (guard.stdlib_dir_len > 1 &&
			       guard.stdlib_dir[guard.stdlib_dir_len - 1] == '/')
				guard.stdlib_dir_len--;
		}
	}
	PyErr_Clear();
	if (wrap_builtin_import(reterr) < 0)
		return -EIO;
	guard.armed = true;
	return 0;
}

void sb_guard_release(void)
{
	for (size_t i = 0; i < guard.n_allowed; i++)
		free(guard.allowed[i]);
	free(guard.allowed);
	free(guard.profile_path);
	free(guard.stdlib_dir);
	/* original_import belonged to the finalized interpreter: drop, don't DECREF. */
	memset(&guard, 0, sizeof(guard));
}
