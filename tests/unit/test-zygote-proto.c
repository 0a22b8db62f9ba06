/* SPDX-License-Identifier: MIT */
/* The fork server's messages (src/serve/zygote-proto.c): round trips of every
 * type, the decoder's refusals, the arguments' file, and the transport with
 * descriptors over a real SOCK_SEQPACKET socketpair. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tap.h"
#include "util.h"
#include "zygote-proto.h"

static bool roundtrip(const struct sb_zmsg *m, struct sb_zmsg *back)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len = 0;

	return sb_zmsg_encode(m, &buf, &len) == 0 && sb_zmsg_decode(buf, len, back) == 0;
}

static int decode_bytes(const void *data, size_t len)
{
	struct sb_zmsg m;
	int r = sb_zmsg_decode(data, len, &m);

	if (r == 0)
		sb_zmsg_done(&m);
	return r;
}

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void test_roundtrips(void)
{
	struct sb_zmsg back;
	struct sb_zmsg ready = {.type = SB_ZMSG_READY,
				.ready = {.pid = 42,
					  .modules = 33,
					  .warm_ns = 1234567,
					  .rss_kb = 18000,
					  .provider = (char *)"landlock"}};
	struct sb_zmsg run = {.type = SB_ZMSG_RUN,
			      .run = {.id = 7,
				      .timeout_ms = 10000,
				      .cpu_ms = 5000,
				      .memory_bytes = 1ULL << 40,
				      .rundir = (char *)"/tmp/w/run-abc"}};
	struct sb_zmsg kill = {.type = SB_ZMSG_KILL, .kill.reason = SB_ZKILL_OUTPUT};
	struct sb_zmsg failed = {.type = SB_ZMSG_FAILED, .failed.message = (char *)"no: why"};
	struct sb_zmsg done = {.type = SB_ZMSG_DONE,
			       .done = {.id = 7,
					.status = 0x0900,
					.killed = SB_ZKILL_TIMEOUT,
					.wall_ns = UINT64_MAX,
					.utime_us = 1,
					.stime_us = 2,
					.maxrss_kb = 3}};

	tap_ok(roundtrip(&ready, &back) && back.type == SB_ZMSG_READY && back.ready.pid == 42 &&
		   back.ready.modules == 33 && back.ready.warm_ns == 1234567 &&
		   back.ready.rss_kb == 18000 && streq(back.ready.provider, "landlock"),
	       "READY round trip");
	sb_zmsg_done(&back);
	tap_ok(roundtrip(&run, &back) && back.run.id == 7 && back.run.timeout_ms == 10000 &&
		   back.run.cpu_ms == 5000 && back.run.memory_bytes == 1ULL << 40 &&
		   streq(back.run.rundir, "/tmp/w/run-abc"),
	       "RUN round trip");
	sb_zmsg_done(&back);
	tap_ok(roundtrip(&kill, &back) && back.kill.reason == SB_ZKILL_OUTPUT, "KILL round trip");
	sb_zmsg_done(&back);
	tap_ok(roundtrip(&failed, &back) && streq(back.failed.message, "no: why"),
	       "FAILED round trip");
	sb_zmsg_done(&back);
	tap_ok(roundtrip(&done, &back) && back.done.status == 0x0900 &&
		   back.done.killed == SB_ZKILL_TIMEOUT && back.done.wall_ns == UINT64_MAX &&
		   back.done.maxrss_kb == 3,
	       "DONE round trip");
	sb_zmsg_done(&back);
}

static void test_refusals(void)
{
	struct sb_zmsg run = {.type = SB_ZMSG_RUN, .run = {.id = 1, .rundir = (char *)"/r"}};
	_cleanup_free_ uint8_t *buf = NULL;
	uint8_t copy[256];
	size_t len = 0;
	char long_dir[5000];

	tap_ok(sb_zmsg_encode(&run, &buf, &len) == 0 && len < sizeof(copy), "a RUN to spoil");
	memcpy(copy, buf, len);
	TAP_IS_INT(decode_bytes(copy, len), 0, "it decodes as it is");
	for (size_t cut = 0; cut < len; cut++)
		if (decode_bytes(copy, cut) != -EBADMSG) {
			tap_ok(false, "a message cut at %zu bytes is refused", cut);
			return;
		}
	tap_ok(true, "every truncation is refused");
	copy[len] = 0;
	TAP_IS_INT(decode_bytes(copy, len + 1), -EBADMSG, "a trailing byte is refused");
	copy[0] ^= 1;
	TAP_IS_INT(decode_bytes(copy, len), -EBADMSG, "a bad magic is refused");
	copy[0] ^= 1;
	copy[2] = SB_ZPROTO_VERSION + 1;
	TAP_IS_INT(decode_bytes(copy, len), -EBADMSG, "another version is refused");
	copy[2] = SB_ZPROTO_VERSION;
	copy[3] = 99;
	TAP_IS_INT(decode_bytes(copy, len), -EBADMSG, "an unknown type is refused");
	copy[3] = SB_ZMSG_RUN;
	copy[len - 1] = '\0'; /* "/r" -> "/\0" */
	TAP_IS_INT(decode_bytes(copy, len), -EBADMSG, "a NUL inside a string is refused");
	copy[len - 1] = 'r';
	copy[len - 2] = 'x'; /* "xr": relative */
	TAP_IS_INT(decode_bytes(copy, len), -EBADMSG, "a relative run directory is refused");
	copy[len - 2] = '/';
	/* The payload length says one byte more than there is. */
	copy[4]++;
	TAP_IS_INT(decode_bytes(copy, len), -EBADMSG, "a wrong payload length is refused");
	copy[4]--;
	/* A string length past the end (and one that would wrap). */
	memset(copy + len - 6, 0xff, 4);
	TAP_IS_INT(decode_bytes(copy, len), -EBADMSG,
		   "a string longer than the message is refused");

	memset(long_dir, 'a', sizeof(long_dir) - 1);
	long_dir[0] = '/';
	long_dir[sizeof(long_dir) - 1] = '\0';
	run.run.rundir = long_dir;
	free(TAKE_PTR(buf));
	TAP_IS_INT(sb_zmsg_encode(&run, &buf, &len), -EINVAL, "a path too long is not encoded");
	TAP_IS_INT(sb_zmsg_encode(&(struct sb_zmsg){.type = 0}, &buf, &len), -EINVAL,
		   "an unknown type is not encoded");
	{
		struct sb_zmsg kill = {.type = SB_ZMSG_KILL, .kill.reason = 77};
		uint8_t *k = NULL;
		size_t klen = 0;

		tap_ok(sb_zmsg_encode(&kill, &k, &klen) == 0 && decode_bytes(k, klen) == -EBADMSG,
		       "an unknown KILL reason is refused");
		free(k);
	}
}

