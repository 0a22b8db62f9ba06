/* SPDX-License-Identifier: MIT */
/* Identity and capabilities of the program (privileges.h).
 *
 * Order matters. Clearing the bounding set and setting the securebits need
 * CAP_SETPCAP, so they come first, while python-sb still has it; the
 * securebits include SECBIT_NO_SETUID_FIXUP, so that the change of uid that
 * follows keeps CAP_SETUID/CAP_SETGID long enough to change the gid too;
 * then every set is cleared with capset(), which only ever lowers. All of it
 * before the seccomp filter, which refuses these calls to the program. */
#include "privileges.h"

#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT		 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/* Everything that would give a uid 0 capabilities back (at execve of any
 * binary, or when it changes uid), locked so that it stays. */
#define SB_SECUREBITS                                                                              \
	(SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |                           \
	 SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |   \
	 SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

struct caps {
	struct __user_cap_header_struct hdr;
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
};

static int caps_get(struct caps *c)
{
	*c = (struct caps){.hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0}};
	return syscall(SYS_capget, &c->hdr, c->data) < 0 ? -errno : 0;
}

static bool caps_effective(const struct caps *c, unsigned cap)
{
	return c->data[cap / 32].effective & (1u << (cap % 32));
}

static bool caps_empty(const struct caps *c)
{
	for (size_t i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		if (c->data[i].effective || c->data[i].permitted || c->data[i].inheritable)
			return false;
	return true;
}

/* Empties the bounding set. Capabilities are numbered from 0 without gaps,
 * and PR_CAPBSET_DROP answers EINVAL past the kernel's last (cap_valid()):
 * that answer is the end, whatever the kernel's age. Neither
 * /proc/sys/kernel/cap_last_cap (Landlock has closed it by now) nor the
 * headers' CAP_LAST_CAP (a kernel newer than them has more) would be. */
static int drop_bounding_set(char **reterr)
{
	for (unsigned cap = 0; cap < 64; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
			continue;
		if (errno == EINVAL && cap > 0)
			return 0;
		return sb_error(reterr, -errno,
				"cannot drop capability %u from the bounding set: %s", cap,
				strerror(errno));
	}
	return 0;
}

static int switch_identity(const struct sb_identity *user, char **reterr)
{
	int pdeathsig = 0;
	pid_t parent = getppid();

	/* A change of uid clears the parent-death signal (the timeout
	 * supervisor relies on it): read it now, set it again after. */
	(void)prctl(PR_GET_PDEATHSIG, &pdeathsig, 0, 0, 0);
	if (setgroups(0, NULL) < 0)
		return sb_error(reterr, -errno, "user=%u:%u: cannot clear the groups: %s",
				user->uid, user->gid, strerror(errno));
	if (setresgid(user->gid, user->gid, user->gid) < 0)
		return sb_error(reterr, -errno, "user=%u:%u: cannot change the gid: %s", user->uid,
				user->gid, strerror(errno));
	if (setresuid(user->uid, user->uid, user->uid) < 0)
		return sb_error(reterr, -errno, "user=%u:%u: cannot change the uid: %s", user->uid,
				user->gid, strerror(errno));
	if (pdeathsig && prctl(PR_SET_PDEATHSIG, pdeathsig, 0, 0, 0) < 0)
		return sb_error(reterr, -errno, "cannot keep the parent-death signal: %s",
				strerror(errno));
	/* The supervisor may have died between the change and the prctl (its
	 * parent is then another: pid 1 in a PID namespace may be the parent
	 * all along, bwrap's). */
	if (pdeathsig && getppid() != parent)
		return sb_error(reterr, -ESRCH, "the timeout supervisor is gone");
	return 0;
}

static int check_identity(const struct sb_identity *user, char **reterr)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;

	if (getresuid(&r, &e, &s) < 0 || getresgid(&rg, &eg, &sg) < 0)
		return sb_error(reterr, -errno, "cannot read the identity: %s", strerror(errno));
	if (r != user->uid || e != user->uid || s != user->uid || rg != user->gid ||
	    eg != user->gid || sg != user->gid || getgroups(0, NULL) != 0)
		return sb_error(reterr, -EPERM, "user=%u:%u was not applied", user->uid, user->gid);
	return 0;
}

int sb_privileges_drop(const struct sb_identity *user, bool drop_capabilities,
		       struct sb_privileges_report *report, char **reterr)
{
	struct caps c;
	bool setpcap;
	int r;

