/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "util.h"

/* limit-memory= for the whole process tree (cgroup.c): a cgroup v2 child of
 * python-sb's own cgroup with memory.max, where the memory controller is
 * delegated to python-sb's children. RLIMIT_AS bounds each process's address
 * space; it does not see pages that belong to no mapping (a file in tmpfs,
 * the memory of a pipe or a socket) nor add up the processes of a tree. The
 * cgroup charges all of them to the program. Where no cgroup can be made,
 * RLIMIT_AS stays the only bound, and seccomp refuses memfd_create and System
 * V shared memory whatever the profile. */

struct sb_cgroup {
	int dir_fd; /* -1: none */
	char *path;
};

/* Where a program's cgroup would go: python-sb's own cgroup directory, when
 * cgroup v2 is mounted, "memory" is in its cgroup.subtree_control and python-sb
 * may create a directory there. -EOPNOTSUPP with *reterr saying why not. The
 * files are read below `root` ("/" but in tests). */
int sb_cgroup_probe(const char *root, char **ret_parent, char **reterr);

/* The directory of the cgroup v2 hierarchy `proc_cgroup` (/proc/self/cgroup)
 * names under the cgroup2 mount of `mountinfo` (/proc/self/mountinfo). Pure:
 * 0 with *ret (malloc'ed), -ENOENT when there is none. */
int sb_cgroup_locate(const char *mountinfo, const char *proc_cgroup, char **ret);

/* Creates <parent>/python-sb.<pid> with memory.max = memory_bytes, no swap
 * (memory.swap.max = 0 where swap is accounted) and memory.oom.group = 1 (an
 * out-of-memory kill takes the whole tree). 0, or -errno with *reterr. */
int sb_cgroup_create(const char *parent, unsigned long long memory_bytes, struct sb_cgroup *ret,
		     char **reterr);
/* Moves pid into the cgroup. 0, or -errno with *reterr. */
int sb_cgroup_attach(const struct sb_cgroup *cg, pid_t pid, char **reterr);
/* Whether the kernel killed in it for lack of memory (memory.events). */
bool sb_cgroup_oom_killed(const struct sb_cgroup *cg);
/* Removes it (empty by then: every process of the program is reaped). */
void sb_cgroup_remove(struct sb_cgroup *cg);
