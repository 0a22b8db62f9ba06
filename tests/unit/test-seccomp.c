/* SPDX-License-Identifier: MIT */
/* Each case forks; the child loads the filter, makes one syscall (through
 * syscall(2), so that no libc wrapper stands between it and the filter) and
 * _exit()s with the errno, 0 on success; the parent compares. A child killed
 * by a signal reports 1000 + the signal number. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/personality.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/falloc.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "seccomp-filter.h"
#include "tap.h"
#include "util.h"

#define KILLED(sig)   (1000 + (sig))
#define APPLY_FAILED  200
#define CREATED_CHILD 201 /* a clone/fork that should have failed did not */
#define ERR(r)	      ((r) < 0 ? errno : 0)

typedef int (*case_fn)(const void *arg);

static const struct sb_seccomp_policy p_none = {0};
static const struct sb_seccomp_policy p_all = {true, true, true, true, true, true, true};
static const struct sb_seccomp_policy p_fork = {.allow_fork = true};
static const struct sb_seccomp_policy p_write = {.allow_write = true};
static const struct sb_seccomp_policy p_landlock = {.landlock = true};
static const struct sb_seccomp_policy p_unix = {.allow_unix_socket = true};
static const struct sb_seccomp_policy p_inet = {.allow_inet = true};
static const struct sb_seccomp_policy p_inet_udp = {.allow_inet = true, .allow_udp = true};

/* Runs fn in a child, under policy (none when NULL). */
static int run(const struct sb_seccomp_policy *policy, case_fn fn, const void *arg)
{
	int status;
	pid_t pid;

	(void)fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (policy) {
			char *err = NULL;

			if (sb_seccomp_apply(policy, NULL, &err) < 0) {
				(void)fprintf(stderr, "# sb_seccomp_apply: %s\n", err ? err : "?");
				_exit(APPLY_FAILED);
			}
		}
		/* _exit, not exit: no atexit handlers (LSan) under the filter. */
		_exit(fn(arg));
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFSIGNALED(status))
		return KILLED(WTERMSIG(status));
	return WEXITSTATUS(status);
}

/* ---- generic raw syscall ---- */

struct raw_call {
	long nr;
	long a[6];
};

static int do_raw(const void *arg)
{
	const struct raw_call *c = arg;

	return ERR(syscall(c->nr, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5]));
}

static int raw(const struct sb_seccomp_policy *p, long nr, long a0, long a1, long a2, long a3)
{
	const struct raw_call c = {nr, {a0, a1, a2, a3, -1, -1}};

	return run(p, do_raw, &c);
}

/* ---- the refused table, the allowed table ---- */

/* Arguments that make each call fail harmlessly should the filter let it
 * through: -1 everywhere (bad fd, bad pointer, invalid flags), except for the
 * IPC "get" calls, where key -1 with IPC_CREAT in the flags would create an
 * object that outlives the test: there flags 0 only looks the key up. */
static void harmless_args(const char *name, long a[6])
{
	for (int i = 0; i < 6; i++)
		a[i] = -1;
	if (streq(name, "shmget") || streq(name, "msgget") || streq(name, "semget")) {
		a[1] = 0;
		a[2] = 0;
	}
	/* A mode without the set-id bits, which no grant allows. */
	if (streq(name, "chmod") || streq(name, "fchmod"))
		a[1] = 0;
	if (streq(name, "fchmodat"))
		a[2] = 0;
}

static void test_refused_table(void)
{
	const char *name;
	size_t n = 0;

	for (size_t i = 0; (name = sb_seccomp_refused_syscall(i)); i++, n++) {
		struct raw_call c = {seccomp_syscall_resolve_name(name), {0}};

		if (c.nr < 0) {
			tap_ok(true, "%s # SKIP not a syscall on this architecture", name);
			continue;
		}
		harmless_args(name, c.a);
		TAP_IS_INT(run(&p_all, do_raw, &c), EPERM, name);
	}
	tap_ok(n >= 100, "the refused table has %zu entries", n);
}

/* The calls allowed whatever the profile reach the kernel untouched: with
 * harmless arguments, the same errno with and without the strictest filter.
 * Not called: those that end, block or confuse the caller. */
static void test_base_table(void)
{
	static const char *const skip[] = {
	    "exit",	     "exit_group",	"pause", "rt_sigreturn",
	    "rt_sigsuspend", "restart_syscall", "vfork", NULL};
	const char *name;
	size_t n = 0;

	for (size_t i = 0; (name = sb_seccomp_base_syscall(i)); i++, n++) {
		struct raw_call c = {seccomp_syscall_resolve_name(name), {0}};
		bool skipped = false;
		int want;

		for (const char *const *s = skip; *s; s++)
			skipped = skipped || streq(*s, name);
		if (c.nr < 0 || skipped) {
			tap_ok(true, "%s # SKIP %s", name,
			       skipped ? "not callable here" : "absent");
			continue;
		}
		harmless_args(name, c.a);
		want = run(NULL, do_raw, &c);
		tap_ok(want != EPERM && run(&p_none, do_raw, &c) == want,
		       "%s reaches the kernel under the strictest filter (errno %d)", name, want);
	}
	tap_ok(n >= 150, "%zu calls are allowed whatever the profile", n);
	for (size_t i = 0; (name = sb_seccomp_refused_syscall(i)); i++) {
		bool in_base = false;

		for (size_t k = 0; sb_seccomp_base_syscall(k); k++)
			in_base = in_base || streq(sb_seccomp_base_syscall(k), name);
		if (in_base)
			tap_ok(false, "%s is both refused and allowed", name);
	}
}

/* Calls that need a grant: EPERM without it, the kernel's answer with it. */
static void test_granted_calls(void)
{
	static const struct {
		const char *name;
		const struct sb_seccomp_policy *grant;
	} cases[] = {
	    {"mkdir", &p_write},     {"rename", &p_write},    {"unlink", &p_write},
	    {"unlinkat", &p_write},  {"chmod", &p_write},     {"fchmodat", &p_write},
	    {"fchown", &p_write},    {"utimensat", &p_write}, {"setxattr", &p_write},
	    {"fsetxattr", &p_write}, {"truncate", &p_write},  {"link", &p_write},
	    {"symlink", &p_write},   {"mknod", &p_write},     {"execve", &p_all},
	    {"execveat", &p_all},    {"pidfd_open", &p_fork}, {"pidfd_send_signal", &p_fork},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct raw_call c = {seccomp_syscall_resolve_name(cases[i].name), {0}};
		int want;

		harmless_args(cases[i].name, c.a);
		want = run(NULL, do_raw, &c);
		tap_ok(run(&p_none, do_raw, &c) == EPERM && run(&p_landlock, do_raw, &c) == EPERM,
		       "%s refused without its grant", cases[i].name);
		tap_ok(want != EPERM && run(cases[i].grant, do_raw, &c) == want,
		       "%s reaches the kernel with its grant (errno %d)", cases[i].name, want);
	}
}

