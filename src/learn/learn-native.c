/* SPDX-License-Identifier: MIT */
/* The native observer of learning mode (learn-native.h).
 *
 * The program's process installs the profile's seccomp allowlist with
 * SECCOMP_RET_USER_NOTIF where it would refuse, and on the file and socket
 * system calls whatever it says (seccomp-filter.h), and hands the listener
 * descriptor (SCM_RIGHTS) to a helper process forked earlier, which is not
 * under the filter: a notified call blocks until the helper answers, so the
 * helper must never wait for the program (it would wait for itself). The
 * helper reads the path or address from /proc/<pid>/mem, answers
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE, and keeps a record; a call no rule of any
 * profile allows (mount, ptrace...) is recorded and answered EPERM, as the
 * allowlist answers it without learning. At exit the program asks for the
 * records over the same socket.
 *
 * This is observation only. What the helper reads can change between its
 * read and the kernel's (another thread may rewrite the buffer: the classic
 * TOCTOU of user notification), which is why the answer is "continue" and
 * never a decision about a path: the Python guard and the kernel boundary of
 * a run without learning decide. seccomp_notify_id_valid() after the read
 * only makes sure the memory was the caller's while it was waiting. The
 * kernel allows one listener per process, so there is one filter: the
 * boundary's own filter is not loaded while the observer is armed. */
#include "learn-native.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "fd-pass.h"
#include "file-policy.h"
#include "learn-rules.h"
#include "net-rule.h"
#include "util.h"

/* Records kept by the helper at most: a program that opens more distinct
 * paths than this is not learning anything a reviewer could read. */
#define SB_NATIVE_MAX_RECORDS 65536

static struct {
	pid_t helper;
	int sock;
	struct sb_seccomp_policy policy;
} native = {.helper = -1, .sock = -1};

/* Notified whatever the allowlist says: their paths and addresses are what
 * the expose-*= and net= rules are learned from. */
static const char *const observed_calls[] = {"open",	"openat",  "openat2", "creat",
					     "mkdir",	"mkdirat", "execve",  "execveat",
					     "connect", "bind",	   "sendto",  NULL};

/* ---- the helper -------------------------------------------------------------- */

struct helper {
	int listener;
	char *const *skip_dirs;
	const struct sb_seccomp_policy *policy;
	char **records; /* "F" r|w path, "N" proto dir port ip, "S" or "P" syscall */
	size_t n;
	struct sb_learn_strset seen; /* the records, for a constant-time duplicate check */
};

/* A NUL-terminated string of the caller at addr, page by page (a read
 * stops at the first unmapped page). */
static bool read_string(int mem, uint64_t addr, char *buf, size_t size)
{
	size_t got = 0;

	if (!addr)
		return false;
	while (got < size - 1) {
		size_t room = 4096 - ((addr + got) % 4096);
		ssize_t n;

		if (room > size - 1 - got)
			room = size - 1 - got;
		n = pread(mem, buf + got, room, (off_t)(addr + got));
		if (n <= 0)
			return false;
		if (memchr(buf + got, '\0', (size_t)n))
			return true;
		got += (size_t)n;
	}
	return false; /* longer than PATH_MAX: the kernel refuses it anyway */
}

static bool read_bytes(int mem, uint64_t addr, void *buf, size_t size)
{
	return addr && pread(mem, buf, size, (off_t)addr) == (ssize_t)size;
}

/* The directory a relative path is relative to: the caller's cwd or dirfd. */
static bool base_dir(pid_t pid, int dirfd, char out[PATH_MAX])
{
	char link[64];
	ssize_t n;

	if (dirfd == AT_FDCWD)
		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	else
		snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)pid, dirfd);
	n = readlink(link, out, PATH_MAX - 1);
	if (n <= 0 || out[0] != '/')
		return false;
	out[n] = '\0';
	return true;
}

static void keep(struct helper *h, char *record)
{
	if (!record)
		return;
	/* keep() runs on every notified call, mostly with a record kept
	 * already: a set lookup, not a scan of up to 65,536 records. */
	if (h->n >= SB_NATIVE_MAX_RECORDS || sb_learn_strset_add(&h->seen, record) != 1) {
		free(record);
		return;
	}
	if (sb_strv_consume(&h->records, record) < 0)
		return;
	h->n++;
}

