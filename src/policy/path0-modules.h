/* SPDX-License-Identifier: MIT */
#pragma once

#include "profile.h"

/* The modules beside the script: what of sys.path[0] (the script's
 * directory, or the cwd for -m, -c, stdin and the REPL) both layers grant.
 * Not the directory as a whole (a .env beside the script stays out of reach
 * of native code too), but its listing, which is how the import machinery
 * finds a module, and the files of the modules python-import= allows (the
 * -m package and pysandboxes included): a module's source, its compiled and
 * extension files, its bytecode in __pycache__, a package's directory. */

/* The reason --explain gives for each such grant, in every layer. */
#define SB_PATH0_MODULE_WHY "a module python-import= allows, in sys.path[0]"

/* Whether a top-level module name is one the profile lets the program import
 * from sys.path[0] (main_package: the -m module's top level, or NULL). */
bool sb_path0_module_allowed(const struct sb_profile *p, const char *main_package,
			     const char *name);

/* The absolute paths of those files and package directories in dir (an
 * absolute directory), sorted, into *ret (NULL-terminated; NULL when there
 * is none). A directory that cannot be listed gives none. A module that is a
 * symbolic link inside an expose-rw tree (one the program could have made)
 * may lead only into an expose-* tree: -EPERM with *reterr saying why
 * otherwise. 0, -EPERM or -ENOMEM. */
int sb_path0_modules(const char *dir, const struct sb_profile *p, const char *main_package,
		     char ***ret, char **reterr);

/* Whether a path of that list is a module's file rather than a package's
 * directory: a module file's name always has a suffix, a package's never a
 * dot (a directory with one is no package). */
bool sb_path0_module_is_file(const char *path);
