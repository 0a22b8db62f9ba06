/* SPDX-License-Identifier: MIT */
/* The files SQLite opens itself (guard-files-sqlite.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-files-sqlite.h"

#include <limits.h>

#include "guard-files-check.h"
#include "guard-runtime.h"
#include "util.h"

/* sqlite3.h's codes, which the authorizer receives and returns (the
 * sqlite3 module passes them through unchanged). */
enum {
	AUTH_OK = 0,
	AUTH_DENY = 1,
	ACTION_PRAGMA = 19,
	ACTION_ATTACH = 24,
};

static struct {
	PyObject *original_set_authorizer; /* Connection's method descriptor */
	PyTypeObject *connection;	   /* the type it was replaced in */
	initproc original_init;
	PyMethodDef set_authorizer_def, init_def;
	bool type_ready;
} sqlite;

/* The path part of a 'file:' URI, %XX decoded as SQLite decodes it. false
 * when it does not fit. */
static bool uri_path(const char *uri, char out[PATH_MAX])
{
	size_t o = 0;

	if (startswith(uri, "//")) {
		uri += 2;
		uri = startswith(uri, "localhost") ? uri + 9 : uri;
	}
	for (const char *c = uri; *c && *c != '?' && *c != '#'; c++) {
		char ch = *c;

		if (ch == '%' && isxdigit((unsigned char)c[1]) && isxdigit((unsigned char)c[2])) {
			char hex[3] = {c[1], c[2], '\0'};

			ch = (char)strtol(hex, NULL, 16);
			c += 2;
		}
		/* SQLite stops at a NUL it decoded: so does the check. */
		if (ch == '\0')
			break;
		if (o + 1 >= PATH_MAX)
			return false;
		out[o++] = ch;
	}
	out[o] = '\0';
	return true;
}

/* The query of a 'file:' URI as sqlite3ParseUri() reads it: '&'-separated
 * key=value pairs, keys and values %XX decoded ("mod%65=rwc" is mode=rwc),
 * the last mode= winning. *mode receives that mode ("" when none); *vfs
 * whether a vfs= is given (a VFS of the program's choice, dot-file locking,
 * writes beside the database even when it is read only). */
static void uri_query(const char *uri, char mode[16], bool *vfs)
{
	const char *q = strchr(uri, '?');
	char key[16], value[16];
	size_t k = 0, v = 0;
	bool in_value = false;

	mode[0] = '\0';
	*vfs = false;
	if (!q)
		return;
	for (const char *c = q + 1;; c++) {
		char ch = *c;

		if (ch == '\0' || ch == '#' || ch == '&') {
			key[k < sizeof(key) ? k : sizeof(key) - 1] = '\0';
			value[v < sizeof(value) ? v : sizeof(value) - 1] = '\0';
			if (streq(key, "mode"))
				snprintf(mode, 16, "%s", v < sizeof(value) ? value : "?");
			else if (streq(key, "vfs"))
				*vfs = true;
			if (ch != '&')
				return;
			k = v = 0;
			in_value = false;
			continue;
		}
		if (ch == '=' && !in_value) {
			in_value = true;
			continue;
		}
		if (ch == '%' && isxdigit((unsigned char)c[1]) && isxdigit((unsigned char)c[2])) {
			char hex[3] = {c[1], c[2], '\0'};

			ch = (char)strtol(hex, NULL, 16);
			c += 2;
		}
		/* Too long for a key or a mode this check knows: kept as
		 * unknown ("?"), which is neither ro nor memory. */
		if (in_value) {
			if (v < sizeof(value))
				value[v] = ch;
			v++;
		} else {
			if (k < sizeof(key))
				key[k] = ch;
			k++;
		}
	}
}

/* A database name as sqlite3.connect() or ATTACH give it: ':memory:' and ''
 * open no file; a 'file:' URI is checked on its decoded path part (the file
 * SQLite opens when URIs are on) and as a plain name (when they are off).
 * Written unless the URI's mode (the last mode=, as SQLite reads it) is ro
 * and it names no VFS; no file only when that mode is memory. */
static int check_database(const char *db)
{
	const char *uri = startswith(db, "file:");
	char path[PATH_MAX], mode[16] = "";
	bool vfs = false, ro;
	int r = 0;

	if (uri)
		uri_query(uri, mode, &vfs);
	ro = streq(mode, "ro") && !vfs;
	if (!*db || streq(db, ":memory:") || (uri && streq(mode, "memory") && !vfs))
		return 0;
	/* The URI's path first: the one to name in the message. */
	if (uri) {
		if (!uri_path(uri, path))
			return sb_files_refuse_unresolvable(db, "its path is too long");
		/* file::memory: is a database in memory. */
		if (!*path || streq(path, ":memory:"))
			return 0;
		r = sb_files_check_raw(path, -1, !ro, true, NULL);
	}
	if (r >= 0)
		r = sb_files_check_raw(db, -1, !ro, true, NULL);
	return r;
}

