/* SPDX-License-Identifier: MIT */
/* python-sb under a wrapper provider: the handover record, the wrapper's run
 * and its exit status (wrap.h says why it is done this way). */
#include "wrap.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>

#include "wrap-net.h"

#define RECORD_MAGIC "python-sb-inside 1"
#define RECORD_NAME  "python-sb-inside"
#define RECORD_MAX   (16u << 20)
#define ALL_SEALS    (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)
/* Past the run's timeout=, what the inner supervisor gets to kill the
 * program and report 124 itself before the tool is killed. */
#define RUN_GRACE_MS 5000

/* Signals a terminal sends to the whole foreground process group: the
 * launching side and the wrapper leave them to the program. */
static const int terminal_signals[] = {SIGINT, SIGQUIT};
/* Signals sent to python-sb itself: passed on to the wrapper, which ends the
 * sandbox. */
static const int forwarded_signals[] = {SIGTERM, SIGHUP};

/* ------------------------------------------------------------------------ */
/* The launching side */

static int put_entry(struct sb_buf *b, const char *key, const char *value)
{
	int r = sb_buf_printf(b, "%s=%s", key, value);

	return r < 0 ? r : sb_buf_putc(b, '\0');
}

/* The record's text: NUL-separated key=value entries after the magic. */
static int record_text(const struct sb_wrap_launch *l, int status_fd, int report_fd,
		       int net_ready_fd, struct sb_buf *b)
{
	char num[16];
	int r;

	r = sb_buf_putn(b, RECORD_MAGIC, sizeof(RECORD_MAGIC));
	if (r >= 0)
		r = put_entry(b, "provider", l->provider->name);
	if (r >= 0)
		r = put_entry(b, "cwd", l->cwd);
	snprintf(num, sizeof(num), "%d", status_fd);
	if (r >= 0)
		r = put_entry(b, "status-fd", num);
	snprintf(num, sizeof(num), "%d", report_fd);
	if (r >= 0 && report_fd >= 0)
		r = put_entry(b, "report-fd", num);
	snprintf(num, sizeof(num), "%d", net_ready_fd);
	if (r >= 0 && net_ready_fd >= 0)
		r = put_entry(b, "net-ready-fd", num);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(terminal_signals); i++) {
		struct sigaction sa;

		/* Only what was the default here: a caller's SIG_IGN (nohup, a
		 * shell's background job) stays. */
		if (sigaction(terminal_signals[i], NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
			snprintf(num, sizeof(num), "%d", terminal_signals[i]);
			r = put_entry(b, "restore-signal", num);
		}
	}
	for (char **f = l->profile->files; r >= 0 && f && *f; f++)
		r = put_entry(b, "file", *f);
	for (char *const *e = l->host_env; r >= 0 && e && *e; e++)
		r = put_entry(b, "env", *e);
	if (r >= 0 && l->worker) {
		r = put_entry(b, "worker-config", "");
		/* Its own NUL-separated entries, each one of ours. */
		for (size_t off = 0; r >= 0 && off < l->worker->config_len;) {
			const char *entry = l->worker->config + off;
			size_t n = strnlen(entry, l->worker->config_len - off);

			r = sb_buf_puts(b, "worker=");
			if (r >= 0)
				r = sb_buf_putn(b, entry, n);
			if (r >= 0)
				r = sb_buf_putc(b, '\0');
			off += n + 1;
		}
	}
	return r;
}

/* The memfd that will hold the record, inherited by the wrapper: made first,
 * since the tool's command line names it, and written once the command line
 * is known (record_write()). */
static int record_open(int *ret_fd, char **reterr)
{
	int fd = memfd_create(RECORD_NAME, MFD_ALLOW_SEALING);

	if (fd < 0)
		return sb_error(reterr, -errno, "memfd_create: %s", strerror(errno));
	*ret_fd = fd;
	return 0;
}

