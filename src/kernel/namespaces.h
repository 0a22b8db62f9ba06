/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "netns.h"
#include "new-root.h"

/* os-sandbox=unshare's processes. python-sb itself creates new user, mount,
 * PID, network, IPC, UTS and cgroup namespaces (no unshare(1) runs), maps
 * one uid and one gid, and runs the program in them:
 *
 *   python-sb (the caller: the pid its parent knows; in the new user
 *   |          namespace, outside the PID namespace; runs no program code:
 *   |          waits, forwards signals, reports the status, kills the init
 *   |          at the end)
 *   +- init   (PID 1 of the new PID namespace: makes the mount and network
 *   |          namespaces, reaps orphans, holds the namespace; no
 *   |          capability, not dumpable)
 *   +- the program (PID 2: joins the init's namespaces, builds the new
 *              root, pivots into it, drops every capability, then returns
 *              to the launcher, which goes on with seccomp, the limits and
 *              the interpreter)
 *
 * Where it can (supervisor_exe, no net= rules, supervise-exec.h), the
 * program's process is not a fork but a clone(CLONE_VM) that gets the
 * launcher's memory (no copy-on-write faults), and the launcher's process
 * execs python-sb-supervise, which does the waiting (same pid, same
 * statuses); the init then execs python-sb-supervise's init mode first
 * (pid-init.h), so that no process outside the program's seccomp filter
 * shares its memory. Otherwise python-sb forks the program and waits.
 *
 * Python cannot be PID 1 itself: the init of a PID namespace ignores every
 * signal it has no handler for, so os.kill(os.getpid(), SIGTERM) would do
 * nothing and the program could never die of a signal as `python` does.
 *
 * When PID 1 ends, the kernel kills everything left in the namespace: what
 * the program leaves running in the background dies with it. */

struct sb_ns_config {
	/* What getuid()/getgid() say inside: the caller's own ids by default
	 * (unshare.map-root-user: 0). */
	uid_t inner_uid;
	gid_t inner_gid;
	const struct sb_root_plan *root;
	const struct sb_netns_plan *net; /* pinned (not symbolic) */
	/* python-sb-supervise, or NULL: the launcher forks the program's
	 * process and waits itself. */
	const char *supervisor_exe;
};

/* Returns 0 in the process that goes on to run the program, inside every
 * namespace and the new root, without capabilities; 1 in the caller once the
 * program has ended, with its wait status in *ret_status (the caller then
 * reports it as its own and runs nothing else). -errno with *reterr on
 * failure: in the caller, before anything of the program ran; in the
 * program's process, which must then exit (the caller reports its status).
 * The caller must be single-threaded and have no other child. */
int sb_ns_run(const struct sb_ns_config *c, int *ret_status, char **reterr);

/* Whether signals can be scoped to the sandbox with Landlock here (ABI 6);
 * without it the program gets a session of its own instead. */
bool sb_ns_signal_scope_available(void);

/* Whether Landlock can keep the program to the new root here (ABI 1): a
 * descriptor into the host's mounts (stdin from a file) cannot be reopened
 * by its host path through /proc/self/fd. */
bool sb_ns_files_scope_available(void);

/* Enters a Landlock domain that grants every filesystem right but EXECUTE
 * beneath the process's root only (namespaces.c says why), and with scope,
 * limits signals and abstract sockets to the domain (ABI 6; without it a
 * session of its own). Without Landlock, 0 and nothing done. 0 or -errno. */
int sb_ns_confine_beneath_root(bool scope);
