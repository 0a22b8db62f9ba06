/* SPDX-License-Identifier: MIT */
/* Resource limits and the timeout supervisor, checked by their effect: every
 * case runs in a forked child (limits cannot be undone, and sb_supervise()
 * makes its caller a subreaper), and asserts what the kernel really did. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "resource-limits.h"
#include "tap.h"
#include "util.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif

#define MB (1000ULL * 1000ULL) /* the profile's unit: "256MB" is 256 000 000 bytes */

/* What a case's child sends back to the test process. */
struct result {
	int r[4];
	long long v[8];
	int err[8];
	bool skip;
	char msg[256];
};

struct outcome {
	int status;
	bool guard_hit; /* the child ran too long and was killed by us */
	bool got_result;
	uint64_t elapsed_ms;
	uint64_t cpu_ms; /* user + system time of the child */
	struct result res;
};

typedef void (*case_fn)(struct result *res, void *userdata);
/* Runs in the test process while the case's child runs. */
typedef void (*during_fn)(pid_t child, void *userdata);

static uid_t nobody_uid = 65534;
static gid_t nobody_gid = 65534;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void set_msg(struct result *res, const char *what, int r, char *err)
{
	snprintf(res->msg, sizeof(res->msg), " (%s: %s)", what, err ? err : strerror(-r));
	free(err);
}

/* Alive and not a zombie: killed processes re-parented to an init that does
 * not reap (some containers) stay zombies, which kill(pid, 0) still finds. */
static bool proc_alive(pid_t pid)
{
	char path[64], buf[256];
	const char *p;
	FILE *f;
	bool ok;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	(void)fclose(f);
	if (!ok)
		return false;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static bool wait_gone(pid_t pid, unsigned ms)
{
	uint64_t end = now_ms() + ms;

	while (proc_alive(pid)) {
		if (now_ms() >= end)
			return false;
		sleep_ms(5);
	}
	return true;
}

/* Forks; the child runs fn and sends *res back through a pipe. The parent
 * runs during() (if any), then waits at most guard_ms before it SIGKILLs
 * the child, so that no case can hang the suite. */
static void run_case(case_fn fn, during_fn during, void *userdata, unsigned guard_ms,
		     struct outcome *out)
{
	struct rusage ru = {0};
	int p[2];
	pid_t pid;
	uint64_t start, end;

	*out = (struct outcome){0};
	if (pipe2(p, O_CLOEXEC) < 0) {
		tap_diag("pipe: %s", strerror(errno));
		return;
	}
	(void)fflush(stdout);
	start = now_ms();
	pid = fork();
	if (pid < 0) {
		tap_diag("fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		struct result res = {0};

		close(p[0]);
		fn(&res, userdata);
		(void)!write(p[1], &res, sizeof(res));
		_exit(0);
	}
	close(p[1]);
	if (during)
		during(pid, userdata);

	end = start + guard_ms;
	for (;;) {
		pid_t r = wait4(pid, &out->status, WNOHANG, &ru);

		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			tap_diag("waitpid: %s", strerror(errno));
			break;
		}
		if (now_ms() >= end) {
			out->guard_hit = true;
			kill(pid, SIGKILL);
			wait4(pid, &out->status, 0, &ru);
			break;
		}
		sleep_ms(2);
	}
	out->elapsed_ms = now_ms() - start;
	out->cpu_ms = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
		      (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;

	/* Non-blocking: a descendant that wrongly survived may hold the write end. */
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	out->got_result = read(p[0], &out->res, sizeof(out->res)) == (ssize_t)sizeof(out->res);
	close(p[0]);
	if (out->guard_hit)
		tap_diag("the case ran longer than %u ms and was killed", guard_ms);
}

static void tap_skip_one(const char *name, const char *reason)
{
	tap_ok(true, "%s # SKIP %s", name, reason);
}

static int drop_to_nobody(void)
{
	if (geteuid() != 0)
		return 0; /* already unprivileged */
	if (setgroups(0, NULL) < 0 || setresgid(nobody_gid, nobody_gid, nobody_gid) < 0 ||
	    setresuid(nobody_uid, nobody_uid, nobody_uid) < 0)
		return -errno;
	return 0;
}

static bool exited_with(int status, int code)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

static bool killed_by(int status, int sig)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

/* ------------------------------------------------------------------------ */
/* sb_limits_apply() */

static void case_file_size(struct result *res, void *userdata)
{
	const struct sb_limits l = {.file_size_bytes = 1000};
	const char *path = userdata;
	char buf[2000];
	int fd;

	/* Without this the first write past the limit kills us with SIGXFSZ. */
	(void)signal(SIGXFSZ, SIG_IGN);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	res->r[0] = sb_limits_apply(&l, NULL);
	memset(buf, 'x', sizeof(buf));
	res->v[0] = write(fd, buf, sizeof(buf));
	errno = 0;
	res->v[1] = write(fd, buf, sizeof(buf));
	res->err[1] = errno;
}

static void test_file_size(void)
{
	char path[] = "/tmp/test-limits-XXXXXX";
	struct outcome o;
	struct stat st;
	int fd;

	fd = mkstemp(path);
	if (fd < 0) {
		tap_ok(false, "limit-file-size: mkstemp: %s", strerror(errno));
		return;
	}
	close(fd);
	run_case(case_file_size, NULL, path, 5000, &o);
	TAP_IS_INT(o.res.r[0], 0, "limit-file-size=1000: applied");
	/* Linux shortens the write that crosses the limit, and fails the next. */
	TAP_IS_INT(o.res.v[0], 1000, "limit-file-size=1000: a 2000-byte write stops at 1000 bytes");
	tap_ok(o.res.v[1] == -1 && o.res.err[1] == EFBIG,
	       "limit-file-size=1000: writing past the limit fails with EFBIG (got %lld, %s)",
	       o.res.v[1], strerror(o.res.err[1]));
	TAP_IS_INT(stat(path, &st) == 0 ? st.st_size : -1, 1000,
		   "limit-file-size=1000: the file is exactly 1000 bytes");
	tap_ok(exited_with(o.status, 0), "limit-file-size: the child was not killed by SIGXFSZ");
	unlink(path);
}

static void case_open_files(struct result *res, _unused_ void *userdata)
{
	const struct sb_limits l = {.open_files = 16};
	struct rlimit rl = {0};
	int last = -1;

	res->r[0] = sb_limits_apply(&l, NULL);
	getrlimit(RLIMIT_NOFILE, &rl);
	res->v[1] = (long long)rl.rlim_cur;
	res->v[2] = (long long)rl.rlim_max;
	for (int i = 0; i < 4096; i++) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			res->err[0] = errno;
			break;
		}
		last = fd;
	}
	res->v[0] = last;
}

