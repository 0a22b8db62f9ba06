/* SPDX-License-Identifier: MIT */
/* The `fork` runner (runner.h), the service's default: one fork server (the
 * zygote, src/serve/zygote.c; docs/serve.md) per service, which forks a
 * child per run from an interpreter that has started, armed its guard and
 * imported what programs typically need.
 *
 * A monitor thread starts the zygote (`python-sb --pysandboxes-config PROFILE
 * --pysandboxes-zygote=3 -c ''`, in the work directory, with the
 * control socket at fd 3), waits for its READY, and restarts it whenever it
 * dies; it is also the thread that forks it, so that the zygote's
 * parent-death signal fires when the service goes, not when a worker thread
 * ends. A worker sends RUN with the run's descriptors: stdin (a memory file),
 * the write ends of its stdout and stderr pipes, the report's region (a
 * sealed memory file the child maps; this side reads it once the child is
 * reaped), a socket of the run's own for the replies, and its arguments (a
 * memory file). It then reads the output with the cap, asks the zygote to
 * KILL the run past it, and builds the report from the zygote's DONE
 * (measured outside the sandbox: the wait status, the rusage, the deadline)
 * and the region (measured inside). A zygote that dies takes its runs with
 * it (their parent-death signal): their reply sockets end without DONE, and
 * they get an error, not a hang. */
#include "runner.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "report.h"
#include "rundir.h"
#include "util.h"
#include "zygote-proto.h"

/* How long the zygote may take to start (an ASan build is slow). */
#define START_TIMEOUT_MS 60000
/* How long a run waits for a zygote that is (re)starting. */
#define WAIT_READY_MS 30000
/* Past the run's own timeout: the zygote should have ended it. */
#define HARD_DEADLINE_GRACE_MS 5000
/* After DONE, what is still in the pipes. */
#define DRAIN_MS 1000
/* Between two starts of a zygote that keeps failing, at most. */
#define BACKOFF_MAX_MS 10000

struct sb_runner {
	char *python_sb, *profile, *workdir;
	bool change_user;
	uid_t uid;
	gid_t gid;
	char **envp;
	struct sb_limits limits;
	void (*event)(void *data, const char *message);
	void *event_data;

	pthread_mutex_t lock;
	pthread_cond_t changed;
	int ctl;	 /* to the zygote that is ready; -1 while there is none */
	pid_t pid;	 /* that zygote, not reaped while set */
	bool first_done; /* the first start succeeded or failed */
	bool closing;
	char *error; /* why there is no zygote */
	char provider[64];
	pthread_t monitor;
	bool monitor_started;
	int wake[2]; /* the monitor's: close() says stop */
	atomic_uint_fast64_t next_id;
};

static void event(struct sb_runner *r, const char *fmt, ...) _printf_(2, 3);
static void event(struct sb_runner *r, const char *fmt, ...)
{
	_cleanup_free_ char *text = NULL;
	va_list ap;

	if (!r->event)
		return;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	if (text)
		r->event(r->event_data, text);
}

/* ------------------------------------------------------------------------ */
/* The zygote's life */

struct zygote {
	pid_t pid;
	int pidfd, ctl;
};

/* Between fork and exec in a multi-threaded process: system calls only. */
static _Noreturn void exec_zygote(struct sb_runner *r, int sock, char **argv)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	sigset_t none;

	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(sock, 3) < 0)
		_exit(127);
	if (syscall(SYS_close_range, 4, ~0U, 0) < 0 || setsid() < 0 || chdir(r->workdir) < 0)
		_exit(127);
	/* The thread that forks is the monitor, which lives as long as the
	 * runner: the zygote dies with the service. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		_exit(127);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(argv[0], argv, r->envp);
	_exit(127);
}

static int zygote_argv(struct sb_runner *r, char ***ret)
{
	_cleanup_strv_free_ char **argv = NULL;
	int e = sb_strv_push(&argv, r->python_sb);

	if (e >= 0)
		e = sb_strv_push(&argv, "--pysandboxes-config");
	if (e >= 0)
		e = sb_strv_push(&argv, r->profile);
	if (e >= 0)
		e = sb_strv_push(&argv, "--pysandboxes-zygote=3");
	if (e >= 0 && r->change_user) {
		char *user;

		if (asprintf(&user, "--user=%u:%u", (unsigned)r->uid, (unsigned)r->gid) < 0)
			return -ENOMEM;
		e = sb_strv_consume(&argv, user);
	}
	/* Its own program is empty: it runs none. */
	if (e >= 0)
		e = sb_strv_push(&argv, "-c");
	if (e >= 0)
		e = sb_strv_push(&argv, "");
	if (e < 0)
		return e;
	*ret = TAKE_PTR(argv);
	return 0;
}

