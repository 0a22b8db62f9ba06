/* SPDX-License-Identifier: MIT */
#include "boundary.h"

#include <stddef.h>
#include <sys/resource.h>

#include "cgroup.h"
#include "provider.h"
#include "resource-limits.h"

static bool category_granted(const struct sb_profile *p, enum sb_api_category c)
{
	for (size_t i = 0; i < sb_api_registry_size; i++)
		if (sb_api_registry[i].category == c &&
		    sb_api_is_allowed(p->apis, p->n_apis, &sb_api_registry[i], NULL))
			return true;
	return false;
}

static void build_seccomp(struct sb_boundary *b, const struct sb_profile *p,
			  enum sb_rules_mode mode)
{
	b->seccomp.landlock = b->provider->flags & SB_PROVIDER_FILES;
	for (size_t i = 0; i < p->n_nets; i++) {
		if (p->nets[i].action != SB_NET_ALLOW)
			continue;
		b->seccomp.allow_inet = true;
		if (p->nets[i].protocols & SB_NET_UDP)
			b->seccomp.allow_udp = true;
	}
	/* Landlock does not filter connect() on a named socket, so the kernel
	 * cannot tell docker.sock from a socket in an output directory. AF_UNIX
	 * sockets therefore exist only when the Python guard is there to check
	 * the path against an expose-rw grant; with py-sandbox=false (nothing
	 * checks paths) or no writable grant, native code gets no AF_UNIX socket
	 * at all, which keeps the host's /run sockets out of reach. */
	for (size_t i = 0; i < p->n_exposes; i++)
		if (p->exposes[i].writable && p->py_sandbox)
			b->seccomp.allow_unix_socket = true;
	/* Creating, renaming, removing files and changing their metadata: only
	 * with somewhere to write. seccomp cannot see paths; Landlock bounds
	 * where the writes go, and has no right for metadata at all. */
	for (size_t i = 0; i < p->n_exposes; i++)
		if (p->exposes[i].writable)
			b->seccomp.allow_write = true;
	/* The kernel enforces the python-api decision for process creation, so
	 * that native code cannot do what the Python guard refuses. */
	b->seccomp.allow_exec = b->seccomp.allow_fork = category_granted(p, SB_API_PROCESS_EXEC);

	/* Learning records what the rules would refuse, native code included
	 * (learn-native.c watches the profile's own allowlist): the filter
	 * refuses nothing the Python guard lets through while learning. */
	b->seccomp_profile = b->seccomp;
	if (mode == SB_MODE_LEARN) {
		b->seccomp.allow_inet = true;
		b->seccomp.allow_udp = true;
		b->seccomp.allow_unix_socket = true;
		b->seccomp.allow_exec = true;
		b->seccomp.allow_fork = true;
		b->seccomp.allow_write = true;
	}
}

int sb_boundary_build_base(const struct sb_profile *p, const struct sb_provider *provider,
			   enum sb_rules_mode mode, struct sb_boundary *ret)
{
	struct sb_boundary b = {
	    .provider = provider,
	    .use_seccomp = provider->flags & SB_PROVIDER_SECCOMP,
	    .drop_capabilities = provider->flags & SB_PROVIDER_PRIVILEGES,
	};
	int r = 0;

	if (provider->flags & SB_PROVIDER_LIMITS)
		b.limits = p->limits;
	if (provider->flags & SB_PROVIDER_PRIVILEGES)
		b.user = p->user;
	if (b.use_seccomp)
		build_seccomp(&b, p, mode);
	/* A cgroup v2 memory limit for the whole tree, where one can be made
	 * (cgroup.h); RLIMIT_AS applies anyway. Not with a provider that
	 * confines nothing (no seccomp: os-sandbox=none). */
	if (b.limits.memory_bytes && b.use_seccomp) {
		r = sb_cgroup_probe("/", &b.cgroup_parent, &b.cgroup_note);
		if (r == -EOPNOTSUPP)
			r = 0;
	}
	if (r < 0) {
		sb_boundary_done(&b);
		return r;
	}
	*ret = b;
	return 0;
}

