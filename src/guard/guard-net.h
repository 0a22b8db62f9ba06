/* SPDX-License-Identifier: MIT */
#pragma once

/* What the network part (guard-net.c) offers the launcher. */

#include "profile.h"

/* Resolves and pins the host names of the net= rules; for the launcher to call
 * before the kernel boundary (the net part's prepare() does it otherwise).
 * Warnings ("file:line: message") are for the caller to print. 0 or -errno. */
int sb_guard_net_resolve(const struct sb_profile *profile, char ***ret_warnings, char **reterr);
