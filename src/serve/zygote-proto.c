/* SPDX-License-Identifier: MIT */
/* zygote-proto.h. The decoders check every length against what is left of
 * the datagram before reading, and refuse trailing bytes, NULs inside
 * strings and unknown types. */
#include "zygote-proto.h"

#include <endian.h>
#include <sys/socket.h>

#include "util.h"

#define MAGIC	    0x7a79 /* "zy" */
#define HEADER_SIZE 8
/* Longest string field (a path: the run's directory). */
#define STR_MAX 4096

struct writer {
	uint8_t *buf;
	size_t len, cap;
	int error;
};

static void put(struct writer *w, const void *data, size_t n)
{
	if (w->error)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		uint8_t *b;

		while (cap < w->len + n)
			cap *= 2;
		b = realloc(w->buf, cap);
		if (!b) {
			w->error = -ENOMEM;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, data, n);
	w->len += n;
}

static void put_u32(struct writer *w, uint32_t v)
{
	v = htole32(v);
	put(w, &v, sizeof(v));
}

static void put_u64(struct writer *w, uint64_t v)
{
	v = htole64(v);
	put(w, &v, sizeof(v));
}

static void put_str(struct writer *w, const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;

	if (n > max) {
		w->error = w->error ? w->error : -EINVAL;
		return;
	}
	put_u32(w, (uint32_t)n);
	put(w, s, n);
}

struct reader {
	const uint8_t *p;
	size_t left;
	bool bad;
};

static const uint8_t *take(struct reader *r, size_t n)
{
	const uint8_t *p = r->p;

	if (r->bad || n > r->left) {
		r->bad = true;
		return NULL;
	}
	r->p += n;
	r->left -= n;
	return p;
}

