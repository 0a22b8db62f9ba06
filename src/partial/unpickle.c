/* SPDX-License-Identifier: MIT */
/* The result guard's second and third stages (spec section 7), after the
 * opcode prescan of result-guard.c: an unpickler whose find_class never
 * imports what the worker names, and for data-only the check of the rebuilt
 * graph. Then the exception channel, fail-closed, with its descriptor
 * fallback. */
#include "core.h"

#include "exceptions.h"
#include "frame.h"
#include "py-helpers.h"
#include "util.h"

#define GRAPH_MAX_DEPTH 1000

/* The caller's script is __main__ in its process: the worker's name for it
 * (__mp_main__) is not what the user wrote. */
static void main_names(char *text)
{
	static const char worker[] = "__mp_main__.", caller[] = "__main__.";

	for (char *p = strstr(text, worker); p; p = strstr(p, worker)) {
		memcpy(p, caller, sizeof(caller) - 1);
		memmove(p + sizeof(caller) - 1, p + sizeof(worker) - 1,
			strlen(p + sizeof(worker) - 1) + 1);
	}
}

static PyObject *refused(const char *what, const char *fmt, ...) _printf_(2, 3);
static PyObject *refused(const char *what, const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	main_names(detail);
	PyErr_Format(sb_exc_class(SB_EXC_RESTRICTED_UNPICKLING),
		     "the reply of the sandboxed call %s was refused: %s%s", what, detail,
		     strstr(detail, "is not a value type of remote-result-mode=data-only")
			 ? " (the default): return plain data, or accept objects with the rule "
			   "remote-result-mode=objects (in the profile, or "
			   "sandboxes(remote_result_mode=\"objects\"))"
			 : "");
	return NULL;
}

/* module.name from sys.modules; dotted names are walked attribute by
 * attribute. A data type's standard module may be imported (the closed list
 * only names harmless stdlib modules); nothing else ever is. */
static PyObject *resolve(const char *module, const char *name, bool may_import)
{
	PyObject *key, *obj;

	/* NULL: a name PyUnicode_AsUTF8() could not encode (a lone surrogate
	 * the worker wrote into an exception descriptor), its error set. */
	if (!module || !name)
		return NULL;
	key = PyUnicode_FromString(module);
	if (!key)
		return NULL;
	obj = PyImport_GetModule(key);
	if (!obj && !PyErr_Occurred() && may_import)
		obj = PyImport_Import(key);
	Py_DECREF(key);
	if (!obj) {
		if (!PyErr_Occurred())
			PyErr_Format(sb_exc_class(SB_EXC_RESTRICTED_UNPICKLING),
				     "module '%s' is not loaded in this process (the result guard "
				     "never imports a module the sandbox names)",
				     module);
		return NULL;
	}
	return sb_py_getattr_path(obj, name);
}

/* Constructors of the closed list that a few bytes can make cost unbounded
 * time or memory in the caller, with the GIL held: Fraction("1e999999999")
 * computes 10**999999999, bytearray(1 << 40) allocates a terabyte, Decimal
 * of an int is quadratic in the int's size and so is Fraction's gcd. In the
 * fail-closed channels find_class hands out a check in their place, which
 * admits the arguments CPython's own pickling writes and calls the class
 * (the names are sb_result_checked_constructor()'s; the prescan makes sure
 * the check is only ever called, never kept as a value). NEWOBJ, which needs
 * the class itself, is never written for these three. */
#define FRACTION_MAX_BITS (1u << 20)

static bool fraction_args(PyObject *args)
{
	size_t bits = 0;

	if (PyTuple_GET_SIZE(args) < 1 || PyTuple_GET_SIZE(args) > 2)
		return false;
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
		PyObject *a = PyTuple_GET_ITEM(args, i);
		size_t n;

		if (!PyLong_CheckExact(a))
			return false;
		n = _PyLong_NumBits(a);
		if (n == (size_t)-1) {
			PyErr_Clear();
			return false;
		}
		bits += n;
	}
	return bits <= FRACTION_MAX_BITS;
}

