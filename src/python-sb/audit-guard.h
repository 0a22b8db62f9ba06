/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

#include "profile.h"

/* The py-sandbox layer's seam: a C audit hook registered before the
 * interpreter exists (PEP 578), so no Python code runs before it or can remove
 * it. Its state lives in C statics that no Python object refers to.
 *
 * Life cycle: sb_guard_prepare() before Py_InitializeFromConfig();
 * sb_guard_activate() after it, just before user code runs. */

/* Copies what the guard needs from the profile and registers the hook.
 * 0 or -errno (-ENOMEM; -EPERM when CPython refused the hook). */
int sb_guard_prepare(const struct sb_profile *profile, const char *profile_path);

/* Proves the hook fires, wraps builtins.__import__ and arms the guard. Needs
 * the GIL. 0, or -errno with *reterr set (the launch must then stop). */
int sb_guard_activate(char **reterr);

/* Frees the copied rules (after Py_RunMain, when no Python code can run). */
void sb_guard_release(void);
