/* SPDX-License-Identifier: MIT */
#pragma once

/* Wrapper providers (os-sandbox=bwrap, firejail): python-sb starts itself
 * again under the wrapper, and that inner python-sb goes through the whole
 * start-up as under an in-process provider: it reads the same rules, filters
 * the environment, loads the seccomp filter and the limits, and runs the
 * program with the guard.
 *
 * The inner python-sb knows it is inside from a descriptor, never from the
 * environment: --pysandboxes-inside=FD names a sealed memfd written by the
 * launching python-sb (the handover record), which no program can fake by
 * setting a variable, and which says what the launching side saw: the
 * provider, the working directory, the host environment (the rules expand
 * ${NAME} from it; the wrapper does not pass it on), the rule files it read,
 * which signals to restore, partial mode's worker configuration (already
 * read from the worker's socket), and under bwrap with net= ALLOW rules the
 * descriptor on which the launching side says the network is up. The record
 * also names a pipe on which the inner python-sb reports that it started and,
 * at the end, its exit status: a wrapper reports a program killed by signal N
 * as the exit status 128+N, which the launching side turns back into that
 * signal only when the inner python-sb did not exit by itself. */

#include <stdbool.h>
#include <stddef.h>

#include "boundary.h"
#include "profile.h"
#include "provider.h"
#include "report-supervise.h"
#include "util.h"
#include "worker.h"

/* The launching side. */
struct sb_wrap_launch {
	const struct sb_provider *provider;
	const struct sb_boundary *boundary;
	const struct sb_profile *profile;
	const char *self_exe;
	char *const *argv; /* python-sb's own command line, argv[0] first */
	char *const *host_env;
	const char *cwd;
	const struct sb_worker *worker; /* partial mode, or NULL */
	/* --report: the inner python-sb writes it, to a descriptor the
	 * launching side opened (the wrapper's view may not show the file). */
	const struct sb_report_request *report;
};

struct sb_wrap_outcome {
	int wait_status; /* the wrapper's */
	bool started;	 /* the inner python-sb got as far as reading the record */
	bool exited;	 /* ... and reported exit_code */
	int exit_code;
	/* The tool killed: the inner python-sb did not start within
	 * start_timeout_ms, or did not end by the run's deadline. */
	bool start_timed_out, deadline_killed;
	unsigned long long start_timeout_ms;
	/* SIGTERM or SIGHUP passed on to the tool (0: none): a tool that ends
	 * cleanly on it (qemu) reports no status of the program's. */
	int forwarded_signal;
	char **warnings; /* the provider's, for the user (free with sb_strv_free) */
};

/* Runs the wrapper and waits for it: SIGINT and SIGQUIT are left to the
 * program (ignored here, restored inside), SIGTERM and SIGHUP forwarded to
 * the wrapper. 0 with *ret, or -errno with *reterr (nothing ran). */
int sb_wrap_run(const struct sb_wrap_launch *l, struct sb_wrap_outcome *ret, char **reterr);

/* The wrapper's command line as a run would use it (this --explain left out),
 * shell-quoted, for --explain. */
int sb_wrap_explain(const struct sb_wrap_launch *l, struct sb_buf *out, char **reterr);

/* The inner side. */
struct sb_wrap_inside {
	int status_fd; /* stays open until exit, see sb_wrap_inside_open() */
	int report_fd; /* --report's descriptor, or -1 */
	/* The launching side writes one byte here once the sandbox's network
	 * is up and filtered (os-sandbox=bwrap with net= ALLOW rules,
	 * wrap-net.h), or -1. */
	int net_ready_fd;
	char *provider;
	char *cwd;
	char **env;
	char **files;
	bool has_worker_config;
	char *worker_config;
	size_t worker_config_len;
};

#define SB_WRAP_INSIDE_NULL                                                                        \
	((struct sb_wrap_inside){.status_fd = -1, .report_fd = -1, .net_ready_fd = -1})

/* Reads and closes the record named by --pysandboxes-inside, restores the
 * signals the launching side ignored, reports the start, and arranges for the
 * exit status to be reported when this process exits. 0, or -errno with
 * *reterr: then the caller must stop (it is not under the wrapper). */
int sb_wrap_inside_open(const char *fd_text, struct sb_wrap_inside *ret, char **reterr);

/* Whether this python-sb chose the provider and read the rule files the
 * launching side wrapped it for. 0, or -EINVAL with *reterr. */
int sb_wrap_inside_check(const struct sb_wrap_inside *in, const struct sb_provider *provider,
			 const struct sb_profile *p, char **reterr);

void sb_wrap_inside_done(struct sb_wrap_inside *in);

/* When the record names a network to wait for: waits until the launching
 * side has set it up. Before the program runs (it enters the boundary after
 * this). 0, or -ENETDOWN with *reterr: the launching side could not, or is
 * gone, and the program must not run. */
int sb_wrap_inside_wait_network(struct sb_wrap_inside *in, char **reterr);

/* In a process forked from the one that read the record (the program's,
 * under a supervisor): closes the status descriptor, so that the program
 * cannot report an exit status over the supervisor's (a 0 over a timeout's
 * 124). in->status_fd is then -1. */
void sb_wrap_inside_detach(struct sb_wrap_inside *in);
