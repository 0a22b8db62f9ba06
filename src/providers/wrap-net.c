/* SPDX-License-Identifier: MIT */
/* A wrapper's network namespace set up from outside (wrap-net.h). */
#include "wrap-net.h"

#include <fcntl.h>
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

/* The socket pair: ours receives the inner python-sb's credentials (its pid
 * as this process sees it, whatever PID namespace it is in); the other end is
 * inherited through the tool. */
static int ready_pair(int *ret_ours, int *ret_inner)
{
	int fds[2], on = 1;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
		return -errno;
	*ret_ours = fds[0];
	*ret_inner = fds[1];
	if (setsockopt(fds[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) < 0 ||
	    fcntl(fds[1], F_SETFD, 0) < 0)
		return -errno;
	return 0;
}

/* The tool opens it by number: inherited. */
static int hosts_memfd(const char *text)
{
	int fd = sb_memfd_with("python-sb-hosts", text, strlen(text));

	if (fd >= 0 && fcntl(fd, F_SETFD, 0) < 0) {
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
	sb_closep(&n->ready_inner);
	sb_closep(&n->hosts_fd);
}

/* The inner python-sb's word that it started, with its pid: the kernel
 * attaches the sender's credentials (SO_PASSCRED), its pid translated into
 * our PID namespace. 0 with *ret; 0 with *ret = 0 when the other end closed
 * without a word; -errno. */
static int receive_start(int fd, pid_t *ret)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} control;
	char c;
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	struct msghdr msg = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = control.buf,
	    .msg_controllen = sizeof(control.buf),
	};
	ssize_t n;

	*ret = 0;
	while ((n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_CREDENTIALS) {
			struct ucred cred;

			memcpy(&cred, CMSG_DATA(cm), sizeof(cred));
			*ret = cred.pid;
		}
	return *ret > 0 ? 0 : -EPROTO;
}

int sb_wrap_net_start(struct sb_wrap_net *n, char **reterr)
{
	pid_t pid;
	int r;

	r = receive_start(n->ready_ours, &pid);
	if (r < 0)
		return sb_error(reterr, r, "cannot hear from python-sb inside the sandbox: %s",
				strerror(-r));
	/* It never started (the tool failed): nothing runs in the namespace,
	 * the tool's status says why. */
	if (pid == 0)
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
	sb_closep(&n->ready_inner);
	sb_closep(&n->ready_ours);
	sb_closep(&n->hosts_fd);
	sb_netns_plan_done(&n->plan);
	sb_netns_tools_done(&n->tools);
}