static void describe_exit(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "signal %d (%s)", WTERMSIG(status),
			 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
	else
		snprintf(buf, size, "status 0x%x", status);
}

static void zygote_reap(struct zygote *zy, int *ret_status)
{
	int status = 0;

	sb_closep(&zy->ctl);
	if (zy->pid > 0) {
		while (waitpid(zy->pid, &status, 0) < 0 && errno == EINTR)
			;
		zy->pid = 0;
	}
	sb_closep(&zy->pidfd);
	if (ret_status)
		*ret_status = status;
}

/* Starts a zygote and waits for its READY. */
static int zygote_start(struct sb_runner *r, struct zygote *zy, struct sb_zmsg *ready,
			char **reterr)
{
	_cleanup_strv_free_ char **argv = NULL;
	int sv[2], e, status;
	struct pollfd pfd;
	char how[64];

	*zy = (struct zygote){.pidfd = -1, .ctl = -1};
	e = zygote_argv(r, &argv);
	if (e < 0)
		return e;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return sb_error(reterr, -errno, "cannot create the fork server's socket: %s",
				strerror(errno));
	zy->pid = fork();
	if (zy->pid == 0)
		exec_zygote(r, sv[1], argv);
	close(sv[1]);
	zy->ctl = sv[0];
	if (zy->pid < 0) {
		e = -errno;
		zy->pid = 0;
		sb_closep(&zy->ctl);
		return sb_error(reterr, e, "cannot start the fork server: %s", strerror(-e));
	}
	zy->pidfd = (int)syscall(SYS_pidfd_open, zy->pid, 0);
	pfd = (struct pollfd){.fd = zy->ctl, .events = POLLIN};
	do
		e = poll(&pfd, 1, START_TIMEOUT_MS);
	while (e < 0 && errno == EINTR);
	if (e == 0) {
		kill(zy->pid, SIGKILL);
		zygote_reap(zy, NULL);
		return sb_error(reterr, -ETIMEDOUT, "the fork server (%s) was not ready after %us",
				r->python_sb, START_TIMEOUT_MS / 1000);
	}
	e = sb_zmsg_recv(zy->ctl, ready, (int[SB_ZRUN_N_FDS]){0});
	if (e >= 0 && ready->type == SB_ZMSG_READY && zy->pidfd >= 0)
		return 0;
	if (e >= 0)
		sb_zmsg_done(ready);
	kill(zy->pid, SIGKILL);
	zygote_reap(zy, &status);
	describe_exit(status, how, sizeof(how));
	return sb_error(reterr, e < 0 ? e : -EPROTO,
			"the fork server (%s) ended (%s) before it was ready: its messages are "
			"above",
			r->python_sb, how);
}

/* Sleeps ms, or until close() wakes the monitor: true then. */
static bool stop_requested(struct sb_runner *r, int ms)
{
	struct pollfd pfd = {.fd = r->wake[0], .events = POLLIN};

	return poll(&pfd, 1, ms) > 0;
}