/* The record written and sealed. */
static int record_write(const struct sb_wrap_launch *l, int fd, int status_fd, int report_fd,
			int net_ready_fd, char **reterr)
{
	struct sb_buf b = {0};
	int r;

	r = record_text(l, status_fd, report_fd, net_ready_fd, &b);
	if (r < 0) {
		sb_buf_reset(&b);
		return r;
	}
	for (size_t off = 0; off < b.len;) {
		ssize_t n = write(fd, b.data + off, b.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			sb_buf_reset(&b);
			return sb_error(reterr, r, "cannot write the handover record: %s",
					strerror(-r));
		}
		off += (size_t)n;
	}
	sb_buf_reset(&b);
	if (fcntl(fd, F_ADD_SEALS, ALL_SEALS) < 0)
		return sb_error(reterr, -errno, "cannot seal the handover record: %s",
				strerror(errno));
	return 0;
}

static int inheritable(int fd)
{
	int flags = fcntl(fd, F_GETFD);

	if (flags < 0 || fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) < 0)
		return -errno;
	return 0;
}

/* The inner python-sb's command line: the same arguments, after the record. */
static int inner_argv(const struct sb_wrap_launch *l, int record_fd, char ***ret)
{
	_cleanup_strv_free_ char **argv = NULL;
	char *opt;
	int r;

	r = sb_strv_push(&argv, l->self_exe);
	if (r < 0)
		return r;
	if (asprintf(&opt, "--pysandboxes-inside=%d", record_fd) < 0)
		return -ENOMEM;
	r = sb_strv_consume(&argv, opt);
	for (char *const *a = l->argv && l->argv[0] ? l->argv + 1 : NULL; r >= 0 && a && *a; a++)
		r = sb_strv_push(&argv, *a);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(argv);
	return 0;
}

/* Everything the wrapper needs: the record, the status pipe, the report's
 * file when this side opened it, its argv. */
struct prepared {
	int record_fd;
	int status_read, status_write;
	int report_file;
	int tool_fd; /* the tool's own (sb_wrap_request) */
	struct sb_wrap_net net;
	char **argv;
	unsigned long long start_timeout_ms, run_timeout_ms;
	char **warnings;
};

#define PREPARED_NONE ((struct prepared){-1, -1, -1, -1, -1, SB_WRAP_NET_NULL, NULL, 0, 0, NULL})

static void prepared_done(struct prepared *p)
{
	if (p->record_fd >= 0)
		close(p->record_fd);
	if (p->status_read >= 0)
		close(p->status_read);
	if (p->status_write >= 0)
		close(p->status_write);
	if (p->report_file >= 0)
		close(p->report_file);
	if (p->tool_fd >= 0)
		close(p->tool_fd);
	sb_wrap_net_done(&p->net);
	sb_strv_free(p->argv);
	sb_strv_free(p->warnings);
	*p = PREPARED_NONE;
}

/* --report: the caller's descriptor, or its file opened here as the
 * report's writer would (report-supervise.c); explaining opens nothing.
 * *ret_fd: -1 without a report. */
