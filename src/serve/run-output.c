/* SPDX-License-Identifier: MIT */
/* A run's stdout and stderr as both runners collect them (runner.h). */
#include "runner.h"

#include <errno.h>

bool sb_run_output_read(int *fd, bool is_stderr, struct sb_run_result *res, uint64_t cap)
{
	struct sb_buf *b = is_stderr ? &res->err : &res->out;
	uint64_t *count = is_stderr ? &res->stderr_bytes : &res->stdout_bytes;
	char buf[65536];
	size_t room = b->len < cap ? (size_t)(cap - b->len) : 0;
	ssize_t n = read(*fd, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return false;
	if (n <= 0) {
		sb_closep(fd);
		return false;
	}
	*count += (uint64_t)n;
	if (room > 0)
		sb_buf_putn(b, buf, (size_t)n < room ? (size_t)n : room);
	return *count > cap;
}
