/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

#include "resource-limits.h"

/* --report=FILE / --report-fd=N: where the report goes, and what it says the
 * provider is. */
struct sb_report_request {
	const char *path; /* NULL: fd */
	int fd;
	const char *provider;
};

/* sb_supervise_run() with a report: the region for the collector is made
 * before the fork, and the output is always relayed and counted (o's
 * count_output); the supervisor measures the wall time, the CPU time and
 * peak RSS of the whole process tree (RUSAGE_CHILDREN: it reaps every
 * descendant), merges the region, and writes the report before it returns.
 * Same contract as sb_supervise_run() otherwise. */
int sb_report_supervise(const struct sb_report_request *req, const struct sb_supervise_options *o,
			const struct sb_limits *limits, bool *ret_is_child,
			struct sb_supervise_result *ret, char **reterr);
