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
#include "supervise-exec.h"
#include "supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
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
/* The timeout supervisor: the program's process and the one that watches it */

/* What sb_supervise_run() changes in the calling process, restored in the
 * child before the program runs and in the supervisor before it returns. */
struct sb_saved_state {
	sigset_t mask;
	struct sigaction sigchld;
	struct sigaction sigpipe;
	int subreaper;
	cpu_set_t affinity;
	bool pinned; /* to this CPU until the program's process exists */
};

static void sb_restore_signals(const struct sb_saved_state *saved)
{
	sigaction(SIGCHLD, &saved->sigchld, NULL);
	sigprocmask(SIG_SETMASK, &saved->mask, NULL);
}

/* The kernel starts a new process on the idlest CPU it may use: the other
 * one, as this one is busy starting it. There the program's start finds
 * cold caches (and, in a virtual machine, maybe a halted virtual CPU), and
 * costs more CPU time than on the CPU that has run python-sb so far
 * (bench/README.md, issue 19). Both processes stay on this CPU until the
 * program's has started; then each gets the caller's affinity back, and
 * the scheduler is free again. */
static void sb_pin_here(struct sb_saved_state *saved)
{
	int cpu = sched_getcpu();
	cpu_set_t one;

	saved->pinned = false;
	if (cpu < 0 || sched_getaffinity(0, sizeof(saved->affinity), &saved->affinity) < 0 ||
	    CPU_COUNT(&saved->affinity) < 2 || !CPU_ISSET(cpu, &saved->affinity))
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	saved->pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
}

static void sb_unpin(const struct sb_saved_state *saved)
{
	if (saved->pinned)
		(void)sched_setaffinity(0, sizeof(saved->affinity), &saved->affinity);
}

static void sb_restore_state(const struct sb_saved_state *saved)
{
	sb_restore_signals(saved);
	prctl(PR_SET_CHILD_SUBREAPER, saved->subreaper, 0, 0, 0);
}

/* The program's side, forked or cloned: make sure it cannot outlive the
 * supervisor, take the output's pipes, and give it the signal state the
 * caller had. 0, or the process dies. */
static void sb_child_setup(const struct sb_saved_state *saved, struct sb_supervisor *s)
{
	close(s->sfd);
	if (s->relay && sb_relay_child(s->relay) < 0)
		_exit(EXIT_FAILURE);
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
	if (getppid() != s->self)
		(void)raise(SIGKILL);
	/* The subreaper flag is not inherited (the program must not reap
	 * its own orphans unless it asks to); the blocked mask and the SIGCHLD
	 * disposition are, and the program must see the caller's. */
	sb_restore_signals(saved);
	sb_unpin(saved);
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
	struct sb_saved_state saved;
	struct sigaction dfl = {.sa_handler = SIG_DFL}, ign = {.sa_handler = SIG_IGN};
	uint64_t start, deadline;
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
	sb_supervisor_sigset(&set, false);

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
	 * they stay in the tree we can find and kill, and we reap them. The
	 * flag survives execve() (supervise-exec.h). */
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
	sb_pin_here(&saved);
	start = sb_monotonic_ns();
	deadline = sb_supervisor_deadline(start, o->timeout_ms);

	/* The cheaper way where it applies (supervise-exec.h): this process
	 * becomes python-sb-supervise, the program keeps its memory. Without
	 * a cgroup to move it into or a count to return to the caller. */
	if (o->supervisor_exe && !o->cgroup_parent && !o->count_output) {
		r = sb_supervise_exec(o->supervisor_exe,
				      &(struct sb_supervise_exec_args){
					  .deadline_ns = deadline,
					  .timeout_ms = o->timeout_ms,
					  .relay = s.relay,
					  .affinity = saved.pinned ? &saved.affinity : NULL,
					  .keep_fd = -1,
				      },
				      reterr);
		if (r == 0) {
			sb_child_setup(&saved, &s);
			*ret_is_child = true;
			*ret = (struct sb_supervise_result){0};
			return 0;
		}
		if (r != -EOPNOTSUPP) {
			close(s.sfd);
			sb_restore_state(&saved);
			sb_unpin(&saved);
			goto fail_early;
		}
	}

	/* The child is *not* moved to a process group of its own (unlike
	 * timeout(1) without --foreground): it must stay in the terminal's
	 * foreground group, so that ^C and ^Z reach it, job control stops and
	 * continues it together with us, and it can read the terminal
	 * without SIGTTIN. The tree is found through parent links instead. */
	s.child = fork();
	if (s.child != 0)
		sb_unpin(&saved);
	if (s.child < 0) {
		r = -errno;
		close(s.sfd);
		sb_restore_state(&saved);
		r = sb_error(reterr, r, "supervisor: cannot fork: %s", strerror(-r));
		goto fail_early;
	}
	if (s.child == 0) {
		char byte = 0;

		sb_child_setup(&saved, &s);
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
	/* The program does not start outside its cgroup: killed at once. */
	if (r < 0)
		(void)sb_supervisor_watch(&s, 0, ret, NULL);
	else
		r = sb_supervisor_watch(&s, deadline, ret, reterr);
	if (s.relay) {
		sb_relay_close(s.relay);
		sigaction(SIGPIPE, &saved.sigpipe, NULL);
	}
	close(s.sfd);
	sb_restore_state(&saved);
	if (r < 0)
		return r;
	*ret_is_child = false;
	ret->memory_exceeded = sb_cgroup_oom_killed(&cgroup);
	ret->wall_ns = sb_monotonic_ns() - start;
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