static int open_report(const struct sb_wrap_launch *l, bool explain, struct prepared *p,
		       int *ret_fd, char **reterr)
{
	*ret_fd = -1;
	if (!l->report)
		return 0;
	if (!l->report->path) {
		*ret_fd = l->report->fd;
		return 0;
	}
	if (explain)
		return 0;
	p->report_file =
	    open(l->report->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
	if (p->report_file < 0)
		return sb_error(reterr, -errno, "--report=%s: %s", l->report->path,
				strerror(errno));
	*ret_fd = p->report_file;
	return 0;
}

static int prepare(const struct sb_wrap_launch *l, bool explain, struct prepared *ret,
		   char **reterr)
{
	_cleanup_(prepared_done) struct prepared p = PREPARED_NONE;
	_cleanup_strv_free_ char **inner = NULL;
	bool record_first = l->provider->flags & SB_PROVIDER_RECORD_IN_IMAGE;
	int pipefd[2], keep[4], report;
	size_t n_keep = 0;
	int r;

	if (!l->provider->build_argv)
		return sb_error(reterr, -EOPNOTSUPP, "os-sandbox=%s has no command line",
				l->provider->name);
	/* The inner python-sb would refuse it too (sb_boundary_enter()). */
	if (l->boundary->rule_file_conflict && !explain)
		return sb_error(reterr, -EPERM, "%s", l->boundary->rule_file_conflict);
	if (!l->self_exe)
		return sb_error(reterr, -ENOENT,
				"cannot find python-sb's own binary (/proc/self/exe) to run it "
				"under os-sandbox=%s",
				l->provider->name);
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return sb_error(reterr, -errno, "pipe: %s", strerror(errno));
	p.status_read = pipefd[0];
	p.status_write = pipefd[1];
	r = open_report(l, explain, &p, &report, reterr);
	if (r < 0)
		return r;
	r = record_open(&p.record_fd, reterr);
	if (r < 0)
		return r;
	keep[n_keep++] = p.record_fd;
	keep[n_keep++] = p.status_write;
	if (l->worker)
		keep[n_keep++] = l->worker->fd;
	if (report >= 0)
		keep[n_keep++] = report;
	for (size_t i = 0; i < n_keep; i++) {
		r = inheritable(keep[i]);
		if (r < 0)
			return sb_error(reterr, r, "cannot hand descriptor %d over: %s", keep[i],
					strerror(-r));
	}
	r = inner_argv(l, p.record_fd, &inner);
	if (r < 0)
		return r;
	if (record_first) {
		r = record_write(l, p.record_fd, p.status_write, report, -1, reterr);
		if (r < 0)
			return r;
	}
	r = l->provider->build_argv(l->boundary, l->profile,
				    &(struct sb_wrap_request){
					.argv = inner,
					.keep_fds = keep,
					.n_keep_fds = n_keep,
					.cwd = l->cwd,
					.host_env = l->host_env,
					.tool_fd = &p.tool_fd,
					.start_timeout_ms = &p.start_timeout_ms,
					.run_timeout_ms = &p.run_timeout_ms,
					.warnings = &p.warnings,
					.net = &p.net,
					.explain = explain,
				    },
				    &p.argv, reterr);
	if (r < 0)
		return r;
	if (record_first && p.net.ready_inner >= 0)
		return sb_error(reterr, -EOPNOTSUPP,
				"os-sandbox=%s cannot hand a network over to python-sb inside",
				l->provider->name);
	if (!record_first) {
		r = record_write(l, p.record_fd, p.status_write, report, p.net.ready_inner, reterr);
		if (r < 0)
			return r;
	}
	*ret = p;
	p = PREPARED_NONE;
	return 0;
}

static volatile sig_atomic_t wrapper_pid, forwarded;

static void forward_signal(int sig)
{
	pid_t pid = wrapper_pid;

	if (pid > 0) {
		kill(pid, sig);
		forwarded = sig;
	}
}

#define STATUS_MAX 256
/* How long the inner python-sb may take to report its exit status after the
 * tool died of a signal. */
#define STATUS_WAIT_MS 2000

/* "started" and "exit=N" lines, once the tool has ended; buf (STATUS_MAX
 * bytes) holds the len bytes read already. What is there now, or with
 * wait_ms, what comes until every writer is gone (end-of-file) or that long:
 * a tool may die of the signal it forwarded before the program's own exit
 * (firejail and a Ctrl-C the program caught), and its python-sb reports the
 * status a moment later. */
static void read_status(int fd, struct sb_wrap_outcome *o, char *buf, size_t len, unsigned wait_ms)
{
	uint64_t deadline = sb_monotonic_ms() + wait_ms;
	ssize_t n;

	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (len < STATUS_MAX - 1 && (n = read(fd, buf + len, STATUS_MAX - 1 - len)) != 0) {
		uint64_t now;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && (now = sb_monotonic_ms()) < deadline) {
			struct pollfd pfd = {.fd = fd, .events = POLLIN};

			(void)poll(&pfd, 1, (int)(deadline - now));
			continue;
		}
		if (n < 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	for (char *line = buf, *end; *line; line = end) {
		const char *v;

		end = strchrnul(line, '\n');
		if (*end)
			*end++ = '\0';
		if (streq(line, "started"))
			o->started = true;
		else if ((v = startswith(line, "exit=")) && !o->exited) {
			unsigned long long code;

			if (sb_safe_atou64(v, &code) >= 0 && code <= 255) {
				o->exited = true;
				o->exit_code = (int)code;
			}
		}
	}
}

/* Waits for the tool as waitpid() would, reading the status lines as they
 * come (into buf, STATUS_MAX bytes, *len of them), and kills it at the start
 * timeout or at the run's deadline (sb_wrap_request). */
static int wait_watched(pid_t pid, const struct prepared *p, char *buf, size_t *len, int *status,
			struct sb_wrap_outcome *o)
{
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	long long deadline = p->start_timeout_ms
				 ? (long long)sb_monotonic_ms() + (long long)p->start_timeout_ms
				 : -1;
	bool started = false;

	if (pidfd < 0)
		return -errno;
	for (;;) {
		struct pollfd pfd[2] = {{.fd = pidfd, .events = POLLIN},
					{.fd = p->status_read, .events = POLLIN}};
		long long left = deadline < 0 ? -1 : deadline - (long long)sb_monotonic_ms();
		int n;

		if (deadline >= 0 && left <= 0) {
			kill(pid, SIGKILL);
			if (started)
				o->deadline_killed = true;
			else
				o->start_timed_out = true;
			break;
		}
		n = poll(pfd, started || *len >= STATUS_MAX - 1 ? 1 : 2,
			 left < 0 ? -1 : (int)(left > INT_MAX ? INT_MAX : left));
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		if (pfd[0].revents)
			break;
		if (pfd[1].revents & POLLIN) {
			ssize_t got = read(p->status_read, buf + *len, STATUS_MAX - 1 - *len);

			if (got > 0)
				*len += (size_t)got;
		} else if (pfd[1].revents) {
			/* Every writer gone: only the tool's end is left. */
			started = true;
		}
		buf[*len] = '\0';
		if (!started && strstr(buf, "started\n")) {
			started = true;
			deadline = p->run_timeout_ms
				       ? (long long)sb_monotonic_ms() +
					     (long long)p->run_timeout_ms + RUN_GRACE_MS
				       : -1;
		}
	}
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int sb_wrap_run(const struct sb_wrap_launch *l, struct sb_wrap_outcome *ret, char **reterr)
{
#ifdef SB_HAVE_ASAN
	/* A sanitizer build reads its options before main(): the inner one
	 * needs them from its own environment (LeakSanitizer cannot run under
	 * the seccomp filter, which refuses ptrace). */
	char *tool_env[] = {NULL, NULL, NULL, NULL};
	size_t n_env = 0;

	for (char *const *e = l->host_env; e && *e; e++)
		if (startswith(*e, "ASAN_OPTIONS=") || startswith(*e, "UBSAN_OPTIONS=") ||
		    startswith(*e, "LSAN_OPTIONS="))
			if (n_env < ELEMENTSOF(tool_env) - 1)
				tool_env[n_env++] = *e;
#else
	char *tool_env[] = {NULL};
#endif
	_cleanup_(prepared_done) struct prepared p = PREPARED_NONE;
	struct sigaction ignore = {.sa_handler = SIG_IGN}, forward = {.sa_handler = forward_signal};
	struct sigaction saved_terminal[ELEMENTSOF(terminal_signals)];
	struct sigaction saved_forwarded[ELEMENTSOF(forwarded_signals)];
	struct sb_wrap_outcome o = {0};
	char status_buf[STATUS_MAX];
	size_t status_len = 0;
	struct termios stdin_termios;
	bool stdin_tty;
	int stdin_flags;
	pid_t pid;
	int r, status;

	r = prepare(l, false, &p, reterr);
	if (r < 0)
		return r;
	/* A tool reading python-sb's stdin may make it non-blocking or put a
	 * terminal in raw mode (qemu's stdio backend) and, killed, not undo it:
	 * the caller's shell shares both. */
	stdin_flags = fcntl(STDIN_FILENO, F_GETFL);
	stdin_tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &stdin_termios) == 0;

	/* Before the spawn: the wrapper inherits the ignored terminal signals
	 * (the record tells the inner python-sb to restore them), so that a
	 * Ctrl-C reaches the program rather than end the wrapper under it. */
	sigemptyset(&forward.sa_mask);
	for (size_t i = 0; i < ELEMENTSOF(terminal_signals); i++)
		sigaction(terminal_signals[i], &ignore, &saved_terminal[i]);
	for (size_t i = 0; i < ELEMENTSOF(forwarded_signals); i++)
		sigaction(forwarded_signals[i], &forward, &saved_forwarded[i]);
	/* Nothing of the host's environment on the way: the inner python-sb
	 * has it from the record, and the program's /proc/self/environ then
	 * holds none of it (the tools pass their environment on). */
	r = -posix_spawn(&pid, p.argv[0], NULL, NULL, p.argv, tool_env);
	if (r == 0) {
		wrapper_pid = pid;
		/* Only the wrapper's side may hold the pipe: its end is EOF
		 * once the sandbox is gone. */
		close(p.status_write);
		p.status_write = -1;
		close(p.record_fd);
		p.record_fd = -1;
		if (p.report_file >= 0) {
			close(p.report_file);
			p.report_file = -1;
		}
		if (p.tool_fd >= 0) {
			close(p.tool_fd);
			p.tool_fd = -1;
		}
		sb_wrap_net_spawned(&p.net);
		/* The inner python-sb waits until its network is up and
		 * filtered (wrap-net.h); when it cannot be, the tool dies. */
		if (p.net.ready_ours >= 0) {
			r = sb_wrap_net_start(&p.net, reterr);
			if (r < 0)
				kill(pid, SIGKILL);
		}
		if (p.start_timeout_ms || p.run_timeout_ms) {
			int w = wait_watched(pid, &p, status_buf, &status_len, &status, &o);

			if (r >= 0)
				r = w;
		} else {
			while (waitpid(pid, &status, 0) < 0)
				if (errno != EINTR) {
					r = -errno;
					break;
				}
		}
		wrapper_pid = 0;
		if (stdin_flags >= 0 && fcntl(STDIN_FILENO, F_GETFL) != stdin_flags)
			fcntl(STDIN_FILENO, F_SETFL, stdin_flags);
		if (stdin_tty)
			tcsetattr(STDIN_FILENO, TCSANOW, &stdin_termios);
	}
	for (size_t i = 0; i < ELEMENTSOF(forwarded_signals); i++)
		sigaction(forwarded_signals[i], &saved_forwarded[i], NULL);
	for (size_t i = 0; i < ELEMENTSOF(terminal_signals); i++)
		sigaction(terminal_signals[i], &saved_terminal[i], NULL);
	if (r < 0 && *reterr)
		return r;
	if (r < 0)
		return sb_error(reterr, r, "cannot run %s: %s", p.argv[0], strerror(-r));
	o.wait_status = status;
	o.forwarded_signal = forwarded;
	forwarded = 0;
	o.start_timeout_ms = p.start_timeout_ms;
	o.warnings = TAKE_PTR(p.warnings);
	read_status(p.status_read, &o, status_buf, status_len,
		    WIFSIGNALED(status) ? STATUS_WAIT_MS : 0);
	*ret = o;
	return 0;
}

/* Single quotes where the shell would read something else. */
static int put_quoted(struct sb_buf *out, const char *arg)
{
	int r;

	if (*arg && !arg[strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				     "0123456789-_./=:,+@%")])
		return sb_buf_puts(out, arg);
	r = sb_buf_putc(out, '\'');
	for (const char *c = arg; r >= 0 && *c; c++)
		r = *c == '\'' ? sb_buf_puts(out, "'\\''") : sb_buf_putc(out, *c);
	return r < 0 ? r : sb_buf_putc(out, '\'');
}

int sb_wrap_explain(const struct sb_wrap_launch *l, struct sb_buf *out, char **reterr)
{
	_cleanup_(prepared_done) struct prepared p = PREPARED_NONE;
	_cleanup_strv_free_ char **argv = NULL;
	struct sb_wrap_launch run_as = *l;
	bool dropped = false;
	int r = 0;

	/* The command line a run would use: without the first --explain, this
	 * option (a program's own --explain comes after python-sb's options). */
	for (char *const *a = l->argv; r >= 0 && a && *a; a++)
		if (dropped || a == l->argv || !streq(*a, "--explain"))
			r = sb_strv_push(&argv, *a);
		else
			dropped = true;
	if (r < 0)
		return r;
	run_as.argv = argv;
	r = prepare(&run_as, true, &p, reterr);
	if (r < 0)
		return r;
	r = sb_buf_puts(out, "#   command line (descriptors as they would be now):\n#    ");
	for (char **a = p.argv; r >= 0 && *a; a++) {
		r = sb_buf_putc(out, ' ');
		if (r >= 0)
			r = put_quoted(out, *a);
	}
	return r < 0 ? r : sb_buf_putc(out, '\n');
}

/* ------------------------------------------------------------------------ */
/* The inner side */

/* The status descriptor stays open until the process ends: the exit status
 * is only known there (CPython ends a program that raises SystemExit with
 * exit() from inside Py_RunMain). */
static int status_fd = -1;
static pid_t status_owner;

static void report(int fd, const char *line)
{
	size_t len = strlen(line);

	if (fd >= 0)
		while (write(fd, line, len) < 0 && errno == EINTR)
			;
}

/* on_exit(3) hands the handler exit()'s status. Only the process that read
 * the record reports: not a child the program forked (the timeout's
 * supervisor is that process, and reports the status it mirrors). */
static void report_exit(int code, void *arg _unused_)
{
	char line[32];

	if (getpid() != status_owner)
		return;
	snprintf(line, sizeof(line), "exit=%d\n", code & 0xff);
	report(status_fd, line);
}

void sb_wrap_inside_done(struct sb_wrap_inside *in)
{
	free(in->provider);
	free(in->cwd);
	sb_strv_free(in->env);
	sb_strv_free(in->files);
	free(in->worker_config);
	sb_closep(&in->net_ready_fd);
	*in = SB_WRAP_INSIDE_NULL;
}

/* Only the sealed memfd the launching side made is a record. */
static int check_record_fd(int fd, char **reterr)
{
	char link[64], target[PATH_MAX];
	ssize_t n;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || (seals & ALL_SEALS) != ALL_SEALS)
		return sb_error(reterr, -EBADF,
				"--pysandboxes-inside: descriptor %d is not a sealed record "
				"(this option is python-sb's own, not for users)",
				fd);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	if (!startswith(target, "/memfd:" RECORD_NAME " "))
		return sb_error(reterr, -EBADF,
				"--pysandboxes-inside: descriptor %d is not python-sb's record",
				fd);
	return 0;
}

