/* SPDX-License-Identifier: MIT */
/* pysandboxes._core: the mechanism of partial mode for an ordinary python3.
 * One pool of workers per process (python-sb --pysandboxes-worker),
 * reference-counted by sandboxes(): a call takes an idle worker, and starts
 * another one (up to max_workers) when every worker is busy, so concurrent
 * calls run at the same time; replies go through the result guard; a worker
 * that dies is restarted with back-off, and workers that keep dying make
 * calls fail instead of taking the application down. */
#include "core.h"

#include <limits.h>
#include <math.h>
#include <pythread.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include "diag.h"
#include "exceptions.h"
#include "frame.h"
#include "util.h"

#ifndef SB_PYTHON_SB_PATH
#define SB_PYTHON_SB_PATH "/usr/local/bin/python-sb"
#endif

#define PICKLE_PROTOCOL	 5
#define START_TIMEOUT_MS (30 * 1000)
#define EXIT_TIMEOUT_MS	 5000
/* The pool's bound: sandboxes(max_workers=) may not go above. */
#define MAX_WORKERS 64
/* sandboxes()' defaults (docs/partial-mode.md). */
#define DEFAULT_MAX_WORKERS    8
#define DEFAULT_CALL_TIMEOUT_S 120.0
/* Restart back-off (spec section 7): 1 s, then x1.5 up to 5 s; at most 5
 * crashes in 3 minutes. */
#define BACKOFF_BASE_S 1.0
#define BACKOFF_FACTOR 1.5
#define BACKOFF_MAX_S  5.0
#define CRASH_WINDOW_S 180.0
#define MAX_CRASHES    5

extern char **environ;

/* One worker of the pool. */
struct slot {
	struct sb_child child;
	bool busy;  /* a call (or its start) uses it; only its caller touches child */
	int rcv_ms; /* the socket's SO_RCVTIMEO, -1 when not set yet */
};

static struct {
	PyThread_type_lock lock; /* this state (not the channels: a busy slot is its caller's) */
	int refcount;
	/* In a child forked inside sandboxes() that started its own: the
	 * parent's starts still open in the copied state, closed by their stops
	 * without touching the child's worker. */
	int inherited;
	pid_t owner;	 /* the process that started the sandbox */
	bool in_process; /* os-sandbox=none: calls are direct */
	bool graceful;
	char **argv, **envp; /* to start (and restart) the worker */
	/* What the user wrote for each command-line rule of argv, in order:
	 * "python_import='json'", for the worker's error messages. */
	char **rule_labels;
	char *config; /* the configuration frame */
	size_t config_len;
	struct slot slots[MAX_WORKERS];
	int max_workers;     /* 1 while the worker learns: each writes the rule file */
	double call_timeout; /* seconds, the default of every call; 0 for none */
	size_t result_limit; /* max_result_size */
	size_t call_limit;   /* max_argument_size: a call's pickled request */
	enum sb_result_channel channel;
	char provider[32];
	double crashes[MAX_CRASHES]; /* times of the last crashes, oldest first */
	int n_crashes;
	PyObject *init_fn; /* for os-sandbox=none */
	bool signals_installed;
} core;

/* No worker in any slot (a zeroed slot would name descriptor 0). */
static void slots_reset(void)
{
	for (size_t i = 0; i < MAX_WORKERS; i++)
		core.slots[i] = (struct slot){.child = {.pid = 0, .fd = -1}, .rcv_ms = -1};
}

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

/* The workers belong to the process that started them: a forked child only
 * drops its copies of the channels. */
static void release_children(void)
{
	for (size_t i = 0; i < MAX_WORKERS; i++) {
		struct slot *s = &core.slots[i];

		if (core.owner == getpid())
			sb_child_kill(&s->child, NULL);
		else if (s->child.fd >= 0)
			close(s->child.fd);
		*s = (struct slot){.child = {.pid = 0, .fd = -1}, .rcv_ms = -1};
	}
}