static uint32_t get_u32(struct reader *r)
{
	const uint8_t *p = take(r, sizeof(uint32_t));
	uint32_t v;

	if (!p)
		return 0;
	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t get_u64(struct reader *r)
{
	const uint8_t *p = take(r, sizeof(uint64_t));
	uint64_t v;

	if (!p)
		return 0;
	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/* A string of at most max bytes, none of them NUL; NULL when it is not
 * (r->bad) or out of memory (*oom). */
static char *get_str(struct reader *r, size_t max, bool *oom)
{
	uint32_t n = get_u32(r);
	const uint8_t *p;
	char *s;

	if (r->bad || n > max) {
		r->bad = true;
		return NULL;
	}
	p = take(r, n);
	if (!p || memchr(p, '\0', n)) {
		r->bad = true;
		return NULL;
	}
	s = strndup((const char *)p, n);
	if (!s)
		*oom = true;
	return s;
}

void sb_zmsg_done(struct sb_zmsg *m)
{
	switch (m->type) {
	case SB_ZMSG_READY:
		free(m->ready.provider);
		break;
	case SB_ZMSG_RUN:
		free(m->run.rundir);
		break;
	case SB_ZMSG_FAILED:
		free(m->failed.message);
		break;
	default:
		break;
	}
	*m = (struct sb_zmsg){0};
}

size_t sb_zmsg_n_fds(enum sb_zmsg_type type)
{
	return type == SB_ZMSG_RUN ? SB_ZRUN_N_FDS : 0;
}

int sb_zmsg_encode(const struct sb_zmsg *m, uint8_t **ret, size_t *ret_len)
{
	struct writer w = {0};
	const uint8_t header[4] = {MAGIC & 0xff, MAGIC >> 8, SB_ZPROTO_VERSION, (uint8_t)m->type};

	put(&w, header, sizeof(header));
	put_u32(&w, 0); /* the payload's length, below */
	switch (m->type) {
	case SB_ZMSG_READY:
		put_u32(&w, m->ready.pid);
		put_u32(&w, m->ready.modules);
		put_u64(&w, m->ready.warm_ns);
		put_u64(&w, m->ready.rss_kb);
		put_str(&w, m->ready.provider, 64);
		break;
	case SB_ZMSG_RUN:
		put_u64(&w, m->run.id);
		put_u64(&w, m->run.timeout_ms);
		put_u64(&w, m->run.cpu_ms);
		put_u64(&w, m->run.memory_bytes);
		put_str(&w, m->run.rundir, STR_MAX);
		break;
	case SB_ZMSG_KILL:
		put_u32(&w, m->kill.reason);
		break;
	case SB_ZMSG_FAILED:
		put_str(&w, m->failed.message, STR_MAX);
		break;
	case SB_ZMSG_DONE:
		put_u64(&w, m->done.id);
		put_u32(&w, (uint32_t)m->done.status);
		put_u32(&w, m->done.killed);
		put_u64(&w, m->done.wall_ns);
		put_u64(&w, m->done.utime_us);
		put_u64(&w, m->done.stime_us);
		put_u64(&w, m->done.maxrss_kb);
		break;
	default:
		w.error = -EINVAL;
	}
	if (!w.error && w.len > SB_ZMSG_MAX)
		w.error = -EINVAL;
	if (w.error) {
		free(w.buf);
		return w.error;
	}
	{
		uint32_t payload = htole32((uint32_t)(w.len - HEADER_SIZE));

		memcpy(w.buf + 4, &payload, sizeof(payload));
	}
	*ret = w.buf;
	*ret_len = w.len;
	return 0;
}

int sb_zmsg_decode(const uint8_t *data, size_t len, struct sb_zmsg *ret)
{
	struct reader r = {.p = data, .left = len};
	struct sb_zmsg m = {0};
	const uint8_t *h = take(&r, 4);
	uint32_t payload = get_u32(&r);
	bool oom = false;

	*ret = (struct sb_zmsg){0};
	if (r.bad || len > SB_ZMSG_MAX || (h[0] | h[1] << 8) != MAGIC ||
	    h[2] != SB_ZPROTO_VERSION || payload != r.left)
		return -EBADMSG;
	m.type = (enum sb_zmsg_type)h[3];
	switch (m.type) {
	case SB_ZMSG_READY:
		m.ready.pid = get_u32(&r);
		m.ready.modules = get_u32(&r);
		m.ready.warm_ns = get_u64(&r);
		m.ready.rss_kb = get_u64(&r);
		m.ready.provider = get_str(&r, 64, &oom);
		break;
	case SB_ZMSG_RUN:
		m.run.id = get_u64(&r);
		m.run.timeout_ms = get_u64(&r);
		m.run.cpu_ms = get_u64(&r);
		m.run.memory_bytes = get_u64(&r);
		m.run.rundir = get_str(&r, STR_MAX, &oom);
		/* A run's directory is absolute: the child changes to it. */
		if (m.run.rundir && m.run.rundir[0] != '/')
			r.bad = true;
		break;
	case SB_ZMSG_KILL:
		m.kill.reason = get_u32(&r);
		if (m.kill.reason > SB_ZKILL_GONE)
			r.bad = true;
		break;
	case SB_ZMSG_FAILED:
		m.failed.message = get_str(&r, STR_MAX, &oom);
		break;
	case SB_ZMSG_DONE:
		m.done.id = get_u64(&r);
		m.done.status = (int32_t)get_u32(&r);
		m.done.killed = get_u32(&r);
		m.done.wall_ns = get_u64(&r);
		m.done.utime_us = get_u64(&r);
		m.done.stime_us = get_u64(&r);
		m.done.maxrss_kb = get_u64(&r);
		if (m.done.killed > SB_ZKILL_GONE)
			r.bad = true;
		break;
	default:
		r.bad = true;
		m.type = 0;
	}
	if (r.bad || oom || r.left != 0) {
		sb_zmsg_done(&m);
		return oom && !r.bad ? -ENOMEM : -EBADMSG;
	}
	*ret = m;
	return 0;
}

int sb_zargs_encode(char *const *args, uint8_t **ret, size_t *ret_len)
{
	struct writer w = {0};
	size_t n = sb_strv_length((char **)args);

	if (n > SB_ZARGS_MAX_N)
		return -EINVAL;
	put_u32(&w, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		put_str(&w, args[i], SB_ZARGS_MAX_SIZE);
	if (!w.error && w.len > SB_ZARGS_MAX_SIZE)
		w.error = -EINVAL;
	if (w.error) {
		free(w.buf);
		return w.error;
	}
	*ret = w.buf;
	*ret_len = w.len;
	return 0;
}

int sb_zargs_decode(const uint8_t *data, size_t len, char ***ret)
{
	struct reader r = {.p = data, .left = len};
	uint32_t n = get_u32(&r);
	char **v;
	bool oom = false;

	if (r.bad || len > SB_ZARGS_MAX_SIZE || n > SB_ZARGS_MAX_N || n > r.left / sizeof(uint32_t))
		return -EBADMSG;
	v = calloc((size_t)n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < n && !r.bad && !oom; i++)
		v[i] = get_str(&r, SB_ZARGS_MAX_SIZE, &oom);
	if (r.bad || oom || r.left != 0) {
		sb_strv_free(v);
		return oom && !r.bad ? -ENOMEM : -EBADMSG;
	}
	*ret = v;
	return 0;
}

int sb_zmsg_send(int sock, const struct sb_zmsg *m, const int *fds, size_t n_fds)
{
	_cleanup_free_ uint8_t *buf = NULL;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * SB_ZRUN_N_FDS)];
	} control;
	struct iovec iov;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	size_t len;
	int r;

	if (n_fds != sb_zmsg_n_fds(m->type) || n_fds > SB_ZRUN_N_FDS)
		return -EINVAL;
	r = sb_zmsg_encode(m, &buf, &len);
	if (r < 0)
		return r;
	iov = (struct iovec){.iov_base = buf, .iov_len = len};
	if (n_fds > 0) {
		struct cmsghdr *c;

		memset(&control, 0, sizeof(control));
		msg.msg_control = control.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	for (;;) {
		ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);

		if (n == (ssize_t)len)
			return 0;
		if (n >= 0)
			return -EIO; /* a datagram goes whole or not at all */
		if (errno != EINTR)
			return -errno;
	}
}

