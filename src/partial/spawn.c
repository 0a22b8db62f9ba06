/* SPDX-License-Identifier: MIT */
/* Starting and stopping the worker process. */
#include "core.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <spawn.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* The descriptor the worker finds the channel on. */
#define CHILD_FD     3
#define MAX_CHILDREN 16

/* Process groups to kill when a fatal signal ends the parent, and which
 * process started each: a child forked inside sandboxes() inherits the
 * table, and its own death must not take its parent's worker along.
 * Written under the GIL, read by a signal handler: plain sig_atomic_t. */
static volatile sig_atomic_t live_groups[MAX_CHILDREN];
static volatile sig_atomic_t live_owners[MAX_CHILDREN];

static void remember(pid_t pid)
{
	for (size_t i = 0; i < MAX_CHILDREN; i++)
		if (!live_groups[i]) {
			live_owners[i] = getpid();
			live_groups[i] = pid;
			return;
		}
}

static void forget(pid_t pid)
{
	for (size_t i = 0; i < MAX_CHILDREN; i++)
		if (live_groups[i] == pid)
			live_groups[i] = 0;
}

void sb_child_kill_all_from_signal(void)
{
	pid_t self = getpid(); /* async-signal-safe */

	for (size_t i = 0; i < MAX_CHILDREN; i++)
		if (live_groups[i] > 0 && live_owners[i] == self)
			kill(-(pid_t)live_groups[i], SIGKILL);
}

/* The worker dies with this process through its parent-death signal
 * (PR_SET_PDEATHSIG, which python-sb sets and seccomp keeps the sandboxed
 * code from clearing). The kernel sends it when the *thread* that created
 * the child ends, not the process: a worker spawned by a thread that then
 * returns (a `with sandboxes()` in a short-lived thread, a call that starts
 * an extra worker) would be killed with that thread. So every worker is
 * spawned by one thread of ours that never returns: it ends only with the
 * process (exit, exec, a fatal signal), which is when the workers must go. */
struct spawn_request {
	const char *path;
	posix_spawn_file_actions_t *fa;
	posix_spawnattr_t *attr;
	char *const *argv;
	char *const *envp;
	pid_t pid;
	int r;
	bool done;
};

static struct {
	pthread_mutex_t lock; /* the fields below */
	pthread_cond_t wake;  /* a request posted, or done */
	pthread_once_t once;
	pid_t owner; /* the process the thread runs in; 0: none yet */
	struct spawn_request *req;
} spawner = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .once = PTHREAD_ONCE_INIT,
};

/* A forked child has no spawner thread, and may have been forked while
 * another thread held the lock: it starts afresh. */
static void spawner_after_fork(void)
{
	spawner.lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	spawner.wake = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
	spawner.owner = 0;
	spawner.req = NULL;
}

static void spawner_register(void)
{
	(void)pthread_atfork(NULL, NULL, spawner_after_fork);
}

static void *spawner_main(void *arg _unused_)
{
	pthread_mutex_lock(&spawner.lock);
	for (;;) {
		struct spawn_request *q = spawner.req;

		if (!q || q->done) {
			pthread_cond_wait(&spawner.wake, &spawner.lock);
			continue;
		}
		q->r = posix_spawn(&q->pid, q->path, q->fa, q->attr, q->argv, q->envp);
		q->done = true;
		pthread_cond_broadcast(&spawner.wake);
	}
	return NULL;
}

/* Under spawner.lock. Its signals all blocked: the process's signals are
 * for the interpreter's threads. */
static int spawner_start(void)
{
	pthread_attr_t attr;
	pthread_t thread;
	sigset_t all, saved;
	int r;

	if (spawner.owner == getpid())
		return 0;
	r = pthread_attr_init(&attr);
	if (r != 0)
		return -r;
	r = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (r == 0)
		r = pthread_attr_setstacksize(&attr, 256 * 1024);
	sigfillset(&all);
	if (r == 0)
		r = pthread_sigmask(SIG_SETMASK, &all, &saved);
	if (r == 0) {
		r = pthread_create(&thread, &attr, spawner_main, NULL);
		(void)pthread_sigmask(SIG_SETMASK, &saved, NULL);
	}
	pthread_attr_destroy(&attr);
	if (r != 0)
		return -r;
	spawner.owner = getpid();
	return 0;
}