static void at_exit(void)
{
	release_children();
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

/* What one exchange with a worker is: the slot, the call's name, whether it
 * is the worker's start (a failure is a failed start) and its deadline. */
struct exchange {
	struct slot *slot;
	const char *what;
	bool starting;
	double deadline; /* INFINITY for none */
	double timeout;	 /* seconds, for the message; 0 for none */
};

/* The channel is unusable: the worker goes, and the error says why. */
static void drop_worker(const struct exchange *x, bool crashed, const char *why)
{
	char status[96], delay[32];
	const char *what = x->what;
	int st;

	sb_child_kill(&x->slot->child, &st);
	x->slot->rcv_ms = -1;
	if (!crashed || PyErr_Occurred())
		return;
	sb_describe_status(st, status, sizeof(status));
	if (x->starting) {
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
/* The call ran out of time: the worker is killed (the call may be stuck in
 * anything) and the next call gets a new one. */
static int timed_out(const struct exchange *x)
{
	char limit[32];

	drop_worker(x, false, NULL);
	if (x->starting || x->timeout <= 0) {
		PyErr_Format(exc_class(SB_EXC_PROTOCOL),
			     "no answer from the sandbox worker in time during %s: it was killed "
			     "and is restarted on the next call",
			     x->what);
		return -1;
	}
	/* PyErr_Format has no %g. */
	snprintf(limit, sizeof(limit), "%g s", x->timeout);
	PyErr_Format(exc_class(SB_EXC_PROTOCOL),
		     "%s took longer than its timeout of %s (@sandbox(timeout=) or "
		     "sandboxes(call_timeout=)): its sandbox worker was killed and is restarted "
		     "on the next call",
		     x->what, limit);
	return -1;
}

static int read_channel(const struct exchange *x, void *buf, size_t n)
{
	size_t done = 0;
	int r;

	for (;;) {
		PyThreadState *ts = PyEval_SaveThread();

		/* The socket's SO_RCVTIMEO bounds each read (set_receive_timeout):
		 * no poll() per read, a round trip is a handful of system calls. */
		r = sb_read_exact(x->slot->child.fd, buf, n, &done, 0);
		PyEval_RestoreThread(ts);
		if (r == -ETIMEDOUT && now_s() < x->deadline)
			continue;
		if (r != -EINTR)
			break;
		if (PyErr_CheckSignals() < 0) {
			drop_worker(x, false, NULL);
			return -1;
		}
	}
	if (r == 0)
		return 0;
	if (r == -ETIMEDOUT)
		return timed_out(x);
	drop_worker(x, true, r == -EPIPE ? "the channel closed" : strerror(-r));
	return -1;
}

/* Each read waits at most the call's timeout (0: for ever). */
static void set_receive_timeout(struct slot *s, double seconds)
{
	int ms = seconds <= 0 || seconds > INT_MAX / 1000 ? 0 : (int)ceil(seconds * 1000);
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	if (s->rcv_ms == ms)
		return;
	if (setsockopt(s->child.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0)
		s->rcv_ms = ms;
}

static int write_channel(const struct exchange *x, char type, const void *data, size_t len)
{
	int r;

	PyThreadState *ts = PyEval_SaveThread();

	r = sb_frame_write(x->slot->child.fd, type, data, len);
	PyEval_RestoreThread(ts);
	if (r == 0)
		return 0;
	drop_worker(x, true, r == -EPIPE ? "the channel closed" : strerror(-r));
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
static int read_reply(const struct exchange *x, char *ret_type, char **ret_data, size_t *ret_len,
		      size_t limit)
{
	const char *what = x->what;

	for (;;) {
		unsigned char hdr[SB_FRAME_HEADER];
		uint32_t len;
		char type, *data;

		/* A call that keeps printing never waits on a read long enough
		 * for SO_RCVTIMEO: its deadline is checked between frames too. */
		if (now_s() > x->deadline)
			return timed_out(x);
		if (read_channel(x, hdr, sizeof(hdr)) < 0)
			return -1;
		sb_frame_header_decode(hdr, &type, &len);
		if (len > (limit > SB_FRAME_HARD_MAX ? limit : SB_FRAME_HARD_MAX) ||
		    ((type == SB_FRAME_STDOUT || type == SB_FRAME_STDERR) &&
		     len > 2 * SB_OUTPUT_CHUNK)) {
			drop_worker(x, true, "a malformed frame");
			return -1;
		}
		if (len > limit) {
			char sink[16384];

			for (size_t left = len; left > 0;) {
				size_t n = left < sizeof(sink) ? left : sizeof(sink);

				if (read_channel(x, sink, n) < 0)
					return -1;
				left -= n;
			}
			PyErr_Format(
			    exc_class(SB_EXC_RESTRICTED_UNPICKLING),
			    "the reply of the sandboxed call %s was refused: %u bytes, over "
			    "the limit of %zu bytes (max_result_size)",
			    what, len, limit);
			return -1;
		}
		data = PyMem_Malloc(len + 1);
		if (!data) {
			PyErr_NoMemory();
			return -1;
		}
		if (read_channel(x, data, len) < 0) {
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
		else if ((v = startswith(p, "observed=")) && streq(v, "true"))
			core.max_workers = 1;
	}
	core.channel = !objects ? SB_CHANNEL_DATA_ONLY
		       : guard	? SB_CHANNEL_OBJECTS
				: SB_CHANNEL_OBJECTS_NOGUARD;
}

/* The n-th (from 1) command-line rule of the worker: its "--key=value" and
 * what the user wrote for it; false when there is none. */
static bool command_line_rule(unsigned long long n, const char **ret_arg, const char **ret_label)
{
	unsigned long long k = 0;

	if (n == 0 || n > sb_strv_length(core.rule_labels))
		return false;
	for (char **a = core.argv; a && *a; a++)
		if (startswith(*a, "--") && !startswith(*a, "--pysandboxes-") && ++k == n) {
			*ret_arg = *a;
			*ret_label = core.rule_labels[n - 1];
			return true;
		}
	return false;
}

/* msg with the worker's '--key=value' replaced by the keyword the user wrote. */
static void put_message(struct sb_buf *b, const char *msg, const char *arg, const char *label)
{
	const char *hit = arg ? strstr(msg, arg) : NULL;
	size_t len = hit ? strlen(arg) : 0;

	if (!hit) {
		sb_buf_puts(b, msg);
		return;
	}
	if (hit > msg && hit[-1] == '\'' && hit[len] == '\'') {
		hit--;
		len += 2;
	}
	sb_buf_printf(b, "%.*s%s%s", (int)(hit - msg), msg, label, hit + len);
}

/* The worker could not start: its reasons, as the caller's exception. */
static PyObject *raise_start_error(const char *data, size_t len)
{
	const char *end = data + len, *p;
	struct sb_buf b = {0};

	/* The payload is NUL-terminated fields (the reader adds one more NUL). */
	p = data + strlen(data) + 1;
	if (!streq(data, "config")) {
		PyErr_Format(exc_class(SB_EXC_SANDBOX_ERROR), "the sandbox worker cannot start: %s",
			     p < end ? p : "(no reason given)");
		return NULL;
	}
	sb_buf_puts(&b, "Syntax error in config files.");
	while (p < end) {
		const char *file = p, *line = file + strlen(file) + 1;
		const char *msg = line < end ? line + strlen(line) + 1 : end;
		const char *arg = NULL, *label = NULL;
		unsigned long long n = 0;

		if (msg >= end)
			break;
		if (streq(file, SB_ORIGIN_CLI) && sb_safe_atou64(line, &n) >= 0 &&
		    command_line_rule(n, &arg, &label)) {
			sb_buf_printf(&b, "\n  sandboxes(%s): ", label);
			put_message(&b, msg, arg, label);
		} else {
			sb_buf_printf(&b, "\n  %s:%s: %s", file, line, msg);
		}
		p = msg + strlen(msg) + 1;
	}
	PyErr_SetString(exc_class(SB_EXC_CONFIG_SYNTAX), b.data ? b.data : "");
	sb_buf_reset(&b);
	return NULL;
}

/* Exactly one reply per request. The sandboxed code holds the channel (fd 3)
 * and can write a complete reply frame of its own before returning: the
 * parent would take it as this call's reply and the real one as the next
 * call's. So the channel of an idle worker must be empty: before a request
 * and right after a reply (a cheap non-blocking peek), pending bytes are a
 * protocol violation and the worker is killed. 0, or -1 with
 * SandBoxProtocolError set. */
static int check_idle(const struct exchange *x, const char *when)
{
	char byte;
	ssize_t n = recv(x->slot->child.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
	char delay[32];

	/* Nothing (EAGAIN), or a closed channel the next read or write reports
	 * as a crash. */
	if (n <= 0)
		return 0;
	drop_worker(x, false, NULL);
	record_crash();
	snprintf(delay, sizeof(delay), "%.1f s", backoff_delay(core.n_crashes));
	PyErr_Format(exc_class(SB_EXC_PROTOCOL),
		     "%s: the sandbox worker sent data nobody asked for %s (a reply forged on "
		     "its channel, or output of a thread still running): it was killed and is "
		     "restarted on the next call (after %s)",
		     x->what, when, delay);
	return -1;
}

/* Turns a reply that is not a value into the caller's exception. */
static PyObject *raise_reply(const struct exchange *x, char type, const char *data, size_t len)
{
	const char *what = x->what;

	switch (type) {
	case SB_FRAME_START_ERROR:
		drop_worker(x, false, NULL);
		return raise_start_error(data, len);
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
				     "over the limit of %zu bytes (max_result_size)",
				     what, (unsigned long long)size, core.result_limit);
			return NULL;
		}
		break;
	case SB_FRAME_PROTOCOL:
		PyErr_Format(exc_class(SB_EXC_PROTOCOL), "%s: %s", what, data);
		return NULL;
	default:
		break;
	}
	drop_worker(x, true, "an unexpected frame");
	return NULL;
}

/* Starts the slot's worker and waits until it is ready and init_fn ran (and
 * the @sandbox modules are imported). 0, 1 when the worker says
 * os-sandbox=none (it is stopped: calls will be direct), or -1 with an
 * exception set and no worker left. Without the lock: the slot is busy. */
static int start_worker(struct slot *slot)
{
	struct exchange x = {
	    .slot = slot,
	    .what = "the start of the sandbox",
	    .starting = true,
	    .deadline = now_s() + START_TIMEOUT_MS / 1000.0,
	};
	PyThreadState *ts;
	char type, *data = NULL;
	size_t len;
	int r;

	ts = PyEval_SaveThread();
	r = sb_child_spawn(core.argv, core.envp, &slot->child);
	PyEval_RestoreThread(ts);
	if (r < 0) {
		errno = -r;
		PyErr_Format(exc_class(SB_EXC_SANDBOX_ERROR),
			     "cannot start the sandbox worker %s: %s", core.argv[0], strerror(-r));
		return -1;
	}
	slot->rcv_ms = -1;
	install_signal_handlers();
	set_receive_timeout(slot, START_TIMEOUT_MS / 1000.0);
	if (write_channel(&x, SB_FRAME_CONFIG, core.config, core.config_len) < 0 ||
	    read_reply(&x, &type, &data, &len, 1u << 16) < 0)
		goto failed;
	if (type != SB_FRAME_READY) {
		raise_reply(&x, type, data, len);
		goto failed;
	}
	parse_ready(data, len);
	PyMem_Free(data);
	data = NULL;
	if (streq(core.provider, "none")) {
		sb_child_kill(&slot->child, NULL);
		return 1;
	}
	x.what = "init_fn";
	if (read_reply(&x, &type, &data, &len, core.result_limit) < 0)
		goto failed;
	if (type != SB_FRAME_INIT_DONE) {
		raise_reply(&x, type, data, len);
		goto failed;
	}
	PyMem_Free(data);
	return 0;

failed:
	PyMem_Free(data);
	sb_child_kill(&slot->child, NULL);
	return -1;
}

/* Before a call: a slot without a worker gets one, with back-off after
 * crashes. 0, 1 for os-sandbox=none, or -1 with an exception set. */
static int ensure_worker(struct slot *slot)
{
	double t = now_s(), wait;
	int n, r;

	if (slot->child.pid > 0)
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
		n = core.n_crashes;
		wait = n > 0 ? backoff_delay(n) - (now_s() - core.crashes[n - 1]) : 0;
	}
	r = start_worker(slot);
	if (r < 0)
		record_crash();
	return r;
}

/* A slot for one call, marked busy (with the lock held): an idle worker,
 * else a slot to start one in while the pool has room, else the first that
 * becomes free. NULL with an exception when the sandbox stops meanwhile. */
static struct slot *take_slot(void)
{
	for (;;) {
		struct slot *empty = NULL;
		struct timespec step = {0, 1000 * 1000};

		if (core.refcount <= 0) {
			PyErr_SetString(
			    PyExc_AssertionError,
			    "Daemon not started. Use 'with sandboxes()' or 'pysandboxes.run()'");
			return NULL;
		}
		for (int i = 0; i < core.max_workers; i++) {
			struct slot *s = &core.slots[i];

			if (s->busy)
				continue;
			if (s->child.pid > 0) {
				s->busy = true;
				return s;
			}
			if (!empty)
				empty = s;
		}
		if (empty) {
			empty->busy = true;
			return empty;
		}
		unlock();
		PyThreadState *ts = PyEval_SaveThread();

		nanosleep(&step, NULL);
		PyEval_RestoreThread(ts);
		if (PyErr_CheckSignals() < 0) {
			lock();
			return NULL;
		}
		lock();
	}
}

static void give_back(struct slot *s)
{
	lock();
	s->busy = false;
	unlock();
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
	int r;

	va_start(ap, fmt);
	r = sb_strv_vpushf(v, fmt, ap);
	va_end(ap);
	if (r < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return 0;
}

/* What the user wrote for one rule: keyword=repr(value). */
static int add_label(const char *keyword, PyObject *value)
{
	PyObject *repr = PyObject_Repr(value);
	const char *text = repr ? PyUnicode_AsUTF8(repr) : NULL;
	int r = text ? strv_addf(&core.rule_labels, "%s=%s", keyword, text) : -1;

	Py_XDECREF(repr);
	return r;
}

static int add_rule_value(char ***argv, const char *keyword, const char *key, PyObject *value)
{
	PyObject *s;
	int r;

	if (value == Py_None)
		return add_label(keyword, value) < 0 ? -1 : strv_addf(argv, "--%s", key);
	if (PyBool_Check(value))
		return add_label(keyword, value) < 0
			   ? -1
			   : strv_addf(argv, "--%s=%s", key, value == Py_True ? "true" : "false");
	if (PyAnySet_Check(value) || PyList_Check(value) || PyTuple_Check(value)) {
		PyObject *it = PyObject_GetIter(value), *item;

		r = it ? 0 : -1;
		while (r == 0 && it && (item = PyIter_Next(it))) {
			r = add_rule_value(argv, keyword, key, item);
			Py_DECREF(item);
		}
		Py_XDECREF(it);
		return r < 0 || PyErr_Occurred() ? -1 : 0;
	}
	s = PyObject_Str(value);
	if (!s)
		return -1;
	r = PyUnicode_AsUTF8(s) && add_label(keyword, value) == 0
		? strv_addf(argv, "--%s=%s", key, PyUnicode_AsUTF8(s))
		: -1;
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
		if (add_rule_value(argv, k, dashed, value) < 0)
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
		    strv_addf(argv, "--env=%s=${%s}", k, k) < 0 ||
		    strv_addf(&core.rule_labels, "envs['%s']", k) < 0) {
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
 * caller's modules from there; "" and relative entries are the parent's
 * current directory and below, made absolute), its __main__ (functions of a
 * script run there as __mp_main__), init_fn, the modules of the @sandbox
 * functions and the size limits. */
static int build_config(PyObject *init_fn, PyObject *preload, struct sb_buf_lite *b)
{
	PyObject *path = PySys_GetObject("path"), *main, *hold = NULL, *spec = NULL;
	PyObject *posixpath = PyImport_ImportModule("posixpath");
	char limit[32];
	const char *s;
	int r = posixpath ? 0 : -1;

	for (Py_ssize_t i = 0; path && PyList_Check(path) && r == 0 && i < PyList_GET_SIZE(path);
	     i++) {
		PyObject *p = PyList_GET_ITEM(path, i), *abs;

		if (!PyUnicode_Check(p))
			continue;
		/* abspath("") is the current directory, as "" means to import. */
		abs = PyObject_CallMethod(posixpath, "abspath", "O", p);
		if (abs && PyUnicode_Check(abs) && PyUnicode_AsUTF8(abs))
			r = config_add(b, "path", PyUnicode_AsUTF8(abs));
		Py_XDECREF(abs);
		PyErr_Clear();
	}
	Py_XDECREF(posixpath);
	snprintf(limit, sizeof(limit), "%zu", core.result_limit);
	if (r == 0)
		r = config_add(b, "result-limit", limit);
	snprintf(limit, sizeof(limit), "%zu", core.call_limit);
	if (r == 0)
		r = config_add(b, "call-limit", limit);
	for (Py_ssize_t i = 0; preload && r == 0 && i < PyList_GET_SIZE(preload); i++) {
		PyObject *m = PyList_GET_ITEM(preload, i);

		if (PyUnicode_Check(m) && PyUnicode_AsUTF8(m))
			r = config_add(b, "preload", PyUnicode_AsUTF8(m));
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
	sb_strv_free(core.rule_labels);
	free(core.config);
	core.argv = core.envp = core.rule_labels = NULL;
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
	static char *kwlist[] = {"init_fn",	 "config",	    "rules",
				 "envs",	 "python_args",	    "graceful_shutdown",
				 "call_timeout", "max_result_size", "max_argument_size",
				 "max_workers",	 "preload",	    NULL};
	PyObject *init_fn = Py_None, *config = Py_None, *rules = NULL, *envs = Py_None,
		 *python_args = Py_None, *preload = NULL, *r;
	int graceful = 1, started, max_workers = DEFAULT_MAX_WORKERS;
	double call_timeout = DEFAULT_CALL_TIMEOUT_S;
	unsigned long long result_limit = SB_RESULT_LIMIT, call_limit = SB_FRAME_HARD_MAX;
	bool none = false;
	struct sb_buf_lite buf = {0};
	const char *python_sb;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO!OOpdKKiO!:start", kwlist, &init_fn,
					 &config, &PyDict_Type, &rules, &envs, &python_args,
					 &graceful, &call_timeout, &result_limit, &call_limit,
					 &max_workers, &PyList_Type, &preload))
		return NULL;
	if (envs != Py_None && !PyDict_Check(envs))
		return PyErr_Format(PyExc_TypeError, "envs must be a dict");
	if (!(call_timeout >= 0))
		return PyErr_Format(PyExc_ValueError, "call_timeout must be positive (0: none)");
	if (result_limit == 0 || result_limit > SB_FRAME_SETTING_MAX || call_limit == 0 ||
	    call_limit > SB_FRAME_SETTING_MAX)
		return PyErr_Format(PyExc_ValueError,
				    "max_result_size and max_argument_size must be between 1 byte "
				    "and %u bytes (1 GiB)",
				    SB_FRAME_SETTING_MAX);
	if (max_workers < 1 || max_workers > MAX_WORKERS)
		return PyErr_Format(PyExc_ValueError, "max_workers must be between 1 and %d",
				    MAX_WORKERS);
	lock();
	if (core.refcount > 0 && core.owner != getpid()) {
		/* A child forked inside sandboxes() holds a copy of the parent's
		 * state, whose worker it cannot use: its own sandboxes() drops the
		 * copy (release_children() only closes the channels here, the parent's
		 * worker lives on) and starts a worker of its own. */
		release_children();
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
	core.call_timeout = call_timeout;
	core.result_limit = (size_t)result_limit;
	core.call_limit = (size_t)call_limit;
	core.max_workers = max_workers;
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
	    build_config(init_fn, preload, &buf) < 0)
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
		slots_reset();
		started = start_worker(&core.slots[0]);
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
	/* Calls still running (other threads) end first, as they would on one
	 * worker. */
	for (size_t i = 0; i < MAX_WORKERS; i++)
		while (core.slots[i].busy && core.owner == getpid()) {
			struct timespec step = {0, 1000 * 1000};

			unlock();
			PyThreadState *ts = PyEval_SaveThread();

			nanosleep(&step, NULL);
			PyEval_RestoreThread(ts);
			lock();
		}
	if (core.owner == getpid() && core.graceful) {
		/* The workers leave normally: what runs at their exit (learning
		 * writes its rules) runs. All are asked, then waited for. */
		PyThreadState *ts = PyEval_SaveThread();
		bool asked[MAX_WORKERS] = {false};

		for (size_t i = 0; i < MAX_WORKERS; i++)
			asked[i] =
			    core.slots[i].child.pid > 0 &&
			    sb_frame_write(core.slots[i].child.fd, SB_FRAME_EXIT, NULL, 0) == 0;
		for (size_t i = 0; i < MAX_WORKERS; i++)
			if (asked[i])
				sb_child_stop(&core.slots[i].child, EXIT_TIMEOUT_MS);
		PyEval_RestoreThread(ts);
	}
	release_children();
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

/* One call on one worker of the pool; timeout in seconds, 0 for none. */
static PyObject *remote_call(PyObject *payload, const char *what, double timeout)
{
	struct exchange x = {.what = what, .timeout = timeout};
	char type, *data = NULL;
	PyObject *result = NULL;
	size_t len;
	int r;

	lock();
	x.slot = take_slot();
	unlock();
	if (!x.slot)
		return NULL;
	r = ensure_worker(x.slot);
	if (r != 0) {
		give_back(x.slot);
		if (r == 1)
			core.in_process = true;
		return r == 1 ? Py_None : NULL; /* None: the caller calls directly */
	}
	x.deadline = timeout > 0 ? now_s() + timeout : INFINITY;
	set_receive_timeout(x.slot, timeout);
	if (check_idle(&x, "before the call") == 0 &&
	    write_channel(&x, SB_FRAME_CALL, PyBytes_AS_STRING(payload),
			  (size_t)PyBytes_GET_SIZE(payload)) == 0 &&
	    read_reply(&x, &type, &data, &len, core.result_limit) == 0) {
		if (check_idle(&x, "after its reply") < 0)
			result = NULL;
		else if (type == SB_FRAME_VALUE)
			result = sb_unpickle(data, len, core.result_limit, core.channel, what);
		else
			raise_reply(&x, type, data, len);
		PyMem_Free(data);
	}
	give_back(x.slot);
	return result;
}

static PyObject *core_call(PyObject *self _unused_, PyObject *args)
{
	PyObject *fn, *fargs, *fkwargs, *module = NULL, *qualname = NULL, *req, *pickle = NULL,
					*payload = NULL, *result = NULL;
	_cleanup_free_ char *what = NULL;

	PyObject *timeout_obj = Py_None;
	double timeout;

	if (!PyArg_ParseTuple(args, "OO!O!|O:call", &fn, &PyTuple_Type, &fargs, &PyDict_Type,
			      &fkwargs, &timeout_obj))
		return NULL;
	/* None: sandboxes()' call_timeout; 0 or inf: none. */
	timeout = timeout_obj == Py_None ? core.call_timeout : PyFloat_AsDouble(timeout_obj);
	if (timeout == -1 && PyErr_Occurred())
		return NULL;
	if (isinf(timeout))
		timeout = 0;
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
	if ((size_t)PyBytes_GET_SIZE(payload) > core.call_limit) {
		PyErr_Format(exc_class(SB_EXC_PROTOCOL),
			     "the arguments of %s are %zd bytes pickled, over the limit of %zu "
			     "bytes (max_argument_size)",
			     what, PyBytes_GET_SIZE(payload), core.call_limit);
		Py_DECREF(payload);
		return NULL;
	}
	result = remote_call(payload, what, timeout);
	Py_DECREF(payload);
	if (result == Py_None && core.in_process)
		return PyObject_Call(fn, fargs, fkwargs);
	return result;
}

static PyObject *core_in_process(PyObject *self _unused_, PyObject *unused _unused_)
{
	return PyBool_FromLong(core.refcount > 0 && core.in_process);
}

/* The first worker's pid (the one sequential calls use), or None. */
static PyObject *core_worker_pid(PyObject *self _unused_, PyObject *unused _unused_)
{
	if (core.slots[0].child.pid > 0)
		return PyLong_FromLong(core.slots[0].child.pid);
	Py_RETURN_NONE;
}

static PyObject *core_worker_pids(PyObject *self _unused_, PyObject *unused _unused_)
{
	PyObject *list = PyList_New(0);

	for (size_t i = 0; list && i < MAX_WORKERS; i++) {
		PyObject *pid;

		if (core.slots[i].child.pid <= 0)
			continue;
		pid = PyLong_FromLong(core.slots[i].child.pid);
		if (!pid || PyList_Append(list, pid) < 0)
			Py_CLEAR(list);
		Py_XDECREF(pid);
	}
	return list;
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
	r = sb_unpickle(buf.buf, (size_t)buf.len, SB_RESULT_LIMIT, ch, "guarded_loads()");
	PyBuffer_Release(&buf);
	return r;
}

static PyMethodDef core_methods[] = {
    {"start", (PyCFunction)(void (*)(void))core_start, METH_VARARGS | METH_KEYWORDS,
     "start(init_fn, config, rules, envs, python_args, graceful_shutdown, call_timeout, "
     "max_result_size, max_argument_size, max_workers, preload): start (or reuse) the "
     "workers."},
    {"stop", core_stop, METH_NOARGS, "Release one start; the last one stops the worker."},
    {"call", core_call, METH_VARARGS,
     "call(fn, args, kwargs, timeout=None): run fn in the sandbox (timeout in seconds; None: "
     "the call_timeout of sandboxes())."},
    {"in_process", core_in_process, METH_NOARGS, "True under os-sandbox=none."},
    {"worker_pid", core_worker_pid, METH_NOARGS, "The first worker's pid, or None."},
    {"worker_pids", core_worker_pids, METH_NOARGS, "The pids of the running workers."},
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
	if (!core.lock) {
		slots_reset();
		core.max_workers = 1;
	}
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
