/* SPDX-License-Identifier: MIT */
/* The caller's side of the result guard as far as it runs without a worker:
 * src/partial/unpickle.c (the restricted unpickler, the data-only graph check,
 * the exception channel and the exception descriptor) in an embedded CPython,
 * differentially against CPython's own unpickler.
 *
 * The reference is _pickle.Unpickler whose find_class knows the closed list of
 * remote-result-mode=data-only as docs/partial-mode.md states it (written here
 * again, not taken from result-guard.c) and records any other global instead
 * of resolving it. For every input:
 *  - if the prescan admits it, CPython must not name a global outside the
 *    list while unpickling it (the decoder refuses before building anything);
 *  - if the decoder returns a value, CPython builds the same value from the
 *    same bytes: same types, same values (floats bit for bit), same sharing;
 *    and every object in it is of exactly one of the listed types;
 *  - if CPython builds a value of another type, the decoder refuses;
 *  - a constructor of the list called with arguments CPython's own reduce
 *    never writes, which can cost unbounded time or memory (Fraction("1e9999
 *    99999"), bytearray(1 << 40), Decimal of a huge int), is refused.
 * The exception channel must only ever build data and exception instances;
 * an exception frame always ends as an exception. No reply may change
 * objects the caller shares (enum members, the decimal context...).
 *
 * Only the fail-closed channels rebuild anything here: objects mode is
 * fail-open by design (any global outside a denylist: an input could name
 * pathlib.Path.unlink), so the prescan target covers it without calls. */
#include <errno.h>

#include "core.h"
#include "exceptions.h"
#include "frame.h"
#include "fuzz.h"
#include "fuzz-python.h"
#include "util.h"

