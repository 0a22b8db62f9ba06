/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "request.h"
#include "runner.h"

/* What travels through the queue (docs/serve-queue.md), as JSON: no
 * credentials, nothing of the client's but its request.
 *
 *   a job     {"v": 1, "id": ID, "request": {source, stdin, args, files,
 *             limits}}: the request as POST /v1/runs takes it, re-encoded
 *             from the front end's checked spec (the limits the client
 *             lowered, nothing else); a worker decodes and checks it again
 *             with its own profile's limits (request.h), as a front end of
 *             its own would
 *   a result  {"status": HTTP status, "body": the response's body}: exactly
 *             what the synchronous POST /v1/runs answers
 *
 * An ID is 32 lowercase hexadecimal digits from the kernel's random source:
 * it is what a client polls with, so it cannot be guessed. Pure: no I/O but
 * getrandom(). */

#define SB_QUEUE_ID_LEN 32

/* 0, or -errno from getrandom(). */
int sb_queue_id_new(char id[SB_QUEUE_ID_LEN + 1]);
bool sb_queue_id_valid(const char *id);

/* The job of a checked spec; limits at or above server_max are left out (the
 * worker applies its own). 0 with *ret (malloc'ed); -ENOMEM. */
int sb_queue_job_encode(const char *id, const struct sb_run_spec *spec,
			const struct sb_run_limits *server_max, char **ret);
/* A job read from the stream: 0 with *ret_id and *spec checked under policy;
 * -EINVAL with *err when it is not a job, or its request is not valid
 * (*ret_id set when the id at least was readable: the job can be answered);
 * -ENOMEM. */
int sb_queue_job_decode(const char *text, const struct sb_request_policy *policy, char **ret_id,
			struct sb_run_spec *spec, struct sb_request_error *err);

/* 0 with *ret (malloc'ed), -ENOMEM. Steals no reference of body. */
int sb_queue_result_encode(unsigned status, json_t *body, char **ret);
/* 0 with *ret_status (100-599) and *ret_body (an object, a new reference);
 * -EINVAL when the text is not a result. */
int sb_queue_result_decode(const char *text, unsigned *ret_status, json_t **ret_body);
