/* SPDX-License-Identifier: MIT */
/* Code objects: which may carry the standard library's file names, and
 * which code the standard library builds as its own work (guard-code.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-code.h"

#include <fcntl.h>
#include <unistd.h>

#include "api-registry.h"
#include "guard-runtime.h"
#include "pysandboxes-module.h"
#include "util.h"

bool sb_code_is_runtime(PyCodeObject *code)
{
	const char *file =
	    PyUnicode_Check(code->co_filename) ? PyUnicode_AsUTF8(code->co_filename) : NULL;

	if (!file)
		PyErr_Clear();
	return file && sb_guard_is_runtime_file(file);
}

int sb_code_refuse_laundering(const char *what, const char *filename)
{
	_cleanup_free_ char *message = NULL;

	if (asprintf(&message,
		     "%s under the standard library's file name '%s' is refused by the API guard: "
		     "its frames would pass for the interpreter's own",
		     what, filename) < 0) {
		message = NULL;
		PyErr_NoMemory();
		return -1;
	}
	sb_raise_api_error(what, sb_api_category_name(SB_API_DYNAMIC_CODE), message);
	return -1;
}

/* Whether the file at path holds exactly data after its first skip bytes.
 * Read with plain system calls (open, one read, close for a file of the
 * expected size): no audit event, no Python object. */