static void test_open_files(void)
{
	struct outcome o;

	run_case(case_open_files, NULL, NULL, 5000, &o);
	TAP_IS_INT(o.res.r[0], 0, "limit-open-files=16: applied");
	tap_ok(o.res.v[1] == 16 && o.res.v[2] == 16,
	       "limit-open-files=16: RLIMIT_NOFILE is 16/16 (got %lld/%lld)", o.res.v[1],
	       o.res.v[2]);
	TAP_IS_INT(o.res.err[0], EMFILE, "limit-open-files=16: opening files ends with EMFILE");
	/* The limit is on descriptor numbers: 15 is the highest that fits. */
	TAP_IS_INT(o.res.v[0], 15, "limit-open-files=16: the last descriptor opened is 15");
}

static void case_memory(struct result *res, _unused_ void *userdata)
{
	const struct sb_limits l = {.memory_bytes = 256 * MB};
	/* volatile: the compiler may drop an unused malloc()/free() pair and
	 * fold "!= NULL" to true. */
	char *volatile small, *volatile big;

	res->r[0] = sb_limits_apply(&l, NULL);
	small = malloc(16 * MB);
	res->v[0] = small != NULL;
	if (small) {
		memset(small, 1, 16 * MB);
		res->v[1] = (unsigned char)small[16 * MB - 1];
		free(small);
	}
	errno = 0;
	big = malloc(512 * MB);
	/* LLVM assumes malloc() leaves errno alone and would forward the 0
	 * stored above: make it read errno again. */
	__asm__ volatile("" ::: "memory");
	res->v[2] = big != NULL;
	res->err[2] = errno;
	if (big) {
		memset(big, 1, 512 * MB);
		free(big);
	}
}

static void test_memory(void)
{
	struct outcome o;

#ifdef HAVE_ASAN
	tap_skip_one("limit-memory=256MB",
		     "AddressSanitizer reserves terabytes of virtual memory (shadow), which "
		     "RLIMIT_AS forbids");
	return;
#endif
	run_case(case_memory, NULL, NULL, 10000, &o);
	TAP_IS_INT(o.res.r[0], 0, "limit-memory=256MB: applied");
	tap_ok(o.res.v[0] == 1 && o.res.v[1] == 1,
	       "limit-memory=256MB: 16 MB can be allocated and written");
	tap_ok(o.res.v[2] == 0 && o.res.err[2] == ENOMEM,
	       "limit-memory=256MB: allocating 512 MB fails with ENOMEM (got %s, %s)",
	       o.res.v[2] ? "memory" : "NULL", strerror(o.res.err[2]));
	tap_ok(exited_with(o.status, 0), "limit-memory: the child exited normally");
}

