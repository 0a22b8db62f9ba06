/* SPDX-License-Identifier: MIT */
#pragma once

/* ipython-sb, ipython3-sb: python-sb under another name, running IPython as
 * the program. IPython's home (IPYTHONDIR, and HOME for the caches of its
 * libraries) is a private temporary directory, granted read-write and
 * removed at exit: ~/.ipython's startup scripts and configuration are never
 * read, and nothing the session writes stays. */

#include <stdbool.h>

struct sb_ipython {
	char *dir;   /* the private directory, or NULL */
	char **argv; /* the rewritten command line (borrows the caller's strings) */
	int argc;
	char **owned; /* the strings argv holds that are ours */
};

/* Whether argv0's name is ipython-sb or ipython3-sb. */
bool sb_ipython_wanted(const char *argv0);

/* The command line python-sb runs instead: the leading sandbox options
 * (--key[=value], --pysandboxes-config FILE; a "--" ends them), the grants of
 * the private directory, -m IPython, then the rest for IPython. 0 or -errno
 * with *reterr. */
int sb_ipython_prepare(int argc, char **argv, struct sb_ipython *ret, char **reterr);

/* Forks the process that removes the private directory once python-sb is
 * gone: python-sb itself may not (a Landlock boundary grants the directory,
 * not its parent). Call after the inherited descriptors are closed, before
 * the boundary. 0 or -errno. */
int sb_ipython_watch(const struct sb_ipython *ipy);

/* Removes the private directory (best effort) and frees. */
void sb_ipython_done(struct sb_ipython *ipy);
