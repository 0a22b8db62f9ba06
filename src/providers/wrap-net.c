/* SPDX-License-Identifier: MIT */
/* A wrapper's network namespace set up from outside (wrap-net.h). */
#include "wrap-net.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "net-policy.h"

bool sb_wrap_net_wanted(const struct sb_profile *p)
{
	for (size_t i = 0; i < p->n_nets; i++)
		if (p->nets[i].action == SB_NET_ALLOW)
			return true;
	return false;
}

static int set_cloexec(int fd, bool on)
{
	int flags = fcntl(fd, F_GETFD);

	if (flags < 0 || fcntl(fd, F_SETFD, on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC) < 0)
		return -errno;
	return 0;
}

/* A pipe the tool writes to. */
static int tool_pipe(int *ret_ours, int *ret_tools)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	*ret_ours = fds[0];
	*ret_tools = fds[1];
	return set_cloexec(fds[1], false);
}

static int ready_pair(int *ret_ours, int *ret_inner)
{
	int fds[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
		return -errno;
	*ret_ours = fds[0];
	*ret_inner = fds[1];
	return set_cloexec(fds[1], false);
}

static int hosts_memfd(const char *text)
{
	size_t len = strlen(text);
	int fd = memfd_create("python-sb-hosts", 0);

	if (fd < 0)
		return -errno;
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int r = n < 0 ? -errno : -EIO;

			close(fd);
			return r;
		}
		done += (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

int sb_wrap_net_prepare(const struct sb_profile *p, bool symbolic, struct sb_wrap_net *ret,
			char **reterr)
{
	_cleanup_(sb_net_policy_freep) struct sb_net_policy *pins = NULL;
	/* What resolves to nothing: the inner python-sb's guard says it
	 * again, with the rule, when it pins the same names. */
	_cleanup_strv_free_ char **warnings = NULL;
	struct sb_wrap_net n = SB_WRAP_NET_NULL;
	int r = 0;

	if (!symbolic)
		r = sb_net_policy_build(p->nets, p->n_nets, NULL, &pins, &warnings, reterr);
	if (r >= 0)
		r = sb_netns_plan_build(p->nets, p->n_nets, pins, &n.plan);
	if (r >= 0)
		r = sb_netns_find_tools(&n.plan, &n.tools, reterr);
	if (r >= 0)
		r = tool_pipe(&n.info_read, &n.info_write);
	if (r >= 0)
		r = ready_pair(&n.ready_ours, &n.ready_inner);
	if (r >= 0) {
		n.hosts_fd = hosts_memfd(n.plan.hosts);
		r = n.hosts_fd < 0 ? n.hosts_fd : 0;
	}
	if (r < 0) {
		sb_wrap_net_done(&n);
		return *reterr ? r
			       : sb_error(reterr, r, "cannot prepare the sandbox's network: %s",
					  strerror(-r));
	}
	*ret = n;
	return 0;
}

void sb_wrap_net_spawned(struct sb_wrap_net *n)
{
	sb_closep(&n->info_write);
	sb_closep(&n->ready_inner);
	sb_closep(&n->hosts_fd);
}

/* bwrap's --info-fd text: a JSON object whose first member is
 * "child-pid": N (the tool's first process, in the host's PID namespace). */
static int read_child_pid(int fd, pid_t *ret)
{
	char buf[1024];
	size_t len = 0;
	const char *key;
	char *end;
	long pid;

	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == sizeof(buf) - 1)
			break;
	}
	buf[len] = '\0';
	key = strstr(buf, "\"child-pid\":");
	if (!key)
		return -EPROTO;
	errno = 0;
	pid = strtol(key + strlen("\"child-pid\":"), &end, 10);
	if (errno || end == key || pid <= 0 || pid > INT_MAX)
		return -EPROTO;
	*ret = (pid_t)pid;
	return 0;
}

int sb_wrap_net_read_pid(struct sb_wrap_net *n, pid_t *ret, char **reterr)
{
	int r = read_child_pid(n->info_read, ret);

	sb_closep(&n->info_read);
	if (r < 0)
		return sb_error(reterr, r,
				"the tool ended before its sandbox was made (it did not tell "
				"the pid of its first process)");
	return 0;
}

int sb_wrap_net_start(struct sb_wrap_net *n, pid_t pid, char **reterr)
{
	ssize_t got;
	char c;
	int r;

	/* The inner python-sb's word that it started; end-of-file: it never
	 * did (the tool failed), nothing runs in the namespace. */
	while ((got = read(n->ready_ours, &c, 1)) < 0 && errno == EINTR)
		;
	if (got != 1)
		return 0;
	r = sb_netns_start(&n->plan, &n->tools, pid, &n->running, reterr);
	if (r < 0)
		return r;
	/* The network is up and filtered: the inner python-sb may go on. One
	 * already gone (it stopped on an error of its own) is no error here:
	 * it reports its status. */
	(void)send(n->ready_ours, "1", 1, MSG_NOSIGNAL);
	sb_closep(&n->ready_ours);
	return 0;
}

void sb_wrap_net_done(struct sb_wrap_net *n)
{
	/* The tool has ended, python-sb is about to: not waited for. */
	sb_netns_release(&n->running);
	sb_closep(&n->info_read);
	sb_closep(&n->info_write);
	sb_closep(&n->ready_inner);
	sb_closep(&n->ready_ours);
	sb_closep(&n->hosts_fd);
	sb_netns_plan_done(&n->plan);
	sb_netns_tools_done(&n->tools);
}