static void case_cpu(struct result *res, _unused_ void *userdata)
{
	const struct sb_limits l = {.cpu_ms = 1000};
	volatile unsigned long spin = 0;

	res->r[0] = sb_limits_apply(&l, NULL);
	if (res->r[0] < 0)
		return;
	for (;;)
		spin++;
}

static void test_cpu(void)
{
	struct outcome o;

	run_case(case_cpu, NULL, NULL, 60000, &o);
	/* soft == hard: the kernel sends SIGKILL at the hard limit (SIGXCPU
	 * only comes first when the soft limit is lower). */
	tap_ok(!o.guard_hit && (killed_by(o.status, SIGXCPU) || killed_by(o.status, SIGKILL)),
	       "limit-cpu=1s: a busy loop is killed by SIGXCPU/SIGKILL (status 0x%x)", o.status);
	/* CPU time is what the limit counts; wall time depends on the load. */
	tap_ok(o.cpu_ms >= 900 && o.cpu_ms < 2000,
	       "limit-cpu=1s: ... after about 1 s of CPU time (%llu ms)",
	       (unsigned long long)o.cpu_ms);
	/* No bound on wall time: on a loaded machine 1 s of CPU takes many
	 * seconds of it (the guard of run_case() catches a hang). */
}

static void case_semantics(struct result *res, _unused_ void *userdata)
{
	struct rlimit rl;

	res->r[0] = sb_limits_apply(&(struct sb_limits){.cpu_ms = 1500}, NULL);
	getrlimit(RLIMIT_CPU, &rl);
	res->v[0] = (long long)rl.rlim_cur;
	res->v[1] = (long long)rl.rlim_max;

	res->r[1] = sb_limits_apply(&(struct sb_limits){.cpu_ms = 1}, NULL);
	getrlimit(RLIMIT_CPU, &rl);
	res->v[2] = rl.rlim_cur == rl.rlim_max ? (long long)rl.rlim_max : -1;

	/* Higher than the current hard limit: kept as it is, no EPERM. */
	res->r[2] = sb_limits_apply(&(struct sb_limits){.cpu_ms = 3000}, NULL);
	getrlimit(RLIMIT_CPU, &rl);
	res->v[3] = rl.rlim_cur == rl.rlim_max ? (long long)rl.rlim_max : -1;

	/* A soft limit already below the requested value stays. */
	setrlimit(RLIMIT_NOFILE, &(struct rlimit){.rlim_cur = 20, .rlim_max = 100});
	res->r[3] = sb_limits_apply(&(struct sb_limits){.open_files = 50}, NULL);
	getrlimit(RLIMIT_NOFILE, &rl);
	res->v[4] = (long long)rl.rlim_cur;
	res->v[5] = (long long)rl.rlim_max;
}

static void test_semantics(void)
{
	struct rlimit before[3], after[3];
	const int which[3] = {RLIMIT_CPU, RLIMIT_AS, RLIMIT_NOFILE};
	_cleanup_free_ char *err = NULL;
	struct outcome o;
	bool same = true;
	int r;

	run_case(case_semantics, NULL, NULL, 5000, &o);
	tap_ok(o.res.r[0] == 0 && o.res.v[0] == 2 && o.res.v[1] == 2,
	       "limit-cpu=1500ms: RLIMIT_CPU is 2/2 s, rounded up (got %lld/%lld)", o.res.v[0],
	       o.res.v[1]);
	tap_ok(o.res.r[1] == 0 && o.res.v[2] == 1, "limit-cpu=1ms: RLIMIT_CPU is 1 s (got %lld)",
	       o.res.v[2]);
	tap_ok(o.res.r[2] == 0 && o.res.v[3] == 1,
	       "a higher value never raises the hard limit (got %lld, r=%d)", o.res.v[3],
	       o.res.r[2]);
	tap_ok(o.res.r[3] == 0 && o.res.v[4] == 20 && o.res.v[5] == 50,
	       "a lower soft limit is kept, the hard one lowered (got %lld/%lld)", o.res.v[4],
	       o.res.v[5]);

	/* In this process: all-zero limits change nothing. */
	for (size_t i = 0; i < ELEMENTSOF(which); i++)
		getrlimit(which[i], &before[i]);
	r = sb_limits_apply(&(struct sb_limits){0}, &err);
	for (size_t i = 0; i < ELEMENTSOF(which); i++) {
		getrlimit(which[i], &after[i]);
		same = same && before[i].rlim_cur == after[i].rlim_cur &&
		       before[i].rlim_max == after[i].rlim_max;
	}
	tap_ok(r == 0 && same, "zero fields are \"no limit\": nothing changes");

	r = sb_limits_apply(NULL, &err);
	TAP_IS_INT(r, -EINVAL, "sb_limits_apply(NULL) is -EINVAL");
	free(TAKE_PTR(err));
}

