/* SPDX-License-Identifier: MIT */
/* Landlock provider: ABI probe, rights masking, ruleset build, restrict_self.
 *
 * The model is "deny everything the running kernel can deny, then allow what
 * the policy grants". Landlock only denies the rights a ruleset *handles*, so
 * handled_access_fs is always every filesystem right the ABI knows; a right
 * left out of it would silently stay allowed. */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock-compat.h"
#include "landlock.h"
#include "util.h"

#define fallthrough __attribute__((__fallthrough__))

/* clang-format off */
#define ACCESS_FS_ABI1 (LANDLOCK_ACCESS_FS_EXECUTE | \
			LANDLOCK_ACCESS_FS_WRITE_FILE | \
			LANDLOCK_ACCESS_FS_READ_FILE | \
			LANDLOCK_ACCESS_FS_READ_DIR | \
			LANDLOCK_ACCESS_FS_REMOVE_DIR | \
			LANDLOCK_ACCESS_FS_REMOVE_FILE | \
			LANDLOCK_ACCESS_FS_MAKE_CHAR | \
			LANDLOCK_ACCESS_FS_MAKE_DIR | \
			LANDLOCK_ACCESS_FS_MAKE_REG | \
			LANDLOCK_ACCESS_FS_MAKE_SOCK | \
			LANDLOCK_ACCESS_FS_MAKE_FIFO | \
			LANDLOCK_ACCESS_FS_MAKE_BLOCK | \
			LANDLOCK_ACCESS_FS_MAKE_SYM)

/* Every filesystem right this file knows (up to ABI 5; ABI 6 and 7 added none). */
#define ACCESS_FS_ALL (ACCESS_FS_ABI1 | \
		       LANDLOCK_ACCESS_FS_REFER | \
		       LANDLOCK_ACCESS_FS_TRUNCATE | \
		       LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* The only rights the kernel accepts on a rule whose fd is not a directory:
 * the others describe directory content (make_*, remove_*, refer) or listing,
 * and landlock_add_rule() rejects them with EINVAL on a file. */
#define ACCESS_FILE (LANDLOCK_ACCESS_FS_EXECUTE | \
		     LANDLOCK_ACCESS_FS_WRITE_FILE | \
		     LANDLOCK_ACCESS_FS_READ_FILE | \
		     LANDLOCK_ACCESS_FS_TRUNCATE | \
		     LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* expose-ro (spec §8): run, read, list. */
#define ACCESS_FS_RO (LANDLOCK_ACCESS_FS_EXECUTE | \
		      LANDLOCK_ACCESS_FS_READ_FILE | \
		      LANDLOCK_ACCESS_FS_READ_DIR)

#define ACCESS_NET_ALL (LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP)
#define SCOPE_ALL (LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL)
/* clang-format on */

struct abi_rights {
	uint64_t fs;
	uint64_t net;
	uint64_t scoped;
};

