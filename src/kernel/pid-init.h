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
 * touch the caller's thread-local state (errno). Returns its pid, or -errno. */
pid_t sb_pid_init_start(int alive_fd);