static bool decimal_args(PyObject *args)
{
	return PyTuple_GET_SIZE(args) == 1 && PyUnicode_CheckExact(PyTuple_GET_ITEM(args, 0));
}

static bool bytearray_args(PyObject *args)
{
	return PyTuple_GET_SIZE(args) == 0 ||
	       (PyTuple_GET_SIZE(args) == 1 && PyBytes_CheckExact(PyTuple_GET_ITEM(args, 0)));
}

static const struct {
	const char *module, *name;
	bool (*admits)(PyObject *args);
	const char *admitted;
} checked[] = {
    {"fractions", "Fraction", fraction_args, "two integers of at most 2^20 bits together"},
    {"decimal", "Decimal", decimal_args, "one str"},
    {"builtins", "bytearray", bytearray_args, "bytes"},
};

static PyObject *checked_call(size_t i, PyObject *cls, PyObject *args)
{
	if (!checked[i].admits(args))
		return PyErr_Format(
		    sb_exc_class(SB_EXC_RESTRICTED_UNPICKLING),
		    "%s.%s with arguments pickle never writes for it (admitted: %s; "
		    "others can cost unbounded time or memory)",
		    checked[i].module, checked[i].name, checked[i].admitted);
	return PyObject_Call(cls, args, NULL);
}

static PyObject *checked_fraction(PyObject *cls, PyObject *args)
{
	return checked_call(0, cls, args);
}

/* Decimal("garbage") sets InvalidOperation in the thread's decimal context,
 * a flag the caller's own arithmetic may read: the conversion gets a context
 * of its own. */
static PyObject *checked_decimal(PyObject *cls, PyObject *args)
{
	PyObject *decimal, *ctx, *with_ctx, *v = NULL;

	if (!decimal_args(args))
		return checked_call(1, cls, args);
	/* Loaded: cls is its Decimal. */
	decimal = PyImport_ImportModule("decimal");
	ctx = decimal ? PyObject_CallMethod(decimal, "Context", NULL) : NULL;
	Py_XDECREF(decimal);
	if (!ctx)
		return NULL;
	with_ctx = PyTuple_Pack(2, PyTuple_GET_ITEM(args, 0), ctx);
	if (with_ctx)
		v = PyObject_Call(cls, with_ctx, NULL);
	Py_XDECREF(with_ctx);
	Py_DECREF(ctx);
	return v;
}

static PyObject *checked_bytearray(PyObject *cls, PyObject *args)
{
	return checked_call(2, cls, args);
}

static PyMethodDef checked_defs[] = {
    {"Fraction", checked_fraction, METH_VARARGS, NULL},
    {"Decimal", checked_decimal, METH_VARARGS, NULL},
    {"bytearray", checked_bytearray, METH_VARARGS, NULL},
};

/* The class, or its check (both steal cls). */
static PyObject *constructor(const char *module, const char *name, PyObject *cls)
{
	for (size_t i = 0; i < ELEMENTSOF(checked); i++)
		if (streq(module, checked[i].module) && streq(name, checked[i].name)) {
			PyObject *f = PyCFunction_New(&checked_defs[i], cls);

			Py_DECREF(cls);
			return f;
		}
	return cls;
}

