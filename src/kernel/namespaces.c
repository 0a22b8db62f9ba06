/* SPDX-License-Identifier: MIT */
/* os-sandbox=unshare's namespaces and processes (namespaces.h). */
#include "namespaces.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "landlock-compat.h"
#include "pid-init.h"
#include "supervise-exec.h"
#include "supervisor.h"

/* The launcher's. The mount and network namespaces are the init's
 * (pid-init.h), which the program's process joins: the network namespace,
 * the costliest to make, is made while the program's process builds the
 * root, and the launcher, outside the mount namespace, never tears it down
 * on its way out (its last holder does: an RCU grace period). With net=
 * rules the launcher makes the network namespace itself, since slirp4netns
 * joins the launcher's. */
#define SB_NS_FLAGS (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)

/* ------------------------------------------------------------------------ */
/* Creating the namespaces */

static int read_number(const char *path, long *ret)
{
	char buf[32];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	*ret = strtol(buf, NULL, 10);
	return 0;
}

/* Why the kernel refuses user namespaces here: the switches an
 * administrator can turn, named, or the usual other reason. */
static const char *userns_hint(int err)
{
	long v = -1;

	if (read_number("/proc/sys/kernel/unprivileged_userns_clone", &v) == 0 && v == 0)
		return "user namespaces are disabled for unprivileged users (sysctl "
		       "kernel.unprivileged_userns_clone=0; set it to 1)";
	if (read_number("/proc/sys/user/max_user_namespaces", &v) == 0 && v == 0)
		return "user namespaces are disabled (sysctl user.max_user_namespaces=0; give it "
		       "a positive limit)";
	if (read_number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &v) == 0 &&
	    v == 1)
		return "AppArmor restricts unprivileged user namespaces "
		       "(kernel.apparmor_restrict_unprivileged_userns=1): allow them for python-sb "
		       "with an AppArmor profile, or set the sysctl to 0";
	if (err == ENOSPC)
		return "the limit of user namespaces is reached (sysctl user.max_user_namespaces), "
		       "or they are nested too deep";
	if (err == EPERM)
		return "the sysctls allow them, so a seccomp filter or a container refuses "
		       "unshare() (Docker's default profile does: --security-opt "
		       "seccomp=unconfined, or os-sandbox=landlock)";
	return "";
}

static int write_text(const char *path, const char *text)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(text);

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		return -errno;
	return 0;
}

static int create_namespaces(const struct sb_ns_config *c, char **reterr)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	const char *hint;
	int r;

	if (unshare(SB_NS_FLAGS | (c->net->outside ? CLONE_NEWNET : 0)) < 0) {
		r = -errno;
		hint = userns_hint(-r);
		return sb_error(reterr, r, "cannot create the sandbox's namespaces: %s%s%s",
				strerror(-r), *hint ? ": " : "", hint);
	}
	/* An unprivileged process may map its own ids only, and its gid only
	 * once setgroups() is off for good in the namespace. */
	r = write_text("/proc/self/setgroups", "deny");
	if (r >= 0) {
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)c->inner_uid, (unsigned)uid);
		r = write_text("/proc/self/uid_map", map);
	}
	if (r >= 0) {
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)c->inner_gid, (unsigned)gid);
		r = write_text("/proc/self/gid_map", map);
	}
	if (r < 0) {
		hint = userns_hint(-r);
		return sb_error(reterr, r, "cannot map the sandbox's uid and gid: %s%s%s",
				strerror(-r), *hint ? ": " : "", hint);
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* What every process of ours inside drops */

/* uid 0 inside (unshare.map-root-user) would get every capability back on
 * execve() without SECBIT_NOROOT, and none may come back through the
 * bounding set either. no_new_privs (set before the program runs) would stop
 * both too: defence in depth. */
static int drop_capabilities(void)
{
	struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {{0}};

	if (prctl(PR_SET_SECUREBITS,
		  SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
		      SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED,
		  0, 0, 0) < 0)
		return -errno;
	for (unsigned long cap = 0;; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break; /* past the last capability this kernel knows */
			return -errno;
		}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_capset, &header, data) < 0)
		return -errno;
	return 0;
}

