/* SPDX-License-Identifier: MIT */
#pragma once

#include "runner.h"

/* The directories of the service: one private work directory for the
 * server's life, and one directory per run below it, holding the program
 * (main.py) and its files, readable by the run's user, removed with the run.
 * Nothing of one run is left for the next. */

/* Creates dir (mode 0711: runs may enter it, nobody may list it), or a fresh
 * /tmp/python-sb-serve.XXXXXX when dir is NULL (*ret_path: the path). 0 or
 * -errno with *reterr. */
int sb_workdir_create(const char *dir, char **ret_path, char **reterr);
/* Removes what runs left below path (after a crash), and path itself when
 * remove_self. */
int sb_workdir_clean(const char *path, bool remove_self);

/* A new directory below workdir with main.py and the spec's files (mode
 * 0755/0644: the run's user reads them). *ret_path: its path. 0 or -errno. */
int sb_rundir_create(const char *workdir, const struct sb_run_spec *spec, char **ret_path);
/* Removes it and everything in it. 0 or -errno. */
int sb_rundir_remove(const char *path);
