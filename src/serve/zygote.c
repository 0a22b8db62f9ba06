/* SPDX-License-Identifier: MIT */
/* The fork server (zygote.h; docs/serve.md, "The fork server").
 *
 * The server is single-threaded when it forks, which is what makes fork()
 * safe for an interpreter: no other thread can hold the GIL, a malloc arena,
 * the import lock or a stdio lock at that moment. CPython starts no thread of
 * its own, the warm-up imports only standard modules that start none, and the
 * server checks (/proc/self/status and the interpreter's thread states) before
 * it says READY; after that it runs no Python code but the at-fork hooks
 * (PyOS_BeforeFork/AfterFork_Parent), so nothing can start one. The child
 * calls PyOS_AfterFork_Child() (the GIL, the import lock, the thread states
 * made anew; the at-fork hooks of the warmed modules: `random` reseeds) once
 * it is in its sandbox.
 *
 * The server never reads a run's program, input or output: it passes their
 * descriptors to the child, which takes them at fds 0-5 and closes every
 * other one (the control socket, the other runs' sockets) before anything of
 * the run is read. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "zygote.h"

#include "audit-guard.h"
#include "boundary.h"
#include "guard-net.h"
#include "report-collector.h"
#include "report-shm.h"
#include "util.h"
#include "zygote-proto.h"

/* What a code runner's programs typically import, warmed in the server when
 * the profile allows them: pure-computation modules of the standard library
 * that start no thread and touch nothing outside the interpreter when they
 * are imported. */
static const char *const warm_modules[] = {
    "abc",	   "array",	 "base64",	"binascii",  "bisect",	    "calendar", "cmath",
    "collections", "contextlib", "copy",	"csv",	     "dataclasses", "datetime", "decimal",
    "difflib",	   "enum",	 "fractions",	"functools", "hashlib",	    "heapq",	"io",
    "itertools",   "json",	 "math",	"numbers",   "operator",    "os",	"pprint",
    "random",	   "re",	 "statistics",	"string",    "struct",	    "sys",	"textwrap",
    "time",	   "typing",	 "unicodedata", "zlib",
};

/* One run in flight. */
struct zrun {
	uint64_t id;
	pid_t pid;
	int reply; /* -1 once the service closed it */
	uint64_t start_ns, deadline_ns;
	uint32_t killed; /* enum sb_zkill */
};

static struct {
	int ctl, sfd;
	struct sb_boundary boundary;
	struct zrun *runs;
	size_t n_runs, cap;
} z = {.ctl = -1, .sfd = -1};

/* ------------------------------------------------------------------------ */
/* The child: one run */

static _Noreturn void child_fail(int reply, int r, const char *fmt, ...) _printf_(3, 4);
static _Noreturn void child_fail(int reply, int r, const char *fmt, ...)
{
	_cleanup_free_ char *text = NULL, *full = NULL;
	struct sb_zmsg m = {.type = SB_ZMSG_FAILED};
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	if (r < 0 && asprintf(&full, "%s: %s", text ? text : "?", strerror(-r)) < 0)
		full = NULL;
	m.failed.message = full ? full : text;
	(void)sb_zmsg_send(reply, &m, NULL, 0);
	_exit(127);
}

/* The run's descriptors at 0-5 in SB_ZRUN_FD_* order, every other one
 * closed: first copied above all of them, so that no dup3() overwrites a
 * source still to be placed. */
static int place_fds(const int fds[SB_ZRUN_N_FDS])
{
	int moved[SB_ZRUN_N_FDS];

	for (int i = 0; i < SB_ZRUN_N_FDS; i++) {
		moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, SB_ZRUN_N_FDS);
		if (moved[i] < 0)
			return -errno;
	}
	for (int i = 0; i < SB_ZRUN_N_FDS; i++)
		if (dup3(moved[i], i, i > 2 ? O_CLOEXEC : 0) < 0)
			return -errno;
	if (syscall(SYS_close_range, SB_ZRUN_N_FDS, ~0U, 0) < 0)
		return -errno;
	return 0;
}

