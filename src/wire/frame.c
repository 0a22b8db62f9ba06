/* SPDX-License-Identifier: MIT */
#include "frame.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

int sb_frame_write(int fd, char type, const void *data, size_t len)
{
	unsigned char hdr[SB_FRAME_HEADER];
	struct iovec iov[2];
	size_t total = SB_FRAME_HEADER + len, sent = 0;

	if (len > SB_FRAME_HARD_MAX)
		return -EMSGSIZE;
	hdr[0] = (unsigned char)(len & 0xff);
	hdr[1] = (unsigned char)((len >> 8) & 0xff);
	hdr[2] = (unsigned char)((len >> 16) & 0xff);
	hdr[3] = (unsigned char)((len >> 24) & 0xff);
	hdr[4] = (unsigned char)type;
	while (sent < total) {
		struct msghdr msg = {.msg_iov = iov};
		ssize_t n;

		if (sent < SB_FRAME_HEADER) {
			iov[0] = (struct iovec){hdr + sent, SB_FRAME_HEADER - sent};
			iov[1] = (struct iovec){(void *)data, len};
			msg.msg_iovlen = len ? 2 : 1;
		} else {
			iov[0] =
			    (struct iovec){(char *)data + (sent - SB_FRAME_HEADER), total - sent};
			msg.msg_iovlen = 1;
		}
		/* MSG_NOSIGNAL: a parent that went away is an error to report, not a
		 * SIGPIPE that kills the caller. */
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		sent += (size_t)n;
	}
	return 0;
}

int sb_read_exact(int fd, void *buf, size_t len, size_t *done, int timeout_ms)
{
	while (*done < len) {
		ssize_t n;

		/* Without a timeout, or with the socket's own receive timeout
		 * (SO_RCVTIMEO, timeout_ms == 0), a read alone: a round trip is a
		 * handful of system calls, each one counts. */
		if (timeout_ms > 0) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			int r = poll(&p, 1, timeout_ms);

			if (r < 0)
				return -errno;
			if (r == 0)
				return -ETIMEDOUT;
		}
		n = read(fd, (char *)buf + *done, len - *done);
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return errno == ECONNRESET ? -EPIPE : -errno;
			if (timeout_ms == 0)
				return -ETIMEDOUT;
			continue;
		}
		if (n == 0)
			return -EPIPE;
		*done += (size_t)n;
	}
	return 0;
}

void sb_frame_header_decode(const unsigned char hdr[SB_FRAME_HEADER], char *ret_type,
			    uint32_t *ret_len)
{
	*ret_len = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 |
		   (uint32_t)hdr[3] << 24;
	*ret_type = (char)hdr[4];
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int read_retrying(int fd, void *buf, size_t len, long long deadline)
{
	size_t done = 0;
	int r;

	for (;;) {
		long long left = deadline < 0 ? -1 : deadline - now_ms();

		if (deadline >= 0 && left < 0)
			return -ETIMEDOUT;
		/* Never 0 here: that would mean "the socket's timeout". */
		r = sb_read_exact(fd, buf, len, &done,
				  deadline < 0 ? -1
				  : left < 1   ? 1
					       : (int)left);
		if (r != -EINTR)
			return r;
	}
}

int sb_frame_read(int fd, char *ret_type, char **ret_data, size_t *ret_len, size_t max_len,
		  int timeout_ms)
{
	long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	unsigned char hdr[SB_FRAME_HEADER];
	uint32_t len;
	char *data;
	int r;

	r = read_retrying(fd, hdr, sizeof(hdr), deadline);
	if (r < 0)
		return r;
	sb_frame_header_decode(hdr, ret_type, &len);
	if (len > max_len || len > SB_FRAME_HARD_MAX)
		return -EMSGSIZE;
	data = malloc((size_t)len + 1);
	if (!data)
		return -ENOMEM;
	r = read_retrying(fd, data, len, deadline);
	if (r < 0) {
		free(data);
		return r;
	}
	data[len] = '\0';
	*ret_data = data;
	*ret_len = len;
	return 0;
}