static void *monitor(void *data)
{
	struct sb_runner *r = data;
	unsigned backoff = 0;
	bool ever_ready = false;

	for (;;) {
		_cleanup_free_ char *err = NULL;
		struct sb_zmsg ready = {0};
		struct zygote zy;
		struct pollfd pfd[2];
		char how[64];
		int e, status;

		e = zygote_start(r, &zy, &ready, &err);
		/* Said before runs can use it: "ready" comes before the
		 * service's "listening", and before any run's outcome. */
		if (e >= 0)
			event(r,
			      "fork server ready (pid %u): %u modules warmed in %.1f ms, "
			      "resident %llu KB",
			      ready.ready.pid, ready.ready.modules,
			      (double)ready.ready.warm_ns / 1e6,
			      (unsigned long long)ready.ready.rss_kb);
		pthread_mutex_lock(&r->lock);
		free(r->error);
		r->error = e < 0 ? (err ? strdup(err) : strdup(strerror(-e))) : NULL;
		if (e >= 0) {
			r->ctl = zy.ctl;
			r->pid = zy.pid;
			snprintf(r->provider, sizeof(r->provider), "%s",
				 ready.ready.provider ? ready.ready.provider : "?");
		}
		r->first_done = true;
		pthread_cond_broadcast(&r->changed);
		pthread_mutex_unlock(&r->lock);
		if (e < 0) {
			/* The first failure is open()'s to report. */
			if (ever_ready)
				event(r, "the fork server did not start: %s",
				      err ? err : strerror(-e));
			backoff =
			    backoff ? (backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2)
				    : 250;
			if (stop_requested(r, (int)backoff))
				return NULL;
			continue;
		}
		backoff = 0;
		ever_ready = true;
		sb_zmsg_done(&ready);

		pfd[0] = (struct pollfd){.fd = zy.pidfd, .events = POLLIN};
		pfd[1] = (struct pollfd){.fd = r->wake[0], .events = POLLIN};
		while (poll(pfd, 2, -1) < 0 && errno == EINTR)
			;
		pthread_mutex_lock(&r->lock);
		r->ctl = -1;
		r->pid = 0;
		pthread_mutex_unlock(&r->lock);
		if (pfd[1].revents) {
			/* The service stops: the zygote ends when its socket
			 * does, after killing what still runs. */
			sb_closep(&zy.ctl);
			pfd[1].fd = -1;
			if (poll(pfd, 1, 5000) <= 0)
				kill(zy.pid, SIGKILL);
			zygote_reap(&zy, NULL);
			return NULL;
		}
		zygote_reap(&zy, &status);
		describe_exit(status, how, sizeof(how));
		event(r, "the fork server died (%s): restarting it", how);
	}
}

/* ------------------------------------------------------------------------ */
/* The runner's operations */

static void runner_free(struct sb_runner *r)
{
	if (!r)
		return;
	free(r->python_sb);
	free(r->profile);
	free(r->workdir);
	free(r->error);
	sb_strv_free(r->envp);
	sb_closep(&r->wake[0]);
	sb_closep(&r->wake[1]);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->changed);
	free(r);
}

static void fork_close(struct sb_runner *r)
{
	if (!r)
		return;
	if (r->monitor_started) {
		pthread_mutex_lock(&r->lock);
		r->closing = true;
		pthread_cond_broadcast(&r->changed);
		pthread_mutex_unlock(&r->lock);
		sb_closep(&r->wake[1]);
		pthread_join(r->monitor, NULL);
	}
	runner_free(r);
}

static int fork_open(const struct sb_runner_config *cfg, struct sb_runner **ret, char **reterr)
{
	struct sb_runner *r = calloc(1, sizeof(*r));
	int e;

	if (!r)
		return -ENOMEM;
	r->ctl = -1;
	r->wake[0] = r->wake[1] = -1;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->changed, NULL);
	r->python_sb = strdup(cfg->python_sb);
	r->profile = strdup(cfg->profile_path);
	r->workdir = strdup(cfg->workdir);
	r->change_user = cfg->change_user;
	r->uid = cfg->uid;
	r->gid = cfg->gid;
	r->limits = cfg->limits;
	r->event = cfg->event;
	r->event_data = cfg->event_data;
	if (!r->python_sb || !r->profile || !r->workdir || sb_runner_launch_env(&r->envp) < 0) {
		runner_free(r);
		return -ENOMEM;
	}
	if (pipe2(r->wake, O_CLOEXEC) < 0) {
		e = -errno;
		runner_free(r);
		return e;
	}
	e = pthread_create(&r->monitor, NULL, monitor, r);
	if (e != 0) {
		runner_free(r);
		return -e;
	}
	r->monitor_started = true;
	/* The service starts only with a zygote that works. */
	pthread_mutex_lock(&r->lock);
	while (!r->first_done)
		pthread_cond_wait(&r->changed, &r->lock);
	e = r->ctl >= 0 ? 0 : -ECHILD;
	if (e < 0)
		sb_error(reterr, e, "%s", r->error ? r->error : "the fork server did not start");
	pthread_mutex_unlock(&r->lock);
	if (e < 0) {
		fork_close(r);
		return e;
	}
	*ret = r;
	return 0;
}

