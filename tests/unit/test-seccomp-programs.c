/* SPDX-License-Identifier: MIT */
/* The programs compiled into python-sb at build time are exactly what
 * libseccomp builds now for the same policy: a stale table would load a
 * filter nobody reviewed. */
#include <linux/filter.h>
#include <sys/mman.h>

#include "seccomp-filter.h"
#include "tap.h"

int main(void)
{
	for (unsigned key = 0; key < SB_SECCOMP_N_KEYS; key++) {
		const struct sb_seccomp_program *prog = &sb_seccomp_programs[key];
		struct sb_seccomp_policy policy;
		_cleanup_free_ char *err = NULL, *data = NULL;
		_cleanup_close_ int fd = -1;
		long size;

		sb_seccomp_policy_from_key(key, &policy);
		if (sb_seccomp_policy_key(&policy) != key) {
			tap_ok(prog->n_insns == 0, "key %u is not canonical: no program", key);
			continue;
		}
		fd = memfd_create("bpf", MFD_CLOEXEC);
		if (!tap_ok(fd >= 0 && sb_seccomp_export(&policy, fd, &err) == 0,
			    "key %u: libseccomp exports (%s)", key, err ? err : "ok"))
			continue;
		size = lseek(fd, 0, SEEK_END);
		data = malloc(size > 0 ? (size_t)size : 1);
		tap_ok(data && size == (long)prog->n_insns * 8 &&
			   pread(fd, data, (size_t)size, 0) == size &&
			   memcmp(data, prog->code, (size_t)size) == 0,
		       "key %u (inet %d udp %d unix %d exec %d fork %d): compiled program matches "
		       "(%u instructions)",
		       key, policy.allow_inet, policy.allow_udp, policy.allow_unix_socket,
		       policy.allow_exec, policy.allow_fork, prog->n_insns);
		/* The pid placeholder only ever stands in a comparison the
		 * loader patches, and every program has it (prlimit64, sched_*). */
		{
			const struct sock_filter *f = (const void *)prog->code;
			size_t jeq = 0, elsewhere = 0;

			for (size_t i = 0; i < prog->n_insns; i++)
				if (f[i].k == SB_SECCOMP_SELF_PID) {
					if (f[i].code == (BPF_JMP | BPF_JEQ | BPF_K))
						jeq++;
					else
						elsewhere++;
				}
			tap_ok(jeq > 0 && elsewhere == 0,
			       "key %u: the pid placeholder in %zu comparisons, %zu elsewhere", key,
			       jeq, elsewhere);
		}
		/* The same for timeout='s timers (timer_settime and timer_delete,
		 * which libseccomp may share one block of comparisons): each in
		 * a comparison, and all of them patched. */
		{
			_cleanup_free_ struct sock_filter *copy = malloc((size_t)prog->n_insns * 8);
			const struct sb_seccomp_self self = {.timers = {5, 9}, .n_timers = 2};
			size_t found[2] = {0, 0}, elsewhere = 0, left = 0, patched;

			if (!tap_ok(copy != NULL, "key %u: a copy", key))
				continue;
			memcpy(copy, prog->code, (size_t)prog->n_insns * 8);
			for (size_t i = 0; i < prog->n_insns; i++)
				for (unsigned t = 0; t < 2; t++)
					if (copy[i].k ==
					    (t ? SB_SECCOMP_TIMER_1 : SB_SECCOMP_TIMER_0)) {
						if (copy[i].code == (BPF_JMP | BPF_JEQ | BPF_K))
							found[t]++;
						else
							elsewhere++;
					}
			patched = sb_seccomp_patch_timers(copy, prog->n_insns, &self);
			for (size_t i = 0; i < prog->n_insns; i++)
				if (copy[i].k == SB_SECCOMP_TIMER_0 ||
				    copy[i].k == SB_SECCOMP_TIMER_1)
					left++;
			tap_ok(found[0] > 0 && found[1] > 0 && elsewhere == 0 &&
				   patched == found[0] + found[1] && left == 0,
			       "key %u: the timer placeholders in %zu + %zu comparisons, %zu "
			       "elsewhere; %zu patched, %zu left",
			       key, found[0], found[1], elsewhere, patched, left);
		}
	}
	return tap_done();
}
