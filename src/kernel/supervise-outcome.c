/* SPDX-License-Identifier: MIT */
/* supervise-outcome.h. */
#include "supervise-outcome.h"

#include <stdio.h>
#include <sys/wait.h>

void sb_supervise_outcome(const struct sb_supervise_result *res, unsigned long long timeout_ms,
			  unsigned long long output_bytes, unsigned long long memory_bytes,
			  struct sb_outcome *ret)
{
	*ret = (struct sb_outcome){0};
	if (res->timed_out) {
		/* As the profile most likely says it: timeout=2s, not 2000ms. */
		bool whole = timeout_ms % 1000 == 0;

		snprintf(ret->message, sizeof(ret->message),
			 "timeout=%llu%s expired: the program and every process it started "
			 "were killed",
			 whole ? timeout_ms / 1000 : timeout_ms, whole ? "s" : "ms");
		ret->exit_code = SB_EXIT_TIMEOUT;
		return;
	}
	if (res->output_exceeded) {
		snprintf(ret->message, sizeof(ret->message),
			 "limit-output=%lluB exceeded: the program and every process it started "
			 "were killed",
			 output_bytes);
		ret->exit_code = SB_EXIT_OUTPUT;
		return;
	}
	if (res->memory_exceeded)
		snprintf(ret->message, sizeof(ret->message),
			 "limit-memory=%lluB exceeded: the kernel killed the program (its "
			 "cgroup's memory.max)",
			 memory_bytes);
	/* Die the same way, so our parent sees what `python` would show. */
	if (WIFSIGNALED(res->status)) {
		ret->signal = WTERMSIG(res->status);
		ret->exit_code = 128 + WTERMSIG(res->status);
	} else {
		ret->exit_code = WEXITSTATUS(res->status);
	}
}
