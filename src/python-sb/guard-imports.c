/* SPDX-License-Identifier: MIT */
/* python-import=: a whitelist of top-level module names. Checked on the
 * "import" audit event (modules not loaded yet) and in a builtins.__import__
 * wrapper (modules the runtime already loaded, which raise no event). */
#include "guard.h"

#include "util.h"

static struct {
	bool import_all;
	char **allowed; /* sorted top-level module names */
	size_t n_allowed;
	PyObject *original_import;
} imports;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool top_level_allowed(const char *top)
{
	/* Our own package is always importable so that programs can catch our
	 * exception classes. */
	if (imports.import_all || streq(top, "pysandboxes"))
		return true;
	return imports.n_allowed > 0 &&
	       bsearch(&top, imports.allowed, imports.n_allowed, sizeof(char *), cmp_str) != NULL;
}

static int deny_import(const char *module, size_t top_len)
{
	_cleanup_free_ char *text = NULL, *name = strndup(module, top_len);

	if (!name || asprintf(&text,
			      "Module named '%s' is not allowed by a rule. Add "
			      "'python-import=%s' to '%s'",
			      name, name, sb_guard_profile_path()) < 0) {
		text = NULL;
		PyErr_NoMemory();
		return -1;
	}
	return sb_raise_module_not_found(name, text);
}

/* 0 when allowed, -1 with an exception set when refused. */
static int check_import(const char *module)
{
	size_t top_len = strcspn(module, ".");
	char top[256];

	if (top_len == 0)
		return 0;
	if (top_len >= sizeof(top))
		return sb_guard_caller_is_runtime() ? 0 : deny_import(module, top_len);
	memcpy(top, module, top_len);
	top[top_len] = '\0';
	if (top_level_allowed(top) || sb_guard_caller_is_runtime())
		return 0;
	return deny_import(module, top_len);
}

static int on_import(PyObject *args)
{
	PyObject *module = PyTuple_GetItem(args, 0);
	const char *name = module ? PyUnicode_AsUTF8(module) : NULL;

	if (!name)
		return -1;
	return check_import(name);
}

/* The "import" audit event only fires for modules that are not loaded yet;
 * `import os` of an already loaded module goes through builtins.__import__
 * alone, so that is wrapped too. */
static PyObject *guarded_import(PyObject *self _unused_, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = {"name", "globals", "locals", "fromlist", "level", NULL};
	PyObject *name, *globals = NULL, *locals = NULL, *fromlist = NULL;
	int level = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "U|OOOi:__import__", kwlist, &name, &globals,
					 &locals, &fromlist, &level))
		return NULL;
	if (sb_guard_armed()) {
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
	{
		PyObject *module = PyObject_Call(imports.original_import, args, kwds);

		if (module && sb_guard_armed() && sb_guard_after_import() < 0)
			Py_CLEAR(module);
		return module;
	}
}

static PyMethodDef import_def = {"__import__", (PyCFunction)(void (*)(void))guarded_import,
				 METH_VARARGS | METH_KEYWORDS,
				 "__import__(name, globals=None, locals=None, fromlist=(), "
				 "level=0)\n\nImport a module (checked by python-import= rules)."};

static int imports_prepare(const struct sb_profile *profile,
			   const struct sb_interp_paths *interp _unused_, char **reterr _unused_)
{
	imports.import_all = profile->import_all;
	if (profile->n_imports == 0)
		return 0;
	imports.allowed = calloc(profile->n_imports, sizeof(char *));
	if (!imports.allowed)
		return -ENOMEM;
	for (size_t i = 0; i < profile->n_imports; i++) {
		/* Only top-level names can ever match; dotted ones were warned
		 * about when the profile was read. */
		if (strchr(profile->imports[i].name, '.'))
			continue;
		imports.allowed[imports.n_allowed] = strdup(profile->imports[i].name);
		if (!imports.allowed[imports.n_allowed])
			return -ENOMEM;
		imports.n_allowed++;
	}
	qsort(imports.allowed, imports.n_allowed, sizeof(char *), cmp_str);
	return 0;
}

static int imports_activate(char **reterr)
{
	PyObject *builtins = PyImport_ImportModule("builtins");
	PyObject *wrapper = NULL;
	int r = -1;

	if (!builtins)
		goto out;
	imports.original_import = PyObject_GetAttrString(builtins, "__import__");
	if (!imports.original_import)
		goto out;
	/* m_self NULL: gc.get_referents(wrapper) does not lead to the original. */
	wrapper = PyCFunction_NewEx(&import_def, NULL, NULL);
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

static void imports_release(void)
{
	for (size_t i = 0; i < imports.n_allowed; i++)
		free(imports.allowed[i]);
	free(imports.allowed);
	/* original_import belonged to the finalized interpreter: drop, don't DECREF. */
	memset(&imports, 0, sizeof(imports));
}

static const struct sb_audit_handler import_handlers[] = {
    {"import", on_import},
};

const struct sb_guard_part sb_guard_imports_part = {
    .name = "imports",
    .prepare = imports_prepare,
    .activate = imports_activate,
    .release = imports_release,
    .handlers = import_handlers,
    .n_handlers = ELEMENTSOF(import_handlers),
};
