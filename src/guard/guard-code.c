/* SPDX-License-Identifier: MIT */
/* Code objects: which may carry the standard library's file names, and
 * which code the standard library builds as its own work (guard-code.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-code.h"

#include <ctype.h>
#include <fcntl.h>
#include <unistd.h>

#include "api-registry.h"
#include "guard-open-code.h"
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

bool sb_code_is_library(PyCodeObject *code)
{
	const char *file =
	    PyUnicode_Check(code->co_filename) ? PyUnicode_AsUTF8(code->co_filename) : NULL;

	if (!file)
		PyErr_Clear();
	return file && sb_guard_is_library_file(file);
}

int sb_code_refuse_laundering(const char *what, const char *filename)
{
	bool site = sb_guard_is_site_file(filename);
	_cleanup_free_ char *message = NULL;

	if (asprintf(&message, "%s under the %s file name '%s' is refused by the API guard: %s",
		     what, site ? "site-packages" : "standard library's", filename,
		     site ? "its frames would pass for that library's own, exempt from the rules"
			  : "its frames would pass for the interpreter's own") < 0) {
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

/* Whether data is what importlib reads for the source file `file`, after
 * the 16-byte header: its bytecode cache at any optimisation level, or the
 * .pyc beside it (a sourceless module: compileall -b, a .pyc-only
 * package). The bytes the guard itself read for importlib
 * (guard-open-code.h), or else the file read again. */
static bool is_cache_of(const char *file, const char *data, size_t len)
{
	static const char *const opts[] = {"", ".opt-1", ".opt-2"};
	const char *base = strrchr(file, '/'), *dot;
	char path[PATH_MAX];
	int n;

	if (!base || !(dot = strrchr(base, '.')) || !streq(dot, ".py"))
		return false;
	for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
		n = snprintf(path, sizeof(path), "%.*s/__pycache__/%.*s.cpython-%d%d%s.pyc",
			     (int)(base - file), file, (int)(dot - base - 1), base + 1,
			     PY_MAJOR_VERSION, PY_MINOR_VERSION, opts[i]);
		if (n > 0 && (size_t)n < sizeof(path) &&
		    (sb_open_code_served(path, 16, data, len) || file_holds(path, 16, data, len)))
			return true;
	}
	n = snprintf(path, sizeof(path), "%.*sc", (int)(dot + 3 - file), file);
	return n > 0 && (size_t)n < sizeof(path) && file_holds(path, 16, data, len);
}

/* The first code object in o (depth-first, through code constants and
 * containers) whose file name is exempt (the standard library's or
 * site-packages'), as a borrowed reference; NULL when there is none.
 * *deep: the nesting went past the bound (then the answer is not known: the
 * caller refuses). *seen: the last file name object looked at, found not
 * exempt (a module's code objects share one: checked once). */
static PyCodeObject *library_code_in(PyObject *o, int depth, bool *deep, PyObject **seen)
{
	PyObject *items;
	Py_ssize_t n;

	if (depth > 200) {
		*deep = true;
		return NULL;
	}
	if (PyCode_Check(o)) {
		PyCodeObject *code = (PyCodeObject *)o;

		if (code->co_filename != *seen) {
			if (sb_code_is_library(code))
				return code;
			*seen = code->co_filename;
		}
		items = code->co_consts;
	} else if (PyTuple_Check(o) || PyList_Check(o)) {
		items = o;
	} else if (PyDict_Check(o)) {
		PyObject *key, *value;
		Py_ssize_t pos = 0;
		PyCodeObject *found = NULL;

		while (!found && !*deep && PyDict_Next(o, &pos, &key, &value)) {
			found = library_code_in(key, depth + 1, deep, seen);
			if (!found)
				found = library_code_in(value, depth + 1, deep, seen);
		}
		return found;
	} else if (PyAnySet_Check(o)) {
		PyObject *key;
		Py_ssize_t pos = 0;
		Py_hash_t hash;
		PyCodeObject *found = NULL;

		while (!found && !*deep && _PySet_NextEntry(o, &pos, &key, &hash))
			found = library_code_in(key, depth + 1, deep, seen);
		return found;
	} else {
		return NULL;
	}
	n = PySequence_Fast_GET_SIZE(items);
	for (Py_ssize_t i = 0; i < n && !*deep; i++) {
		PyCodeObject *found =
		    library_code_in(PySequence_Fast_GET_ITEM(items, i), depth + 1, deep, seen);

		if (found)
			return found;
	}
	return NULL;
}

