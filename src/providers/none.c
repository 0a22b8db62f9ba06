/* SPDX-License-Identifier: MIT */
/* os-sandbox=none: plain Python in this process, for debugging. No seccomp
 * filter; the resource limits still apply. */
#include "provider.h"

static int probe(char **reterr _unused_)
{
	return 0;
}

const struct sb_provider sb_provider_none = {
    .name = "none",
    .flags = SB_PROVIDER_LIMITS,
    .ignore = SB_IGNORE_GUARD_ONLY,
    .summary = "none: plain Python in this process",
    .probe = probe,
};