static void test_args(void)
{
	char *args[] = {"-v", "", "a b", "\xc3\xa9", NULL};
	_cleanup_free_ uint8_t *buf = NULL;
	_cleanup_strv_free_ char **back = NULL;
	size_t len = 0;
	uint8_t bad[8] = {2, 0, 0, 0, 1, 0, 0, 0};
	char **v = NULL;

	tap_ok(sb_zargs_encode(args, &buf, &len) == 0 && sb_zargs_decode(buf, len, &back) == 0,
	       "arguments round trip");
	tap_ok(back && sb_strv_length(back) == 4 && streq(back[0], "-v") && streq(back[1], "") &&
		   streq(back[2], "a b") && streq(back[3], "\xc3\xa9"),
	       "every argument, empty ones too");
	sb_strv_free(TAKE_PTR(back));
	free(TAKE_PTR(buf));
	tap_ok(sb_zargs_encode(NULL, &buf, &len) == 0 && sb_zargs_decode(buf, len, &back) == 0 &&
		   back && !back[0],
	       "no arguments");
	TAP_IS_INT(sb_zargs_decode(bad, sizeof(bad), &v), -EBADMSG,
		   "a count beyond the strings is refused");
	TAP_IS_INT(sb_zargs_decode(bad, 3, &v), -EBADMSG, "a cut count is refused");
	bad[0] = 0;
	TAP_IS_INT(sb_zargs_decode(bad, sizeof(bad), &v), -EBADMSG, "trailing bytes are refused");
}

