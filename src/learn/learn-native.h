/* SPDX-License-Identifier: MIT */
#pragma once

/* Observing native code while learning (learn-native.c): C extensions and
 * ctypes open files and sockets without any audit event, so the Python guard
 * never sees them. The profile's own seccomp allowlist, loaded with
 * SECCOMP_RET_USER_NOTIF where it would refuse, and on the file and socket
 * system calls whatever it says, sends each such call to a helper process,
 * which notes the path, the address, or the rule the call would need, and
 * lets it continue unchanged; a call that no rule allows is noted and
 * refused (EPERM), as it will be without learning. */

#include <stdbool.h>
#include <stdint.h>

#include "seccomp-filter.h"

/* Forks the helper (before any filter exists: it must never be under the
 * filter it serves). skip_dirs: paths under these are not even noted;
 * policy: the profile's seccomp policy (what a run without learning
 * allows). 0 or -errno with *reterr. */
int sb_learn_native_start(char *const *skip_dirs, const struct sb_seccomp_policy *policy,
			  char **reterr);

/* Installs the notifying filter on the calling process (and what it starts
 * later) and hands the listener to the helper. 0 or -errno with *reterr;
 * -EPIPE means the filter is in place without a listener, and the program
 * must not run (its file and socket calls would fail). */
int sb_learn_native_arm(char **reterr);

struct sb_learn_native_sink {
	void (*file)(const char *path, bool write, void *userdata);
	void (*net)(const char *ip, unsigned protocol, uint16_t port, unsigned direction,
		    void *userdata);
	/* A system call outside the profile's allowlist: rule is what would
	 * allow it (SB_SECCOMP_NEED_PROCESS only: the others are learned as
	 * files and addresses), or NULL when no rule does. */
	void (*syscall)(const char *name, enum sb_seccomp_need need, void *userdata);
	void *userdata;
};

/* Asks the helper for what it noted and passes each record to sink. The
 * helper keeps serving the filter until every holder of its socket is gone.
 * 0 or -errno. */
int sb_learn_native_collect(const struct sb_learn_native_sink *sink);