int sb_code_check_unmarshalled(PyObject *result, PyObject *data)
{
	PyCodeObject *code;
	PyObject *seen = NULL; /* identity only */
	const char *file, *bytes;
	Py_buffer view;
	size_t len;
	bool deep = false, genuine = false;

	/* The common case first: a module's bytecode cache read by importlib,
	 * the module's own code on top. */
	code = PyCode_Check(result) && sb_code_is_library((PyCodeObject *)result)
		   ? (PyCodeObject *)result
		   : library_code_in(result, 0, &deep, &seen);
	if (!code && !deep)
		return 0;
	file = code ? PyUnicode_AsUTF8(code->co_filename) : "<unknown>";
	if (!file) {
		PyErr_Clear();
		file = "<unknown>";
	}
	if (code && data && source_bytes(data, &view, &bytes, &len) == 0) {
		/* All of it comes from that file: what it holds is that
		 * library's, whatever file names it names. A .pyc the
		 * program wrote (beside its script, in a zip) names a
		 * library's file it does not come from. */
		genuine = is_cache_of(file, bytes, len);
		if (view.obj)
			PyBuffer_Release(&view);
	}
	return genuine ? 0 : sb_code_refuse_laundering("unmarshalling code", file);
}

/* What the program puts into a generator's text. A generator exempt only
 * for its own template must not take the program's text into it: the names
 * it writes into the template must be identifiers (dataclasses does not
 * check the field names a class's __annotations__ or a base's
 * __dataclass_fields__ give it; MakeProxyType does not check the method
 * names), and a forward reference, which typing compiles and evaluates
 * whole, must be a type expression. */
enum generator_input {
	INPUT_TEMPLATE,	   /* checks its inputs itself, or takes none */
	INPUT_FIELDS,	   /* dataclasses: the keys of _process_class's `fields` */
	INPUT_METHOD_NAME, /* MakeProxyType: its local `meth` */
	INPUT_TYPE_EXPR,   /* typing.ForwardRef: the source compiled */
};

/* The standard library's code generators: what they compile or run is
 * built from their own templates (field names are checked identifiers, the
 * text of a forward reference a type expression). */
static const struct {
	const char *file; /* relative to the standard library */
	const char *function;
	enum generator_input input;
} stdlib_code_generators[] = {
    {"/ast.py", "parse", INPUT_TEMPLATE}, /* an AST only: running it needs another compile() */
    {"/collections/__init__.py", "namedtuple", INPUT_TEMPLATE}, /* checks its names */
    {"/dataclasses.py", "_create_fn", INPUT_FIELDS},
    {"/gettext.py", "c2py", INPUT_TEMPLATE}, /* plural forms, checked by its own tokenizer */
    {"/multiprocessing/managers.py", "MakeProxyType", INPUT_METHOD_NAME},
    {"/multiprocessing/sharedctypes.py", "make_property", INPUT_TEMPLATE}, /* needs ctypes */
    {"/typing.py", "__init__", INPUT_TYPE_EXPR}, /* ForwardRef(): compiled, not run */
    {"/typing.py", "_evaluate", INPUT_TEMPLATE}, /* ForwardRef._evaluate(): the code above */
    /* create_autospec: a name that is no identifier becomes "funcopy" */
    {"/unittest/mock.py", "_set_signature", INPUT_TEMPLATE},
};