/* sqlite3.connect(database): the event comes from Python code with the
 * program's own argument (str or path-like). */
int sb_files_on_sqlite_connect(PyObject *args)
{
	PyObject *keep = NULL, *o = PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0
					? PyTuple_GET_ITEM(args, 0)
					: NULL;
	const char *db = NULL;
	int r;

	switch (sb_files_path_bytes(o, true, &db, &keep)) {
	case SB_PATH_STRING:
		break;
	case SB_PATH_ERROR:
		return -1;
	case SB_PATH_UNCHECKABLE:
		return sb_files_refuse_uncheckable(o);
	default:
		return 0;
	}
	r = check_database(db);
	Py_XDECREF(keep);
	return r;
}

/* The guard's authorizer: a callable holding the program's own (or None),
 * called by SQLite for every action of every statement it prepares. */
typedef struct {
	PyObject_HEAD PyObject *chain;
} authorizer;

/* Pragmas that name a directory SQLite then writes its files in. */
static bool pragma_names_directory(const char *pragma)
{
	return streq(pragma, "temp_store_directory") || streq(pragma, "data_store_directory");
}

/* The guard's part of a decision: ATTACH (and VACUUM INTO, which SQLite
 * runs as an ATTACH) names a database file; a refusal becomes SQLITE_DENY
 * ("not authorized"), the guard's message being lost inside SQLite. */
static int authorize(PyObject *const *args, Py_ssize_t nargs)
{
	long action = nargs >= 1 && PyLong_Check(args[0]) ? PyLong_AsLong(args[0]) : -1;
	const char *arg1 =
	    nargs >= 2 && PyUnicode_Check(args[1]) ? PyUnicode_AsUTF8(args[1]) : NULL;

	if (!sb_guard_armed())
		return AUTH_OK;
	PyErr_Clear();
	if (action == ACTION_ATTACH && arg1 && check_database(arg1) < 0) {
		PyErr_Clear();
		return AUTH_DENY;
	}
	if (action == ACTION_PRAGMA && arg1 && pragma_names_directory(arg1) && nargs >= 3 &&
	    args[2] != Py_None)
		return AUTH_DENY;
	return AUTH_OK;
}

static PyObject *authorizer_call(PyObject *self, PyObject *args, PyObject *kwds)
{
	authorizer *a = (authorizer *)self;
	PyObject *const *items = &PyTuple_GET_ITEM(args, 0);

	if (authorize(items, PyTuple_GET_SIZE(args)) != AUTH_OK)
		return PyLong_FromLong(AUTH_DENY);
	if (a->chain == Py_None)
		return PyLong_FromLong(AUTH_OK);
	return PyObject_Call(a->chain, args, kwds);
}

static void authorizer_dealloc(PyObject *self)
{
	Py_XDECREF(((authorizer *)self)->chain);
	Py_TYPE(self)->tp_free(self);
}

static PyTypeObject authorizer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pysandboxes.sqlite_authorizer",
    .tp_basicsize = sizeof(authorizer),
    .tp_dealloc = authorizer_dealloc,
    .tp_call = authorizer_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The py-sandbox guard's SQLite authorizer, then the program's.",
};

/* Connection.set_authorizer(conn, callable) of the original method: the
 * guard's authorizer holding chain (None: none of the program's). */
static PyObject *set_guarded(PyObject *conn, PyObject *chain)
{
	authorizer *a = PyObject_New(authorizer, &authorizer_type);
	PyObject *bound, *r;

	if (!a)
		return NULL;
	a->chain = Py_NewRef(chain);
	bound = Py_TYPE(sqlite.original_set_authorizer)
		    ->tp_descr_get(sqlite.original_set_authorizer, conn, (PyObject *)Py_TYPE(conn));
	r = bound ? PyObject_CallOneArg(bound, (PyObject *)a) : NULL;
	Py_XDECREF(bound);
	Py_DECREF(a);
	return r;
}

/* The program's set_authorizer(authorizer_callback): its authorizer runs
 * after the guard's. */
static PyObject *guarded_set_authorizer(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
					PyObject *kwnames)
{
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	PyObject *chain;

	if (nargs + nkw != 1 ||
	    (nkw == 1 && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0),
							  "authorizer_callback") != 0))
		return PyErr_Format(PyExc_TypeError, "set_authorizer() takes exactly one argument "
						     "(authorizer_callback)");
	chain = args[0];
	if (chain != Py_None && !PyCallable_Check(chain))
		return PyErr_Format(PyExc_TypeError, "parameter must be callable");
	return set_guarded(self, chain);
}

