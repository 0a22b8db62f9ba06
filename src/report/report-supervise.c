/* SPDX-License-Identifier: MIT */
/* The supervisor's side of a run report (report-supervise.h). */
#include "report-supervise.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "report.h"
#include "util.h"

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
			const struct sb_supervise_result *res, char **reterr)
{
	_cleanup_free_ struct sb_report_shm *inside = NULL;
	struct sb_report_outside out = {
	    .exited = WIFEXITED(res->status),
	    .exit_code = WIFEXITED(res->status) ? WEXITSTATUS(res->status) : 0,
	    .signal = WIFSIGNALED(res->status) ? WTERMSIG(res->status) : 0,
	    .timed_out = res->timed_out,
	    .wall_ns = res->wall_ns,
	    .output_counted = res->output_counted,
	    .stdout_bytes = res->stdout_bytes,
	    .stderr_bytes = res->stderr_bytes,
	    .output_truncated = res->output_exceeded,
	    .memory_exceeded = res->memory_exceeded,
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

int sb_report_supervise(const struct sb_report_request *req, const struct sb_supervise_options *o,
			const struct sb_limits *limits, bool *ret_is_child,
			struct sb_supervise_result *ret, char **reterr)
{
	struct sb_supervise_options counted = *o;
	_cleanup_close_ int fd = -1;
	int r;

	fd = open_destination(req, reterr);
	if (fd < 0)
		return fd;
	r = sb_report_shm_create(reterr);
	if (r < 0)
		return r;
	counted.count_output = true;
	r = sb_supervise_run(&counted, ret_is_child, ret, reterr);
	if (r < 0) {
		sb_report_shm_destroy();
		return r;
	}
	/* The program's process: the region's mapping stays (the collector
	 * fills it); the report's descriptor is the supervisor's alone. */
	if (*ret_is_child)
		return 0;
	r = write_report(fd, req, limits, ret, reterr);
	sb_report_shm_destroy();
	return r;
}
