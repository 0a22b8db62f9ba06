/* SPDX-License-Identifier: MIT */
#pragma once

/* python-sb's partial-mode worker (spec section 7): started by the pysandboxes
 * package with --pysandboxes-worker=FD, it goes through the normal start-up
 * (rules, provider, kernel boundary, guard) and then, instead of running a
 * program, serves calls framed on the inherited socket (src/wire/frame.h). */

#include <stdbool.h>

#include "profile.h"

struct sb_worker {
	int fd;
	char **paths;	   /* the parent's sys.path directories that exist */
	char *main_path;   /* the parent's __main__ script, or NULL */
	char *main_module; /* the parent's __main__ module (-m), or NULL */
	char *init_module; /* init_fn, or NULL */
	char *init_qualname;
	char **preload;	     /* modules of the @sandbox functions, imported at start */
	size_t result_limit; /* the caller's max_result_size */
	size_t call_limit;   /* the caller's max_argument_size (a whole call request) */
	/* The configuration frame as the parent sent it, for a python-sb that
	 * hands the worker over to itself under a wrapper provider. */
	char *config;
	size_t config_len;
};

/* Parses "FD" from --pysandboxes-worker=FD. 0 or -EINVAL. */
int sb_worker_parse_fd(const char *text, int *ret_fd);

/* Before the interpreter and the boundary: checks the descriptor, reads the
 * parent's configuration frame (or takes config, when a python-sb under a
 * wrapper provider already read it: NULL otherwise) and arranges to die with
 * the parent. 0 or -errno with *reterr. */
int sb_worker_setup(int fd, const char *config, size_t config_len, struct sb_worker *ret,
		    char **reterr);
void sb_worker_done(struct sb_worker *w);

/* Before the interpreter: tells the parent why the worker cannot start, in
 * the frame it raises as an exception (SB_FRAME_START_ERROR): kind "config"
 * with the collected errors (file, line, message), or "start" with text.
 * 0 or -errno (then say it on stderr). */
int sb_worker_send_start_error(int fd, const char *kind, const char *const *fields, size_t n);

/* After the guard is active: the call loop. Returns the process exit code. */
int sb_worker_serve(const struct sb_worker *w, const struct sb_profile *profile,
		    const char *provider);