/* ---- processes ---- */

static int do_traceme(const void *arg)
{
	(void)arg;
	return ERR(syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0));
}

/* clone(flags) on the current stack, fork-like; a child that appears exits
 * at once and the call counts as CREATED_CHILD. */
static int do_clone(const void *arg)
{
	const unsigned long flags = *(const unsigned long *)arg;
	long r = syscall(SYS_clone, flags, 0, NULL, NULL, 0);

	if (r == 0)
		_exit(0);
	if (r < 0)
		return errno;
	waitpid((pid_t)r, NULL, __WALL);
	return CREATED_CHILD;
}

static int do_fork(const void *arg)
{
	pid_t pid;
	int status;

	(void)arg;
	pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0)
		_exit(7);
	if (waitpid(pid, &status, 0) < 0)
		return errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 7 ? 0 : 99;
}

static void *thread_main(void *arg)
{
	return arg;
}

static int do_thread(const void *arg)
{
	pthread_t t;
	void *ret = NULL;
	int r;

	(void)arg;
	r = pthread_create(&t, NULL, thread_main, (void *)0x5b);
	if (r)
		return r;
	r = pthread_join(t, &ret);
	return r ? r : ret == (void *)0x5b ? 0 : 99;
}

/* A thread that exists before the filter is loaded gets it too (TSYNC). */
static int tsync_pipe[2];

static void *tsync_thread(void *arg)
{
	char c;

	(void)arg;
	if (read(tsync_pipe[0], &c, 1) != 1)
		return (void *)(intptr_t)99;
	return (void *)(intptr_t)ERR(syscall(SYS_unshare, 0));
}

static int do_tsync(const void *arg)
{
	const struct sb_seccomp_policy *policy = arg;
	pthread_t t;
	void *ret = NULL;
	char *err = NULL;

	if (pipe(tsync_pipe) < 0 || pthread_create(&t, NULL, tsync_thread, NULL) != 0)
		return 98;
	if (sb_seccomp_apply(policy, NULL, &err) < 0)
		return APPLY_FAILED;
	if (write(tsync_pipe[1], "x", 1) != 1 || pthread_join(t, &ret) != 0)
		return 97;
	return (int)(intptr_t)ret;
}

static int do_execve(const void *arg)
{
	char *const argv[] = {(char *)"true", NULL};
	char *const envp[] = {NULL};

	(void)arg;
	return ERR(syscall(SYS_execve, "/bin/true", argv, envp));
}

static int do_execveat(const void *arg)
{
	char *const argv[] = {(char *)"true", NULL};
	char *const envp[] = {NULL};

	(void)arg;
	return ERR(syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, envp, 0));
}

static void test_processes(void)
{
	static const unsigned long ns_flags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
						 CLONE_NEWIPC, CLONE_NEWUSER,	CLONE_NEWPID,
						 CLONE_NEWNET};
	unsigned long flags;

	TAP_IS_INT(run(&p_all, do_traceme, NULL), EPERM, "ptrace(PTRACE_TRACEME)");
	TAP_IS_INT(raw(&p_all, SYS_unshare, CLONE_NEWUSER, 0, 0, 0), EPERM,
		   "unshare(CLONE_NEWUSER)");
	TAP_IS_INT(raw(&p_all, SYS_unshare, 0, 0, 0, 0), EPERM, "unshare(0)");
	for (size_t i = 0; i < ELEMENTSOF(ns_flags); i++) {
		flags = ns_flags[i] | SIGCHLD;
		tap_ok(run(&p_all, do_clone, &flags) == EPERM, "clone(%#lx | SIGCHLD) -> EPERM",
		       ns_flags[i]);
	}
	/* The kernel reads the low 32 bits of clone's flags. */
	flags = CLONE_NEWNET | SIGCHLD | (1UL << 40);
	TAP_IS_INT(run(&p_all, do_clone, &flags), EPERM, "clone(CLONE_NEWNET | 1 << 40)");
	TAP_IS_INT(raw(&p_all, SYS_clone3, 0, 0, 0, 0), ENOSYS, "clone3 -> ENOSYS");

	TAP_IS_INT(run(&p_none, do_thread, NULL), 0, "pthread_create under the strictest policy");
	TAP_IS_INT(run(NULL, do_tsync, &p_none), EPERM,
		   "a thread started before the filter is filtered too (TSYNC)");
	TAP_IS_INT(run(&p_all, do_fork, NULL), 0, "fork() with allow_fork");
	TAP_IS_INT(run(&p_none, do_fork, NULL), EPERM, "fork() without allow_fork");
	TAP_IS_INT(raw(&p_none, SYS_fork, 0, 0, 0, 0), EPERM, "SYS_fork without allow_fork");
	TAP_IS_INT(raw(&p_none, SYS_vfork, 0, 0, 0, 0), EPERM, "SYS_vfork without allow_fork");
	flags = SIGCHLD;
	TAP_IS_INT(run(&p_none, do_clone, &flags), EPERM, "clone(SIGCHLD) without allow_fork");
	flags = CLONE_THREAD | SIGCHLD;
	TAP_IS_INT(run(&p_none, do_clone, &flags), EINVAL,
		   "clone(CLONE_THREAD) passes the filter (the kernel wants CLONE_SIGHAND)");

	if (access("/bin/true", X_OK) == 0) {
		TAP_IS_INT(run(&p_none, do_execve, NULL), EPERM, "execve without allow_exec");
		TAP_IS_INT(run(&p_none, do_execveat, NULL), EPERM, "execveat without allow_exec");
		TAP_IS_INT(run(&p_all, do_execve, NULL), 0, "execve(/bin/true) with allow_exec");
	} else {
		tap_ok(true, "execve # SKIP no /bin/true");
	}
}

/* ---- sockets ---- */

static int do_socket(const void *arg)
{
	const long *a = arg; /* domain, type */
	long fd = syscall(SYS_socket, a[0], a[1], 0);

	if (fd < 0)
		return errno;
	close((int)fd);
	return 0;
}

static int sock(const struct sb_seccomp_policy *p, long domain, long type)
{
	const long a[2] = {domain, type};

	return run(p, do_socket, a);
}

/* setsockopt(level, option, int 1) on a TCP socket. */
static int do_setsockopt(const void *arg)
{
	const long *a = arg;
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	long r;

	if (fd < 0)
		return 150;
	r = syscall(SYS_setsockopt, fd, a[0], a[1], &one, sizeof(one));
	return r < 0 ? (errno == EPERM ? EPERM : 0) : 0;
}

static int do_socketpair(const void *arg)
{
	int sv[2];

	(void)arg;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return errno;
	close(sv[0]);
	close(sv[1]);
	return 0;
}

