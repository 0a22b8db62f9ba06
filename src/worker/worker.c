/* SPDX-License-Identifier: MIT */
/* The partial-mode worker loop. The machinery (unpickling a request, finding
 * and importing the function's module, pickling the reply, formatting a
 * traceback) runs in a runtime section of the guard: it is not the program's
 * and is neither charged nor refused. The module's body, the function and
 * whatever they call run in their own frames and are guarded as usual. */
#include "worker.h"

#include "py-helpers.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "deferred-imports.h"
#include "exceptions.h"
#include "frame.h"
#include "guard-observer.h"
#include "guard-runtime.h"
#include "result-guard.h"
#include "util.h"

/* Pinned so that both sides agree whatever their defaults (3.11: 4 by default,
 * 5 available since 3.8). */
#define PICKLE_PROTOCOL 5
/* How long the parent has to send the configuration after starting us. */
#define CONFIG_TIMEOUT_MS 30000

int sb_worker_parse_fd(const char *text, int *ret_fd)
{
	char *end;
	long v;

	if (!text || !*text)
		return -EINVAL;
	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || *end || v < 0 || v > 65535)
		return -EINVAL;
	*ret_fd = (int)v;
	return 0;
}

void sb_worker_done(struct sb_worker *w)
{
	if (!w)
		return;
	sb_strv_free(w->paths);
	sb_strv_free(w->preload);
	free(w->main_path);
	free(w->main_module);
	free(w->init_module);
	free(w->init_qualname);
	free(w->config);
	*w = (struct sb_worker){.fd = -1};
}

static int worker_fd = -1;

/* A parent that goes away while a call runs: nobody waits for the result. The
 * socket signals readability (SIGIO) for a request or for the end of the
 * stream; only the end makes us leave, without running anything else. */
static void on_sigio(int sig _unused_)
{
	int saved = errno;
	char c;
	ssize_t n = recv(worker_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno == ECONNRESET))
		_exit(0);
	errno = saved;
}

/* The SIGIO above needs the worker's cooperation: code in it can block or
 * ignore SIGIO, or clear O_ASYNC, and the parent's SIGKILL would leave it
 * running for ever. The kernel's parent-death signal cannot be undone from
 * in here: PR_SET_PDEATHSIG is refused by seccomp for the program, a change
 * of uid (which clears it) too, and python-sb's own change of user sets it
 * again (privileges.c). What runs between us and the program (python-sb-
 * supervise, the PID namespace's init, a wrapper) dies with us in turn. The
 * parent spawns its workers from a thread that lasts as long as it does
 * (src/partial/spawn.c): the signal comes when the thread that forked ends.
 *
 * The parent may have died before the prctl(): then no signal will come.
 * Its pid is the channel's peer (socketpair() records the creator's): still
 * our parent after the prctl(), it was alive when the signal was armed. */
static int die_with_parent(int fd, char **reterr)
{
	struct ucred peer = {0};
	socklen_t len = sizeof(peer);
	pid_t parent;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0)
		return sb_error(reterr, -errno, "--pysandboxes-worker: the channel has no peer: %s",
				strerror(errno));
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return sb_error(reterr, -errno,
				"--pysandboxes-worker: cannot arrange to die with the parent: %s",
				strerror(errno));
	parent = getppid();
	if (parent != peer.pid)
		return sb_error(reterr, -ESRCH,
				"--pysandboxes-worker: the process that opened the channel (%d) is "
				"not this worker's parent (%d): it is gone, or python-sb was not "
				"started by the pysandboxes package",
				(int)peer.pid, (int)parent);
	return 0;
}

static int parse_limit(const char *v, size_t *ret)
{
	unsigned long long n;

	if (sb_safe_atou64(v, &n) < 0 || n == 0 || n > SB_FRAME_SETTING_MAX)
		return -EINVAL;
	*ret = (size_t)n;
	return 0;
}

