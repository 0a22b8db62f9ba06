/* SPDX-License-Identifier: MIT */
/* Resource limits (limit-*) and the wall-clock timeout supervisor (timeout).
 *
 * Two independent mechanisms:
 *  - sb_limits_apply() lowers rlimits of the calling process; the kernel
 *    enforces them, and they are inherited by everything it starts.
 *  - sb_supervise() forks: the child runs the program, the parent stays
 *    outside the sandbox, runs no program code, and kills the whole process
 *    tree at the deadline.
 *
 * Call order for a launcher: sb_supervise() first, then sb_limits_apply() in
 * the child. The supervisor needs a fork, a few file descriptors and some
 * memory of its own, which limit-processes / limit-open-files / limit-memory
 * would otherwise take away from it (RLIMIT_NPROC=1 makes its fork fail). */
#include "resource-limits.h"

#include "cgroup.h"
#include "output-relay.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "util.h"

/* ------------------------------------------------------------------------ */
/* rlimits */

struct sb_limit_def {
	const char *key;  /* the profile key, for messages */
	const char *name; /* the resource, for messages */
	int resource;
	bool ms_to_seconds; /* RLIMIT_CPU counts seconds, the profile milliseconds */
	size_t offset;	    /* of the value in struct sb_limits */
};

/* All of these are per process and inherited: each process of the program
 * gets its own CPU seconds and address space (RLIMIT_AS counts reserved
 * virtual memory, not what is resident: thread stacks and large mmap()s count
 * in full, and AddressSanitizer cannot run under it at all). RLIMIT_NOFILE
 * bounds descriptor *numbers*: descriptors already open above it stay usable.
 *
 * RLIMIT_NPROC is not a per-sandbox counter: the kernel compares it with the
 * number of processes (threads, in fact: every task counts) that the *real
 * uid* already has, in the whole system (per user namespace). A sandbox
 * running as a uid that has other processes may therefore be unable to fork
 * at all, and a program can exhaust it for every other process of that uid
 * (they share the count, not the limit). The check is also skipped for root
 * (real uid 0 in the initial user namespace) and for tasks with
 * CAP_SYS_RESOURCE or CAP_SYS_ADMIN, so limit-processes does nothing for a
 * program running as uid 0: user= changes uid (privileges.c). The same
 * capabilities let a process raise a hard limit back; they are dropped
 * (privileges.c) before the program runs, so every limit binds, root's too. */