static void close_received(struct msghdr *msg)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			close(fd);
		}
	}
}

int sb_zmsg_recv(int sock, struct sb_zmsg *ret, int fds[SB_ZRUN_N_FDS])
{
	uint8_t buf[SB_ZMSG_MAX];
	union {
		struct cmsghdr align;
		/* Room for more than a message may carry: what comes beyond
		 * is closed, not truncated away (MSG_CTRUNC would leak it). */
		char buf[CMSG_SPACE(sizeof(int) * (SB_ZRUN_N_FDS + 4))];
	} control;
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr msg = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = control.buf,
	    .msg_controllen = sizeof(control.buf),
	};
	size_t n_fds = 0;
	ssize_t n;
	int r;

	for (int i = 0; i < SB_ZRUN_N_FDS; i++)
		fds[i] = -1;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0 && msg.msg_controllen == 0)
		return -ECONNRESET;
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		close_received(&msg);
		return -EBADMSG;
	}
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    n_fds > 0) { /* one set of descriptors per message */
			close_received(&msg);
			return -EBADMSG;
		}
		n_fds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	}
	r = sb_zmsg_decode(buf, (size_t)n, ret);
	if (r < 0 || n_fds != sb_zmsg_n_fds(ret->type)) {
		close_received(&msg);
		if (r >= 0)
			sb_zmsg_done(ret);
		return r < 0 ? r : -EBADMSG;
	}
	if (n_fds > 0)
		memcpy(fds, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int) * n_fds);
	return 0;
}