static int read_args(int fd, char ***ret)
{
	_cleanup_free_ uint8_t *buf = NULL;
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size < 0 || (uint64_t)st.st_size > SB_ZARGS_MAX_SIZE)
		return -E2BIG;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	n = pread(fd, buf, (size_t)st.st_size, 0);
	if (n != st.st_size)
		return n < 0 ? -errno : -EIO;
	return sb_zargs_decode(buf, (size_t)n, ret);
}

static int set_argv_and_path(const char *rundir, char **args)
{
	PyObject *argv = PyList_New(0), *path = PySys_GetObject("path"), *dir; /* path borrowed */
	int r = argv ? 0 : -1;

	/* As `python main.py ARGS`: sys.argv[0] as written, sys.path[0] the
	 * script's directory. */
	for (ssize_t i = -1; r == 0 && (i < 0 || (args && args[i])); i++) {
		PyObject *a = PyUnicode_DecodeFSDefault(i < 0 ? "main.py" : args[i]);

		r = a ? PyList_Append(argv, a) : -1;
		Py_XDECREF(a);
	}
	if (r == 0)
		r = PySys_SetObject("argv", argv);
	Py_XDECREF(argv);
	if (r == 0 && (!path || !PyList_Check(path)))
		r = -1;
	dir = r == 0 ? PyUnicode_DecodeFSDefault(rundir) : NULL;
	if (r == 0)
		r = dir ? PyList_Insert(path, 0, dir) : -1;
	Py_XDECREF(dir);
	if (r < 0)
		PyErr_Clear();
	return r < 0 ? -ENOMEM : 0;
}

/* The exit status of a SystemExit, as CPython's _Py_HandleSystemExit()
 * computes it (and prints a code that is not an integer). Takes value. */
static int system_exit_status(PyObject *value)
{
	PyObject *err = PySys_GetObject("stderr"); /* borrowed */
	int status = 0;

	if (value && PyExceptionInstance_Check(value)) {
		PyObject *code = PyObject_GetAttrString(value, "code");

		if (code) {
			Py_DECREF(value);
			value = code;
		}
		PyErr_Clear();
	}
	if (!value || value == Py_None) {
		status = 0;
	} else if (PyLong_Check(value)) {
		status = (int)PyLong_AsLong(value);
		PyErr_Clear();
	} else {
		if (err && err != Py_None)
			PyFile_WriteObject(value, err, Py_PRINT_RAW);
		PyErr_Clear();
		PySys_WriteStderr("\n");
		status = 1;
	}
	Py_XDECREF(value);
	return status;
}

/* The program's exception, if one is pending, is kept for its handling after
 * the flush (as CPython's flush_io() does): flushing with it set would call
 * Python code with an exception pending, and report the program's own
 * exception as the flush's, "Exception ignored in: <stderr>". */
static void flush_std_files(int *status)
{
	static const char *const names[] = {"stderr", "stdout"};
	PyObject *type, *value, *tb;

	PyErr_Fetch(&type, &value, &tb);
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		PyObject *f = PySys_GetObject(names[i]), *r; /* borrowed */

		if (!f || f == Py_None)
			continue;
		r = PyObject_CallMethod(f, "flush", NULL);
		if (!r) {
			PyErr_WriteUnraisable(f);
			*status = 120;
		}
		Py_XDECREF(r);
	}
	PyErr_Restore(type, value, tb);
}

/* Calls module.function() of a module already loaded, if it is. */
static void call_if_loaded(const char *module, const char *function)
{
	PyObject *name = PyUnicode_FromString(module);
	PyObject *m = name ? PyImport_GetModule(name) : NULL, *r;

	Py_XDECREF(name);
	if (m) {
		r = PyObject_CallMethod(m, function, NULL);
		if (!r)
			PyErr_WriteUnraisable(m);
		Py_XDECREF(r);
		Py_DECREF(m);
	}
	PyErr_Clear();
}

