/* SPDX-License-Identifier: MIT */
#pragma once

#include "supervisor.h"

/* What the caller of python-sb sees of a supervised program
 * (supervise-outcome.c): python-sb's own process and python-sb-supervise
 * mirror it the same way. */

/* What the original returns (-1) for a configuration error: distinct from any
 * exit status a Python program or a signal produces through us. */
#define SB_EXIT_CONFIG 255
/* As timeout(1). */
#define SB_EXIT_TIMEOUT 124
/* limit-output= exceeded: a status of its own for a service to tell apart. */
#define SB_EXIT_OUTPUT 125

struct sb_outcome {
	char message[256]; /* for stderr, without "python-sb: " and newline; "" for none */
	int signal;	   /* die of it (raise it with its default action), or 0 */
	int exit_code;	   /* otherwise, or when raising it did not end the process */
};

/* The limits are the profile's, for the message (timeout=2s as written). */
void sb_supervise_outcome(const struct sb_supervise_result *res, unsigned long long timeout_ms,
			  unsigned long long output_bytes, unsigned long long memory_bytes,
			  struct sb_outcome *ret);
