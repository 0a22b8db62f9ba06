/* SPDX-License-Identifier: MIT */
#pragma once

/* ipython-sb, ipython3-sb: python-sb under another name, running IPython as
 * the program where the rules let it run, else the plain REPL (spec section
 * 2). IPython's home (IPYTHONDIR, and HOME for the caches of its libraries)
 * is a private temporary directory, granted read-write and removed at exit:
 * ~/.ipython's startup scripts and configuration are never read, and nothing
 * the session writes stays. Under learn=false, which refuses command-line
 * rules, the profile's own IPYTHONDIR is used when it declares one it grants
 * read-write, and no private directory is made. */

#include <stdbool.h>

#include "profile.h"

enum sb_ipython_choice {
	SB_IPYTHON_PRIVATE,  /* -m IPython in a private directory */
	SB_IPYTHON_DECLARED, /* -m IPython, the profile's IPYTHONDIR */
	SB_IPYTHON_PLAIN,    /* the plain REPL */
};

struct sb_ipython {
	bool wanted;
	bool runs_ipython; /* the command line runs -m IPython */
	char *dir;	   /* the private directory, or NULL */
	char **argv;	   /* the command line (borrows the caller's strings) */
	int argc;
	char **owned; /* the strings argv holds that are ours */
	/* The caller's command line split: the leading sandbox options, and
	 * IPython's own (after "--"). */
	char *const *args;
	int n_options, first_rest, n_args;
};

/* Whether argv0's name is ipython-sb or ipython3-sb. */
bool sb_ipython_wanted(const char *argv0);

/* Splits the command line (the leading sandbox options: --key[=value],
 * --pysandboxes-config FILE; a "--" ends them) and sets argv to those
 * options alone (the plain REPL), for a first look at the rules. 0 or
 * -ENOMEM. */
int sb_ipython_prepare(int argc, char **argv, struct sb_ipython *ret);

/* Whether IPython can run under profile p, and why not (*ret_reason, a
 * static text, for SB_IPYTHON_PLAIN). installed: IPython's package is on the
 * interpreter's path; learning: learning mode (which records what it needs
 * instead of refusing it). Pure. */
enum sb_ipython_choice sb_ipython_decide(const struct sb_profile *p, bool installed, bool learning,
					 const char **ret_reason);

/* Whether one of dirs (NULL-terminated) holds the IPython package. */
bool sb_ipython_installed(char *const *dirs);

/* The command line for choice: the options, the private directory's grants
 * (made here) for SB_IPYTHON_PRIVATE, -m IPython and IPython's options;
 * the options alone for SB_IPYTHON_PLAIN. 0 or -errno with *reterr. */
int sb_ipython_build(struct sb_ipython *ipy, enum sb_ipython_choice choice, char **reterr);

/* Forks the process that removes the private directory once python-sb is
 * gone: python-sb itself may not (a Landlock boundary grants the directory,
 * not its parent). Call after the inherited descriptors are closed, before
 * the boundary. 0 or -errno. */
int sb_ipython_watch(const struct sb_ipython *ipy);

/* Removes the private directory (best effort) and frees. */
void sb_ipython_done(struct sb_ipython *ipy);
