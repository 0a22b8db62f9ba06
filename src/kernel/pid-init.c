/* SPDX-License-Identifier: MIT */
/* PID 1 of a PID namespace of ours (pid-init.h). */
#include "pid-init.h"

#include <linux/capability.h>
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
		struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3}; \
		struct __user_cap_data_struct caps[2] = {{0}};                                     \
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

#ifdef SB_INIT_SHARES_MEMORY

#define SB_INIT_STACK (64 * 1024)

static int init_fn(void *arg)
{
	const struct sb_init_args a = *(const struct sb_init_args *)arg;

	INIT_BODY(sb_raw_syscall, a);
	return 0; /* not reached */
}

pid_t sb_pid_init_start(const struct sb_init_args *a)
{
	void *stack = mmap(NULL, SB_INIT_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	struct sb_init_args *copy;
	pid_t pid;

	if (stack == MAP_FAILED)
		return -errno;
	/* Its arguments at the top of its own stack, which the caller does not
	 * touch again; the caller's memory otherwise, which it only reads (the
	 * stack protector's canary). Never unmapped: the caller ends soon after
	 * the init, and the init may outlive a munmap() by a moment. */
	copy = (struct sb_init_args *)((char *)stack + SB_INIT_STACK) - 1;
	*copy = *a;
	pid = clone(init_fn, (void *)((uintptr_t)copy & ~(uintptr_t)15), CLONE_VM | SIGCHLD, copy);
	return pid < 0 ? -errno : pid;
}

#else

static long fork_sys(long n, long a, long b, long c, long d, long e)
{
	long r = syscall(n, a, b, c, d, e);

	return r < 0 ? -errno : r;
}

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