static void case_processes(struct result *res, _unused_ void *userdata)
{
	pid_t pid;
	int r;

	r = drop_to_nobody();
	if (r < 0) {
		res->skip = true;
		snprintf(res->msg, sizeof(res->msg), "cannot switch to nobody: %s", strerror(-r));
		return;
	}
	/* Without the limit, this user can fork. */
	pid = fork();
	if (pid == 0)
		_exit(0);
	res->v[0] = pid > 0;
	if (pid > 0)
		waitpid(pid, NULL, 0);

	res->r[0] = sb_limits_apply(&(struct sb_limits){.processes = 1}, NULL);
	errno = 0;
	pid = fork();
	if (pid == 0)
		_exit(0);
	res->v[1] = pid;
	res->err[1] = errno;
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static void test_processes(void)
{
	struct outcome o;

	run_case(case_processes, NULL, NULL, 5000, &o);
	if (o.res.skip) {
		tap_skip_one("limit-processes=1", o.res.msg);
		return;
	}
	tap_ok(o.res.v[0] == 1, "limit-processes: as uid %d, fork works without the limit",
	       (int)(geteuid() == 0 ? nobody_uid : geteuid()));
	TAP_IS_INT(o.res.r[0], 0, "limit-processes=1: applied");
	tap_ok(o.res.v[1] == -1 && o.res.err[1] == EAGAIN,
	       "limit-processes=1: fork fails with EAGAIN (got %lld, %s)", o.res.v[1],
	       strerror(o.res.err[1]));
}

static void case_raise(struct result *res, _unused_ void *userdata)
{
	struct rlimit rl = {0};
	int r;

	r = drop_to_nobody();
	if (r < 0) {
		res->skip = true;
		snprintf(res->msg, sizeof(res->msg), "cannot switch to nobody: %s", strerror(-r));
		return;
	}
	res->r[0] =
	    sb_limits_apply(&(struct sb_limits){.open_files = 32, .file_size_bytes = 4096}, NULL);
	getrlimit(RLIMIT_NOFILE, &rl);
	res->v[0] = (long long)rl.rlim_cur;
	res->v[1] = (long long)rl.rlim_max;
	errno = 0;
	res->v[2] = setrlimit(RLIMIT_NOFILE, &(struct rlimit){.rlim_cur = 64, .rlim_max = 64});
	res->err[2] = errno;
	errno = 0;
	res->v[3] = setrlimit(
	    RLIMIT_FSIZE, &(struct rlimit){.rlim_cur = RLIM_INFINITY, .rlim_max = RLIM_INFINITY});
	res->err[3] = errno;
}

static void test_raise(void)
{
	struct outcome o;

	run_case(case_raise, NULL, NULL, 5000, &o);
	if (o.res.skip) {
		tap_skip_one("hard limits cannot be raised back", o.res.msg);
		return;
	}
	tap_ok(o.res.r[0] == 0 && o.res.v[0] == 32 && o.res.v[1] == 32,
	       "limit-open-files=32: soft = hard = 32 (got %lld/%lld)", o.res.v[0], o.res.v[1]);
	tap_ok(o.res.v[2] == -1 && o.res.err[2] == EPERM,
	       "the program cannot raise RLIMIT_NOFILE back: EPERM (got %lld, %s)", o.res.v[2],
	       strerror(o.res.err[2]));
	tap_ok(o.res.v[3] == -1 && o.res.err[3] == EPERM,
	       "the program cannot raise RLIMIT_FSIZE back: EPERM (got %lld, %s)", o.res.v[3],
	       strerror(o.res.err[3]));
}

/* ------------------------------------------------------------------------ */
/* sb_supervise() */

static void case_sup_timeout(struct result *res, _unused_ void *userdata)
{
	bool is_child = false, timed_out = false;
	uint64_t t0 = now_ms();
	char *err = NULL;
	int status = 0;

	res->r[0] = sb_supervise(300, &is_child, &status, &timed_out, &err);
	if (res->r[0] == 0 && is_child) {
		sleep(10);
		_exit(0);
	}
	if (res->r[0] < 0)
		set_msg(res, "sb_supervise", res->r[0], err);
	res->v[0] = timed_out;
	res->v[1] = status;
	res->v[2] = (long long)(now_ms() - t0);
}

static void test_sup_timeout(void)
{
	struct outcome o;

	run_case(case_sup_timeout, NULL, NULL, 5000, &o);
	tap_ok(o.got_result && o.res.r[0] == 0, "timeout=300ms: sb_supervise returns 0%s",
	       o.res.msg);
	tap_ok(o.res.v[0] == 1, "timeout=300ms: a child sleeping 10 s times out");
	tap_ok(killed_by((int)o.res.v[1], SIGKILL), "timeout=300ms: ... killed by SIGKILL (0x%llx)",
	       o.res.v[1]);
	tap_ok(o.res.v[2] >= 300 && o.res.v[2] < 2000,
	       "timeout=300ms: the supervisor returns after 300 ms, before 2 s (%lld ms)",
	       o.res.v[2]);
}

static void case_sup_daemon(struct result *res, _unused_ void *userdata)
{
	bool is_child = false, timed_out = false;
	char *err = NULL;
	pid_t daemon_pid = 0;
	int status = 0, p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	res->r[0] = sb_supervise(300, &is_child, &status, &timed_out, &err);
	if (res->r[0] == 0 && is_child) {
		pid_t g;

		close(p[0]);
		g = fork();
		if (g == 0) {
			/* The classic daemon: new session, double fork, the
			 * middle process exits and the daemon is orphaned. */
			setsid();
			if (fork() == 0) {
				pid_t me = getpid();

				(void)!write(p[1], &me, sizeof(me));
				sleep(30);
			}
			_exit(0);
		}
		waitpid(g, NULL, 0);
		sleep(10);
		_exit(0);
	}
	close(p[1]);
	if (res->r[0] < 0)
		set_msg(res, "sb_supervise", res->r[0], err);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	if (read(p[0], &daemon_pid, sizeof(daemon_pid)) != sizeof(daemon_pid))
		daemon_pid = 0;
	close(p[0]);
	res->v[0] = timed_out;
	res->v[1] = status;
	res->v[2] = daemon_pid;
	errno = 0;
	res->v[3] = kill(daemon_pid, 0);
	res->err[3] = errno;
}

static void test_sup_daemon(void)
{
	struct outcome o;
	pid_t pid;

	run_case(case_sup_daemon, NULL, NULL, 5000, &o);
	pid = (pid_t)o.res.v[2];
	tap_ok(o.res.r[0] == 0 && o.res.v[0] == 1, "daemon: the program times out%s", o.res.msg);
	tap_ok(pid > 0, "daemon: the double-forked grandchild reported its pid (%d)", (int)pid);
	tap_ok(o.res.v[3] == -1 && o.res.err[3] == ESRCH,
	       "daemon: after the timeout, kill(daemon, 0) is ESRCH in the supervisor (%s)",
	       strerror(o.res.err[3]));
	tap_ok(!proc_alive(pid), "daemon: the setsid() grandchild no longer exists");
	if (pid > 0 && proc_alive(pid))
		kill(pid, SIGKILL);
}

static void case_sup_exit(struct result *res, _unused_ void *userdata)
{
	bool is_child = false, timed_out = false;
	uint64_t t0 = now_ms();
	pid_t bg_pid = 0;
	char *err = NULL;
	int status = 0, p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	res->r[0] = sb_supervise(5000, &is_child, &status, &timed_out, &err);
	if (res->r[0] == 0 && is_child) {
		pid_t b = fork();

		if (b == 0) {
			sleep(30);
			_exit(0);
		}
		(void)!write(p[1], &b, sizeof(b));
		_exit(3);
	}
	close(p[1]);
	if (res->r[0] < 0)
		set_msg(res, "sb_supervise", res->r[0], err);
	res->v[4] = (long long)(now_ms() - t0);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	if (read(p[0], &bg_pid, sizeof(bg_pid)) != sizeof(bg_pid))
		bg_pid = 0;
	close(p[0]);
	res->v[0] = timed_out;
	res->v[1] = status;
	res->v[2] = bg_pid;
	errno = 0;
	res->v[3] = kill(bg_pid, 0);
	res->err[3] = errno;
}

static void test_sup_exit(void)
{
	struct outcome o;
	pid_t pid;

	run_case(case_sup_exit, NULL, NULL, 8000, &o);
	pid = (pid_t)o.res.v[2];
	TAP_IS_INT(o.res.r[0], 0, "exit 3: sb_supervise returns 0");
	tap_ok(exited_with((int)o.res.v[1], 3), "exit 3: the status is exit 3 (0x%llx)",
	       o.res.v[1]);
	TAP_IS_INT(o.res.v[0], 0, "exit 3: timed_out is false");
	tap_ok(o.res.v[4] < 2000,
	       "exit 3: the supervisor returns at once, not at the deadline "
	       "(%lld ms)",
	       o.res.v[4]);
	tap_ok(pid > 0 && o.res.v[3] == -1 && o.res.err[3] == ESRCH && !proc_alive(pid),
	       "exit 3: the background grandchild (%d) was killed too (%s)", (int)pid,
	       strerror(o.res.err[3]));
	if (pid > 0 && proc_alive(pid))
		kill(pid, SIGKILL);
}

/* A program still forking at the deadline: every process it made, re-parented
 * or not, must be gone. Each one sends its pid; at most 400 of them. */
static void case_sup_forking(struct result *res, _unused_ void *userdata)
{
	bool is_child = false, timed_out = false;
	char *err = NULL;
	int status = 0, p[2], alive = 0, total = 0;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	res->r[0] = sb_supervise(300, &is_child, &status, &timed_out, &err);
	if (res->r[0] == 0 && is_child) {
		close(p[0]);
		for (int i = 0; i < 200; i++) {
			if (fork() == 0) {
				pid_t me;

				/* A child and a grandchild; half of the children
				 * exit, orphaning their grandchild. */
				if (fork() == 0) {
					me = getpid();
					(void)!write(p[1], &me, sizeof(me));
					sleep(30);
					_exit(0);
				}
				me = getpid();
				(void)!write(p[1], &me, sizeof(me));
				sleep(i % 2 ? 30 : 0);
				_exit(0);
			}
			sleep_ms(2);
		}
		sleep(30);
		_exit(0);
	}
	close(p[1]);
	if (res->r[0] < 0)
		set_msg(res, "sb_supervise", res->r[0], err);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	while (read(p[0], &pid, sizeof(pid)) == sizeof(pid)) {
		total++;
		if (proc_alive(pid)) {
			alive++;
			kill(pid, SIGKILL);
		}
	}
	close(p[0]);
	res->v[0] = timed_out;
	res->v[1] = total;
	res->v[2] = alive;
}

static void test_sup_forking(void)
{
	struct outcome o;

	run_case(case_sup_forking, NULL, NULL, 8000, &o);
	tap_ok(o.res.r[0] == 0 && o.res.v[0] == 1,
	       "forking program: times out, sb_supervise returns 0%s", o.res.msg);
	tap_ok(o.res.v[1] > 20 && o.res.v[2] == 0,
	       "forking program: none of the %lld processes it started survives (%lld alive)",
	       o.res.v[1], o.res.v[2]);
}

/* Forwarding: the program counts the signals it gets through a pipe. */
enum send_how {
	SEND_KILL,	 /* kill(supervisor, sig) */
	SEND_TTY_INTR,	 /* ^C typed on the terminal */
	SEND_TTY_HANGUP, /* the terminal goes away */
};

struct sig_case {
	int ready[2]; /* program -> test: handler installed */
	int seen[2];  /* program -> test: one byte per signal handled */
	enum send_how how;
	int pty_master;
	char pty_slave[64];
	int sig;
};

static int seen_fd = -1;
static volatile sig_atomic_t seen_count;

static void on_signal(int sig)
{
	char c = (char)sig;

	(void)!write(seen_fd, &c, 1);
	seen_count++;
}

static void case_sup_signal(struct result *res, void *userdata)
{
	struct sig_case *c = userdata;
	bool is_child = false, timed_out = false;
	char *err = NULL;
	int status = 0;

	close(c->ready[0]);
	close(c->seen[0]);
	if (c->how != SEND_KILL) {
		int tty;

		/* A session of our own with the pty as controlling terminal:
		 * our process group is its foreground group. */
		close(c->pty_master);
		if (setsid() < 0 || (tty = open(c->pty_slave, O_RDWR)) < 0 ||
		    ioctl(tty, TIOCSCTTY, 0) < 0) {
			res->skip = true;
			snprintf(res->msg, sizeof(res->msg), "no controlling terminal: %s",
				 strerror(errno));
			return;
		}
	}
	res->r[0] = sb_supervise(5000, &is_child, &status, &timed_out, &err);
	if (res->r[0] == 0 && is_child) {
		struct sigaction sa = {.sa_handler = on_signal};
		uint64_t end = now_ms() + 3000;

		seen_fd = c->seen[1];
		sigaction(c->sig, &sa, NULL);
		(void)!write(c->ready[1], "R", 1);
		while (!seen_count && now_ms() < end)
			sleep_ms(5);
		/* A duplicate (forwarded on top of the terminal's) would land
		 * in this window. */
		sleep_ms(300);
		_exit(seen_count ? 0 : 1);
	}
	if (res->r[0] < 0)
		set_msg(res, "sb_supervise", res->r[0], err);
	res->v[0] = timed_out;
	res->v[1] = status;
}

static void during_signal(pid_t runner, void *userdata)
{
	struct sig_case *c = userdata;
	struct pollfd pfd = {.fd = c->ready[0], .events = POLLIN};
	char b;

	close(c->ready[1]);
	close(c->seen[1]);
	if (poll(&pfd, 1, 3000) != 1 || read(c->ready[0], &b, 1) != 1)
		return;
	switch (c->how) {
	case SEND_KILL:
		kill(runner, c->sig);
		break;
	case SEND_TTY_INTR:
		(void)!write(c->pty_master, "\003", 1); /* ^C: the terminal's SIGINT */
		break;
	case SEND_TTY_HANGUP:
		/* The last close of the master hangs the terminal up: SIGHUP
		 * to the session leader (the supervisor) only. */
		close(c->pty_master);
		c->pty_master = -1;
		break;
	}
}

static int count_seen(int fd, int sig)
{
	char buf[64];
	ssize_t n;
	int count = 0;

	fcntl(fd, F_SETFL, O_NONBLOCK);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			count += buf[i] == (char)sig;
	return count;
}

static void test_sup_sigterm(void)
{
	struct sig_case c = {.how = SEND_KILL, .pty_master = -1, .sig = SIGTERM};
	struct outcome o;

	if (pipe2(c.ready, O_CLOEXEC) < 0 || pipe2(c.seen, O_CLOEXEC) < 0) {
		tap_ok(false, "SIGTERM forwarding: pipe: %s", strerror(errno));
		return;
	}
	run_case(case_sup_signal, during_signal, &c, 8000, &o);
	tap_ok(o.got_result && o.res.r[0] == 0,
	       "SIGTERM to the supervisor: it survives and returns 0%s", o.res.msg);
	TAP_IS_INT(count_seen(c.seen[0], SIGTERM), 1,
		   "SIGTERM to the supervisor: the program's handler ran once");
	tap_ok(exited_with((int)o.res.v[1], 0) && o.res.v[0] == 0,
	       "SIGTERM to the supervisor: the program exits 0 after handling it (0x%llx)",
	       o.res.v[1]);
	close(c.ready[0]);
	close(c.seen[0]);
}

static void test_sup_tty(enum send_how how, int sig, const char *name, const char *why)
{
	struct sig_case c = {.how = how, .sig = sig};
	struct outcome o;

	c.pty_master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (c.pty_master < 0 || grantpt(c.pty_master) < 0 || unlockpt(c.pty_master) < 0 ||
	    ptsname_r(c.pty_master, c.pty_slave, sizeof(c.pty_slave)) != 0) {
		tap_skip_one(name, "no pseudo-terminal");
		if (c.pty_master >= 0)
			close(c.pty_master);
		return;
	}
	if (pipe2(c.ready, O_CLOEXEC) < 0 || pipe2(c.seen, O_CLOEXEC) < 0) {
		tap_ok(false, "%s: pipe: %s", name, strerror(errno));
		close(c.pty_master);
		return;
	}
	run_case(case_sup_signal, during_signal, &c, 8000, &o);
	if (o.res.skip) {
		tap_skip_one(name, o.res.msg);
	} else {
		tap_ok(o.got_result && o.res.r[0] == 0,
		       "%s: the supervisor survives and returns 0%s", name, o.res.msg);
		TAP_IS_INT(count_seen(c.seen[0], sig), 1, why);
		tap_ok(exited_with((int)o.res.v[1], 0), "%s: the program exits 0 (0x%llx)", name,
		       o.res.v[1]);
	}
	if (c.pty_master >= 0)
		close(c.pty_master);
	close(c.ready[0]);
	close(c.seen[0]);
}

/* The caller's signal state, as the program and the supervisor see it. */
static bool mask_is_callers(void)
{
	sigset_t m;

	sigprocmask(SIG_SETMASK, NULL, &m);
	return sigismember(&m, SIGUSR1) && !sigismember(&m, SIGTERM) && !sigismember(&m, SIGINT) &&
	       !sigismember(&m, SIGCHLD);
}

static bool sigchld_ignored(void)
{
	struct sigaction sa;

	sigaction(SIGCHLD, NULL, &sa);
	return sa.sa_handler == SIG_IGN;
}

static void case_sup_state(struct result *res, _unused_ void *userdata)
{
	bool is_child = false, timed_out = false;
	char *err = NULL;
	int status = 0, v = -1;
	sigset_t m;

	/* A caller with SIGCHLD ignored (children auto-reaped) and SIGUSR1 blocked. */
	(void)signal(SIGCHLD, SIG_IGN);
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	sigprocmask(SIG_BLOCK, &m, NULL);

	res->r[0] = sb_supervise(3000, &is_child, &status, &timed_out, &err);
	if (res->r[0] == 0 && is_child) {
		int bits = 0;

		bits |= mask_is_callers() << 0;
		bits |= sigchld_ignored() << 1;
		bits |= (prctl(PR_GET_PDEATHSIG, &v, 0, 0, 0) == 0 && v == SIGKILL) << 2;
		bits |= (prctl(PR_GET_CHILD_SUBREAPER, &v, 0, 0, 0) == 0 && v == 0) << 3;
		_exit(bits);
	}
	if (res->r[0] < 0)
		set_msg(res, "sb_supervise", res->r[0], err);
	res->v[0] = status;
	res->v[1] = timed_out;
	res->v[2] = mask_is_callers();
	res->v[3] = sigchld_ignored();
	res->v[4] = prctl(PR_GET_CHILD_SUBREAPER, &v, 0, 0, 0) == 0 && v == 0;
}

static void test_sup_state(void)
{
	struct outcome o;
	int bits;

	run_case(case_sup_state, NULL, NULL, 5000, &o);
	bits = WIFEXITED((int)o.res.v[0]) ? WEXITSTATUS((int)o.res.v[0]) : -1;
	tap_ok(o.res.r[0] == 0 && bits >= 0 && o.res.v[1] == 0,
	       "caller ignores SIGCHLD: the program's exit status is still reported%s", o.res.msg);
	tap_ok(bits >= 0 && (bits & 1), "program: the caller's signal mask, nothing more blocked");
	tap_ok(bits >= 0 && (bits & 2), "program: the caller's SIGCHLD disposition (SIG_IGN)");
	tap_ok(bits >= 0 && (bits & 4), "program: PR_SET_PDEATHSIG is SIGKILL");
	tap_ok(bits >= 0 && (bits & 8), "program: not a child subreaper");
	tap_ok(o.res.v[2] && o.res.v[3] && o.res.v[4],
	       "supervisor: mask, SIGCHLD and subreaper flag restored on return");
}

struct pdeath_case {
	int p[2];
	pid_t program;
};

static void case_sup_pdeath(struct result *res, void *userdata)
{
	struct pdeath_case *c = userdata;
	bool is_child = false, timed_out = false;
	char *err = NULL;
	int status = 0;

	close(c->p[0]);
	res->r[0] = sb_supervise(10000, &is_child, &status, &timed_out, &err);
	if (res->r[0] == 0 && is_child) {
		pid_t me = getpid();

		(void)!write(c->p[1], &me, sizeof(me));
		sleep(30);
		_exit(0);
	}
	free(err);
}

static void during_pdeath(pid_t runner, void *userdata)
{
	struct pdeath_case *c = userdata;
	struct pollfd pfd = {.fd = c->p[0], .events = POLLIN};

	close(c->p[1]);
	if (poll(&pfd, 1, 3000) != 1 || read(c->p[0], &c->program, sizeof(c->program)) < 1)
		return;
	kill(runner, SIGKILL); /* the supervisor dies without any cleanup */
}

static void test_sup_pdeath(void)
{
	struct pdeath_case c = {0};
	struct outcome o;

	if (pipe2(c.p, O_CLOEXEC) < 0) {
		tap_ok(false, "supervisor killed: pipe: %s", strerror(errno));
		return;
	}
	run_case(case_sup_pdeath, during_pdeath, &c, 5000, &o);
	close(c.p[0]);
	tap_ok(c.program > 0 && killed_by(o.status, SIGKILL), "supervisor killed with SIGKILL");
	tap_ok(c.program > 0 && wait_gone(c.program, 2000),
	       "supervisor killed: the program (%d) dies with it (PR_SET_PDEATHSIG)",
	       (int)c.program);
	if (c.program > 0 && proc_alive(c.program))
		kill(c.program, SIGKILL);
}

static void test_sup_invalid(void)
{
	bool is_child = false, timed_out = false;
	_cleanup_free_ char *err = NULL;
	int status = 0, r;

	r = sb_supervise(0, &is_child, &status, &timed_out, &err);
	tap_ok(r == -EINVAL && err && strstr(err, "timeout"),
	       "timeout=0: -EINVAL, no fork, message names the key (%s)", err ? err : "");
}

int main(void)
{
	struct passwd *pw = getpwnam("nobody");

	if (pw) {
		nobody_uid = pw->pw_uid;
		nobody_gid = pw->pw_gid;
	}
	tap_diag("running as uid %d", (int)geteuid());

	test_file_size();
	test_open_files();
	test_memory();
	test_cpu();
	test_semantics();
	test_processes();
	test_raise();

	test_sup_invalid();
	test_sup_timeout();
	test_sup_daemon();
	test_sup_exit();
	test_sup_forking();
	test_sup_sigterm();
	/* The terminal signals the whole foreground group: the supervisor
	 * must not add a forwarded copy. */
	test_sup_tty(SEND_TTY_INTR, SIGINT, "^C on the terminal",
		     "^C on the terminal: the program gets SIGINT once, not twice");
	/* A hangup signals the session leader alone: it must be forwarded. */
	test_sup_tty(SEND_TTY_HANGUP, SIGHUP, "terminal hangup",
		     "terminal hangup: the supervisor (session leader) forwards SIGHUP once");
	test_sup_state();
	test_sup_pdeath();
	return tap_done();
}