/* Whether the policy should let socket(domain, type) through the filter. */
static bool socket_allowed(const struct sb_seccomp_policy *p, uint64_t domain, uint64_t type)
{
	type &= 0xf;
	if (domain == AF_UNIX)
		return p->allow_unix_socket;
	if (domain == AF_INET || domain == AF_INET6)
		return p->allow_inet &&
		       (type == SOCK_STREAM || (p->allow_udp && type == SOCK_DGRAM));
	return false;
}

/* Sweeps domains 0..63 (and values with high bits that the kernel would
 * truncate to an allowed domain) and, for AF_INET/AF_INET6, types 0..15;
 * returns 0, or 1 + the index of the first disagreement. */
static int do_socket_sweep(const void *arg)
{
	const struct sb_seccomp_policy *p = arg;
	static const uint64_t odd_domains[] = {
	    UINT64_C(1) << 32 | AF_INET,
	    UINT64_C(1) << 32 | AF_UNIX,
	    UINT64_C(1) << 63 | AF_INET6,
	    UINT64_MAX,
	};
	int idx = 0;

	for (uint64_t d = 0; d < 64 + ELEMENTSOF(odd_domains); d++, idx++) {
		const uint64_t domain = d < 64 ? d : odd_domains[d - 64];
		const bool allowed = d < 64 && socket_allowed(p, domain, SOCK_STREAM);
		long fd = syscall(SYS_socket, domain, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int e = ERR(fd);

		if (fd >= 0)
			close((int)fd);
		/* Denied: EPERM. Allowed: anything but EPERM (the kernel can
		 * refuse an odd domain with EAFNOSUPPORT, never with EPERM for
		 * SOCK_STREAM on Unix and IP). */
		if (allowed == (e == EPERM))
			return 1 + idx;
	}
	for (int family = 0; family < 2; family++)
		for (uint64_t t = 0; t < 16; t++, idx++) {
			const uint64_t domain = family ? AF_INET6 : AF_INET;
			const bool allowed = socket_allowed(p, domain, t);
			long fd = syscall(SYS_socket, domain, t | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			int e = ERR(fd);

			if (fd >= 0)
				close((int)fd);
			/* Allowed types must not be refused; SOCK_RAW can be
			 * refused by the kernel itself, but it is never allowed. */
			if (allowed ? e == EPERM : e != EPERM)
				return 1 + idx;
		}
	return 0;
}

static void test_sockets(void)
{
	static const struct {
		const struct sb_seccomp_policy *p;
		const char *name;
	} policies[] = {
	    {&p_none, "none"},	       {&p_unix, "unix"}, {&p_inet, "inet"},
	    {&p_inet_udp, "inet+udp"}, {&p_all, "all"},
	};

	TAP_IS_INT(sock(&p_none, AF_INET, SOCK_STREAM), EPERM,
		   "socket(AF_INET) without allow_inet");
	TAP_IS_INT(sock(&p_inet, AF_INET, SOCK_STREAM), 0, "socket(AF_INET) with allow_inet");
	TAP_IS_INT(sock(&p_inet, AF_INET6, SOCK_STREAM | SOCK_NONBLOCK), 0,
		   "socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK) with allow_inet");
	TAP_IS_INT(sock(&p_inet, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC), EPERM,
		   "socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC) without allow_udp");
	TAP_IS_INT(sock(&p_inet, AF_INET6, SOCK_DGRAM), EPERM,
		   "socket(AF_INET6, SOCK_DGRAM) without allow_udp");
	TAP_IS_INT(sock(&p_inet_udp, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC), 0,
		   "socket(AF_INET, SOCK_DGRAM) with allow_udp");
	TAP_IS_INT(sock(&p_all, AF_INET, SOCK_RAW), EPERM, "socket(AF_INET, SOCK_RAW) always");
	TAP_IS_INT(sock(&p_inet, AF_UNIX, SOCK_STREAM), EPERM,
		   "socket(AF_UNIX) without allow_unix_socket");
	TAP_IS_INT(sock(&p_unix, AF_UNIX, SOCK_STREAM), 0,
		   "socket(AF_UNIX) with allow_unix_socket");
	TAP_IS_INT(run(&p_none, do_socketpair, NULL), 0, "socketpair(AF_UNIX) always");
	TAP_IS_INT(raw(&p_all, SYS_socketpair, AF_INET, SOCK_STREAM, 0, 0), EPERM,
		   "socketpair(AF_INET) refused");
	/* A datagram pair's socket can be connect()ed or sendto() any named
	 * socket: only where AF_UNIX sockets are allowed. Allowed calls fail
	 * with EFAULT (no array), refused ones with EPERM. */
	TAP_IS_INT(raw(&p_none, SYS_socketpair, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, 0),
		   EFAULT, "socketpair(AF_UNIX, SOCK_SEQPACKET) always");
	TAP_IS_INT(raw(&p_none, SYS_socketpair, AF_UNIX, SOCK_DGRAM, 0, 0), EPERM,
		   "socketpair(AF_UNIX, SOCK_DGRAM) without allow_unix_socket");
	TAP_IS_INT(raw(&p_inet, SYS_socketpair, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, 0), EPERM,
		   "socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC) with allow_inet alone");
	TAP_IS_INT(raw(&p_none, SYS_socketpair, AF_UNIX, SOCK_RAW, 0, 0), EPERM,
		   "socketpair(AF_UNIX, SOCK_RAW) refused");
	TAP_IS_INT(raw(&p_unix, SYS_socketpair, AF_UNIX, SOCK_DGRAM, 0, 0), EFAULT,
		   "socketpair(AF_UNIX, SOCK_DGRAM) with allow_unix_socket");
	/* Without a socket of its own the program has nothing to name, connect
	 * or accept (an abstract name bound on a pair's socket squats the
	 * host's): refused; allowed calls on fd -1 fail with EBADF. */
	{
		static const long calls[] = {SYS_bind, SYS_connect, SYS_listen, SYS_accept,
					     SYS_accept4};
		static const char *const names[] = {"bind", "connect", "listen", "accept",
						    "accept4"};

		for (size_t i = 0; i < ELEMENTSOF(calls); i++) {
			tap_ok(raw(&p_none, calls[i], -1, 0, 0, 0) == EPERM,
			       "%s() refused without a socket grant", names[i]);
			tap_ok(raw(&p_inet, calls[i], -1, 0, 0, 0) == EBADF,
			       "%s() allowed with allow_inet", names[i]);
			tap_ok(raw(&p_unix, calls[i], -1, 0, 0, 0) == EBADF,
			       "%s() allowed with allow_unix_socket", names[i]);
		}
	}
	TAP_IS_INT(raw(&p_all, SYS_socket, AF_INET, SOCK_STREAM, IPPROTO_SCTP, 0), EPERM,
		   "socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP) refused");
	TAP_IS_INT(raw(&p_all, SYS_socket, AF_INET6, SOCK_STREAM, 262 /* MPTCP */, 0), EPERM,
		   "socket(AF_INET6, SOCK_STREAM, IPPROTO_MPTCP) refused");
	TAP_IS_INT(raw(&p_all, SYS_socket, AF_INET, SOCK_DGRAM, 136 /* UDPLITE */, 0), EPERM,
		   "socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE) refused");
	TAP_IS_INT(sock(&p_inet, AF_INET, SOCK_STREAM), 0, "socket(AF_INET, SOCK_STREAM, 0)");
	tap_ok(raw(&p_inet, SYS_socket, AF_INET, SOCK_STREAM, IPPROTO_TCP, 0) == 0,
	       "socket(AF_INET, SOCK_STREAM, IPPROTO_TCP)");
	TAP_IS_INT(run(&p_inet, do_setsockopt, (const long[]){SOL_SOCKET, SO_REUSEADDR}), 0,
		   "setsockopt(SO_REUSEADDR)");
	TAP_IS_INT(run(&p_inet, do_setsockopt, (const long[]){IPPROTO_TCP, TCP_NODELAY}), 0,
		   "setsockopt(TCP_NODELAY)");
	TAP_IS_INT(run(&p_inet, do_setsockopt, (const long[]){SOL_SOCKET, SO_ATTACH_FILTER}), EPERM,
		   "setsockopt(SO_ATTACH_FILTER) refused");
	TAP_IS_INT(run(&p_inet, do_setsockopt, (const long[]){SOL_SOCKET, SO_ATTACH_BPF}), EPERM,
		   "setsockopt(SO_ATTACH_BPF) refused");
	TAP_IS_INT(
	    run(&p_inet, do_setsockopt, (const long[]){SOL_SOCKET | 1L << 32, SO_ATTACH_FILTER}),
	    EPERM, "setsockopt(SOL_SOCKET | 1 << 32, SO_ATTACH_FILTER) refused");
	TAP_IS_INT(run(&p_inet, do_setsockopt, (const long[]){SOL_PACKET, 1}), EPERM,
		   "setsockopt(SOL_PACKET) refused");
	TAP_IS_INT(sock(&p_all, AF_NETLINK, SOCK_RAW), EPERM, "socket(AF_NETLINK) even with all");
	TAP_IS_INT(sock(&p_all, AF_PACKET, SOCK_RAW), EPERM, "socket(AF_PACKET) even with all");
	TAP_IS_INT(sock(&p_all, AF_VSOCK, SOCK_STREAM), EPERM, "socket(AF_VSOCK) even with all");
	TAP_IS_INT(sock(&p_all, AF_ALG, SOCK_SEQPACKET), EPERM, "socket(AF_ALG) even with all");
	TAP_IS_INT(sock(&p_unix, (long)(1UL << 32 | AF_INET), SOCK_STREAM), EPERM,
		   "socket(1 << 32 | AF_INET) without allow_inet (truncated by the kernel)");
	for (size_t i = 0; i < ELEMENTSOF(policies); i++)
		tap_ok(run(policies[i].p, do_socket_sweep, policies[i].p) == 0,
		       "socket() sweep of domains and IP types, policy %s", policies[i].name);
}

/* ---- ioctl ---- */

static int do_ioctl(const void *arg)
{
	const unsigned long cmd = *(const unsigned long *)arg;
	char c = ' ';

	/* fd -1: the kernel answers EBADF, only the filter answers EPERM. */
	return ERR(syscall(SYS_ioctl, -1, cmd, &c));
}

static int do_pty_ioctl(const void *arg)
{
	const unsigned long cmd = *(const unsigned long *)arg;
	char buf[256] = {0}; /* room for a struct termios */
	int fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return 150;
	return ERR(syscall(SYS_ioctl, fd, cmd, buf));
}

static int do_nothing(const void *arg)
{
	(void)arg;
	return 0;
}

static void test_ioctl(void)
{
	unsigned long cmd;

	cmd = TIOCSTI;
	TAP_IS_INT(run(NULL, do_ioctl, &cmd), EBADF, "baseline: ioctl(-1, TIOCSTI) unfiltered");
	TAP_IS_INT(run(&p_all, do_ioctl, &cmd), EPERM, "ioctl(TIOCSTI)");
	cmd = TIOCSTI | 1UL << 32;
	TAP_IS_INT(run(&p_all, do_ioctl, &cmd), EPERM, "ioctl(TIOCSTI | 1 << 32): 32-bit compare");
	cmd = TIOCSTI | 0xdeadbeefUL << 32;
	TAP_IS_INT(run(&p_all, do_ioctl, &cmd), EPERM, "ioctl(TIOCSTI | 0xdeadbeef << 32)");
	cmd = TIOCLINUX;
	TAP_IS_INT(run(&p_all, do_ioctl, &cmd), EPERM, "ioctl(TIOCLINUX)");
	cmd = TIOCLINUX | 1UL << 63;
	TAP_IS_INT(run(&p_all, do_ioctl, &cmd), EPERM, "ioctl(TIOCLINUX | 1 << 63)");
	cmd = FIONREAD;
	TAP_IS_INT(run(&p_none, do_ioctl, &cmd), EBADF, "ioctl(-1, FIONREAD) reaches the kernel");
	cmd = TIOCGWINSZ | 1UL << 32;
	TAP_IS_INT(run(&p_none, do_ioctl, &cmd), EBADF,
		   "ioctl(-1, TIOCGWINSZ | 1 << 32) reaches the kernel");
	{
		static const struct {
			unsigned long cmd;
			const char *name;
		} refused[] = {
		    {TIOCSWINSZ, "TIOCSWINSZ"}, {TIOCSCTTY, "TIOCSCTTY"}, {FIOASYNC, "FIOASYNC"},
		    {TIOCSPGRP, "TIOCSPGRP"},	{0x8912, "SIOCGIFCONF"},  {0x5422, "TIOCNOTTY"},
		};

		for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
			cmd = refused[i].cmd;
			tap_ok(run(&p_all, do_ioctl, &cmd) == EPERM, "ioctl(%s) refused",
			       refused[i].name);
		}
	}

	/* Opening /dev/ptmx asks for O_RDWR: the landlock policy leaves that
	 * to Landlock. */
	cmd = TCGETS;
	if (run(NULL, do_pty_ioctl, &cmd) == 0) {
		TAP_IS_INT(run(&p_landlock, do_pty_ioctl, &cmd), 0, "ioctl(pty, TCGETS) allowed");
		cmd = TIOCSTI;
		TAP_IS_INT(run(&p_landlock, do_pty_ioctl, &cmd), EPERM, "ioctl(pty, TIOCSTI)");
	} else {
		tap_ok(true, "ioctl(pty, TCGETS) # SKIP no pty (posix_openpt)");
	}
}

/* ---- personality, IPC ---- */

static int do_personality(const void *arg)
{
	const uint64_t v = *(const uint64_t *)arg;

	return ERR(syscall(SYS_personality, v));
}

static int do_shmget(const void *arg)
{
	(void)arg;
	/* Key -1 without IPC_CREAT: unfiltered, only a lookup (ENOENT). */
	return ERR(shmget((key_t)-1, 0, 0));
}

static void test_personality_ipc(void)
{
	static const struct {
		uint64_t value;
		int want;
	} cases[] = {
	    {0xffffffff, 0},
	    {PER_LINUX, 0},
	    {UINT64_C(0x1ffffffff), 0},	  /* the kernel sees 0xffffffff */
	    {UINT64_C(0xabc00000000), 0}, /* the kernel sees PER_LINUX */
	    {ADDR_NO_RANDOMIZE, EPERM},
	    {READ_IMPLIES_EXEC, EPERM},
	    {PER_LINUX32, EPERM},
	    {PER_BSD, EPERM},
	    {1, EPERM},
	    {0x80000000, EPERM},
	    {0x7fffffff, EPERM},
	    {0xfffffffe, EPERM},
	    {0xaaaaaaaa, EPERM},
	    {UINT64_C(0x100000000) | ADDR_NO_RANDOMIZE, EPERM},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		tap_ok(run(&p_all, do_personality, &cases[i].value) == cases[i].want,
		       "personality(%#llx) -> %d", (unsigned long long)cases[i].value,
		       cases[i].want);
	TAP_IS_INT(run(NULL, do_shmget, NULL), ENOENT, "baseline: shmget(-1) unfiltered");
	TAP_IS_INT(run(&p_all, do_shmget, NULL), EPERM, "shmget");
}

/* ---- "this process" ---- */

struct pid_call {
	long nr;
	int which; /* 0: pid, 1: parent, 2: -1, 3: 0, 4: pid | 1 << 32, 5: parent | 1 << 32 */
	long a1, a2, a3;
	bool pid_second; /* the pid is the second argument (get/setpriority) */
};

static long target(int which)
{
	switch (which) {
	case 0:
		return getpid();
	case 1:
		return getppid();
	case 2:
		return -1;
	case 3:
		return 0;
	case 4:
		return (long)((1UL << 32) | (unsigned long)getpid());
	default:
		return (long)((1UL << 32) | (unsigned long)getppid());
	}
}

static int do_pid_call(const void *arg)
{
	const struct pid_call *c = arg;
	long t = target(c->which);
	cpu_set_t set;
	struct rlimit rl;

	if (c->nr == SYS_sched_getaffinity || c->nr == SYS_sched_setaffinity) {
		if (sched_getaffinity(0, sizeof(set), &set) < 0)
			return 150;
		return ERR(syscall(c->nr, t, sizeof(set), &set));
	}
	if (c->nr == SYS_prlimit64) {
		if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
			return 150;
		/* Setting the limit it has: a no-op, but a "new limit". */
		return ERR(syscall(c->nr, t, RLIMIT_NOFILE, c->a1 ? &rl : NULL, &rl));
	}
	if (c->pid_second)
		return ERR(syscall(c->nr, c->a1, t, c->a2));
	return ERR(syscall(c->nr, t, c->a1, c->a2, c->a3));
}

static void *affinity_thread(void *arg)
{
	pthread_attr_t attr;
	int r;

	(void)arg;
	r = pthread_getattr_np(pthread_self(), &attr);
	if (r == 0)
		pthread_attr_destroy(&attr);
	return (void *)(intptr_t)r;
}

static int do_thread_affinity(const void *arg)
{
	pthread_t t;
	void *ret = NULL;

	(void)arg;
	if (pthread_create(&t, NULL, affinity_thread, NULL) != 0 || pthread_join(t, &ret) != 0)
		return 99;
	return (int)(intptr_t)ret;
}

static int pid_call(const struct sb_seccomp_policy *p, long nr, int which, long a1, long a2,
		    long a3, bool second)
{
	const struct pid_call c = {nr, which, a1, a2, a3, second};

	return run(p, do_pid_call, &c);
}

static void test_self_only(void)
{
	static const char *const who[] = {"itself", "its parent",	"-1",
					  "0",	    "itself | 1 << 32", "its parent | 1 << 32"};
	static const struct {
		long nr;
		const char *name;
		int want[6]; /* per target, without the process grants */
		int want_fork[6];
		bool second;
		long a1, a2;
	} cases[] = {
	    /* kill(pid, 0) only probes. */
	    {SYS_kill,
	     "kill(0)",
	     {0, EPERM, EPERM, EPERM, 0, EPERM},
	     {0, 0, EPERM, 0, 0, 0},
	     false,
	     0,
	     0},
	    /* The parent runs as the same uid: setting its affinity to what
	     * it has would succeed without the filter. */
	    {SYS_sched_setaffinity,
	     "sched_setaffinity",
	     {0, EPERM, EPERM, 0, 0, EPERM},
	     {0, EPERM, EPERM, 0, 0, EPERM},
	     false,
	     0,
	     0},
	    {SYS_prlimit64,
	     "prlimit64(new)",
	     {0, EPERM, EPERM, 0, 0, EPERM},
	     {0, EPERM, EPERM, 0, 0, EPERM},
	     false,
	     1,
	     0},
	    /* Reading: what /proc shows; ESRCH for -1 comes from the kernel. */
	    {SYS_sched_getaffinity,
	     "sched_getaffinity",
	     {0, 0, ESRCH, 0, 0, 0},
	     {0, 0, ESRCH, 0, 0, 0},
	     false,
	     0,
	     0},
	    /* Reading another process's limits, process group, session or
	     * nice value: with the process grants only (its children). */
	    {SYS_prlimit64,
	     "prlimit64(read)",
	     {0, EPERM, EPERM, 0, 0, EPERM},
	     {0, 0, ESRCH, 0, 0, 0},
	     false,
	     0,
	     0},
	    {SYS_getpgid,
	     "getpgid",
	     {0, EPERM, EPERM, 0, 0, EPERM},
	     {0, 0, ESRCH, 0, 0, 0},
	     false,
	     0,
	     0},
	    {SYS_getsid,
	     "getsid",
	     {0, EPERM, EPERM, 0, 0, EPERM},
	     {0, 0, ESRCH, 0, 0, 0},
	     false,
	     0,
	     0},
	    {SYS_getpriority,
	     "getpriority(PRIO_PROCESS)",
	     {0, EPERM, EPERM, 0, 0, EPERM},
	     {0, 0, ESRCH, 0, 0, 0},
	     true,
	     PRIO_PROCESS,
	     0},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		for (int w = 0; w < 6; w++) {
			tap_ok(pid_call(&p_none, cases[i].nr, w, cases[i].a1, cases[i].a2, 0,
					cases[i].second) == cases[i].want[w],
			       "%s of %s -> %d", cases[i].name, who[w], cases[i].want[w]);
			tap_ok(pid_call(&p_fork, cases[i].nr, w, cases[i].a1, cases[i].a2, 0,
					cases[i].second) == cases[i].want_fork[w],
			       "%s of %s with the process grants -> %d", cases[i].name, who[w],
			       cases[i].want_fork[w]);
		}
	TAP_IS_INT(pid_call(&p_none, SYS_getpriority, 3, PRIO_USER, 0, 0, true), EPERM,
		   "getpriority(PRIO_USER, 0) refused without the process grants");
	TAP_IS_INT(pid_call(&p_all, SYS_setpriority, 3, PRIO_PGRP, 0, 0, true), EPERM,
		   "setpriority(PRIO_PGRP, 0) refused");
	TAP_IS_INT(pid_call(&p_all, SYS_setpriority, 3, PRIO_USER, 0, 0, true), EPERM,
		   "setpriority(PRIO_USER, 0) refused");
	TAP_IS_INT(pid_call(&p_all, SYS_setpriority, 1, PRIO_PROCESS, 0, 0, true), EPERM,
		   "setpriority(PRIO_PROCESS, parent) refused");
	tap_ok(pid_call(&p_all, SYS_setpriority, 3, PRIO_PROCESS, 0, 0, true) != EPERM,
	       "setpriority(PRIO_PROCESS, 0) allowed");
	TAP_IS_INT(run(&p_none, do_thread_affinity, NULL), 0,
		   "a thread's affinity can be read (pthread_getattr_np)");
	TAP_IS_INT(pid_call(&p_none, SYS_tgkill, 1, 1, 0, 0, false), EPERM,
		   "tgkill(parent) refused");
	TAP_IS_INT(pid_call(&p_none, SYS_sched_setscheduler, 1, SCHED_OTHER, 0, 0, false), EPERM,
		   "sched_setscheduler(parent) refused");
	TAP_IS_INT(raw(&p_none, SYS_kill, -1, 0, 0, 0), EPERM, "kill(-1) refused");
	TAP_IS_INT(raw(&p_all, SYS_kill, -1, 0, 0, 0), EPERM, "kill(-1) refused with every grant");
	TAP_IS_INT(raw(&p_all, SYS_kill, (long)(0xffffffffUL | 7UL << 32), 0, 0, 0), EPERM,
		   "kill(-1 in the low 32 bits) refused");
	TAP_IS_INT(raw(&p_none, SYS_tkill, getpid(), 0, 0, 0), EPERM, "tkill refused");
}

/* ---- open ---- */

static int do_openat(const void *arg)
{
	const long flags = *(const long *)arg;
	long fd = syscall(SYS_openat, AT_FDCWD, "/dev/null", flags, 0600);

	if (fd < 0)
		return errno;
	close((int)fd);
	return 0;
}

static int openat_with(const struct sb_seccomp_policy *p, long flags)
{
	return run(p, do_openat, &flags);
}

static void test_open(void)
{
	static const struct {
		long flags;
		const char *name;
	} writes[] = {
	    {O_WRONLY, "O_WRONLY"},
	    {O_RDWR, "O_RDWR"},
	    {O_RDONLY | O_TRUNC, "O_RDONLY | O_TRUNC"},
	    {O_RDONLY | O_CREAT, "O_RDONLY | O_CREAT"},
	    {O_WRONLY | O_CREAT | O_TRUNC, "O_WRONLY | O_CREAT | O_TRUNC (open(..., 'w'))"},
	    {(long)(1UL << 40 | O_WRONLY), "O_WRONLY | 1 << 40"},
	    {O_TMPFILE | O_WRONLY, "O_TMPFILE | O_WRONLY"},
	};
	struct raw_call o2 = {SYS_openat2, {AT_FDCWD, (long)"/dev/null", 0, 0, -1, -1}};

	TAP_IS_INT(openat_with(&p_none, O_RDONLY | O_CLOEXEC), 0, "openat(O_RDONLY) allowed");
	TAP_IS_INT(openat_with(&p_none, O_RDONLY | O_APPEND | O_NONBLOCK), 0,
		   "openat(O_RDONLY | O_APPEND) allowed");
	TAP_IS_INT(openat_with(&p_none, O_RDONLY | O_PATH), 0, "openat(O_PATH) allowed");
	tap_ok(openat_with(&p_none, O_RDONLY | O_DIRECTORY) == ENOTDIR,
	       "openat(O_DIRECTORY) reaches the kernel");
	TAP_IS_INT(openat_with(&p_none, (long)(1UL << 33 | O_RDONLY)), 0,
		   "openat(O_RDONLY | 1 << 33) allowed (the kernel reads an int)");
	for (size_t i = 0; i < ELEMENTSOF(writes); i++) {
		tap_ok(openat_with(&p_none, writes[i].flags) == EPERM,
		       "openat(%s) refused without Landlock or expose-rw", writes[i].name);
		/* O_TMPFILE on /dev/null: ENOTDIR, from the kernel. */
		tap_ok(openat_with(&p_landlock, writes[i].flags) ==
			   openat_with(NULL, writes[i].flags),
		       "openat(%s) left to Landlock", writes[i].name);
		tap_ok(openat_with(&p_write, writes[i].flags) == openat_with(NULL, writes[i].flags),
		       "openat(%s) allowed with expose-rw", writes[i].name);
	}
	TAP_IS_INT(run(&p_none, do_raw, &o2), ENOSYS, "openat2 without Landlock: ENOSYS");
	tap_ok(run(&p_landlock, do_raw, &o2) != EPERM && run(&p_landlock, do_raw, &o2) != ENOSYS,
	       "openat2 with Landlock reaches the kernel");
	TAP_IS_INT(raw(&p_none, SYS_creat, -1, 0, 0, 0), EPERM, "creat refused");
	TAP_IS_INT(raw(&p_landlock, SYS_creat, -1, 0, 0, 0), EFAULT, "creat left to Landlock");
}

/* ---- fcntl, prctl ---- */

static int do_fcntl(const void *arg)
{
	const long *a = arg; /* cmd, argument */

	return ERR(syscall(SYS_fcntl, -1, a[0], a[1]));
}

static void test_fcntl_prctl(void)
{
	static const struct {
		long cmd;
		const char *name;
		int want;
	} fcntls[] = {
	    {F_GETFD, "F_GETFD", EBADF},
	    {F_SETFL, "F_SETFL", EBADF},
	    {F_DUPFD_CLOEXEC, "F_DUPFD_CLOEXEC", EBADF},
	    {F_SETLK, "F_SETLK", EBADF},
	    {F_SETOWN, "F_SETOWN", EPERM},
	    {F_SETOWN_EX, "F_SETOWN_EX", EPERM},
	    {F_SETSIG, "F_SETSIG", EPERM},
	    {F_SETLEASE, "F_SETLEASE", EPERM},
	    {F_NOTIFY, "F_NOTIFY", EPERM},
	    {(long)(1UL << 32 | F_SETOWN), "F_SETOWN | 1 << 32", EPERM},
	    {(long)(1UL << 32 | F_GETFD), "F_GETFD | 1 << 32", EBADF},
	};
	static const struct {
		long option;
		const char *name;
		int want;
	} prctls[] = {
	    {PR_SET_MM, "PR_SET_MM", EPERM},
	    {PR_SET_DUMPABLE, "PR_SET_DUMPABLE", EPERM},
	    {PR_SET_PTRACER, "PR_SET_PTRACER", EPERM},
	    {PR_SET_SECCOMP, "PR_SET_SECCOMP", EPERM},
	    {PR_CAP_AMBIENT, "PR_CAP_AMBIENT", EPERM},
	    {PR_SET_SECUREBITS, "PR_SET_SECUREBITS", EPERM},
	    {PR_SET_PDEATHSIG, "PR_SET_PDEATHSIG", EPERM},
	    {(long)(1UL << 32 | PR_SET_MM), "PR_SET_MM | 1 << 32", EPERM},
	    {PR_GET_DUMPABLE, "PR_GET_DUMPABLE", 0},
	    {PR_GET_NO_NEW_PRIVS, "PR_GET_NO_NEW_PRIVS", 0},
	    {PR_GET_PDEATHSIG, "PR_GET_PDEATHSIG", 0},
	};

	for (size_t i = 0; i < ELEMENTSOF(fcntls); i++) {
		const long a[2] = {fcntls[i].cmd, 0};

		tap_ok(run(&p_all, do_fcntl, a) == fcntls[i].want, "fcntl(-1, %s) -> %d",
		       fcntls[i].name, fcntls[i].want);
	}
	for (size_t i = 0; i < ELEMENTSOF(prctls); i++) {
		int got = raw(&p_all, SYS_prctl, prctls[i].option, 0, 0, 0);

		tap_ok(prctls[i].want ? got == prctls[i].want : got != EPERM,
		       "prctl(%s) -> %d (%d)", prctls[i].name, prctls[i].want, got);
	}
}

/* ---- foreign ABIs, unknown syscalls ---- */

#if defined(__x86_64__)
static int do_int80_getpid(const void *arg)
{
	long ret = 20; /* __NR_getpid on i386 */

	(void)arg;
	__asm__ volatile("int $0x80" : "+a"(ret) : : "r8", "r9", "r10", "r11", "memory");
	return ret == getpid() ? 0 : 99;
}

static int do_x32_getpid(const void *arg)
{
	(void)arg;
	return ERR(syscall(0x40000000L | SYS_getpid));
}
#endif

static void test_abis(void)
{
#if defined(__x86_64__)
	int base = run(NULL, do_int80_getpid, NULL);

	if (base == 0)
		TAP_IS_INT(run(&p_all, do_int80_getpid, NULL), KILLED(SIGSYS),
			   "i386 int $0x80 getpid: process killed");
	else
		tap_ok(true, "int $0x80 # SKIP no IA32 emulation (unfiltered: %d)", base);
	tap_diag("x32 getpid unfiltered: %d", run(NULL, do_x32_getpid, NULL));
	TAP_IS_INT(run(&p_all, do_x32_getpid, NULL), KILLED(SIGSYS),
		   "x32 getpid (nr | 0x40000000): process killed");
#else
	tap_ok(true, "foreign ABIs # SKIP not x86_64");
#endif
}

static void test_unknown_syscalls(void)
{
	int last = -1;

	for (int nr = 0; nr < 1024; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

		if (name)
			last = nr;
		free(name);
	}
	tap_diag("highest syscall libseccomp knows: %d; unfiltered, %d gives errno %d", last,
		 last + 1, raw(NULL, last + 1, -1, -1, -1, -1));
	TAP_IS_INT(raw(&p_all, last + 1, -1, -1, -1, -1), ENOSYS, "first unknown syscall: ENOSYS");
	TAP_IS_INT(raw(&p_all, 511, -1, -1, -1, -1), ENOSYS, "syscall 511: ENOSYS");
	TAP_IS_INT(raw(&p_none, 400, -1, -1, -1, -1), EPERM,
		   "syscall 400 (a gap no kernel assigns): EPERM");
	TAP_IS_INT(raw(&p_none, 600, -1, -1, -1, -1), EPERM, "syscall 600 (past the bound): EPERM");
	TAP_IS_INT(raw(&p_all, last, -1, -1, -1, -1), EPERM,
		   "the last syscall libseccomp names (not on the list): EPERM");
	TAP_IS_INT(raw(&p_none, SYS_getppid, 0, 0, 0, 0), 0, "getppid works");
}

/* ---- timeout='s timers (watchdog.h) ---- */

struct timers_case {
	bool dynamic; /* libseccomp builds the filter now, with the ids */
};

static int timer_create_raw(int *id)
{
	struct sigevent sev = {.sigev_notify = SIGEV_NONE};

	return (int)syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, id);
}

/* In the child: two protected timers, one of the program's own; 0 when
 * changing and deleting the protected ones fails with EINVAL (also with high
 * bits in the id) and the own one works. */
static int timers_case(const void *arg)
{
	const struct timers_case *c = arg;
	struct sb_seccomp_self self = {.n_timers = 2};
	const struct itimerspec later = {.it_value = {.tv_sec = 3600}};
	char *err = NULL;
	int own, r;

	if (timer_create_raw(&self.timers[0]) < 0 || timer_create_raw(&self.timers[1]) < 0 ||
	    timer_create_raw(&own) < 0)
		return 10;
	r = c->dynamic ? sb_seccomp_apply_dynamic(&p_none, &self, &err)
		       : sb_seccomp_apply(&p_none, &self, &err);
	if (r < 0)
		return APPLY_FAILED;
	for (int i = 0; i < 2; i++) {
		long hi = (long)(1UL << 32 | (unsigned)self.timers[i]);

		if (syscall(SYS_timer_settime, self.timers[i], 0, &later, NULL) == 0 ||
		    errno != EINVAL)
			return 20 + i;
		if (syscall(SYS_timer_delete, self.timers[i]) == 0 || errno != EINVAL)
			return 30 + i;
		if (syscall(SYS_timer_delete, hi) == 0)
			return 40 + i;
	}
	if (syscall(SYS_timer_settime, own, 0, &later, NULL) != 0)
		return 50;
	if (syscall(SYS_timer_delete, own) != 0)
		return 51;
	return 0;
}

static void test_timers(void)
{
	static const struct timers_case compiled = {.dynamic = false}, dynamic = {.dynamic = true};

	TAP_IS_INT(run(NULL, timers_case, &compiled), 0,
		   "compiled program: the protected timers cannot be changed or deleted, the "
		   "program's own can");
	TAP_IS_INT(run(NULL, timers_case, &dynamic), 0,
		   "program built now: the protected timers cannot be changed or deleted, the "
		   "program's own can");
}

/* ---- a load the kernel refuses ---- */

/* A filter of the caller's that refuses seccomp() itself (as a container's
 * may): the load fails with the errno and says which call; nothing is in
 * force. */
static int refused_case(const void *arg _unused_)
{
	struct sock_filter refuse_seccomp[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_seccomp, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = {.len = ELEMENTSOF(refuse_seccomp), .filter = refuse_seccomp};
	_cleanup_free_ char *err = NULL;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) < 0)
		return 10;
	if (sb_seccomp_apply(&p_none, NULL, &err) != -EPERM || !err ||
	    !strstr(err, "seccomp(SECCOMP_SET_MODE_FILTER): Operation not permitted"))
		return 20;
	/* Not in force: a call only the filter would refuse goes through. */
	if (syscall(SYS_personality, 0xffffffffL) < 0)
		return 30;
	return 0;
}

static void test_refused(void)
{
	TAP_IS_INT(run(NULL, refused_case, NULL), 0,
		   "a load the kernel refuses: -EPERM, the error names the call, nothing in force");
}

/* ---- API ---- */

static void test_api(void)
{
	struct sb_buf b = {0};
	char *err = NULL;
	int r;

	r = sb_seccomp_apply(NULL, NULL, &err);
	TAP_IS_INT(r, -EINVAL, "sb_seccomp_apply(NULL)");
	tap_ok(err && strstr(err, "policy"), "error message: %s", err ? err : "(null)");
	free(err);

	r = sb_seccomp_describe(&p_none, &b);
	TAP_IS_INT(r, 0, "describe(none)");
	tap_ok(b.data && strstr(b.data, "ptrace, process_vm_readv"), "describe lists ptrace");
	tap_ok(b.data && strstr(b.data, "AF_INET/AF_INET6 refused (no net= rule)"),
	       "describe: no inet");
	tap_ok(b.data && strstr(b.data, "seccomp refuses (needs python-api=ALLOW:process-exec), "
					"running programs: execve, execveat"),
	       "describe: no exec");
	tap_ok(b.data && strstr(b.data, "seccomp allows, its own memory: brk, mmap"),
	       "describe: the memory group");
	tap_ok(b.data && strstr(b.data, "memfd_create"), "describe names memfd_create");
	tap_ok(b.data && !strstr(b.data, "vm86"), "describe skips syscalls absent here");
	tap_ok(b.data && b.len > 0 && b.data[b.len - 1] == '\n', "describe ends with a newline");
	sb_buf_reset(&b);

	r = sb_seccomp_describe(&p_inet, &b);
	TAP_IS_INT(r, 0, "describe(inet)");
	tap_ok(b.data && strstr(b.data, "SOCK_STREAM (TCP) only"), "describe: tcp only");
	sb_buf_reset(&b);

	r = sb_seccomp_describe(&p_all, &b);
	tap_ok(r == 0 && b.data && !strstr(b.data, "seccomp refuses (needs"),
	       "describe(all) has no refusal that a grant would lift");
	if (b.data)
		(void)fputs(b.data, stdout);
	sb_buf_reset(&b);

	TAP_IS_INT(run(&p_none, do_nothing, NULL), 0, "the strictest filter loads");
	TAP_IS_INT(raw(NULL, SYS_unshare, 0, 0, 0, 0), 0, "baseline: unshare(0) unfiltered");
}

/* ---- chmod ---- */

/* The set-user-ID and set-group-ID bits, whatever the grants: a set-id
 * program outlives the sandbox. Any other mode with an expose-rw rule. */
static void test_chmod(void)
{
	static const struct {
		long mode;
		const char *name;
		int want;
	} cases[] = {
	    {0755, "0755", 0},	     {01777, "01777", 0},
	    {04755, "04755", EPERM}, {02755, "02755", EPERM},
	    {06755, "06755", EPERM}, {(long)(1UL << 32 | 04755), "04755 | 1 << 32", EPERM},
	};
	char path[] = "/tmp/test-seccomp-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0) {
		tap_ok(false, "mkstemp: %s", strerror(errno));
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		int by_path = raw(&p_all, SYS_chmod, (long)path, cases[i].mode, 0, 0);
		int by_fd = raw(&p_write, SYS_fchmod, fd, cases[i].mode, 0, 0);
		int at = raw(&p_write, SYS_fchmodat, AT_FDCWD, (long)path, cases[i].mode, 0);

		tap_ok(by_path == cases[i].want && by_fd == cases[i].want && at == cases[i].want,
		       "chmod, fchmod, fchmodat(%s) -> %d (got %d, %d, %d)", cases[i].name,
		       cases[i].want, by_path, by_fd, at);
	}
	TAP_IS_INT(raw(&p_landlock, SYS_fchmod, fd, 0644, 0, 0), EPERM,
		   "fchmod refused without an expose-rw rule");
	close(fd);
	unlink(path);
}