/* What CPython's module clean-up does to __main__ first: underscore names,
 * then the others, set to None (not __builtins__), so that what the program
 * left there is finalised (files closed, __del__ run) while the rest is
 * still there for their finalizers. */
static void clear_main(PyObject *d)
{
	for (int pass = 0; pass < 2; pass++) {
		PyObject *key, *value;
		Py_ssize_t pos = 0;

		while (PyDict_Next(d, &pos, &key, &value)) {
			const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;

			if (value == Py_None || !k || streq(k, "__builtins__"))
				continue;
			if (pass == 0 && !(k[0] == '_' && k[1] != '_'))
				continue;
			if (PyDict_SetItem(d, key, Py_None) < 0)
				PyErr_WriteUnraisable(NULL);
		}
	}
	PyErr_Clear();
}

/* __main__.__loader__ as CPython sets it for a script: a SourceFileLoader
 * (a program may ask it for its own source). */
static void set_main_loader(PyObject *d, const char *path)
{
	PyObject *name = PyUnicode_FromString("_frozen_importlib_external");
	PyObject *bootstrap = name ? PyImport_GetModule(name) : NULL;
	PyObject *loader =
	    bootstrap ? PyObject_CallMethod(bootstrap, "SourceFileLoader", "ss", "__main__", path)
		      : NULL;

	if (loader && PyDict_SetItemString(d, "__loader__", loader) < 0)
		PyErr_Clear();
	Py_XDECREF(loader);
	Py_XDECREF(bootstrap);
	Py_XDECREF(name);
	PyErr_Clear();
}

/* What Py_RunMain() does for `python main.py`, on the interpreter this
 * process already has: the audit event, the file run as __main__ (as
 * PyRun_SimpleFile() runs it, SystemExit and an uncaught exception handled
 * here), then the end. Finalising the interpreter (Py_FinalizeEx()) would
 * tear down every warmed module, about 15 ms of CPU, the cost of a whole
 * run several times over: unless the profile lets the program write files
 * (then it does, so that every file object is flushed and closed as
 * CPython would), the end is what a program can see of it: non-daemon
 * threads joined, atexit handlers, __main__'s objects finalised, stdout and
 * stderr flushed, and the process exits (docs/serve.md). The exit status. */
static int run_main(const char *path, bool finalize)
{
	PyCompilerFlags cf = _PyCompilerFlags_INIT;
	PyObject *main_mod = PyImport_AddModule("__main__"); /* borrowed */
	PyObject *d = main_mod ? PyModule_GetDict(main_mod) : NULL, *v, *file;
	bool interrupted = false;
	int status = 0;
	FILE *fp;

	if (!d || PySys_Audit("cpython.run_file", "s", path) < 0) {
		PyErr_Print();
		status = 1;
		goto out;
	}
	fp = fopen(path, "rb");
	if (!fp) {
		PySys_FormatStderr("python-sb: can't open file '%s': [Errno %d] %s\n", path, errno,
				   strerror(errno));
		status = 2;
		goto out;
	}
	file = PyUnicode_DecodeFSDefault(path);
	if (!file || PyDict_SetItemString(d, "__file__", file) < 0 ||
	    PyDict_SetItemString(d, "__cached__", Py_None) < 0 || Py_MakePendingCalls() < 0) {
		Py_XDECREF(file);
		fclose(fp);
		PyErr_Print();
		status = 1;
		goto out;
	}
	Py_DECREF(file);
	set_main_loader(d, path);
	/* closeit: the file is closed before the program's code runs. */
	v = PyRun_FileExFlags(fp, path, Py_file_input, d, d, 1, &cf);
	flush_std_files(&status);
	if (v) {
		Py_DECREF(v);
	} else if (PyErr_ExceptionMatches(PyExc_SystemExit)) {
		PyObject *type, *value, *tb;

		PyErr_Fetch(&type, &value, &tb);
		PyErr_NormalizeException(&type, &value, &tb);
		Py_XDECREF(type);
		Py_XDECREF(tb);
		status = system_exit_status(value);
	} else {
		interrupted = PyErr_ExceptionMatches(PyExc_KeyboardInterrupt);
		PyErr_Print();
		status = 1;
	}
	if (PyDict_DelItemString(d, "__file__") < 0 || PyDict_DelItemString(d, "__cached__") < 0)
		PyErr_Clear();
out:
	if (finalize) {
		if (Py_FinalizeEx() < 0)
			status = 120;
	} else {
		call_if_loaded("threading", "_shutdown");
		call_if_loaded("atexit", "_run_exitfuncs");
		if (d)
			clear_main(d);
		flush_std_files(&status);
	}
	if (interrupted) {
		/* As CPython: die of the SIGINT the program did not handle. */
		fflush(NULL);
		signal(SIGINT, SIG_DFL);
		kill(getpid(), SIGINT);
	}
	return status;
}

