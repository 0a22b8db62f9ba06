/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

#include "boundary.h"
#include "profile.h"

/* The py-sandbox layer's seam: a C audit hook registered before the
 * interpreter exists (PEP 578), so no Python code runs before it or can remove
 * it. Its state lives in C statics that no Python object refers to.
 *
 * Life cycle: sb_guard_prepare() before Py_InitializeFromConfig();
 * sb_guard_activate() after it, just before the program runs;
 * sb_guard_release() after Py_RunMain(). */

struct sb_guard_observer;

/* Registers the built-in `pysandboxes` module, compiles every part's rules
 * and registers the hook. observer (guard-observer.h; NULL for none) is
 * offered the guard's refusals for the run: learning mode's recorder. 0 or
 * -errno with *reterr. */
int sb_guard_prepare(const struct sb_profile *profile, const char *profile_path,
		     const struct sb_interp_paths *interp, const struct sb_guard_observer *observer,
		     char **reterr);

/* Proves the hook fires, activates every part and arms the guard. Needs the
 * GIL. 0, or -errno with *reterr set (the launch must then stop). */
int sb_guard_activate(char **reterr);

void sb_guard_release(void);

/* python-sb serve's fork server (docs/serve.md), which forks its runs from
 * one armed interpreter. sb_guard_settle(), once in the server after
 * sb_guard_activate(): what the guard would otherwise do at the first decision
 * of every run (resolving its implicit grants, wrapping what the loaded
 * modules need). sb_guard_fork_child(), in the child of one run, before its
 * program starts: dir (absolute, resolved: the run's directory, its current
 * one) is granted read-only as a command-line --expose-ro=dir would be. 0 or
 * -errno (with *reterr). */
int sb_guard_settle(char **reterr);
int sb_guard_fork_child(const char *dir);
