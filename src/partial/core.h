/* SPDX-License-Identifier: MIT */
#pragma once

/* What the parts of pysandboxes._core share. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <sys/types.h>

#include "result-guard.h"

/* One worker process: python-sb --pysandboxes-worker, in its own process
 * group, with our end of the socketpair. */
struct sb_child {
	pid_t pid; /* 0 when there is none */
	int fd;	   /* -1 when there is none */
};

/* Starts argv[0] with argv/envp, the other end of a new socketpair on fd 3,
 * stdin on /dev/null, default signal dispositions and an empty mask, in a new
 * process group. No Python: call without the GIL. 0 or -errno. */
int sb_child_spawn(char *const *argv, char *const *envp, struct sb_child *ret);

/* SIGKILL to the child's process group, then reaps it. Safe on an empty
 * child. *ret_status (optional) gets the wait status, -1 if unknown. */
void sb_child_kill(struct sb_child *child, int *ret_status);

/* Waits up to timeout_ms for the child to exit by itself (after the exit
 * frame), then kills it. */
void sb_child_stop(struct sb_child *child, int timeout_ms);

/* Kills every live worker (from a fatal signal handler: async-signal-safe). */
void sb_child_kill_all_from_signal(void);

/* "exited with status 3", "killed by signal 9 (Killed)". */
void sb_describe_status(int status, char *buf, size_t len);

/* unpickle.c: the result guard's second stage. Returns the rebuilt value, or
 * NULL with RestrictedUnpicklingError (or MemoryError) set; data over limit
 * bytes is refused. what names the call in messages. */
PyObject *sb_unpickle(const char *data, size_t len, size_t limit, enum sb_result_channel channel,
		      const char *what);

/* Rebuilds the exception of an exception frame and sets it (returns NULL). */
PyObject *sb_raise_remote_exception(const char *data, size_t len, bool base, const char *what);
