/* SPDX-License-Identifier: MIT */
#pragma once

#include "cli.h"

struct sb_lookup_env {
	const char *cwd;
	const char *pythonpath; /* host PYTHONPATH, NULL when -E/-I or unset */
	char *const *site_dirs; /* site-packages directories to search for -m */
};

/* Chooses the rule file (spec section 2): --pysandboxes-config; else the
 * .py-sandboxes next to the script, or in the directory of the -m module;
 * else ./.py-sandboxes. The result may not exist (learning trigger).
 * 0 and *ret (malloc'ed), or -ENOMEM. */
int sb_config_locate(const struct sb_cli *cli, const struct sb_lookup_env *env, char **ret);

/* The rule file the lookup would choose before `chosen` if it existed (the
 * .py-sandboxes next to the script or in the module's directory, when the
 * lookup fell back to ./.py-sandboxes), or NULL. A program that could create
 * it would choose the next run's rules. 0 and *ret (malloc'ed or NULL), or
 * -ENOMEM. */
int sb_config_shadowing(const struct sb_cli *cli, const struct sb_lookup_env *env,
			const char *chosen, char **ret);
