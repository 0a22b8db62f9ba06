/* SPDX-License-Identifier: MIT */
/* PID 1 of a PID namespace of ours (pid-init.h). */
#include "pid-init.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "raw-syscall.h"
#include "util.h"

#if defined(SB_HAVE_RAW_SYSCALL) && !defined(SB_HAVE_ASAN)
#define SB_INIT_SHARES_MEMORY 1
#endif

/* The namespaces the init can make, in the order it makes them, each
 * reported on join_fd (pid-init.h). */
static const int made_in_order[] = {CLONE_NEWNS, CLONE_NEWNET};

/* Every init's life, written once for both ways of starting it: sys() is a
 * system call that leaves errno alone (the caller's, when memory is shared);
 * a is a struct sb_init_args. */
#define INIT_BODY(sys, a)                                                                          \
	do {                                                                                       \
		struct pollfd pfd = {.fd = (a).alive_fd, .events = POLLIN};                        \
		struct timespec zero = {0};                                                        \
		/* linux/capability.h's, which musl's headers lack: version 3, two                 \
		 * sets of (effective, permitted, inheritable), all empty. */                      \
		struct {                                                                           \
			uint32_t version;                                                          \
			int pid;                                                                   \
		} header = {.version = 0x20080522};                                                \
		uint32_t caps[6] = {0};                                                            \
		uint64_t all = ~0ULL, chld = 1ULL << (SIGCHLD - 1);                                \
		int status;                                                                        \
                                                                                                   \
		sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);                                \
		/* Readable or hung up: the caller is gone. */                                     \
		if (sys(SYS_ppoll, (long)&pfd, 1, (long)&zero, 0, 8) != 0)                         \
			sys(SYS_exit, 0, 0, 0, 0, 0);                                              \
		/* Dumpable until the program's process has joined them (setns()                   \
		 * on a pidfd is a ptrace access): it answers, or ends. */                         \
		if ((a).join_fd >= 0) {                                                            \
			for (size_t i = 0; i < ELEMENTSOF(made_in_order); i++) {                   \
				if (!((a).ns_flags & made_in_order[i]))                            \
					continue;                                                  \
				status = (int)sys(SYS_unshare, made_in_order[i], 0, 0, 0, 0);      \
				sys(SYS_sendto, (a).join_fd, (long)&status, sizeof(status),        \
				    MSG_NOSIGNAL, 0);                                              \
			}                                                                          \
			sys(SYS_read, (a).join_fd, (long)&status, 1, 0, 0);                        \
		}                                                                                  \
		sys(SYS_prctl, PR_SET_NAME, (long)"python-sb-init", 0, 0, 0);                      \
		sys(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0);                                       \
		if (sys(SYS_capset, (long)&header, (long)caps, 0, 0, 0) < 0)                       \
			sys(SYS_exit, 1, 0, 0, 0, 0);                                              \
		sys(SYS_close_range, 0, ~0U, 0, 0, 0);                                             \
		/* The init of a PID namespace ignores the signals it has no                       \
		 * handler for anyway; SIGCHLD is waited for. */                                   \
		sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, sizeof(all), 0);               \
		for (;;) {                                                                         \
			while (sys(SYS_wait4, -1, 0, WNOHANG | __WALL, 0, 0) > 0)                  \
				;                                                                  \
			sys(SYS_rt_sigtimedwait, (long)&chld, 0, 0, sizeof(chld), 0);              \
		}                                                                                  \
	} while (0)

static long fork_sys(long n, long a, long b, long c, long d, long e)
{
	long r = syscall(n, a, b, c, d, e);

	return r < 0 ? -errno : r;
}

#ifdef SB_INIT_SHARES_MEMORY

#define SB_INIT_STACK	  (64 * 1024)
#define CAP_SYS_ADMIN_BIT 21 /* linux/capability.h's CAP_SYS_ADMIN */

/* The init's arguments, at the top of its own stack; with exec, its command
 * line written there by the caller before the clone. */
struct init_frame {
	struct sb_init_args a;
	char path[PATH_MAX];
	char numbers[3][16];
	char *argv[6];
	char *envp[1];
};

