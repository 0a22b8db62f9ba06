/* SPDX-License-Identifier: MIT */
#pragma once

#include "boundary.h"
#include "cli.h"
#include "profile.h"
#include "provider.h"
#include "report-supervise.h"
#include "worker.h"

struct sb_embed {
	const struct sb_cli *cli;
	const struct sb_profile *profile;
	const char *profile_path;
	char **envp;		/* the sandbox environment; must outlive the interpreter */
	const char *self_exe;	/* python-sb itself: sys.executable, so children re-enter */
	const char *self_lib;	/* the hooked copy's library (launcher.h), which they load */
	const char *venv;	/* an active virtualenv (has pyvenv.cfg), or NULL */
	char *const *site_dirs; /* site directories the interpreter will add */
	/* Partial mode: serve calls instead of running a program; NULL otherwise. */
	const struct sb_worker *worker;
	const struct sb_provider *provider; /* the one in use: the banner, the worker's report */
	/* --report/--report-fd: the run report (src/report); NULL otherwise. */
	const struct sb_report_request *report;
	/* python-sb serve's fork server (src/serve/zygote.c): the interpreter
	 * is started and armed but runs no program of its own; the report's
	 * collector is installed idle, for the runs it forks. */
	bool fork_server;
	/* ipython-sb running -m IPython: a SandBoxError that stops IPython
	 * before its own handler is in place gives the plain REPL. */
	bool ipython;
};

/* The process environment becomes the policy's (e->envp): before
 * sb_embed_prepare(), which reads PYTHON* variables from it. 0 or -errno. */
int sb_embed_set_environment(const struct sb_embed *e);

/* Two steps around the kernel boundary. sb_embed_prepare() pre-initialises
 * CPython and reads its configuration, and says which paths the interpreter
 * needs (for Landlock); nothing of Python runs yet. sb_embed_run() registers
 * the guard, initialises the interpreter and runs the program as `python`
 * would. Between the two the caller enters the boundary: no thread exists
 * yet, and no program code has run. */
struct sb_embed_state;

int sb_embed_prepare(const struct sb_embed *e, struct sb_embed_state **ret_state,
		     struct sb_interp_paths *ret_paths, char **reterr);

/* 0 with *ret_exit_code, or -errno with *reterr when the interpreter could not
 * be started safely. Frees the state. */
int sb_embed_run(struct sb_embed_state *state, const struct sb_interp_paths *interp,
		 int *ret_exit_code, char **reterr);

/* The fork server's: sb_embed_run() up to the program, which is not run
 * here. *ret_done with *ret_exit_code when the interpreter decided the outcome
 * while it started. Frees the state; the interpreter stays. */
int sb_embed_start(struct sb_embed_state *state, const struct sb_interp_paths *interp,
		   bool *ret_done, int *ret_exit_code, char **reterr);
/* Frees a state sb_embed_run() will not be given (--explain, a failure in
 * between). NULL is fine. */
void sb_embed_discard(struct sb_embed_state *state);

void sb_interp_paths_done(struct sb_interp_paths *paths);