struct sb_landlock_path *sb_boundary_find_path(const struct sb_boundary *b, const char *path)
{
	size_t at = sb_str_index_find(&b->path_index, path);

	return at == SIZE_MAX ? NULL : &b->paths[at];
}

/* Room for one more grant and the reasons' NULL, grown by doubling: a
 * profile may grant thousands of paths (every module beside the script). */
static int reserve_path(struct sb_boundary *b)
{
	size_t cap = b->cap_paths ? b->cap_paths * 2 : 32;
	struct sb_landlock_path *paths;
	char **reasons;

	if (b->n_paths < b->cap_paths)
		return 0;
	paths = realloc(b->paths, cap * sizeof(*paths));
	if (!paths)
		return -ENOMEM;
	b->paths = paths;
	reasons = realloc(b->path_reasons, (cap + 1) * sizeof(*reasons));
	if (!reasons)
		return -ENOMEM;
	b->path_reasons = reasons;
	b->cap_paths = cap;
	return 0;
}

int sb_boundary_grant_path(struct sb_boundary *b, const struct sb_landlock_path *grant,
			   const char *why)
{
	struct sb_landlock_path *have = sb_boundary_find_path(b, grant->path);
	_cleanup_free_ char *copy = NULL, *reason = NULL;

	/* Granted twice: the widest right, required if either is. */
	if (have) {
		have->writable = have->writable || grant->writable;
		have->optional = have->optional && grant->optional;
		have->is_file = have->is_file || grant->is_file;
		return 0;
	}
	copy = strdup(grant->path);
	reason = strdup(why);
	if (!copy || !reason || reserve_path(b) < 0 ||
	    sb_str_index_add(&b->path_index, copy, b->n_paths) < 0)
		return -ENOMEM;
	b->paths[b->n_paths] = *grant;
	b->paths[b->n_paths].path = TAKE_PTR(copy);
	b->path_reasons[b->n_paths] = TAKE_PTR(reason);
	b->path_reasons[++b->n_paths] = NULL;
	return 0;
}

int sb_boundary_add_path(struct sb_boundary *b, const char *path, bool writable, const char *why)
{
	if (!(b->provider->flags & SB_PROVIDER_FILES))
		return 0;
	return sb_boundary_grant_path(
	    b, &(struct sb_landlock_path){.path = path, .writable = writable}, why);
}

int sb_boundary_build_provider(struct sb_boundary *b, const struct sb_profile *p,
			       const struct sb_interp_paths *interp)
{
	return b->provider->prepare ? b->provider->prepare(b, p, interp) : 0;
}

int sb_boundary_build(const struct sb_profile *p, const struct sb_provider *provider,
		      const struct sb_interp_paths *interp, enum sb_rules_mode mode,
		      struct sb_boundary *ret)
{
	struct sb_boundary b;
	int r;

	r = sb_boundary_build_base(p, provider, mode, &b);
	if (r < 0)
		return r;
	r = sb_boundary_build_provider(&b, p, interp);
	if (r < 0) {
		sb_boundary_done(&b);
		return r;
	}
	*ret = b;
	return 0;
}

void sb_boundary_done(struct sb_boundary *b)
{
	if (b->provider && b->provider->done)
		b->provider->done(b);
	for (size_t i = 0; i < b->n_paths; i++)
		free((char *)b->paths[i].path);
	free(b->paths);
	sb_strv_free(b->path_reasons);
	sb_str_index_done(&b->path_index);
	sb_strv_free(b->notes);
	free(b->bind_ports);
	free(b->connect_ports);
	free(b->cgroup_parent);
	free(b->cgroup_note);
	free(b->rule_file_conflict);
	*b = (struct sb_boundary){0};
}

/* An address-space limit below what the process already maps would only
 * make CPython abort while it initialises (Py_FatalError, SIGABRT): say so
 * instead, naming the figure. */
