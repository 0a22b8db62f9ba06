/* SPDX-License-Identifier: MIT */
/* The `exec` runner (runner.h): a fresh python-sb per run.
 *
 *   python-sb --pysandboxes-config /ABSOLUTE/PROFILE --report-fd=3 --pysandboxes-no-learn
 *             --no-denials-summary
 *             --expose-ro=.
 *             --timeout=Nms [--limit-cpu=Nms] [--limit-memory=N] -- main.py ARGS...
 *
 * started in the run's directory, in a session of its own, as the run's user,
 * with stdin a sealed read-only memfd holding the request's stdin, stdout and
 * stderr pipes read here, and fd 3 a memfd where python-sb's supervisor
 * (outside the sandbox) writes the report.
 *
 * The profile is never named relative to the run's directory, which the
 * request fills: its files would be the rules, or their absence learning
 * mode (no sandbox at all). serve-main.c made the name absolute and refused
 * includes named from the current directory; the profile is checked before
 * every run, which fails rather than learn. The run's directory is granted
 * as "." (python-sb's cwd): its name is on no command line, which every user
 * can read.
 *
 * python-sb's supervisor kills the program's whole process tree before it
 * exits, so once it is reaped nothing of the run is left; this
 * side adds the output cap and a deadline of its own past the run's timeout,
 * in case the supervisor itself is stuck. */
#include "runner.h"

#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "rundir.h"
#include "util.h"

/* Past the run's own timeout: python-sb's supervisor should have ended it. */
#define HARD_DEADLINE_GRACE_MS 5000
/* After SIGTERM for the output cap, before SIGKILL. */
#define TERM_GRACE_MS 1000
/* After python-sb's exit, what is still in the pipes. */
#define DRAIN_MS   1000
#define REPORT_MAX (16u << 20)

struct sb_runner {
	char *python_sb;
	char *profile; /* absolute */
	char *workdir;
	bool change_user;
	uid_t uid;
	gid_t gid;
	char **envp;
};

static void runner_free(struct sb_runner *r)
{
	if (!r)
		return;
	free(r->python_sb);
	free(r->profile);
	free(r->workdir);
	sb_strv_free(r->envp);
	free(r);
}

/* A rule file gone (someone removed it) would mean learning mode for
 * python-sb: the run is failed instead. */
static int check_rule_file(const char *path, char **reterr)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return sb_error(reterr, -errno,
				"the rule file %s is gone (%s): no run starts without its rules",
				path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return sb_error(reterr, -EINVAL,
				"the rule file %s is not a regular file: no run starts without "
				"its rules",
				path);
	return 0;
}

int sb_runner_launch_env(char ***envp)
{
	static const char *const passed[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"};
	int r = sb_strv_push(envp, "PATH=/usr/local/bin:/usr/bin:/bin");

	if (r >= 0)
		r = sb_strv_push(envp, "LANG=C.UTF-8");
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(passed); i++) {
		const char *v = getenv(passed[i]);

		if (v)
			r = sb_strv_pushf(envp, "%s=%s", passed[i], v);
	}
	return r;
}

static int exec_open(const struct sb_runner_config *cfg, struct sb_runner **ret, char **reterr)
{
	struct sb_runner *r = calloc(1, sizeof(*r));
	int e;

	if (!r)
		return -ENOMEM;
	r->python_sb = strdup(cfg->python_sb);
	r->profile = strdup(cfg->profile_path);
	r->workdir = strdup(cfg->workdir);
	r->change_user = cfg->change_user;
	r->uid = cfg->uid;
	r->gid = cfg->gid;
	if (!r->python_sb || !r->profile || !r->workdir || sb_runner_launch_env(&r->envp) < 0) {
		runner_free(r);
		return -ENOMEM;
	}
	if (access(r->python_sb, X_OK) < 0) {
		e = errno;
		sb_error(reterr, -e, "python-sb (%s): %s", cfg->python_sb, strerror(e));
		runner_free(r);
		return -e;
	}
	if (r->profile[0] != '/') {
		sb_error(reterr, -EINVAL, "the profile's name is not absolute: %s", r->profile);
		runner_free(r);
		return -EINVAL;
	}
	*ret = r;
	return 0;
}

