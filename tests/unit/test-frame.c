/* SPDX-License-Identifier: MIT */
/* The partial-mode frames (src/wire/frame.c) over a real socketpair:
 * round trips, the limits, a closed peer, timeouts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frame.h"
#include "tap.h"

int main(void)
{
	char type = 0, *data = NULL, big[100000];
	size_t len = 0, done = 0;
	unsigned char hdr[SB_FRAME_HEADER];
	uint32_t n;
	int sv[2], r;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return tap_skip_all("no socketpair");

	r = sb_frame_write(sv[0], SB_FRAME_CALL, "hello", 5);
	tap_ok(r == 0, "a frame is written");
	r = sb_frame_read(sv[1], &type, &data, &len, 1024, 1000);
	tap_ok(r == 0 && type == SB_FRAME_CALL && len == 5 && memcmp(data, "hello", 5) == 0 &&
		   data[5] == '\0',
	       "and read back whole, NUL-terminated");
	free(data);

	r = sb_frame_write(sv[0], SB_FRAME_INIT_DONE, NULL, 0);
	r = r ? r : sb_frame_read(sv[1], &type, &data, &len, 1024, 1000);
	tap_ok(r == 0 && type == SB_FRAME_INIT_DONE && len == 0, "an empty frame");
	free(data);

	/* Larger than the socket buffer: the writer must go on while the
	 * reader reads, so write from a child. */
	memset(big, 'x', sizeof(big));
	if (fork() == 0)
		_exit(sb_frame_write(sv[0], SB_FRAME_VALUE, big, sizeof(big)) == 0 ? 0 : 1);
	r = sb_frame_read(sv[1], &type, &data, &len, sizeof(big), 5000);
	tap_ok(r == 0 && len == sizeof(big) && memcmp(data, big, len) == 0,
	       "a 100 kB frame crosses whole");
	wait(NULL);
	free(data);

	r = sb_frame_write(sv[0], SB_FRAME_VALUE, "abcdef", 6);
	r = r ? r : sb_frame_read(sv[1], &type, &data, &len, 5, 1000);
	tap_ok(r == -EMSGSIZE, "a frame over the reader's limit is refused (%d)", r);

	/* The header decoder, little-endian. */
	sb_frame_header_decode((const unsigned char *)"\x01\x02\x00\x00V", &type, &n);
	tap_ok(n == 0x0201 && type == 'V', "header: length %u, type %c", n, type);
	tap_ok(sb_frame_write(sv[0], 'V', big, (size_t)SB_FRAME_HARD_MAX + 1) == -EMSGSIZE,
	       "nothing over the hard maximum is written");

	/* Timeouts: with poll (> 0) and with the socket's own SO_RCVTIMEO (0). */
	{
		int a[2];
		struct timeval tv = {0, 50 * 1000};

		socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a);
		done = 0;
		r = sb_read_exact(a[1], hdr, sizeof(hdr), &done, 50);
		tap_ok(r == -ETIMEDOUT, "poll timeout: -ETIMEDOUT");
		setsockopt(a[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		r = sb_read_exact(a[1], hdr, sizeof(hdr), &done, 0);
		tap_ok(r == -ETIMEDOUT, "SO_RCVTIMEO timeout: -ETIMEDOUT");
		/* Progress survives: half a header, then the rest. */
		tap_ok(write(a[0], "\x03\x00", 2) == 2, "half a header sent");
		r = sb_read_exact(a[1], hdr, sizeof(hdr), &done, 50);
		tap_ok(r == -ETIMEDOUT && done == 2, "a partial read keeps its progress");
		tap_ok(write(a[0], "\x00\x00O", 3) == 3, "the rest sent");
		r = sb_read_exact(a[1], hdr, sizeof(hdr), &done, 50);
		tap_ok(r == 0 && done == sizeof(hdr) && hdr[4] == 'O', "and completes later");
		close(a[0]);
		done = 0;
		r = sb_read_exact(a[1], hdr, sizeof(hdr), &done, -1);
		tap_ok(r == -EPIPE, "a closed peer: -EPIPE");
		close(a[1]);
	}

	close(sv[1]);
	r = sb_frame_write(sv[0], SB_FRAME_STDOUT, "x", 1);
	tap_ok(r == -EPIPE, "writing to a closed peer: -EPIPE, no SIGPIPE");
	close(sv[0]);
	return tap_done();
}
