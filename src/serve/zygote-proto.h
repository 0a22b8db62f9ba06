/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The messages between python-sb serve and its fork server (the zygote,
 * zygote.c; docs/serve.md), over AF_UNIX SOCK_SEQPACKET sockets: one message
 * per datagram (the socket keeps their boundaries, so no stream framing),
 * the descriptors of a run beside it (SCM_RIGHTS). No library does this for
 * us: the format is ours, small, and its decoders are fuzzed
 * (tests/fuzz/fuzz-zygote-proto.c).
 *
 * A message is a header (magic "zy", version, type, payload length) and the
 * type's fields in a fixed order: integers little-endian of a fixed width,
 * strings as a 32-bit length and that many bytes (no NUL in them). Both
 * sides are this build: a different version is refused, never guessed at.
 *
 *   control socket (the service's end and the zygote's):
 *     READY  zygote -> service, once it can fork runs
 *     RUN    service -> zygote; descriptors: the run's stdin, stdout, stderr,
 *            report region, reply socket, arguments (SB_ZRUN_FD_*)
 *   a run's reply socket (a socketpair per run, one end sent with RUN):
 *     KILL   service -> zygote: stop the run (its output passed the cap)
 *     FAILED the run's process -> service: it could not start the program
 *     DONE   zygote -> service: the run's process is reaped, and how it ended
 *
 * The arguments (up to 256 of 64 KiB each: more than a datagram holds) go in
 * a memory file of their own, as a count and length-prefixed strings. */

#define SB_ZPROTO_VERSION 1
/* The largest datagram either side sends or accepts. */
#define SB_ZMSG_MAX	  8192
#define SB_ZARGS_MAX_N	  4096
#define SB_ZARGS_MAX_SIZE (64u << 20)

enum sb_zmsg_type {
	SB_ZMSG_READY = 1,
	SB_ZMSG_RUN,
	SB_ZMSG_KILL,
	SB_ZMSG_FAILED,
	SB_ZMSG_DONE,
};

/* The descriptors that come with RUN, in this order. */
enum {
	SB_ZRUN_FD_STDIN,
	SB_ZRUN_FD_STDOUT,
	SB_ZRUN_FD_STDERR,
	SB_ZRUN_FD_REPORT,
	SB_ZRUN_FD_REPLY,
	SB_ZRUN_FD_ARGS,
	SB_ZRUN_N_FDS,
};

/* Why a run was killed before its end (DONE, KILL). */
enum sb_zkill {
	SB_ZKILL_NONE = 0,
	SB_ZKILL_TIMEOUT, /* its deadline: the zygote's own */
	SB_ZKILL_OUTPUT,  /* the service asked: its output passed the cap */
	SB_ZKILL_GONE,	  /* the service closed the run's reply socket */
};

struct sb_zmsg {
	enum sb_zmsg_type type;
	union {
		struct {
			uint32_t pid;
			uint32_t modules; /* imported by the warm-up */
			uint64_t warm_ns; /* how long the warm-up took */
			uint64_t rss_kb;  /* the zygote's resident size, warm */
			char *provider;
		} ready;
		struct {
			uint64_t id;
			uint64_t timeout_ms, cpu_ms, memory_bytes; /* 0: the profile's */
			char *rundir;
		} run;
		struct {
			uint32_t reason; /* enum sb_zkill */
		} kill;
		struct {
			char *message;
		} failed;
		struct {
			uint64_t id;
			int32_t status;	 /* the wait status */
			uint32_t killed; /* enum sb_zkill */
			uint64_t wall_ns;
			uint64_t utime_us, stime_us, maxrss_kb;
		} done;
	};
};
void sb_zmsg_done(struct sb_zmsg *m);

/* How many descriptors come with a message of this type. */
size_t sb_zmsg_n_fds(enum sb_zmsg_type type);

/* m as a datagram (*ret, malloc'ed). 0, -EINVAL (a string with a NUL, too
 * long, a bad type) or -ENOMEM. */
int sb_zmsg_encode(const struct sb_zmsg *m, uint8_t **ret, size_t *ret_len);
/* One datagram into *ret (its strings malloc'ed: sb_zmsg_done()). 0,
 * -EBADMSG (anything but a complete, well-formed message of this version,
 * with nothing after it) or -ENOMEM. */
int sb_zmsg_decode(const uint8_t *data, size_t len, struct sb_zmsg *ret);

/* The arguments' memory file. */
int sb_zargs_encode(char *const *args, uint8_t **ret, size_t *ret_len);
/* A NULL-ended vector (sb_strv_free()). 0, -EBADMSG or -ENOMEM. */
int sb_zargs_decode(const uint8_t *data, size_t len, char ***ret);

/* Sends m with n_fds descriptors (sb_zmsg_n_fds(m->type) of them). 0 or
 * -errno (-EPIPE: the other end is gone). */
int sb_zmsg_send(int sock, const struct sb_zmsg *m, const int *fds, size_t n_fds);
/* Receives one message and the descriptors that came with it (close-on-exec;
 * exactly sb_zmsg_n_fds() of them or the message is refused, and whatever
 * came is closed). 0; -ECONNRESET at the end of the stream (the other end
 * closed); -EBADMSG; -errno. */
int sb_zmsg_recv(int sock, struct sb_zmsg *ret, int fds[SB_ZRUN_N_FDS]);