/* posix_spawn() run by the spawner thread. 0 or -errno. */
static int spawn_from_lasting_thread(pid_t *ret_pid, const char *path,
				     posix_spawn_file_actions_t *fa, posix_spawnattr_t *attr,
				     char *const *argv, char *const *envp)
{
	struct spawn_request q = {.path = path, .fa = fa, .attr = attr, .argv = argv, .envp = envp};
	int r;

	r = pthread_once(&spawner.once, spawner_register);
	if (r != 0)
		return -r;
	pthread_mutex_lock(&spawner.lock);
	r = spawner_start();
	if (r == 0) {
		/* One request at a time. */
		while (spawner.req)
			pthread_cond_wait(&spawner.wake, &spawner.lock);
		spawner.req = &q;
		pthread_cond_broadcast(&spawner.wake);
		while (!q.done)
			pthread_cond_wait(&spawner.wake, &spawner.lock);
		spawner.req = NULL;
		pthread_cond_broadcast(&spawner.wake);
		r = -q.r;
		if (r == 0)
			*ret_pid = q.pid;
	}
	pthread_mutex_unlock(&spawner.lock);
	return r;
}

int sb_child_spawn(char *const *argv, char *const *envp, struct sb_child *ret)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t all, none;
	int sv[2], r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	sigemptyset(&none);
	/* dup2 onto the same number would keep close-on-exec; onto CHILD_FD it
	 * clears it, for this descriptor only. */
	if (sv[1] == CHILD_FD) {
		int moved = fcntl(sv[1], F_DUPFD_CLOEXEC, CHILD_FD + 1);

		if (moved < 0) {
			r = -errno;
			goto out;
		}
		close(sv[1]);
		sv[1] = moved;
	}
	r = -posix_spawn_file_actions_adddup2(&fa, sv[1], CHILD_FD);
	if (r == 0)
		r = -posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	/* Its own process group: a terminal's Ctrl-C reaches the parent, which
	 * decides; the worker's children die with it. Python ignores SIGPIPE:
	 * the worker gets default dispositions and no blocked signal. */
	if (r == 0)
		r = -posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
							 POSIX_SPAWN_SETSIGMASK);
	if (r == 0)
		r = -posix_spawnattr_setpgroup(&attr, 0);
	if (r == 0)
		r = -posix_spawnattr_setsigdefault(&attr, &all);
	if (r == 0)
		r = -posix_spawnattr_setsigmask(&attr, &none);
	if (r == 0)
		r = spawn_from_lasting_thread(&pid, argv[0], &fa, &attr, argv, envp);
	if (r == 0) {
		remember(pid);
		ret->pid = pid;
		ret->fd = sv[0];
		sv[0] = -1;
	}
out:
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (sv[0] >= 0)
		close(sv[0]);
	close(sv[1]);
	return r;
}

static int reap(pid_t pid, int *status)
{
	pid_t r;

	do
		r = waitpid(pid, status, 0);
	while (r < 0 && errno == EINTR);
	return r == pid ? 0 : -1;
}

void sb_child_kill(struct sb_child *child, int *ret_status)
{
	int status = -1;

	if (child->fd >= 0)
		close(child->fd);
	child->fd = -1;
	if (child->pid > 0) {
		kill(-child->pid, SIGKILL);
		kill(child->pid, SIGKILL);
		if (reap(child->pid, &status) < 0)
			status = -1;
		forget(child->pid);
	}
	child->pid = 0;
	if (ret_status)
		*ret_status = status;
}

void sb_child_stop(struct sb_child *child, int timeout_ms)
{
	struct timespec step = {0, 2 * 1000 * 1000};

	/* WNOWAIT: the exited worker stays a zombie, so its process group id
	 * cannot be reused before sb_child_kill() sends SIGKILL to what it left
	 * running in the group. */
	for (int waited = 0; child->pid > 0 && waited < timeout_ms; waited += 2) {
		siginfo_t info = {0};

		if (waitid(P_PID, (id_t)child->pid, &info, WEXITED | WNOHANG | WNOWAIT) < 0 &&
		    errno != EINTR)
			break;
		if (info.si_pid == child->pid)
			break;
		nanosleep(&step, NULL);
	}
	sb_child_kill(child, NULL);
}

void sb_describe_status(int status, char *buf, size_t len)
{
	if (status == -1)
		snprintf(buf, len, "ended");
	else if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "ended (wait status 0x%x)", (unsigned)status);
}
