/* SPDX-License-Identifier: MIT */
#pragma once

#include "profile.h"

/* ${NAME} and ${NAME:-default} expansion (spec section 3.3). Defaults nest;
 * substituted values are copied verbatim and never expanded again, so a host
 * variable cannot inject a reference. Any other ${...} form is an error.
 * Returns 0, -EINVAL with *reterr (malloc'ed message), or -ENOMEM. */
int sb_expand(const char *text, sb_getenv_fn getenv, void *userdata, char **ret, char **reterr);

/* The same, and *ret_unset (malloc'ed, NULL when none) names the first
 * ${NAME} without a default that expanded to nothing (unset or empty). */
int sb_expand_ex(const char *text, sb_getenv_fn getenv, void *userdata, char **ret, char **reterr,
		 char **ret_unset);

/* When text is exactly one reference "${NAME}" or "${NAME:-default}", returns 1
 * and sets *ret_name and *ret_default (the default still unexpanded, NULL when
 * absent). allow_star admits '*' in NAME (env wildcard forwarding). Returns 0
 * when text is anything else, -ENOMEM on OOM. */
int sb_expand_single_reference(const char *text, bool allow_star, char **ret_name,
			       char **ret_default);

/* Expands a leading "~" or "~/" with home; a copy otherwise. NULL on OOM. */
char *sb_expand_tilde(const char *path, const char *home);
