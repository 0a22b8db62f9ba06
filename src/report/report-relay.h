/* SPDX-License-Identifier: MIT */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* The program's stdout and stderr, counted outside the sandbox: the program
 * writes into pipes, and a thread of the supervisor copies what comes out to
 * the supervisor's own stdout and stderr, counting bytes. The program's stdout
 * is then a pipe even when python-sb's is a terminal (Python buffers it by
 * blocks, not lines): the price of a count the program cannot fake. */
struct sb_report_relay {
	int out[2], err[2]; /* pipes: [0] read by the relay, [1] the program's */
	pthread_t thread;
	bool started;
	uint64_t stdout_bytes, stderr_bytes; /* read once the thread is joined */
};

/* Before the fork: the pipes and the thread (which blocks every signal: the
 * supervisor's signals stay the supervisor's). 0 or -errno with *reterr. */
int sb_report_relay_start(struct sb_report_relay *r, char **reterr);
/* In the program's process, after the fork: the pipes become fds 1 and 2. */
int sb_report_relay_child(struct sb_report_relay *r);
/* In the supervisor, once the program's process tree is gone: drains what
 * is left, stops the thread, closes everything. */
void sb_report_relay_finish(struct sb_report_relay *r);