static bool is_identifier(PyObject *o)
{
	return PyUnicode_Check(o) && PyUnicode_IsIdentifier(o) == 1;
}

/* A local of frame (new reference), or NULL without an exception. */
/* Whether every key of the dataclass's fields (the nearest
 * _process_class frame outwards: every method it generates is made from
 * them) is an identifier. */
static bool field_names_ok(PyFrameObject *frame)
{
	PyFrameObject *f = (PyFrameObject *)Py_NewRef(frame);
	bool ok = false;

	for (int depth = 0; f && depth < 16; depth++) {
		PyFrameObject *back;

		if (sb_guard_frame_is(f, "/dataclasses.py", "_process_class")) {
			PyObject *fields = sb_guard_frame_local(f, "fields"), *key, *value;
			Py_ssize_t pos = 0;

			ok = fields && PyDict_Check(fields);
			while (ok && PyDict_Next(fields, &pos, &key, &value))
				ok = is_identifier(key);
			Py_XDECREF(fields);
			break;
		}
		back = PyFrame_GetBack(f);
		Py_DECREF(f);
		f = back;
	}
	Py_XDECREF(f);
	return ok;
}

static bool method_name_ok(PyFrameObject *frame)
{
	PyObject *meth = sb_guard_frame_local(frame, "meth");
	bool ok = meth && is_identifier(meth);

	Py_XDECREF(meth);
	return ok;
}

static bool python_keyword(const char *word, size_t len)
{
	static const char *const keywords[] = {
	    "and",    "as",   "assert", "async",  "await",  "break",   "class",	   "continue",
	    "def",    "del",  "elif",	"else",	  "except", "finally", "for",	   "from",
	    "global", "if",   "import", "in",	  "is",	    "lambda",  "nonlocal", "not",
	    "or",     "pass", "raise",	"return", "try",    "while",   "with",	   "yield"};

	for (size_t i = 0; i < ELEMENTSOF(keywords); i++)
		if (strlen(keywords[i]) == len && memcmp(keywords[i], word, len) == 0)
			return true;
	return false;
}

/* Whether text is a type expression: names, attributes, subscripts,
 * tuples and lists of them, `|`, `*` (an unpacked TypeVarTuple), `...`,
 * numbers and (not formatted) string literals; no call, no brace, no
 * operator that binds, no keyword but None/True/False. The program wrote
 * it as an annotation: anything more is code, which the rules decide. */
static bool type_expression(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\'') {
			bool triple = i + 2 < n && s[i + 1] == (char)c && s[i + 2] == (char)c;
			size_t k = i + (triple ? 3 : 1);
			bool closed = false;

			while (k < n && !closed) {
				if (s[k] == '\\') {
					k += 2;
				} else if (s[k] == (char)c &&
					   (!triple || (k + 2 < n && s[k + 1] == (char)c &&
							s[k + 2] == (char)c))) {
					k += triple ? 3 : 1;
					closed = true;
				} else {
					k++;
				}
			}
			if (!closed)
				return false;
			i = k;
		} else if (c == '_' || isalpha(c) || c >= 0x80) {
			size_t start = i;
			bool formatted = false;

			while (i < n && (s[i] == '_' || isalnum((unsigned char)s[i]) ||
					 (unsigned char)s[i] >= 0x80)) {
				formatted = formatted || s[i] == 'f' || s[i] == 'F';
				i++;
			}
			/* A string prefix with f: an f-string runs its fields. */
			if (i < n && (s[i] == '"' || s[i] == '\'') && formatted)
				return false;
			if (python_keyword(s + start, i - start))
				return false;
		} else if (isdigit(c) || (c && strchr(" \t\r\n.,[]|*-", c))) {
			i++;
		} else {
			return false;
		}
	}
	return true;
}