static int parse_record(struct sb_wrap_inside *in, const char *data, size_t len, char **reterr)
{
	struct sb_buf worker = {0};
	int r = 0;

	if (len < sizeof(RECORD_MAGIC) || memcmp(data, RECORD_MAGIC, sizeof(RECORD_MAGIC)) != 0 ||
	    data[len - 1] != '\0')
		return sb_error(reterr, -EPROTO,
				"--pysandboxes-inside: the record is not from this version of "
				"python-sb");
	for (const char *e = data + sizeof(RECORD_MAGIC); r >= 0 && e < data + len;
	     e += strlen(e) + 1) {
		const char *v;
		char **slot = NULL;

		if ((v = startswith(e, "provider=")))
			slot = &in->provider;
		else if ((v = startswith(e, "cwd=")))
			slot = &in->cwd;
		else if ((v = startswith(e, "file=")))
			r = sb_strv_push(&in->files, v);
		else if ((v = startswith(e, "env=")))
			r = sb_strv_push(&in->env, v);
		else if ((v = startswith(e, "status-fd="))) {
			unsigned long long fd;

			if (sb_safe_atou64(v, &fd) < 0 || fd > INT_MAX)
				r = -EPROTO;
			else
				in->status_fd = (int)fd;
		} else if ((v = startswith(e, "net-ready-fd="))) {
			unsigned long long fd;

			if (sb_safe_atou64(v, &fd) < 0 || fd < 3 || fd > INT_MAX)
				r = -EPROTO;
			else
				in->net_ready_fd = (int)fd;
		} else if ((v = startswith(e, "report-fd="))) {
			unsigned long long fd;

			if (sb_safe_atou64(v, &fd) < 0 || fd < 3 || fd > INT_MAX)
				r = -EPROTO;
			else
				in->report_fd = (int)fd;
		} else if ((v = startswith(e, "restore-signal="))) {
			unsigned long long sig;

			if (sb_safe_atou64(v, &sig) < 0 || sig >= NSIG)
				r = -EPROTO;
			else
				signal((int)sig, SIG_DFL);
		} else if (streq(e, "worker-config=")) {
			in->has_worker_config = true;
		} else if ((v = startswith(e, "worker="))) {
			r = sb_buf_putn(&worker, v, strlen(v) + 1);
		} else {
			r = -EPROTO;
		}
		if (slot) {
			free(*slot);
			*slot = strdup(v);
			if (!*slot)
				r = -ENOMEM;
		}
	}
	if (r >= 0 && (!in->provider || !in->cwd || in->status_fd < 0))
		r = -EPROTO;
	if (r < 0) {
		sb_buf_reset(&worker);
		return r == -EPROTO ? sb_error(reterr, r, "--pysandboxes-inside: a bad record") : r;
	}
	in->worker_config_len = worker.len;
	in->worker_config = sb_buf_steal(&worker);
	return 0;
}

