/* SPDX-License-Identifier: MIT */
#pragma once

/* The partial-mode transport between the parent and the worker: frames over
 * an inherited socketpair, no port and no token (nothing another process can
 * reach). A frame is a 4-byte little-endian payload length, a 1-byte type and
 * the payload. No Python here: the worker reads its configuration frame before
 * the interpreter exists. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SB_FRAME_HEADER 5
/* No frame of either side may exceed this: a larger length is a broken or
 * hostile peer, and the stream is abandoned. */
#define SB_FRAME_HARD_MAX (64u << 20)
/* A result or exception reply over this is refused (spec section 7): the
 * default of the caller's max_result_size. */
#define SB_RESULT_LIMIT (512u << 10)
/* The most max_result_size and max_argument_size may be set to. */
#define SB_FRAME_SETTING_MAX (1u << 30)
/* Output is sent in pieces of at most this size. */
#define SB_OUTPUT_CHUNK (64u << 10)

enum sb_frame_type {
	/* parent -> worker */
	SB_FRAME_CONFIG = 'C', /* NUL-separated "key=value" entries */
	SB_FRAME_CALL = 'Q',   /* pickle of (module, qualname, args, kwargs) */
	SB_FRAME_EXIT = 'X',   /* graceful shutdown */
	/* worker -> parent */
	SB_FRAME_READY = 'R',	       /* NUL-separated "key=value": mode, guard, provider */
	SB_FRAME_INIT_DONE = 'I',      /* init_fn ran (or there is none) */
	SB_FRAME_STDOUT = 'O',	       /* UTF-8 text the function wrote */
	SB_FRAME_STDERR = 'E',	       /* same, for sys.stderr */
	SB_FRAME_VALUE = 'V',	       /* pickle of the result */
	SB_FRAME_EXCEPTION = 'F',      /* pickle of the exception descriptor */
	SB_FRAME_BASE_EXCEPTION = 'B', /* same, for a BaseException */
	SB_FRAME_TOO_BIG = 'T',	       /* 8-byte size of a reply over the limit */
	SB_FRAME_PROTOCOL = 'P',       /* UTF-8 message: the call could not be made */
	/* The worker could not start: "config\0" then (file, line, message)
	 * NUL-terminated triples, or "start\0" then the message. */
	SB_FRAME_START_ERROR = 'S',
};

/* Writes one frame, whole (retrying short writes and EINTR). 0 or -errno. */
int sb_frame_write(int fd, char type, const void *data, size_t len);

/* Reads until *done == len. timeout_ms < 0 waits for ever; 0 relies on the
 * socket's SO_RCVTIMEO (no poll); > 0 polls first. Returns 0;
 * -EINTR (a signal: *done keeps the progress, call again); -ETIMEDOUT;
 * -EPIPE when the peer closed; other -errno. */
int sb_read_exact(int fd, void *buf, size_t len, size_t *done, int timeout_ms);

/* Header decoding, for the readers that handle EINTR themselves. */
void sb_frame_header_decode(const unsigned char hdr[SB_FRAME_HEADER], char *ret_type,
			    uint32_t *ret_len);

/* Blocking read of one frame with a timeout, retrying EINTR (for the worker,
 * which has nothing else to do). *ret_data is malloc'ed (NUL-terminated for
 * convenience), at most max_len bytes. 0 or -errno (-EMSGSIZE over max_len). */
int sb_frame_read(int fd, char *ret_type, char **ret_data, size_t *ret_len, size_t max_len,
		  int timeout_ms);