static char *file_record(struct helper *h, pid_t pid, int dirfd, const char *path, bool write)
{
	char base[PATH_MAX], resolved[PATH_MAX];
	char *rec;

	if (path[0] != '/' && !base_dir(pid, dirfd, base))
		return NULL;
	if (sb_path_resolve(path, path[0] == '/' ? "/" : base, true, resolved) < 0)
		return NULL;
	if (sb_path_under(resolved, "/proc") || sb_path_under(resolved, "/sys") ||
	    sb_path_under(resolved, "/dev"))
		return NULL;
	for (char *const *d = h->skip_dirs; d && *d; d++)
		if (sb_path_under(resolved, *d))
			return NULL;
	/* The call has not happened yet: a read or an exec of a file that is
	 * not there fails anyway (libc probing search paths, execvp trying each
	 * PATH entry), and needs no rule. */
	if (!write && access(resolved, F_OK) < 0)
		return NULL;
	if (asprintf(&rec, "F%c%s", write ? 'w' : 'r', resolved) < 0)
		return NULL;
	return rec;
}

static bool open_writes(uint64_t flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC | O_APPEND));
}

/* tcp or udp from the socket itself, through a copy of the descriptor;
 * tcp when it cannot be told. */
static unsigned socket_protocol(pid_t pid, int fd)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0), copy, type = 0;
	socklen_t len = sizeof(type);

	if (pidfd < 0)
		return SB_NET_TCP;
	copy = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	close(pidfd);
	if (copy < 0)
		return SB_NET_TCP;
	if (getsockopt(copy, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
		type = SOCK_STREAM;
	close(copy);
	return type == SOCK_DGRAM ? SB_NET_UDP : SB_NET_TCP;
#else
	(void)pid, (void)fd;
	return SB_NET_TCP;
#endif
}

static char *socket_record(struct helper *h, int mem, pid_t pid, int fd, uint64_t addr,
			   uint64_t len, unsigned direction)
{
	struct sockaddr_storage ss = {0};
	char ip[INET6_ADDRSTRLEN];
	uint16_t port;
	char *rec;

	if (len < sizeof(sa_family_t))
		return NULL;
	if (len > sizeof(ss))
		len = sizeof(ss);
	if (!read_bytes(mem, addr, &ss, (size_t)len))
		return NULL;
	if (ss.ss_family == AF_UNIX) {
		struct sockaddr_un *un = (struct sockaddr_un *)&ss;
		char path[sizeof(un->sun_path) + 1];
		size_t n = len - offsetof(struct sockaddr_un, sun_path);

		if (n == 0 || un->sun_path[0] == '\0') /* abstract: no file */
			return NULL;
		memcpy(path, un->sun_path, n < sizeof(un->sun_path) ? n : sizeof(un->sun_path));
		path[n < sizeof(un->sun_path) ? n : sizeof(un->sun_path)] = '\0';
		return file_record(h, pid, AT_FDCWD, path, true);
	}
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		port = ntohs(in->sin_port);
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		/* IPv4-mapped: the IPv4 rules judge it (spec §3.5). */
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
			inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], ip, sizeof(ip));
		else
			inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		port = ntohs(in6->sin6_port);
	} else {
		return NULL;
	}
	if (asprintf(&rec, "N%u %u %u %s", socket_protocol(pid, fd), direction, port, ip) < 0)
		return NULL;
	return rec;
}

/* The files a call outside the allowlist would change (it needs an
 * expose-rw rule): one or two (dirfd argument or -1 for the cwd, path
 * argument) pairs, or a descriptor argument. */
static const struct {
	const char *name;
	int dirfd[2], path[2]; /* path -1: none */
	int fd;		       /* -1: none */
} write_calls[] = {
    {"unlink", {-1, -1}, {0, -1}, -1},	    {"unlinkat", {0, -1}, {1, -1}, -1},
    {"rmdir", {-1, -1}, {0, -1}, -1},	    {"rename", {-1, -1}, {0, 1}, -1},
    {"renameat", {0, 2}, {1, 3}, -1},	    {"renameat2", {0, 2}, {1, 3}, -1},
    {"link", {-1, -1}, {1, -1}, -1},	    {"linkat", {2, -1}, {3, -1}, -1},
    {"symlink", {-1, -1}, {1, -1}, -1},	    {"symlinkat", {1, -1}, {2, -1}, -1},
    {"mknod", {-1, -1}, {0, -1}, -1},	    {"mknodat", {0, -1}, {1, -1}, -1},
    {"truncate", {-1, -1}, {0, -1}, -1},    {"chmod", {-1, -1}, {0, -1}, -1},
    {"fchmodat", {0, -1}, {1, -1}, -1},	    {"chown", {-1, -1}, {0, -1}, -1},
    {"lchown", {-1, -1}, {0, -1}, -1},	    {"fchownat", {0, -1}, {1, -1}, -1},
    {"utime", {-1, -1}, {0, -1}, -1},	    {"utimes", {-1, -1}, {0, -1}, -1},
    {"futimesat", {0, -1}, {1, -1}, -1},    {"utimensat", {0, -1}, {1, -1}, 0},
    {"setxattr", {-1, -1}, {0, -1}, -1},    {"lsetxattr", {-1, -1}, {0, -1}, -1},
    {"removexattr", {-1, -1}, {0, -1}, -1}, {"lremovexattr", {-1, -1}, {0, -1}, -1},
    {"fchmod", {-1, -1}, {-1, -1}, 0},	    {"fchown", {-1, -1}, {-1, -1}, 0},
    {"fsetxattr", {-1, -1}, {-1, -1}, 0},   {"fremovexattr", {-1, -1}, {-1, -1}, 0},
};