static int landlock_abi(void)
{
	return (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
}

bool sb_ns_signal_scope_available(void)
{
	return landlock_abi() >= 6;
}

/* Write, create, remove and read rights: every filesystem right of Landlock
 * ABI 1-3 but EXECUTE (the kernel reaches the interpreter through
 * /proc/self/exe). */
#define SB_NS_FS_RIGHTS                                                                            \
	(LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |                            \
	 LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR |                             \
	 LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |                           \
	 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |                               \
	 LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |                             \
	 LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)

bool sb_ns_files_scope_available(void)
{
	return landlock_abi() >= 1;
}

/* Two things the namespaces leave open, closed with one Landlock domain.
 *
 * The new root holds only what the grants name, but a descriptor the
 * program inherited still points into the host's mounts: stdin redirected
 * from a file, stdout appended to a log. /proc/self/fd/N reopens that file
 * by its host path, with the access the file's mode gives the uid (stdin
 * opened for writing, the log read back or truncated), past the read-only
 * binds. Every right but EXECUTE is granted beneath the new root only: what
 * only a magic link reaches (a path that does not go through the new root)
 * cannot be opened at all; the descriptor itself keeps working.
 *
 * The PID namespace hides every process outside from kill(pid), but not
 * kill(0) and the terminal's process group, which the program shares with
 * the launcher and the user's job: Landlock's scope (ABI 6) limits its signals
 * to its own processes. Without it, a session of its own. */
int sb_ns_confine_beneath_root(bool scope)
{
	const int abi = landlock_abi();
	struct sb_landlock_ruleset_attr attr = {0};
	struct landlock_path_beneath_attr root = {.parent_fd = -1};
	_cleanup_close_ int fd = -1, root_fd = -1;

	if (scope && abi < 6 && setsid() < 0)
		return -errno;
	if (abi < 1)
		return 0; /* no Landlock: the explanation says what stays open */
	attr.handled_access_fs = SB_NS_FS_RIGHTS | (abi >= 2 ? LANDLOCK_ACCESS_FS_REFER : 0) |
				 (abi >= 3 ? LANDLOCK_ACCESS_FS_TRUNCATE : 0);
	if (scope && abi >= 6)
		attr.scoped = LANDLOCK_SCOPE_SIGNAL | LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET;
	fd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (fd < 0)
		return -errno;
	root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		return -errno;
	root = (struct landlock_path_beneath_attr){.allowed_access = attr.handled_access_fs,
						   .parent_fd = root_fd};
	if (syscall(SYS_landlock_add_rule, fd, LANDLOCK_RULE_PATH_BENEATH, &root, 0) < 0)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_landlock_restrict_self, fd, 0) < 0)
		return -errno;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The processes */

/* Set right after the fork: the child dies with the caller. The caller may
 * have died before the prctl(): the pipe it alone holds open tells. */
static bool caller_alive(int alive_fd)
{
	struct pollfd pfd = {.fd = alive_fd, .events = POLLIN};

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	return poll(&pfd, 1, 0) == 0;
}

struct saved_signals {
	sigset_t mask;
	struct sigaction chld;
};

/* The init's namespaces (pid-init.h): each one's outcome read from fd,
 * joined through the init's pidfd, and checked to be another than the
 * launcher's (host: the inodes of its namespaces), so that no failure on the
 * way leaves the program in the host's mounts or on its network. */
struct ns_join {
	int fd, init_pidfd;
	int ns_flags; /* CLONE_NEWNS, CLONE_NEWNET */
	struct stat host_mnt, host_net;
};