static PyObject *find_class(enum sb_result_channel channel, PyObject *args)
{
	const char *module, *name;
	PyObject *obj;
	bool data;

	if (!PyArg_ParseTuple(args, "ss:find_class", &module, &name))
		return NULL;
	data = sb_result_data_type(module, name);
	if (channel == SB_CHANNEL_DATA_ONLY && !data) {
		PyErr_Format(sb_exc_class(SB_EXC_RESTRICTED_UNPICKLING),
			     "global '%s.%s' is not a value type of remote-result-mode=data-only",
			     module, name);
		return NULL;
	}
	if (channel != SB_CHANNEL_OBJECTS_NOGUARD && sb_result_denied_global(module, name)) {
		PyErr_Format(sb_exc_class(SB_EXC_RESTRICTED_UNPICKLING),
			     "global '%s.%s' is in the result guard's denylist", module, name);
		return NULL;
	}
	obj = resolve(module, name, data);
	/* Exception, not BaseException: SystemExit, KeyboardInterrupt,
	 * GeneratorExit or EvalInterrupted rebuilt here would be raised in the
	 * caller as such (a worker that names its class builtins.SystemExit
	 * would end the caller), also from a __cause__ or a group member. */
	if (obj && channel == SB_CHANNEL_EXCEPTION && !data &&
	    !(PyType_Check(obj) &&
	      PyType_IsSubtype((PyTypeObject *)obj, (PyTypeObject *)PyExc_Exception))) {
		PyErr_Format(sb_exc_class(SB_EXC_RESTRICTED_UNPICKLING),
			     "global '%s.%s' is not an Exception class (the exception channel "
			     "admits only those and data)",
			     module, name);
		Py_CLEAR(obj);
	}
	return obj && data && (channel == SB_CHANNEL_DATA_ONLY || channel == SB_CHANNEL_EXCEPTION)
		   ? constructor(module, name, obj)
		   : obj;
}

static PyObject *find_data(PyObject *self _unused_, PyObject *args)
{
	return find_class(SB_CHANNEL_DATA_ONLY, args);
}

static PyObject *find_objects(PyObject *self _unused_, PyObject *args)
{
	return find_class(SB_CHANNEL_OBJECTS, args);
}

static PyObject *find_any(PyObject *self _unused_, PyObject *args)
{
	return find_class(SB_CHANNEL_OBJECTS_NOGUARD, args);
}

static PyObject *find_exception(PyObject *self _unused_, PyObject *args)
{
	return find_class(SB_CHANNEL_EXCEPTION, args);
}

static PyMethodDef data_methods[] = {{"find_class", find_data, METH_VARARGS, NULL}, {0}};
static PyMethodDef objects_methods[] = {{"find_class", find_objects, METH_VARARGS, NULL}, {0}};
static PyMethodDef any_methods[] = {{"find_class", find_any, METH_VARARGS, NULL}, {0}};
static PyMethodDef exception_methods[] = {{"find_class", find_exception, METH_VARARGS, NULL}, {0}};

/* One subclass of _pickle.Unpickler per channel: the policy is the type's,
 * not a field a concurrent call could change. */
static PyObject *unpicklers[4];

static PyObject *unpickler_type(enum sb_result_channel channel)
{
	static PyMethodDef *const methods[] = {
	    [SB_CHANNEL_DATA_ONLY] = data_methods,
	    [SB_CHANNEL_OBJECTS] = objects_methods,
	    [SB_CHANNEL_OBJECTS_NOGUARD] = any_methods,
	    [SB_CHANNEL_EXCEPTION] = exception_methods,
	};
	PyObject *pickle, *base, *bases;

	if (unpicklers[channel])
		return unpicklers[channel];
	pickle = PyImport_ImportModule("_pickle");
	base = pickle ? PyObject_GetAttrString(pickle, "Unpickler") : NULL;
	Py_XDECREF(pickle);
	if (!base)
		return NULL;
	bases = PyTuple_Pack(1, base);
	Py_DECREF(base);
	if (!bases)
		return NULL;
	{
		PyType_Slot slots[] = {{Py_tp_methods, methods[channel]}, {0, NULL}};
		PyType_Spec spec = {
		    .name = "pysandboxes._core.RestrictedUnpickler",
		    .flags = Py_TPFLAGS_DEFAULT,
		    .slots = slots,
		};

		unpicklers[channel] = PyType_FromSpecWithBases(&spec, bases);
	}
	Py_DECREF(bases);
	return unpicklers[channel];
}

static PyObject *load(const char *data, size_t len, enum sb_result_channel channel)
{
	PyObject *type = unpickler_type(channel), *io, *file, *u, *v = NULL;

	if (!type)
		return NULL;
	io = PyImport_ImportModule("_io");
	file = io ? PyObject_CallMethod(io, "BytesIO", "y#", data, (Py_ssize_t)len) : NULL;
	Py_XDECREF(io);
	if (!file)
		return NULL;
	u = PyObject_CallFunctionObjArgs(type, file, NULL);
	if (u) {
		v = PyObject_CallMethod(u, "load", NULL);
		Py_DECREF(u);
	}
	Py_DECREF(file);
	return v;
}