/* Every connection gets the guard's authorizer as it is made (and made
 * again by a second __init__): with none, its SQL could open any file.
 * Connection's tp_init, which type calls, and its __init__, which a
 * subclass calls through super(), both come here. The
 * "sqlite3.connect/handle" event would be too early: the connection does
 * not take an authorizer before its __init__ has returned. */
static int guarded_init(PyObject *self, PyObject *args, PyObject *kwds)
{
	PyObject *r;

	if (sqlite.original_init(self, args, kwds) < 0)
		return -1;
	r = set_guarded(self, Py_None);
	Py_XDECREF(r);
	return r ? 0 : -1;
}

static PyObject *guarded_init_method(PyObject *self, PyObject *args, PyObject *kwds)
{
	if (!PyObject_TypeCheck(self, sqlite.connection))
		return PyErr_Format(PyExc_TypeError, "__init__ needs a sqlite3.Connection");
	return guarded_init(self, args, kwds) < 0 ? NULL : Py_NewRef(Py_None);
}

int sb_files_sqlite_module(PyObject *module)
{
	PyObject *type, *current, *wrapper;
	PyTypeObject *t;
	int r = -1;

	/* The authorizer's type, made ready the first time _sqlite3 is seen. */
	if (!sqlite.type_ready) {
		if (PyType_Ready(&authorizer_type) < 0)
			return -1;
		sqlite.type_ready = true;
	}
	type = PyObject_GetAttrString(module, "Connection");

	if (!type) {
		PyErr_Clear();
		return 0;
	}
	if (!PyType_Check(type) || sqlite.original_set_authorizer) {
		Py_DECREF(type);
		return 0;
	}
	t = (PyTypeObject *)type;
	current = PyDict_GetItemString(t->tp_dict, "set_authorizer"); /* borrowed */
	if (!current || !Py_TYPE(current)->tp_descr_get) {
		Py_DECREF(type);
		return 0;
	}
	sqlite.set_authorizer_def = (PyMethodDef){
	    .ml_name = "set_authorizer",
	    .ml_meth = (PyCFunction)(void (*)(void))guarded_set_authorizer,
	    .ml_flags = METH_FASTCALL | METH_KEYWORDS,
	    .ml_doc = "Set an authorizer callback (after the py-sandbox guard's own).",
	};
	/* A method descriptor of the type, as the original: Python code cannot
	 * set attributes of this immutable type, C code can. */
	wrapper = PyDescr_NewMethod(t, &sqlite.set_authorizer_def);
	if (!wrapper)
		goto out;
	sqlite.original_set_authorizer = Py_NewRef(current);
	if (PyDict_SetItemString(t->tp_dict, "set_authorizer", wrapper) < 0) {
		Py_CLEAR(sqlite.original_set_authorizer);
		Py_DECREF(wrapper);
		goto out;
	}
	Py_DECREF(wrapper);
	sqlite.init_def = (PyMethodDef){
	    .ml_name = "__init__",
	    .ml_meth = (PyCFunction)(void (*)(void))guarded_init_method,
	    .ml_flags = METH_VARARGS | METH_KEYWORDS,
	    .ml_doc = "Open a connection (with the py-sandbox guard's authorizer).",
	};
	sqlite.original_init = t->tp_init;
	sqlite.connection = (PyTypeObject *)Py_NewRef(type);
	wrapper = PyDescr_NewMethod(t, &sqlite.init_def);
	if (!wrapper || PyDict_SetItemString(t->tp_dict, "__init__", wrapper) < 0) {
		Py_XDECREF(wrapper);
		goto out;
	}
	Py_DECREF(wrapper);
	t->tp_init = guarded_init;
	PyType_Modified(t);
	r = 0;
out:
	Py_DECREF(type);
	return r;
}

int sb_files_sqlite_activate(void)
{
	/* A plain look in sys.modules: no import is in progress at activation. */
	PyObject *module = PyDict_GetItemString(PyImport_GetModuleDict(), "_sqlite3");

	if (!module)
		return PyErr_Occurred() ? -1 : 0;
	return sb_files_sqlite_module(module);
}

void sb_files_sqlite_release(void)
{
	/* The finalized interpreter's objects: dropped, not DECREF'd. The
	 * static type stays ready for the process. */
	sqlite.original_set_authorizer = NULL;
	sqlite.connection = NULL;
}