static const struct sb_limit_def sb_limit_defs[] = {
#define SB_LIMIT_KEY(id, key, unit, field, rlimit)                                                 \
	{key, #rlimit, rlimit, SB_UNIT_##unit, offsetof(struct sb_limits, field)},
#define SB_UNIT_DURATION true /* the profile counts milliseconds */
#define SB_UNIT_SIZE	 false
#define SB_UNIT_COUNT	 false
#include "limit-key-list.h"
#undef SB_LIMIT_KEY
#undef SB_UNIT_DURATION
#undef SB_UNIT_SIZE
#undef SB_UNIT_COUNT
};

static rlim_t sb_min_rlim(rlim_t a, rlim_t b)
{
	return a < b ? a : b;
}

int sb_limits_apply(const struct sb_limits *limits, char **reterr)
{
	if (!limits)
		return sb_error(reterr, -EINVAL, "no resource limits given");

	for (size_t i = 0; i < ELEMENTSOF(sb_limit_defs); i++) {
		const struct sb_limit_def *d = &sb_limit_defs[i];
		unsigned long long v =
		    *(const unsigned long long *)((const char *)limits + d->offset);
		struct rlimit cur, want;
		rlim_t value;

		if (v == 0 || d->resource < 0)
			continue;
#ifdef SB_HAVE_ASAN
		/* Test builds only: see SB_HAVE_ASAN in util.h. */
		if (d->resource == RLIMIT_AS)
			continue;
#endif
		/* Rounded up, so a profile's 1500ms never becomes 1s: the limit
		 * is a guarantee to the program as much as to the host. */
		if (d->ms_to_seconds)
			v = v / 1000 + (v % 1000 != 0);
		/* rlim_t is 64-bit on Linux; anything from RLIM_INFINITY up
		 * means "unlimited", which the min() below turns into a no-op. */
		value = v >= (unsigned long long)RLIM_INFINITY ? RLIM_INFINITY : (rlim_t)v;

		if (getrlimit(d->resource, &cur) < 0)
			return sb_error(reterr, -errno, "%s: cannot read %s: %s", d->key, d->name,
					strerror(errno));

		/* Soft = hard, so the program cannot raise the soft limit up to
		 * a higher hard one. For RLIMIT_CPU this means SIGKILL at the
		 * limit, with no SIGXCPU first (the kernel sends SIGXCPU only
		 * while the soft limit is below the hard one). Never above what we already have:
		 * raising a hard limit needs CAP_SYS_RESOURCE and would loosen a limit an outer
		 * sandbox or the administrator set; a lower soft limit is kept for the same reason.
		 * soft <= hard holds since cur.rlim_cur <= cur.rlim_max. */
		want.rlim_max = sb_min_rlim(cur.rlim_max, value);
		want.rlim_cur = sb_min_rlim(cur.rlim_cur, want.rlim_max);
		if (setrlimit(d->resource, &want) < 0)
			return sb_error(reterr, -errno, "%s: cannot set %s to %llu%s: %s", d->key,
					d->name, (unsigned long long)want.rlim_max,
					d->ms_to_seconds ? "s" : "", strerror(errno));
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The timeout supervisor */

/* How long the supervisor keeps killing and reaping after the deadline (or
 * after the program's exit) before it reports that processes survived. Only a
 * task stuck in uninterruptible sleep, or a tree that forks faster than /proc
 * can be scanned, gets that far. */
#define SB_KILL_GRACE_NS (5ULL * 1000000000ULL)
/* Between two kill rounds: the wait for SIGCHLD from the processes just killed. */
#define SB_KILL_ROUND_NS (10ULL * 1000000ULL)

/* Signals the supervisor handles through its signalfd. SIGCHLD says a child
 * (the program, or an orphan re-parented to us) changed state; the others are
 * forwarded to the program. */
static const int sb_forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

struct sb_supervisor {
	pid_t self;
	pid_t child;
	bool child_reaped;
	int child_status;
	int sfd;
	struct sb_relay *relay; /* limit-output=, or NULL */
};

/* What sb_supervise() changes in the calling process, restored in the child
 * before the program runs and in the supervisor before it returns. */
struct sb_saved_state {
	sigset_t mask;
	struct sigaction sigchld;
	struct sigaction sigpipe;
	int subreaper;
};

static struct timespec sb_ns_to_timespec(uint64_t ns)
{
	return (struct timespec){
	    .tv_sec = (time_t)(ns / 1000000000ULL),
	    .tv_nsec = (long)(ns % 1000000000ULL),
	};
}

static void sb_restore_signals(const struct sb_saved_state *saved)
{
	sigaction(SIGCHLD, &saved->sigchld, NULL);
	sigprocmask(SIG_SETMASK, &saved->mask, NULL);
}

static void sb_restore_state(const struct sb_saved_state *saved)
{
	sb_restore_signals(saved);
	prctl(PR_SET_CHILD_SUBREAPER, saved->subreaper, 0, 0, 0);
}

/* Reaps every child that has exited: the program and the orphans re-parented
 * to us. Returns 1 while children remain, 0 when there are none left (the
 * whole tree is gone: as a subreaper, any living descendant would have us as
 * ancestor through living or zombie parents, and the topmost of those would
 * be our child), -errno on failure. */
static int sb_reap(struct sb_supervisor *s)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid > 0) {
			if (pid == s->child) {
				s->child_reaped = true;
				s->child_status = status;
			}
			continue;
		}
		if (pid == 0)
			return 1;
		if (errno == EINTR)
			continue;
		if (errno == ECHILD)
			return 0;
		return -errno;
	}
}

