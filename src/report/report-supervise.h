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

/* sb_supervise() with a report: the region for the collector and the output
 * relay are made before the fork; the supervisor measures the wall time, the
 * CPU time and peak RSS of the whole process tree (RUSAGE_CHILDREN: it reaps
 * every descendant) and the output, merges the region, and writes the report
 * before it returns. Without a timeout the supervisor has no deadline, but
 * still kills what the program left running when it ends. Same contract as
 * sb_supervise() otherwise. */
int sb_report_supervise(const struct sb_report_request *req, const struct sb_limits *limits,
			bool *ret_is_child, int *ret_status, bool *ret_timed_out, char **reterr);