	*report =
	    (struct sb_privileges_report){.uid = (uint32_t)getuid(), .gid = (uint32_t)getgid()};
	r = caps_get(&c);
	if (r < 0)
		return sb_error(reterr, r, "capget: %s", strerror(-r));
	setpcap = caps_effective(&c, CAP_SETPCAP);

	if (drop_capabilities && setpcap) {
		r = drop_bounding_set(reterr);
		if (r < 0)
			return r;
		if (prctl(PR_SET_SECUREBITS, SB_SECUREBITS, 0, 0, 0) < 0)
			return sb_error(reterr, -errno, "cannot lock the securebits: %s",
					strerror(errno));
	} else if (drop_capabilities) {
		/* An unprivileged caller cannot touch either; with no_new_privs
		 * and empty sets, neither can give anything back. */
		report->bounding_kept = report->securebits_kept = true;
	}

	if (user && user->set && (user->uid != report->uid || user->gid != report->gid)) {
		/* Only a caller that may change its identity does; one that
		 * cannot is unprivileged already. */
		if (caps_effective(&c, CAP_SETUID) && caps_effective(&c, CAP_SETGID)) {
			r = switch_identity(user, reterr);
			if (r >= 0)
				r = check_identity(user, reterr);
			if (r < 0)
				return r;
			report->switched = true;
			report->uid = user->uid;
			report->gid = user->gid;
		} else if (report->uid == 0) {
			/* Root without the capabilities (a wrapper dropped them):
			 * uid 0 still owns root's files. */
			return sb_error(reterr, -EPERM,
					"user=%u:%u: python-sb runs as uid 0 without CAP_SETUID "
					"and CAP_SETGID, and cannot run the program as that user",
					user->uid, user->gid);
		}
	}
	if (!drop_capabilities)
		return 0;

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return sb_error(reterr, -errno, "cannot clear the ambient capabilities: %s",
				strerror(errno));
	/* Lowering is always allowed; ambient follows permitted. */
	c = (struct caps){.hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0}};
	if (syscall(SYS_capset, &c.hdr, c.data) < 0)
		return sb_error(reterr, -errno, "cannot clear the capabilities: %s",
				strerror(errno));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return sb_error(reterr, -errno, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
	/* Fail closed: check rather than trust the calls above. */
	r = caps_get(&c);
	if (r < 0 || !caps_empty(&c))
		return sb_error(reterr, r < 0 ? r : -EPERM,
				"the capabilities could not all be cleared");
	return 0;
}

int sb_privileges_explain(const struct sb_identity *user, bool drop_capabilities,
			  struct sb_buf *out)
{
	struct caps c;
	bool can_switch, setpcap;
	uid_t uid = getuid();
	int r;

	if (caps_get(&c) < 0)
		c = (struct caps){0};
	can_switch = caps_effective(&c, CAP_SETUID) && caps_effective(&c, CAP_SETGID);
	setpcap = caps_effective(&c, CAP_SETPCAP);
	if (!drop_capabilities)
		r = sb_buf_puts(out, "#   capabilities: kept (os-sandbox=none)\n");
	else
		r = sb_buf_printf(
		    out,
		    "#   capabilities: none (bounding%s, permitted, effective, inheritable and "
		    "ambient sets cleared), %s, no_new_privs\n",
		    setpcap ? "" : " set unchanged: no CAP_SETPCAP to clear it;",
		    setpcap ? "securebits locked (no root privileges, no setuid fix-up, no "
			      "ambient raise)"
			    : "securebits unchanged (no CAP_SETPCAP)");
	if (r < 0)
		return r;
	if (user && user->set && can_switch)
		return sb_buf_printf(
		    out, "#   identity: uid %u, gid %u, no supplementary group (user=)\n",
		    user->uid, user->gid);
	if (user && user->set)
		return sb_buf_printf(out,
				     "#   identity: uid %u, gid %u (user=%u:%u not applied: only a "
				     "python-sb started as root changes identity)\n",
				     (unsigned)uid, (unsigned)getgid(), user->uid, user->gid);
	if (uid == 0)
		return sb_buf_puts(out, "#   identity: uid 0 without capabilities: files root owns "
					"stay writable where the grants reach; user=UID:GID (or "
					"--user=) runs the program unprivileged\n");
	return sb_buf_printf(out, "#   identity: uid %u, gid %u (the caller's)\n", (unsigned)uid,
			     (unsigned)getgid());
}