static _Noreturn void child(const struct sb_zmsg *msg, const int fds[SB_ZRUN_N_FDS], pid_t server)
{
	_cleanup_strv_free_ char **args = NULL, **warnings = NULL;
	_cleanup_free_ char *err = NULL, *program = NULL;
	const char *rundir = msg->run.rundir;
	struct sb_boundary *b = &z.boundary; /* this process's copy */
	struct sb_report_shm *region = NULL;
	int reply = fds[SB_ZRUN_FD_REPLY], status, r;
	sigset_t none;

	/* The run dies with the server, which alone can supervise it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != server)
		_exit(127);
	r = place_fds(fds);
	if (r < 0)
		child_fail(reply, r, "cannot take the run's descriptors");
	reply = SB_ZRUN_FD_REPLY;
	r = read_args(SB_ZRUN_FD_ARGS, &args);
	if (r < 0)
		child_fail(reply, r, "cannot read the run's arguments");
	r = sb_report_shm_map(SB_ZRUN_FD_REPORT, &region);
	if (r < 0)
		child_fail(reply, r, "cannot map the report's region");
	close(SB_ZRUN_FD_ARGS);
	close(SB_ZRUN_FD_REPORT);
	if (asprintf(&program, "%s/main.py", rundir) < 0)
		child_fail(reply, -ENOMEM, "out of memory");
	/* Out of the server's session; in the run's directory. */
	if (setsid() < 0 || chdir(rundir) < 0)
		child_fail(reply, -errno, "cannot enter the run's directory %s", rundir);

	/* The profile's boundary, built once by the server, with this run's
	 * directory (read-only) and its limits (request.c: never above the
	 * profile's); the identity change, no capabilities, Landlock, seccomp
	 * and the rlimits in one step, before anything of Python runs. */
	if (msg->run.cpu_ms && (!b->limits.cpu_ms || msg->run.cpu_ms < b->limits.cpu_ms))
		b->limits.cpu_ms = msg->run.cpu_ms;
	if (msg->run.memory_bytes &&
	    (!b->limits.memory_bytes || msg->run.memory_bytes < b->limits.memory_bytes))
		b->limits.memory_bytes = msg->run.memory_bytes;
	r = sb_boundary_add_path(b, rundir, false, "the run's directory");
	if (r < 0)
		child_fail(reply, r, "cannot grant the run's directory");
	/* check_profile() refused the providers that return 1 from here. */
	r = sb_boundary_enter(b, &warnings, &status, &err);
	if (r != 0)
		child_fail(reply, r < 0 ? r : -EOPNOTSUPP, "the sandbox cannot be applied: %s",
			   err ? err : "");

	/* Python again, in the sandbox: the GIL, the import lock and the
	 * thread states made anew, the warmed modules' at-fork hooks. */
	PyOS_AfterFork_Child();
	r = sb_guard_fork_child(rundir);
	if (r >= 0)
		r = set_argv_and_path(rundir, args);
	if (r < 0)
		child_fail(reply, r, "cannot prepare the run");
	/* The server blocks SIGCHLD for its signalfd: the program starts with
	 * nothing blocked, the dispositions being the interpreter's own. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (char **w = warnings; w && *w; w++)
		fprintf(stderr, "python-sb: warning: %s\n", *w);
	r = sb_report_collector_begin(region, program, &err);
	if (r < 0)
		child_fail(reply, r, "%s", err ? err : "cannot begin the report");
	close(reply);
	r = run_main(program, b->seccomp.allow_write);
	fflush(stdout);
	fflush(stderr);
	_exit(r);
}

/* ------------------------------------------------------------------------ */
/* The server */

static int send_done(struct zrun *run, int status, const struct rusage *ru)
{
	struct sb_zmsg m = {
	    .type = SB_ZMSG_DONE,
	    .done = {.id = run->id,
		     .status = status,
		     .killed = run->killed,
		     .wall_ns = sb_monotonic_ns() - run->start_ns,
		     .utime_us = (uint64_t)ru->ru_utime.tv_sec * 1000000ULL +
				 (uint64_t)ru->ru_utime.tv_usec,
		     .stime_us = (uint64_t)ru->ru_stime.tv_sec * 1000000ULL +
				 (uint64_t)ru->ru_stime.tv_usec,
		     .maxrss_kb = (uint64_t)ru->ru_maxrss},
	};

	return run->reply >= 0 ? sb_zmsg_send(run->reply, &m, NULL, 0) : 0;
}

static void close_fds(int fds[SB_ZRUN_N_FDS])
{
	for (int i = 0; i < SB_ZRUN_N_FDS; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

static void drop_run(size_t i)
{
	if (z.runs[i].reply >= 0)
		close(z.runs[i].reply);
	z.runs[i] = z.runs[--z.n_runs];
}

static void kill_run(struct zrun *run, uint32_t why)
{
	if (run->killed)
		return;
	run->killed = why;
	/* Not reaped yet, so the pid is still this run's. */
	kill(run->pid, SIGKILL);
}

static void start_run(struct sb_zmsg *msg, int fds[SB_ZRUN_N_FDS])
{
	const struct sb_limits *l = &z.boundary.limits;
	uint64_t timeout_ms = msg->run.timeout_ms ? msg->run.timeout_ms : l->timeout_ms;
	struct zrun *run;
	pid_t pid;

	if (z.n_runs == z.cap) {
		size_t cap = z.cap ? z.cap * 2 : 16;
		struct zrun *n = realloc(z.runs, cap * sizeof(*n));

		if (!n) {
			struct sb_zmsg m = {.type = SB_ZMSG_FAILED,
					    .failed.message =
						(char *)"the fork server is out of memory"};

			(void)sb_zmsg_send(fds[SB_ZRUN_FD_REPLY], &m, NULL, 0);
			close_fds(fds);
			return;
		}
		z.runs = n;
		z.cap = cap;
	}
	run = &z.runs[z.n_runs];
	*run = (struct zrun){.id = msg->run.id, .reply = fds[SB_ZRUN_FD_REPLY]};
	fds[SB_ZRUN_FD_REPLY] = -1;
	run->start_ns = sb_monotonic_ns();
	run->deadline_ns = timeout_ms ? run->start_ns + timeout_ms * 1000000ULL : UINT64_MAX;
	/* Nothing of the server's buffered output may reach the run's. */
	fflush(stdout);
	fflush(stderr);
	PyOS_BeforeFork();
	pid = fork();
	if (pid == 0) {
		int child_fds[SB_ZRUN_N_FDS];

		memcpy(child_fds, fds, sizeof(child_fds));
		child_fds[SB_ZRUN_FD_REPLY] = run->reply;
		child(msg, child_fds, getppid());
	}
	PyOS_AfterFork_Parent();
	close_fds(fds);
	if (pid < 0) {
		struct sb_zmsg m = {.type = SB_ZMSG_FAILED,
				    .failed.message = (char *)"the fork server cannot fork"};
		struct rusage ru = {0};

		(void)sb_zmsg_send(run->reply, &m, NULL, 0);
		(void)send_done(run, W_EXITCODE(127, 0), &ru);
		close(run->reply);
		return;
	}
	run->pid = pid;
	z.n_runs++;
}

static bool is_run(pid_t pid)
{
	for (size_t i = 0; i < z.n_runs; i++)
		if (z.runs[i].pid == pid)
			return true;
	return false;
}

/* A run is one process: its seccomp filter refuses fork(), vfork() and the
 * clone() of a process. Should one be made all the same, the server is a
 * child subreaper, so that it is re-parented here when its parent ends, and
 * after every reap each child that is not a run is killed (it is not reaped
 * yet, so the pid is still that child's): belt and braces, one read of
 * /proc per reap. */
static void kill_strays(void)
{
	char path[64], buf[4096];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *p = buf, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid > 0 && !is_run((pid_t)pid))
			kill((pid_t)pid, SIGKILL);
	}
}

static void reap(void)
{
	bool reaped = false;

	for (;;) {
		struct rusage ru;
		int status;
		pid_t pid = wait4(-1, &status, WNOHANG, &ru);

		if (pid <= 0)
			break;
		for (size_t i = 0; i < z.n_runs; i++)
			if (z.runs[i].pid == pid) {
				(void)send_done(&z.runs[i], status, &ru);
				drop_run(i);
				break;
			}
		reaped = true;
	}
	if (reaped)
		kill_strays();
}

/* A message on a run's socket: KILL, or its end (the service gave up). */
static void from_service(struct zrun *run)
{
	struct sb_zmsg m;
	int fds[SB_ZRUN_N_FDS];
	int r = sb_zmsg_recv(run->reply, &m, fds);

	if (r >= 0 && m.type == SB_ZMSG_KILL) {
		kill_run(run, m.kill.reason == SB_ZKILL_OUTPUT ? SB_ZKILL_OUTPUT : SB_ZKILL_GONE);
		sb_zmsg_done(&m);
		return;
	}
	if (r >= 0)
		sb_zmsg_done(&m);
	if (r == -EAGAIN || r == -EINTR)
		return;
	kill_run(run, SB_ZKILL_GONE);
	close(run->reply);
	run->reply = -1;
}

/* The service went away: every run goes with it. */
static void stop_all(void)
{
	for (size_t i = 0; i < z.n_runs; i++)
		kill_run(&z.runs[i], SB_ZKILL_GONE);
	while (z.n_runs > 0) {
		int status;
		pid_t pid = waitpid(-1, &status, 0);

		if (pid < 0 && errno != EINTR)
			break;
		for (size_t i = 0; pid > 0 && i < z.n_runs; i++)
			if (z.runs[i].pid == pid) {
				drop_run(i);
				break;
			}
	}
}

static int serve(void)
{
	_cleanup_free_ struct pollfd *pfd = NULL;
	size_t pfd_cap = 0;

	for (;;) {
		uint64_t now = sb_monotonic_ns(), wake = UINT64_MAX;
		size_t n = 2;
		int timeout;

		if (pfd_cap < z.n_runs + 2) {
			struct pollfd *p = realloc(pfd, (z.n_runs + 2) * 2 * sizeof(*p));

			if (!p)
				return -ENOMEM;
			pfd = p;
			pfd_cap = (z.n_runs + 2) * 2;
		}
		pfd[0] = (struct pollfd){.fd = z.ctl, .events = POLLIN};
		pfd[1] = (struct pollfd){.fd = z.sfd, .events = POLLIN};
		for (size_t i = 0; i < z.n_runs; i++) {
			struct zrun *run = &z.runs[i];

			if (!run->killed && now >= run->deadline_ns)
				kill_run(run, SB_ZKILL_TIMEOUT);
			if (!run->killed && run->deadline_ns < wake)
				wake = run->deadline_ns;
			pfd[n++] = (struct pollfd){.fd = run->reply, .events = POLLIN};
		}
		timeout = wake == UINT64_MAX ? -1
			  : wake <= now	     ? 0
					     : (int)((wake - now + 999999) / 1000000);
		if (poll(pfd, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[1].revents) {
			struct signalfd_siginfo si;

			while (read(z.sfd, &si, sizeof(si)) > 0)
				;
			reap();
		}
		/* The runs' sockets before new runs: pfd[2..] still match
		 * z.runs[] (reap() may have dropped some: matched by fd). */
		for (size_t k = 2; k < n; k++) {
			if (!pfd[k].revents || pfd[k].fd < 0)
				continue;
			for (size_t i = 0; i < z.n_runs; i++)
				if (z.runs[i].reply == pfd[k].fd) {
					from_service(&z.runs[i]);
					break;
				}
		}
		if (pfd[0].revents) {
			struct sb_zmsg m;
			int fds[SB_ZRUN_N_FDS];
			int r = sb_zmsg_recv(z.ctl, &m, fds);

			if (r == -ECONNRESET || (r < 0 && (pfd[0].revents & (POLLHUP | POLLERR)))) {
				stop_all();
				return 0;
			}
			if (r >= 0 && m.type == SB_ZMSG_RUN)
				start_run(&m, fds);
			else if (r >= 0)
				close_fds(fds);
			if (r >= 0)
				sb_zmsg_done(&m);
		}
	}
}

/* ------------------------------------------------------------------------ */
/* Start-up */

static bool import_allowed(const struct sb_profile *p, const char *name)
{
	if (p->import_all)
		return true;
	for (size_t i = 0; i < p->n_imports; i++)
		if (streq(p->imports[i].name, name))
			return true;
	return false;
}

static uint32_t warm_up(const struct sb_profile *p)
{
	uint32_t n = 0;

	for (size_t i = 0; i < ELEMENTSOF(warm_modules); i++) {
		PyObject *m;

		if (!import_allowed(p, warm_modules[i]))
			continue;
		m = PyImport_ImportModule(warm_modules[i]);
		if (m)
			n++;
		Py_XDECREF(m);
		PyErr_Clear();
	}
	return n;
}

/* What the warm-up left is collected, and every object there is moved out
 * of the collector's generations (gc.freeze()): a collection in a run then
 * never walks the server's objects, whose headers it would write, copying
 * their pages into the child one by one. */
static void freeze_objects(void)
{
	PyObject *gc = PyImport_ImportModule("gc"), *r;

	r = gc ? PyObject_CallMethod(gc, "collect", NULL) : NULL;
	Py_XDECREF(r);
	r = gc ? PyObject_CallMethod(gc, "freeze", NULL) : NULL;
	Py_XDECREF(r);
	Py_XDECREF(gc);
	PyErr_Clear();
}

static uint64_t status_field(const char *key)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	size_t len = strlen(key);
	unsigned long long v = 0;

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, len) == 0 && sscanf(line + len, "%llu", &v) == 1)
			break;
	return v;
}