/* What one run holds on this side. */
struct run {
	int in, args, report_fd;
	int out[2], err[2], reply[2];
	struct sb_report_shm *region;
};

static void run_done(struct run *f)
{
	sb_closep(&f->in);
	sb_closep(&f->args);
	sb_closep(&f->report_fd);
	for (int i = 0; i < 2; i++) {
		sb_closep(&f->out[i]);
		sb_closep(&f->err[i]);
		sb_closep(&f->reply[i]);
	}
	sb_report_shm_unmap(f->region);
	f->region = NULL;
}

static int run_prepare(const struct sb_run_spec *spec, struct run *f, char **reterr)
{
	_cleanup_free_ uint8_t *args = NULL;
	size_t args_len = 0;
	int e;

	f->in = sb_run_readonly_memfd("stdin", spec->stdin_data ? spec->stdin_data : "",
				      spec->stdin_len);
	if (f->in < 0)
		return f->in;
	e = sb_zargs_encode(spec->args, &args, &args_len);
	if (e < 0)
		return e;
	f->args = sb_memfd_with("args", args, args_len);
	if (f->args < 0)
		return f->args;
	e = sb_report_shm_new(&f->report_fd, &f->region, reterr);
	if (e < 0)
		return e;
	if (pipe2(f->out, O_CLOEXEC) < 0 || pipe2(f->err, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, f->reply) < 0)
		return -errno;
	return 0;
}

/* Sends RUN to the zygote that is ready, waiting for one while it
 * (re)starts. A send that finds it gone waits for the next: the run has not
 * started then. While the last start failed (the monitor retries with a
 * growing pause), a run does not wait: it fails at once (503). */
static int send_run(struct sb_runner *r, const struct sb_zmsg *m, const int fds[SB_ZRUN_N_FDS],
		    pid_t *ret_pid, char **reterr)
{
	uint64_t give_up = sb_monotonic_ms() + WAIT_READY_MS;
	int e = -ECHILD;

	pthread_mutex_lock(&r->lock);
	for (int attempt = 0; attempt < 3 && !r->closing;) {
		if (r->ctl < 0) {
			struct timespec ts;
			uint64_t now = sb_monotonic_ms();

			if (now >= give_up || r->error)
				break;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)((give_up - now) / 1000 + 1);
			pthread_cond_timedwait(&r->changed, &r->lock, &ts);
			continue;
		}
		e = sb_zmsg_send(r->ctl, m, fds, SB_ZRUN_N_FDS);
		*ret_pid = r->pid;
		if (e >= 0 || (e != -EPIPE && e != -ECONNRESET && e != -ENOTCONN))
			break;
		/* Gone: the monitor will notice and start another. */
		attempt++;
		r->ctl = -1;
	}
	if (e < 0)
		sb_error(reterr, e, "the fork server is not running%s%s", r->error ? ": " : "",
			 r->error ? r->error : "");
	pthread_mutex_unlock(&r->lock);
	return e;
}

struct outcome {
	bool done;	   /* DONE came: the run's process is reaped */
	struct sb_zmsg dm; /* that DONE */
	char *failed;	   /* FAILED: why the program did not start */
	bool lost;	   /* the reply socket ended without DONE */
};

static void kill_request(struct run *f, bool *sent)
{
	struct sb_zmsg m = {.type = SB_ZMSG_KILL, .kill.reason = SB_ZKILL_OUTPUT};

	if (!*sent)
		(void)sb_zmsg_send(f->reply[0], &m, NULL, 0);
	*sent = true;
}

/* A zygote that did not end a run past its deadline is stuck: it is
 * killed, and the monitor starts another. */
