/* SPDX-License-Identifier: MIT */
/* pysandboxes._core: the mechanism of partial mode for an ordinary python3.
 * One worker per process (python-sb --pysandboxes-worker), reference-counted
 * by sandboxes(); calls are serialised on its channel; replies go through the
 * result guard; a worker that dies is restarted with back-off, and one that
 * keeps dying makes calls fail instead of taking the application down. */
#include "core.h"

#include <math.h>
#include <pythread.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include "exceptions.h"
#include "frame.h"
#include "util.h"

#ifndef SB_PYTHON_SB_PATH
#define SB_PYTHON_SB_PATH "/usr/local/bin/python-sb"
#endif

#define PICKLE_PROTOCOL	 5
#define START_TIMEOUT_MS (30 * 1000)
#define CALL_TIMEOUT_MS	 (120 * 1000)
#define EXIT_TIMEOUT_MS	 5000
/* Restart back-off (spec section 7): 1 s, then x1.5 up to 5 s; at most 5
 * crashes in 3 minutes. */
#define BACKOFF_BASE_S 1.0
#define BACKOFF_FACTOR 1.5
#define BACKOFF_MAX_S  5.0
#define CRASH_WINDOW_S 180.0
#define MAX_CRASHES    5

extern char **environ;

static struct {
	PyThread_type_lock lock; /* the channel and this state */
	int refcount;
	/* In a child forked inside sandboxes() that started its own: the
	 * parent's starts still open in the copied state, closed by their stops
	 * without touching the child's worker. */
	int inherited;
	pid_t owner;	 /* the process that started the sandbox */
	bool in_process; /* os-sandbox=none: calls are direct */
	bool graceful;
	char **argv, **envp; /* to start (and restart) the worker */
	char *config;	     /* the configuration frame */
	size_t config_len;
	struct sb_child child;
	enum sb_result_channel channel;
	char provider[32];
	double crashes[MAX_CRASHES]; /* times of the last crashes, oldest first */
	int n_crashes;
	PyObject *init_fn; /* for os-sandbox=none */
	bool signals_installed;
	bool starting; /* in start_worker(): a failure is a failed start */
} core = {.child = {.pid = 0, .fd = -1}};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static PyObject *exc_class(enum sb_exc which)
{
	return sb_exc_class(which);
}

/* A fatal signal ends the parent: take the worker with it, then die the
 * same way. Only installed over the default disposition. */
static void on_fatal_signal(int sig)
{
	sb_child_kill_all_from_signal();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_signal_handlers(void)
{
	static const int sigs[] = {SIGTERM, SIGHUP, SIGQUIT};

	if (core.signals_installed)
		return;
	core.signals_installed = true;
	for (size_t i = 0; i < ELEMENTSOF(sigs); i++) {
		struct sigaction old, sa = {.sa_handler = on_fatal_signal};

		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
		    !(old.sa_flags & SA_SIGINFO)) {
			sigemptyset(&sa.sa_mask);
			sigaction(sigs[i], &sa, NULL);
		}
	}
}

/* The worker belongs to the process that started it: a forked child only
 * drops its copy of the channel. */
static void release_child(void)
{
	if (core.owner == getpid()) {
		sb_child_kill(&core.child, NULL);
		return;
	}
	if (core.child.fd >= 0)
		close(core.child.fd);
	core.child = (struct sb_child){.pid = 0, .fd = -1};
}

static void at_exit(void)
{
	release_child();
}

/* Lock helpers: the GIL is released while waiting. */
static void lock(void)
{
	if (PyThread_acquire_lock(core.lock, NOWAIT_LOCK))
		return;
	PyThreadState *ts = PyEval_SaveThread();

	PyThread_acquire_lock(core.lock, WAIT_LOCK);
	PyEval_RestoreThread(ts);
}

static void unlock(void)
{
	PyThread_release_lock(core.lock);
}

static void record_crash(void)
{
	double t = now_s();

	if (core.n_crashes == MAX_CRASHES) {
		memmove(core.crashes, core.crashes + 1, (MAX_CRASHES - 1) * sizeof(double));
		core.n_crashes--;
	}
	core.crashes[core.n_crashes++] = t;
}

static int recent_crashes(double t)
{
	int first = 0;

	while (first < core.n_crashes && t - core.crashes[first] > CRASH_WINDOW_S)
		first++;
	memmove(core.crashes, core.crashes + first,
		(size_t)(core.n_crashes - first) * sizeof(double));
	core.n_crashes -= first;
	return core.n_crashes;
}

static double backoff_delay(int n)
{
	double d = BACKOFF_BASE_S * pow(BACKOFF_FACTOR, n - 1);

	return d > BACKOFF_MAX_S ? BACKOFF_MAX_S : d;
}

