/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* user=UID[:GID] (our extension): the identity a python-sb started as root
 * runs the program as (applied by src/kernel/privileges.c). Plain data. */
struct sb_identity {
	bool set;
	uint32_t uid, gid;
};

/* Parses "UID" or "UID:GID" (numbers; the gid defaults to the uid). 0, or
 * -EINVAL with *reterr saying why. */
int sb_identity_parse(const char *text, struct sb_identity *ret, char **reterr);