static int parse_config(struct sb_worker *w, char *data, size_t len)
{
	for (char *p = data; p < data + len; p += strlen(p) + 1) {
		const char *v;
		char **slot = NULL;
		struct stat st;

		if ((v = startswith(p, "result-limit="))) {
			if (parse_limit(v, &w->result_limit) < 0)
				return -EINVAL;
			continue;
		}
		if ((v = startswith(p, "call-limit="))) {
			if (parse_limit(v, &w->call_limit) < 0)
				return -EINVAL;
			continue;
		}
		if ((v = startswith(p, "preload="))) {
			if (sb_strv_push(&w->preload, v) < 0)
				return -ENOMEM;
			continue;
		}
		if ((v = startswith(p, "path="))) {
			/* Only existing directories become grants. */
			if (v[0] == '/' && stat(v, &st) == 0 && S_ISDIR(st.st_mode) &&
			    sb_strv_push(&w->paths, v) < 0)
				return -ENOMEM;
			continue;
		}
		if ((v = startswith(p, "main=")))
			slot = &w->main_path;
		else if ((v = startswith(p, "main-module=")))
			slot = &w->main_module;
		else if ((v = startswith(p, "init-module=")))
			slot = &w->init_module;
		else if ((v = startswith(p, "init-qualname=")))
			slot = &w->init_qualname;
		else
			return -EINVAL;
		free(*slot);
		*slot = strdup(v);
		if (!*slot)
			return -ENOMEM;
	}
	return 0;
}

int sb_worker_setup(int fd, const char *config, size_t config_len, struct sb_worker *ret,
		    char **reterr)
{
	_cleanup_free_ char *data = NULL;
	struct sb_worker w = {
	    .fd = fd,
	    .result_limit = SB_RESULT_LIMIT,
	    .call_limit = SB_FRAME_HARD_MAX,
	};
	struct sigaction sa = {.sa_handler = on_sigio};
	struct stat st;
	size_t len;
	char type;
	int r, flags;

	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		*reterr = strdup("--pysandboxes-worker: the descriptor is not a socket (this "
				 "option is for the pysandboxes package, not for users)");
		return -EBADF;
	}
	/* Under a wrapper (config given), our parent is the wrapper's process:
	 * the launching python-sb, which the caller spawned, did this; bwrap
	 * dies with it (--die-with-parent), and the program with a supervisor
	 * that holds the status pipe's SIGKILL (main.c's run()). */
	if (!config) {
		r = die_with_parent(fd, reterr);
		if (r < 0)
			return r;
	}
	/* Nothing the sandboxed code starts may inherit the channel. */
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	if (config) {
		data = malloc(config_len + 1);
		if (!data)
			return -ENOMEM;
		memcpy(data, config, config_len);
		data[config_len] = '\0';
		len = config_len;
	} else {
		/* The configuration names every sys.path entry and @sandbox module. */
		r = sb_frame_read(fd, &type, &data, &len, 16u << 20, CONFIG_TIMEOUT_MS);
		if (r < 0 || type != SB_FRAME_CONFIG) {
			*reterr = strdup("--pysandboxes-worker: no configuration from the parent");
			return r < 0 ? r : -EPROTO;
		}
	}
	r = parse_config(&w, data, len);
	if (r >= 0) {
		w.config = malloc(len ? len : 1);
		if (w.config) {
			memcpy(w.config, data, len);
			w.config_len = len;
		} else {
			r = -ENOMEM;
		}
	}
	if (r < 0) {
		sb_worker_done(&w);
		*reterr = strdup("--pysandboxes-worker: bad configuration from the parent");
		return r;
	}
	worker_fd = fd;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	flags = fcntl(fd, F_GETFL);
	if (sigaction(SIGIO, &sa, NULL) < 0 || fcntl(fd, F_SETOWN, getpid()) < 0 || flags < 0 ||
	    fcntl(fd, F_SETFL, flags | O_ASYNC) < 0) {
		r = -errno;
		sb_worker_done(&w);
		*reterr = strdup("--pysandboxes-worker: cannot watch the channel");
		return r;
	}
	*ret = w;
	return 0;
}

int sb_worker_send_start_error(int fd, const char *kind, const char *const *fields, size_t n)
{
	_cleanup_free_ char *data = NULL;
	size_t len = strlen(kind) + 1;
	char *p;

	for (size_t i = 0; i < n; i++)
		len += strlen(fields[i]) + 1;
	data = malloc(len);
	if (!data)
		return -ENOMEM;
	p = stpcpy(data, kind) + 1;
	for (size_t i = 0; i < n; i++)
		p = stpcpy(p, fields[i]) + 1;
	return sb_frame_write(fd, SB_FRAME_START_ERROR, data, len);
}

/* What the serving loop holds. */
static struct {
	int fd;
	PyObject *dumps;	    /* _pickle.dumps */
	PyObject *loads;	    /* a _pickle.Unpickler for the requests */
	PyObject *bytes_io;	    /* _io.BytesIO */
	PyObject *format_exception; /* traceback.format_exception */
	PyObject *loop;		    /* an asyncio loop, made for the first coroutine */
	bool channel_broken;
	bool result_guard;   /* remote-result-guard, for learning's objects check */
	size_t result_limit; /* the caller's max_result_size */
} srv = {.fd = -1, .result_limit = SB_RESULT_LIMIT};

