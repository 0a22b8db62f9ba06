/* SPDX-License-Identifier: MIT */
#pragma once

/* Observing native code while learning (learn-native.c): C extensions and
 * ctypes open files and sockets without any audit event, so the Python guard
 * never sees them. A seccomp filter returning SECCOMP_RET_USER_NOTIF on the
 * file and socket system calls sends each call to a helper process, which
 * notes the path or address and lets the call continue unchanged. */

#include <stdbool.h>
#include <stdint.h>

/* Forks the helper (before any filter exists: it must never be under the
 * filter it serves). skip_dirs: paths under these are not even noted. 0 or
 * -errno with *reterr. */
int sb_learn_native_start(char *const *skip_dirs, char **reterr);

/* Installs the notifying filter on the calling thread (and what it starts
 * later) and hands the listener to the helper. 0 or -errno with *reterr;
 * -EPIPE means the filter is in place without a listener, and the program
 * must not run (its file and socket calls would fail). */
int sb_learn_native_arm(char **reterr);

struct sb_learn_native_sink {
	void (*file)(const char *path, bool write, void *userdata);
	void (*net)(const char *ip, unsigned protocol, uint16_t port, unsigned direction,
		    void *userdata);
	void *userdata;
};

/* Asks the helper for what it noted and passes each record to sink. The
 * helper keeps serving the filter until every holder of its socket is gone.
 * 0 or -errno. */
int sb_learn_native_collect(const struct sb_learn_native_sink *sink);
