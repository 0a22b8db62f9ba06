/* SPDX-License-Identifier: MIT */
#pragma once

#include "profile.h"

/* The files python-sb takes its rules from must stay out of the program's
 * reach whatever the grants say (rule-files.c). Landlock grants directories
 * and cannot take one file out of a granted directory, so a profile whose
 * rule file (or a rule file python-sb would read once it exists: a missing
 * include, a .py-sandboxes the lookup tries first) lies in an expose-rw
 * directory cannot be enforced: the program could rewrite the next run's
 * rules. 0 and *ret_conflict = NULL when no writable grant reaches one;
 * otherwise *ret_conflict names the grant, its line and the file. -ENOMEM. */
int sb_rule_files_check(const struct sb_profile *p, char **ret_conflict);
