/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile-limits.h"
#include "util.h"

/* How the service runs one program: the interface between the job pool and
 * whatever starts interpreters. Two runners: `fork`, the default (one
 * pre-initialised interpreter, the zygote, that forks a child per run, the
 * child entering its sandbox before any submitted code runs:
 * runner-fork.c, zygote.c), and `exec`, --fresh-exec (a fresh python-sb per
 * run, runner-exec.c). */

struct sb_run_file {
	char *name; /* relative, checked by request.c */
	char *content;
	size_t len;
};

/* The limits of one run: the server's, lowered by the request's. 0: none. */
struct sb_run_limits {
	uint64_t timeout_ms;
	uint64_t cpu_ms;
	uint64_t memory_bytes;
	uint64_t output_bytes; /* per stream: what is kept, and where the run is stopped */
};

/* One decoded, valid request. */
struct sb_run_spec {
	char *source;
	size_t source_len;
	char *stdin_data;
	size_t stdin_len;
	char **args;
	struct sb_run_file *files;
	size_t n_files;
	struct sb_run_limits limits;
	/* Queued service (docs/serve-queue.md): "wait": false, answer 202 with
	 * the job's id at once; poll_id: GET /v1/runs/{id}, not a run. */
	bool no_wait;
	char *poll_id;
};
void sb_run_spec_done(struct sb_run_spec *spec);

struct sb_run_result {
	struct sb_buf out, err;		     /* at most limits.output_bytes of each */
	uint64_t stdout_bytes, stderr_bytes; /* produced, past the cap too */
	bool truncated;			     /* a stream reached the cap: the run was stopped */
	json_t *report;			     /* the run report, output fields the server's */
	char *error;			     /* the runner failed: no report */
	/* With error: the runner cannot run programs for now (its fork server
	 * died during the run, is restarting, or fails to start): 503, try
	 * again; otherwise a failure of this run, 500. */
	bool unavailable;
	/* A reply made whole by the runner (the queue's: a result from Redis,
	 * 202 for a job queued or waiting, 429, 504), sent as is with
	 * http_status; report is then the reply's report, for the metrics. */
	json_t *reply;
	unsigned http_status;
	char *id; /* the queued job's: the Location of 202 and 504 */
};
void sb_run_result_done(struct sb_run_result *res);

struct sb_runner_config {
	const char *python_sb;	  /* the launcher */
	const char *profile_path; /* the policy of every run */
	const char *workdir;	  /* private; per-run directories go below it */
	bool change_user;	  /* started as root: runs as uid/gid */
	uid_t uid;
	gid_t gid;
	struct sb_limits limits; /* the profile's: the server's limits */
	/* What the runner has to say (the fork server restarted...): the
	 * service's main() prints it. May be called from any thread. */
	void (*event)(void *data, const char *message);
	void *event_data;
};

struct sb_runner;
struct sb_runner_ops {
	const char *name;
	int (*open)(const struct sb_runner_config *cfg, struct sb_runner **ret, char **reterr);
	/* Runs one program, from any worker thread, several at once. 0 with
	 * *res filled (res->error set when there is no report), or -errno. */
	int (*run)(struct sb_runner *runner, const struct sb_run_spec *spec,
		   struct sb_run_result *res);
	void (*close)(struct sb_runner *runner);
	/* Optional: NULL while the runner can run programs, else why not
	 * (malloc'ed; "" when out of memory): the health check's 503. */
	char *(*unavailable)(struct sb_runner *runner);
};

/* The environment python-sb is started with by either runner (runner-exec.c):
 * PATH and LANG; the profile's env= rules decide what the program sees. The
 * sanitizers' options pass, for test builds. 0 or -ENOMEM. */
int sb_runner_launch_env(char ***envp);

/* Reads once from a run's stdout (or stderr) pipe into res, after poll()
 * said it is readable: at most cap bytes kept, every byte counted; at its
 * end the pipe is closed (*fd = -1). true when the stream has passed cap:
 * the run must be stopped (run-output.c). */
bool sb_run_output_read(int *fd, bool is_stderr, struct sb_run_result *res, uint64_t cap);

/* What a run reads from memory (its stdin): a memfd holding data, sealed
 * against any change, as a read-only descriptor at offset 0 (close-on-exec),
 * or -errno (run-memfd.c). */
int sb_run_readonly_memfd(const char *name, const char *data, size_t len);

extern const struct sb_runner_ops sb_runner_exec;
extern const struct sb_runner_ops sb_runner_fork;
