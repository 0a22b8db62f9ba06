/* SPDX-License-Identifier: MIT */
#pragma once

/* What the network part (guard-net.c) offers the launcher. */

#include "profile.h"

/* Resolves and pins the host names of the net= rules; for the launcher to call
 * before the kernel boundary (the net part's prepare() does it otherwise).
 * Warnings ("file:line: message") are for the caller to print. 0 or -errno. */
int sb_guard_net_resolve(const struct sb_profile *profile, char ***ret_warnings, char **reterr);

struct sb_net_policy;
/* The pin sb_guard_net_resolve() built, for a kernel filter that must name the
 * same addresses (os-sandbox=unshare); NULL before. */
const struct sb_net_policy *sb_guard_net_policy(void);

/* For the other parts: a connection C code makes to the AF_UNIX socket at
 * path (syslog's /dev/log), judged as the guard judges socket.connect() to
 * it: the path needs an expose-rw grant. 0, or -1 with the refusal
 * (RuleSocketConnectionRefusedError) set; op names the operation. GIL held. */
int sb_guard_net_check_unix_path(const char *path, const char *op);
