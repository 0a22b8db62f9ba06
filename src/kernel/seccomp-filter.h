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

/* Loads the filter into the calling process and all its threads (sets
 * no_new_privs first). The filters of every policy are compiled by libseccomp
 * when python-sb is built (seccomp-programs.c): building one at start-up costs
 * about half a millisecond, 5 % of a `-c pass`. 0, or -errno with *reterr. */
int sb_seccomp_apply(const struct sb_seccomp_policy *policy, char **reterr);

/* The same, building the filter with libseccomp now (the fallback, and the
 * reference the tests compare the compiled programs with). */
int sb_seccomp_apply_dynamic(const struct sb_seccomp_policy *policy, char **reterr);

/* Writes the policy's BPF program to fd (seccomp_export_bpf). */
int sb_seccomp_export(const struct sb_seccomp_policy *policy, int fd, char **reterr);

/* Policies as small integers (< SB_SECCOMP_N_KEYS), for the compiled table. */
#define SB_SECCOMP_N_KEYS 32u
unsigned sb_seccomp_policy_key(const struct sb_seccomp_policy *policy);
void sb_seccomp_policy_from_key(unsigned key, struct sb_seccomp_policy *ret);

/* One compiled program (BPF instructions as struct sock_filter, 8 bytes). */
struct sb_seccomp_program {
	const unsigned char *code;
	unsigned short n_insns;
};
/* Indexed by key; n_insns == 0 where nothing was compiled. */
extern const struct sb_seccomp_program sb_seccomp_programs[SB_SECCOMP_N_KEYS];

/* Appends a human-readable description of the filter (for --explain). */
int sb_seccomp_describe(const struct sb_seccomp_policy *policy, struct sb_buf *out);

/* The i-th syscall of the always-denied table (EPERM whatever the policy),
 * NULL past the end; for tests. */
const char *sb_seccomp_denied_syscall(size_t i);
