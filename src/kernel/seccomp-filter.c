/* SPDX-License-Identifier: MIT */
#include "seccomp-filter.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080 /* glibc < 2.35; only reachable through clone3/unshare */
#endif

/* Syscall numbers above the highest one libseccomp can name, up to this
 * bound, fail with ENOSYS: they are newer than the table this filter was
 * built against (libseccomp 2.5.4 stops at 456; kernel 6.8+ added
 * statmount, listmount, open_tree_attr: new doors into mounts), so nobody
 * has decided whether they are safe, and libc treats ENOSYS as "old kernel"
 * and falls back. 512 is where the native x86_64 numbering stops: 512-547
 * are the x32 ABI's legacy numbers, and syscall_64.tbl reserves them. Each
 * number is one rule, and libseccomp's rule database grows quadratically
 * (1024 would cost 8 ms per launch against 1 ms). Above the bound the
 * kernel's own table answers ENOSYS until some kernel passes 547. Numbers
 * with the x32 bit set never get here (see SCMP_FLTATR_ACT_BADARCH). */
#define SB_SECCOMP_NR_BOUND 512

#define WHY_PROCESSES "reaching into other processes"
#define WHY_KERNEL    "kernel attack surface"
#define WHY_MOUNT     "mounts and namespaces"
#define WHY_SYSTEM    "system administration"
#define WHY_HW	      "direct hardware access"
#define WHY_IPC	      "System V / POSIX IPC outlives the sandbox and is shared host-wide"

/* The syscalls a Python program has no business with: EPERM whatever the
 * profile grants. Names libseccomp does not know on this architecture (vm86
 * on x86_64) are skipped. Keep entries with the same reason together:
 * sb_seccomp_describe() prints one line per run of equal reasons. */
static const struct sb_denied_syscall {
	const char *name;
	const char *reason;
} denied_table[] = {
    {"ptrace", WHY_PROCESSES},
    {"process_vm_readv", WHY_PROCESSES},
    {"process_vm_writev", WHY_PROCESSES},
    {"pidfd_getfd", WHY_PROCESSES},
    {"kcmp", WHY_PROCESSES},
    {"io_uring_setup", WHY_KERNEL}, /* also bypasses seccomp: its ops are not syscalls */
    {"io_uring_enter", WHY_KERNEL},
    {"io_uring_register", WHY_KERNEL},
    {"bpf", WHY_KERNEL},
    {"perf_event_open", WHY_KERNEL},
    {"userfaultfd", WHY_KERNEL}, /* stalls kernel copies: widens race windows */
    {"keyctl", WHY_KERNEL},	 /* keyrings are not namespaced */
    {"add_key", WHY_KERNEL},
    {"request_key", WHY_KERNEL},
    {"lookup_dcookie", WHY_KERNEL},
    {"open_by_handle_at", WHY_KERNEL}, /* escapes a chroot/bind mount (the "shocker" exploit) */
    {"name_to_handle_at", WHY_KERNEL},
    {"mount", WHY_MOUNT},
    {"umount2", WHY_MOUNT},
    {"pivot_root", WHY_MOUNT},
    {"chroot", WHY_MOUNT},
    {"unshare", WHY_MOUNT},
    {"setns", WHY_MOUNT},
    {"fsopen", WHY_MOUNT},
    {"fsconfig", WHY_MOUNT},
    {"fsmount", WHY_MOUNT},
    {"fspick", WHY_MOUNT},
    {"move_mount", WHY_MOUNT},
    {"open_tree", WHY_MOUNT},
    {"mount_setattr", WHY_MOUNT},
    {"init_module", WHY_SYSTEM},
    {"finit_module", WHY_SYSTEM},
    {"delete_module", WHY_SYSTEM},
    {"kexec_load", WHY_SYSTEM},
    {"kexec_file_load", WHY_SYSTEM},
    {"reboot", WHY_SYSTEM},
    {"swapon", WHY_SYSTEM},
    {"swapoff", WHY_SYSTEM},
    {"acct", WHY_SYSTEM},
    {"quotactl", WHY_SYSTEM},
    {"quotactl_fd", WHY_SYSTEM},
    {"syslog", WHY_SYSTEM},
    {"iopl", WHY_HW},
    {"ioperm", WHY_HW},
    {"vm86", WHY_HW},
    {"vm86old", WHY_HW},
    {"shmget", WHY_IPC},
    {"shmat", WHY_IPC},
    {"shmctl", WHY_IPC},
    {"shmdt", WHY_IPC},
    {"msgget", WHY_IPC},
    {"msgsnd", WHY_IPC},
    {"msgrcv", WHY_IPC},
    {"msgctl", WHY_IPC},
    {"semget", WHY_IPC},
    {"semop", WHY_IPC},
    {"semtimedop", WHY_IPC},
    {"semctl", WHY_IPC},
    {"mq_open", WHY_IPC},
    {"mq_unlink", WHY_IPC},
    {"mq_timedsend", WHY_IPC},
    {"mq_timedreceive", WHY_IPC},
    {"mq_notify", WHY_IPC},
    {"mq_getsetattr", WHY_IPC},
};

