/* SPDX-License-Identifier: MIT */
#include "py-helpers.h"

#include <string.h>

PyObject *sb_py_getattr_path(PyObject *obj, const char *dotted)
{
	for (const char *p = dotted; obj && *p;) {
		size_t n = strcspn(p, ".");
		PyObject *name = PyUnicode_FromStringAndSize(p, (Py_ssize_t)n), *next;

		next = name ? PyObject_GetAttr(obj, name) : NULL;
		Py_XDECREF(name);
		Py_DECREF(obj);
		obj = next;
		p += n;
		if (*p == '.')
			p++;
	}
	return obj;
}

int sb_py_visit_once(PyObject *seen, PyObject *obj)
{
	/* By address: the objects stay alive while the walk holds them, and
	 * an identity set needs no __hash__ of theirs. */
	PyObject *id = PyLong_FromVoidPtr(obj);
	int r;

	if (!id)
		return -1;
	r = PySet_Contains(seen, id);
	if (r == 0)
		r = PySet_Add(seen, id) < 0 ? -1 : 0;
	Py_DECREF(id);
	return r;
}