/* The parent pid from /proc/<pid>/stat; -errno (-ENOENT/-ESRCH: gone). */
static int sb_read_ppid(int proc_fd, pid_t pid, pid_t *ret_ppid)
{
	char path[32], buf[256];
	_cleanup_close_ int fd = -1;
	char *p, *end;
	ssize_t n;
	long ppid;

	snprintf(path, sizeof(path), "%d/stat", (int)pid);
	fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	/* "pid (comm) state ppid ...": comm may hold spaces and ')', but it
	 * is at most 15 bytes and the last ')' ends it. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return -EIO;
	errno = 0;
	ppid = strtol(p + 4, &end, 10);
	if (errno != 0 || end == p + 4 || *end != ' ' || ppid < 0 || ppid > INT32_MAX)
		return -EIO;
	*ret_ppid = (pid_t)ppid;
	return 0;
}

struct sb_proc {
	pid_t pid;
	pid_t ppid;
	bool descendant;
};

static int sb_proc_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct sb_proc *)a)->pid, y = ((const struct sb_proc *)b)->pid;

	return (x > y) - (x < y);
}

static struct sb_proc *sb_proc_find(struct sb_proc *procs, size_t n, pid_t pid)
{
	struct sb_proc key = {.pid = pid};

	if (n == 0)
		return NULL;
	return bsearch(&key, procs, n, sizeof(*procs), sb_proc_cmp);
}

static bool sb_is_ancestor(struct sb_proc *procs, size_t n, pid_t self, pid_t ppid)
{
	struct sb_proc *p;

	if (ppid == self)
		return true;
	p = sb_proc_find(procs, n, ppid);
	return p && p->descendant;
}

/* SIGKILL to one descendant, found by the scan. Between the scan and the
 * kill, the process may have exited and been reaped by its parent, and the
 * pid reused by an unrelated process: a pidfd pins the process, and the
 * parent read *after* opening it proves it is still in our tree (re-parented
 * to us, or to a subreaper below us, still counts). */
static void sb_kill_one(int proc_fd, struct sb_proc *procs, size_t n, pid_t self, pid_t pid)
{
	_cleanup_close_ int pidfd = -1;
	pid_t ppid = 0;

	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		/* ESRCH: gone. Otherwise (kernels before 5.3, out of
		 * descriptors) the plain kill and its small race: leaving the
		 * process alive would be worse. */
		if (errno != ESRCH)
			kill(pid, SIGKILL);
		return;
	}
	if (sb_read_ppid(proc_fd, pid, &ppid) < 0 || !sb_is_ancestor(procs, n, self, ppid))
		return;
	syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
}

/* One pass: lists /proc, finds every process whose parent chain leads to
 * us, and kills it. The program stays in our process group (see
 * sb_supervise()), and even a process group of its own could be left with
 * setsid()/setpgid(), so a group kill would not do; parent links cannot be
 * broken from inside, because orphans are re-parented to us, the subreaper
 * (or to a subreaper inside the tree, which is itself in the tree). Returns
 * the number of descendants found, or -errno when /proc cannot be read. */
