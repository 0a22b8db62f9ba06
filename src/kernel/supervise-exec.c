/* SPDX-License-Identifier: MIT */
/* supervise-exec.h. */
#include "supervise-exec.h"

#include <fcntl.h>
#include <linux/rseq.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "raw-syscall.h"
#include "util.h"

/* The sanitisers keep per-thread state that a second task on the same
 * memory would corrupt, and track stacks a jump between them confuses: the
 * instrumented builds fork. Until the exec has released the shared memory,
 * the program's process must not touch what the launcher may still be using,
 * errno in the thread's storage first of all: system calls without the C
 * library (raw-syscall.h). */
#if defined(SB_HAVE_RAW_SYSCALL) && !defined(SB_HAVE_ASAN) && !defined(__SANITIZE_THREAD__)

/* What the program's process needs to resume; on the launcher's stack, which
 * the launcher does not unwind before its exec. */
struct resume {
	sigjmp_buf where;
	int exec_pipe[2];  /* close-on-exec: end of file when the exec is done */
	pid_t supervisor;  /* as the program's process sees it: 0 from a PID namespace below */
	int *tid_address;  /* glibc's copy of the thread id (PR_GET_TID_ADDRESS) */
	void *robust_head; /* glibc's robust mutex list (get_robust_list) */
	size_t robust_len;
};

static _Noreturn void die_now(void)
{
	for (;;)
		sb_raw_syscall(SYS_kill, sb_raw_syscall(SYS_getpid, 0, 0, 0, 0, 0), SIGKILL, 0, 0,
			       0);
}

/* The program's process, first on a stack of its own. The per-thread state
 * glibc keeps for the launcher's thread is this thread's now: what fork()'s
 * child side would redo (the thread id glibc reads for its mutexes, the
 * robust list, restartable sequences; the kernel does not carry the last two
 * over to a CLONE_VM child) is redone here, with the exec done. */
static int program_side(void *arg)
{
	const struct resume *rs = arg;
	long n, tid;
	char byte;

	/* The launcher may die before its exec, or python-sb-supervise at any
	 * time: either way, no program without its supervisor. */
	sb_raw_syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	sb_raw_syscall(SYS_close, rs->exec_pipe[1], 0, 0, 0, 0);
	do
		n = sb_raw_syscall(SYS_read, rs->exec_pipe[0], (long)&byte, 1, 0, 0);
	while (n == -EINTR);
	/* End of file and still the launcher's child: it is the supervisor.
	 * A failed exec kills us instead; a launcher that died re-parented us
	 * (to a subreaper, or to the init of our PID namespace: pid 1 there,
	 * where the launcher's is 0). */
	if (n != 0 || sb_raw_syscall(SYS_getppid, 0, 0, 0, 0, 0) != rs->supervisor)
		die_now();
	sb_raw_syscall(SYS_close, rs->exec_pipe[0], 0, 0, 0, 0);

	tid = sb_raw_syscall(SYS_set_tid_address, (long)rs->tid_address, 0, 0, 0, 0);
	*rs->tid_address = (int)tid;
	if (rs->robust_head)
		sb_raw_syscall(SYS_set_robust_list, (long)rs->robust_head, (long)rs->robust_len, 0,
			       0, 0);
	if (__rseq_size > 0) {
		struct rseq *area =
		    (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);

		/* The registration's length is the original structure's, as glibc's. */
		if (sb_raw_syscall(SYS_rseq, (long)area, 32, 0, RSEQ_SIG, 0) < 0)
			area->cpu_id = (__u32)RSEQ_CPU_ID_REGISTRATION_FAILED;
	}
	siglongjmp(*(sigjmp_buf *)&rs->where, 1);
}

/* Enough for program_side(): raw system calls and siglongjmp. */
static char program_stack[16384] __attribute__((aligned(64)));

/* The launcher's side after the clone: becomes python-sb-supervise, or kills
 * the program's process and says why. Does not return on success. */