static void exec_close(struct sb_runner *r)
{
	runner_free(r);
}

/* "--key=<v><unit>" */
static int push_rule(char ***argv, const char *key, unsigned long long v, const char *unit)
{
	char *s;

	if (asprintf(&s, "--%s=%llu%s", key, v, unit) < 0)
		return -ENOMEM;
	return sb_strv_consume(argv, s);
}

static int build_argv(const struct sb_runner *runner, const struct sb_run_spec *spec, char ***ret)
{
	_cleanup_strv_free_ char **argv = NULL;
	int r;

	r = sb_strv_push(&argv, runner->python_sb);
	if (r >= 0)
		r = sb_strv_push(&argv, "--pysandboxes-config");
	if (r >= 0)
		r = sb_strv_push(&argv, runner->profile);
	if (r >= 0)
		r = sb_strv_push(&argv, "--report-fd=3");
	/* Never learning mode (no confinement), should the rule file go
	 * between the service's check and this start. */
	if (r >= 0)
		r = sb_strv_push(&argv, "--pysandboxes-no-learn");
	/* The report carries the denials: the program's stderr stays its own. */
	if (r >= 0)
		r = sb_strv_push(&argv, "--no-denials-summary");
	/* The run's directory, python-sb's cwd: by a name that tells nothing. */
	if (r >= 0)
		r = sb_strv_push(&argv, "--expose-ro=.");
	/* The limits as command-line rules, which the profile's give way to:
	 * request.c made sure none is above the server's. */
	if (r >= 0 && spec->limits.timeout_ms)
		r = push_rule(&argv, "timeout", spec->limits.timeout_ms, "ms");
	if (r >= 0 && spec->limits.cpu_ms)
		r = push_rule(&argv, "limit-cpu", spec->limits.cpu_ms, "ms");
	if (r >= 0 && spec->limits.memory_bytes)
		r = push_rule(&argv, "limit-memory", spec->limits.memory_bytes, "");
	/* "--": a program named like an option stays a program. */
	if (r >= 0)
		r = sb_strv_push(&argv, "--");
	if (r >= 0)
		r = sb_strv_push(&argv, "main.py");
	for (char **a = spec->args; r >= 0 && a && *a; a++)
		r = sb_strv_push(&argv, *a);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(argv);
	return 0;
}

/* The fds of one run, on the server's side and the child's. */
struct run_fds {
	int in, report;	    /* memfds, dup'ed to 0 and 3 in the child */
	int out[2], err[2]; /* pipes: [0] here, [1] the child's 1 and 2 */
	int exec_err[2];    /* the child's errno if execve fails */
	int pidfd;
};

static void run_fds_done(struct run_fds *f)
{
	sb_closep(&f->in);
	sb_closep(&f->report);
	for (int i = 0; i < 2; i++) {
		sb_closep(&f->out[i]);
		sb_closep(&f->err[i]);
		sb_closep(&f->exec_err[i]);
	}
	sb_closep(&f->pidfd);
}

/* Between fork and exec in a multi-threaded process: system calls only. */
static _Noreturn void child(const struct sb_runner *runner, const struct run_fds *f,
			    const char *rundir, char **argv, pid_t server)
{
	/* The child's fds 0-4, from descriptors first moved above them, so
	 * that no dup2() overwrites a source still to be placed (and none is
	 * dup2()'ed onto itself, which would keep its close-on-exec flag). */
	const int from[5] = {f->in, f->out[1], f->err[1], f->report, f->exec_err[1]};
	int moved[5], errfd = f->exec_err[1], e;
	sigset_t none;

	for (int i = 0; i < 5; i++)
		if ((moved[i] = fcntl(from[i], F_DUPFD_CLOEXEC, 10)) < 0)
			goto fail;
	for (int i = 0; i < 5; i++)
		if (dup3(moved[i], i, i == 4 ? O_CLOEXEC : 0) < 0)
			goto fail;
	errfd = 4; /* close-on-exec: gone when execve succeeds */
	if (syscall(SYS_close_range, 5, ~0U, 0) < 0)
		goto fail;
	/* Out of the server's session: no terminal signal reaches the run. */
	if (setsid() < 0 || chdir(rundir) < 0)
		goto fail;
	if (runner->change_user &&
	    (setgroups(0, NULL) < 0 || setresgid(runner->gid, runner->gid, runner->gid) < 0 ||
	     setresuid(runner->uid, runner->uid, runner->uid) < 0))
		goto fail;
	/* After the change of user, which clears it: the run dies with the
	 * server. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		goto fail;
	if (getppid() != server)
		_exit(127);
	/* The server blocks and ignores signals that python-sb must see with
	 * their defaults; both survive execve. */
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(argv[0], argv, runner->envp);
fail:
	e = errno;
	(void)!write(errfd, &e, sizeof(e));
	_exit(127);
}

