/* SPDX-License-Identifier: MIT */
/* The partial-mode transport (src/wire/frame.c) as both sides read it, over
 * real descriptors. The first byte says what the rest is:
 *  - 0: bytes the parent sent, read by the worker's sb_frame_read() until the
 *    stream ends (a pipe, as the worker reads its socket: the whole stream is
 *    there, then the end); every result is compared with a reference decoder
 *    of the same bytes: frames, -EMSGSIZE over the reader's limit, -EPIPE on a
 *    cut frame or at the end;
 *  - 1: bytes the worker sent, read as the parent's reply loop reads them
 *    (core.c's read_reply(): sb_read_exact() with the socket's own receive
 *    timeout, sb_frame_header_decode(), a malformed length drops the worker,
 *    a reply over the limit is read and thrown away, output is relayed);
 *  - 2: a list of frames (type, length) that sb_frame_write() sends: the bytes
 *    on the wire must be the reference encoding, and sb_frame_read() must give
 *    the same frames back, for payloads larger than the socket's buffer too.
 * The second byte chooses the reader's limit and timeout. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame.h"
#include "fuzz.h"
#include "util.h"

#define MAX_STREAM 60000 /* below a pipe's and a socket's buffer: written at once */

static const size_t limits[] = {0, 1, 5, 64, 1u << 16, 1u << 20, SB_FRAME_HARD_MAX};

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void write_all(int fd, const uint8_t *data, size_t size)
{
	while (size) {
		ssize_t n = write(fd, data, size);

		FUZZ_ASSERT(n > 0, "write: %s", strerror(errno));
		data += n;
		size -= (size_t)n;
	}
}

/* sb_read_exact() returns -EINTR on a signal (libFuzzer's timer sends
 * some), keeping its progress: its callers call again, as core.c does. */
static int read_exact(int fd, void *buf, size_t len, size_t *done, int timeout_ms)
{
	int r;

	while ((r = sb_read_exact(fd, buf, len, done, timeout_ms)) == -EINTR)
		;
	return r;
}

static void worker_side(const uint8_t *data, size_t size, size_t max_len, int timeout_ms)
{
	int p[2];
	size_t pos = 0;

	if (size > MAX_STREAM || pipe2(p, O_CLOEXEC) < 0)
		return;
	write_all(p[1], data, size);
	close(p[1]);
	for (;;) {
		char type = 0, *payload = NULL;
		size_t len = 0, left = size - pos;
		int r = sb_frame_read(p[0], &type, &payload, &len, max_len, timeout_ms);
		uint32_t want_len;

		if (left < SB_FRAME_HEADER) {
			FUZZ_ASSERT(r == -EPIPE, "%zu bytes left: r=%d, not -EPIPE", left, r);
			break;
		}
		want_len = le32(data + pos);
		if (want_len > max_len || want_len > SB_FRAME_HARD_MAX) {
			FUZZ_ASSERT(r == -EMSGSIZE, "a length of %u over %zu: r=%d", want_len,
				    max_len, r);
			break;
		}
		if (left - SB_FRAME_HEADER < want_len) {
			FUZZ_ASSERT(r == -EPIPE, "a frame cut short: r=%d", r);
			break;
		}
		FUZZ_ASSERT(r == 0, "a whole frame: r=%d", r);
		FUZZ_ASSERT(type == (char)data[pos + 4] && len == want_len &&
				memcmp(payload, data + pos + SB_FRAME_HEADER, len) == 0 &&
				payload[len] == '\0',
			    "the frame at byte %zu differs", pos);
		free(payload);
		pos += SB_FRAME_HEADER + len;
	}
	close(p[0]);
}