static void keep_write_targets(struct helper *h, int mem, const struct seccomp_notif *req,
			       const char *name, char **recs)
{
	const __u64 *a = req->data.args;
	char path[PATH_MAX];

	for (size_t i = 0; i < ELEMENTSOF(write_calls); i++) {
		if (!streq(write_calls[i].name, name))
			continue;
		for (int k = 0; k < 2 && write_calls[i].path[k] >= 0; k++) {
			int d = write_calls[i].dirfd[k];

			if (read_string(mem, a[write_calls[i].path[k]], path, sizeof(path)))
				recs[k] = file_record(h, req->pid, d < 0 ? AT_FDCWD : (int)a[d],
						      path, true);
		}
		/* fchmod(fd), utimensat(fd, NULL, ...): the descriptor's file. */
		if (!recs[0] && write_calls[i].fd >= 0 &&
		    base_dir(req->pid, (int)a[write_calls[i].fd], path))
			recs[0] = file_record(h, req->pid, AT_FDCWD, path, true);
		return;
	}
}

/* A call outside the profile's allowlist: the rule it needs, or EPERM. */
static void handle_refused(struct helper *h, int mem, struct seccomp_notif *req,
			   struct seccomp_notif_resp *resp, char **recs)
{
	const uint64_t args[6] = {req->data.args[0], req->data.args[1], req->data.args[2],
				  req->data.args[3], req->data.args[4], req->data.args[5]};
	_cleanup_free_ char *name =
	    seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, req->data.nr);
	const char *rule;

	switch (sb_seccomp_rule_for(req->data.nr, args, &rule)) {
	case SB_SECCOMP_NEED_NONE:
		if (asprintf(&recs[0], "S%s", name ? name : "?") < 0)
			recs[0] = NULL;
		resp->error = -EPERM;
		resp->flags = 0;
		return;
	case SB_SECCOMP_NEED_PROCESS:
		if (asprintf(&recs[0], "P%s", name ? name : "?") < 0)
			recs[0] = NULL;
		break;
	case SB_SECCOMP_NEED_WRITE:
		if (mem >= 0 && name)
			keep_write_targets(h, mem, req, name, recs);
		break;
	case SB_SECCOMP_NEED_NET:
	case SB_SECCOMP_NEED_UNIX:
		break; /* learned from its connect(), bind() or sendto() */
	}
}

