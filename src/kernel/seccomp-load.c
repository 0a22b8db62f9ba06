/* SPDX-License-Identifier: MIT */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "seccomp-filter.h"

int sb_seccomp_apply(const struct sb_seccomp_policy *policy, const struct sb_seccomp_self *self,
		     char **reterr)
{
	const struct sb_seccomp_program *prog;
	_cleanup_free_ struct sock_filter *insns = NULL;
	struct sock_fprog fprog;

	if (!policy)
		return sb_error(reterr, -EINVAL, "sb_seccomp_apply: no policy");
	prog = &sb_seccomp_programs[sb_seccomp_policy_key(policy)];
	if (prog->n_insns == 0)
		return sb_seccomp_apply_dynamic(policy, self, reterr);

	/* The compiled program says "this process" and "timeout='s timers"
	 * with placeholders (neither is known when python-sb is built): a copy
	 * gets ours. */
	insns = malloc((size_t)prog->n_insns * sizeof(*insns));
	if (!insns)
		return sb_error(reterr, -ENOMEM, "seccomp: out of memory");
	memcpy(insns, prog->code, (size_t)prog->n_insns * sizeof(*insns));
	sb_seccomp_patch_self_pid(insns, prog->n_insns, (uint32_t)getpid());
	sb_seccomp_patch_timers(insns, prog->n_insns, self);

	/* Required to load a filter without CAP_SYS_ADMIN, and keeps a setuid
	 * binary from running under a filter it did not expect. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return sb_error(reterr, -errno, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
	fprog = (struct sock_fprog){
	    .len = prog->n_insns,
	    .filter = insns,
	};
	/* TSYNC: every thread, in case a library started one before us; the
	 * call fails rather than leave one unfiltered. */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog) != 0)
		return sb_error(reterr, -errno, "seccomp(SECCOMP_SET_MODE_FILTER): %s",
				strerror(errno));
	return 0;
}
