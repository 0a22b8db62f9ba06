/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "identity.h"
#include "util.h"

/* Who runs the program, and with which privileges (privileges.c).
 *
 * Every provider but `none` leaves the program no capability at all,
 * whoever started python-sb: the bounding, permitted, effective, inheritable
 * and ambient sets are cleared, the securebits that would give root its
 * capabilities back are set and locked, and no_new_privs is set (no setuid
 * or file-capability binary can raise anything). A uid 0 without
 * capabilities still owns root's files: `user=UID[:GID]` (a profile key, and
 * so --user= on the command line) makes a python-sb started as root run the
 * program as that uid and gid, with no supplementary group. */

/* What sb_privileges_drop() did, for --explain and the tests. */
struct sb_privileges_report {
	bool switched;	      /* the uid and gid were changed */
	bool bounding_kept;   /* no CAP_SETPCAP: the bounding set could not be cleared */
	bool securebits_kept; /* likewise for the securebits */
	uint32_t uid, gid;    /* the identity the program runs with */
};

/* Switches to `user` when it is set and python-sb may change its identity
 * (CAP_SETUID and CAP_SETGID: started as root; an unprivileged caller keeps
 * its own identity, it has nothing to drop). With drop_capabilities, clears
 * every capability set, locks the securebits and sets no_new_privs. Must run
 * before the seccomp filter, which refuses all of these calls. Keeps the
 * parent-death signal, which a change of uid clears. 0, or -errno with
 * *reterr; after a failure the program must not run. */
int sb_privileges_drop(const struct sb_identity *user, bool drop_capabilities,
		       struct sb_privileges_report *report, char **reterr);

/* The --explain lines for this identity and capability policy. */
int sb_privileges_explain(const struct sb_identity *user, bool drop_capabilities,
			  struct sb_buf *out);
