/* SPDX-License-Identifier: MIT */
/* The wait for a sandbox's connections to hand their last bytes to
 * slirp4netns before it stops (netns.h). */
#include "netns.h"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>

#include "util.h"

/* States in which a socket may still have bytes or its end of stream
 * unacknowledged by the peer (slirp4netns), or a process that can add
 * some: FIN_WAIT2 and TIME_WAIT come only once the peer acknowledged
 * everything. */
#define UNFINISHED_STATES                                                                          \
	((1U << TCP_SYN_SENT) | (1U << TCP_ESTABLISHED) | (1U << TCP_CLOSE_WAIT) |                 \
	 (1U << TCP_FIN_WAIT1) | (1U << TCP_CLOSING) | (1U << TCP_LAST_ACK))

/* How many TCP sockets of family are in UNFINISHED_STATES: >= 0, or -errno. */
static int count_unfinished(int fd, unsigned char family)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} request = {
	    .nlh = {.nlmsg_len = sizeof(request),
		    .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		    .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
	    .req = {.sdiag_family = family,
		    .sdiag_protocol = IPPROTO_TCP,
		    .idiag_states = UNFINISHED_STATES},
	};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	/* Aligned for the nlmsghdr that the reply starts with. */
	union {
		struct nlmsghdr align;
		char bytes[16384];
	} buf;
	int count = 0;

	if (sendto(fd, &request, sizeof(request), 0, (struct sockaddr *)&kernel, sizeof(kernel)) <
	    0)
		return -errno;
	for (;;) {
		ssize_t n = recv(fd, buf.bytes, sizeof(buf.bytes), 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPROTO;
		for (struct nlmsghdr *h = &buf.align; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return count;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				return h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)) || e->error >= 0
					   ? -EPROTO
					   : e->error;
			}
			if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY)
				count++;
		}
	}
}

int sb_netns_diag_open(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	return fd < 0 ? -errno : fd;
}

int sb_netns_drain(int diag_fd, uint64_t timeout_ms)
{
	uint64_t deadline = sb_monotonic_ms() + timeout_ms;

	for (;;) {
		int v4 = count_unfinished(diag_fd, AF_INET);
		int v6 = v4 < 0 ? v4 : count_unfinished(diag_fd, AF_INET6);

		/* No IPv6 in the namespace's kernel: none of its sockets. */
		if (v6 == -ENOENT || v6 == -EAFNOSUPPORT)
			v6 = 0;
		if (v4 < 0 || v6 < 0)
			return v4 < 0 ? v4 : v6;
		if (v4 + v6 == 0)
			return 0;
		if (sb_monotonic_ms() >= deadline)
			return -ETIMEDOUT;
		/* slirp4netns acknowledges as fast as it reads tap0. */
		nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
	}
}
