/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "profile-limits.h"
#include "supervisor.h"

/* setrlimit() for every non-zero field (soft and hard: the program cannot
 * raise them back). 0 or -errno with *reterr naming the limit. */
int sb_limits_apply(const struct sb_limits *limits, char **reterr);

/* What the supervisor enforces; a zero field is "no such limit". */
struct sb_supervise_options {
	unsigned long long timeout_ms;
	unsigned long long output_bytes; /* limit-output= (output-relay.h) */
	unsigned long long memory_bytes; /* limit-memory=, with cgroup_parent */
	const char *cgroup_parent;	 /* where the program's cgroup goes (cgroup.h), or NULL */
	bool count_output;		 /* relay and count the output even without a limit */
	/* python-sb-supervise (supervise-exec.h), or NULL: the supervisor
	 * forks a copy of the caller instead. */
	const char *supervisor_exe;
};

/* Forks (or, with supervisor_exe, starts the program's process with the
 * caller's memory and execs the supervisor: supervise-exec.h; the caller then
 * never sees the parent's side). In the child, returns 0 at once (*ret_is_child = true) and the
 * caller goes on to run the program (in its cgroup, with its output going
 * through the supervisor when those apply). In the parent (the supervisor,
 * which runs no program code), waits for the child, copies its output and
 * counts it, forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT to it, and at the
 * deadline or past limit-output kills the child and every descendant (the
 * supervisor is a child subreaper, so descendants that daemonise are still
 * found). Returns 0 with *ret; -errno with *reterr. */
int sb_supervise_run(const struct sb_supervise_options *o, bool *ret_is_child,
		     struct sb_supervise_result *ret, char **reterr);

/* The timeout alone (sb_supervise_run()). With a timeout: forks. In the child, returns 0 at once
 * (*ret_is_child = true) and the caller goes on to run the program. In the parent (the supervisor,
 * which runs no program code), waits for the child, forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT to it,
 * and at the deadline kills the child and every descendant (the supervisor is a child subreaper, so
 * descendants that daemonise are still found). Returns 0 with the child's wait status in
 * *ret_status and *ret_timed_out; -errno with *reterr. */
int sb_supervise(unsigned long long timeout_ms, bool *ret_is_child, int *ret_status,
		 bool *ret_timed_out, char **reterr);
