/* SPDX-License-Identifier: MIT */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "output-relay.h"

/* The timeout supervisor's watch (supervisor.c): what the process that stays
 * outside the sandbox does while the program runs, whether it forked the
 * program (sb_supervise_run()) or became python-sb-supervise after starting
 * it (supervise-exec.h). */

struct sb_supervise_result {
	int status; /* the program's wait status */
	bool timed_out;
	bool output_exceeded;
	bool memory_exceeded; /* the kernel killed in the program's cgroup */
	uint64_t wall_ns;     /* from the fork to the last process reaped */
	/* With output_bytes or count_output: what the program and its children
	 * wrote (up to the limit). combined: stdout and stderr were one file
	 * (2>&1), relayed through one pipe to keep their order, and all of it
	 * is counted as stdout. */
	bool output_counted, output_combined;
	unsigned long long stdout_bytes, stderr_bytes;
};

struct sb_supervisor {
	pid_t self;
	pid_t child;
	/* os-sandbox=unshare: the PID namespace's init (0: none, or reaped).
	 * The end is then its death, not a scan of the tree: the kernel kills
	 * every process of the namespace with it, and nobody waits for the
	 * namespaces' teardown. */
	pid_t init;
	bool child_reaped;
	int child_status;
	int sfd;		/* a signalfd for sb_supervisor_sigset()'s signals */
	struct sb_relay *relay; /* limit-output=, or NULL */
};

/* SIGCHLD and the termination signals passed on to the program: blocked before
 * the program's process exists (no signal lost), read from the signalfd. With
 * namespace (os-sandbox=unshare, whose program cannot be reached by its pid
 * from outside): also SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH and SIGIO. */
void sb_supervisor_sigset(sigset_t *set, bool namespace);

/* Until the program exits, deadline_ns (CLOCK_MONOTONIC; UINT64_MAX: none) or
 * limit-output; then kills the program and every descendant (the caller is a
 * child subreaper), and copies what the relay's pipes still hold. Fills *ret
 * (all but memory_exceeded and wall_ns). 0, or -errno with *reterr; with the
 * tree killed either way. Leaves s->sfd open. */
int sb_supervisor_watch(struct sb_supervisor *s, uint64_t deadline_ns,
			struct sb_supervise_result *ret, char **reterr);

/* The deadline of a timeout started now: UINT64_MAX without one, saturated
 * for absurd ones (> 500 years). */
uint64_t sb_supervisor_deadline(uint64_t start_ns, unsigned long long timeout_ms);
