/* SPDX-License-Identifier: MIT */
/* os-sandbox=firejail (spec section 8): firejail's template of filters and
 * rlimits, a whitelist of the expose-* rules, no network or a bridge with
 * netfilter for net=. Not in this version: naming it stops the launch. What it
 * enforces comes with its implementation; keys other than these are passed
 * through to firejail. */
#include "provider.h"

static const struct sb_provider_param_def params[] = {
    {"net", SB_PARAM_TEXT, NULL, NULL}, /* the host bridge net= rules use */
    {"seccomp", SB_PARAM_TEXT, NULL, NULL},
    {"seccomp.keep", SB_PARAM_TEXT, NULL, NULL},
    {"seccomp.block", SB_PARAM_TEXT, NULL, NULL},
    /* The template's limits, each of which a profile may override. */
    {"rlimit-as", SB_PARAM_TEXT, NULL, NULL},
    {"rlimit-fsize", SB_PARAM_TEXT, NULL, NULL},
    {"rlimit-nproc", SB_PARAM_TEXT, NULL, NULL},
    {"rlimit-nofile", SB_PARAM_TEXT, NULL, NULL},
    {"rlimit-sigpending", SB_PARAM_TEXT, NULL, NULL},
    {"nice", SB_PARAM_TEXT, NULL, NULL},
    {NULL},
};

const struct sb_provider sb_provider_firejail = {
    .name = "firejail",
    .flags = SB_PROVIDER_WRAPS_EXEC | SB_PROVIDER_PARAMS_PASS_THROUGH,
    .ignore = SB_IGNORE_VANISHES,
    .params = params,
    .summary = "firejail namespaces and filters",
    .probe = sb_provider_probe_not_built,
};
