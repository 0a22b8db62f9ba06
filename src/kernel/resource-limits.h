/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

#include "profile-limits.h"

/* setrlimit() for every non-zero field (soft and hard: the program cannot
 * raise them back). 0 or -errno with *reterr naming the limit. */
int sb_limits_apply(const struct sb_limits *limits, char **reterr);

/* With a timeout: forks. In the child, returns 0 at once (*ret_is_child =
 * true) and the caller goes on to run the program. In the parent (the
 * supervisor, which runs no program code), waits for the child, forwards
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT to it, and at the deadline kills the child and
 * every descendant (the supervisor is a child subreaper, so descendants that
 * daemonise are still found). Returns 0 with the child's wait status in
 * *ret_status and *ret_timed_out; -errno with *reterr. */
int sb_supervise(unsigned long long timeout_ms, bool *ret_is_child, int *ret_status,
		 bool *ret_timed_out, char **reterr);
