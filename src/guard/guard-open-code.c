/* SPDX-License-Identifier: MIT */
/* io.open_code() of the bytecode caches of the standard library and
 * site-packages, served by the guard (guard-open-code.h). */
#include "guard-open-code.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "guard-runtime.h"
#include "util.h"

/* importlib unmarshals a cache right after reading it: one record is in
 * use at a time. Full, the oldest goes (its bytes then take the second
 * read). */
#define SERVED_MAX 8

struct served_cache {
	PyObject *bytes; /* strong: while held, its buffer is its own */
	char *path;
};

/* Plain C data, touched only under the GIL. */
static struct {
	struct served_cache entries[SERVED_MAX];
	size_t n;
	/* Taken from sys.modules at activation, before the program runs. */
	PyObject *io;
	PyObject *bytesio_type;
} served;

static void served_drop(size_t i)
{
	Py_DECREF(served.entries[i].bytes);
	free(served.entries[i].path);
	memmove(&served.entries[i], &served.entries[i + 1],
		(served.n - i - 1) * sizeof(served.entries[0]));
	served.n--;
}

static int served_add(PyObject *bytes, const char *path)
{
	char *copy = strdup(path);

	if (!copy)
		return -ENOMEM;
	/* Bytes nobody else holds can never come back to marshal. */
	for (size_t i = served.n; i-- > 0;)
		if (Py_REFCNT(served.entries[i].bytes) == 1)
			served_drop(i);
	if (served.n == SERVED_MAX)
		served_drop(0);
	Py_INCREF(bytes);
	served.entries[served.n++] = (struct served_cache){.bytes = bytes, .path = copy};
	return 0;
}

bool sb_open_code_served(const char *path, size_t skip, const char *data, size_t len)
{
	for (size_t i = 0; i < served.n; i++) {
		PyObject *bytes = served.entries[i].bytes;

		if ((size_t)PyBytes_GET_SIZE(bytes) == skip + len &&
		    PyBytes_AS_STRING(bytes) + skip == data &&
		    streq(served.entries[i].path, path)) {
			served_drop(i);
			return true;
		}
	}
	return false;
}

/* <tree>/.../__pycache__/<name>.pyc, the tree the standard library's or a
 * site-packages directory's, by a plain name: what importlib asks for when
 * it imports a module whose code is exempt by its file name. */
static bool is_library_cache(const char *path)
{
	const char *rel = sb_guard_runtime_relative(path), *slash;
	size_t n;

	if (!rel)
		rel = sb_guard_site_relative(path);
	if (!rel)
		return false;
	n = strlen(rel);
	slash = strrchr(rel, '/');
	return n > 4 && streq(rel + n - 4, ".pyc") && slash - rel >= 12 &&
	       memcmp(slash - 12, "/__pycache__", 12) == 0;
}

/* What io.open_code() does without a hook: _io.open(path, "rb"). CPython
 * imports _io for it, which from the program's call would be the
 * program's import of `_io` (refused without its rule): once the guard is
 * active, the module is the one taken at activation. */
static PyObject *io_open(PyObject *path)
{
	bool in_main = PyInterpreterState_Get() == PyInterpreterState_Main();
	PyObject *io = served.io && in_main ? Py_NewRef(served.io) : PyImport_ImportModule("_io");
	PyObject *file;

	if (!io)
		return NULL;
	file = PyObject_CallMethod(io, "open", "Os", path, "rb");
	Py_DECREF(io);
	return file;
}

static PyObject *raise_errno(int error, PyObject *path)
{
	errno = error;
	return PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
}

/* As FileIO.readall() reads: the size fstat() gives and one byte more to
 * see the end, more if the file grew; the GIL released around each call. */