/* Namespace creation through clone(); unshare and setns are denied outright.
 * CLONE_NEWTIME shares its bit with the exit signal in clone() (no valid
 * signal has bit 7 set), so matching it costs nothing. */
static const struct {
	uint64_t flag;
	const char *name;
} clone_ns_flags[] = {
    {CLONE_NEWNS, "CLONE_NEWNS"},     {CLONE_NEWCGROUP, "CLONE_NEWCGROUP"},
    {CLONE_NEWUTS, "CLONE_NEWUTS"},   {CLONE_NEWIPC, "CLONE_NEWIPC"},
    {CLONE_NEWUSER, "CLONE_NEWUSER"}, {CLONE_NEWPID, "CLONE_NEWPID"},
    {CLONE_NEWNET, "CLONE_NEWNET"},   {CLONE_NEWTIME, "CLONE_NEWTIME"},
};

/* The kernel declares ioctl's cmd as unsigned int, so it only looks at the
 * low 32 bits of the register, while seccomp compares all 64: an equality
 * test on TIOCSTI would let TIOCSTI | 1UL << 32 through (CVE-2017-5226,
 * bubblewrap's TIOCSTI escape, had this shape). Hence MASKED_EQ 0xffffffff,
 * and note that libseccomp's SCMP_A1_32() only truncates the datum, not the
 * argument. TIOCSTI pushes bytes into the terminal's input queue: the shell
 * the sandbox was started from would run them after we exit. TIOCLINUX can
 * read the virtual console's screen and paste its selection. */
static const struct {
	unsigned long cmd;
	const char *name;
} denied_ioctls[] = {
    {TIOCSTI, "TIOCSTI"},
    {TIOCLINUX, "TIOCLINUX"},
};

#define MASK32 UINT64_C(0xffffffff)

/* personality(2): the kernel takes an unsigned int; 0xffffffff only queries. */
#define PERSONA_QUERY UINT64_C(0xffffffff)

static void sb_scmp_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

const char *sb_seccomp_denied_syscall(size_t i)
{
	return i < ELEMENTSOF(denied_table) ? denied_table[i].name : NULL;
}

/* The native number, or -1 when this architecture has no such syscall
 * (libseccomp then answers __NR_SCMP_ERROR, or a negative pseudo-number for
 * the syscalls of other architectures). */
static int resolve(const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

	return nr < 0 ? -1 : nr;
}

/* One rule; its comparisons are ANDed (libseccomp 2.5 refuses two of them on
 * the same argument with -EINVAL). The _exact variant fails instead of
 * silently rewriting the rule. */
static int add_rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n_cmp,
		    const struct scmp_arg_cmp *cmp, char **reterr)
{
	int nr = resolve(name), r;

	if (nr < 0)
		return 0;
	r = seccomp_rule_add_exact_array(ctx, action, nr, n_cmp, cmp);
	if (r < 0)
		return sb_error(reterr, r, "seccomp_rule_add_exact(%s): %s", name, strerror(-r));
	return 0;
}