/* The channel is unusable: the worker goes, and the error says why. */
static void drop_worker(bool crashed, const char *what, const char *why)
{
	char status[96], delay[32];
	int st;

	sb_child_kill(&core.child, &st);
	if (!crashed || PyErr_Occurred())
		return;
	sb_describe_status(st, status, sizeof(status));
	if (core.starting) {
		/* It said why on its stderr (a profile error, a refused boundary). */
		PyErr_Format(exc_class(SB_EXC_SANDBOX_ERROR),
			     "the sandbox worker %s before it was ready (%s; its messages are "
			     "above, on stderr): %s",
			     st == -1 ? "stopped answering" : status, why, core.argv[0]);
		return;
	}
	record_crash();
	/* PyErr_Format has no %f. */
	snprintf(delay, sizeof(delay), "%.1f s", backoff_delay(core.n_crashes));
	PyErr_Format(exc_class(SB_EXC_PROTOCOL),
		     "%s: the sandbox worker %s during %s; it is restarted on the next call "
		     "(after %s)",
		     why, st == -1 ? "stopped answering" : status, what, delay);
}

/* Reads exactly n bytes of the channel; signals are handled between reads
 * (a KeyboardInterrupt aborts the call). 0, or -1 with the worker dropped
 * and an exception set. */
static int read_channel(void *buf, size_t n, double deadline, const char *what)
{
	size_t done = 0;
	int r;

	for (;;) {
		PyThreadState *ts = PyEval_SaveThread();

		/* The socket's SO_RCVTIMEO bounds each read (set_receive_timeout):
		 * no poll() per read, a round trip is a handful of system calls. */
		r = sb_read_exact(core.child.fd, buf, n, &done, 0);
		PyEval_RestoreThread(ts);
		if (r == -ETIMEDOUT && now_s() < deadline)
			continue;
		if (r != -EINTR)
			break;
		if (PyErr_CheckSignals() < 0) {
			drop_worker(false, what, NULL);
			return -1;
		}
	}
	if (r == 0)
		return 0;
	if (r == -ETIMEDOUT) {
		drop_worker(false, what, NULL);
		PyErr_Format(exc_class(SB_EXC_PROTOCOL),
			     "no answer from the sandbox worker in time during %s: it was killed "
			     "and is restarted on the next call",
			     what);
		return -1;
	}
	drop_worker(true, what, r == -EPIPE ? "the channel closed" : strerror(-r));
	return -1;
}

