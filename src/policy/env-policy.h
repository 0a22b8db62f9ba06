/* SPDX-License-Identifier: MIT */
#pragma once

#include "profile.h"

/* The environment the sandboxed program sees: exactly what the env= rules
 * produce from the host environment (plus the implicit env=TERM=${TERM}),
 * minus unenv=. A forwarded variable that is unset on the host is absent; an
 * exact rule beats a wildcard whatever the order. While learning
 * (SB_MODE_LEARN), the whole host environment with those values on top.
 * *ret gets a NULL-terminated "NAME=value" vector; 0 or -ENOMEM. */
int sb_env_build(const struct sb_profile *p, char *const *host_env, enum sb_rules_mode mode,
		 char ***ret);