static int deny(scmp_filter_ctx ctx, const char *name, unsigned n_cmp,
		const struct scmp_arg_cmp *cmp, char **reterr)
{
	return add_rule(ctx, SCMP_ACT_ERRNO(EPERM), name, n_cmp, cmp, reterr);
}

/* Denies `name` when argument `arg`, masked with `mask`, lies in [lo, hi]
 * (hi <= mask; mask is 2^k - 1). Rules cannot hold two comparisons on one
 * argument, so the range is cut into aligned power-of-two blocks, each one
 * MASKED_EQ: [3, 9] becomes 3, 4-7, 8-9. `also` is ANDed to each rule. */
static int deny_block_range(scmp_filter_ctx ctx, const char *name, unsigned arg, uint64_t mask,
			    uint64_t lo, uint64_t hi, const struct scmp_arg_cmp *also,
			    char **reterr)
{
	while (lo <= hi) {
		uint64_t size = 1;
		int r;

		while (size <= mask / 2 && lo % (size * 2) == 0 && lo + size * 2 - 1 <= hi)
			size *= 2;
		struct scmp_arg_cmp cmp[2] = {
		    {arg, SCMP_CMP_MASKED_EQ, mask & ~(size - 1), lo},
		};
		if (also)
			cmp[1] = *also;
		r = deny(ctx, name, also ? 2 : 1, cmp, reterr);
		if (r < 0)
			return r;
		if (hi - lo < size)
			break;
		lo += size;
	}
	return 0;
}

/* Denies `name` unless argument `arg` equals one of `allowed` (sorted, no
 * duplicates). With mask == UINT64_MAX all 64 bits are compared, so a value
 * with garbage in the upper half, which the kernel would truncate to an
 * allowed int, is refused: an allow-list fails closed. The ends become one
 * LT and one GT rule, the gaps between allowed values blocks. With a
 * narrower mask (socket type & 0xf) everything outside is made of blocks. */
static int deny_unless_in(scmp_filter_ctx ctx, const char *name, unsigned arg, uint64_t mask,
			  const uint64_t *allowed, size_t n, const struct scmp_arg_cmp *also,
			  char **reterr)
{
	const bool full = mask == UINT64_MAX;
	uint64_t next = 0; /* lowest value not yet decided */
	int r;

	if (n == 0) {
		struct scmp_arg_cmp cmp[1] = {{0}};

		if (also)
			cmp[0] = *also;
		return deny(ctx, name, also ? 1 : 0, cmp, reterr);
	}
	for (size_t i = 0; i < n; i++) {
		if (allowed[i] > next) {
			if (full && i == 0) {
				struct scmp_arg_cmp cmp[2] = {
				    {arg, SCMP_CMP_LT, allowed[0], 0},
				};
				if (also)
					cmp[1] = *also;
				r = deny(ctx, name, also ? 2 : 1, cmp, reterr);
			} else {
				r = deny_block_range(ctx, name, arg, mask, next, allowed[i] - 1,
						     also, reterr);
			}
			if (r < 0)
				return r;
		}
		next = allowed[i] + 1;
	}
	if (allowed[n - 1] == mask)
		return 0;
	if (!full)
		return deny_block_range(ctx, name, arg, mask, next, mask, also, reterr);
	struct scmp_arg_cmp cmp[2] = {
	    {arg, SCMP_CMP_GT, allowed[n - 1], 0},
	};
	if (also)
		cmp[1] = *also;
	return deny(ctx, name, also ? 2 : 1, cmp, reterr);
}