static void set_receive_timeout(int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	setsockopt(core.child.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

static int write_channel(char type, const void *data, size_t len, const char *what)
{
	int r;

	PyThreadState *ts = PyEval_SaveThread();

	r = sb_frame_write(core.child.fd, type, data, len);
	PyEval_RestoreThread(ts);
	if (r == 0)
		return 0;
	drop_worker(true, what, r == -EPIPE ? "the channel closed" : strerror(-r));
	return -1;
}

static void relay_output(char type, const char *data, size_t len)
{
	PyObject *stream = PySys_GetObject(type == SB_FRAME_STDOUT ? "stdout" : "stderr");
	PyObject *text, *r;

	if (!stream || stream == Py_None)
		return;
	text = PyUnicode_DecodeUTF8(data, (Py_ssize_t)len, "replace");
	r = text ? PyObject_CallMethod(stream, "write", "O", text) : NULL;
	Py_XDECREF(r);
	Py_XDECREF(text);
	/* The caller's stream refusing output is not the call's failure. */
	PyErr_Clear();
}

/* The next frame that is not output, relaying output on the way. A reply
 * over limit is read and thrown away (the stream stays usable) and refused
 * with its size. 0 with *ret_data (PyMem) or -1 with an exception set. */
static int read_reply(char *ret_type, char **ret_data, size_t *ret_len, size_t limit,
		      int timeout_ms, const char *what)
{
	double deadline = now_s() + timeout_ms / 1000.0;

	for (;;) {
		unsigned char hdr[SB_FRAME_HEADER];
		uint32_t len;
		char type, *data;

		if (read_channel(hdr, sizeof(hdr), deadline, what) < 0)
			return -1;
		sb_frame_header_decode(hdr, &type, &len);
		if (len > SB_FRAME_HARD_MAX ||
		    ((type == SB_FRAME_STDOUT || type == SB_FRAME_STDERR) &&
		     len > 2 * SB_OUTPUT_CHUNK)) {
			drop_worker(true, what, "a malformed frame");
			return -1;
		}
		if (len > limit) {
			char sink[16384];

			for (size_t left = len; left > 0;) {
				size_t n = left < sizeof(sink) ? left : sizeof(sink);

				if (read_channel(sink, n, deadline, what) < 0)
					return -1;
				left -= n;
			}
			PyErr_Format(
			    exc_class(SB_EXC_RESTRICTED_UNPICKLING),
			    "the reply of the sandboxed call %s was refused: %u bytes, over "
			    "the limit of %u bytes (512 KiB)",
			    what, len, SB_RESULT_LIMIT);
			return -1;
		}
		data = PyMem_Malloc(len + 1);
		if (!data) {
			PyErr_NoMemory();
			return -1;
		}
		if (read_channel(data, len, deadline, what) < 0) {
			PyMem_Free(data);
			return -1;
		}
		data[len] = '\0';
		if (type == SB_FRAME_STDOUT || type == SB_FRAME_STDERR) {
			relay_output(type, data, len);
			PyMem_Free(data);
			continue;
		}
		*ret_type = type;
		*ret_data = data;
		*ret_len = len;
		return 0;
	}
}

static void parse_ready(const char *data, size_t len)
{
	bool objects = false, guard = true;

	core.provider[0] = '\0';
	for (const char *p = data; p < data + len; p += strlen(p) + 1) {
		const char *v;

		if ((v = startswith(p, "mode=")))
			objects = streq(v, "objects");
		else if ((v = startswith(p, "guard=")))
			guard = !streq(v, "false");
		else if ((v = startswith(p, "provider=")))
			snprintf(core.provider, sizeof(core.provider), "%s", v);
	}
	core.channel = !objects ? SB_CHANNEL_DATA_ONLY
		       : guard	? SB_CHANNEL_OBJECTS
				: SB_CHANNEL_OBJECTS_NOGUARD;
}

/* Turns a reply that is not a value into the caller's exception. */
static PyObject *raise_reply(char type, const char *data, size_t len, const char *what)
{
	switch (type) {
	case SB_FRAME_EXCEPTION:
	case SB_FRAME_BASE_EXCEPTION:
		return sb_raise_remote_exception(data, len, type == SB_FRAME_BASE_EXCEPTION, what);
	case SB_FRAME_TOO_BIG:
		if (len == 8) {
			uint64_t size = 0;

			for (int i = 7; i >= 0; i--)
				size = size << 8 | (unsigned char)data[i];
			PyErr_Format(exc_class(SB_EXC_RESTRICTED_UNPICKLING),
				     "the reply of the sandboxed call %s was refused: %llu bytes, "
				     "over the limit of %u bytes (512 KiB)",
				     what, (unsigned long long)size, SB_RESULT_LIMIT);
			return NULL;
		}
		break;
	case SB_FRAME_PROTOCOL:
		PyErr_Format(exc_class(SB_EXC_PROTOCOL), "%s: %s", what, data);
		return NULL;
	default:
		break;
	}
	drop_worker(true, what, "an unexpected frame");
	return NULL;
}

/* Starts the worker and waits until it is ready and init_fn ran. 0, 1 when
 * the worker says os-sandbox=none (it is stopped: calls will be direct), or
 * -1 with an exception set and no worker left. */
static int start_worker(void)
{
	const char *what = "the start of the sandbox";
	PyThreadState *ts;
	char type, *data = NULL;
	size_t len;
	int r;

	ts = PyEval_SaveThread();
	r = sb_child_spawn(core.argv, core.envp, &core.child);
	PyEval_RestoreThread(ts);
	if (r < 0) {
		errno = -r;
		PyErr_Format(exc_class(SB_EXC_SANDBOX_ERROR),
			     "cannot start the sandbox worker %s: %s", core.argv[0], strerror(-r));
		return -1;
	}
	install_signal_handlers();
	set_receive_timeout(START_TIMEOUT_MS);
	core.starting = true;
	if (write_channel(SB_FRAME_CONFIG, core.config, core.config_len, what) < 0 ||
	    read_reply(&type, &data, &len, 1u << 16, START_TIMEOUT_MS, what) < 0)
		goto failed;
	if (type != SB_FRAME_READY) {
		raise_reply(type, data, len, what);
		goto failed;
	}
	parse_ready(data, len);
	PyMem_Free(data);
	data = NULL;
	if (streq(core.provider, "none")) {
		sb_child_kill(&core.child, NULL);
		core.starting = false;
		return 1;
	}
	if (read_reply(&type, &data, &len, SB_RESULT_LIMIT, START_TIMEOUT_MS, "init_fn") < 0)
		goto failed;
	if (type != SB_FRAME_INIT_DONE) {
		raise_reply(type, data, len, "init_fn");
		goto failed;
	}
	PyMem_Free(data);
	core.starting = false;
	set_receive_timeout(CALL_TIMEOUT_MS);
	return 0;

failed:
	PyMem_Free(data);
	sb_child_kill(&core.child, NULL);
	core.starting = false;
	return -1;
}

/* Before a call: a worker that died is restarted, with back-off. */
static int ensure_worker(void)
{
	double t = now_s(), wait;
	int n, r;

	if (core.child.pid > 0)
		return 0;
	n = recent_crashes(t);
	if (n >= MAX_CRASHES) {
		PyErr_Format(exc_class(SB_EXC_PROTOCOL),
			     "the sandbox worker crashed %d times in %d s: calls are refused for "
			     "%d s more",
			     n, (int)CRASH_WINDOW_S,
			     (int)(CRASH_WINDOW_S - (t - core.crashes[0])) + 1);
		return -1;
	}
	wait = n > 0 ? backoff_delay(n) - (t - core.crashes[n - 1]) : 0;
	while (wait > 0) {
		struct timespec ts = {(time_t)wait, (long)((wait - floor(wait)) * 1e9)};
		int s;

		PyThreadState *save = PyEval_SaveThread();

		s = nanosleep(&ts, NULL);
		PyEval_RestoreThread(save);
		if (s < 0 && PyErr_CheckSignals() < 0)
			return -1;
		wait = backoff_delay(n) - (now_s() - core.crashes[n - 1]);
	}
	r = start_worker();
	if (r < 0) {
		record_crash();
		return -1;
	}
	if (r == 1)
		core.in_process = true;
	return 0;
}

/* Configuration ---------------------------------------------------------- */

static int strv_add(char ***v, const char *s)
{
	if (sb_strv_push(v, s) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return 0;
}

static int strv_addf(char ***v, const char *fmt, ...) _printf_(2, 3);
static int strv_addf(char ***v, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0 || sb_strv_consume(v, s) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return 0;
}

static int add_rule_value(char ***argv, const char *key, PyObject *value)
{
	PyObject *s;
	int r;

	if (value == Py_None)
		return strv_addf(argv, "--%s", key);
	if (PyBool_Check(value))
		return strv_addf(argv, "--%s=%s", key, value == Py_True ? "true" : "false");
	if (PyAnySet_Check(value) || PyList_Check(value) || PyTuple_Check(value)) {
		PyObject *it = PyObject_GetIter(value), *item;

		r = it ? 0 : -1;
		while (r == 0 && it && (item = PyIter_Next(it))) {
			r = add_rule_value(argv, key, item);
			Py_DECREF(item);
		}
		Py_XDECREF(it);
		return r < 0 || PyErr_Occurred() ? -1 : 0;
	}
	s = PyObject_Str(value);
	if (!s)
		return -1;
	r = PyUnicode_AsUTF8(s) ? strv_addf(argv, "--%s=%s", key, PyUnicode_AsUTF8(s)) : -1;
	Py_DECREF(s);
	return r;
}

/* **rules: os_sandbox="landlock" -> --os-sandbox=landlock; a set gives one
 * option per value; command-line rules have priority over the file. */
static int add_rules(char ***argv, PyObject *rules, bool *ret_none)
{
	PyObject *key, *value;
	Py_ssize_t pos = 0;

	while (rules && PyDict_Next(rules, &pos, &key, &value)) {
		const char *k = PyUnicode_AsUTF8(key);
		_cleanup_free_ char *dashed = k ? strdup(k) : NULL;

		if (!dashed)
			return k ? (PyErr_NoMemory(), -1) : -1;
		for (char *c = dashed; *c; c++)
			if (*c == '_')
				*c = '-';
		if (streq(dashed, "os-sandbox") && PyUnicode_Check(value) &&
		    streq(PyUnicode_AsUTF8(value), "none"))
			*ret_none = true;
		if (add_rule_value(argv, dashed, value) < 0)
			return -1;
	}
	return 0;
}

static int add_envs(char ***argv, char ***envp, PyObject *envs)
{
	PyObject *key, *value;
	Py_ssize_t pos = 0;

	for (char **e = environ; e && *e; e++) {
		bool overridden = false;

		pos = 0;
		while (envs && PyDict_Next(envs, &pos, &key, &value)) {
			const char *k = PyUnicode_AsUTF8(key);
			size_t n = k ? strlen(k) : 0;

			if (k && strncmp(*e, k, n) == 0 && (*e)[n] == '=')
				overridden = true;
		}
		PyErr_Clear();
		if (!overridden && strv_add(envp, *e) < 0)
			return -1;
	}
	pos = 0;
	while (envs && PyDict_Next(envs, &pos, &key, &value)) {
		const char *k = PyUnicode_AsUTF8(key), *v;
		PyObject *s = PyObject_Str(value);

		v = s ? PyUnicode_AsUTF8(s) : NULL;
		if (!k || !v || !*k || strchr(k, '=')) {
			Py_XDECREF(s);
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_ValueError, "envs: bad variable name");
			return -1;
		}
		/* The value travels in the environment, not in the rule, so it is
		 * never parsed as profile text. */
		if (strv_addf(envp, "%s=%s", k, v) < 0 ||
		    strv_addf(argv, "--env=%s=${%s}", k, k) < 0) {
			Py_DECREF(s);
			return -1;
		}
		Py_DECREF(s);
	}
	return 0;
}

struct sb_buf_lite {
	char *data;
	size_t len;
};

static int config_add(struct sb_buf_lite *b, const char *key, const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);
	char *n = realloc(b->data, b->len + kl + vl + 2);

	if (!n) {
		PyErr_NoMemory();
		return -1;
	}
	b->data = n;
	memcpy(b->data + b->len, key, kl);
	b->data[b->len + kl] = '=';
	memcpy(b->data + b->len + kl + 1, value, vl + 1);
	b->len += kl + vl + 2;
	return 0;
}

static const char *attr_utf8(PyObject *obj, const char *name, PyObject **hold)
{
	*hold = PyObject_GetAttrString(obj, name);
	if (*hold && PyUnicode_Check(*hold))
		return PyUnicode_AsUTF8(*hold);
	PyErr_Clear();
	return NULL;
}

/* The configuration frame: the parent's sys.path (the worker imports the
 * caller's modules from there), its __main__ (functions of a script run
 * there as __mp_main__) and init_fn. */
static int build_config(PyObject *init_fn, struct sb_buf_lite *b)
{
	PyObject *path = PySys_GetObject("path"), *main, *hold = NULL, *spec = NULL;
	const char *s;
	int r = 0;

	for (Py_ssize_t i = 0; path && PyList_Check(path) && r == 0 && i < PyList_GET_SIZE(path);
	     i++) {
		PyObject *p = PyList_GET_ITEM(path, i), *abs;

		if (!PyUnicode_Check(p) || PyUnicode_GET_LENGTH(p) == 0)
			continue;
		abs = PyObject_CallMethod(p, "startswith", "s", "/");
		if (abs == Py_True && PyUnicode_AsUTF8(p))
			r = config_add(b, "path", PyUnicode_AsUTF8(p));
		Py_XDECREF(abs);
		PyErr_Clear();
	}
	main = PyImport_AddModule("__main__"); /* borrowed */
	if (r == 0 && main) {
		spec = PyObject_GetAttrString(main, "__spec__");
		PyErr_Clear();
		if (spec && spec != Py_None && (s = attr_utf8(spec, "name", &hold)))
			r = config_add(b, "main-module", s);
		else if ((s = attr_utf8(main, "__file__", &hold)))
			r = config_add(b, "main", s);
		Py_XDECREF(hold);
		Py_XDECREF(spec);
		/* Classes of the script are __mp_main__.X in the worker. */
		if (!PyDict_GetItemString(PyImport_GetModuleDict(), "__mp_main__"))
			PyDict_SetItemString(PyImport_GetModuleDict(), "__mp_main__", main);
	}
	if (r == 0 && init_fn && init_fn != Py_None) {
		if ((s = attr_utf8(init_fn, "__module__", &hold)))
			r = config_add(b, "init-module", s);
		Py_XDECREF(hold);
		if (r == 0 && (s = attr_utf8(init_fn, "__qualname__", &hold)))
			r = config_add(b, "init-qualname", s);
		Py_XDECREF(hold);
	}
	return r;
}

static void forget_config(void)
{
	sb_strv_free(core.argv);
	sb_strv_free(core.envp);
	free(core.config);
	core.argv = core.envp = NULL;
	core.config = NULL;
	core.config_len = 0;
	Py_CLEAR(core.init_fn);
}

static PyObject *call_init_in_process(void)
{
	PyObject *r;

	if (!core.init_fn || core.init_fn == Py_None)
		Py_RETURN_NONE;
	r = PyObject_CallNoArgs(core.init_fn);
	if (r && PyCoro_CheckExact(r)) {
		PyObject *asyncio = PyImport_ImportModule("asyncio"), *v = NULL;

		if (asyncio)
			v = PyObject_CallMethod(asyncio, "run", "O", r);
		Py_XDECREF(asyncio);
		Py_DECREF(r);
		r = v;
	}
	return r;
}

/* Module functions ------------------------------------------------------- */

static PyObject *core_start(PyObject *self _unused_, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = {"init_fn",	      "config", "rules", "envs", "python_args",
				 "graceful_shutdown", NULL};
	PyObject *init_fn = Py_None, *config = Py_None, *rules = NULL, *envs = Py_None,
		 *python_args = Py_None, *r;
	int graceful = 1, started;
	bool none = false;
	struct sb_buf_lite buf = {0};
	const char *python_sb;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO!OOp:start", kwlist, &init_fn, &config,
					 &PyDict_Type, &rules, &envs, &python_args, &graceful))
		return NULL;
	if (envs != Py_None && !PyDict_Check(envs))
		return PyErr_Format(PyExc_TypeError, "envs must be a dict");
	lock();
	if (core.refcount > 0 && core.owner != getpid()) {
		/* A child forked inside sandboxes() holds a copy of the parent's
		 * state, whose worker it cannot use: its own sandboxes() drops the
		 * copy (release_child() only closes the channel here, the parent's
		 * worker lives on) and starts a worker of its own. */
		release_child();
		forget_config();
		core.in_process = false;
		core.inherited += core.refcount;
		core.refcount = 0;
	}
	if (core.refcount > 0) {
		/* Nested or repeated sandboxes(): the same worker. */
		core.refcount++;
		unlock();
		Py_RETURN_NONE;
	}
	python_sb = getenv("PYSANDBOXES_PYTHON_SB");
	if (!python_sb || !*python_sb)
		python_sb = SB_PYTHON_SB_PATH;
	if (access(python_sb, X_OK) < 0) {
		unlock();
		return PyErr_Format(exc_class(SB_EXC_SANDBOX_ERROR),
				    "python-sb not found at '%s' (%s): install py-sandboxes or set "
				    "PYSANDBOXES_PYTHON_SB",
				    python_sb, strerror(errno));
	}
	forget_config();
	if (strv_add(&core.argv, python_sb) < 0)
		goto fail;
	if (python_args != Py_None) {
		PyObject *seq = PySequence_Fast(python_args, "python_args must be a list of str");

		for (Py_ssize_t i = 0; seq && i < PySequence_Fast_GET_SIZE(seq); i++) {
			PyObject *a = PySequence_Fast_GET_ITEM(seq, i);

			if (!PyUnicode_Check(a) || strv_add(&core.argv, PyUnicode_AsUTF8(a)) < 0) {
				Py_DECREF(seq);
				if (!PyErr_Occurred())
					PyErr_SetString(PyExc_TypeError,
							"python_args must be a list of str");
				goto fail;
			}
		}
		if (!seq)
			goto fail;
		Py_DECREF(seq);
	}
	if (strv_addf(&core.argv, "--pysandboxes-worker=3") < 0)
		goto fail;
	if (config != Py_None) {
		PyObject *path = PyOS_FSPath(config), *bytes = NULL;

		if (path)
			PyUnicode_FSConverter(path, &bytes);
		Py_XDECREF(path);
		if (!bytes || strv_addf(&core.argv, "--pysandboxes-config=%s",
					PyBytes_AS_STRING(bytes)) < 0) {
			Py_XDECREF(bytes);
			goto fail;
		}
		Py_DECREF(bytes);
	}
	if (add_rules(&core.argv, rules, &none) < 0 ||
	    add_envs(&core.argv, &core.envp, envs == Py_None ? NULL : envs) < 0 ||
	    build_config(init_fn, &buf) < 0)
		goto fail;
	if (!core.envp && strv_add(&core.envp, "PYSANDBOXES_WORKER=1") < 0)
		goto fail;
	core.config = buf.data;
	core.config_len = buf.len;
	buf.data = NULL;
	core.init_fn = Py_NewRef(init_fn);
	core.graceful = graceful;
	core.owner = getpid();
	core.n_crashes = 0;
	core.in_process = none;
	if (!none) {
		started = start_worker();
		if (started < 0)
			goto fail;
		core.in_process = started == 1;
	}
	if (core.in_process) {
		/* os-sandbox=none fakes the sandbox in this process. */
		r = call_init_in_process();
		if (!r)
			goto fail;
		Py_DECREF(r);
	}
	core.refcount = 1;
	unlock();
	Py_RETURN_NONE;

