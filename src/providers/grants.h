/* SPDX-License-Identifier: MIT */
#pragma once

#include "boundary.h"
#include "util.h"

/* The grants of a boundary (b->paths and b->path_reasons): the interpreter's
 * directories and files (interp, may be NULL), the system's shared libraries,
 * what any CPython process needs (the loader cache, CA stores, locales, time
 * zones, /dev/null and the random devices, /proc/self, the CPU list), then
 * the profile's expose-* rules. Implicit grants are optional (skipped when
 * missing). 0 or -ENOMEM. */
int sb_provider_collect_grants(struct sb_boundary *b, const struct sb_profile *p,
			       const struct sb_interp_paths *interp);

/* One grant; a path granted twice keeps its widest right. is_file: known not
 * to be a directory (struct sb_landlock_path). 0 or -ENOMEM. */
int sb_provider_add_path(struct sb_boundary *b, const char *path, bool writable, bool optional,
			 bool is_file, const char *why);