/* Before anything else, the init becomes python-sb-supervise's init mode,
 * its descriptors kept; a failed exec is the mount namespace's outcome, as
 * the program's process reads it. The namespaces it makes need
 * CAP_SYS_ADMIN, which an execve() by an id other than 0 inside would drop:
 * kept as an ambient capability (the new user namespace's securebits allow
 * it), dropped with every other once they are made. */
static void exec_init(const struct init_frame *f)
{
	struct {
		uint32_t version;
		int pid;
	} header = {.version = 0x20080522};
	uint32_t caps[6]; /* (effective, permitted, inheritable) x 2 */
	long r;
	int status;

	r = sb_raw_syscall(SYS_capget, (long)&header, (long)caps, 0, 0, 0);
	if (r >= 0) {
		caps[2] |= 1u << CAP_SYS_ADMIN_BIT;
		r = sb_raw_syscall(SYS_capset, (long)&header, (long)caps, 0, 0, 0);
	}
	if (r >= 0)
		r = sb_raw_syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE,
				   CAP_SYS_ADMIN_BIT, 0, 0);
	if (r >= 0)
		r = sb_raw_syscall(SYS_fcntl, f->a.alive_fd, F_SETFD, 0, 0, 0);
	if (r >= 0)
		r = sb_raw_syscall(SYS_fcntl, f->a.join_fd, F_SETFD, 0, 0, 0);
	if (r >= 0)
		r = sb_raw_syscall(SYS_execve, (long)f->path, (long)f->argv, (long)f->envp, 0, 0);
	status = (int)r;
	sb_raw_syscall(SYS_sendto, f->a.join_fd, (long)&status, sizeof(status), MSG_NOSIGNAL, 0);
	sb_raw_syscall(SYS_exit, 1, 0, 0, 0, 0);
}

static int init_fn(void *arg)
{
	const struct init_frame *f = arg;
	const struct sb_init_args a = f->a;

	if (a.exec_path)
		exec_init(f);
	INIT_BODY(sb_raw_syscall, a);
	return 0; /* not reached */
}

pid_t sb_pid_init_start(const struct sb_init_args *a)
{
	void *stack = mmap(NULL, SB_INIT_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	struct init_frame *f;
	pid_t pid;

	if (stack == MAP_FAILED)
		return -errno;
	/* Its arguments at the top of its own stack, which the caller does not
	 * touch again; the caller's memory otherwise, which it only reads (the
	 * stack protector's canary). Never unmapped: the caller ends soon after
	 * the init, and the init may outlive a munmap() by a moment. */
	f = (struct init_frame *)((char *)stack + SB_INIT_STACK) - 1;
	*f = (struct init_frame){.a = *a};
	if (a->exec_path) {
		if (strlen(a->exec_path) >= sizeof(f->path) || a->join_fd < 0)
			return -EINVAL;
		strcpy(f->path, a->exec_path);
		f->a.exec_path = f->path;
		snprintf(f->numbers[0], sizeof(f->numbers[0]), "%d", a->alive_fd);
		snprintf(f->numbers[1], sizeof(f->numbers[1]), "%d", a->join_fd);
		snprintf(f->numbers[2], sizeof(f->numbers[2]), "%d", a->ns_flags);
		f->argv[0] = (char *)"python-sb-supervise";
		f->argv[1] = (char *)SB_INIT_PROTOCOL;
		for (size_t i = 0; i < 3; i++)
			f->argv[2 + i] = f->numbers[i];
	}
	pid = clone(init_fn, (void *)((uintptr_t)f & ~(uintptr_t)15), CLONE_VM | SIGCHLD, f);
	return pid < 0 ? -errno : pid;
}

#else

pid_t sb_pid_init_start(const struct sb_init_args *a)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		INIT_BODY(fork_sys, *a);
	return pid;
}

#endif

_Noreturn void sb_pid_init_run(const struct sb_init_args *a)
{
	INIT_BODY(fork_sys, *a);
	for (;;)
		; /* not reached */
}