static int add_personality(scmp_filter_ctx ctx, char **reterr)
{
	/* Allow exactly PER_LINUX (0) and the 0xffffffff query; the flags
	 * (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO...) weaken
	 * what runs next. "Neither all zeros nor all ones" cannot be one rule
	 * (one comparison per argument, no NE under a mask), but such a 32-bit
	 * value always has, cyclically, a 1 followed by a 0: deny bit i set
	 * with bit i+1 clear, for each i. 32 rules; the upper half of the
	 * register is ignored, as the kernel ignores it. */
	for (unsigned i = 0; i < 32; i++) {
		const uint64_t bit = UINT64_C(1) << i, next = UINT64_C(1) << ((i + 1) % 32);
		const struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, bit | next, bit);
		int r = deny(ctx, "personality", 1, &cmp, reterr);

		if (r < 0)
			return r;
	}
	return 0;
}

static int add_clone(scmp_filter_ctx ctx, const struct sb_seccomp_policy *policy, char **reterr)
{
	int r;

	/* clone3 passes its flags in memory, where seccomp cannot look; with
	 * ENOSYS glibc retries with clone(), whose flags are in a register. */
	r = add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, reterr);
	if (r < 0)
		return r;
	/* clone() takes unsigned long flags but uses the low 32 bits only:
	 * compare under a 32-bit mask, as for ioctl. Several rules, ORed. */
	for (size_t i = 0; i < ELEMENTSOF(clone_ns_flags); i++) {
		const uint64_t f = clone_ns_flags[i].flag;
		const struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, f, f);

		r = deny(ctx, "clone", 1, &cmp, reterr);
		if (r < 0)
			return r;
	}
	if (policy->allow_fork)
		return 0;
	/* Threads only: CLONE_THREAD requires CLONE_SIGHAND, which requires
	 * CLONE_VM, so what passes is a thread of this process. */
	const struct scmp_arg_cmp no_thread = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
	r = deny(ctx, "clone", 1, &no_thread, reterr);
	if (r >= 0)
		r = deny(ctx, "fork", 0, NULL, reterr);
	if (r >= 0)
		r = deny(ctx, "vfork", 0, NULL, reterr);
	return r;
}

static int add_sockets(scmp_filter_ctx ctx, const struct sb_seccomp_policy *policy, char **reterr)
{
	uint64_t domains[3], types[2];
	size_t n_domains = 0, n_types = 0;
	int r;

	/* Allow-list of domains: AF_NETLINK, AF_PACKET, AF_VSOCK, AF_ALG, AF_KEY
	 * and the rest are refused even with every grant. socketpair() is not
	 * filtered: asyncio's self-pipe needs it, and an unnamed pair reaches
	 * nothing outside the process. */
	if (policy->allow_unix_socket)
		domains[n_domains++] = AF_UNIX;
	if (policy->allow_inet) {
		domains[n_domains++] = AF_INET;
		domains[n_domains++] = AF_INET6;
	}
	r = deny_unless_in(ctx, "socket", 0, UINT64_MAX, domains, n_domains, NULL, reterr);
	if (r < 0 || !policy->allow_inet)
		return r;

	/* net= rules speak of TCP and UDP only: SOCK_STREAM, plus SOCK_DGRAM
	 * with a udp rule. SOCK_RAW (root in a container could craft UDP with
	 * it), SOCK_SEQPACKET (SCTP) and SOCK_PACKET are refused. The type
	 * carries SOCK_NONBLOCK and SOCK_CLOEXEC above SOCK_TYPE_MASK (0xf),
	 * which is what the kernel looks at. */
	types[n_types++] = SOCK_STREAM;
	if (policy->allow_udp)
		types[n_types++] = SOCK_DGRAM;
	for (size_t i = 0; r >= 0 && i < 2; i++) {
		const struct scmp_arg_cmp domain =
		    SCMP_A0(SCMP_CMP_EQ, i == 0 ? AF_INET : AF_INET6, 0);

		r = deny_unless_in(ctx, "socket", 1, 0xf, types, n_types, &domain, reterr);
	}
	return r;
}