/* Fork is only safe from a single thread (see the top of this file). */
static int check_single_threaded(char **reterr)
{
	PyThreadState *t = PyInterpreterState_ThreadHead(PyInterpreterState_Get());

	if (status_field("Threads:") != 1 || !t || PyThreadState_Next(t))
		return sb_error(reterr, -EBUSY,
				"the fork server has more than one thread after its warm-up: "
				"it cannot fork safely");
	return 0;
}

/* What the fork server needs of the profile: a boundary this process can
 * enter in each child, and a kernel that refuses new processes to the
 * program, so that each run is one process the server reaps (threads aside,
 * which die with it). */
static int check_profile(const struct sb_embed *e, char **reterr)
{
	if (e->provider->flags & (SB_PROVIDER_WRAPS_EXEC | SB_PROVIDER_CHILD_PROCESS))
		return sb_error(reterr, -EOPNOTSUPP,
				"os-sandbox=%s runs the program in a process of its own: the fork "
				"server cannot; use --fresh-exec",
				e->provider->name);
	if (!z.boundary.use_seccomp || z.boundary.seccomp.allow_fork)
		return sb_error(reterr, -EOPNOTSUPP,
				"the fork server supervises runs of one process: it needs a "
				"provider with the seccomp filter (os-sandbox=%s has none) and a "
				"profile that refuses new processes (python-api process-exec "
				"functions); use --fresh-exec",
				e->provider->name);
	return 0;
}