static void handle(struct helper *h, struct seccomp_notif *req, struct seccomp_notif_resp *resp)
{
	const __u64 *a = req->data.args;
	int nr = req->data.nr;
	char mem_path[64], path[PATH_MAX];
	char *recs[3] = {NULL, NULL, NULL};
	char *rec = NULL;
	bool seen = false;
	int mem;

	for (const char *const *o = observed_calls; *o && !seen; o++)
		seen = seccomp_syscall_resolve_name(*o) == nr;
	resp->id = req->id;
	resp->val = 0;
	resp->error = 0;
	resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	snprintf(mem_path, sizeof(mem_path), "/proc/%d/mem", (int)req->pid);
	mem = open(mem_path, O_RDONLY | O_CLOEXEC);
	if (!seen) {
		handle_refused(h, mem, req, resp, recs);
	} else if (mem >= 0) {
		if (nr == SCMP_SYS(openat) && read_string(mem, a[1], path, sizeof(path)))
			rec = file_record(h, req->pid, (int)a[0], path, open_writes(a[2]));
		else if (nr == SCMP_SYS(open) && read_string(mem, a[0], path, sizeof(path)))
			rec = file_record(h, req->pid, AT_FDCWD, path, open_writes(a[1]));
		else if (nr == SCMP_SYS(creat) && read_string(mem, a[0], path, sizeof(path)))
			rec = file_record(h, req->pid, AT_FDCWD, path, true);
		else if (nr == SCMP_SYS(mkdir) && read_string(mem, a[0], path, sizeof(path)))
			rec = file_record(h, req->pid, AT_FDCWD, path, true);
		else if (nr == SCMP_SYS(mkdirat) && read_string(mem, a[1], path, sizeof(path)))
			rec = file_record(h, req->pid, (int)a[0], path, true);
		/* A program run by os.system() or subprocess: Landlock needs its
		 * directory readable (expose-ro grants execution too). */
		else if (nr == SCMP_SYS(execve) && read_string(mem, a[0], path, sizeof(path)))
			rec = file_record(h, req->pid, AT_FDCWD, path, false);
		else if (nr == SCMP_SYS(execveat) && read_string(mem, a[1], path, sizeof(path)))
			rec = file_record(h, req->pid, (int)a[0], path, false);
		else if (nr == SCMP_SYS(openat2) && read_string(mem, a[1], path, sizeof(path))) {
			struct open_how how = {0};

			if (read_bytes(mem, a[2], &how, sizeof(how.flags)))
				rec = file_record(h, req->pid, (int)a[0], path,
						  open_writes(how.flags));
		} else if (nr == SCMP_SYS(connect))
			rec = socket_record(h, mem, req->pid, (int)a[0], a[1], a[2], SB_NET_OUT);
		else if (nr == SCMP_SYS(bind))
			rec = socket_record(h, mem, req->pid, (int)a[0], a[1], a[2], SB_NET_IN);
		else if (nr == SCMP_SYS(sendto))
			rec = socket_record(h, mem, req->pid, (int)a[0], a[4], a[5], SB_NET_OUT);
	}
	if (mem >= 0)
		close(mem);
	recs[2] = rec;
	/* Running a program without the process grants: the rule is learned
	 * too (the file above is the program's directory). */
	if (seen && (nr == SCMP_SYS(execve) || nr == SCMP_SYS(execveat)) &&
	    !h->policy->allow_exec &&
	    asprintf(&recs[1], "P%s", nr == SCMP_SYS(execve) ? "execve" : "execveat") < 0)
		recs[1] = NULL;
	/* The memory read above belonged to this very call only if the call is
	 * still waiting for us. */
	if (seccomp_notify_id_valid(h->listener, req->id) != 0)
		for (int i = 0; i < 3; i++) {
			free(recs[i]);
			recs[i] = NULL;
		}
	/* ENOENT: the caller was interrupted meanwhile; nothing to answer. */
	(void)seccomp_notify_respond(h->listener, resp);
	for (int i = 0; i < 3; i++)
		keep(h, recs[i]);
}

static int send_all(int sock, const char *data, size_t n)
{
	while (n) {
		ssize_t w = send(sock, data, n, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		data += w;
		n -= (size_t)w;
	}
	return 0;
}

static void send_records(struct helper *h, int sock)
{
	for (size_t i = 0; i < h->n; i++)
		if (send_all(sock, h->records[i], strlen(h->records[i]) + 1) < 0)
			return;
	send_all(sock, "E", 2);
}

static _Noreturn void helper_main(int sock, char *const *skip_dirs,
				  const struct sb_seccomp_policy *policy)
{
	struct helper h = {.listener = -1, .skip_dirs = skip_dirs, .policy = policy};
	struct seccomp_notif *req = NULL;
	struct seccomp_notif_resp *resp = NULL;
	bool serving = true;

	/* The terminal's Ctrl-C and a group kill reach us too: the program must
	 * outlive its learning write, and it needs us until its last call. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	h.listener = sb_receive_fd(sock, 0);
	if (h.listener < 0 || seccomp_notify_alloc(&req, &resp) < 0)
		_exit(0);
	/* Serve until no process is under the filter any more (POLLHUP): if
	 * the helper left earlier, every notified call of a process still
	 * under it would fail with ENOSYS. The socket may close first (the
	 * program closed its descriptors, or exited before its children). */
	while (serving) {
		struct pollfd p[2] = {
		    {.fd = sock, .events = POLLIN},
		    {.fd = h.listener, .events = POLLIN},
		};
		char cmd;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents & POLLIN) {
			memset(req, 0, sizeof(*req));
			if (seccomp_notify_receive(h.listener, req) == 0)
				handle(&h, req, resp);
		} else if (p[1].revents & (POLLHUP | POLLERR | POLLNVAL)) {
			serving = false; /* every filtered process is gone */
		}
		if (sock >= 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t n = recv(sock, &cmd, 1, 0);

			if (n == 1 && cmd == 'D') {
				send_records(&h, sock);
			} else if (n == 0 || (n < 0 && errno != EINTR)) {
				close(sock);
				sock = -1;
			}
		}
	}
	sb_learn_strset_done(&h.seen);
	_exit(0);
}

