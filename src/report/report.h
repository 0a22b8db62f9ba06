/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "report-shm.h"
#include "resource-limits.h"

/* The report of one run (docs/report.md): what the supervisor measured
 * outside the sandbox, merged with what the collector recorded inside. */

#define SB_REPORT_VERSION 1
/* The functions a report lists, by own time; the others are counted. */
#define SB_REPORT_FUNCTIONS_LISTED 200

/* Measured outside the sandbox, where the program cannot reach. */
struct sb_report_outside {
	bool exited;   /* else killed by signal */
	int exit_code; /* when exited */
	int signal;    /* when killed */
	bool timed_out;
	uint64_t wall_ns;
	uint64_t cpu_user_us, cpu_sys_us; /* the whole process tree */
	uint64_t peak_rss_kb;		  /* of its largest process */
	bool output_counted;		  /* else the output fields are null */
	uint64_t stdout_bytes, stderr_bytes;
	bool output_truncated; /* limit-output= (the supervisor's relay) */
	bool memory_exceeded;  /* the kernel killed in the run's cgroup (limit-memory=) */
	const char *provider;
	const struct sb_limits *limits; /* to name the limit a death came from */
};

/* A new report; inside is a checked snapshot of the region, or NULL when the
 * program never started (the report then says so). NULL on out of memory. */
json_t *sb_report_build(const struct sb_report_outside *out, const struct sb_report_shm *inside);

/* The limit a run ended on ("timeout", "cpu", "file-size", "output",
 * "memory"), or NULL. */
const char *sb_report_limit_exceeded(const struct sb_report_outside *out,
				     const struct sb_report_shm *inside);

/* Writes the report (indented JSON and a newline) to fd. 0 or -errno. */
int sb_report_write(int fd, const json_t *report);
