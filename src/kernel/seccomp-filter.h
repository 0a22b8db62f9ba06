/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* The seccomp filter every provider but `none` installs (libseccomp): an
 * allowlist. What CPython needs to compute, read files and use its standard
 * streams is allowed; what a grant of the profile needs is allowed with that
 * grant; everything else fails with EPERM. Numbers libseccomp cannot name on
 * this architecture, and clone3 (whose flags seccomp cannot read), fail with
 * ENOSYS so that libc falls back to what it knows. The list, with the reason
 * for each group, is what sb_seccomp_describe() prints (--explain). */
struct sb_seccomp_policy {
	bool allow_inet;	/* socket(AF_INET/AF_INET6, SOCK_STREAM) (some net= rule) */
	bool allow_udp;		/* SOCK_DGRAM on AF_INET/AF_INET6 (a udp net= rule) */
	bool allow_unix_socket; /* socket(AF_UNIX); socketpair() is always allowed */
	bool allow_exec;	/* execve, execveat */
	bool allow_fork;	/* fork, vfork, clone of processes, signals to any pid */
	bool allow_write;	/* creating, renaming, removing files, changing
				 * their metadata (an expose-rw rule) */
	bool landlock;		/* Landlock decides which files open() may write,
				 * create or truncate; without it and without
				 * allow_write, open() is read-only */
};

/* Where the process's own pid belongs in a compiled program: the filters are
 * built when python-sb is built, so "this process" is a placeholder that the
 * loader replaces with getpid() in every BPF_JEQ instruction comparing with
 * it. Above any pid the kernel hands out (pid_max <= 2^22), and no other rule
 * compares with this value (tests/unit/test-seccomp-programs.c checks). */
#define SB_SECCOMP_SELF_PID UINT32_C(0x7ffe5eed)

/* The same for timeout='s two timers (watchdog.h), which timer_settime() and
 * timer_delete() may not touch: the loader puts in the kernel's ids of the
 * timers, or SB_SECCOMP_NO_TIMER (a timer id is an int >= 0: the kernel would
 * refuse -1 anyway). */
#define SB_SECCOMP_TIMER_0  UINT32_C(0x7ffe71a0)
#define SB_SECCOMP_TIMER_1  UINT32_C(0x7ffe71a1)
#define SB_SECCOMP_NO_TIMER UINT32_C(0xffffffff)

/* What a filter names besides the policy and the pid: the timers only
 * python-sb may change (watchdog.h; n_timers 0 when there are none). */
struct sb_seccomp_self {
	int timers[2];
	unsigned n_timers;
};

/* Loads the filter into the calling process and all its threads (sets
 * no_new_privs first). The filters of every policy are compiled by libseccomp
 * when python-sb is built (seccomp-programs.c): building one at start-up costs
 * about half a millisecond, 5 % of a `-c pass`. 0, or -errno with *reterr. */
int sb_seccomp_apply(const struct sb_seccomp_policy *policy, const struct sb_seccomp_self *self,
		     char **reterr);

/* The same, building the filter with libseccomp now (the fallback, and the
 * reference the tests compare the compiled programs with). */
int sb_seccomp_apply_dynamic(const struct sb_seccomp_policy *policy,
			     const struct sb_seccomp_self *self, char **reterr);

/* Learning mode: loads the filter with SECCOMP_RET_USER_NOTIF instead of
 * EPERM for what it refuses, and for the calls named in `observe` (NULL-ended)
 * whatever their arguments ("sendto" only with a destination address), and
 * returns the listener descriptor in *ret_fd (the caller's to close). A helper
 * answers each notification (learn-native.c). ENOSYS answers stay. */
int sb_seccomp_apply_notify(const struct sb_seccomp_policy *policy, const char *const *observe,
			    int *ret_fd, char **reterr);

/* Writes the policy's BPF program to fd (seccomp_export_bpf), with
 * SB_SECCOMP_SELF_PID where the pid belongs and SB_SECCOMP_TIMER_0 and _1 where
 * the timers' ids do. */
int sb_seccomp_export(const struct sb_seccomp_policy *policy, int fd, char **reterr);

/* Policies as small integers (< SB_SECCOMP_N_KEYS), for the compiled table. */
#define SB_SECCOMP_N_KEYS 128u
unsigned sb_seccomp_policy_key(const struct sb_seccomp_policy *policy);
void sb_seccomp_policy_from_key(unsigned key, struct sb_seccomp_policy *ret);

/* One compiled program (BPF instructions as struct sock_filter, 8 bytes). */
struct sb_seccomp_program {
	const unsigned char *code;
	unsigned short n_insns;
};
/* Indexed by key; n_insns == 0 where nothing was compiled. */
extern const struct sb_seccomp_program sb_seccomp_programs[SB_SECCOMP_N_KEYS];

/* Replaces SB_SECCOMP_SELF_PID with pid in a program's comparisons; returns
 * how many instructions it changed. */
size_t sb_seccomp_patch_self_pid(void *insns, size_t n_insns, uint32_t pid);
/* Replaces SB_SECCOMP_TIMER_0 and _1 with the protected timers' ids (NULL or
 * fewer: SB_SECCOMP_NO_TIMER); returns how many comparisons it changed. */
size_t sb_seccomp_patch_timers(void *insns, size_t n_insns, const struct sb_seccomp_self *self);

/* Appends a human-readable description of the filter (for --explain). */
int sb_seccomp_describe(const struct sb_seccomp_policy *policy, struct sb_buf *out);

/* Which rule of a profile would let this refused call through (syscall
 * number and arguments as seccomp saw them), for learning mode: the kind,
 * and the rule in words in *ret_rule ("an expose-rw rule",
 * "python-api=ALLOW:process-exec"...); SB_SECCOMP_NEED_NONE (*ret_rule NULL)
 * when no rule allows it. */
enum sb_seccomp_need {
	SB_SECCOMP_NEED_NONE,
	SB_SECCOMP_NEED_WRITE,
	SB_SECCOMP_NEED_PROCESS,
	SB_SECCOMP_NEED_NET,
	SB_SECCOMP_NEED_UNIX,
};
enum sb_seccomp_need sb_seccomp_rule_for(int nr, const uint64_t args[6], const char **ret_rule);

/* The i-th syscall the filter allows whatever the profile, NULL past the end;
 * the i-th one no grant allows (EPERM always); for tests. */
const char *sb_seccomp_base_syscall(size_t i);
const char *sb_seccomp_refused_syscall(size_t i);