static int read_report(int fd, json_t **ret)
{
	struct stat st;
	_cleanup_free_ char *buf = NULL;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size <= 0 || st.st_size > REPORT_MAX)
		return -ENODATA;
	buf = malloc((size_t)st.st_size);
	if (!buf)
		return -ENOMEM;
	n = pread(fd, buf, (size_t)st.st_size, 0);
	if (n != st.st_size)
		return n < 0 ? -errno : -EIO;
	*ret = json_loadb(buf, (size_t)n, 0, NULL);
	return *ret && json_is_object(*ret) ? 0 : -EBADMSG;
}

/* Output measured here overrides python-sb's: it counts what the server
 * received, and knows whether the server stopped the run for it. */
static int patch_report(json_t *report, const struct sb_run_result *res)
{
	json_t *limit = json_object_get(report, "limit_exceeded");

	if (json_object_set_new(report, "output",
				json_pack("{s:I, s:I, s:b}", "stdout_bytes",
					  (json_int_t)res->stdout_bytes, "stderr_bytes",
					  (json_int_t)res->stderr_bytes, "truncated",
					  res->truncated)) < 0)
		return -ENOMEM;
	if (res->truncated && (!limit || json_is_null(limit)) &&
	    json_object_set_new(report, "limit_exceeded", json_string("output")) < 0)
		return -ENOMEM;
	return 0;
}

static char *describe_failure(int status, const struct sb_buf *err, int r)
{
	_cleanup_free_ char *tail = NULL;
	char *msg;
	size_t start = 0;

	/* The last lines of python-sb's stderr say why (a profile error...). */
	if (err->len > 0) {
		start = err->len > 2000 ? err->len - 2000 : 0;
		tail = strndup(err->data + start, err->len - start);
	}
	if (asprintf(&msg, "python-sb ended (%s %d) without a report (%s)%s%s",
		     WIFEXITED(status) ? "exit status" : "signal",
		     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), strerror(-r),
		     tail ? ": " : "", tail ? tail : "") < 0)
		return NULL;
	return msg;
}

/* Reads the run's output until python-sb is gone and the pipes are empty,
 * with the cap and the deadlines. */
static void supervise(struct run_fds *f, pid_t pid, const struct sb_run_spec *spec,
		      struct sb_run_result *res)
{
	uint64_t start = sb_monotonic_ms(), cap = spec->limits.output_bytes;
	uint64_t hard = start + spec->limits.timeout_ms + HARD_DEADLINE_GRACE_MS;
	uint64_t term_at = 0, drain_until = 0;
	bool exited = false, killed = false;