/* sys.stdout and sys.stderr of the worker: each write is a frame, so the
 * parent replays the output in order, on the right stream, during the call. */
typedef struct {
	PyObject_HEAD char type;
} Stream;

static int send_frame(char type, const void *data, size_t len)
{
	int r = sb_frame_write(srv.fd, type, data, len);

	if (r < 0)
		srv.channel_broken = true;
	return r;
}

static PyObject *stream_write(Stream *self, PyObject *text)
{
	Py_ssize_t len, n_chars;
	const char *utf8;
	PyObject *bytes;

	if (!PyUnicode_Check(text)) {
		PyErr_Format(PyExc_TypeError, "write() argument must be str, not %.100s",
			     Py_TYPE(text)->tp_name);
		return NULL;
	}
	n_chars = PyUnicode_GET_LENGTH(text);
	bytes = PyUnicode_AsEncodedString(text, "utf-8", "backslashreplace");
	if (!bytes)
		return NULL;
	utf8 = PyBytes_AS_STRING(bytes);
	len = PyBytes_GET_SIZE(bytes);
	for (Py_ssize_t off = 0; off < len; off += SB_OUTPUT_CHUNK) {
		size_t n =
		    (size_t)(len - off) < SB_OUTPUT_CHUNK ? (size_t)(len - off) : SB_OUTPUT_CHUNK;

		if (send_frame(self->type, utf8 + off, n) < 0) {
			Py_DECREF(bytes);
			PyErr_SetString(PyExc_BrokenPipeError, "the pysandboxes parent is gone");
			return NULL;
		}
	}
	Py_DECREF(bytes);
	return PyLong_FromSsize_t(n_chars);
}

static PyObject *stream_none(Stream *self _unused_, PyObject *unused _unused_)
{
	Py_RETURN_NONE;
}

static PyObject *stream_false(Stream *self _unused_, PyObject *unused _unused_)
{
	Py_RETURN_FALSE;
}

static PyObject *stream_true(Stream *self _unused_, PyObject *unused _unused_)
{
	Py_RETURN_TRUE;
}

static PyObject *stream_fileno(Stream *self _unused_, PyObject *unused _unused_)
{
	PyErr_SetString(PyExc_OSError, "the sandboxed call's output has no file descriptor");
	return NULL;
}

static PyObject *stream_get_encoding(Stream *self _unused_, void *closure _unused_)
{
	return PyUnicode_FromString("utf-8");
}

static PyObject *stream_get_errors(Stream *self _unused_, void *closure _unused_)
{
	return PyUnicode_FromString("backslashreplace");
}

static PyObject *stream_get_closed(Stream *self _unused_, void *closure _unused_)
{
	Py_RETURN_FALSE;
}

