/* SPDX-License-Identifier: MIT */
/* os-sandbox=qemu (spec section 8): a virtual machine sharing the host's
 * directories over virtio-9p. Not in this version: naming it stops the
 * launch. What it enforces comes with its implementation; unlike the other
 * wrappers it passes no parameter through, so an unknown key is an error. */
#include "provider.h"

static const char *const virtfs_modes[] = {"auto", "on", "off", NULL};
static const char *const security_models[] = {"passthrough", "mapped-xattr", "mapped-file", "none",
					      NULL};
static const char *const closures[] = {"full", "sparse", NULL};

static const struct sb_provider_param_def params[] = {
    /* -enable-kvm when /dev/kvm is readable, else TCG. */
    {"use_kvm", SB_PARAM_BOOL, NULL, NULL},
    {"memory", SB_PARAM_MIB, NULL, "2048"},
    {"show_boot_console", SB_PARAM_BOOL, NULL, NULL},
    {"start_timeout", SB_PARAM_SECONDS, NULL, "(90 s with KVM, 180 s with TCG)"},
    {"virtfs", SB_PARAM_CHOICE, virtfs_modes, NULL},
    {"virtfs_stage", SB_PARAM_CHOICE, virtfs_modes, NULL}, /* the alias of virtfs */
    {"virtfs_security_model", SB_PARAM_CHOICE, security_models, NULL},
    {"ld_closure_libs", SB_PARAM_CHOICE, closures, NULL},
    {"guest_diag", SB_PARAM_TEXT, NULL, NULL}, /* the original's older key */
    {NULL},
};

const struct sb_provider sb_provider_qemu = {
    .name = "qemu",
    .flags = SB_PROVIDER_WRAPS_EXEC,
    .ignore = SB_IGNORE_MASKED,
    .params = params,
    .summary = "a virtual machine",
    .probe = sb_provider_probe_not_built,
};