fail:
	free(buf.data);
	forget_config();
	core.in_process = false;
	unlock();
	return NULL;
}

static PyObject *core_stop(PyObject *self _unused_, PyObject *unused _unused_)
{
	lock();
	if (core.refcount <= 0 && core.inherited > 0) {
		/* The forked child leaves a sandboxes() of its parent: its own
		 * worker, if any, was already stopped with its own sandboxes(). */
		core.inherited--;
		unlock();
		Py_RETURN_NONE;
	}
	if (core.refcount <= 0) {
		unlock();
		PyErr_SetString(PyExc_ValueError,
				"sandboxes() was shut down more times than started");
		return NULL;
	}
	if (--core.refcount > 0) {
		unlock();
		Py_RETURN_NONE;
	}
	if (core.child.pid > 0 && core.owner == getpid()) {
		if (core.graceful) {
			/* The worker leaves normally: what runs at its exit (learning
			 * writes its rules) runs. */
			PyThreadState *ts = PyEval_SaveThread();
			int r = sb_frame_write(core.child.fd, SB_FRAME_EXIT, NULL, 0);

			if (r == 0)
				sb_child_stop(&core.child, EXIT_TIMEOUT_MS);
			PyEval_RestoreThread(ts);
		}
	}
	release_child();
	forget_config();
	core.in_process = false;
	unlock();
	Py_RETURN_NONE;
}