static int sys_landlock_create_ruleset(const struct sb_landlock_ruleset_attr *attr, size_t size,
				       uint32_t flags)
{
	return (int)syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

static int sys_landlock_add_rule(int ruleset_fd, int rule_type, const void *attr, uint32_t flags)
{
	return (int)syscall(SYS_landlock_add_rule, ruleset_fd, rule_type, attr, flags);
}

static int sys_landlock_restrict_self(int ruleset_fd, uint32_t flags)
{
	return (int)syscall(SYS_landlock_restrict_self, ruleset_fd, flags);
}

/* What a given ABI can enforce. Start from everything known and strip, from
 * the oldest ABI upwards, what each version lacks (the sandboxer.c shape):
 * the kernel rejects a ruleset naming a right it does not know with EINVAL,
 * so best effort means masking, not asking. */
static struct abi_rights abi_rights(int abi)
{
	struct abi_rights r = {ACCESS_FS_ALL, ACCESS_NET_ALL, SCOPE_ALL};

	switch (abi) {
	case 1:
		r.fs &= ~LANDLOCK_ACCESS_FS_REFER;
		fallthrough;
	case 2:
		r.fs &= ~LANDLOCK_ACCESS_FS_TRUNCATE;
		fallthrough;
	case 3:
		r.net = 0;
		fallthrough;
	case 4:
		r.fs &= ~LANDLOCK_ACCESS_FS_IOCTL_DEV;
		fallthrough;
	case 5:
		r.scoped = 0;
		break;
	default:
		/* 6 and newer: everything this file knows. */
		break;
	}
	return r;
}

/* Appended to a message when the kernel says Landlock is absent. */
static const char *landlock_hint(int r)
{
	switch (r) {
	case -ENOSYS:
		return " (Landlock is not supported by the running kernel: it needs "
		       "CONFIG_SECURITY_LANDLOCK=y and \"landlock,\" in CONFIG_LSM)";
	case -EPERM:
		return " (refused by a seccomp filter: python-sb is running inside another "
		       "sandbox)";
	case -EOPNOTSUPP:
		return " (Landlock is disabled at boot time: add lsm=landlock,... to the "
		       "kernel command line, keeping the LSMs listed in /sys/kernel/security/lsm)";
	default:
		return "";
	}
}

int sb_landlock_abi(void)
{
	int abi = sys_landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	return abi < 0 ? -errno : abi;
}

/* The O_PATH descriptors of the rules, closed together once the ruleset is
 * complete: one close_range() instead of a close() per grant. */
struct rule_fds {
	int *fds;
	size_t n;
};

static void rule_fds_close(struct rule_fds *f)
{
	/* Descriptors opened in a row are consecutive unless an inherited one
	 * sat in between: close each run of consecutive ones in one call. */
	for (size_t i = 0, end; i < f->n; i = end) {
		for (end = i + 1; end < f->n && f->fds[end] == f->fds[end - 1] + 1; end++)
			;
		if (end - i == 1 ||
		    close_range((unsigned)f->fds[i], (unsigned)f->fds[end - 1], 0) < 0)
			for (size_t k = i; k < end; k++)
				close(f->fds[k]);
	}
	f->n = 0;
}

static int add_path_rule(int ruleset_fd, const struct sb_landlock_path *p, uint64_t handled_fs,
			 struct sb_landlock_report *report, struct rule_fds *fds, char **reterr)
{
	struct landlock_path_beneath_attr attr = {0};
	int fd;
	struct stat st;
	int r;

	if (!p->path)
		return sb_error(reterr, -EINVAL, "landlock rule without a path");

	/* O_PATH: the rule needs an identity, not access; it works on files we
	 * could not read and never triggers an automount or a FIFO open. It
	 * follows symlinks on purpose: the rule lands on the target. */
	fd = open(p->path, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		/* An implicit grant the caller cannot even reach (a home directory
		 * of another user, a missing CA store) grants nothing either. */
		if (r == -ENOENT || (p->optional && (r == -EACCES || r == -ENOTDIR))) {
			/* A grant on nothing grants nothing: skip it, but tell the
			 * caller so the downgrade stays visible. */
			if (sb_strv_push(&report->skipped_paths, p->path) < 0)
				return sb_error(reterr, -ENOMEM, "out of memory");
			return 0;
		}
		return sb_error(reterr, r, "cannot open '%s' for a landlock rule: %s", p->path,
				strerror(-r));
	}
	fds->fds[fds->n++] = fd;
	/* A writable grant gets every right the ruleset handles, REFER included:
	 * a rename or link between two directories needs REFER on both sides,
	 * and the kernel still refuses it (EXDEV) if the file would gain rights
	 * at the destination, so REFER cannot widen a grant. */
	attr.allowed_access = p->writable    ? handled_fs
			      : p->list_only ? (LANDLOCK_ACCESS_FS_READ_DIR & handled_fs)
					     : (ACCESS_FS_RO & handled_fs);
	attr.parent_fd = fd;
	/* A grant known to be a file (a device, /etc/localtime) takes only the
	 * file rights: if it were a directory after all, the rule would only
	 * grant less. */
	if (p->is_file)
		attr.allowed_access &= ACCESS_FILE;

	/* Most grants are directories: try the directory rights first. A file
	 * takes only the file rights (EINVAL otherwise), which fstat() would
	 * tell for one system call more on every grant. */
	if (sys_landlock_add_rule(ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) == 0)
		return 0;
	r = -errno;
	if (r == -EINVAL && (attr.allowed_access & ~ACCESS_FILE) && fstat(fd, &st) == 0 &&
	    !S_ISDIR(st.st_mode)) {
		attr.allowed_access &= ACCESS_FILE;
		if (sys_landlock_add_rule(ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) == 0)
			return 0;
		r = -errno;
	}
	return sb_error(reterr, r, "landlock_add_rule for '%s': %s", p->path, strerror(-r));
}

static int add_port_rules(int ruleset_fd, uint64_t right, const uint16_t *ports, size_t n,
			  char **reterr)
{
	for (size_t i = 0; i < n; i++) {
		struct landlock_net_port_attr attr = {
		    .allowed_access = right,
		    .port = ports[i],
		};
		int r;

		if (sys_landlock_add_rule(ruleset_fd, LANDLOCK_RULE_NET_PORT, &attr, 0) < 0) {
			r = -errno;
			return sb_error(reterr, r, "landlock_add_rule for TCP %s port %u: %s",
					right == LANDLOCK_ACCESS_NET_BIND_TCP ? "bind" : "connect",
					(unsigned)ports[i], strerror(-r));
		}
	}
	return 0;
}

/* Caveats for the caller:
 * - landlock_restrict_self() restricts the calling thread only (and what it
 *   creates afterwards). Threads that already exist stay unrestricted, so this
 *   must run before any thread is started (before Py_Initialize, before a
 *   library spawns a helper thread).
 * - File descriptors opened before the call keep the access they were opened
 *   with; close what the sandboxed code must not inherit.
 * - *report is overwritten (not freed first); release it with
 *   sb_landlock_report_done() whether or not this succeeds. */
int sb_landlock_apply(const struct sb_landlock_policy *policy, struct sb_landlock_report *report,
		      char **reterr)
{
	_cleanup_(sb_landlock_report_done) struct sb_landlock_report local = {0};
	struct sb_landlock_ruleset_attr ruleset_attr = {0};
	_cleanup_free_ int *fd_array = NULL; /* declared first: freed after fds is closed */
	_cleanup_(rule_fds_close) struct rule_fds fds = {0};
	_cleanup_close_ int ruleset_fd = -1;
	uint64_t want_net = 0, want_scoped = 0;
	struct abi_rights have;
	int abi, r;

	if (!report)
		report = &local;
	*report = (struct sb_landlock_report){0};
	if (!policy)
		return sb_error(reterr, -EINVAL, "no landlock policy");

	abi = sb_landlock_abi();
	report->abi = abi;
	if (abi < 0)
		return sb_error(reterr, abi, "landlock_create_ruleset (ABI version): %s%s",
				strerror(-abi), landlock_hint(abi));

	have = abi_rights(abi);
	if (policy->restrict_tcp_bind)
		want_net |= LANDLOCK_ACCESS_NET_BIND_TCP;
	if (policy->restrict_tcp_connect)
		want_net |= LANDLOCK_ACCESS_NET_CONNECT_TCP;
	if (policy->scope_abstract_unix)
		want_scoped |= LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET;
	if (policy->scope_signal)
		want_scoped |= LANDLOCK_SCOPE_SIGNAL;

	report->fs_rights_missing = ACCESS_FS_ALL & ~have.fs;
	report->net_rights_missing = want_net & ~have.net;
	report->scopes_missing = want_scoped & ~have.scoped;

	/* Net rights are handled only when asked: handling one means "only the
	 * listed ports", and not restricting must mean "any port". */
	ruleset_attr.handled_access_fs = have.fs;
	ruleset_attr.handled_access_net = want_net & have.net;
	ruleset_attr.scoped = want_scoped & have.scoped;

	ruleset_fd = sys_landlock_create_ruleset(&ruleset_attr, sizeof(ruleset_attr), 0);
	if (ruleset_fd < 0) {
		r = -errno;
		return sb_error(reterr, r, "landlock_create_ruleset: %s%s", strerror(-r),
				landlock_hint(r));
	}

	fd_array = calloc(policy->n_paths + 1, sizeof(*fd_array));
	if (!fd_array)
		return sb_error(reterr, -ENOMEM, "out of memory");
	fds.fds = fd_array;
	for (size_t i = 0; i < policy->n_paths; i++) {
		r = add_path_rule(ruleset_fd, &policy->paths[i], have.fs, report, &fds, reterr);
		if (r < 0)
			return r;
	}
	rule_fds_close(&fds);

	/* A port rule for a right the ruleset does not handle is EINVAL, so the
	 * port lists only count when the right is both asked for and known. */
	if (ruleset_attr.handled_access_net & LANDLOCK_ACCESS_NET_BIND_TCP) {
		r = add_port_rules(ruleset_fd, LANDLOCK_ACCESS_NET_BIND_TCP, policy->bind_ports,
				   policy->n_bind_ports, reterr);
		if (r < 0)
			return r;
	}
	if (ruleset_attr.handled_access_net & LANDLOCK_ACCESS_NET_CONNECT_TCP) {
		r = add_port_rules(ruleset_fd, LANDLOCK_ACCESS_NET_CONNECT_TCP,
				   policy->connect_ports, policy->n_connect_ports, reterr);
		if (r < 0)
			return r;
	}

	/* restrict_self needs no_new_privs (or CAP_SYS_ADMIN): otherwise a
	 * set-uid program exec'd later would run under a policy it did not
	 * expect. Set it only now, so a policy that fails to build leaves the
	 * process as it was. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		r = -errno;
		return sb_error(reterr, r, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(-r));
	}
	if (sys_landlock_restrict_self(ruleset_fd, 0) < 0) {
		r = -errno;
		return sb_error(reterr, r, "landlock_restrict_self: %s", strerror(-r));
	}
	return 0;
}

void sb_landlock_report_done(struct sb_landlock_report *report)
{
	if (!report)
		return;
	sb_strv_free(report->skipped_paths);
	report->skipped_paths = NULL;
}