int sb_wrap_inside_open(const char *fd_text, struct sb_wrap_inside *ret, char **reterr)
{
	struct sb_wrap_inside in = SB_WRAP_INSIDE_NULL;
	_cleanup_free_ char *data = NULL;
	struct pollfd pfd;
	unsigned long long v;
	struct stat st;
	ssize_t n;
	int fd, r;

	if (sb_safe_atou64(fd_text, &v) < 0 || v > INT_MAX)
		return sb_error(reterr, -EINVAL,
				"--pysandboxes-inside expects a descriptor number");
	fd = (int)v;
	r = check_record_fd(fd, reterr);
	if (r < 0)
		return r;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 || (unsigned long long)st.st_size > RECORD_MAX)
		return sb_error(reterr, -EPROTO, "--pysandboxes-inside: a bad record");
	data = malloc((size_t)st.st_size);
	if (!data)
		return -ENOMEM;
	n = pread(fd, data, (size_t)st.st_size, 0);
	/* The program must not inherit it. */
	close(fd);
	if (n != st.st_size)
		return sb_error(reterr, -EIO, "--pysandboxes-inside: cannot read the record");
	r = parse_record(&in, data, (size_t)n, reterr);
	/* The host's environment stays in the copies the policy needs. */
	explicit_bzero(data, (size_t)n);
	if (r >= 0 && fcntl(in.status_fd, F_SETFD, FD_CLOEXEC) < 0)
		r = sb_error(reterr, -errno, "--pysandboxes-inside: no status descriptor");
	if (r >= 0 && in.net_ready_fd >= 0 && fcntl(in.net_ready_fd, F_SETFD, FD_CLOEXEC) < 0)
		r = sb_error(reterr, -errno, "--pysandboxes-inside: no network descriptor");
	/* The tool is done with its sandbox: the launching side may set the
	 * network up now (wrap-net.h), while this start-up goes on. A
	 * launching side already gone shows when the answer is awaited. */
	if (r >= 0 && in.net_ready_fd >= 0)
		(void)send(in.net_ready_fd, "s", 1, MSG_NOSIGNAL);
	if (r < 0) {
		sb_wrap_inside_done(&in);
		return r;
	}
	/* The status pipe is also the lifeline: when the launching python-sb
	 * is gone (killed: it waits for the wrapper otherwise), its end is
	 * released and the kernel signals the writers, here SIGKILL, which
	 * nothing can catch. firejail has no --die-with-parent, and a setuid
	 * firejail drops a parent-death signal set before its exec. */
	if (fcntl(in.status_fd, F_SETOWN, getpid()) < 0 ||
	    fcntl(in.status_fd, F_SETSIG, SIGKILL) < 0 ||
	    fcntl(in.status_fd, F_SETFL, fcntl(in.status_fd, F_GETFL) | O_ASYNC) < 0) {
		r = -errno;
		sb_wrap_inside_done(&in);
		return sb_error(reterr, r,
				"--pysandboxes-inside: cannot watch the launching side: %s",
				strerror(-r));
	}
	/* Gone already, before the watch was set: nobody to run for. */
	pfd = (struct pollfd){.fd = in.status_fd, .events = POLLOUT};
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLERR))
		_exit(EXIT_FAILURE);
	status_fd = in.status_fd;
	status_owner = getpid();
	if (on_exit(report_exit, NULL) != 0) {
		sb_wrap_inside_done(&in);
		return -ENOMEM;
	}
	report(status_fd, "started\n");
	*ret = in;
	return 0;
}