static PyObject *describe_fn(PyObject *fn, PyObject **ret_module, PyObject **ret_qualname,
			     char **ret_what)
{
	PyObject *m = PyObject_GetAttrString(fn, "__module__");
	PyObject *q = m ? PyObject_GetAttrString(fn, "__qualname__") : NULL;

	if (!m || !q || !PyUnicode_Check(m) || !PyUnicode_Check(q)) {
		Py_XDECREF(m);
		Py_XDECREF(q);
		PyErr_Clear();
		return PyErr_Format(PyExc_TypeError,
				    "@sandbox needs a function with __module__ and __qualname__");
	}
	if (asprintf(ret_what, "%s.%s", PyUnicode_AsUTF8(m), PyUnicode_AsUTF8(q)) < 0) {
		Py_DECREF(m);
		Py_DECREF(q);
		return PyErr_NoMemory();
	}
	if (strstr(PyUnicode_AsUTF8(q), "<locals>")) {
		PyErr_Format(exc_class(SB_EXC_PROTOCOL),
			     "%s cannot be found by name in the worker: @sandbox functions must be "
			     "defined at module level",
			     *ret_what);
		Py_DECREF(m);
		Py_DECREF(q);
		return NULL;
	}
	*ret_module = m;
	*ret_qualname = q;
	return Py_None;
}