static bool type_expression_ok(PyObject *source)
{
	Py_buffer view;
	const char *data;
	size_t len;
	bool ok;

	/* No source: the exec of the code it compiled. */
	if (!source)
		return true;
	if (source_bytes(source, &view, &data, &len) < 0)
		return false;
	ok = type_expression(data, len);
	if (view.obj)
		PyBuffer_Release(&view);
	return ok;
}

static bool input_ok(enum generator_input input, PyFrameObject *frame, PyObject *source)
{
	switch (input) {
	case INPUT_TEMPLATE:
		return true;
	case INPUT_FIELDS:
		return field_names_ok(frame);
	case INPUT_METHOD_NAME:
		return method_name_ok(frame);
	case INPUT_TYPE_EXPR:
		return type_expression_ok(source);
	}
	return false;
}

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

bool sb_code_generated_by_stdlib(PyObject *source)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	size_t i;

	if (!frame)
		return false;
	for (i = 0; i < ELEMENTSOF(stdlib_code_generators); i++)
		if (sb_guard_frame_is(frame, stdlib_code_generators[i].file,
				      stdlib_code_generators[i].function))
			break;
	return i < ELEMENTSOF(stdlib_code_generators) && entered_publicly(frame) &&
	       input_ok(stdlib_code_generators[i].input, frame, source);
}

bool sb_code_derived_by_stdlib(void)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */

	/* A generator function made a coroutine: the same code, other flags. */
	return frame && sb_guard_frame_is(frame, "/types.py", "coroutine");
}

/* Whether _imp._fix_co_filename(code, path) renames code that importlib's
 * _compile_bytecode() (the innermost frame, the standard library's own
 * code) just unmarshalled from the cache of path: a cache written under
 * another name (a tree moved after it was compiled, a conda package).
 * Its locals say what it read: `code` is the code object given, made by
 * marshal.loads(data) with nothing run in between, and `data` the bytes of
 * path's cache (immutable bytes: a bytearray another thread rewrites
 * could pass the comparison after the code was made of other bytes). */
static bool renames_cache_of(PyObject *code, const char *path)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyObject *local_code, *data;
	Py_buffer view;
	const char *bytes;
	size_t len;
	bool genuine = false;

	if (!frame ||
	    !sb_guard_frame_is(frame, "/importlib/_bootstrap_external.py", "_compile_bytecode"))
		return false;
	local_code = sb_guard_frame_local(frame, "code");
	data = sb_guard_frame_local(frame, "data");
	if (local_code == code && data &&
	    (PyBytes_Check(data) ||
	     (PyMemoryView_Check(data) && PyBytes_Check(PyMemoryView_GET_BASE(data)))) &&
	    source_bytes(data, &view, &bytes, &len) == 0) {
		genuine = is_cache_of(path, bytes, len);
		if (view.obj)
			PyBuffer_Release(&view);
	}
	Py_XDECREF(local_code);
	Py_XDECREF(data);
	return genuine;
}

int sb_code_check_call(const char *function, PyObject *const *args, Py_ssize_t nargs)
{
	/* _imp._fix_co_filename(code, path): the file name importlib gives
	 * the code it read from a module's cache; a name exempt from the
	 * rules (the standard library's, site-packages') only to code that
	 * has it already, or that was read from that file's cache. */
	if (streq(function, "_fix_co_filename") && nargs >= 2 && PyCode_Check(args[0]) &&
	    PyUnicode_Check(args[1])) {
		const char *path = PyUnicode_AsUTF8(args[1]);

		if (!path) {
			PyErr_Clear();
			return 0;
		}
		if (sb_guard_is_library_file(path) &&
		    PyUnicode_Compare(((PyCodeObject *)args[0])->co_filename, args[1]) != 0 &&
		    !renames_cache_of(args[0], path)) {
			PyErr_Clear();
			return sb_code_refuse_laundering("_imp._fix_co_filename()", path);
		}
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
