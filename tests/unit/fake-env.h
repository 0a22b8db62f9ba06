/* SPDX-License-Identifier: MIT */
#pragma once

#include <string.h>

/* An sb_getenv_fn over a NULL-terminated "NAME=value" array, so tests never
 * depend on the machine's environment. */
static inline const char *fake_getenv(const char *name, void *userdata)
{
	size_t len = strlen(name);

	for (char **e = userdata; *e; e++)
		if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			return *e + len + 1;
	return NULL;
}
