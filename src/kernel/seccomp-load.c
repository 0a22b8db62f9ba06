/* SPDX-License-Identifier: MIT */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "seccomp-filter.h"

/* The policy's compiled program, with this process's pid and timers in it
 * (*ret_insns, the caller's to free), no_new_privs set: 0. 1 when there is
 * no compiled program and libseccomp has loaded the filter instead; or
 * -errno with *reterr. */
static int prepare_load(const struct sb_seccomp_policy *policy, const struct sb_seccomp_self *self,
			struct sock_filter **ret_insns, unsigned short *ret_n, char **reterr)
{
	const struct sb_seccomp_program *prog;
	_cleanup_free_ struct sock_filter *insns = NULL;
	int r;

	if (!policy)
		return sb_error(reterr, -EINVAL, "sb_seccomp_apply: no policy");
	prog = &sb_seccomp_programs[sb_seccomp_policy_key(policy)];
	if (prog->n_insns == 0) {
		r = sb_seccomp_apply_dynamic(policy, self, reterr);
		return r < 0 ? r : 1;
	}
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
	*ret_insns = TAKE_PTR(insns);
	*ret_n = prog->n_insns;
	return 0;
}

static int load_error(long r, char **reterr)
{
	/* TSYNC answers with the id of a thread it could not bring along. */
	if (r > 0)
		return sb_error(reterr, -EBUSY,
				"seccomp(SECCOMP_SET_MODE_FILTER): thread %ld runs under another "
				"filter and cannot be brought under this one",
				r);
	return sb_error(reterr, (int)r, "seccomp(SECCOMP_SET_MODE_FILTER): %s", strerror((int)-r));
}

int sb_seccomp_apply(const struct sb_seccomp_policy *policy, const struct sb_seccomp_self *self,
		     char **reterr)
{
	_cleanup_free_ struct sock_filter *insns = NULL;
	struct sock_fprog fprog;
	unsigned short n = 0;
	int r;

	r = prepare_load(policy, self, &insns, &n, reterr);
	if (r != 0)
		return r < 0 ? r : 0;
	fprog = (struct sock_fprog){.len = n, .filter = insns};
	/* TSYNC: every thread, in case a library started one before us; the
	 * call fails rather than leave one unfiltered. */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog) != 0)
		return load_error(-errno, reterr);
	return 0;
}