static void kill_stuck_zygote(struct sb_runner *r, pid_t pid)
{
	bool killed = false;

	pthread_mutex_lock(&r->lock);
	/* Not reaped while r->pid names it: the pid is still the zygote's. */
	if (pid > 0 && r->pid == pid)
		killed = kill(pid, SIGKILL) == 0;
	pthread_mutex_unlock(&r->lock);
	if (killed)
		event(r, "the fork server (pid %d) did not end a run past its deadline: killed",
		      (int)pid);
}

/* Reads the output and the replies until DONE and the end of the pipes. */
static void supervise(struct sb_runner *r, struct run *f, const struct sb_run_spec *spec,
		      pid_t zygote, struct sb_run_result *res, struct outcome *o)
{
	uint64_t cap = spec->limits.output_bytes ? spec->limits.output_bytes : UINT64_MAX;
	uint64_t total_cap = r->limits.output_bytes ? r->limits.output_bytes : UINT64_MAX;
	uint64_t hard = sb_monotonic_ms() + spec->limits.timeout_ms + HARD_DEADLINE_GRACE_MS;
	uint64_t drain_until = 0;
	bool kill_sent = false;

	for (;;) {
		struct pollfd pfd[3] = {{.fd = f->out[0], .events = POLLIN},
					{.fd = f->err[0], .events = POLLIN},
					{.fd = f->reply[0], .events = POLLIN}};
		bool over = o->done || o->lost;
		uint64_t now = sb_monotonic_ms(), wake = over ? drain_until : hard;

		if (f->out[0] < 0 && f->err[0] < 0 && over)
			return;
		if (now >= wake) {
			if (over)
				return; /* something still holds a pipe: stop reading */
			/* The zygote did not end the run. */
			kill_stuck_zygote(r, zygote);
			sb_closep(&f->reply[0]);
			o->lost = true;
			drain_until = now + DRAIN_MS;
			continue;
		}
		if (poll(pfd, 3, (int)(wake - now)) < 0 && errno != EINTR)
			return;
		if (pfd[2].revents) {
			struct sb_zmsg m;
			int fds[SB_ZRUN_N_FDS];
			int e = sb_zmsg_recv(f->reply[0], &m, fds);

			if (e >= 0 && m.type == SB_ZMSG_FAILED && !o->failed) {
				o->failed = TAKE_PTR(m.failed.message);
			} else if (e >= 0 && m.type == SB_ZMSG_DONE) {
				o->done = true;
				o->dm = m;
				m = (struct sb_zmsg){0};
				drain_until = sb_monotonic_ms() + DRAIN_MS;
			} else if (e < 0 && e != -EAGAIN && e != -EINTR) {
				sb_closep(&f->reply[0]);
				if (!o->done) {
					o->lost = true;
					drain_until = sb_monotonic_ms() + DRAIN_MS;
				}
			}
			if (e >= 0)
				sb_zmsg_done(&m);
		}
		for (int i = 0; i < 2; i++) {
			int *fd = i == 0 ? &f->out[0] : &f->err[0];

			if (*fd < 0 || !pfd[i].revents)
				continue;
			if (sb_run_output_read(fd, i == 1, res, cap) ||
			    res->stdout_bytes + res->stderr_bytes > total_cap) {
				res->truncated = true;
				if (f->reply[0] >= 0 && !o->done)
					kill_request(f, &kill_sent);
			}
		}
	}
}

static int build_report(struct sb_runner *r, struct run *f, const struct sb_run_spec *spec,
			const struct outcome *o, struct sb_run_result *res)
{
	_cleanup_(sb_report_shm_snapshot_freep) struct sb_report_shm *inside = NULL;
	struct sb_limits limits = r->limits;
	int status = o->dm.done.status, e;
	struct sb_report_outside out = {
	    .exited = WIFEXITED(status),
	    .exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0,
	    .signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0,
	    .timed_out = o->dm.done.killed == SB_ZKILL_TIMEOUT,
	    .wall_ns = o->dm.done.wall_ns,
	    .cpu_user_us = o->dm.done.utime_us,
	    .cpu_sys_us = o->dm.done.stime_us,
	    .peak_rss_kb = o->dm.done.maxrss_kb,
	    .output_counted = true,
	    .stdout_bytes = res->stdout_bytes,
	    .stderr_bytes = res->stderr_bytes,
	    .output_truncated = res->truncated,
	    .provider = r->provider,
	    .limits = &limits,
	};

	/* The limits this run had: the request's, never above the server's. */
	limits.timeout_ms = spec->limits.timeout_ms;
	if (spec->limits.cpu_ms)
		limits.cpu_ms = spec->limits.cpu_ms;
	if (spec->limits.memory_bytes)
		limits.memory_bytes = spec->limits.memory_bytes;
	/* The process is reaped: no one writes the region any more. */
	e = sb_report_shm_snapshot_of(f->region, &inside);
	if (e < 0 && e != -ENOENT)
		return e;
	res->report = sb_report_build(&out, inside);
	return res->report ? 0 : -ENOMEM;
}