static int add_unknown_syscalls(scmp_filter_ctx ctx, char **reterr)
{
	int last = -1;

	for (int nr = 0; nr < SB_SECCOMP_NR_BOUND; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

		if (name)
			last = nr;
		free(name);
	}
	for (int nr = last + 1; nr < SB_SECCOMP_NR_BOUND; nr++) {
		int r = seccomp_rule_add_exact(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);

		if (r < 0)
			return sb_error(reterr, r, "seccomp_rule_add_exact(syscall %d): %s", nr,
					strerror(-r));
	}
	return 0;
}

static int set_attr(scmp_filter_ctx ctx, enum scmp_filter_attr attr, uint32_t value,
		    const char *attr_name, char **reterr)
{
	int r = seccomp_attr_set(ctx, attr, value);

	if (r < 0)
		return sb_error(reterr, r, "seccomp_attr_set(%s): %s", attr_name, strerror(-r));
	return 0;
}

/* The libseccomp context of a policy, ready to load or export. */
static int build(const struct sb_seccomp_policy *policy, scmp_filter_ctx *ret, char **reterr)
{
	_cleanup_(sb_scmp_releasep) scmp_filter_ctx ctx = NULL;
	int r;

	if (!policy)
		return sb_error(reterr, -EINVAL, "sb_seccomp_apply: no policy");

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return sb_error(reterr, -ENOMEM, "seccomp_init: out of memory");

	/* The filter only lists x86_64 numbers. A 64-bit process can still
	 * enter the kernel through the i386 ABI (int $0x80: different numbers,
	 * ptrace is 26 there, not 101) or the x32 ABI (numbers with bit 30
	 * set): a native-only filter would let those through untouched. The
	 * filter first checks the arch field, and x32 numbers on the x86_64
	 * arch, and kills the whole process for anything foreign; no Python
	 * program makes such calls. */
	r = set_attr(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS, "ACT_BADARCH", reterr);
	/* no_new_privs: required to load a filter without CAP_SYS_ADMIN, and
	 * keeps a setuid binary from running under a filter it did not expect. */
	if (r >= 0)
		r = set_attr(ctx, SCMP_FLTATR_CTL_NNP, 1, "CTL_NNP", reterr);
	/* Every thread, in case a library started one before us; fails (rather
	 * than leaving a thread unfiltered) if that is impossible. */
	if (r >= 0)
		r = set_attr(ctx, SCMP_FLTATR_CTL_TSYNC, 1, "CTL_TSYNC", reterr);
	if (r < 0)
		return r;
	/* Best effort, not security relevant: the kernel's errno from
	 * seccomp_load() rather than -ECANCELED, and a binary tree over the
	 * syscall numbers instead of a linear scan. */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

	for (size_t i = 0; i < ELEMENTSOF(denied_table); i++) {
		r = deny(ctx, denied_table[i].name, 0, NULL, reterr);
		if (r < 0)
			return r;
	}
	r = add_personality(ctx, reterr);
	if (r >= 0)
		r = add_clone(ctx, policy, reterr);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(denied_ioctls); i++) {
		const struct scmp_arg_cmp cmp =
		    SCMP_A1(SCMP_CMP_MASKED_EQ, MASK32, denied_ioctls[i].cmd);

		r = deny(ctx, "ioctl", 1, &cmp, reterr);
	}
	if (r >= 0)
		r = add_sockets(ctx, policy, reterr);
	if (r >= 0 && !policy->allow_exec) {
		r = deny(ctx, "execve", 0, NULL, reterr);
		if (r >= 0)
			r = deny(ctx, "execveat", 0, NULL, reterr);
	}
	if (r >= 0)
		r = add_unknown_syscalls(ctx, reterr);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(ctx);
	return 0;
}

int sb_seccomp_apply_dynamic(const struct sb_seccomp_policy *policy, char **reterr)
{
	_cleanup_(sb_scmp_releasep) scmp_filter_ctx ctx = NULL;
	int r;

	r = build(policy, &ctx, reterr);
	if (r < 0)
		return r;
	r = seccomp_load(ctx);
	if (r < 0)
		return sb_error(reterr, r, "seccomp_load: %s", strerror(-r));
	return 0;
}

