/* SPDX-License-Identifier: MIT */
#pragma once

#include "profile.h"
#include "provider.h"
#include "util.h"

/* Renders the effective policy (after includes, ${} expansion and command-line
 * overrides) as profile lines, each with the file:line it came from and the
 * layer that enforces it in this build. 0 or -ENOMEM. */
int sb_explain(const struct sb_profile *p, const char *profile_path,
	       const struct sb_provider *provider, const char *provider_note, char *const *envp,
	       struct sb_buf *out);
