/* SPDX-License-Identifier: MIT */
/* python-import=: a whitelist of top-level module names. Checked on the
 * "import" audit event (modules not loaded yet) and in a builtins.__import__
 * wrapper (modules the runtime already loaded, which raise no event). */
#include "guard.h"

#include "util.h"

/* importlib's public doors into the import system, which raise no "import"
 * event for a module the C import path did not load: without a wrapper,
 * importlib.import_module('x') would import x unchecked. */
enum importlib_door {
	DOOR_GCD_IMPORT,       /* _frozen_importlib._gcd_import(name, package, level) */
	DOOR_BOOTSTRAP_IMPORT, /* _frozen_importlib.__import__ (= importlib.__import__) */
	DOOR_IMPORT_MODULE,    /* importlib.import_module(name, package) */
	DOOR__N,
};

static struct {
	bool import_all;
	char **allowed; /* sorted top-level module names */
	size_t n_allowed;
	PyObject *original_import;
	PyObject *door_original[DOOR__N];
	PyObject *door_wrapper[DOOR__N];
	bool importlib_done;
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

/* The module a (possibly relative) request names, for the top-level check:
 * a relative name stays inside its package's top level. */
static const char *requested_module(PyObject *name, PyObject *package, int level)
{
	const char *n = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;

	if (n && n[0] == '.')
		level = 1;
	if (level > 0)
		return package && PyUnicode_Check(package) ? PyUnicode_AsUTF8(package) : NULL;
	return n;
}

static PyObject *guarded_door(enum importlib_door door, PyObject *args, PyObject *kwds)
{
	static char *kw_gcd[] = {"name", "package", "level", NULL};
	static char *kw_module[] = {"name", "package", NULL};
	static char *kw_import[] = {"name", "globals", "locals", "fromlist", "level", NULL};
	PyObject *name = NULL, *package = NULL, *globals = NULL, *locals = NULL, *fromlist = NULL;
	int level = 0, ok;

	if (door == DOOR_GCD_IMPORT)
		ok = PyArg_ParseTupleAndKeywords(args, kwds, "O|Oi:_gcd_import", kw_gcd, &name,
						 &package, &level);
	else if (door == DOOR_IMPORT_MODULE)
		ok = PyArg_ParseTupleAndKeywords(args, kwds, "O|O:import_module", kw_module, &name,
						 &package);
	else
		ok = PyArg_ParseTupleAndKeywords(args, kwds, "O|OOOi:__import__", kw_import, &name,
						 &globals, &locals, &fromlist, &level);
	if (!ok)
		return NULL;
	if (sb_guard_armed()) {
		const char *module;

		if (door == DOOR_BOOTSTRAP_IMPORT && level > 0 && globals &&
		    PyDict_Check(globals)) {
			package = PyDict_GetItemString(globals, "__package__");
			if (!package || !PyUnicode_Check(package))
				package = PyDict_GetItemString(globals, "__name__");
		}
		module = requested_module(name, package, level);
		if (module && check_import(module) < 0)
			return NULL;
		if (!module && PyErr_Occurred())
			return NULL;
	}
	return PyObject_Call(imports.door_original[door], args, kwds);
}

static PyObject *guarded_gcd_import(PyObject *self _unused_, PyObject *args, PyObject *kwds)
{
	return guarded_door(DOOR_GCD_IMPORT, args, kwds);
}

static PyObject *guarded_bootstrap_import(PyObject *self _unused_, PyObject *args, PyObject *kwds)
{
	return guarded_door(DOOR_BOOTSTRAP_IMPORT, args, kwds);
}

static PyObject *guarded_import_module(PyObject *self _unused_, PyObject *args, PyObject *kwds)
{
	return guarded_door(DOOR_IMPORT_MODULE, args, kwds);
}

static PyMethodDef door_defs[DOOR__N] = {
    [DOOR_GCD_IMPORT] = {"_gcd_import", (PyCFunction)(void (*)(void))guarded_gcd_import,
			 METH_VARARGS | METH_KEYWORDS,
			 "Import a module (checked by python-import=)."},
    [DOOR_BOOTSTRAP_IMPORT] = {"__import__", (PyCFunction)(void (*)(void))guarded_bootstrap_import,
			       METH_VARARGS | METH_KEYWORDS,
			       "Import a module (checked by python-import=)."},
    [DOOR_IMPORT_MODULE] = {"import_module", (PyCFunction)(void (*)(void))guarded_import_module,
			    METH_VARARGS | METH_KEYWORDS,
			    "Import a module (checked by python-import=)."},
};

/* Replaces module.<name> by the door's wrapper when it still holds the
 * original (the first sighting records the original). 1 when the wrapper is
 * in place, 0 when the module has no such attribute (yet), -1 on error. */
static int wrap_door(PyObject *module, enum importlib_door door)
{
	const char *name = door_defs[door].ml_name;
	PyObject *cur = PyObject_GetAttrString(module, name);
	int r = 0;

	if (!cur) {
		PyErr_Clear();
		return 0;
	}
	if (!imports.door_original[door] && cur != imports.door_wrapper[door]) {
		imports.door_original[door] = cur; /* keeps the reference */
		cur = NULL;
	}
	if (!imports.door_wrapper[door]) {
		/* m_self NULL: nothing reachable from the wrapper leads to the original. */
		imports.door_wrapper[door] = PyCFunction_NewEx(&door_defs[door], NULL, NULL);
		if (!imports.door_wrapper[door]) {
			Py_XDECREF(cur);
			return -1;
		}
	}
	if (cur != imports.door_wrapper[door] && (!cur || cur == imports.door_original[door]))
		r = PyObject_SetAttrString(module, name, imports.door_wrapper[door]);
	Py_XDECREF(cur);
	return r;
}

/* importlib itself is loaded on demand: wrap its doors when it appears. */
static int imports_after_import(void)
{
	PyObject *importlib;
	int r;

	if (imports.importlib_done)
		return 0;
	importlib = sb_guard_loaded_module("importlib");
	if (!importlib)
		return PyErr_Occurred() ? -1 : 0;
	/* Seen while importlib's own __init__ is still running (its imports
	 * come through here): done only once both doors exist and are wrapped. */
	r = wrap_door(importlib, DOOR_IMPORT_MODULE);
	if (r > 0)
		r = wrap_door(importlib, DOOR_BOOTSTRAP_IMPORT);
	Py_DECREF(importlib);
	if (r > 0)
		imports.importlib_done = true;
	return r < 0 ? -1 : 0;
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
	if (r >= 0) {
		PyObject *bootstrap = sb_guard_loaded_module("_frozen_importlib");

		if (bootstrap) {
			r = wrap_door(bootstrap, DOOR_GCD_IMPORT);
			if (r >= 0)
				r = wrap_door(bootstrap, DOOR_BOOTSTRAP_IMPORT);
			r = r < 0 ? -1 : 0;
			Py_DECREF(bootstrap);
		}
		if (r >= 0)
			r = imports_after_import();
	}
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
	/* The Python objects belonged to the finalized interpreter: drop, don't DECREF. */
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
    .after_import = imports_after_import,
};
