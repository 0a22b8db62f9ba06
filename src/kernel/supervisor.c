/* SPDX-License-Identifier: MIT */
/* The timeout supervisor's watch (supervisor.h): reaping, forwarding signals,
 * the deadline, limit-output's relay, and killing the whole tree. */
#include "supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "util.h"

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
/* And under os-sandbox=unshare: the signals `python` would get from whoever
 * knows its pid, and SIGIO, which a partial mode worker's channel sends to
 * the process that set it up before the namespaces (the launcher's pid: the
 * worker's handler, in the program, checks for its parent's end). Not
 * SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT: the caller stops and continues with the
 * terminal's job like the program does (both are in the foreground process
 * group). */
static const int sb_namespace_signals[] = {SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH, SIGIO};

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
			} else if (pid == s->init) {
				s->init = 0; /* the namespace is gone: so is the program, soon */
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

/* os-sandbox=unshare's end: SIGKILL to the init, whose death kills every
 * process left in the PID namespace (the program too, if the watch ended
 * otherwise); the program reaped, the init not waited for (its exit tears
 * the namespaces down, on nobody's critical path). */
static int sb_kill_namespace(struct sb_supervisor *s)
{
	int status;

	if (!s->child_reaped)
		kill(s->child, SIGKILL); /* unreaped: the pid is still ours */
	if (s->init > 0)
		kill(s->init, SIGKILL);
	while (!s->child_reaped) {
		pid_t pid = waitpid(s->child, &status, 0);

		if (pid == s->child) {
			s->child_reaped = true;
			s->child_status = status;
		} else if (pid < 0 && errno != EINTR) {
			return -errno;
		}
	}
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

void sb_supervisor_sigset(sigset_t *set, bool namespace)
{
	sigemptyset(set);
	for (size_t i = 0; i < ELEMENTSOF(sb_forwarded_signals); i++)
		sigaddset(set, sb_forwarded_signals[i]);
	for (size_t i = 0; namespace && i < ELEMENTSOF(sb_namespace_signals); i++)
		sigaddset(set, sb_namespace_signals[i]);
	sigaddset(set, SIGCHLD);
}

uint64_t sb_supervisor_deadline(uint64_t start_ns, unsigned long long timeout_ms)
{
	if (!timeout_ms || timeout_ms > (UINT64_MAX - start_ns) / 1000000ULL)
		return UINT64_MAX;
	return start_ns + timeout_ms * 1000000ULL;
}

int sb_supervisor_watch(struct sb_supervisor *s, uint64_t deadline_ns,
			struct sb_supervise_result *ret, char **reterr)
{
	bool timed_out = false, namespace = s->init > 0;
	int r = 0;

	*ret = (struct sb_supervise_result){0};
	for (;;) {
		r = sb_reap(s);
		if (r < 0 || s->child_reaped)
			break;
		if (r == 0) {
			/* No child at all, yet the program was not reaped by
			 * us: another thread of the caller's waited for it. */
			r = -ECHILD;
			break;
		}
		if (sb_monotonic_ns() >= deadline_ns) {
			timed_out = true;
			break;
		}
		if (s->relay && s->relay->exceeded)
			break;
		r = sb_wait_signal(s, deadline_ns);
		if (r >= 0)
			r = sb_drain_signals(s, true);
		if (r < 0)
			break;
	}

	/* At the deadline or past limit-output, the program and all it
	 * started; after its exit, whatever it left running in the
	 * background; after a failure here, everything too (fail closed:
	 * nothing runs unsupervised). In a PID namespace, all that is its
	 * init's death. */
	if (namespace) {
		int k = sb_kill_namespace(s);

		r = r < 0 ? r : k;
	} else if (r >= 0) {
		r = sb_kill_tree(s);
	} else {
		(void)sb_kill_tree(s);
	}
	/* What the pipes still hold, once every writer is gone: until the
	 * deadline, or briefly when the program was killed. */
	if (s->relay) {
		sb_relay_flush(s->relay, timed_out || s->relay->exceeded || r < 0
					     ? sb_monotonic_ns() + SB_KILL_ROUND_NS * 10
					     : deadline_ns);
		ret->output_counted = true;
		ret->output_exceeded = s->relay->exceeded;
		for (size_t i = 0; i < s->relay->n; i++) {
			const struct sb_relay_stream *st = &s->relay->s[i];

			ret->output_combined = ret->output_combined || st->both;
			if (st->to == 2 && !st->both)
				ret->stderr_bytes += st->bytes;
			else
				ret->stdout_bytes += st->bytes;
		}
	}
	/* Signals that came during the kill are dropped here rather than
	 * delivered when the mask is restored: the caller must still be alive
	 * to report the program's status. */
	(void)sb_drain_signals(s, false);

	if (r == -EBUSY)
		return sb_error(reterr, r,
				"supervisor: processes of the program survived SIGKILL for %llus",
				SB_KILL_GRACE_NS / 1000000000ULL);
	if (r < 0)
		return sb_error(reterr, r, "cannot supervise the program: %s", strerror(-r));
	if (!s->child_reaped)
		return sb_error(reterr, -ECHILD, "supervisor: the program's status was lost");
	ret->status = s->child_status;
	ret->timed_out = timed_out;
	return 0;
}
