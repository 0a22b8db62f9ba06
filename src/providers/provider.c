/* SPDX-License-Identifier: MIT */
#include "provider.h"

#include "landlock.h"

static int probe_always(char **reterr _unused_)
{
	return 0;
}

static int probe_landlock(char **reterr)
{
	int abi = sb_landlock_abi();

	if (abi >= 0)
		return 0;
	/* The hints of the kernel's own sample: the two ways Landlock is absent. */
	*reterr = strdup(abi == -EOPNOTSUPP
			     ? "Landlock is supported by the kernel but disabled at boot time "
			       "(add landlock to the lsm= kernel parameter)"
			     : "Landlock is not supported by the running kernel (5.13+ built with "
			       "CONFIG_SECURITY_LANDLOCK)");
	return *reterr ? abi : -ENOMEM;
}

/* Kernel providers land one by one; until a provider is built, naming it must
 * stop the launch rather than quietly drop to a weaker one. */
static int probe_not_built(char **reterr)
{
	*reterr = strdup("this provider is not available in this version of python-sb yet");
	return *reterr ? -EOPNOTSUPP : -ENOMEM;
}

static const struct sb_provider providers[SB_OS__N] = {
    [SB_OS_NONE] = {SB_OS_NONE, "none", "none: plain Python in this process", probe_always},
    [SB_OS_SUBPROCESS] = {SB_OS_SUBPROCESS, "subprocess",
			  "none: the Python guard only (no kernel boundary)", probe_always},
    [SB_OS_LANDLOCK] = {SB_OS_LANDLOCK, "landlock", "Landlock file and TCP rules", probe_landlock},
    [SB_OS_UNSHARE] = {SB_OS_UNSHARE, "unshare", "user, mount, PID and network namespaces",
		       probe_not_built},
    [SB_OS_BWRAP] = {SB_OS_BWRAP, "bwrap", "bubblewrap namespaces", probe_not_built},
    [SB_OS_FIREJAIL] = {SB_OS_FIREJAIL, "firejail", "firejail namespaces and filters",
			probe_not_built},
    [SB_OS_QEMU] = {SB_OS_QEMU, "qemu", "a virtual machine", probe_not_built},
};

const struct sb_provider *sb_provider_get(enum sb_os_sandbox id)
{
	if ((unsigned)id >= SB_OS__N || !providers[id].name)
		return NULL;
	return &providers[id];
}

int sb_provider_select(enum sb_os_sandbox requested, const struct sb_provider **ret,
		       char **ret_note, bool *ret_warn, char **reterr)
{
	const struct sb_provider *p;
	_cleanup_free_ char *why = NULL;
	int r;

	*ret_note = NULL;
	*ret_warn = false;
	if (requested == SB_OS_UNSET || requested == SB_OS_AUTO) {
		p = sb_provider_get(SB_OS_LANDLOCK);
		r = p->probe(&why);
		if (r >= 0) {
			*ret = p;
			return 0;
		}
		if (asprintf(ret_note,
			     "os-sandbox=auto chose subprocess: landlock unavailable (%s)",
			     why ? why : strerror(-r)) < 0) {
			*ret_note = NULL;
			return -ENOMEM;
		}
		/* A warning only when the kernel is the reason (not a build without
		 * the provider). */
		*ret_warn = r == -ENOSYS || r == -EOPNOTSUPP;
		*ret = sb_provider_get(SB_OS_SUBPROCESS);
		return 0;
	}
	p = sb_provider_get(requested);
	if (!p)
		return -EINVAL;
	r = p->probe(&why);
	if (r < 0) {
		if (asprintf(reterr,
			     "os-sandbox=%s cannot be applied: %s. It was named explicitly, so "
			     "python-sb will not fall back to a weaker provider",
			     p->name, why ? why : strerror(-r)) < 0)
			*reterr = NULL;
		return r;
	}
	*ret = p;
	return 0;
}
