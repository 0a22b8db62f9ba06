/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "runner.h"

/* POST /v1/runs: the body, decoded and checked into a run spec before
 * anything runs (docs/serve.md has the format). Pure: no I/O. */

/* What the server allows. */
struct sb_request_policy {
	struct sb_run_limits max; /* the server's limits: a request may only lower them */
	size_t max_args;
	size_t max_arg_len;
	size_t max_files;
	size_t max_file_depth;
	/* The service queues runs (--queue redis://): "wait" is a field. */
	bool queued;
};

/* An error names the field ("source", "args[2]", "files", "limits.cpu_ms"),
 * or none (NULL) for the body as a whole. */
struct sb_request_error {
	char *message;
	char *field;
};
void sb_request_error_done(struct sb_request_error *e);

/* 0 with *spec filled; -EINVAL with *err; -ENOMEM. */
int sb_request_decode(const char *body, size_t len, const struct sb_request_policy *policy,
		      struct sb_run_spec *spec, struct sb_request_error *err);

/* The same, from JSON already parsed (a queued job's request). */
int sb_request_decode_value(json_t *root, const struct sb_request_policy *policy,
			    struct sb_run_spec *spec, struct sb_request_error *err);

/* Whether name may be a file of the run: relative, '/'-separated segments of
 * [A-Za-z0-9._-] that are not "." or "..", not the program's own main.py nor
 * below it.
 * NULL when it may, else why not. */
const char *sb_request_file_name_problem(const char *name, size_t max_depth);
