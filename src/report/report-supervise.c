/* SPDX-License-Identifier: MIT */
/* The supervisor's side of a run report (report-supervise.h). */
#include "report-supervise.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "report-relay.h"
#include "report.h"
#include "util.h"

/* sb_supervise() saturates its deadline: this one is never reached. */
#define NO_DEADLINE_MS ULLONG_MAX

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int open_destination(const struct sb_report_request *req, char **reterr)
{
	int fd;

	if (req->path) {
		fd = open(req->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
		if (fd < 0)
			return sb_error(reterr, -errno, "--report=%s: %s", req->path,
					strerror(errno));
		return fd;
	}
	if (fcntl(req->fd, F_SETFD, FD_CLOEXEC) < 0)
		return sb_error(reterr, -errno, "--report-fd=%d: %s", req->fd, strerror(errno));
	return req->fd;
}

static uint64_t timeval_us(struct timeval tv)
{
	return (uint64_t)tv.tv_sec * 1000000ULL + (uint64_t)tv.tv_usec;
}

static int write_report(int fd, const struct sb_report_request *req, const struct sb_limits *limits,
			int status, bool timed_out, uint64_t wall_ns,
			const struct sb_report_relay *relay, char **reterr)
{
	_cleanup_free_ struct sb_report_shm *inside = NULL;
	struct sb_report_outside out = {
	    .exited = WIFEXITED(status),
	    .exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0,
	    .signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0,
	    .timed_out = timed_out,
	    .wall_ns = wall_ns,
	    .output_counted = true,
	    .stdout_bytes = relay->stdout_bytes,
	    .stderr_bytes = relay->stderr_bytes,
	    .provider = req->provider,
	    .limits = limits,
	};
	struct rusage ru;
	json_t *report;
	int r;

	/* Every descendant was reaped by the supervisor (a subreaper), so the
	 * children's usage is the whole tree's; ru_maxrss is that of the
	 * largest process. */
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
		out.cpu_user_us = timeval_us(ru.ru_utime);
		out.cpu_sys_us = timeval_us(ru.ru_stime);
		out.peak_rss_kb = (uint64_t)ru.ru_maxrss;
	}
	r = sb_report_shm_snapshot(&inside);
	if (r < 0 && r != -ENOENT)
		return sb_error(reterr, r, "report: %s", strerror(-r));
	report = sb_report_build(&out, inside);
	if (!report)
		return sb_error(reterr, -ENOMEM, "report: out of memory");
	r = sb_report_write(fd, report);
	json_decref(report);
	if (r < 0)
		return sb_error(reterr, r, "cannot write the report: %s", strerror(-r));
	return 0;
}

int sb_report_supervise(const struct sb_report_request *req, const struct sb_limits *limits,
			bool *ret_is_child, int *ret_status, bool *ret_timed_out, char **reterr)
{
	struct sb_report_relay relay = {.out = {-1, -1}, .err = {-1, -1}};
	_cleanup_close_ int fd = -1;
	uint64_t start;
	int r;

	fd = open_destination(req, reterr);
	if (fd < 0)
		return fd;
	r = sb_report_shm_create(reterr);
	if (r < 0)
		return r;
	r = sb_report_relay_start(&relay, reterr);
	if (r < 0) {
		sb_report_shm_destroy();
		return r;
	}
	start = now_ns();
	r = sb_supervise(limits->timeout_ms ? limits->timeout_ms : NO_DEADLINE_MS, ret_is_child,
			 ret_status, ret_timed_out, reterr);
	if (r < 0) {
		sb_report_relay_finish(&relay);
		sb_report_shm_destroy();
		return r;
	}
	if (*ret_is_child) {
		/* The region's mapping stays: the collector fills it. */
		r = sb_report_relay_child(&relay);
		if (r < 0)
			return sb_error(reterr, r, "report: cannot connect the output: %s",
					strerror(-r));
		return 0;
	}
	start = now_ns() - start;
	sb_report_relay_finish(&relay);
	r = write_report(fd, req, limits, *ret_status, *ret_timed_out, start, &relay, reterr);
	sb_report_shm_destroy();
	return r;
}