static int fork_run(struct sb_runner *r, const struct sb_run_spec *spec, struct sb_run_result *res)
{
	struct run f = {.in = -1,
			.args = -1,
			.report_fd = -1,
			.out = {-1, -1},
			.err = {-1, -1},
			.reply = {-1, -1}};
	struct outcome o = {0};
	_cleanup_free_ char *rundir = NULL, *err = NULL;
	struct sb_zmsg m = {.type = SB_ZMSG_RUN};
	pid_t zygote = 0;
	int e;

	*res = (struct sb_run_result){0};
	e = sb_rundir_create(r->workdir, spec, r->change_user, r->gid, &rundir);
	if (e < 0)
		return e;
	e = run_prepare(spec, &f, &err);
	if (e < 0)
		goto out;
	m.run = (typeof(m.run)){
	    .id = atomic_fetch_add(&r->next_id, 1),
	    .timeout_ms = spec->limits.timeout_ms,
	    .cpu_ms = spec->limits.cpu_ms,
	    .memory_bytes = spec->limits.memory_bytes,
	    .rundir = rundir,
	};
	e = send_run(r, &m,
		     (const int[SB_ZRUN_N_FDS]){
			 [SB_ZRUN_FD_STDIN] = f.in,
			 [SB_ZRUN_FD_STDOUT] = f.out[1],
			 [SB_ZRUN_FD_STDERR] = f.err[1],
			 [SB_ZRUN_FD_REPORT] = f.report_fd,
			 [SB_ZRUN_FD_REPLY] = f.reply[1],
			 [SB_ZRUN_FD_ARGS] = f.args,
		     },
		     &zygote, &err);
	if (e < 0) {
		res->error = TAKE_PTR(err);
		res->unavailable = true;
		e = res->error ? 0 : e;
		goto out;
	}
	/* The zygote and the run hold them now: the pipes end with the run. */
	sb_closep(&f.in);
	sb_closep(&f.args);
	sb_closep(&f.report_fd);
	sb_closep(&f.out[1]);
	sb_closep(&f.err[1]);
	sb_closep(&f.reply[1]);
	fcntl(f.out[0], F_SETFL, O_NONBLOCK);
	fcntl(f.err[0], F_SETFL, O_NONBLOCK);
	fcntl(f.reply[0], F_SETFL, O_NONBLOCK);
	supervise(r, &f, spec, zygote, res, &o);
	if (!o.done) {
		/* Its process died with the zygote, whatever it said before. */
		res->error = strdup("the fork server ended during the run (it is restarted): the "
				    "run has no report");
		res->unavailable = true;
	} else if (o.failed) {
		if (asprintf(&res->error, "the run could not start: %s", o.failed) < 0)
			res->error = NULL;
	} else {
		e = build_report(r, &f, spec, &o, res);
		goto out;
	}
	e = res->error ? 0 : -ENOMEM;
out:
	free(o.failed);
	sb_zmsg_done(&o.dm);
	run_done(&f);
	if (rundir)
		sb_rundir_remove(rundir);
	return e;
}

static char *fork_unavailable(struct sb_runner *r)
{
	char *why = NULL;

	pthread_mutex_lock(&r->lock);
	if (r->ctl < 0) {
		why = strdup(r->error ? r->error : "the fork server is starting");
		if (!why)
			why = strdup("");
	}
	pthread_mutex_unlock(&r->lock);
	return why;
}

const struct sb_runner_ops sb_runner_fork = {
    .name = "fork",
    .open = fork_open,
    .run = fork_run,
    .close = fork_close,
    .unavailable = fork_unavailable,
};