static void test_transport(void)
{
	struct sb_zmsg run = {.type = SB_ZMSG_RUN, .run = {.id = 9, .rundir = (char *)"/run/x"}};
	struct sb_zmsg kill = {.type = SB_ZMSG_KILL, .kill.reason = SB_ZKILL_OUTPUT};
	int sv[2], fds[SB_ZRUN_N_FDS], got[SB_ZRUN_N_FDS], p[2];
	struct sb_zmsg m;
	bool all = true;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe2(p, O_CLOEXEC) < 0) {
		tap_ok(false, "a socketpair and a pipe");
		return;
	}
	for (int i = 0; i < SB_ZRUN_N_FDS; i++)
		fds[i] = i % 2 ? p[1] : p[0];
	TAP_IS_INT(sb_zmsg_send(sv[0], &run, fds, SB_ZRUN_N_FDS), 0, "RUN is sent with its fds");
	TAP_IS_INT(sb_zmsg_recv(sv[1], &m, got), 0, "and received");
	for (int i = 0; i < SB_ZRUN_N_FDS; i++)
		all =
		    all && got[i] >= 0 && got[i] != fds[i] && (fcntl(got[i], F_GETFD) & FD_CLOEXEC);
	tap_ok(all && m.type == SB_ZMSG_RUN && streq(m.run.rundir, "/run/x"),
	       "with six new close-on-exec descriptors");
	sb_zmsg_done(&m);
	for (int i = 0; i < SB_ZRUN_N_FDS; i++)
		close(got[i]);

	TAP_IS_INT(sb_zmsg_send(sv[0], &run, fds, 2), -EINVAL,
		   "RUN with the wrong number of fds is not sent");
	TAP_IS_INT(sb_zmsg_send(sv[0], &kill, fds, 1), -EINVAL, "KILL with an fd is not sent");

	/* A KILL that comes with descriptors (sent by hand): refused, and the
	 * descriptors it brought are closed, not leaked. */
	{
		_cleanup_free_ uint8_t *buf = NULL;
		size_t len = 0;
		union {
			struct cmsghdr align;
			char buf[CMSG_SPACE(sizeof(int))];
		} control = {0};
		struct iovec iov;
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = control.buf,
				     .msg_controllen = sizeof(control.buf)};
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		int before = fcntl(0, F_DUPFD_CLOEXEC, 0), after;

		close(before);
		sb_zmsg_encode(&kill, &buf, &len);
		iov = (struct iovec){.iov_base = buf, .iov_len = len};
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &p[0], sizeof(int));
		tap_ok(sendmsg(sv[0], &msg, 0) == (ssize_t)len, "a KILL with an fd, by hand");
		TAP_IS_INT(sb_zmsg_recv(sv[1], &m, got), -EBADMSG, "is refused");
		after = fcntl(0, F_DUPFD_CLOEXEC, 0);
		tap_ok(after == before, "and the fd it brought is closed (next free fd %d, was %d)",
		       after, before);
		close(after);
	}

	close(sv[0]);
	TAP_IS_INT(sb_zmsg_recv(sv[1], &m, got), -ECONNRESET, "the end of the peer");
	TAP_IS_INT(sb_zmsg_send(sv[1], &kill, NULL, 0), -EPIPE, "a send to a closed peer");
	close(sv[1]);
	tap_ok(fd_open(p[0]) && fd_open(p[1]), "the sender's own fds stay open");
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	test_roundtrips();
	test_refusals();
	test_args();
	test_transport();
	return tap_done();
}