/* core.c's read_reply(), step by step, against the reference reading. */
static void parent_side(const uint8_t *data, size_t size, size_t limit)
{
	struct timeval tv = {0, 200 * 1000};
	int sv[2];
	size_t pos = 0;

	if (size > MAX_STREAM || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	write_all(sv[0], data, size);
	close(sv[0]);
	for (;;) {
		unsigned char hdr[SB_FRAME_HEADER];
		size_t done = 0, left = size - pos;
		uint32_t len;
		char type, *payload;
		int r = read_exact(sv[1], hdr, sizeof(hdr), &done, 0);

		if (left < SB_FRAME_HEADER) {
			FUZZ_ASSERT(r == -EPIPE && done == left, "a cut header: r=%d done=%zu", r,
				    done);
			break;
		}
		FUZZ_ASSERT(r == 0 && memcmp(hdr, data + pos, sizeof(hdr)) == 0,
			    "the header at byte %zu: r=%d", pos, r);
		sb_frame_header_decode(hdr, &type, &len);
		FUZZ_ASSERT(len == le32(data + pos) && type == (char)data[pos + 4],
			    "the header decoder");
		pos += SB_FRAME_HEADER;
		left -= SB_FRAME_HEADER;
		if (len > SB_FRAME_HARD_MAX ||
		    ((type == SB_FRAME_STDOUT || type == SB_FRAME_STDERR) &&
		     len > 2 * SB_OUTPUT_CHUNK))
			break; /* the parent drops the worker */
		done = 0;
		if (len > limit) {
			/* Read and thrown away in pieces; the stream stays usable. */
			char sink[4096];

			for (size_t rest = len; rest > 0 && r == 0;) {
				size_t n = rest < sizeof(sink) ? rest : sizeof(sink);

				done = 0;
				r = read_exact(sv[1], sink, n, &done, 0);
				rest -= done;
			}
		} else {
			payload = malloc((size_t)len + 1);
			FUZZ_ASSERT(payload, "out of memory");
			r = read_exact(sv[1], payload, len, &done, 0);
			FUZZ_ASSERT(r != 0 || memcmp(payload, data + pos, len) == 0,
				    "the payload at byte %zu", pos);
			free(payload);
		}
		if (left < len) {
			FUZZ_ASSERT(r == -EPIPE, "a cut payload: r=%d", r);
			break;
		}
		FUZZ_ASSERT(r == 0, "a whole payload: r=%d", r);
		pos += len;
	}
	close(sv[1]);
}

struct frames {
	size_t n;
	char type[64];
	size_t len[64];
	const uint8_t *fill; /* payload bytes, repeated */
	size_t fill_len;
	int fd;
	int result;
};

/* Frame i's payload: the fill bytes from offset i, repeated. */
static void payload_of(const struct frames *f, size_t i, uint8_t *buf)
{
	size_t len = f->len[i], period = f->fill_len ? f->fill_len : 1, done;

	for (done = 0; done < period && done < len; done++)
		buf[done] = f->fill_len ? f->fill[(done + i) % f->fill_len] : 0;
	/* Doubling copies keep the period: done stays a multiple of it. */
	for (; done < len; done *= 2)
		memcpy(buf + done, buf, done < len - done ? done : len - done);
}

static void *writer(void *arg)
{
	struct frames *f = arg;

	for (size_t i = 0; i < f->n && f->result == 0; i++) {
		uint8_t *buf = malloc(f->len[i] + 1);

		if (!buf) {
			f->result = -ENOMEM;
			break;
		}
		payload_of(f, i, buf);
		f->result = sb_frame_write(f->fd, f->type[i], buf, f->len[i]);
		free(buf);
	}
	close(f->fd);
	return NULL;
}

/* No deadline on the reads: the writer thread may be slow to run on a
 * loaded machine, and a real hang is libFuzzer's -timeout to report. */
static void round_trip(const uint8_t *data, size_t size)
{
	struct frames f = {0};
	size_t total = 0;
	pthread_t thread;
	int sv[2];

	/* Each frame: a type and a 16-bit length, in units of 64 bytes when the
	 * high bit is set (up to 2 MiB, 1 MiB in all); the rest of the input is
	 * the payload. */
	while (size >= 3 && f.n < ELEMENTSOF(f.type)) {
		uint16_t v = (uint16_t)(data[1] | data[2] << 8);

		f.type[f.n] = (char)data[0];
		f.len[f.n] = v & 0x8000 ? (size_t)(v & 0x7fff) * 64 : v;
		total += f.len[f.n] + SB_FRAME_HEADER;
		f.n++;
		data += 3;
		size -= 3;
		if (size && data[0] == '|') { /* the end of the list */
			data++;
			size--;
			break;
		}
	}
	if (total > (1u << 20))
		return;
	f.fill = data;
	f.fill_len = size;
	for (int pass = 0; pass < 2; pass++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			return;
		f.fd = sv[0];
		f.result = 0;
		FUZZ_ASSERT(pthread_create(&thread, NULL, writer, &f) == 0, "pthread_create");
		for (size_t i = 0; i < f.n; i++) {
			_cleanup_free_ uint8_t *want = malloc(f.len[i] + SB_FRAME_HEADER);
			char type = 0, *got = NULL;
			size_t len = 0, done = 0;
			int r;

			FUZZ_ASSERT(want, "out of memory");
			for (int k = 0; k < 4; k++)
				want[k] = (uint8_t)(f.len[i] >> (8 * k));
			want[4] = (uint8_t)f.type[i];
			payload_of(&f, i, want + SB_FRAME_HEADER);
			if (pass == 0) {
				/* The bytes on the wire. */
				got = malloc(f.len[i] + SB_FRAME_HEADER);
				FUZZ_ASSERT(got, "out of memory");
				r = read_exact(sv[1], got, f.len[i] + SB_FRAME_HEADER, &done, -1);
				FUZZ_ASSERT(r == 0 && memcmp(got, want, done) == 0,
					    "frame %zu on the wire: r=%d", i, r);
			} else {
				r = sb_frame_read(sv[1], &type, &got, &len, SB_FRAME_HARD_MAX, -1);
				FUZZ_ASSERT(r == 0 && type == f.type[i] && len == f.len[i] &&
						memcmp(got, want + SB_FRAME_HEADER, len) == 0,
					    "frame %zu read back: r=%d", i, r);
			}
			free(got);
		}
		pthread_join(thread, NULL);
		FUZZ_ASSERT(f.result == 0, "sb_frame_write: %d", f.result);
		{
			char type, *extra = NULL;
			size_t len;
			int r = sb_frame_read(sv[1], &type, &extra, &len, SB_FRAME_HARD_MAX, -1);

			FUZZ_ASSERT(r == -EPIPE, "after the last frame: r=%d", r);
		}
		close(sv[1]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t max_len;
	int timeout_ms;

	if (size < 2)
		return 0;
	max_len = limits[data[1] % ELEMENTSOF(limits)];
	timeout_ms = data[1] & 0x80 ? 1000 : -1;
	switch (data[0] % 3) {
	case 0:
		worker_side(data + 2, size - 2, max_len, timeout_ms);
		break;
	case 1:
		parent_side(data + 2, size - 2, max_len);
		break;
	default:
		round_trip(data + 2, size - 2);
		break;
	}
	return 0;
}
