/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

/* The playground's files, compiled in at build time (scripts/embed-assets.py
 * writes the table from the bundle esbuild made): the service needs no file
 * and no network to serve them. */
struct sb_asset {
	const char *path; /* "/", "/playground.js" */
	const char *type; /* Content-Type */
	const unsigned char *data;
	size_t len;
};

/* The asset served at path, or NULL. */
const struct sb_asset *sb_asset_find(const char *path);
