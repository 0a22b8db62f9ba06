/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

/* The seccomp filter every provider but `none` installs (libseccomp).
 * Default allow; the syscalls a Python program has no business with fail with
 * EPERM; syscalls unknown to libseccomp's table of this architecture and the
 * ones libc can replace (clone3) fail with ENOSYS so that libc falls back. */
struct sb_seccomp_policy {
	bool allow_inet;	/* socket(AF_INET/AF_INET6) at all (some net= rule) */
	bool allow_udp;		/* SOCK_DGRAM on AF_INET/AF_INET6 (a udp net= rule) */
	bool allow_unix_socket; /* socket(AF_UNIX); socketpair() is always allowed */
	bool allow_exec;	/* execve, execveat */
	bool allow_fork;	/* fork, vfork, clone without CLONE_THREAD */
};

/* Loads the filter into the calling process (sets no_new_privs first).
 * 0, or -errno with *reterr. */
int sb_seccomp_apply(const struct sb_seccomp_policy *policy, char **reterr);

/* Appends a human-readable description of the filter (for --explain). */
int sb_seccomp_describe(const struct sb_seccomp_policy *policy, struct sb_buf *out);

/* The i-th syscall of the always-denied table (EPERM whatever the policy),
 * NULL past the end; for tests. */
const char *sb_seccomp_denied_syscall(size_t i);
