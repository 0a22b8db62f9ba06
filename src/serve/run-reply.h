/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

#include "runner.h"

/* The body of POST /v1/runs's response for a run that ended (docs/serve.md):
 * 200 {"stdout", "stderr", "report"}, or the runner's failure, 503 (it cannot
 * run programs for now) or 500, as {"error", "field": null}. The same for the
 * local service (http.c) and a queue's worker (queue-worker.c), so that a
 * queued run's result is the reply a local run gets. error: the runner's
 * -errno, or 0. A new reference, NULL when out of memory. */
json_t *sb_run_reply_body(int error, const struct sb_run_result *res, unsigned *ret_status);

/* {"error": message, "field": field or null}. */
json_t *sb_run_reply_error(const char *message, const char *field);