static bool file_holds(const char *path, size_t skip, const char *data, size_t len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	_cleanup_free_ char *buf = NULL;
	size_t want = skip + len + 1, got = 0;

	if (fd < 0 || !(buf = malloc(want)))
		return false;
	/* One byte more than expected: a longer file shows in the count. */
	while (got < want) {
		ssize_t n = read(fd, buf + got, want - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got == skip + len && memcmp(buf + skip, data, len) == 0;
}

/* The bytes of a compile() source or marshal data: a buffer, or a str as
 * UTF-8. 0, or -1 (no exception) when it is neither. */
static int source_bytes(PyObject *o, Py_buffer *view, const char **ret, size_t *ret_len)
{
	view->obj = NULL;
	if (PyUnicode_Check(o)) {
		Py_ssize_t n;
		const char *s = PyUnicode_AsUTF8AndSize(o, &n);

		if (!s) {
			PyErr_Clear();
			return -1;
		}
		*ret = s;
		*ret_len = (size_t)n;
		return 0;
	}
	if (!PyObject_CheckBuffer(o) || PyObject_GetBuffer(o, view, PyBUF_SIMPLE) < 0) {
		PyErr_Clear();
		view->obj = NULL;
		return -1;
	}
	*ret = view->buf;
	*ret_len = (size_t)view->len;
	return 0;
}

int sb_code_check_compile(PyObject *source, const char *filename)
{
	Py_buffer view;
	const char *data;
	size_t len;
	bool same;

	/* Frozen code never comes from compile(); an AST has no text to
	 * compare. */
	if (startswith(filename, "<") || source_bytes(source, &view, &data, &len) < 0)
		return sb_code_refuse_laundering("compiling source", filename);
	same = file_holds(filename, 0, data, len);
	if (view.obj)
		PyBuffer_Release(&view);
	return same ? 0 : sb_code_refuse_laundering("compiling source", filename);
}

/* Whether data is the bytecode cache of the source file `file` (after the
 * 16-byte header), at any optimisation level. */
static bool is_cache_of(const char *file, const char *data, size_t len)
{
	static const char *const opts[] = {"", ".opt-1", ".opt-2"};
	const char *base = strrchr(file, '/'), *dot;
	char path[PATH_MAX];

	if (!base || !(dot = strrchr(base, '.')) || !streq(dot, ".py"))
		return false;
	for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
		int n = snprintf(path, sizeof(path), "%.*s/__pycache__/%.*s.cpython-%d%d%s.pyc",
				 (int)(base - file), file, (int)(dot - base - 1), base + 1,
				 PY_MAJOR_VERSION, PY_MINOR_VERSION, opts[i]);

		if (n > 0 && (size_t)n < sizeof(path) && file_holds(path, 16, data, len))
			return true;
	}
	return false;
}

/* The first code object in o (depth-first, through code constants and
 * containers) whose file is the standard library's, as a borrowed
 * reference; NULL when there is none. *deep: the nesting went past the
 * bound (then the answer is not known: the caller refuses). */
static PyCodeObject *runtime_code_in(PyObject *o, int depth, bool *deep)
{
	PyObject *items;
	Py_ssize_t n;

	if (depth > 200) {
		*deep = true;
		return NULL;
	}
	if (PyCode_Check(o)) {
		PyCodeObject *code = (PyCodeObject *)o;

		if (sb_code_is_runtime(code))
			return code;
		items = code->co_consts;
	} else if (PyTuple_Check(o) || PyList_Check(o)) {
		items = o;
	} else if (PyDict_Check(o)) {
		PyObject *key, *value;
		Py_ssize_t pos = 0;
		PyCodeObject *found = NULL;

		while (!found && !*deep && PyDict_Next(o, &pos, &key, &value)) {
			found = runtime_code_in(key, depth + 1, deep);
			if (!found)
				found = runtime_code_in(value, depth + 1, deep);
		}
		return found;
	} else if (PyAnySet_Check(o)) {
		PyObject *key;
		Py_ssize_t pos = 0;
		Py_hash_t hash;
		PyCodeObject *found = NULL;

		while (!found && !*deep && _PySet_NextEntry(o, &pos, &key, &hash))
			found = runtime_code_in(key, depth + 1, deep);
		return found;
	} else {
		return NULL;
	}
	n = PySequence_Fast_GET_SIZE(items);
	for (Py_ssize_t i = 0; i < n && !*deep; i++) {
		PyCodeObject *found =
		    runtime_code_in(PySequence_Fast_GET_ITEM(items, i), depth + 1, deep);

		if (found)
			return found;
	}
	return NULL;
}

int sb_code_check_unmarshalled(PyObject *result, PyObject *data)
{
	PyCodeObject *code;
	const char *file, *bytes;
	Py_buffer view;
	size_t len;
	bool deep = false, genuine = false;

	/* The common case first: a module's bytecode cache read by importlib,
	 * the module's own code on top. */
	code = PyCode_Check(result) && sb_code_is_runtime((PyCodeObject *)result)
		   ? (PyCodeObject *)result
		   : runtime_code_in(result, 0, &deep);
	if (!code && !deep)
		return 0;
	file = code ? PyUnicode_AsUTF8(code->co_filename) : "<unknown>";
	if (!file) {
		PyErr_Clear();
		file = "<unknown>";
	}
	if (code && data && source_bytes(data, &view, &bytes, &len) == 0) {
		/* All of it comes from that file: what it holds is the
		 * standard library's, whatever file names it names. */
		genuine = is_cache_of(file, bytes, len);
		if (view.obj)
			PyBuffer_Release(&view);
	}
	return genuine ? 0 : sb_code_refuse_laundering("unmarshalling code", file);
}

/* The standard library's code generators: what they compile or run is
 * built from their own templates (field names are checked identifiers, the
 * text of a forward reference is the program's annotation). */
static const struct {
	const char *file; /* relative to the standard library */
	const char *function;
} stdlib_code_generators[] = {
    {"/ast.py", "parse"}, /* an AST only: running it needs another compile() */
    {"/collections/__init__.py", "namedtuple"},
    {"/dataclasses.py", "_create_fn"},
    {"/gettext.py", "c2py"}, /* plural forms, checked by its own tokenizer */
    {"/multiprocessing/managers.py", "MakeProxyType"},
    {"/multiprocessing/sharedctypes.py", "make_property"},
    {"/typing.py", "__init__"},		     /* ForwardRef(): compiled, not run */
    {"/typing.py", "_evaluate"},	     /* ForwardRef._evaluate(): run */
    {"/unittest/mock.py", "_set_signature"}, /* create_autospec: the name is an identifier */
};

/* Whether the function a frame runs is private to its module: "_x", not
 * "__x__" (a protocol method, public) or "<lambda>". */
static bool private_function(PyFrameObject *frame)
{
	PyCodeObject *code = PyFrame_GetCode(frame);
	const char *name = PyUnicode_AsUTF8(code->co_name);
	bool private =
	    name && name[0] == '_' &&
	    !(startswith(name, "__") && strlen(name) > 4 && streq(name + strlen(name) - 2, "__"));

	if (!name)
		PyErr_Clear();
	Py_DECREF(code);
	return private;
}

/* From frame outwards through the standard library's frames: whether the
 * program entered them through a public function (dataclass(), not
 * _create_fn() with its own text). The import machinery met on the way
 * ends the walk: the code runs as part of a module's import, which the
 * import guard judged. No program frame at all: the runtime's own. */
static bool entered_publicly(PyFrameObject *frame)
{
	PyFrameObject *f = (PyFrameObject *)Py_NewRef(frame), *entry = NULL;
	bool public = true;

	for (int depth = 0; f && depth < 256; depth++) {
		PyCodeObject *code = PyFrame_GetCode(f);
		const char *file = PyUnicode_AsUTF8(code->co_filename);
		bool runtime = file && sb_guard_is_runtime_file(file);
		bool machinery = runtime && sb_guard_is_import_machinery(file);
		PyFrameObject *back;

		if (!file)
			PyErr_Clear();
		Py_DECREF(code);
		if (!runtime) {
			public = entry && !private_function(entry);
			break;
		}
		if (machinery)
			break;
		Py_XDECREF(entry);
		entry = (PyFrameObject *)Py_NewRef(f);
		back = PyFrame_GetBack(f);
		Py_DECREF(f);
		f = back;
	}
	Py_XDECREF(entry);
	Py_XDECREF(f);
	return public;
}

bool sb_code_generated_by_stdlib(void)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	bool generator = false;

	if (!frame)
		return false;
	for (size_t i = 0; !generator && i < ELEMENTSOF(stdlib_code_generators); i++)
		generator = sb_guard_frame_is(frame, stdlib_code_generators[i].file,
					      stdlib_code_generators[i].function);
	return generator && entered_publicly(frame);
}