static int join_init_namespace(const struct ns_join *j, int flag, char **reterr)
{
	const char *what = flag == CLONE_NEWNS ? "mount" : "network";
	const struct stat *host = flag == CLONE_NEWNS ? &j->host_mnt : &j->host_net;
	struct stat st;
	int status;
	ssize_t n;

	while ((n = read(j->fd, &status, sizeof(status))) < 0 && errno == EINTR)
		;
	if (n != sizeof(status))
		return sb_error(reterr, -ECHILD,
				"cannot create the sandbox's %s namespace: its init ended", what);
	if (status < 0)
		return sb_error(reterr, status, "cannot create the sandbox's %s namespace: %s",
				what, strerror(-status));
	if (setns(j->init_pidfd, flag) < 0)
		return sb_error(reterr, -errno, "cannot enter the sandbox's %s namespace: %s", what,
				strerror(errno));
	if (stat(flag == CLONE_NEWNS ? "/proc/self/ns/mnt" : "/proc/self/ns/net", &st) < 0)
		return sb_error(reterr, -errno, "cannot check the %s namespace: %s", what,
				strerror(errno));
	if (st.st_ino == host->st_ino && st.st_dev == host->st_dev)
		return sb_error(reterr, -EPERM,
				"the program is still in the launcher's %s namespace", what);
	return 0;
}

/* The program's side: everything the caller set up for itself goes, then
 * the new root and the drop of every capability. */
static int program_setup(const struct sb_ns_config *c, const struct saved_signals *saved,
			 int alive_fd, const struct ns_join *join, char **reterr)
{
	int r;

	if (!caller_alive(alive_fd))
		_exit(0);
	close(alive_fd);
	sigaction(SIGCHLD, &saved->chld, NULL);
	sigprocmask(SIG_SETMASK, &saved->mask, NULL);
	r = join_init_namespace(join, CLONE_NEWNS, reterr);
	if (r >= 0)
		r = sb_root_build(c->root, reterr);
	if (r >= 0 && (join->ns_flags & CLONE_NEWNET))
		r = join_init_namespace(join, CLONE_NEWNET, reterr);
	/* The init may go on (and stop being dumpable). */
	if (r >= 0)
		(void)send(join->fd, "j", 1, MSG_NOSIGNAL);
	close(join->fd);
	close(join->init_pidfd);
	if (r < 0)
		return r;
	r = drop_capabilities();
	if (r < 0)
		return sb_error(reterr, r, "cannot drop the capabilities: %s", strerror(-r));
	r = sb_ns_confine_beneath_root(true);
	if (r < 0)
		return sb_error(reterr, r,
				"cannot limit files, signals and abstract sockets to the sandbox "
				"(Landlock): %s",
				strerror(-r));
	return 0;
}

struct waiter {
	pid_t init, program;
	bool program_reaped;
	int program_status;
	int sfd;
};

/* As the timeout supervisor: a signal the terminal sent to the whole
 * foreground group reached the program already, unless it left the group. */
static bool terminal_reached_program(const struct waiter *w, const struct signalfd_siginfo *si)
{
	if (si->ssi_code != SI_KERNEL)
		return false;
	if (si->ssi_signo == SIGHUP && getsid(0) == getpid())
		return false;
	return getpgid(w->program) == getpgrp();
}

static int wait_program(struct waiter *w)
{
	for (;;) {
		struct pollfd pfd = {.fd = w->sfd, .events = POLLIN};
		struct signalfd_siginfo si;
		int status;
		pid_t pid;

		while ((pid = waitpid(-1, &status, WNOHANG | __WALL)) > 0)
			if (pid == w->program) {
				w->program_reaped = true;
				w->program_status = status;
			} else if (pid == w->init) {
				w->init = -1; /* the namespace is gone: so is the program, soon */
			}
		if (pid < 0 && errno != ECHILD && errno != EINTR)
			return -errno;
		if (w->program_reaped)
			return 0;
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return -errno;
		while (read(w->sfd, &si, sizeof(si)) == sizeof(si))
			if (si.ssi_signo != SIGCHLD && !terminal_reached_program(w, &si))
				kill(w->program, (int)si.ssi_signo);
	}
}