/* ---- the program's side ------------------------------------------------------ */

int sb_learn_native_start(char *const *skip_dirs, const struct sb_seccomp_policy *policy,
			  char **reterr)
{
	pid_t pid;
	int sv[2];

	native.policy = *policy;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return sb_error(reterr, -errno, "socketpair: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		int r = -errno;

		close(sv[0]);
		close(sv[1]);
		return sb_error(reterr, r, "fork: %s", strerror(-r));
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

		/* The helper keeps nothing of the program's open: a caller
		 * waiting for the end of the program's output must not wait
		 * for the helper too. */
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 ||
		    dup2(devnull, 2) < 0 || dup2(sv[1], 3) < 0)
			_exit(0);
		close_range(4, ~0U, 0);
		helper_main(3, skip_dirs, &native.policy);
	}
	close(sv[1]);
	native.helper = pid;
	native.sock = sv[0];
	/* Under Yama's ptrace_scope=1 a child may not read its parent's memory
	 * unless named: no error when Yama is absent. */
	(void)prctl(PR_SET_PTRACER, (unsigned long)pid, 0, 0, 0);
	return 0;
}

int sb_learn_native_arm(char **reterr)
{
	_cleanup_free_ char *why = NULL;
	int r, fd = -1;

	if (native.sock < 0)
		return sb_error(reterr, -ENOTCONN, "the helper did not start");
	r = sb_seccomp_apply_notify(&native.policy, observed_calls, &fd, &why);
	if (r == -EPIPE)
		return sb_error(reterr, r, "%s", why ? why : "no listener");
	if (r < 0) {
		/* Nothing is installed: the helper has nothing to serve. */
		close(native.sock);
		native.sock = -1;
		waitpid(native.helper, NULL, 0);
		return sb_error(reterr, r, "cannot install the notifying filter: %s",
				why ? why : strerror(-r));
	}
	/* From here on, a notified call of ours waits for the helper: nothing
	 * but sendmsg() until it has the listener. Our copy is closed so that
	 * the helper's is the only one. */
	r = sb_send_fd(native.sock, fd);
	close(fd);
	/* The filter cannot be removed: without a listener every notified call
	 * fails (ENOSYS), so the program must not run. */
	if (r < 0)
		return sb_error(reterr, -EPIPE, "cannot hand the listener to the helper: %s",
				strerror(-r));
	return 0;
}

int sb_learn_native_collect(const struct sb_learn_native_sink *sink)
{
	struct sb_buf b = {0};
	char chunk[8192];
	bool end = false;
	int r = 0;

	if (native.sock < 0)
		return -ENOTCONN;
	if (send(native.sock, "D", 1, MSG_NOSIGNAL) != 1)
		return -errno;
	while (!end) {
		ssize_t n = recv(native.sock, chunk, sizeof(chunk), 0);
		size_t start = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EPIPE;
			break;
		}
		if (sb_buf_putn(&b, chunk, (size_t)n) < 0) {
			r = -ENOMEM;
			break;
		}
		/* Whole records only; the tail waits for the next chunk. */
		for (size_t i = 0; i < b.len; i++) {
			const char *rec = b.data + start;
			unsigned protocol, direction, port;
			char ip[INET6_ADDRSTRLEN];

			if (b.data[i] != '\0')
				continue;
			if (rec[0] == 'E') {
				end = true;
			} else if (rec[0] == 'F' && rec[1] && rec[2] == '/') {
				sink->file(rec + 2, rec[1] == 'w', sink->userdata);
			} else if ((rec[0] == 'S' || rec[0] == 'P') && rec[1] && sink->syscall) {
				sink->syscall(rec + 1,
					      rec[0] == 'P' ? SB_SECCOMP_NEED_PROCESS
							    : SB_SECCOMP_NEED_NONE,
					      sink->userdata);
			} else if (rec[0] == 'N' &&
				   sscanf(rec + 1, "%u %u %u %45s", &protocol, &direction, &port,
					  ip) == 4 &&
				   port < 65536) {
				sink->net(ip, protocol, (uint16_t)port, direction, sink->userdata);
			}
			start = i + 1;
		}
		memmove(b.data, b.data + start, b.len - start);
		b.len -= start;
	}
	sb_buf_reset(&b);
	return r;
}
