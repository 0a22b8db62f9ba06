/* SPDX-License-Identifier: MIT */
#pragma once

#include <sys/types.h>

/* The init of a new PID namespace (its PID 1): the caller's first child after
 * unshare(CLONE_NEWPID). It reaps the orphans the kernel hands it and holds
 * the namespace; when it dies, the kernel kills every process in it. It has no
 * capability, is not dumpable, holds no descriptor, blocks every signal (SIGKILL
 * from the caller ends it), names itself "python-sb-init" (/proc/1/comm: a
 * python-sb run inside sees whose namespace it is), and dies with the caller
 * (PR_SET_PDEATHSIG; alive_fd is a pipe's read end whose write end only the
 * caller holds, for the race before the prctl()).
 *
 * Where raw system calls are written here (x86_64, aarch64) and no sanitizer
 * runs, it shares the caller's memory instead of copying it (clone(CLONE_VM),
 * no fork): it runs on a stack of its own and makes no libc call that could
 * touch the caller's thread-local state (errno).
 *
 * net_fd >= 0: it first creates the sandbox's network namespace for itself
 * (unshare(CLONE_NEWNET), the costliest namespace to make), and writes the
 * outcome to net_fd (a socket) as an int, 0 or -errno: the program's process
 * joins it (setns() on the init's pidfd) once it has built its root, so that
 * the two run side by side, and then writes a byte or closes its end; until
 * then the init stays dumpable, which the join needs. Returns its pid, or
 * -errno. */
pid_t sb_pid_init_start(int alive_fd, int net_fd);
