/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Landlock: the process restricts itself (no privilege needed). The policy is
 * plain data built by the caller; applying it is one irreversible step. */

struct sb_landlock_path {
	const char *path; /* a directory, or a regular file (file rights only) */
	bool writable;	  /* false: execute, read_file, read_dir */
	bool optional;	  /* implicit grant: also skipped when unreachable (EACCES) */
	bool is_file;	  /* known not to be a directory: file rights only, tried first */
	bool list_only;	  /* a directory's listing (READ_DIR) and nothing in it */
};

struct sb_landlock_policy {
	const struct sb_landlock_path *paths;
	size_t n_paths;
	/* TCP (ABI >= 4). restrict_*: handle that right at all; the ports listed
	 * are then the only ones allowed. Not restricting means any port. */
	bool restrict_tcp_bind;
	const uint16_t *bind_ports;
	size_t n_bind_ports;
	bool restrict_tcp_connect;
	const uint16_t *connect_ports;
	size_t n_connect_ports;
	/* ABI >= 6: abstract Unix sockets and signals limited to the sandbox. */
	bool scope_abstract_unix;
	bool scope_signal;
};

/* What the running kernel could not enforce. */
struct sb_landlock_report {
	int abi;
	uint64_t fs_rights_missing;  /* LANDLOCK_ACCESS_FS_* bits the ABI lacks */
	uint64_t net_rights_missing; /* LANDLOCK_ACCESS_NET_* bits the ABI lacks */
	uint64_t scopes_missing;     /* LANDLOCK_SCOPE_* bits the ABI lacks */
	char **skipped_paths;	     /* paths that did not exist (NULL-terminated) */
};

/* The ABI version (>= 1); -ENOSYS or -EOPNOTSUPP when Landlock is not built
 * or disabled at boot. No side effect. */
int sb_landlock_abi(void);

/* Builds the ruleset, adds one rule per path (a missing path is skipped and
 * reported; any other failure fails), then sets no_new_privs and restricts
 * the calling thread (and what it later creates): nothing irreversible happens
 * before the ruleset is complete. Rights the ABI lacks are masked
 * and reported. 0, or -errno with *reterr naming the step that failed; after
 * a failure the caller must not run the program. */
int sb_landlock_apply(const struct sb_landlock_policy *policy, struct sb_landlock_report *report,
		      char **reterr);

void sb_landlock_report_done(struct sb_landlock_report *report);