static PyObject *remote_call(PyObject *payload, const char *what)
{
	char type, *data = NULL;
	PyObject *result = NULL;
	size_t len;

	if (ensure_worker() < 0)
		return NULL;
	if (core.in_process)
		return Py_None; /* the caller calls directly */
	if (write_channel(SB_FRAME_CALL, PyBytes_AS_STRING(payload),
			  (size_t)PyBytes_GET_SIZE(payload), what) < 0 ||
	    read_reply(&type, &data, &len, SB_RESULT_LIMIT, CALL_TIMEOUT_MS, what) < 0)
		return NULL;
	if (type == SB_FRAME_VALUE)
		result = sb_unpickle(data, len, core.channel, what);
	else
		raise_reply(type, data, len, what);
	PyMem_Free(data);
	return result;
}

static PyObject *core_call(PyObject *self _unused_, PyObject *args)
{
	PyObject *fn, *fargs, *fkwargs, *module = NULL, *qualname = NULL, *req, *pickle = NULL,
					*payload = NULL, *result = NULL;
	_cleanup_free_ char *what = NULL;

	if (!PyArg_ParseTuple(args, "OO!O!:call", &fn, &PyTuple_Type, &fargs, &PyDict_Type,
			      &fkwargs))
		return NULL;
	if (core.refcount <= 0) {
		PyErr_SetString(
		    PyExc_AssertionError,
		    "Daemon not started. Use 'with sandboxes()' or 'pysandboxes.run()'");
		return NULL;
	}
	if (core.owner != getpid())
		return PyErr_Format(exc_class(SB_EXC_PROTOCOL),
				    "the sandbox belongs to process %d: a forked child cannot use "
				    "it; start sandboxes() in the child",
				    (int)core.owner);
	if (core.in_process)
		return PyObject_Call(fn, fargs, fkwargs);
	if (!describe_fn(fn, &module, &qualname, &what))
		return NULL;
	req = PyTuple_Pack(4, module, qualname, fargs, fkwargs);
	pickle = PyImport_ImportModule("_pickle");
	if (req && pickle)
		payload = PyObject_CallMethod(pickle, "dumps", "Oi", req, PICKLE_PROTOCOL);
	Py_XDECREF(req);
	Py_XDECREF(pickle);
	Py_DECREF(module);
	Py_DECREF(qualname);
	if (!payload)
		return NULL;
	if ((size_t)PyBytes_GET_SIZE(payload) > SB_FRAME_HARD_MAX) {
		PyErr_Format(
		    exc_class(SB_EXC_PROTOCOL),
		    "the arguments of %s are %zd bytes pickled, over the limit of %u bytes "
		    "(64 MiB)",
		    what, PyBytes_GET_SIZE(payload), SB_FRAME_HARD_MAX);
		Py_DECREF(payload);
		return NULL;
	}
	lock();
	if (core.refcount <= 0) {
		unlock();
		Py_DECREF(payload);
		PyErr_SetString(
		    PyExc_AssertionError,
		    "Daemon not started. Use 'with sandboxes()' or 'pysandboxes.run()'");
		return NULL;
	}
	result = remote_call(payload, what);
	unlock();
	Py_DECREF(payload);
	if (result == Py_None && core.in_process)
		return PyObject_Call(fn, fargs, fkwargs);
	return result;
}