static int sb_kill_descendants(pid_t self)
{
	_cleanup_free_ struct sb_proc *procs = NULL;
	size_t n = 0, cap = 0;
	int proc_fd, killed = 0;
	bool changed;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		return -errno;
	proc_fd = dirfd(d);
	for (struct dirent *e; (e = readdir(d));) {
		unsigned long long v;
		pid_t ppid;

		if (sb_safe_atou64(e->d_name, &v) < 0 || v == 0 || v > INT32_MAX)
			continue;
		if (sb_read_ppid(proc_fd, (pid_t)v, &ppid) < 0)
			continue; /* exited meanwhile */
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct sb_proc *np = realloc(procs, ncap * sizeof(*procs));

			if (!np) {
				closedir(d);
				return -ENOMEM;
			}
			procs = np;
			cap = ncap;
		}
		procs[n++] = (struct sb_proc){.pid = (pid_t)v, .ppid = ppid};
	}

	if (n > 0)
		qsort(procs, n, sizeof(*procs), sb_proc_cmp);
	/* Transitive closure over the parent links: each pass adds at least
	 * one level of the tree, so this ends after depth + 1 passes. */
	do {
		changed = false;
		for (size_t i = 0; i < n; i++)
			if (!procs[i].descendant && sb_is_ancestor(procs, n, self, procs[i].ppid)) {
				procs[i].descendant = true;
				changed = true;
			}
	} while (changed);

	for (size_t i = 0; i < n; i++)
		if (procs[i].descendant) {
			sb_kill_one(proc_fd, procs, n, self, procs[i].pid);
			killed++;
		}
	closedir(d);
	return killed;
}

/* Whether the kernel sent this signal to the program as well as to us, so
 * that forwarding it would deliver it twice (Python would see two
 * KeyboardInterrupts for one ^C). The terminal signals the whole foreground
 * process group (^C, ^\, and SIGHUP when the session leader exits), the
 * program included as long as it is in our group; those come with
 * SI_KERNEL. A hangup of the terminal itself is the exception: the kernel
 * sends that SIGHUP to the session leader only, which may be us (a terminal
 * emulator or sshd running the launcher directly). Anything sent by a
 * process (kill(1), a service manager; SI_USER, SI_QUEUE...) reached us
 * alone and is passed on. */
static bool sb_terminal_reached_child(const struct sb_supervisor *s,
				      const struct signalfd_siginfo *si)
{
	if (si->ssi_code != SI_KERNEL)
		return false;
	if (si->ssi_signo == SIGHUP && getsid(0) == s->self)
		return false;
	/* The program moved to a group of its own: the terminal missed it. */
	return getpgid(s->child) == getpgrp();
}

/* Reads what the signalfd holds; with forward, passes termination signals on
 * to the program. */
static int sb_drain_signals(struct sb_supervisor *s, bool forward)
{
	struct signalfd_siginfo si;

	for (;;) {
		ssize_t n = read(s->sfd, &si, sizeof(si));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -errno;
		}
		if (n != sizeof(si))
			return -EIO;
		if (!forward || si.ssi_signo == SIGCHLD || s->child_reaped)
			continue;
		if (sb_terminal_reached_child(s, &si))
			continue;
		kill(s->child, (int)si.ssi_signo);
	}
}

/* Waits for a signal on the signalfd, at most until deadline_ns; meanwhile
 * copies the program's output (limit-output=). */
static int sb_wait_signal(struct sb_supervisor *s, uint64_t deadline_ns)
{
	struct pollfd pfd[5] = {{.fd = s->sfd, .events = POLLIN}};
	uint64_t now = sb_monotonic_ns();
	size_t n = 1;
	struct timespec ts;

	if (now >= deadline_ns)
		return 0;
	if (s->relay)
		n += sb_relay_pollfds(s->relay, pfd + 1);
	ts = sb_ns_to_timespec(deadline_ns - now);
	/* EINTR: a handler of the caller's, for a signal we do not block. */
	if (ppoll(pfd, n, &ts, NULL) < 0) {
		if (errno != EINTR)
			return -errno;
		return 0;
	}
	if (s->relay)
		sb_relay_service(s->relay, pfd + 1, n - 1);
	return 0;
}

/* SIGKILL to the program and every descendant, repeated until there are no
 * children left: a process may fork between the scan and the kill, but a
 * process with SIGKILL pending cannot fork any more, so each round can only
 * find newer processes. Bounded by SB_KILL_GRACE_NS. */
