/* SPDX-License-Identifier: MIT */
#pragma once

#include "cli.h"
#include "profile.h"

struct sb_embed {
	const struct sb_cli *cli;
	const struct sb_profile *profile;
	const char *profile_path;
	char **envp;	      /* the sandbox environment; must outlive the interpreter */
	const char *self_exe; /* python-sb itself: sys.executable, so children re-enter */
	const char *venv;     /* an active virtualenv (has pyvenv.cfg), or NULL */
	const char *boundary; /* provider description for the banner */
};

/* Runs the program in the embedded interpreter, as `python` would, with the
 * guard installed before initialisation. 0 with *ret_exit_code; or -errno with
 * *reterr when the interpreter could not be started safely. */
int sb_embed_run(const struct sb_embed *e, int *ret_exit_code, char **reterr);
