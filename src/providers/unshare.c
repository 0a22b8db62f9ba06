/* SPDX-License-Identifier: MIT */
/* os-sandbox=unshare (spec section 8): unshare(1) with user, mount, PID and
 * network namespaces, a fresh root built from an explicit list, slirp4netns
 * and iptables for net=. Not in this version: naming it stops the launch. What
 * it enforces comes with its implementation; its parameters are passed
 * through to unshare(1). */
#include "provider.h"

const struct sb_provider sb_provider_unshare = {
    .name = "unshare",
    .flags = SB_PROVIDER_WRAPS_EXEC | SB_PROVIDER_PARAMS_PASS_THROUGH,
    .ignore = SB_IGNORE_REFUSED,
    .summary = "user, mount, PID and network namespaces",
    .probe = sb_provider_probe_not_built,
};