static int sb_kill_tree(struct sb_supervisor *s)
{
	uint64_t give_up = sb_monotonic_ns() + SB_KILL_GRACE_NS;
	int r;

	for (;;) {
		r = sb_reap(s);
		if (r <= 0)
			return r;
		if (sb_monotonic_ns() >= give_up)
			return -EBUSY;
		if (!s->child_reaped)
			kill(s->child, SIGKILL); /* unreaped: the pid is still ours */
		r = sb_kill_descendants(s->self);
		if (r == -ENOMEM || r == -EMFILE || r == -ENFILE)
			r = 0; /* transient: the next round retries */
		if (r < 0)
			return r;
		r = sb_wait_signal(s, sb_monotonic_ns() + SB_KILL_ROUND_NS);
		if (r >= 0)
			r = sb_drain_signals(s, false);
		if (r < 0)
			return r;
	}
}

/* The program's side of the fork: make sure it cannot outlive the supervisor,
 * and give it the signal state the caller had. */
static void sb_child_setup(const struct sb_saved_state *saved, pid_t supervisor)
{
	/* If the supervisor dies (SIGKILL, OOM killer), the deadline can no
	 * longer be enforced: the program goes with it. Processes the program
	 * started are not covered: they are re-parented to the next subreaper
	 * or init and live on (a pid namespace or a cgroup would take them
	 * too). PR_SET_PDEATHSIG is cleared by a change of effective/fs uid
	 * or gid, so a caller that drops privileges after this point must set
	 * it again. It also fires when the *thread* that forked exits, one
	 * more reason to call this from a single-threaded process. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* The supervisor may have died between fork() and the prctl(): then
	 * no death signal will ever come and we were re-parented already. Do
	 * what the signal would have done. */
	if (getppid() != supervisor)
		(void)raise(SIGKILL);
	/* The subreaper flag is not inherited (the program must not reap
	 * its own orphans unless it asks to); the blocked mask and the SIGCHLD
	 * disposition are, and the program must see the caller's. */
	sb_restore_signals(saved);
}

/* Preconditions, which python-sb's main() meets: the caller is single-threaded
 * (the signal mask and the parent-death signal are per thread) and has no
 * other children (the supervisor reaps any child, waitpid(-1), and kills every
 * descendant at the end, those included). Errors are returned in the caller's
 * process only: the child's side either returns 0 or dies. */
int sb_supervise_run(const struct sb_supervise_options *o, bool *ret_is_child,
		     struct sb_supervise_result *ret, char **reterr)
{
	struct sb_supervisor s = {.sfd = -1};
	_cleanup_(sb_cgroup_remove) struct sb_cgroup cgroup = {.dir_fd = -1};
	struct sb_relay relay = {0};
	struct sb_supervise_result counts = {0};
	struct sb_saved_state saved;
	struct sigaction dfl = {.sa_handler = SIG_DFL}, ign = {.sa_handler = SIG_IGN};
	uint64_t start, deadline;
	bool timed_out = false;
	int r, go[2] = {-1, -1};
	sigset_t set;

	/* Everything that can fail happens before the fork: once the child
	 * exists, the only way out of this function is with it dead or
	 * reaped. */
	if (o->cgroup_parent) {
		r = sb_cgroup_create(o->cgroup_parent, o->memory_bytes, &cgroup, reterr);
		if (r < 0)
			return r;
		/* The program waits until it is in its cgroup. */
		if (pipe2(go, O_CLOEXEC) < 0)
			return sb_error(reterr, -errno, "limit-memory: cannot create a pipe: %s",
					strerror(errno));
	}
	if (o->output_bytes || o->count_output) {
		r = sb_relay_open(&relay, o->output_bytes, reterr);
		if (r < 0)
			goto fail_early;
		s.relay = &relay;
	}
	sigemptyset(&set);
	for (size_t i = 0; i < ELEMENTSOF(sb_forwarded_signals); i++)
		sigaddset(&set, sb_forwarded_signals[i]);
	sigaddset(&set, SIGCHLD);

