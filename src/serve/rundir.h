/* SPDX-License-Identifier: MIT */
#pragma once

#include "runner.h"

/* The directories of the service: one private work directory for the
 * server's life, and one directory per run below it, holding the program
 * (main.py) and its files, readable by the run's user, removed with the run.
 * Nothing of one run is left for the next. */

/* Creates dir (mode 0711: runs may enter it, nobody may list it), or a fresh
 * python-sb-serve.XXXXXX in /dev/shm (a tmpfs: cheaper per run) or else /tmp
 * when dir is NULL (*ret_path: the path), holding a "lock" file locked
 * (flock) for as long as *ret_lock_fd is open: the service's life. An
 * existing dir is refused when it holds anything a service did not make
 * (-ENOTEMPTY: it is emptied at start and exit) or when another live service
 * holds its lock (-EBUSY). 0 or -errno with *reterr. */
int sb_workdir_create(const char *dir, char **ret_path, int *ret_lock_fd, char **reterr);
/* Removes the default work directories that a service of this user left
 * when it was killed: python-sb-serve.XXXXXX directories (never links) of
 * this user in /dev/shm and /tmp whose lock no live service holds.
 * *ret_removed: how many. 0, or the first -errno (the others are still
 * tried). */
int sb_workdir_remove_stale(unsigned *ret_removed);
/* Removes what runs left below path (after a crash), and path itself when
 * remove_self. */
int sb_workdir_clean(const char *path, bool remove_self);
/* Removes what runs left below path but its lock (held by this service):
 * at start. */
int sb_workdir_empty(const char *path);

/* A new directory below workdir with main.py and the spec's files, readable
 * by the run's user alone: by_group (the service is root and runs as
 * another user), group gid with modes 0750/0640; otherwise the service's own
 * user, 0700/0600. No other user may list or read them. *ret_path: its path.
 * 0 or -errno. */
int sb_rundir_create(const char *workdir, const struct sb_run_spec *spec, bool by_group, gid_t gid,
		     char **ret_path);
/* Removes it and everything in it. 0 or -errno. */
int sb_rundir_remove(const char *path);