	if (cap == 0)
		cap = UINT64_MAX;
	for (;;) {
		struct pollfd pfd[3] = {{.fd = f->out[0], .events = POLLIN},
					{.fd = f->err[0], .events = POLLIN},
					{.fd = exited ? -1 : f->pidfd, .events = POLLIN}};
		uint64_t now = sb_monotonic_ms(), wake = exited ? drain_until : hard;
		int timeout;

		if (pfd[0].fd < 0 && pfd[1].fd < 0 && exited)
			return;
		if (!exited && term_at && !killed && now >= term_at + TERM_GRACE_MS) {
			kill(pid, SIGKILL);
			killed = true;
		}
		if (now >= wake) {
			if (exited)
				return; /* a survivor holds a pipe: stop reading */
			kill(pid, SIGKILL);
			killed = true;
			hard = now + DRAIN_MS;
		}
		if (term_at && !killed && term_at + TERM_GRACE_MS < wake)
			wake = term_at + TERM_GRACE_MS;
		timeout = (int)(wake > now ? wake - now : 0);
		if (poll(pfd, 3, timeout) < 0 && errno != EINTR)
			return;
		if (pfd[2].revents) {
			exited = true;
			drain_until = sb_monotonic_ms() + DRAIN_MS;
		}
		for (int i = 0; i < 2; i++) {
			int *fd = i == 0 ? &f->out[0] : &f->err[0];

			if (*fd < 0 || !pfd[i].revents)
				continue;
			if (sb_run_output_read(fd, i == 1, res, cap) && !res->truncated) {
				/* python-sb's supervisor passes SIGTERM on to the
				 * program, then kills whatever is left. */
				res->truncated = true;
				term_at = sb_monotonic_ms();
				kill(pid, SIGTERM);
			}
		}
	}
}

static int exec_run(struct sb_runner *runner, const struct sb_run_spec *spec,
		    struct sb_run_result *res)
{
	struct run_fds f = {.in = -1,
			    .report = -1,
			    .out = {-1, -1},
			    .err = {-1, -1},
			    .exec_err = {-1, -1},
			    .pidfd = -1};
	_cleanup_strv_free_ char **argv = NULL;
	_cleanup_free_ char *rundir = NULL;
	pid_t pid, server = getpid();
	int r, status = 0, exec_errno = 0;

	*res = (struct sb_run_result){0};
	r = check_rule_file(runner->profile, &res->error);
	if (r < 0)
		return res->error ? 0 : r;
	r = sb_rundir_create(runner->workdir, spec, runner->change_user, runner->gid, &rundir);
	if (r < 0)
		return r;
	r = build_argv(runner, spec, &argv);
	if (r >= 0) {
		f.in = sb_run_readonly_memfd("stdin", spec->stdin_data ? spec->stdin_data : "",
					     spec->stdin_len);
		r = f.in < 0 ? f.in : 0;
	}
	if (r >= 0) {
		f.report = memfd_create("report", MFD_CLOEXEC);
		r = f.report < 0 ? -errno : 0;
	}
	if (r >= 0 && (pipe2(f.out, O_CLOEXEC) < 0 || pipe2(f.err, O_CLOEXEC) < 0 ||
		       pipe2(f.exec_err, O_CLOEXEC) < 0))
		r = -errno;
	if (r < 0)
		goto out;

	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto out;
	}
	if (pid == 0)
		child(runner, &f, rundir, argv, server);
	sb_closep(&f.out[1]);
	sb_closep(&f.err[1]);
	sb_closep(&f.exec_err[1]);
	fcntl(f.out[0], F_SETFL, O_NONBLOCK);
	fcntl(f.err[0], F_SETFL, O_NONBLOCK);
	f.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (f.pidfd < 0) {
		r = -errno;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		goto out;
	}
	supervise(&f, pid, spec, res);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (read(f.exec_err[0], &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno)) {
		if (asprintf(&res->error, "cannot start python-sb (%s): %s", runner->python_sb,
			     strerror(exec_errno)) < 0)
			res->error = NULL;
		goto out;
	}
	r = read_report(f.report, &res->report);
	if (r < 0) {
		json_decref(res->report);
		res->report = NULL;
		res->error = describe_failure(status, &res->err, r);
		r = res->error ? 0 : -ENOMEM;
		goto out;
	}
	r = patch_report(res->report, res);
out:
	run_fds_done(&f);
	if (rundir)
		sb_rundir_remove(rundir);
	return r;
}

const struct sb_runner_ops sb_runner_exec = {
    .name = "exec",
    .open = exec_open,
    .run = exec_run,
    .close = exec_close,
};