static PyObject *core_in_process(PyObject *self _unused_, PyObject *unused _unused_)
{
	return PyBool_FromLong(core.refcount > 0 && core.in_process);
}

static PyObject *core_worker_pid(PyObject *self _unused_, PyObject *unused _unused_)
{
	if (core.child.pid > 0)
		return PyLong_FromLong(core.child.pid);
	Py_RETURN_NONE;
}

static PyObject *core_result_mode(PyObject *self _unused_, PyObject *unused _unused_)
{
	static const char *const names[] = {
	    [SB_CHANNEL_DATA_ONLY] = "data-only",
	    [SB_CHANNEL_OBJECTS] = "objects",
	    [SB_CHANNEL_OBJECTS_NOGUARD] = "objects-unguarded",
	    [SB_CHANNEL_EXCEPTION] = "exception",
	};

	if (core.refcount <= 0 || core.in_process)
		Py_RETURN_NONE;
	return PyUnicode_FromString(names[core.channel]);
}

/* For tests and tools: the guard applied to bytes, as a reply would be. */
static PyObject *core_guarded_loads(PyObject *self _unused_, PyObject *args)
{
	const char *mode = "data-only";
	Py_buffer buf;
	PyObject *r;
	enum sb_result_channel ch;

	if (!PyArg_ParseTuple(args, "y*|s:guarded_loads", &buf, &mode))
		return NULL;
	if (streq(mode, "data-only"))
		ch = SB_CHANNEL_DATA_ONLY;
	else if (streq(mode, "objects"))
		ch = SB_CHANNEL_OBJECTS;
	else if (streq(mode, "objects-unguarded"))
		ch = SB_CHANNEL_OBJECTS_NOGUARD;
	else if (streq(mode, "exception"))
		ch = SB_CHANNEL_EXCEPTION;
	else {
		PyBuffer_Release(&buf);
		return PyErr_Format(PyExc_ValueError, "unknown mode '%s'", mode);
	}
	r = sb_unpickle(buf.buf, (size_t)buf.len, ch, "guarded_loads()");
	PyBuffer_Release(&buf);
	return r;
}