int sb_zygote_serve(const struct sb_embed *e, int fd, char **reterr)
{
	_cleanup_(sb_interp_paths_done) struct sb_interp_paths paths = {0};
	_cleanup_strv_free_ char **net_warnings = NULL;
	struct sb_embed_state *state = NULL;
	struct sb_zmsg ready = {.type = SB_ZMSG_READY};
	uint64_t start;
	sigset_t chld;
	bool done = false;
	int r, code = 0;

	z.ctl = fd;
	/* No fastbins in this process: a child's first large allocation would
	 * otherwise consolidate every fastbin chunk the server freed, writing
	 * to pages all over the heap, each then copied into the child (perf:
	 * about a tenth of a run's CPU; bench/README.md). tcache and pymalloc
	 * still serve small blocks. */
	mallopt(M_MXFAST, 0);
	r = sb_embed_prepare(e, &state, &paths, reterr);
	if (r < 0)
		return r;
	r = sb_boundary_build(e->profile, e->provider, &paths, SB_MODE_ENFORCE, &z.boundary);
	if (r < 0)
		return sb_error(reterr, r, "cannot build the kernel policy");
	r = check_profile(e, reterr);
	if (r < 0)
		return r;
	if (z.boundary.rule_file_conflict)
		return sb_error(reterr, -EPERM, "%s", z.boundary.rule_file_conflict);
	/* Host names pinned now, as python-sb does before its boundary. */
	if (e->profile->py_sandbox) {
		r = sb_guard_net_resolve(e->profile, &net_warnings, reterr);
		if (r < 0)
			return r;
	}
	r = sb_embed_start(state, &paths, &done, &code, reterr);
	if (r < 0)
		return r;
	if (done)
		return sb_error(reterr, -ECANCELED, "the interpreter exited while starting (%d)",
				code);

	start = sb_monotonic_ns();
	ready.ready.modules = warm_up(e->profile);
	freeze_objects();
	ready.ready.warm_ns = sb_monotonic_ns() - start;
	/* Each child would do these at its first decision otherwise. */
	r = sb_guard_settle(reterr);
	if (r < 0)
		return r;
	r = check_single_threaded(reterr);
	if (r < 0)
		return r;

	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return sb_error(reterr, -errno, "cannot become a child subreaper: %s",
				strerror(errno));
	/* Children are reaped from a signalfd; the mask is the children's
	 * too, until they clear it. */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, NULL) < 0)
		return sb_error(reterr, -errno, "cannot block SIGCHLD: %s", strerror(errno));
	z.sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (z.sfd < 0)
		return sb_error(reterr, -errno, "cannot create a signalfd: %s", strerror(errno));

	ready.ready.pid = (uint32_t)getpid();
	ready.ready.rss_kb = status_field("VmRSS:");
	ready.ready.provider = (char *)e->provider->name;
	r = sb_zmsg_send(z.ctl, &ready, NULL, 0);
	if (r < 0)
		return sb_error(reterr, r, "cannot reach the service: %s", strerror(-r));
	r = serve();
	if (r < 0)
		return sb_error(reterr, r, "the fork server failed: %s", strerror(-r));
	return 0;
}
