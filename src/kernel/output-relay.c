/* SPDX-License-Identifier: MIT */
/* limit-output= (output-relay.h). The supervisor copies the program's output
 * in chunks of at most PIPE_BUF bytes, each after poll() said the caller's
 * descriptor is writable: such a write to a pipe never blocks, so a reader
 * that stops reading cannot stall the supervisor past the timeout. The
 * caller's descriptors are never made non-blocking (their flags are shared
 * with whoever else holds them). */
#include "output-relay.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>

#include "util.h"

static bool same_file(int a, int b)
{
	struct stat x, y;

	return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino;
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

int sb_relay_open(struct sb_relay *r, unsigned long long limit, char **reterr)
{
	const bool both = is_open(1) && is_open(2) && same_file(1, 2);

	*r = (struct sb_relay){.limit = limit};
	for (int fd = 1; fd <= 2; fd++) {
		struct sb_relay_stream *s = &r->s[r->n];
		int p[2];

		if (!is_open(fd) || (both && fd == 2))
			continue;
		if (pipe2(p, O_CLOEXEC) < 0) {
			int e = -errno;

			sb_relay_close(r);
			return sb_error(reterr, e, "limit-output: cannot create a pipe: %s",
					strerror(-e));
		}
		*s = (struct sb_relay_stream){
		    .from = p[0], .to = fd, .child_fd = p[1], .both = both};
		r->n++;
	}
	return 0;
}

int sb_relay_child(struct sb_relay *r)
{
	for (size_t i = 0; i < r->n; i++) {
		struct sb_relay_stream *s = &r->s[i];

		/* dup2() clears close-on-exec: the program's children write
		 * into the same pipe, and count. */
		if (dup2(s->child_fd, s->to) < 0 || (s->both && dup2(s->child_fd, 2) < 0))
			return -errno;
		close(s->child_fd);
		close(s->from);
		s->child_fd = s->from = -1;
	}
	return 0;
}

void sb_relay_parent(struct sb_relay *r)
{
	for (size_t i = 0; i < r->n; i++) {
		close(r->s[i].child_fd);
		r->s[i].child_fd = -1;
		(void)fcntl(r->s[i].from, F_SETFL, O_NONBLOCK);
	}
}

size_t sb_relay_pollfds(const struct sb_relay *r, struct pollfd *fds)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n; i++) {
		const struct sb_relay_stream *s = &r->s[i];

		if (s->len > 0)
			fds[n++] = (struct pollfd){.fd = s->to, .events = POLLOUT};
		else if (s->from >= 0 && !r->exceeded)
			fds[n++] = (struct pollfd){.fd = s->from, .events = POLLIN};
	}
	return n;
}

static void stop_reading(struct sb_relay_stream *s)
{
	if (s->from >= 0)
		close(s->from);
	s->from = -1;
}

static void read_stream(struct sb_relay *r, struct sb_relay_stream *s)
{
	ssize_t n = read(s->from, s->buf, sizeof(s->buf));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		stop_reading(s); /* end of file: every writer is gone */
		return;
	}
	s->off = 0;
	s->len = (size_t)n;
	if (r->limit && r->total + (unsigned long long)n > r->limit) {
		s->len = (size_t)(r->limit - r->total);
		r->exceeded = true;
	}
	r->total += s->len;
	s->bytes += s->len;
}

static void write_stream(struct sb_relay_stream *s)
{
	size_t chunk = s->len < PIPE_BUF ? s->len : PIPE_BUF;
	ssize_t n = write(s->to, s->buf + s->off, chunk);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		/* The caller's reader is gone (EPIPE): the program learns it as
		 * it would have, from its own next write. */
		s->len = 0;
		stop_reading(s);
		return;
	}
	s->off += (size_t)n;
	s->len -= (size_t)n;
}

int sb_relay_service(struct sb_relay *r, const struct pollfd *fds, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (!fds[k].revents)
			continue;
		for (size_t i = 0; i < r->n; i++) {
			struct sb_relay_stream *s = &r->s[i];

			if (fds[k].events == POLLIN && fds[k].fd == s->from)
				read_stream(r, s);
			else if (fds[k].events == POLLOUT && fds[k].fd == s->to && s->len > 0)
				write_stream(s);
		}
	}
	return 0;
}

void sb_relay_flush(struct sb_relay *r, uint64_t deadline_ns)
{
	for (;;) {
		struct pollfd fds[4];
		size_t n = sb_relay_pollfds(r, fds);
		uint64_t now = sb_monotonic_ns();
		int timeout;

		if (n == 0 || now >= deadline_ns)
			break;
		timeout = deadline_ns == UINT64_MAX ? -1
			  : deadline_ns - now > 1000000000ULL * 60
			      ? 60000
			      : (int)((deadline_ns - now) / 1000000);
		if (poll(fds, n, timeout) < 0 && errno != EINTR)
			break;
		sb_relay_service(r, fds, n);
	}
}

void sb_relay_close(struct sb_relay *r)
{
	for (size_t i = 0; i < r->n; i++) {
		stop_reading(&r->s[i]);
		if (r->s[i].child_fd >= 0)
			close(r->s[i].child_fd);
		r->s[i].child_fd = -1;
	}
	r->n = 0;
}
