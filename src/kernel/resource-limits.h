/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

/* Resource limits, a profile extension of ours (limit-*, timeout). A zero
 * field is "no limit". */
struct sb_limits {
	unsigned long long cpu_ms;	    /* limit-cpu: RLIMIT_CPU (rounded up to seconds) */
	unsigned long long memory_bytes;    /* limit-memory: RLIMIT_AS */
	unsigned long long processes;	    /* limit-processes: RLIMIT_NPROC */
	unsigned long long file_size_bytes; /* limit-file-size: RLIMIT_FSIZE */
	unsigned long long open_files;	    /* limit-open-files: RLIMIT_NOFILE */
	unsigned long long timeout_ms;	    /* timeout: wall clock, whole process tree */
};

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