static int check_memory_limit(const struct sb_limits *l, char **reterr)
{
	_cleanup_fclose_ FILE *f = NULL;
	unsigned long long pages = 0, in_use, needed;

#ifdef SB_HAVE_ASAN
	(void)reterr;
	return 0; /* RLIMIT_AS is not applied in ASan builds (util.h) */
#endif
	if (!l->memory_bytes)
		return 0;
	f = fopen("/proc/self/statm", "re");
	if (!f || fscanf(f, "%llu", &pages) != 1)
		return 0; /* no figure: let setrlimit decide */
	in_use = pages * (unsigned long long)sysconf(_SC_PAGESIZE);
	/* What initialising the interpreter and importing site add, with room. */
	needed = in_use + 64ULL * 1000 * 1000;
	if (l->memory_bytes >= needed)
		return 0;
	return sb_error(reterr, -EINVAL,
			"limit-memory=%lluB is too small to start the interpreter: the process "
			"already maps %llu MB; give it at least %llu MB",
			l->memory_bytes, in_use / 1000000, needed / 1000000 + 1);
}

int sb_boundary_enter(const struct sb_boundary *b, char ***warnings, int *ret_status, char **reterr)
{
	const struct sb_provider *provider = b->provider;
	struct sb_privileges_report privileges;
	struct sb_seccomp_self self = {.n_timers = 0};
	int r;

	/* A wrapper confines the program it runs, not this process: only
	 * python-sb re-entered under it goes on. */
	if ((provider->flags & SB_PROVIDER_WRAPS_EXEC) && !b->entered_by_wrapper)
		return sb_error(reterr, -EOPNOTSUPP,
				"os-sandbox=%s runs the program under another program: its "
				"boundary cannot be entered by this process",
				provider->name);
	if (b->rule_file_conflict)
		return sb_error(reterr, -EPERM, "%s", b->rule_file_conflict);
	if (provider->enter) {
		r = provider->enter(b, warnings, ret_status, reterr);
		if (r != 0)
			return r; /* failed, or the parent a provider left outside */
	}
	r = sb_privileges_drop(&b->user, b->drop_capabilities, &privileges, reterr);
	if (r < 0)
		return r;
	/* Before seccomp, which protects its timers. */
	if (b->watchdog.deadline_ns) {
		r = sb_watchdog_arm(&b->watchdog, self.timers, reterr);
		if (r < 0)
			return r;
		self.n_timers = 2;
	}
	if (b->use_seccomp) {
		r = sb_seccomp_apply(&b->seccomp, &self, reterr);
		if (r < 0)
			return r;
	}
	/* Limits last: building the ruleset and the filter needs memory and
	 * descriptors that a small limit-memory or limit-open-files would deny
	 * (libseccomp does not survive an allocation failure cleanly). */
	r = check_memory_limit(&b->limits, reterr);
	if (r < 0)
		return r;
	r = sb_limits_apply(&b->limits, reterr);
	if (r < 0)
		return r;
	/* A core dump is a file written outside every grant, sized by
	 * RLIMIT_CORE rather than limit-file-size (SIGXFSZ dumps core). */
	if (b->use_seccomp && setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0}) < 0)
		return sb_error(reterr, -errno, "cannot disable core dumps: %s", strerror(errno));
	return 0;
}