static const char reference_py[] =
    "import _pickle, copyreg, io, struct\n"
    "import builtins, datetime, decimal, fractions, ipaddress, pathlib, uuid\n"
    "LISTED = {\n"
    "    'builtins': ('complex', 'bytearray', 'set', 'frozenset'),\n"
    "    'pathlib': ('PurePath', 'PurePosixPath', 'PureWindowsPath', 'Path', 'PosixPath',\n"
    "                'WindowsPath'),\n"
    "    'datetime': ('datetime', 'date', 'time', 'timedelta', 'timezone'),\n"
    "    'decimal': ('Decimal',), 'fractions': ('Fraction',),\n"
    "    'uuid': ('UUID',),\n"
    "    'ipaddress': ('IPv4Address', 'IPv6Address', 'IPv4Network', 'IPv6Network',\n"
    "                  'IPv4Interface', 'IPv6Interface'),\n"
    "}\n"
    "ALLOWED = {(m, n): getattr(__import__(m), n) for m, ns in LISTED.items() for n in ns}\n"
    "TYPES = {type(None), bool, int, float, complex, str, bytes, bytearray, list, tuple,\n"
    "         dict, set, frozenset} | set(ALLOWED.values())\n"
    "CONTAINERS = (list, tuple, set, frozenset)\n"
    "class Outside(Exception):\n"
    "    pass\n"
    "class Unbounded(Exception):\n"
    "    pass\n"
    "def fraction(*args):\n"
    "    if not (0 < len(args) < 3 and all(type(a) is int for a in args)\n"
    "            and sum(a.bit_length() for a in args) <= 1 << 20):\n"
    "        raise Unbounded\n"
    "    return fractions.Fraction(*args)\n"
    "def decimal_(*args):\n"
    "    if len(args) != 1 or type(args[0]) is not str:\n"
    "        raise Unbounded\n"
    "    return decimal.Decimal(*args)\n"
    "def bytearray_(*args):\n"
    "    if len(args) > 1 or args and type(args[0]) is not bytes:\n"
    "        raise Unbounded\n"
    "    return bytearray(*args)\n"
    "CHECKED = {('fractions', 'Fraction'): fraction, ('decimal', 'Decimal'): decimal_,\n"
    "           ('builtins', 'bytearray'): bytearray_}\n"
    "class Reference(_pickle.Unpickler):\n"
    "    def find_class(self, module, name):\n"
    "        if (module, name) in CHECKED:\n"
    "            return CHECKED[(module, name)]\n"
    "        if (module, name) in ALLOWED:\n"
    "            return ALLOWED[(module, name)]\n"
    "        self.outside = (module, name)\n"
    "        raise Outside\n"
    "def reference(data):\n"
    "    u = Reference(io.BytesIO(data))\n"
    "    u.outside = None\n"
    "    try:\n"
    "        with decimal.localcontext():  # its flags are not the decoder's to set\n"
    "            return 'ok', u.load()\n"
    "    except Outside:\n"
    "        return 'outside', u.outside\n"
    "    except Unbounded:\n"
    "        return 'unbounded', None\n"
    "    except BaseException as e:\n"
    "        return 'error', e\n"
    "def walk(v, admit):\n"
    "    '''The first object reachable through containers that admit() refuses.'''\n"
    "    todo, seen = [v], set()\n"
    "    while todo:\n"
    "        o = todo.pop()\n"
    "        if id(o) in seen:\n"
    "            continue\n"
    "        seen.add(id(o))\n"
    "        if not admit(o):\n"
    "            return o\n"
    "        t = type(o)\n"
    "        if t in CONTAINERS:\n"
    "            todo.extend(o)\n"
    "        elif t is dict:\n"
    "            for k, x in o.items():\n"
    "                todo += (k, x)\n"
    "    return None\n"
    "def shared_state():\n"
    "    # What no reply may change in the caller: shared members, contexts.\n"
    "    return repr([(m, dict(vars(m))) for m in uuid.SafeUUID]\n"
    "                + [decimal.getcontext(), datetime.timezone.utc, fractions.Fraction(1, 3),\n"
    "                   sorted(vars(pathlib.PurePosixPath), key=str)])\n"
    "def not_data(v):\n"
    "    return walk(v, lambda o: type(o) in TYPES)\n"
    "def exception_or_data(o):\n"
    "    if isinstance(o, type):  # a class as a value: listed, or an exception class\n"
    "        return o in TYPES or issubclass(o, BaseException)\n"
    "    return type(o) in TYPES or isinstance(o, BaseException)\n"
    "def not_exception_or_data(v):\n"
    "    return walk(v, exception_or_data)\n"
    "def state(o):\n"
    "    try:\n"
    "        return o.__reduce_ex__(4)\n"
    "    except Exception as e:\n"
    "        return ('cannot reduce', type(e), str(e))\n"
    "def pack(x):\n"
    "    return struct.pack('<d', x)\n"
    "def canon(o, depth=0):\n"
    "    # A text for o that equal values share, whatever their identity.\n"
    "    t = type(o)\n"
    "    if depth > 100:\n"
    "        return 'deep'\n"
    "    if t is float:\n"
    "        return 'f' + pack(o).hex()\n"
    "    if t is complex:\n"
    "        return 'c' + pack(o.real).hex() + pack(o.imag).hex()\n"
    "    if t is int:\n"
    "        return 'i' + hex(o)\n"
    "    if t in (type(None), bool, str, bytes, bytearray):\n"
    "        return t.__name__ + repr(o)\n"
    "    if t in (tuple, list):\n"
    "        return t.__name__ + '(' + ','.join(canon(e, depth + 1) for e in o) + ')'\n"
    "    if t in (set, frozenset):\n"
    "        return t.__name__ + '{' + ','.join(sorted(canon(e, depth + 1) for e in o)) + '}'\n"
    "    if t is dict:\n"
    "        return '{' + ','.join(canon(k, depth + 1) + ':' + canon(v, depth + 1)\n"
    "                              for k, v in o.items()) + '}'\n"
    "    if isinstance(o, (type, type(len), type(state))):\n"
    "        return 'callable ' + getattr(o, '__module__', '?') + '.' + o.__qualname__\n"
    "    return 'object ' + t.__qualname__ + canon(state(o), depth + 1)\n"
    "def difference(a, b):\n"
    "    '''None when a and b are the same graph: types, values, sharing.'''\n"
    "    todo, seen = [(a, b)], {}\n"
    "    while todo:\n"
    "        x, y = todo.pop()\n"
    "        if type(x) is not type(y):\n"
    "            return 'type %r against %r' % (type(x), type(y))\n"
    "        if id(x) in seen:\n"
    "            if seen[id(x)][1] is not y:\n"
    "                return 'different sharing at a %s' % type(x).__name__\n"
    "            continue\n"
    "        seen[id(x)] = (x, y)  # kept alive: an id is not reused meanwhile\n"
    "        t = type(x)\n"
    "        if t is float:\n"
    "            same = pack(x) == pack(y)\n"
    "        elif t is complex:\n"
    "            same = pack(x.real) == pack(y.real) and pack(x.imag) == pack(y.imag)\n"
    "        elif t in (type(None), bool, int, str, bytes, bytearray):\n"
    "            same = x == y\n"
    "        elif t in (list, tuple):\n"
    "            same = len(x) == len(y)\n"
    "            todo += zip(x, y)\n"
    "        elif t in (set, frozenset):\n"
    "            # Iteration order follows hashes, and a NaN's hash is its address.\n"
    "            same = sorted(map(canon, x)) == sorted(map(canon, y))\n"
    "        elif t is dict:\n"
    "            same = len(x) == len(y)\n"
    "            todo += zip(x.keys(), y.keys())\n"
    "            todo += zip(x.values(), y.values())\n"
    "        elif isinstance(x, (type, type(len), type(difference), type(state))):\n"
    "            same = x is y\n"
    "        else:\n"
    "            todo.append((state(x), state(y)))\n"
    "            same = True\n"
    "        if not same:\n"
    "            return '%r against %r' % (x, y)\n"
    "    return None\n";

