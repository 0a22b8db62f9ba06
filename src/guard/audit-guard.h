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
