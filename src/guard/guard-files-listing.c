/* SPDX-License-Identifier: MIT */
/* Listings without the entries ignore= rules hide (guard-files-listing.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-files-listing.h"

#include "guard-files-check.h"
#include "util.h"

typedef struct {
	PyObject_HEAD PyObject *it;
	char *dir; /* the resolved directory, NULL when unknown */
} filtered_scandir;

static bool entry_hidden(const char *dir, PyObject *name)
{
	PyObject *keep;
	const char *s = NULL;
	bool hidden = false;

	if (sb_files_path_bytes(name, false, &s, &keep) == SB_PATH_STRING)
		hidden = sb_files_entry_ignored(dir ? dir : "/", s);
	Py_XDECREF(keep);
	PyErr_Clear();
	return hidden;
}

static PyObject *fs_next(filtered_scandir *self)
{
	for (;;) {
		PyObject *entry = PyIter_Next(self->it), *name;
		bool hidden;

		if (!entry)
			return NULL;
		name = PyObject_GetAttrString(entry, "name");
		if (!name)
			return entry;
		hidden = entry_hidden(self->dir, name);
		Py_DECREF(name);
		if (!hidden)
			return entry;
		Py_DECREF(entry);
	}
}

static PyObject *fs_close(filtered_scandir *self, PyObject *unused _unused_)
{
	return PyObject_CallMethod(self->it, "close", NULL);
}

static PyObject *fs_enter(filtered_scandir *self, PyObject *unused _unused_)
{
	return Py_NewRef(self);
}

static PyObject *fs_exit(filtered_scandir *self, PyObject *args _unused_)
{
	PyObject *r = PyObject_CallMethod(self->it, "close", NULL);

	if (!r)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_FALSE;
}

static void fs_dealloc(filtered_scandir *self)
{
	Py_XDECREF(self->it);
	free(self->dir);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef fs_methods[] = {
    {"close", (PyCFunction)fs_close, METH_NOARGS, NULL},
    {"__enter__", (PyCFunction)fs_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)fs_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject filtered_scandir_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "posix.ScandirIterator",
    .tp_basicsize = sizeof(filtered_scandir),
    .tp_dealloc = (destructor)fs_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)fs_next,
    .tp_methods = fs_methods,
};

/* The resolved directory a listing is of (for entry names); NULL when it
 * cannot be named. */
static char *listed_dir(PyObject *path)
{
	char resolved[PATH_MAX], base[PATH_MAX];
	PyObject *keep;
	const char *raw = ".";

	switch (sb_files_path_bytes(path, false, &raw, &keep)) {
	case SB_PATH_FD: {
		long fd = PyLong_AsLong(path);

		if (fd == -1 && PyErr_Occurred())
			PyErr_Clear();
		return fd >= 0 && fd <= INT_MAX && sb_files_dir_fd_path((int)fd, resolved) == 0
			   ? strdup(resolved)
			   : NULL;
	}
	case SB_PATH_NONE:
	case SB_PATH_STRING:
		break;
	default:
		PyErr_Clear();
		return NULL;
	}
	if (!getcwd(base, sizeof(base)) || sb_path_resolve(raw, base, true, resolved) < 0) {
		Py_XDECREF(keep);
		return NULL;
	}
	Py_XDECREF(keep);
	return strdup(resolved);
}

PyObject *sb_files_filter_listing(PyObject *path, PyObject *result, bool scandir)
{
	_cleanup_free_ char *dir = NULL;
	PyObject *out;

	if (!result || !sb_files_has_ignores())
		return result;
	dir = listed_dir(path);
	if (scandir) {
		filtered_scandir *fs = PyObject_New(filtered_scandir, &filtered_scandir_type);

		if (!fs) {
			Py_DECREF(result);
			return NULL;
		}
		fs->it = result;
		fs->dir = TAKE_PTR(dir);
		return (PyObject *)fs;
	}
	if (!PyList_Check(result))
		return result;
	out = PyList_New(0);
	for (Py_ssize_t i = 0; out && i < PyList_GET_SIZE(result); i++) {
		PyObject *name = PyList_GET_ITEM(result, i);

		if (!entry_hidden(dir, name) && PyList_Append(out, name) < 0)
			Py_CLEAR(out);
	}
	Py_DECREF(result);
	return out;
}

int sb_files_listing_activate(void)
{
	return PyType_Ready(&filtered_scandir_type);
}
