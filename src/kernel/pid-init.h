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
 * With a join_fd (a socket), it first makes for itself the namespaces
 * ns_flags names, CLONE_NEWNS then CLONE_NEWNET, each reported on join_fd as
 * an int (0 or -errno) once made: the program's process joins them (setns()
 * on the init's pidfd), the mount namespace before it builds the root, the
 * network namespace (the costliest to make) after, so that the two run side
 * by side; then it writes a byte or closes its end. Until then the init stays
 * dumpable, which the join needs. Returns its pid, or -errno.
 *
 * With exec_path (python-sb-supervise) and a join_fd, an init that shares the
 * caller's memory first execs it in its init mode (sb_pid_init_run()), so
 * that it shares nothing with a program's process that gets the caller's
 * memory too (namespaces.c): its first report on join_fd comes from the new
 * image, or is the exec's failure. */
struct sb_init_args {
	int alive_fd;
	int join_fd;  /* -1: no namespace of its own */
	int ns_flags; /* CLONE_NEWNS, CLONE_NEWNET */
	const char *exec_path;
};

pid_t sb_pid_init_start(const struct sb_init_args *a);

/* The init's life in python-sb-supervise's init mode, started as
 *   python-sb-supervise SB_INIT_PROTOCOL ALIVE_FD JOIN_FD NS_FLAGS */
#define SB_INIT_PROTOCOL "init-1"
_Noreturn void sb_pid_init_run(const struct sb_init_args *a);