/* ---- fallocate ---- */

/* Blocks past the end of a file (FALLOC_FL_KEEP_SIZE) are disk no size limit
 * sees: refused; extending the file (mode 0) and punching holes stay. The
 * mode is an int: the kernel ignores the upper half. */
static void test_fallocate(void)
{
	static const struct {
		long mode;
		const char *name;
		int want;
	} cases[] = {
	    {0, "0 (posix_fallocate)", 0},
	    {FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, "PUNCH_HOLE | KEEP_SIZE", 0},
	    {(long)(1UL << 32), "0 | 1 << 32", 0},
	    {FALLOC_FL_KEEP_SIZE, "KEEP_SIZE", EPERM},
	    {FALLOC_FL_KEEP_SIZE | FALLOC_FL_ZERO_RANGE, "ZERO_RANGE | KEEP_SIZE", EPERM},
	    {(long)(1UL << 32 | FALLOC_FL_KEEP_SIZE), "KEEP_SIZE | 1 << 32", EPERM},
	    {FALLOC_FL_INSERT_RANGE, "INSERT_RANGE", EPERM},
	};
	char path[] = "/tmp/test-seccomp-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0) {
		tap_ok(false, "mkstemp: %s", strerror(errno));
		return;
	}
	unlink(path);
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		int none = raw(&p_none, SYS_fallocate, fd, cases[i].mode, 0, 4096);
		int all = raw(&p_all, SYS_fallocate, fd, cases[i].mode, 0, 4096);

		tap_ok(none == cases[i].want, "fallocate(%s) -> %d (got %d)", cases[i].name,
		       cases[i].want, none);
		tap_ok(all == cases[i].want, "fallocate(%s) with every grant -> %d (got %d)",
		       cases[i].name, cases[i].want, all);
	}
	close(fd);
}

int main(void)
{
	test_api();
	test_refused_table();
	test_base_table();
	test_granted_calls();
	test_processes();
	test_self_only();
	test_open();
	test_sockets();
	test_ioctl();
	test_fcntl_prctl();
	test_fallocate();
	test_chmod();
	test_personality_ipc();
	test_abis();
	test_unknown_syscalls();
	test_timers();
	test_refused();
	return tap_done();
}