/* CPython keeps objects until exit by design: its leaks are no finding, and
 * the ones of the code under test would drown in them. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

static PyObject *fn_reference, *fn_not_data, *fn_not_exception_or_data, *fn_difference,
    *fn_shared_state, *shared_state;

int LLVMFuzzerInitialize(int *argc _unused_, char ***argv _unused_)
{
	PyObject *globals;

	fuzz_python_start();
	globals = PyDict_New();
	if (!globals || PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) < 0)
		abort();
	if (!PyRun_String(reference_py, Py_file_input, globals, globals)) {
		PyErr_Print();
		abort();
	}
	fn_reference = PyDict_GetItemString(globals, "reference");
	fn_not_data = PyDict_GetItemString(globals, "not_data");
	fn_not_exception_or_data = PyDict_GetItemString(globals, "not_exception_or_data");
	fn_difference = PyDict_GetItemString(globals, "difference");
	fn_shared_state = PyDict_GetItemString(globals, "shared_state");
	shared_state = fn_shared_state ? PyObject_CallNoArgs(fn_shared_state) : NULL;
	if (!fn_reference || !fn_not_data || !fn_not_exception_or_data || !fn_difference ||
	    !shared_state || !sb_exc_class(SB_EXC_RESTRICTED_UNPICKLING))
		abort();
	return 0;
}

static PyObject *call1(PyObject *fn, PyObject *arg)
{
	PyObject *r = PyObject_CallOneArg(fn, arg);

	if (!r) {
		PyErr_Print();
		FUZZ_ASSERT(r, "the reference code failed");
	}
	return r;
}

static void print_object(const char *what, PyObject *o)
{
	PyObject *repr = o ? PyObject_Repr(o) : NULL;

	fprintf(stderr, "%s: %s\n", what, repr ? PyUnicode_AsUTF8(repr) : "(no repr)");
	Py_XDECREF(repr);
	PyErr_Clear();
}

/* A refusal is RestrictedUnpicklingError, or MemoryError from a budget. */
static void expect_refusal(const char *channel)
{
	PyObject *et, *ev, *etb;

	FUZZ_ASSERT(PyErr_Occurred(), "%s: NULL without an exception", channel);
	if (!PyErr_ExceptionMatches(sb_exc_class(SB_EXC_RESTRICTED_UNPICKLING)) &&
	    !PyErr_ExceptionMatches(PyExc_MemoryError)) {
		PyErr_Fetch(&et, &ev, &etb);
		PyErr_NormalizeException(&et, &ev, &etb);
		print_object("exception", ev);
		FUZZ_ASSERT(false, "%s: a refusal that is not RestrictedUnpicklingError", channel);
	}
	PyErr_Clear();
}