int sb_boundary_explain(const struct sb_boundary *b, struct sb_buf *out)
{
	static const struct {
		const char *key, *unit;
		size_t offset;
	} limits[] = {
#define SB_LIMIT_KEY(id, key, unit, field, rlimit)                                                 \
	{key, SB_UNIT_##unit, offsetof(struct sb_limits, field)},
#define SB_UNIT_DURATION " ms"
#define SB_UNIT_SIZE	 " bytes"
#define SB_UNIT_COUNT	 ""
#include "limit-key-list.h"
#undef SB_LIMIT_KEY
#undef SB_UNIT_DURATION
#undef SB_UNIT_SIZE
#undef SB_UNIT_COUNT
	};
	int r = sb_buf_puts(out, "\n# Kernel boundary\n");

	/* Without a part of the provider's own, the line --explain has always
	 * shown: Landlock is the one confinement a process can enter by itself. */
	if (r >= 0 && b->provider->explain)
		r = b->provider->explain(b, out);
	else if (r >= 0)
		r = sb_buf_puts(out, "#   no Landlock ruleset with this provider\n");
	if (r >= 0)
		r = sb_privileges_explain(&b->user, b->drop_capabilities, out);
	if (r >= 0 && b->use_seccomp)
		r = sb_seccomp_describe(&b->seccomp, out);
	else if (r >= 0)
		r = sb_buf_printf(out, "#   no seccomp filter with os-sandbox=%s\n",
				  b->provider->name);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(limits); i++) {
		unsigned long long v =
		    *(const unsigned long long *)((const char *)&b->limits + limits[i].offset);

		if (v)
			r = sb_buf_printf(out, "#   %s: %llu%s\n", limits[i].key, v,
					  limits[i].unit);
	}
	/* Which mechanism holds each, where it is not obvious. */
	if (r >= 0 && b->limits.memory_bytes)
		r = sb_buf_printf(
		    out,
		    "#   limit-memory holds by: RLIMIT_AS (each process's address "
		    "space)%s%s%s%s\n",
		    b->cgroup_parent ? ", and cgroup v2 memory.max for the whole tree "
				       "(a child of "
		    : b->cgroup_note ? "; no cgroup for the whole tree ("
				     : "",
		    b->cgroup_parent ? b->cgroup_parent
		    : b->cgroup_note ? b->cgroup_note
				     : "",
		    b->cgroup_parent || b->cgroup_note ? ")" : "",
		    b->use_seccomp ? "; memfd_create and System V shared memory refused by seccomp"
				   : "");
	if (r >= 0 && b->watchdog.deadline_ns)
		r = sb_buf_printf(
		    out,
		    "#   timeout holds by: two timers of the program's own process (it "
		    "cannot start processes): at the deadline a signal whose handler "
		    "ends it with status 124, %u ms later SIGKILL; seccomp keeps the "
		    "program from changing them\n",
		    SB_WATCHDOG_GRACE_MS);
	else if (r >= 0 && b->limits.timeout_ms)
		r = sb_buf_puts(out, "#   timeout holds by: a supervisor process, which kills the "
				     "program and every process it started at the deadline (status "
				     "124)\n");
	if (r >= 0 && b->limits.output_bytes)
		r = sb_buf_puts(out, "#   limit-output holds by: the supervisor counts what the "
				     "program and its children write to stdout and stderr (pipes), "
				     "and kills them all at the first byte past it (status 125)\n");
	return r;
}

void sb_boundary_use_watchdog(struct sb_boundary *b, uint64_t start_ns)
{
	/* Every process the program could start would outlive its timers,
	 * and only a supervisor can kill them. */
	if (!b->limits.timeout_ms || b->limits.output_bytes || b->cgroup_parent ||
	    !b->use_seccomp || b->seccomp.allow_fork || b->seccomp.allow_exec ||
	    (b->provider->flags & SB_PROVIDER_CHILD_PROCESS))
		return;
	/* An absurd timeout (> 500 years) saturates: the kernel holds a
	 * deadline past its clock's range as "never". */
	b->watchdog = (struct sb_watchdog){
	    .deadline_ns = sb_supervisor_deadline(start_ns, b->limits.timeout_ms),
	    .timeout_ms = b->limits.timeout_ms,
	};
}

bool sb_boundary_supervise(const struct sb_boundary *b, struct sb_supervise_options *ret)
{
	*ret = (struct sb_supervise_options){
	    .timeout_ms = b->limits.timeout_ms,
	    .output_bytes = b->limits.output_bytes,
	    .memory_bytes = b->limits.memory_bytes,
	    .cgroup_parent = b->cgroup_parent,
	};
	return (ret->timeout_ms && !b->watchdog.deadline_ns) || ret->output_bytes ||
	       ret->cgroup_parent;
}
