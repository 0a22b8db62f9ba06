/* SPDX-License-Identifier: MIT */
#pragma once

#include <sched.h>
#include <stdint.h>

#include "output-relay.h"

/* The timeout supervisor without a copy of the launcher (supervise-exec.c).
 *
 * fork() gives the program a copy-on-write image of the launcher: the page
 * tables are copied, and every page the launcher wrote before the fork costs
 * the program a fault and a copy when it writes it again (about a hundred on
 * `-c pass`, bench/README.md, issue 19). Instead, the program's process is
 * made with clone(CLONE_VM): it *is* the launcher's memory, not a copy, while
 * the launcher's process execs python-sb-supervise, a small static program
 * that gets a memory of its own and keeps everything the supervisor needs:
 * its pid (the caller's parent sees the status it mirrors), its children (the
 * program), the child-subreaper flag and the blocked signals. The program's
 * process waits, blocked, until that exec has released the shared memory,
 * then resumes where this function was called. No program code ever runs
 * while the memory is shared, and nothing of the supervisor is left in the
 * program's reach once it does. */

struct sb_supervise_exec_args {
	uint64_t deadline_ns;	       /* CLOCK_MONOTONIC, UINT64_MAX: none */
	unsigned long long timeout_ms; /* for the supervisor's message */
	const struct sb_relay *relay;  /* limit-output=, or NULL */
	const cpu_set_t *affinity;     /* the supervisor's, or NULL: leave it */
	/* os-sandbox=unshare (namespaces.c): the PID namespace's init, which
	 * python-sb-supervise kills once the program has ended (then every
	 * process left in the namespace dies), and whose signals it forwards
	 * (sb_supervisor_sigset()); the program's process is in that PID
	 * namespace, where its parent has no pid; keep_fd stays open in
	 * python-sb-supervise (the init's alive pipe). 0 and -1: none. */
	pid_t ns_init;
	int keep_fd;
};

/* In the program's process: returns 0 (it is this process's child, with
 * PR_SET_PDEATHSIG still to be set by the caller). In the caller's process:
 * never returns on success (it is python-sb-supervise now); returns
 * -EOPNOTSUPP when this way is not available (no PR_GET_TID_ADDRESS, a
 * sanitiser's runtime, another architecture), before
 * anything happened, so that the caller forks instead; -errno with *reterr
 * when it failed, with the program's process killed and reaped. The caller
 * has blocked the supervisor's signals, set SIGCHLD to its default and
 * become a child subreaper; it is single-threaded. */
int sb_supervise_exec(const char *supervisor_exe, const struct sb_supervise_exec_args *a,
		      char **reterr);

/* python-sb-supervise's command line, version 2:
 *   python-sb-supervise 2 PID INIT DEADLINE_NS TIMEOUT_MS OUTPUT_LIMIT [FROM:TO:BOTH]...
 * INIT: the PID namespace's init, or 0; FROM:TO:BOTH per relay stream
 * (output-relay.h). */
#define SB_SUPERVISE_PROTOCOL "2"