static int run_processes(const struct sb_ns_config *c, struct sb_netns_helper *helper,
			 int *ret_status, char **reterr)
{
	struct waiter w = {.init = -1, .program = -1, .sfd = -1};
	struct ns_join join = {.fd = -1,
			       .init_pidfd = -1,
			       .ns_flags = CLONE_NEWNS | (c->net->outside ? 0 : CLONE_NEWNET)};
	struct saved_signals saved;
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	int alive[2], join_pair[2] = {-1, -1}; /* [0] the program's end, [1] the init's */
	/* The program's process gets the launcher's memory, and the launcher
	 * becomes python-sb-supervise (supervise-exec.h), where it can: not
	 * with net= rules (the launcher then stops slirp4netns at the end). */
	const char *supervisor = c->net->outside ? NULL : c->supervisor_exe;
	sigset_t set;
	int r;

	/* What the caller passes on to the program, as python-sb-supervise. */
	sb_supervisor_sigset(&set, true);
	if (stat("/proc/self/ns/mnt", &join.host_mnt) < 0 ||
	    stat("/proc/self/ns/net", &join.host_net) < 0)
		return sb_error(reterr, -errno, "cannot read the namespaces: %s", strerror(errno));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, join_pair) < 0)
		return sb_error(reterr, -errno, "cannot create a socket pair: %s", strerror(errno));
	join.fd = join_pair[0];
	if (pipe2(alive, O_CLOEXEC) < 0) {
		r = sb_error(reterr, -errno, "cannot create a pipe: %s", strerror(errno));
		goto out_join;
	}
	/* Blocked before the forks: no signal is lost before the signalfd. */
	sigprocmask(SIG_BLOCK, &set, &saved.mask);
	sigaction(SIGCHLD, &dfl, &saved.chld);
	w.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (w.sfd < 0) {
		r = sb_error(reterr, -errno, "cannot create a signalfd: %s", strerror(errno));
		goto out;
	}

	/* The first child of the new PID namespace is its PID 1. */
	w.init = sb_pid_init_start(&(struct sb_init_args){.alive_fd = alive[0],
							  .join_fd = join_pair[1],
							  .ns_flags = join.ns_flags,
							  .exec_path = supervisor});
	if (w.init < 0) {
		r = sb_error(reterr, w.init, "cannot start the PID namespace's init: %s",
			     strerror(-w.init));
		w.init = -1;
		goto out;
	}
	/* An unreaped child: its pid cannot name another process. */
	join.init_pidfd = (int)syscall(SYS_pidfd_open, w.init, 0);
	if (join.init_pidfd < 0) {
		r = sb_error(reterr, -errno, "cannot open the init's pidfd: %s", strerror(errno));
		goto out;
	}
	/* The init's end only: its exit is then end-of-file. */
	close(join_pair[1]);
	join_pair[1] = -1;
	if (supervisor) {
		/* Returns in the program's process only, or fails with it
		 * gone; -EOPNOTSUPP: not here, before anything happened. */
		r = sb_supervise_exec(supervisor,
				      &(struct sb_supervise_exec_args){
					  .deadline_ns = UINT64_MAX,
					  .ns_init = w.init,
					  .keep_fd = alive[1],
				      },
				      reterr);
		if (r == 0) {
			close(alive[1]);
			close(w.sfd);
			return program_setup(c, &saved, alive[0], &join, reterr);
		}
		if (r != -EOPNOTSUPP)
			goto out;
	}
	w.program = fork();
	if (w.program < 0) {
		r = sb_error(reterr, -errno, "cannot start the sandbox's process: %s",
			     strerror(errno));
		goto out;
	}
	/* The program's end only: its exit lets the init go on. */
	if (w.program > 0) {
		close(join_pair[0]);
		join_pair[0] = -1;
	}
	if (w.program == 0) {
		close(alive[1]);
		close(w.sfd);
		sb_netns_helper_forget(helper);
		return program_setup(c, &saved, alive[0], &join, reterr);
	}
	close(alive[0]);
	alive[0] = -1;

	r = wait_program(&w);
	if (r < 0)
		r = sb_error(reterr, r, "cannot wait for the program: %s", strerror(-r));