bool sb_code_derived_by_stdlib(void)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */

	/* A generator function made a coroutine: the same code, other flags. */
	return frame && sb_guard_frame_is(frame, "/types.py", "coroutine");
}

int sb_code_check_call(const char *function, PyObject *const *args, Py_ssize_t nargs)
{
	/* _imp._fix_co_filename(code, path): the file name importlib gives
	 * the code it read from a module's cache; the standard library's only
	 * to code that has it already. */
	if (streq(function, "_fix_co_filename") && nargs >= 2 && PyCode_Check(args[0]) &&
	    PyUnicode_Check(args[1])) {
		const char *path = PyUnicode_AsUTF8(args[1]);

		if (!path) {
			PyErr_Clear();
			return 0;
		}
		if (sb_guard_is_runtime_file(path) &&
		    PyUnicode_Compare(((PyCodeObject *)args[0])->co_filename, args[1]) != 0)
			return sb_code_refuse_laundering("_imp._fix_co_filename()", path);
		PyErr_Clear();
	}
	/* _imp.get_frozen_object(name, data): frozen code from the caller's
	 * bytes. importlib never passes data. */
	if (streq(function, "get_frozen_object") && nargs >= 2 && args[1] != Py_None)
		return sb_code_refuse_laundering("_imp.get_frozen_object() with data", "<frozen>");
	return 0;
}

int sb_code_check_result(const char *function, PyObject *result, PyObject *const *args,
			 Py_ssize_t nargs)
{
	if (streq(function, "loads"))
		return sb_code_check_unmarshalled(result, nargs >= 1 ? args[0] : NULL);
	if (streq(function, "load"))
		return sb_code_check_unmarshalled(result, NULL);
	return 0;
}