static int become_supervisor(const char *exe, const struct sb_supervise_exec_args *a, pid_t child,
			     char **reterr)
{
	char numbers[5][32], relay[2][48];
	char *argv[6 + 2 + 2] = {(char *)"python-sb-supervise", (char *)SB_SUPERVISE_PROTOCOL};
	char *envp[] = {NULL};
	size_t argc = 2;
	int r = 0, status;

	snprintf(numbers[0], sizeof(numbers[0]), "%d", (int)child);
	snprintf(numbers[1], sizeof(numbers[1]), "%d", (int)a->ns_init);
	snprintf(numbers[2], sizeof(numbers[2]), "%llu", (unsigned long long)a->deadline_ns);
	snprintf(numbers[3], sizeof(numbers[3]), "%llu", a->timeout_ms);
	snprintf(numbers[4], sizeof(numbers[4]), "%llu", a->relay ? a->relay->limit : 0ULL);
	for (size_t i = 0; i < 5; i++)
		argv[argc++] = numbers[i];
	if (a->keep_fd >= 0 && fcntl(a->keep_fd, F_SETFD, 0) < 0)
		r = -errno;
	for (size_t i = 0; r >= 0 && a->relay && i < a->relay->n; i++) {
		const struct sb_relay_stream *st = &a->relay->s[i];

		/* Our end of the program's pipe goes with the exec; its end,
		 * close-on-exec, does not. */
		if (fcntl(st->from, F_SETFD, 0) < 0) {
			r = -errno;
			break;
		}
		snprintf(relay[i], sizeof(relay[i]), "%d:%d:%d", st->from, st->to,
			 st->both ? 1 : 0);
		argv[argc++] = relay[i];
	}
	argv[argc] = NULL;
	if (a->affinity)
		(void)sched_setaffinity(0, sizeof(*a->affinity), a->affinity);
	if (r >= 0) {
		execve(exe, argv, envp);
		r = -errno;
	}
	kill(child, SIGKILL);
	while (waitpid(child, &status, __WALL) < 0 && errno == EINTR)
		;
	for (size_t i = 0; a->relay && i < a->relay->n; i++)
		(void)fcntl(a->relay->s[i].from, F_SETFD, FD_CLOEXEC);
	if (a->keep_fd >= 0)
		(void)fcntl(a->keep_fd, F_SETFD, FD_CLOEXEC);
	return sb_error(reterr, r, "cannot start the supervisor (%s): %s", exe, strerror(-r));
}

int sb_supervise_exec(const char *supervisor_exe, const struct sb_supervise_exec_args *a,
		      char **reterr)
{
	struct resume rs = {.exec_pipe = {-1, -1}};
	pid_t child;
	int r;

	if (prctl(PR_GET_TID_ADDRESS, &rs.tid_address, 0, 0, 0) < 0 || !rs.tid_address)
		return -EOPNOTSUPP;
	if (syscall(SYS_get_robust_list, 0, &rs.robust_head, &rs.robust_len) < 0)
		rs.robust_head = NULL;
	/* Short of descriptors: the fork has its own way to fail, or not. */
	if (pipe2(rs.exec_pipe, O_CLOEXEC) < 0)
		return -EOPNOTSUPP;
	rs.supervisor = a->ns_init > 0 ? 0 : getpid();

	/* The program's process resumes here, once the launcher's process is
	 * python-sb-supervise: this frame and those above it are as they were
	 * at the clone, since the launcher returns from none of them before
	 * its exec. */
	if (sigsetjmp(rs.where, 0))
		return 0;
	/* Not CLONE_VFORK: the launcher must go on to its exec while the child
	 * waits, the other way round. No CLONE_THREAD or CLONE_FILES: a
	 * process of its own, with its own descriptors and signal state. */
	child = clone(program_side, program_stack + sizeof(program_stack), CLONE_VM | SIGCHLD, &rs);
	if (child < 0) {
		r = -errno;
		close(rs.exec_pipe[0]);
		close(rs.exec_pipe[1]);
		return sb_error(reterr, r, "supervisor: cannot start the program's process: %s",
				strerror(-r));
	}
	close(rs.exec_pipe[0]);
	r = become_supervisor(supervisor_exe, a, child, reterr);
	close(rs.exec_pipe[1]);
	return r;
}

#else

int sb_supervise_exec(const char *supervisor_exe, const struct sb_supervise_exec_args *a,
		      char **reterr)
{
	(void)supervisor_exe;
	(void)a;
	(void)reterr;
	return -EOPNOTSUPP;
}

#endif