static PyMethodDef core_methods[] = {
    {"start", (PyCFunction)(void (*)(void))core_start, METH_VARARGS | METH_KEYWORDS,
     "start(init_fn, config, rules, envs, python_args, graceful_shutdown): start (or reuse) "
     "the worker."},
    {"stop", core_stop, METH_NOARGS, "Release one start; the last one stops the worker."},
    {"call", core_call, METH_VARARGS, "call(fn, args, kwargs): run fn in the sandbox."},
    {"in_process", core_in_process, METH_NOARGS, "True under os-sandbox=none."},
    {"worker_pid", core_worker_pid, METH_NOARGS, "The worker's pid, or None."},
    {"result_mode", core_result_mode, METH_NOARGS, "The effective result mode."},
    {"guarded_loads", core_guarded_loads, METH_VARARGS,
     "guarded_loads(data, mode='data-only'): unpickle through the result guard."},
    {"sandbox_denials", sb_exc_sandbox_denials, METH_O,
     "sandbox_denials(e) -> list of '<ExcName>: <msg>' for every refusal in e's chain."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_def = {
    PyModuleDef_HEAD_INIT,
    "pysandboxes._core",
    "The mechanism of pysandboxes' partial mode (see the pysandboxes package).",
    -1,
    core_methods,
};

PyMODINIT_FUNC PyInit__core(void);
__attribute__((visibility("default"))) PyMODINIT_FUNC PyInit__core(void)
{
	PyObject *m = PyModule_Create(&core_def);

	if (!m)
		return NULL;
	if (!core.lock && !(core.lock = PyThread_allocate_lock())) {
		Py_DECREF(m);
		return PyErr_NoMemory();
	}
	if (sb_exc_add_classes(m) < 0 ||
	    PyModule_AddIntConstant(m, "RESULT_LIMIT", SB_RESULT_LIMIT) < 0 ||
	    PyModule_AddStringConstant(m, "PYTHON_SB", SB_PYTHON_SB_PATH) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	Py_AtExit(at_exit);
	return m;
}
