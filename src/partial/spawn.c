/* SPDX-License-Identifier: MIT */
/* Starting and stopping the worker process. */
#include "core.h"

#include <fcntl.h>
#include <signal.h>
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
		r = -posix_spawn(&pid, argv[0], &fa, &attr, argv, envp);
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