out:
	if (w.program > 0 && !w.program_reaped) {
		int status;

		kill(w.program, SIGKILL);
		while (waitpid(w.program, &status, __WALL) < 0 && errno == EINTR)
			;
	}
	/* PID 1 gone, the kernel kills whatever the program left behind.
	 * Not waited for: the init's exit, not ours, then tears the namespaces
	 * down (it holds them too), and whoever waits for us does not wait for
	 * that. The orphan goes to our parent's reaper. */
	if (w.init > 0)
		kill(w.init, SIGKILL);
	if (alive[0] >= 0)
		close(alive[0]);
	close(alive[1]);
	if (w.sfd >= 0) {
		struct signalfd_siginfo si;

		/* Signals that came while the program ended are its, not ours. */
		while (read(w.sfd, &si, sizeof(si)) == sizeof(si))
			;
		close(w.sfd);
	}
	sigaction(SIGCHLD, &saved.chld, NULL);
	sigprocmask(SIG_SETMASK, &saved.mask, NULL);
out_join:
	for (size_t i = 0; i < ELEMENTSOF(join_pair); i++)
		if (join_pair[i] >= 0)
			close(join_pair[i]);
	if (join.init_pidfd >= 0)
		close(join.init_pidfd);
	if (r < 0)
		return r;
	*ret_status = w.program_status;
	return 1;
}

int sb_ns_run(const struct sb_ns_config *c, int *ret_status, char **reterr)
{
	struct sb_netns_helper helper = SB_NETNS_HELPER_NULL;
	struct sb_netns_tools tools = {0};
	int r;

	/* Every program the network needs is found before anything starts. */
	if (c->net->outside) {
		r = sb_netns_find_tools(c->net, &tools, reterr);
		if (r < 0)
			return r;
	}
	fflush(NULL);
	if (c->net->outside) {
		r = sb_netns_helper_fork(c->net, &tools, &helper, reterr);
		if (r < 0)
			goto out;
	}
	r = create_namespaces(c, reterr);
	/* The pivot moves the processes whose directory is the old root: the
	 * init's, made from ours when it makes the mount namespace. */
	if (r >= 0 && chdir("/") < 0)
		r = sb_error(reterr, -errno, "cannot enter /: %s", strerror(errno));
	/* Without net= rules the seccomp filter refuses every Internet socket:
	 * the loopback would serve nobody. */
	if (r >= 0 && c->net->outside)
		r = sb_netns_loopback_up(reterr);
	if (r >= 0 && c->net->outside)
		r = sb_netns_helper_start(&helper, getpid(), reterr);
	if (r >= 0)
		r = run_processes(c, &helper, ret_status, reterr);
	/* Still in the namespace, whose sockets outlive the program's processes
	 * (the kernel sends what they left, to slirp4netns). Not reaching the
	 * end is no error of the program's: what is left is lost as it would
	 * be on a network that broke. */
	if (r == 1 && c->net->outside) {
		_cleanup_close_ int diag_fd = sb_netns_diag_open();

		if (diag_fd >= 0)
			(void)sb_netns_drain(diag_fd, SB_NETNS_DRAIN_MS);
	}
	/* The program's process returns 0 with the helper forgotten; the
	 * caller stops the network once the program is gone. */
out:
	if (r != 0)
		sb_netns_helper_done(&helper, false);
	sb_netns_tools_done(&tools);
	return r;
}