/* Data-only: exactly the listed types, never a subclass (a subclass brings
 * its own methods, which the caller would then run). */
static int check_graph(PyObject *v, PyObject *seen, int depth, const char *what)
{
	PyTypeObject *t = Py_TYPE(v);
	int r = 0;

	if (depth > GRAPH_MAX_DEPTH) {
		refused(what, "data nested deeper than %d levels", GRAPH_MAX_DEPTH);
		return -1;
	}
	if (v == Py_None || t == &PyBool_Type || t == &PyLong_Type || t == &PyFloat_Type ||
	    t == &PyComplex_Type || t == &PyUnicode_Type || t == &PyBytes_Type ||
	    t == &PyByteArray_Type)
		return 0;
	if (t == &PyList_Type || t == &PyTuple_Type || t == &PyDict_Type || t == &PySet_Type ||
	    t == &PyFrozenSet_Type) {
		PyObject *iter, *item;

		r = sb_py_visit_once(seen, v);
		if (r != 0)
			return r < 0 ? -1 : 0;
		if (t == &PyDict_Type) {
			PyObject *key, *value;
			Py_ssize_t pos = 0;

			while (PyDict_Next(v, &pos, &key, &value))
				if (check_graph(key, seen, depth + 1, what) < 0 ||
				    check_graph(value, seen, depth + 1, what) < 0)
					return -1;
			return 0;
		}
		iter = PyObject_GetIter(v);
		if (!iter)
			return -1;
		while (r == 0 && (item = PyIter_Next(iter))) {
			r = check_graph(item, seen, depth + 1, what);
			Py_DECREF(item);
		}
		Py_DECREF(iter);
		return r < 0 || PyErr_Occurred() ? -1 : 0;
	}
	{
		PyObject *module = PyObject_GetAttrString((PyObject *)t, "__module__");
		PyObject *qualname = PyObject_GetAttrString((PyObject *)t, "__qualname__");
		const char *m = module && PyUnicode_Check(module) ? PyUnicode_AsUTF8(module) : NULL;
		const char *q =
		    qualname && PyUnicode_Check(qualname) ? PyUnicode_AsUTF8(qualname) : NULL;
		bool ok = false;

		if (m && q && sb_result_data_type(m, q)) {
			PyObject *cls = resolve(m, q, false);

			ok = cls == (PyObject *)t;
			Py_XDECREF(cls);
		}
		PyErr_Clear();
		if (!ok)
			refused(what,
				"an object of class '%s.%s' is not a value type of "
				"remote-result-mode=data-only",
				m ? m : "?", q ? q : t->tp_name);
		Py_XDECREF(module);
		Py_XDECREF(qualname);
		return ok ? 0 : -1;
	}
}

static const char *channel_name(enum sb_result_channel channel)
{
	switch (channel) {
	case SB_CHANNEL_DATA_ONLY:
		return "remote-result-mode=data-only";
	case SB_CHANNEL_OBJECTS:
		return "remote-result-mode=objects";
	case SB_CHANNEL_OBJECTS_NOGUARD:
		return "remote-result-mode=objects, remote-result-guard=false";
	case SB_CHANNEL_EXCEPTION:
		return "the exception channel";
	}
	return "?";
}

