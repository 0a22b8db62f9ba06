/* SPDX-License-Identifier: MIT */
#pragma once

#include "profile.h"

/* The table of profile keys: one row per key, each with its own parser, in the
 * manner of redis' static_configs[]. Parsers store plain data and report
 * problems to diags; they never touch the file system. */

struct sb_key_context {
	const struct sb_load_options *opts;
	const char *rule_dir; /* directory of the file holding the rule; NULL on the command line */
	bool from_cli;
};

typedef int (*sb_key_parse_fn)(struct sb_profile *p, const struct sb_key_context *ctx,
			       const char *key, const char *value, struct sb_origin origin,
			       struct sb_diags *diags);

struct sb_key_def {
	const char *name; /* exact key; for prefix rows the prefix ("eval-") */
	bool prefix;	  /* matches every key starting with name */
	int scalar;	  /* enum sb_scalar_key, or -1 for keys that accumulate */
	bool raw_value;	  /* receives the value before ${} expansion (env=) */
	sb_key_parse_fn parse;
	/* A path: a ${NAME} without a default that expands to nothing is an
	 * error (${DATA}/ would become /), not the spec's "". */
	bool path_value;
};

/* The row for a key; provider parameters ("bwrap.share-net") get their own
 * row. NULL for an unknown key. */
const struct sb_key_def *sb_key_lookup(const char *key);

/* The known key closest to an unknown one ("expose_ro" -> "expose-ro",
 * "python-imports" -> "python-import"), NULL when none is close. */
const char *sb_key_closest(const char *key);
