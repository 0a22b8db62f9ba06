/* SPDX-License-Identifier: MIT */
/* os-sandbox=bwrap (spec section 8): bubblewrap with read-only binds of the
 * system and the interpreter, the expose-* rules, placeholders over ignore=,
 * and always a network namespace of its own. Not in this version: naming it
 * stops the launch. What it enforces comes with its implementation; keys
 * other than these are passed through to bwrap. */
#include "provider.h"

static const struct sb_provider_param_def params[] = {
    /* The host's network, with no filtering by the kernel. */
    {"share-net", SB_PARAM_BOOL, NULL, NULL},
    /* no/0/false: the same. */
    {"unshare-net", SB_PARAM_BOOL, NULL, NULL},
    {NULL},
};

const struct sb_provider sb_provider_bwrap = {
    .name = "bwrap",
    .flags = SB_PROVIDER_WRAPS_EXEC | SB_PROVIDER_PARAMS_PASS_THROUGH,
    .ignore = SB_IGNORE_MASKED,
    .params = params,
    .summary = "bubblewrap namespaces",
    .probe = sb_provider_probe_not_built,
};