PyObject *sb_unpickle(const char *data, size_t len, size_t limit, enum sb_result_channel channel,
		      const char *what)
{
	char err[512];
	PyObject *v, *seen;
	int r;

	if (len > limit)
		return refused(what, "%zu bytes, over the limit of %zu bytes (max_result_size)",
			       len, limit);
	struct sb_prescan_limits limits = sb_prescan_default_limits;

	/* max_result_size is the caller's: the byte budget follows it. */
	limits.max_bytes = limit;
	r = sb_result_prescan(data, len, channel, &limits, err, sizeof(err));
	if (r == -ENOMEM)
		return PyErr_NoMemory();
	if (r < 0)
		return strstr(err, "remote-result-")
			   ? refused(what, "%s", err)
			   : refused(what, "%s (%s)", err, channel_name(channel));
	v = load(data, len, channel);
	if (!v) {
		if (!PyErr_ExceptionMatches(sb_exc_class(SB_EXC_RESTRICTED_UNPICKLING))) {
			PyObject *et, *ev, *etb;

			PyErr_Fetch(&et, &ev, &etb);
			PyErr_NormalizeException(&et, &ev, &etb);
			PyErr_Format(sb_exc_class(SB_EXC_RESTRICTED_UNPICKLING),
				     "the reply of the sandboxed call %s could not be rebuilt: %S",
				     what, ev ? ev : Py_None);
			Py_XDECREF(et);
			Py_XDECREF(ev);
			Py_XDECREF(etb);
		}
		return NULL;
	}
	if (channel != SB_CHANNEL_DATA_ONLY)
		return v;
	seen = PySet_New(NULL);
	if (!seen || check_graph(v, seen, 0, what) < 0) {
		Py_XDECREF(seen);
		Py_DECREF(v);
		return NULL;
	}
	Py_DECREF(seen);
	return v;
}

static bool same_class(PyObject *exc, PyObject *module, PyObject *qualname)
{
	PyObject *m = PyObject_GetAttrString((PyObject *)Py_TYPE(exc), "__module__");
	PyObject *q = PyObject_GetAttrString((PyObject *)Py_TYPE(exc), "__qualname__");
	bool same = m && q && PyObject_RichCompareBool(m, module, Py_EQ) == 1 &&
		    PyObject_RichCompareBool(q, qualname, Py_EQ) == 1;

	Py_XDECREF(m);
	Py_XDECREF(q);
	PyErr_Clear();
	return same;
}

/* What the caller may raise: an Exception (never a BaseException the worker
 * chose: SystemExit would end the caller), without the __cause__ and
 * __context__ a BUILD may have set (they never cross), and for a group,
 * members that pass the same test. The prescan bounds the nesting. */
static bool raisable(PyObject *exc, int depth)
{
	PyObject *members;
	bool ok = true;

	if (depth > GRAPH_MAX_DEPTH || !PyObject_TypeCheck(exc, (PyTypeObject *)PyExc_Exception))
		return false;
	PyException_SetCause(exc, NULL);
	PyException_SetContext(exc, NULL);
	((PyBaseExceptionObject *)exc)->suppress_context = 0;
	if (PyObject_TypeCheck(exc, (PyTypeObject *)PyExc_BaseExceptionGroup) <= 0)
		return true;
	members = PyObject_GetAttrString(exc, "exceptions");
	if (!members || !PyTuple_Check(members))
		ok = false;
	for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(members); i++)
		ok = raisable(PyTuple_GET_ITEM(members, i), depth + 1);
	Py_XDECREF(members);
	PyErr_Clear();
	return ok;
}

/* The rich form: the exception as pickled by the worker, through the
 * fail-closed channel. NULL without an error when it cannot be used. */
static PyObject *rich_exception(PyObject *rich, PyObject *module, PyObject *qualname,
				const char *what)
{
	PyObject *exc;

	if (!PyBytes_Check(rich))
		return NULL;
	exc = sb_unpickle(PyBytes_AS_STRING(rich), (size_t)PyBytes_GET_SIZE(rich), SIZE_MAX,
			  SB_CHANNEL_EXCEPTION, what);
	if (exc && (!PyExceptionInstance_Check(exc) || !same_class(exc, module, qualname) ||
		    !raisable(exc, 0)))
		Py_CLEAR(exc);
	PyErr_Clear();
	return exc;
}

/* Whether the descriptor names a BaseException that is not an Exception in
 * this process (SystemExit under an exception frame: a worker lying about
 * which frame it sends). */
