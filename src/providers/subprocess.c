/* SPDX-License-Identifier: MIT */
/* os-sandbox=subprocess: the Python guard only, no kernel boundary beyond the
 * seccomp filter and the resource limits every provider but none has. (The
 * name is the original's, whose guard ran in a second interpreter; here the
 * guard is in the launcher's own.) */
#include "provider.h"

static int probe(char **reterr _unused_)
{
	return 0;
}

const struct sb_provider sb_provider_subprocess = {
    .name = "subprocess",
    .flags = SB_PROVIDER_SECCOMP | SB_PROVIDER_LIMITS | SB_PROVIDER_PRIVILEGES,
    .ignore = SB_IGNORE_GUARD_ONLY,
    .summary = "none: the Python guard only (no kernel boundary)",
    .probe = probe,
};
