/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

/* Where a rule came from. `file` points to a string owned by the profile (or a
 * static string such as SB_ORIGIN_CLI) and stays valid as long as the profile. */
struct sb_origin {
	const char *file;
	unsigned line;
};

#define SB_ORIGIN_CLI "<command line>"

/* One configuration error or warning, reported as "file:line: message". */
struct sb_diag {
	char *file;
	unsigned line;
	bool warning;
	char *message;
};

/* Every problem found while loading a profile: parsing goes on after an error
 * so that the user sees all of them at once. */
struct sb_diags {
	struct sb_diag *items;
	size_t n;
	size_t cap;
	size_t n_errors;
};

/* Records an error; 0 or -ENOMEM. */
int sb_diags_error(struct sb_diags *d, struct sb_origin origin, const char *fmt, ...)
    _printf_(3, 4);
/* Records a warning; 0 or -ENOMEM. */
int sb_diags_warning(struct sb_diags *d, struct sb_origin origin, const char *fmt, ...)
    _printf_(3, 4);
/* Sorts by file, then line, then message; duplicates are removed. */
void sb_diags_sort(struct sb_diags *d);
void sb_diags_done(struct sb_diags *d);