static bool names_base_exception(PyObject *module, PyObject *qualname)
{
	PyObject *cls = resolve(PyUnicode_AsUTF8(module), PyUnicode_AsUTF8(qualname), false);
	bool base = cls && PyType_Check(cls) &&
		    PyType_IsSubtype((PyTypeObject *)cls, (PyTypeObject *)PyExc_BaseException) &&
		    !PyType_IsSubtype((PyTypeObject *)cls, (PyTypeObject *)PyExc_Exception);

	Py_XDECREF(cls);
	PyErr_Clear();
	return base;
}

/* The descriptor fallback: the class from sys.modules, made with __new__;
 * the message survives, the attributes do not. */
static PyObject *bare_exception(PyObject *module, PyObject *qualname, PyObject *message)
{
	PyObject *cls = resolve(PyUnicode_AsUTF8(module), PyUnicode_AsUTF8(qualname), false);
	PyObject *exc = NULL, *args;

	if (cls && PyType_Check(cls) &&
	    PyType_IsSubtype((PyTypeObject *)cls, (PyTypeObject *)PyExc_Exception)) {
		exc = PyObject_CallMethod(cls, "__new__", "O", cls);
		if (exc && !PyExceptionInstance_Check(exc))
			Py_CLEAR(exc);
		args = exc ? PyTuple_Pack(1, message) : NULL;
		if (args && PyObject_SetAttrString(exc, "args", args) < 0)
			Py_CLEAR(exc);
		Py_XDECREF(args);
	}
	Py_XDECREF(cls);
	PyErr_Clear();
	return exc;
}

static void annotate(PyObject *exc, PyObject *denials, PyObject *tb)
{
	if (PyList_Check(denials) && PyList_GET_SIZE(denials) > 0 &&
	    PyObject_SetAttrString(exc, SB_DENIALS_ATTR, denials) < 0)
		PyErr_Clear();
	if (PyUnicode_Check(tb) && PyUnicode_GET_LENGTH(tb) > 0) {
		PyObject *note = PyUnicode_FromFormat("Traceback in the sandbox:\n%U", tb);
		PyObject *r = note ? PyObject_CallMethod(exc, "add_note", "O", note) : NULL;

		Py_XDECREF(r);
		Py_XDECREF(note);
		PyErr_Clear();
	}
}

PyObject *sb_raise_remote_exception(const char *data, size_t len, bool base, const char *what)
{
	PyObject *desc = sb_unpickle(data, len, SIZE_MAX, SB_CHANNEL_DATA_ONLY, what);
	PyObject *module, *qualname, *message, *denials, *tb, *rich, *exc = NULL;

	if (!desc)
		return NULL;
	if (!PyArg_ParseTuple(desc, "UUUO!UO", &module, &qualname, &message, &PyList_Type, &denials,
			      &tb, &rich)) {
		Py_DECREF(desc);
		PyErr_Clear();
		return refused(what, "a malformed exception descriptor");
	}
	if (base || names_base_exception(module, qualname)) {
		exc = PyObject_CallFunction(
		    sb_exc_class(SB_EXC_BASE_EXCEPTION), "N",
		    PyUnicode_FromFormat("%U.%U: %U (raised by the sandboxed call %s; the "
					 "sandbox keeps running)",
					 module, qualname, message, what));
	} else {
		exc = rich_exception(rich, module, qualname, what);
		if (!exc)
			exc = bare_exception(module, qualname, message);
		if (!exc)
			exc = PyObject_CallFunction(
			    sb_exc_class(SB_EXC_PROTOCOL), "N",
			    PyUnicode_FromFormat("%U.%U: %U", module, qualname, message));
	}
	/* Whatever the frame said, the caller never raises a BaseException
	 * that is not an Exception from the worker. */
	if (exc && !PyObject_TypeCheck(exc, (PyTypeObject *)PyExc_Exception)) {
		Py_SETREF(exc,
			  PyObject_CallFunction(
			      sb_exc_class(SB_EXC_BASE_EXCEPTION), "N",
			      PyUnicode_FromFormat("%U.%U: %U (raised by the sandboxed call %s)",
						   module, qualname, message, what)));
	}
	if (exc) {
		annotate(exc, denials, tb);
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
	Py_DECREF(desc);
	return NULL;
}