static PyMethodDef stream_methods[] = {
    {"write", (PyCFunction)stream_write, METH_O, NULL},
    {"flush", (PyCFunction)stream_none, METH_NOARGS, NULL},
    {"isatty", (PyCFunction)stream_false, METH_NOARGS, NULL},
    {"readable", (PyCFunction)stream_false, METH_NOARGS, NULL},
    {"seekable", (PyCFunction)stream_false, METH_NOARGS, NULL},
    {"writable", (PyCFunction)stream_true, METH_NOARGS, NULL},
    {"fileno", (PyCFunction)stream_fileno, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef stream_getset[] = {
    {"encoding", (getter)stream_get_encoding, NULL, NULL, NULL},
    {"errors", (getter)stream_get_errors, NULL, NULL, NULL},
    {"closed", (getter)stream_get_closed, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject stream_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pysandboxes.WorkerStream",
    .tp_basicsize = sizeof(Stream),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A sandboxed call's stdout or stderr, sent to the caller as it is written.",
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
};

static int install_stream(const char *name, char type)
{
	Stream *s = PyObject_New(Stream, &stream_type);
	int r;

	if (!s)
		return -1;
	s->type = type;
	r = PySys_SetObject(name, (PyObject *)s);
	Py_DECREF(s);
	return r;
}

static PyObject *attr_of(const char *module, const char *name)
{
	PyObject *m = PyImport_ImportModule(module), *v;

	if (!m)
		return NULL;
	v = PyObject_GetAttrString(m, name);
	Py_DECREF(m);
	return v;
}

static int add_sys_paths(const struct sb_worker *w)
{
	PyObject *path = PySys_GetObject("path"); /* borrowed */

	if (!path || !PyList_Check(path))
		return 0;
	for (char **p = w->paths; p && *p; p++) {
		PyObject *s = PyUnicode_DecodeFSDefault(*p);
		int has;

		if (!s)
			return -1;
		has = PySequence_Contains(path, s);
		if (has == 0)
			has = PyList_Append(path, s);
		Py_DECREF(s);
		if (has < 0)
			return -1;
	}
	return 0;
}

/* The worker being served (for the request unpickler's find_class). */
static const struct sb_worker *serving;

static PyObject *request_unpickler_type(PyObject *base);

static int setup(const struct sb_worker *w)
{
	struct sb_runtime_section section;
	int r = -1;

	serving = w;
	srv.fd = w->fd;
	srv.result_limit = w->result_limit;
	if (PyType_Ready(&stream_type) < 0)
		return -1;
	sb_guard_runtime_enter(&section);
	srv.dumps = attr_of("_pickle", "dumps");
	/* The C Unpickler type, not _pickle.loads: the guard wraps loads (the
	 * deserialization category), and the worker's unpickling of the
	 * parent's request is not the program's call. */
	{
		PyObject *base = srv.dumps ? attr_of("_pickle", "Unpickler") : NULL;

		srv.loads = base ? request_unpickler_type(base) : NULL;
		Py_XDECREF(base);
	}
	srv.bytes_io = srv.loads ? attr_of("_io", "BytesIO") : NULL;
	srv.format_exception = srv.bytes_io ? attr_of("traceback", "format_exception") : NULL;
	if (srv.format_exception && add_sys_paths(w) == 0 && install_stream("stdout", 'O') == 0 &&
	    install_stream("stderr", 'E') == 0)
		r = 0;
	sb_guard_runtime_leave(&section);
	return r;
}

/* A module the parent names (the function's, or a class of the arguments),
 * imported by the worker's machinery: through the import system itself, not
 * builtins.__import__ (the guard's wrapper there would charge it to the
 * program). Call inside a runtime section. New reference. */
static PyObject *import_module(PyObject *name)
{
	PyObject *top = PyImport_ImportModuleLevelObject(name, NULL, NULL, NULL, 0);

	if (!top)
		return NULL;
	Py_DECREF(top);
	return PyImport_GetModule(name);
}

/* Functions of the parent's __main__ live in its script (or -m module), run
 * here as __mp_main__ as multiprocessing's spawn does: `if __name__ ==
 * "__main__"` blocks do not run again. importlib loads it, so that its
 * compilation is the import system's; its code is the program's. */
static PyObject *main_module(const struct sb_worker *w)
{
	struct sb_runtime_section section;
	PyObject *mod = sb_guard_loaded_module("__mp_main__"), *util = NULL, *spec = NULL;
	PyObject *loader = NULL, *r = NULL;
	_cleanup_free_ char *origin = NULL;

	if (mod || PyErr_Occurred())
		return mod;
	if (!w->main_path && !w->main_module) {
		PyErr_SetString(sb_exc_class(SB_EXC_PROTOCOL),
				"the function is defined in __main__ but the parent runs no script "
				"file (-c or the REPL): define it in a module");
		return NULL;
	}
	sb_guard_runtime_enter(&section);
	util = PyImport_ImportModule("importlib.util");
	if (util && w->main_module) {
		/* -m pkg.mod: its file, with pkg as the package for relative
		 * imports. */
		PyObject *found = PyObject_CallMethod(util, "find_spec", "s", w->main_module);
		PyObject *o =
		    found && found != Py_None ? PyObject_GetAttrString(found, "origin") : NULL;

		if (o && PyUnicode_Check(o) && PyUnicode_AsUTF8(o))
			origin = strdup(PyUnicode_AsUTF8(o));
		if (!origin && !PyErr_Occurred())
			PyErr_Format(sb_exc_class(SB_EXC_PROTOCOL),
				     "the parent's main module %s cannot be found here",
				     w->main_module);
		Py_XDECREF(o);
		Py_XDECREF(found);
	}
	if (util && (origin || w->main_path))
		spec = PyObject_CallMethod(util, "spec_from_file_location", "ss", "__mp_main__",
					   origin ? origin : w->main_path);
	if (spec)
		mod = PyObject_CallMethod(util, "module_from_spec", "O", spec);
	if (mod && w->main_module) {
		const char *dot = strrchr(w->main_module, '.');
		PyObject *pkg = PyUnicode_FromStringAndSize(
		    w->main_module, dot ? (Py_ssize_t)(dot - w->main_module) : 0);

		if (!pkg || PyObject_SetAttrString(mod, "__package__", pkg) < 0)
			Py_CLEAR(mod);
		Py_XDECREF(pkg);
	}
	if (mod && PyDict_SetItemString(PyImport_GetModuleDict(), "__mp_main__", mod) < 0)
		Py_CLEAR(mod);
	loader = mod ? PyObject_GetAttrString(spec, "loader") : NULL;
	if (loader && sb_deferred_imports_begin(mod) == 0) {
		r = PyObject_CallMethod(loader, "exec_module", "O", mod);
		sb_deferred_imports_end();
	}
	sb_guard_runtime_leave(&section);
	if (!r && mod) {
		PyObject *et, *ev, *etb;

		PyErr_Fetch(&et, &ev, &etb);
		PyDict_DelItemString(PyImport_GetModuleDict(), "__mp_main__");
		PyErr_Clear();
		PyErr_Restore(et, ev, etb);
		Py_CLEAR(mod);
	}
	Py_XDECREF(r);
	Py_XDECREF(loader);
	Py_XDECREF(spec);
	Py_XDECREF(util);
	return mod;
}

/* The request's unpickler: the globals the parent's pickle names are
 * imported by the worker's machinery (the parent is trusted: spec section
 * 7); a class of the parent's __main__ is the script run as __mp_main__. */
static PyObject *request_find_class(PyObject *self _unused_, PyObject *args)
{
	PyObject *module, *obj;
	const char *name, *m;

	if (!PyArg_ParseTuple(args, "Us:find_class", &module, &name))
		return NULL;
	m = PyUnicode_AsUTF8(module);
	if (!m)
		return NULL;
	if (streq(m, "__main__") || streq(m, "__mp_main__"))
		obj = main_module(serving);
	else
		obj = import_module(module);
	return sb_py_getattr_path(obj, name);
}

static PyMethodDef request_methods[] = {
    {"find_class", request_find_class, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyObject *request_unpickler_type(PyObject *base)
{
	PyType_Slot slots[] = {{Py_tp_methods, request_methods}, {0, NULL}};
	PyType_Spec spec = {
	    .name = "pysandboxes.RequestUnpickler",
	    .flags = Py_TPFLAGS_DEFAULT,
	    .slots = slots,
	};
	PyObject *bases = PyTuple_Pack(1, base), *type;

	if (!bases)
		return NULL;
	type = PyType_FromSpecWithBases(&spec, bases);
	Py_DECREF(bases);
	return type;
}

static PyObject *find_function(const struct sb_worker *w, PyObject *module, PyObject *qualname)
{
	struct sb_runtime_section section;
	const char *m = PyUnicode_AsUTF8(module), *q = PyUnicode_AsUTF8(qualname);
	PyObject *obj;

	if (!m || !q)
		return NULL;
	if (strstr(q, "<locals>") || strstr(q, "<lambda>")) {
		PyErr_Format(sb_exc_class(SB_EXC_PROTOCOL),
			     "%s.%s cannot be found by name: @sandbox functions must be defined "
			     "at module level",
			     m, q);
		return NULL;
	}
	if (streq(m, "__main__") || streq(m, "__mp_main__")) {
		obj = main_module(w);
	} else {
		/* The request to import is ours; what the module's body imports
		 * runs in its frames and is the program's. */
		sb_guard_runtime_enter(&section);
		obj = import_module(module);
		sb_guard_runtime_leave(&section);
	}
	return sb_py_getattr_path(obj, q);
}

static PyObject *run_coroutine(PyObject *coro)
{
	if (!srv.loop) {
		struct sb_runtime_section section;
		PyObject *asyncio;

		sb_guard_runtime_enter(&section);
		asyncio = PyImport_ImportModule("asyncio");
		srv.loop = asyncio ? PyObject_CallMethod(asyncio, "new_event_loop", NULL) : NULL;
		if (srv.loop) {
			PyObject *r = PyObject_CallMethod(asyncio, "set_event_loop", "O", srv.loop);

			if (!r)
				Py_CLEAR(srv.loop);
			Py_XDECREF(r);
		}
		Py_XDECREF(asyncio);
		sb_guard_runtime_leave(&section);
		if (!srv.loop)
			return NULL;
	}
	return PyObject_CallMethod(srv.loop, "run_until_complete", "O", coro);
}

static PyObject *pickle(PyObject *obj)
{
	return PyObject_CallFunction(srv.dumps, "Oi", obj, PICKLE_PROTOCOL);
}

static int send_pickled(char type, PyObject *data)
{
	return send_frame(type, PyBytes_AS_STRING(data), (size_t)PyBytes_GET_SIZE(data));
}

static int send_text(char type, const char *fmt, ...) _printf_(2, 3);
static int send_text(char type, const char *fmt, ...)
{
	_cleanup_free_ char *text = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	return send_frame(type, text, (size_t)n);
}

static PyObject *str_or_repr(PyObject *exc)
{
	PyObject *s = PyObject_Str(exc);

	if (!s) {
		PyErr_Clear();
		s = PyUnicode_FromFormat("<%s: str() failed>", Py_TYPE(exc)->tp_name);
	}
	return s;
}

/* (module, qualname, message, denials, traceback, rich-pickle-or-None): the
 * rich form keeps the attributes when the parent can rebuild it; the rest is
 * what the parent falls back to (spec section 7). */
static PyObject *describe(PyObject *exc, bool with_rich)
{
	PyObject *type = (PyObject *)Py_TYPE(exc);
	PyObject *module = PyObject_GetAttrString(type, "__module__");
	PyObject *qualname = PyObject_GetAttrString(type, "__qualname__");
	PyObject *message = str_or_repr(exc);
	PyObject *denials = sb_exc_sandbox_denials(NULL, exc);
	PyObject *tb = NULL, *lines, *rich = NULL, *desc = NULL;

	if (!denials) {
		PyErr_Clear();
		denials = PyList_New(0);
	}
	lines = PyObject_CallFunction(srv.format_exception, "O", exc);
	if (lines) {
		PyObject *empty = PyUnicode_FromString("");

		tb = empty ? PyUnicode_Join(empty, lines) : NULL;
		Py_XDECREF(empty);
		Py_DECREF(lines);
	}
	if (!tb) {
		PyErr_Clear();
		tb = PyUnicode_FromString("");
	}
	if (with_rich) {
		rich = pickle(exc);
		if (!rich || PyBytes_GET_SIZE(rich) > (Py_ssize_t)srv.result_limit / 2) {
			PyErr_Clear();
			Py_CLEAR(rich);
		}
	}
	if (module && qualname && message && denials && tb)
		desc =
		    PyTuple_Pack(6, module, qualname, message, denials, tb, rich ? rich : Py_None);
	Py_XDECREF(module);
	Py_XDECREF(qualname);
	Py_XDECREF(message);
	Py_XDECREF(denials);
	Py_XDECREF(tb);
	Py_XDECREF(rich);
	return desc;
}

static void reply_exception(void)
{
	PyObject *et, *ev, *etb, *desc, *data = NULL;
	bool base;

	PyErr_Fetch(&et, &ev, &etb);
	PyErr_NormalizeException(&et, &ev, &etb);
	if (etb && ev)
		PyException_SetTraceback(ev, etb);
	base = !PyErr_GivenExceptionMatches(et, PyExc_Exception);
	/* Describing and pickling the exception run its methods (__str__,
	 * __reduce__): the program's, not a runtime section, so that a
	 * __reduce__ set to a C function (functools.partial(os.system, ...))
	 * is charged like any call the function makes. */
	desc = ev ? describe(ev, !base) : NULL;
	if (desc) {
		data = pickle(desc);
		if (data && PyBytes_GET_SIZE(data) > (Py_ssize_t)srv.result_limit) {
			/* A huge message or traceback: keep what identifies the error. */
			/* Py_BuildValue: "s" makes the strings inside the call, so none
			 * leaks and a failed one yields NULL rather than a NULL item. */
			PyObject *small = Py_BuildValue(
			    "(OOsOsO)", PyTuple_GET_ITEM(desc, 0), PyTuple_GET_ITEM(desc, 1),
			    "(message too long)", PyTuple_GET_ITEM(desc, 3), "", Py_None);

			Py_CLEAR(data);
			data = small ? pickle(small) : NULL;
			Py_XDECREF(small);
		}
	}
	if (data)
		send_pickled(base ? SB_FRAME_BASE_EXCEPTION : SB_FRAME_EXCEPTION, data);
	else {
		PyErr_Clear();
		send_text(SB_FRAME_PROTOCOL,
			  "the exception %s raised in the sandbox could not be "
			  "described",
			  et ? ((PyTypeObject *)et)->tp_name : "?");
	}
	Py_XDECREF(data);
	Py_XDECREF(desc);
	Py_XDECREF(et);
	Py_XDECREF(ev);
	Py_XDECREF(etb);
}

/* For the observer (learning, spec section 6): whether
 * remote-result-mode=data-only would have accepted this result, decided by
 * the parent's own prescan. A result that objects mode refuses too (the
 * denylist, a budget) is not charged to either mode: no learned line would
 * make it pass. */
static void note_result(PyObject *data)
{
	const char *p = PyBytes_AS_STRING(data);
	size_t len = (size_t)PyBytes_GET_SIZE(data);
	char what[256], err[256];

	if (sb_result_data_only_check(p, len, what, sizeof(what)) == 0) {
		sb_guard_note_result(NULL);
		return;
	}
	if (sb_result_prescan(p, len,
			      srv.result_guard ? SB_CHANNEL_OBJECTS : SB_CHANNEL_OBJECTS_NOGUARD,
			      NULL, err, sizeof(err)) == 0)
		sb_guard_note_result(what);
}

static void reply_value(PyObject *result, const char *what)
{
	/* Not a runtime section: pickling runs the result's __reduce__, the
	 * program's code (see reply_exception). */
	PyObject *data = pickle(result);

	if (!data) {
		PyObject *et, *ev, *etb, *msg;

		PyErr_Fetch(&et, &ev, &etb);
		PyErr_NormalizeException(&et, &ev, &etb);
		msg = ev ? str_or_repr(ev) : NULL;
		send_text(SB_FRAME_PROTOCOL, "the result of %s cannot be sent back: %s: %s", what,
			  et ? ((PyTypeObject *)et)->tp_name : "?",
			  msg ? PyUnicode_AsUTF8(msg) : "");
		PyErr_Clear();
		Py_XDECREF(msg);
		Py_XDECREF(et);
		Py_XDECREF(ev);
		Py_XDECREF(etb);
		return;
	}
	if (PyBytes_GET_SIZE(data) > (Py_ssize_t)srv.result_limit) {
		uint64_t size = (uint64_t)PyBytes_GET_SIZE(data);
		unsigned char le[8];

		for (int i = 0; i < 8; i++)
			le[i] = (unsigned char)(size >> (8 * i));
		send_frame(SB_FRAME_TOO_BIG, le, sizeof(le));
	} else {
		if (sb_guard_observes_results())
			note_result(data);
		send_pickled(SB_FRAME_VALUE, data);
	}
	Py_DECREF(data);
}

/* Runs module.qualname(*args, **kwargs); the reply is sent, errors included. */
static void call(const struct sb_worker *w, PyObject *module, PyObject *qualname, PyObject *args,
		 PyObject *kwargs)
{
	_cleanup_free_ char *what = NULL;
	PyObject *fn, *result;

	if (asprintf(&what, "%s.%s", PyUnicode_AsUTF8(module), PyUnicode_AsUTF8(qualname)) < 0)
		what = NULL;
	fn = find_function(w, module, qualname);
	if (!fn) {
		reply_exception();
		return;
	}
	result = PyObject_Call(fn, args, kwargs);
	Py_DECREF(fn);
	if (result && PyCoro_CheckExact(result)) {
		PyObject *value = run_coroutine(result);

		Py_DECREF(result);
		result = value;
	}
	if (!result) {
		reply_exception();
		return;
	}
	reply_value(result, what ? what : "the function");
	Py_DECREF(result);
}

static void serve_request(const struct sb_worker *w, const char *data, size_t len)
{
	struct sb_runtime_section section;
	PyObject *bytes, *file, *unpickler, *req = NULL;
	PyObject *module, *qualname, *args, *kwargs;

	/* The parent is trusted: its arguments are plain pickle (spec
	 * section 7), unpickled by the runtime, not charged to the profile. */
	bytes = PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
	file = bytes ? PyObject_CallFunctionObjArgs(srv.bytes_io, bytes, NULL) : NULL;
	unpickler = file ? PyObject_CallFunctionObjArgs(srv.loads, file, NULL) : NULL;
	sb_guard_runtime_enter(&section);
	if (unpickler)
		req = PyObject_CallMethod(unpickler, "load", NULL);
	sb_guard_runtime_leave(&section);
	Py_XDECREF(unpickler);
	Py_XDECREF(file);
	Py_XDECREF(bytes);
	if (!req) {
		reply_exception();
		return;
	}
	if (!PyArg_ParseTuple(req, "UUO!O!", &module, &qualname, &PyTuple_Type, &args, &PyDict_Type,
			      &kwargs)) {
		Py_DECREF(req);
		PyErr_Clear();
		send_text(SB_FRAME_PROTOCOL, "malformed call request");
		return;
	}
	call(w, module, qualname, args, kwargs);
	Py_DECREF(req);
}

/* The modules of the caller's @sandbox functions, imported now: a module the
 * profile does not let run fails sandboxes() itself, not the first call. -1
 * with an exception set. */
static int preload(const struct sb_worker *w)
{
	for (char **m = w->preload; m && *m; m++) {
		struct sb_runtime_section section;
		PyObject *mod, *name;

		if (streq(*m, "__main__")) {
			/* Code given with -c or on stdin has no file to run again. */
			if (!w->main_path && !w->main_module)
				continue;
			mod = main_module(w);
		} else {
			name = PyUnicode_FromString(*m);
			if (!name)
				return -1;
			sb_guard_runtime_enter(&section);
			mod = import_module(name);
			sb_guard_runtime_leave(&section);
			Py_DECREF(name);
		}
		if (!mod)
			return -1;
		Py_DECREF(mod);
	}
	return 0;
}

static int send_ready(const struct sb_profile *profile, const char *provider)
{
	_cleanup_free_ char *text = NULL;
	int n;

	/* Sent before any code of the program runs here, so what it says about
	 * the result channel cannot have been forged by that code. An observer
	 * of results (learning, spec section 6) records and allows: the parent
	 * decodes in objects mode so that a result data-only would refuse
	 * still comes back, and learning writes the mode the results needed.
	 * Only while observed. */
	bool objects = profile->result_mode == SB_RESULT_OBJECTS || sb_guard_observes_results();

	srv.result_guard = profile->result_guard;
	/* observed: learning records; one worker only, since each writes the
	 * rule file when it leaves. */
	n = asprintf(&text, "mode=%s%cguard=%s%cprovider=%s%cpid=%d%cobserved=%s%c",
		     objects ? "objects" : "data-only", 0, profile->result_guard ? "true" : "false",
		     0, provider ? provider : "", 0, (int)getpid(), 0,
		     sb_guard_observes_results() ? "true" : "false", 0);
	if (n < 0)
		return -ENOMEM;
	return send_frame(SB_FRAME_READY, text, (size_t)n);
}

int sb_worker_serve(const struct sb_worker *w, const struct sb_profile *profile,
		    const char *provider)
{
	int exit_code = 0;

	if (setup(w) < 0) {
		PyErr_Print();
		return 1;
	}
	if (send_ready(profile, provider) < 0)
		return 1;
	if (w->init_module && w->init_qualname) {
		PyObject *m = PyUnicode_FromString(w->init_module);
		PyObject *q = PyUnicode_FromString(w->init_qualname);
		PyObject *args = PyTuple_New(0), *kwargs = PyDict_New(), *fn = NULL, *r = NULL;

		if (m && q && args && kwargs)
			fn = find_function(w, m, q);
		if (fn)
			r = PyObject_Call(fn, args, kwargs);
		if (r && PyCoro_CheckExact(r)) {
			PyObject *value = run_coroutine(r);

			Py_DECREF(r);
			r = value;
		}
		Py_XDECREF(m);
		Py_XDECREF(q);
		Py_XDECREF(args);
		Py_XDECREF(kwargs);
		Py_XDECREF(fn);
		if (!r) {
			reply_exception();
			return 1;
		}
		Py_DECREF(r);
	}
	if (preload(w) < 0) {
		reply_exception();
		return 1;
	}
	if (send_frame(SB_FRAME_INIT_DONE, NULL, 0) < 0)
		return 1;

	while (!srv.channel_broken) {
		_cleanup_free_ char *data = NULL;
		size_t len;
		char type;
		int r;

		r = sb_frame_read(w->fd, &type, &data, &len, w->call_limit, -1);
		if (r < 0 || type == SB_FRAME_EXIT)
			break;
		if (type != SB_FRAME_CALL) {
			exit_code = 1;
			break;
		}
		serve_request(w, data, len);
		if (PyErr_Occurred())
			PyErr_Clear();
	}
	/* From here on the end of the stream is expected: leave normally, so
	 * that what runs at exit (learning's save) runs. */
	{
		int flags = fcntl(w->fd, F_GETFL);

		if (flags >= 0)
			fcntl(w->fd, F_SETFL, flags & ~O_ASYNC);
	}
	if (srv.loop) {
		PyObject *r = PyObject_CallMethod(srv.loop, "close", NULL);

		Py_XDECREF(r);
		PyErr_Clear();
		Py_CLEAR(srv.loop);
	}
	Py_CLEAR(srv.dumps);
	Py_CLEAR(srv.loads);
	Py_CLEAR(srv.bytes_io);
	Py_CLEAR(srv.format_exception);
	return exit_code;
}
