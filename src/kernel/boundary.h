/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdint.h>

#include "landlock.h"
#include "privileges.h"
#include "profile.h"
#include "seccomp-filter.h"

/* The kernel side of a policy: what Landlock grants, what seccomp refuses,
 * which resource limits apply. Built from the profile as plain data (pure, no
 * syscalls), entered in one irreversible step just before the interpreter is
 * initialised. */

/* What the interpreter itself needs to read, from its own configuration. */
struct sb_interp_paths {
	char **dirs;  /* stdlib, lib-dynload, site directories, the venv */
	char **files; /* the launcher binary, the script */
};

struct sb_boundary {
	bool use_landlock;	/* os-sandbox=landlock */
	bool use_seccomp;	/* every provider but none */
	bool drop_capabilities; /* likewise */
	struct sb_landlock_path *paths;
	char **path_reasons; /* parallel to paths, for --explain */
	size_t n_paths;
	bool restrict_bind, restrict_connect;
	uint16_t *bind_ports, *connect_ports;
	size_t n_bind_ports, n_connect_ports;
	char **notes; /* what the kernel layer leaves to the Python guard */
	struct sb_seccomp_policy seccomp;
	struct sb_limits limits;
	struct sb_identity user; /* user=: the identity to run the program as */
	/* limit-memory: where the program's cgroup v2 goes (cgroup.h), or NULL
	 * and why not, for --explain. */
	char *cgroup_parent, *cgroup_note;
	/* Landlock: a rule file a writable grant reaches (rule-files.h); the
	 * boundary cannot be entered, and --explain says why. */
	char *rule_file_conflict;
};

/* 0 or -ENOMEM. */
int sb_boundary_build(const struct sb_profile *p, enum sb_os_sandbox provider,
		      const struct sb_interp_paths *interp, struct sb_boundary *ret);
void sb_boundary_done(struct sb_boundary *b);

/* Whether a kernel with this Landlock ABI can enforce what the policy needs;
 * -EOPNOTSUPP with *reterr when it cannot (TCP port rules need ABI 4). Rights
 * that only narrow further (IOCTL_DEV, scopes) are reported, not required. */
int sb_boundary_check_abi(const struct sb_boundary *b, int abi, char **reterr);

/* Landlock, then identity and capabilities (privileges.h), then seccomp (it
 * refuses the calls that drop them), then the resource limits (last: building
 * the ruleset and the filter needs memory and descriptors). Must run before
 * any thread exists: Landlock and seccomp only bind the calling thread and
 * what it creates later. 0, or -errno with *reterr; after a failure the
 * program must not run. */
int sb_boundary_enter(const struct sb_boundary *b, struct sb_landlock_report *report,
		      char **reterr);

/* Whether a supervisor process must run the program (timeout=, limit-output=,
 * limit-memory= with a cgroup), and its options. */
bool sb_boundary_supervise(const struct sb_boundary *b, struct sb_supervise_options *ret);

/* Appends the kernel side of the policy to --explain's output. */
int sb_boundary_explain(const struct sb_boundary *b, struct sb_buf *out);