	if (prctl(PR_GET_CHILD_SUBREAPER, &saved.subreaper, 0, 0, 0) < 0) {
		r = sb_error(reterr, -errno, "supervisor: cannot read the subreaper flag: %s",
			     strerror(errno));
		goto fail_early;
	}
	/* Blocked before the fork, so that no signal is lost between fork()
	 * and the first read of the signalfd. */
	if (sigprocmask(SIG_BLOCK, &set, &saved.mask) < 0) {
		r = sb_error(reterr, -errno, "supervisor: cannot block signals: %s",
			     strerror(errno));
		goto fail_early;
	}
	/* SIGCHLD set to SIG_IGN (or SA_NOCLDWAIT) makes the kernel reap our
	 * children itself, and the program's status would be lost. */
	if (sigaction(SIGCHLD, &dfl, &saved.sigchld) < 0) {
		r = -errno;
		sigprocmask(SIG_SETMASK, &saved.mask, NULL);
		r = sb_error(reterr, r, "supervisor: cannot reset SIGCHLD: %s", strerror(-r));
		goto fail_early;
	}
	/* As a child subreaper, descendants orphaned by a double fork or a
	 * daemon()ising parent are re-parented to us instead of to init:
	 * they stay in the tree we can find and kill, and we reap them. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		r = -errno;
		sb_restore_state(&saved);
		r = sb_error(reterr, r, "supervisor: cannot become a child subreaper: %s",
			     strerror(-r));
		goto fail_early;
	}
	s.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s.sfd < 0) {
		r = -errno;
		sb_restore_state(&saved);
		r = sb_error(reterr, r, "supervisor: cannot create a signalfd: %s", strerror(-r));
		goto fail_early;
	}

	s.self = getpid();
	start = sb_monotonic_ns();
	/* Saturates instead of wrapping for absurd timeouts (> 500 years). */
	deadline = !o->timeout_ms ? UINT64_MAX
		   : o->timeout_ms > (UINT64_MAX - start) / 1000000ULL
		       ? UINT64_MAX
		       : start + o->timeout_ms * 1000000ULL;

	/* The child is *not* moved to a process group of its own (unlike
	 * timeout(1) without --foreground): it must stay in the terminal's
	 * foreground group, so that ^C and ^Z reach it, job control stops and
	 * continues it together with us, and it can read the terminal
	 * without SIGTTIN. The tree is found through parent links instead. */
	s.child = fork();
	if (s.child < 0) {
		r = -errno;
		close(s.sfd);
		sb_restore_state(&saved);
		r = sb_error(reterr, r, "supervisor: cannot fork: %s", strerror(-r));
		goto fail_early;
	}
	if (s.child == 0) {
		char byte = 0;

		close(s.sfd);
		if (s.relay && sb_relay_child(s.relay) < 0)
			_exit(EXIT_FAILURE);
		sb_child_setup(&saved, s.self);
		if (go[0] >= 0) {
			close(go[1]);
			/* Nothing but this byte: the supervisor died, or could not
			 * move us; no program code runs outside the cgroup. */
			if (read(go[0], &byte, 1) != 1 || byte != 'g')
				_exit(EXIT_FAILURE);
			close(go[0]);
			if (cgroup.dir_fd >= 0)
				close(cgroup.dir_fd);
			free(cgroup.path);
			cgroup = (struct sb_cgroup){.dir_fd = -1};
		}
		*ret_is_child = true;
		*ret = (struct sb_supervise_result){0};
		return 0;
	}
	if (s.relay) {
		sb_relay_parent(s.relay);
		/* A caller's reader that goes away must not kill the supervisor
		 * (EPIPE instead); the program's own disposition is its own. */
		sigaction(SIGPIPE, &ign, &saved.sigpipe);
	}
	r = 0;
	if (go[0] >= 0) {
		close(go[0]);
		go[0] = -1;
		r = sb_cgroup_attach(&cgroup, s.child, reterr);
		if (r >= 0 && write(go[1], "g", 1) != 1)
			r = sb_error(reterr, -errno, "limit-memory: cannot start the program: %s",
				     strerror(errno));
		close(go[1]);
		go[1] = -1;
	}

