/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdint.h>

#include "landlock.h"
#include "privileges.h"
#include "profile.h"
#include "resource-limits.h"
#include "seccomp-filter.h"
#include "str-index.h"
#include "watchdog.h"

/* The kernel side of a policy: what the provider makes the kernel enforce
 * (its file grants and TCP ports), what seccomp refuses, which resource limits
 * apply. Built from the profile as plain data (pure, no syscalls), entered in
 * one irreversible step just before the interpreter is initialised. What is
 * built and entered is the selected provider's business (provider.h): this
 * file composes its part with the filter and the limits. */

struct sb_provider;
struct sb_net_policy;

/* What the interpreter itself needs to read, from its own configuration. */
struct sb_interp_paths {
	char **dirs;  /* stdlib, lib-dynload, site directories, the venv */
	char **files; /* the launcher binary, the script */
	/* sys.path[0] (the script's directory, or the cwd for -m, -c, stdin
	 * and the REPL; NULL with -P/-I and in partial mode's worker): listed,
	 * and the files of the modules python-import= allows there read
	 * (path0-modules.h), never the directory as a whole. */
	char *path0;
	char **path0_modules;
	/* How the provider confines files, for the guard's check of the
	 * programs the program runs (guard-files-exec.h): not at all, by
	 * refusing (Landlock), or by hiding (a new root). */
	bool files_confined, files_hidden;
	const char *provider; /* its name, static */
};

struct sb_boundary {
	const struct sb_provider *provider;
	/* Filled by a provider that confines files (SB_PROVIDER_FILES). */
	struct sb_landlock_path *paths;
	char **path_reasons; /* parallel to paths, for --explain */
	size_t n_paths, cap_paths;
	struct sb_str_index path_index; /* over paths */
	/* Filled by a provider that filters TCP ports (SB_PROVIDER_NET_TCP_PORTS). */
	bool restrict_bind, restrict_connect;
	uint16_t *bind_ports, *connect_ports;
	size_t n_bind_ports, n_connect_ports;
	char **notes; /* what the provider leaves to the Python guard */
	/* What a provider keeps for itself (its done hook frees it). */
	void *provider_data;
	/* The pinned addresses of the net= host names, when the launcher has
	 * resolved them (the Python guard's pin; the provider resolves them
	 * itself otherwise): a kernel filter must name the same addresses. */
	const struct sb_net_policy *net_policy;
	/* A wrapper provider (SB_PROVIDER_WRAPS_EXEC) already confines this
	 * process: python-sb re-entered under it; entering applies the seccomp
	 * filter and the limits only. */
	bool entered_by_wrapper;
	bool use_seccomp; /* SB_PROVIDER_SECCOMP */
	struct sb_seccomp_policy seccomp;
	/* Learning (SB_MODE_LEARN): seccomp is relaxed, and this is the
	 * profile's own allowlist, which learning's native observer watches. */
	struct sb_seccomp_policy seccomp_profile;
	bool drop_capabilities;	 /* SB_PROVIDER_PRIVILEGES */
	struct sb_limits limits; /* SB_PROVIDER_LIMITS */
	/* timeout= held in the program's own process (sb_boundary_use_watchdog()):
	 * no supervisor for it; its timers are armed on entering. Deadline 0: a
	 * supervisor holds the timeout, or there is none. */
	struct sb_watchdog watchdog;
	struct sb_identity user; /* user=: the identity to run the program as */
	/* limit-memory: where the program's cgroup v2 goes (cgroup.h), or NULL
	 * and why not, for --explain. */
	char *cgroup_parent, *cgroup_note;
	/* A rule file a writable grant reaches (rule-files.h), set by a
	 * provider that cannot hide it: the boundary cannot be entered, and
	 * --explain says why. */
	char *rule_file_conflict;
	/* python-sb-supervise, for a provider that leaves this process outside
	 * while the program runs (SB_PROVIDER_CHILD_PROCESS): it becomes that
	 * program instead of waiting as python-sb; NULL: it waits. Not owned. */
	const char *supervisor_exe;
};

/* Learning (mode SB_MODE_LEARN) gets a seccomp filter that refuses nothing
 * the Python guard would let through while learning: processes, Internet and
 * Unix sockets. 0 or -ENOMEM. */
int sb_boundary_build(const struct sb_profile *p, const struct sb_provider *provider,
		      const struct sb_interp_paths *interp, enum sb_rules_mode mode,
		      struct sb_boundary *ret);
/* sb_boundary_build() in two steps, for the launcher: everything but the
 * provider's own part (the seccomp policy, the limits, the identity, the
 * cgroup), which needs no interpreter paths, so that the supervisor
 * (sb_boundary_supervise()) can be forked before the interpreter is
 * pre-initialised; then the provider's part (its prepare hook: the Landlock
 * grants name the interpreter's paths). On failure of the second step the
 * caller still owns *b. */
int sb_boundary_build_base(const struct sb_profile *p, const struct sb_provider *provider,
			   enum sb_rules_mode mode, struct sb_boundary *ret);
int sb_boundary_build_provider(struct sb_boundary *b, const struct sb_profile *p,
			       const struct sb_interp_paths *interp);
void sb_boundary_done(struct sb_boundary *b);

/* One more file grant (path absolute and resolved, a directory), as an
 * expose-ro/-rw rule would add it, for a provider that confines files (a
 * no-op otherwise): python-sb serve's fork server builds the boundary once
 * and grants each run's directory in the run's own process. 0 or -ENOMEM. */
int sb_boundary_add_path(struct sb_boundary *b, const char *path, bool writable, const char *why);

/* The grant of exactly this path, or NULL. */
struct sb_landlock_path *sb_boundary_find_path(const struct sb_boundary *b, const char *path);

/* Adds grant (its path and why are copied), whatever the provider; a path
 * granted twice keeps its widest right (writable, is_file if either says so;
 * optional only if both do). 0 or -ENOMEM. */
int sb_boundary_grant_path(struct sb_boundary *b, const struct sb_landlock_path *grant,
			   const char *why);

/* The provider's part, then seccomp, then the resource limits (last: building
 * the ruleset and the filter needs memory and descriptors); between the
 * provider's part and seccomp, the identity and the capabilities
 * (privileges.h: seccomp refuses the calls that drop them), then the
 * watchdog's timers (the filter names them). Must run before any thread
 * exists: Landlock and seccomp
 * only bind the calling thread and what it creates later. What the kernel
 * could not enforce is added to *warnings. 0 in the process that runs the
 * program; 1 in a parent the provider left outside (provider.h, enter), once
 * the program's process has ended, with its wait status in *ret_status; or
 * -errno with *reterr, and after a failure the program must not run. */
int sb_boundary_enter(const struct sb_boundary *b, char ***warnings, int *ret_status,
		      char **reterr);

/* Sets b->watchdog when timeout= can be held without a supervisor
 * (watchdog.h): it is the only thing to supervise, and the program can
 * neither start processes (this boundary's seccomp filter refuses them) nor
 * run in a child of this process (SB_PROVIDER_CHILD_PROCESS). The deadline is
 * counted from start_ns (CLOCK_MONOTONIC, as a supervisor started now would). */
void sb_boundary_use_watchdog(struct sb_boundary *b, uint64_t start_ns);

/* Whether a supervisor process must run the program (timeout= without the
 * watchdog, limit-output=, limit-memory= with a cgroup), and its options. */
bool sb_boundary_supervise(const struct sb_boundary *b, struct sb_supervise_options *ret);

/* Appends the kernel side of the policy to --explain's output. */
int sb_boundary_explain(const struct sb_boundary *b, struct sb_buf *out);