int sb_seccomp_export(const struct sb_seccomp_policy *policy, int fd, char **reterr)
{
	_cleanup_(sb_scmp_releasep) scmp_filter_ctx ctx = NULL;
	int r;

	r = build(policy, &ctx, reterr);
	if (r < 0)
		return r;
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return sb_error(reterr, r, "seccomp_export_bpf: %s", strerror(-r));
	return 0;
}

unsigned sb_seccomp_policy_key(const struct sb_seccomp_policy *policy)
{
	/* UDP without inet sockets means nothing: one key for both. */
	return (policy->allow_inet ? 1u : 0u) |
	       (policy->allow_inet && policy->allow_udp ? 2u : 0u) |
	       (policy->allow_unix_socket ? 4u : 0u) | (policy->allow_exec ? 8u : 0u) |
	       (policy->allow_fork ? 16u : 0u);
}

void sb_seccomp_policy_from_key(unsigned key, struct sb_seccomp_policy *ret)
{
	*ret = (struct sb_seccomp_policy){
	    .allow_inet = key & 1u,
	    .allow_udp = (key & 1u) && (key & 2u),
	    .allow_unix_socket = key & 4u,
	    .allow_exec = key & 8u,
	    .allow_fork = key & 16u,
	};
}

int sb_seccomp_describe(const struct sb_seccomp_policy *policy, struct sb_buf *out)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(denied_table);) {
		const char *reason = denied_table[i].reason;
		bool first = true;

		r = sb_buf_printf(out, "#   seccomp: deny (EPERM), %s:", reason);
		for (; r >= 0 && i < ELEMENTSOF(denied_table) &&
		       streq(denied_table[i].reason, reason);
		     i++) {
			if (resolve(denied_table[i].name) < 0)
				continue; /* not on this architecture */
			r = sb_buf_printf(out, "%s %s", first ? "" : ",", denied_table[i].name);
			first = false;
		}
		if (r >= 0)
			r = sb_buf_putc(out, '\n');
	}
	if (r >= 0)
		r = sb_buf_puts(out,
				"#   seccomp: personality(): only PER_LINUX and the 0xffffffff "
				"query\n");
	if (r >= 0)
		r = sb_buf_puts(out, "#   seccomp: ioctl(): TIOCSTI, TIOCLINUX refused (command "
				     "compared on 32 bits)\n");
	if (r >= 0)
		r = sb_buf_puts(out, "#   seccomp: clone3 fails with ENOSYS (libc falls back to "
				     "clone, whose flags the filter sees)\n");
	if (r >= 0)
		r = sb_buf_puts(out,
				"#   seccomp: clone(): namespace flags (CLONE_NEW*) refused\n");
	if (r >= 0 && !policy->allow_fork)
		r = sb_buf_puts(out, "#   seccomp: fork, vfork, clone without CLONE_THREAD refused "
				     "(python-api does not grant process-exec)\n");
	if (r >= 0 && !policy->allow_exec)
		r = sb_buf_puts(out, "#   seccomp: execve, execveat refused (python-api does not "
				     "grant process-exec)\n");
	if (r >= 0)
		r = sb_buf_printf(out,
				  "#   seccomp: socket(): AF_UNIX %s; AF_INET/AF_INET6 %s; "
				  "every other domain refused; socketpair() allowed\n",
				  policy->allow_unix_socket
				      ? "allowed (the Python guard checks the socket path)"
				      : "refused (needs an expose-rw rule and py-sandbox=true)",
				  !policy->allow_inet ? "refused (no net= rule)"
				  : policy->allow_udp ? "SOCK_STREAM and SOCK_DGRAM only"
						      : "SOCK_STREAM only (no udp net= rule)");
	if (r >= 0)
		r = sb_buf_printf(out,
				  "#   seccomp: syscalls newer than libseccomp %u.%u.%u knows "
				  "fail with ENOSYS; foreign ABIs (i386 int $0x80, x32) kill "
				  "the process\n",
				  seccomp_version()->major, seccomp_version()->minor,
				  seccomp_version()->micro);
	return r;
}
