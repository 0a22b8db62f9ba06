/* SPDX-License-Identifier: MIT */
#pragma once

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* limit-output= (output-relay.c): the program's standard output and error
 * become pipes that the supervisor reads, counts and copies to the caller's;
 * the first byte past the limit is not copied, and the supervisor kills the
 * program and everything it started. */

struct sb_relay_stream {
	int from;     /* our end of the program's pipe, -1 when closed */
	int to;	      /* the caller's descriptor (1 or 2) */
	int child_fd; /* the pipe's write end, for the program */
	char buf[16384];
	size_t len, off;	  /* bytes waiting in buf, from off */
	bool both;		  /* stdout and stderr are one file: one pipe for both */
	unsigned long long bytes; /* what the program wrote here, up to the limit */
};

struct sb_relay {
	struct sb_relay_stream s[2];
	size_t n;
	unsigned long long limit, total;
	bool exceeded;
};

/* Before the fork: a pipe for each of stdout and stderr that is open (one
 * when they are the same file, so that their order is kept). limit 0: no
 * limit, the output is only counted (a run report). 0 or -errno. */
int sb_relay_open(struct sb_relay *r, unsigned long long limit, char **reterr);
/* In the program's process: the pipes become its stdout and stderr. */
int sb_relay_child(struct sb_relay *r);
/* In the supervisor: closes the program's ends. */
void sb_relay_parent(struct sb_relay *r);
/* The descriptors to poll (at most 4): reading the program's pipes while
 * there is room, writing the caller's while there is data. */
size_t sb_relay_pollfds(const struct sb_relay *r, struct pollfd *fds);
/* Moves what poll said is ready; sets r->exceeded at the first byte past the
 * limit (that byte and what follows are dropped). 0 or -errno. */
int sb_relay_service(struct sb_relay *r, const struct pollfd *fds, size_t n);
/* After the program and its descendants are gone: copies what the pipes
 * still hold, until end of file or deadline_ns (CLOCK_MONOTONIC). */
void sb_relay_flush(struct sb_relay *r, uint64_t deadline_ns);
void sb_relay_close(struct sb_relay *r);
