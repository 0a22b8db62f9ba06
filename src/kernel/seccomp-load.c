/* SPDX-License-Identifier: MIT */
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "seccomp-filter.h"

/* The policy's compiled program, with this process's pid and timers in it
 * (*ret_insns, the caller's to free), no_new_privs set: 0. 1 when there is
 * no compiled program and libseccomp has loaded the filter instead; or
 * -errno with *reterr. */
static int prepare_load(const struct sb_seccomp_policy *policy, const struct sb_seccomp_self *self,
			struct sock_filter **ret_insns, unsigned short *ret_n, char **reterr)
{
	const struct sb_seccomp_program *prog;
	_cleanup_free_ struct sock_filter *insns = NULL;
	int r;

	if (!policy)
		return sb_error(reterr, -EINVAL, "sb_seccomp_apply: no policy");
	prog = &sb_seccomp_programs[sb_seccomp_policy_key(policy)];
	if (prog->n_insns == 0) {
		r = sb_seccomp_apply_dynamic(policy, self, reterr);
		return r < 0 ? r : 1;
	}
	/* The compiled program says "this process" and "timeout='s timers"
	 * with placeholders (neither is known when python-sb is built): a copy
	 * gets ours. */
	insns = malloc((size_t)prog->n_insns * sizeof(*insns));
	if (!insns)
		return sb_error(reterr, -ENOMEM, "seccomp: out of memory");
	memcpy(insns, prog->code, (size_t)prog->n_insns * sizeof(*insns));
	sb_seccomp_patch_self_pid(insns, prog->n_insns, (uint32_t)getpid());
	sb_seccomp_patch_timers(insns, prog->n_insns, self);
	/* Required to load a filter without CAP_SYS_ADMIN, and keeps a setuid
	 * binary from running under a filter it did not expect. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return sb_error(reterr, -errno, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
	*ret_insns = TAKE_PTR(insns);
	*ret_n = prog->n_insns;
	return 0;
}

static int load_error(long r, char **reterr)
{
	/* TSYNC answers with the id of a thread it could not bring along. */
	if (r > 0)
		return sb_error(reterr, -EBUSY,
				"seccomp(SECCOMP_SET_MODE_FILTER): thread %ld runs under another "
				"filter and cannot be brought under this one",
				r);
	return sb_error(reterr, (int)r, "seccomp(SECCOMP_SET_MODE_FILTER): %s", strerror((int)-r));
}

int sb_seccomp_apply(const struct sb_seccomp_policy *policy, const struct sb_seccomp_self *self,
		     char **reterr)
{
	_cleanup_free_ struct sock_filter *insns = NULL;
	struct sock_fprog fprog;
	unsigned short n = 0;
	int r;

	r = prepare_load(policy, self, &insns, &n, reterr);
	if (r != 0)
		return r < 0 ? r : 0;
	fprog = (struct sock_fprog){.len = n, .filter = insns};
	/* TSYNC: every thread, in case a library started one before us; the
	 * call fails rather than leave one unfiltered. */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog) != 0)
		return load_error(-errno, reterr);
	return 0;
}

/* The load on another CPU (seccomp-filter.h): a thread made with clone(2)
 * rather than pthread_create(), so that glibc still takes the process for
 * single-threaded (__libc_single_threaded: malloc and stdio without atomic
 * operations for the rest of the run). It makes one system call and exits;
 * it must touch nothing thread-local (it has no TLS of its own: errno would
 * be the main thread's), hence the system call in assembly. */
#if defined(__x86_64__) && !defined(SB_HAVE_ASAN)
#define SB_SECCOMP_ASYNC 1
#endif

#ifdef SB_SECCOMP_ASYNC
static struct {
	/* The loader's thread id, cleared by the kernel when it exits
	 * (CLONE_CHILD_CLEARTID, with a futex wake-up): the join. */
	_Atomic pid_t tid;
	_Atomic long result; /* seccomp()'s return value */
	bool pending;	     /* started, not yet waited for */
	pid_t owner;	     /* the process that started it */
	int error;	     /* what the wait found: kept for later waits */
	char *message;
	struct sock_fprog fprog;
	struct sock_filter *insns;
	_Alignas(16) char stack[16384];
} loader;

__attribute__((no_sanitize("address", "undefined"), noinline)) static int
load_on_own_thread(void *arg)
{
	long r;

	(void)arg;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "0"((long)SYS_seccomp), "D"((long)SECCOMP_SET_MODE_FILTER),
			   "S"((long)SECCOMP_FILTER_FLAG_TSYNC), "d"(&loader.fprog)
			 : "rcx", "r11", "memory");
	atomic_store_explicit(&loader.result, r, memory_order_release);
	return 0;
}

int sb_seccomp_apply_async(const struct sb_seccomp_policy *policy,
			   const struct sb_seccomp_self *self, char **reterr)
{
	sigset_t all, saved;
	unsigned short n = 0;
	int r, tid;

	if (loader.pending || loader.error)
		return sb_error(reterr, -EALREADY, "seccomp: a filter is already being loaded");
	r = prepare_load(policy, self, &loader.insns, &n, reterr);
	if (r != 0)
		return r < 0 ? r : 0;
	loader.fprog = (struct sock_fprog){.len = n, .filter = loader.insns};
	/* No signal for the loader: it has no stack to spare for a handler,
	 * and the program's signals belong to the main thread. */
	sigfillset(&all);
	r = -pthread_sigmask(SIG_BLOCK, &all, &saved);
	if (r < 0) {
		free(TAKE_PTR(loader.insns));
		return sb_error(reterr, r, "pthread_sigmask: %s", strerror(-r));
	}
	tid = clone(load_on_own_thread, loader.stack + sizeof(loader.stack),
		    CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
			CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID,
		    NULL, &loader.tid, NULL, &loader.tid);
	r = tid < 0 ? -errno : 0;
	(void)pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (r < 0) {
		/* No thread (RLIMIT_NPROC, a container's pids limit): the
		 * filter goes in now, on this one. */
		free(TAKE_PTR(loader.insns));
		return sb_seccomp_apply(policy, self, reterr);
	}
	loader.pending = true;
	loader.owner = getpid();
	return 0;
}

int sb_seccomp_wait(char **reterr)
{
	pid_t tid;
	long r;

	/* A child forked meanwhile has no loader thread: its id would never
	 * be cleared here, and whether the filter came along is not known. */
	if (loader.pending && loader.owner != getpid()) {
		loader.pending = false;
		loader.error = sb_error(&loader.message, -ECHILD,
					"seccomp: the filter was being loaded when this process "
					"was forked");
	}
	if (loader.pending) {
		while ((tid = atomic_load_explicit(&loader.tid, memory_order_acquire)) != 0)
			(void)syscall(SYS_futex, &loader.tid, FUTEX_WAIT, tid, NULL, NULL, 0);
		loader.pending = false;
		free(TAKE_PTR(loader.insns));
		r = atomic_load_explicit(&loader.result, memory_order_acquire);
		if (r != 0)
			loader.error = load_error(r, &loader.message);
	}
	if (!loader.error)
		return 0;
	return sb_error(reterr, loader.error, "%s",
			loader.message ? loader.message : strerror(-loader.error));
}
#else
int sb_seccomp_apply_async(const struct sb_seccomp_policy *policy,
			   const struct sb_seccomp_self *self, char **reterr)
{
	return sb_seccomp_apply(policy, self, reterr);
}

int sb_seccomp_wait(char **reterr)
{
	(void)reterr;
	return 0;
}
#endif