	while (r >= 0) {
		r = sb_reap(&s);
		if (r < 0 || s.child_reaped)
			break;
		if (r == 0) {
			/* No child at all, yet the program was not reaped by
			 * us: another thread of the caller's waited for it. */
			r = -ECHILD;
			break;
		}
		if (sb_monotonic_ns() >= deadline) {
			timed_out = true;
			break;
		}
		if (s.relay && s.relay->exceeded)
			break;
		r = sb_wait_signal(&s, deadline);
		if (r >= 0)
			r = sb_drain_signals(&s, true);
	}

	/* At the deadline or past limit-output, the program and all it
	 * started; after its exit, whatever it left running in the
	 * background; after a failure here, everything too (fail closed:
	 * nothing runs unsupervised). */
	if (r >= 0)
		r = sb_kill_tree(&s);
	else
		(void)sb_kill_tree(&s);
	/* What the pipes still hold, once every writer is gone: until the
	 * deadline, or briefly when the program was killed. */
	if (s.relay) {
		sb_relay_flush(s.relay, timed_out || s.relay->exceeded || r < 0
					    ? sb_monotonic_ns() + SB_KILL_ROUND_NS * 10
					    : deadline);
		for (size_t i = 0; i < s.relay->n; i++) {
			const struct sb_relay_stream *st = &s.relay->s[i];

			counts.output_combined = counts.output_combined || st->both;
			if (st->to == 2 && !st->both)
				counts.stderr_bytes += st->bytes;
			else
				counts.stdout_bytes += st->bytes;
		}
		sb_relay_close(s.relay);
		sigaction(SIGPIPE, &saved.sigpipe, NULL);
	}

	/* Signals that came during the kill are dropped here rather than
	 * delivered when the mask is restored: the caller must still be alive
	 * to report the program's status. */
	(void)sb_drain_signals(&s, false);
	close(s.sfd);
	sb_restore_state(&saved);

	if (r == -EBUSY)
		return sb_error(reterr, r,
				"supervisor: processes of the program survived SIGKILL for %llus",
				SB_KILL_GRACE_NS / 1000000000ULL);
	if (r < 0)
		return reterr && *reterr
			   ? r
			   : sb_error(reterr, r, "cannot supervise the program: %s", strerror(-r));
	if (!s.child_reaped)
		return sb_error(reterr, -ECHILD, "supervisor: the program's status was lost");
	*ret_is_child = false;
	*ret = (struct sb_supervise_result){
	    .status = s.child_status,
	    .timed_out = timed_out,
	    .output_exceeded = s.relay && s.relay->exceeded,
	    .memory_exceeded = sb_cgroup_oom_killed(&cgroup),
	    .wall_ns = sb_monotonic_ns() - start,
	    .output_counted = s.relay != NULL,
	};
	ret->output_combined = counts.output_combined;
	ret->stdout_bytes = counts.stdout_bytes;
	ret->stderr_bytes = counts.stderr_bytes;
	return 0;

fail_early:
	sb_relay_close(&relay);
	if (go[0] >= 0) {
		close(go[0]);
		close(go[1]);
	}
	return r;
}

int sb_supervise(unsigned long long timeout_ms, bool *ret_is_child, int *ret_status,
		 bool *ret_timed_out, char **reterr)
{
	struct sb_supervise_result res;
	int r;

	if (timeout_ms == 0)
		return sb_error(reterr, -EINVAL, "timeout: must be greater than 0");
	r = sb_supervise_run(&(struct sb_supervise_options){.timeout_ms = timeout_ms}, ret_is_child,
			     &res, reterr);
	if (r >= 0) {
		*ret_status = res.status;
		*ret_timed_out = res.timed_out;
	}
	return r;
}