int sb_wrap_inside_wait_network(struct sb_wrap_inside *in, char **reterr)
{
	char c = 0;
	ssize_t n;

	if (in->net_ready_fd < 0)
		return 0;
	while ((n = read(in->net_ready_fd, &c, 1)) < 0 && errno == EINTR)
		;
	sb_closep(&in->net_ready_fd);
	if (n == 1 && c == '1')
		return 0;
	return sb_error(reterr, -ENETDOWN,
			"the sandbox's network was not set up (the launching python-sb "
			"stopped): the program does not run without its filter");
}

void sb_wrap_inside_detach(struct sb_wrap_inside *in)
{
	if (status_fd < 0 || getpid() == status_owner)
		return;
	close(status_fd);
	status_fd = -1;
	in->status_fd = -1;
}

int sb_wrap_inside_check(const struct sb_wrap_inside *in, const struct sb_provider *provider,
			 const struct sb_profile *p, char **reterr)
{
	size_t i = 0;

	if (!(provider->flags & SB_PROVIDER_WRAPS_EXEC) || !streq(provider->name, in->provider))
		return sb_error(reterr, -EINVAL,
				"started under os-sandbox=%s, but the rules now select "
				"os-sandbox=%s",
				in->provider, provider->name);
	/* The same files in the same order: a rule file the wrapper's view
	 * lacks would make a different (weaker) policy. */
	for (; p->files && p->files[i] && in->files && in->files[i]; i++)
		if (!streq(p->files[i], in->files[i]))
			break;
	if ((p->files && p->files[i]) || (in->files && in->files[i]))
		return sb_error(reterr, -EINVAL,
				"the rule files read under os-sandbox=%s differ from the ones read "
				"before it started ('%s' against '%s')",
				provider->name, p->files && p->files[i] ? p->files[i] : "(none)",
				in->files && in->files[i] ? in->files[i] : "(none)");
	return 0;
}