static void data_only(const uint8_t *data, size_t size)
{
	char err[512];
	PyObject *bytes, *ref, *value, *v, *o, *diff;
	const char *kind;

	if (sb_result_prescan(data, size, SB_CHANNEL_DATA_ONLY, NULL, err, sizeof(err)) < 0)
		return;
	/* The decoder first: if it hangs, the timeout is its own. */
	v = sb_unpickle((const char *)data, size, SB_RESULT_LIMIT, SB_CHANNEL_DATA_ONLY, "fuzz");
	if (!v)
		expect_refusal("data-only");
	bytes = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
	FUZZ_ASSERT(bytes, "out of memory");
	ref = call1(fn_reference, bytes);
	kind = PyUnicode_AsUTF8(PyTuple_GET_ITEM(ref, 0));
	value = PyTuple_GET_ITEM(ref, 1);
	if (streq(kind, "outside")) {
		print_object("CPython asked for", value);
		FUZZ_ASSERT(false, "the data-only prescan admitted a stream in which CPython "
				   "looks up a global outside the closed list");
	}
	FUZZ_ASSERT(!v || !streq(kind, "unbounded"),
		    "the decoder called a constructor with arguments pickle never writes");
	if (v) {
		if (!streq(kind, "ok")) {
			print_object("CPython raised", value);
			print_object("the decoder built", v);
			FUZZ_ASSERT(false, "the decoder built a value where CPython fails");
		}
		o = call1(fn_not_data, v);
		if (o != Py_None)
			print_object("not data", o);
		FUZZ_ASSERT(o == Py_None, "data-only returned an object of another type");
		Py_DECREF(o);
		diff = PyObject_CallFunctionObjArgs(fn_difference, v, value, NULL);
		FUZZ_ASSERT(diff, "the comparison failed");
		if (diff != Py_None)
			print_object("difference", diff);
		FUZZ_ASSERT(diff == Py_None, "the decoder and CPython built different values");
		Py_DECREF(diff);
	}
	if (streq(kind, "ok")) {
		o = call1(fn_not_data, value);
		if (o != Py_None) {
			print_object("CPython built", o);
			FUZZ_ASSERT(!v, "data-only admitted a value CPython builds with another "
					"type in it");
		}
		Py_DECREF(o);
	}
	Py_XDECREF(v);
	Py_DECREF(ref);
	Py_DECREF(bytes);
}

static void exception_channel(const uint8_t *data, size_t size)
{
	PyObject *v = sb_unpickle((const char *)data, size, SB_RESULT_LIMIT, SB_CHANNEL_EXCEPTION,
				  "fuzz"),
		 *o;

	if (!v) {
		expect_refusal("exception channel");
		return;
	}
	o = call1(fn_not_exception_or_data, v);
	if (o != Py_None)
		print_object("built", o);
	FUZZ_ASSERT(o == Py_None, "the exception channel built something other than an "
				  "exception or data");
	Py_DECREF(o);
	Py_DECREF(v);
}

/* The parent's handling of an exception frame (F or B). */
static void exception_frame(const uint8_t *data, size_t size, bool base)
{
	PyObject *r = sb_raise_remote_exception((const char *)data, size, base, "fuzz");
	PyObject *et, *ev, *etb;

	FUZZ_ASSERT(!r, "an exception frame returned a value");
	FUZZ_ASSERT(PyErr_Occurred(), "an exception frame raised nothing");
	PyErr_Fetch(&et, &ev, &etb);
	PyErr_NormalizeException(&et, &ev, &etb);
	FUZZ_ASSERT(ev && PyExceptionInstance_Check(ev), "not an exception instance");
	if (base && !PyErr_GivenExceptionMatches(ev, sb_exc_class(SB_EXC_RESTRICTED_UNPICKLING)))
		FUZZ_ASSERT(PyErr_GivenExceptionMatches(ev, sb_exc_class(SB_EXC_BASE_EXCEPTION)),
			    "a BaseException frame raised something else than "
			    "SandBoxBaseExceptionError");
	Py_XDECREF(et);
	Py_XDECREF(ev);
	Py_XDECREF(etb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	PyObject *now;

	if (size > SB_RESULT_LIMIT + 16)
		return 0;
	data_only(data, size);
	exception_channel(data, size);
	exception_frame(data, size, false);
	exception_frame(data, size, true);
	FUZZ_ASSERT(!PyErr_Occurred(), "an exception was left set");
	now = PyObject_CallNoArgs(fn_shared_state);
	FUZZ_ASSERT(now, "the reference code failed");
	if (PyObject_RichCompareBool(now, shared_state, Py_EQ) != 1) {
		print_object("the shared objects now", now);
		FUZZ_ASSERT(false, "a reply changed objects the caller shares");
	}
	Py_DECREF(now);
	return 0;
}