static PyObject *read_all(int fd, PyObject *path)
{
	struct stat st;
	PyThreadState *ts;
	PyObject *bytes;
	Py_ssize_t size, got = 0;
	int r, error = 0;

	ts = PyEval_SaveThread();
	r = fstat(fd, &st);
	error = errno;
	PyEval_RestoreThread(ts);
	if (r < 0)
		return raise_errno(error, path);
	if (S_ISDIR(st.st_mode))
		return raise_errno(EISDIR, path);
	size = S_ISREG(st.st_mode) && st.st_size < PY_SSIZE_T_MAX / 4 ? (Py_ssize_t)st.st_size + 1
								      : 8192;
	bytes = PyBytes_FromStringAndSize(NULL, size);
	if (!bytes)
		return NULL;
	for (;;) {
		ssize_t n;

		if (got == size) {
			if (size > PY_SSIZE_T_MAX / 4) {
				Py_DECREF(bytes);
				return PyErr_NoMemory();
			}
			size *= 2;
			if (_PyBytes_Resize(&bytes, size) < 0)
				return NULL;
		}
		ts = PyEval_SaveThread();
		n = read(fd, PyBytes_AS_STRING(bytes) + got, (size_t)(size - got));
		error = errno;
		PyEval_RestoreThread(ts);
		if (n > 0) {
			got += n;
			continue;
		}
		if (n == 0)
			break;
		if (error == EINTR && PyErr_CheckSignals() == 0)
			continue;
		Py_DECREF(bytes);
		return error == EINTR ? NULL : raise_errno(error, path);
	}
	if (got != size && _PyBytes_Resize(&bytes, got) < 0)
		return NULL;
	return bytes;
}

static PyObject *open_code(PyObject *path, void *userdata _unused_)
{
	_cleanup_close_ int fd = -1;
	PyObject *bytes, *file;
	Py_ssize_t n;
	const char *p;
	int error = 0;

	/* Before activation (the interpreter's start) the libraries' places
	 * are not known yet, and no marshal.loads() is checked. A
	 * subinterpreter (a grant) has objects of its own: CPython's way. */
	if (!served.bytesio_type || PyInterpreterState_Get() != PyInterpreterState_Main())
		return io_open(path);
	p = PyUnicode_AsUTF8AndSize(path, &n);
	/* A name with a NUL or a lone surrogate: io.open() says what is wrong. */
	if (!p || strlen(p) != (size_t)n) {
		PyErr_Clear();
		return io_open(path);
	}
	if (!is_library_cache(p))
		return io_open(path);
	/* FileIO's event, as io.open(path, "rb") raises it: the guard decides
	 * on it, and the program's own hooks see no difference. */
	if (PySys_Audit("open", "Osi", path, "r", O_RDONLY | O_CLOEXEC) < 0)
		return NULL;
	for (;;) {
		PyThreadState *ts = PyEval_SaveThread();

		fd = open(p, O_RDONLY | O_CLOEXEC);
		error = errno;
		PyEval_RestoreThread(ts);
		if (fd >= 0)
			break;
		if (error != EINTR)
			return raise_errno(error, path);
		if (PyErr_CheckSignals() < 0)
			return NULL;
	}
	bytes = read_all(fd, path);
	if (!bytes)
		return NULL;
	if (served_add(bytes, p) < 0) {
		Py_DECREF(bytes);
		return PyErr_NoMemory();
	}
	file = PyObject_CallOneArg(served.bytesio_type, bytes);
	Py_DECREF(bytes);
	return file;
}

int sb_open_code_install(void)
{
	return PyFile_SetOpenCodeHook(open_code, NULL) < 0 ? -EBUSY : 0;
}

int sb_open_code_activate(void)
{
	PyObject *name = PyUnicode_FromString("_io");

	/* From sys.modules, not by an import statement (the guard would judge
	 * it as the program's). site's .pth files may have run before this:
	 * nothing rests on the type being genuine, the proof is the buffer's
	 * address (sb_open_code_served()). */
	served.io = name ? PyImport_GetModule(name) : NULL;
	Py_XDECREF(name);
	if (served.io)
		served.bytesio_type = PyObject_GetAttrString(served.io, "BytesIO");
	if (!served.bytesio_type) {
		PyErr_Clear();
		Py_CLEAR(served.io);
		return -ENOENT;
	}
	return 0;
}

void sb_open_code_release(void)
{
	/* After Py_FinalizeEx(): the objects went with the interpreter. */
	for (size_t i = 0; i < served.n; i++)
		free(served.entries[i].path);
	memset(&served, 0, sizeof(served));
}
