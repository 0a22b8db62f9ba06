/* SPDX-License-Identifier: MIT */
#include "boundary.h"

#include <stdarg.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "cgroup.h"
#include "rule-files.h"

/* Landlock takes one rule per TCP port. Beyond this many allowed ports a
 * direction is left to the Python guard rather than adding tens of thousands
 * of rules (net=ALLOW|tcp|…|*|OUT allows every port anyway). */
#define SB_MAX_PORT_RULES 1024

/* What any CPython process needs besides its own tree, read-only unless said.
 * Deliberately not /etc as a whole: it holds other programs' secrets. */
static const struct {
	const char *path;
	bool writable;
	bool is_file; /* spares Landlock's build a failed directory rule */
	const char *why;
} system_grants[] = {
    {"/etc/ld.so.cache", false, true, "dynamic loader"},
    {"/etc/ssl", false, false, "CA store"},
    {"/etc/pki", false, false, "CA store"},
    {"/etc/ca-certificates", false, false, "CA store"},
    {"/usr/share/ca-certificates", false, false, "CA store"},
    {"/usr/share/pki", false, false, "CA store"},
    {"/usr/lib/locale", false, false, "locales"},
    {"/usr/share/zoneinfo", false, false, "time zones"},
    {"/etc/localtime", false, true, "time zone"},
    {"/dev/null", true, true, "/dev/null"},
    {"/dev/zero", false, true, "/dev/zero"},
    {"/dev/urandom", false, true, "random numbers"},
    {"/dev/random", false, true, "random numbers"},
    /* Resolved to /proc/<pid> when the rule is added: this process only. */
    {"/proc/self", false, false, "the process's own /proc entry"},
    {"/sys/devices/system/cpu", false, false, "os.cpu_count()"},
};

/* is_file: known not to be a directory (see struct sb_landlock_path). */
static int add_path(struct sb_boundary *b, const char *path, bool writable, bool optional,
		    bool is_file, const char *why)
{
	struct sb_landlock_path *paths;
	char *copy, *reason;

	/* A directory granted twice keeps its widest right. */
	for (size_t i = 0; i < b->n_paths; i++)
		if (streq(b->paths[i].path, path)) {
			b->paths[i].writable = b->paths[i].writable || writable;
			b->paths[i].optional = b->paths[i].optional && optional;
			b->paths[i].is_file = b->paths[i].is_file || is_file;
			return 0;
		}
	copy = strdup(path);
	reason = strdup(why);
	paths = realloc(b->paths, (b->n_paths + 1) * sizeof(*paths));
	if (paths)
		b->paths = paths;
	if (!copy || !reason || !paths) {
		free(copy);
		free(reason);
		return -ENOMEM;
	}
	b->paths[b->n_paths] = (struct sb_landlock_path){
	    .path = copy, .writable = writable, .optional = optional, .is_file = is_file};
	b->n_paths++;
	return sb_strv_consume(&b->path_reasons, reason);
}

static int add_note(struct sb_boundary *b, const char *fmt, ...) _printf_(2, 3);
static int add_note(struct sb_boundary *b, const char *fmt, ...)
{
	va_list ap;
	char *note;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&note, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	return sb_strv_consume(&b->notes, note);
}

static int add_system_lib_dirs(struct sb_boundary *b)
{
	_cleanup_free_ char *dirs = strdup(SB_SYSTEM_LIB_DIRS);
	char *save = NULL;
	int r = 0;

	if (!dirs)
		return -ENOMEM;
	for (char *d = strtok_r(dirs, ":", &save); d && r >= 0; d = strtok_r(NULL, ":", &save))
		r = add_path(b, d, false, true, false, "shared libraries");
	return r;
}

static int collect_grants(struct sb_boundary *b, const struct sb_profile *p,
			  const struct sb_interp_paths *interp)
{
	int r = 0;

	for (char **d = interp ? interp->dirs : NULL; r >= 0 && d && *d; d++)
		r = add_path(b, *d, false, true, false, "interpreter");
	for (char **f = interp ? interp->files : NULL; r >= 0 && f && *f; f++)
		r = add_path(b, *f, false, true, false, "interpreter and program");
	if (r >= 0)
		r = add_system_lib_dirs(b);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(system_grants); i++)
		r = add_path(b, system_grants[i].path, system_grants[i].writable, true,
			     system_grants[i].is_file, system_grants[i].why);
	for (size_t i = 0; r >= 0 && i < p->n_exposes; i++) {
		const struct sb_expose_rule *e = &p->exposes[i];
		_cleanup_free_ char *why = NULL;

		if (asprintf(&why, "expose-%s at %s:%u", e->writable ? "rw" : "ro", e->origin.file,
			     e->origin.line) < 0)
			return -ENOMEM;
		r = add_path(b, e->resolved ? e->resolved : e->path, e->writable, false, false,
			     why);
	}
	if (r >= 0 && p->n_ignores)
		r = add_note(b, "ignore= cannot hide paths from Landlock: the Python guard does");
	return r;
}

/* Turns the ALLOW tcp rules of one direction into a port list, or leaves the
 * direction unrestricted when it allows too many ports to list. */
static int collect_ports(struct sb_boundary *b, const struct sb_profile *p, unsigned direction,
			 bool *ret_restrict, uint16_t **ret_ports, size_t *ret_n)
{
	_cleanup_free_ uint8_t *seen = calloc(65536 / 8, 1);
	_cleanup_free_ uint16_t *ports = NULL;
	size_t n = 0;

	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_nets; i++) {
		const struct sb_net_rule *rule = &p->nets[i];

		if (rule->action != SB_NET_ALLOW || !(rule->protocols & SB_NET_TCP) ||
		    !(rule->directions & direction))
			continue;
		for (size_t j = 0; j < rule->n_ports; j++)
			for (unsigned port = rule->ports[j].first; port <= rule->ports[j].last;
			     port++) {
				if (seen[port / 8] & (1u << (port % 8)))
					continue;
				seen[port / 8] |= (uint8_t)(1u << (port % 8));
				n++;
			}
	}
	if (n > SB_MAX_PORT_RULES) {
		*ret_restrict = false;
		return add_note(b,
				"TCP %s: net= allows %zu ports, more than Landlock rules are "
				"worth; the port check is left to the Python guard",
				direction == SB_NET_IN ? "bind" : "connect", n);
	}
	ports = calloc(n ? n : 1, sizeof(*ports));
	if (!ports)
		return -ENOMEM;
	/* Most profiles allow a handful of ports or none: skip empty bytes
	 * rather than test 65,536 bits on every start. */
	for (size_t i = 0, k = 0; k < n && i < 65536 / 8; i++)
		for (unsigned bit = 0; seen[i] && bit < 8; bit++)
			if (seen[i] & (1u << bit))
				ports[k++] = (uint16_t)(i * 8 + bit);
	*ret_restrict = true;
	*ret_ports = TAKE_PTR(ports);
	*ret_n = n;
	return 0;
}

static bool category_granted(const struct sb_profile *p, enum sb_api_category c)
{
	for (size_t i = 0; i < sb_api_registry_size; i++)
		if (sb_api_registry[i].category == c &&
		    sb_api_is_allowed(p->apis, p->n_apis, &sb_api_registry[i], NULL))
			return true;
	return false;
}

static void build_seccomp(struct sb_boundary *b, const struct sb_profile *p)
{
	b->seccomp.landlock = b->use_landlock;
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
}

int sb_boundary_build(const struct sb_profile *p, enum sb_os_sandbox provider,
		      const struct sb_interp_paths *interp, struct sb_boundary *ret)
{
	struct sb_boundary b = {
	    .use_landlock = provider == SB_OS_LANDLOCK,
	    .use_seccomp = provider != SB_OS_NONE,
	    .drop_capabilities = provider != SB_OS_NONE,
	    .limits = p->limits,
	    .user = p->user,
	};
	int r = 0;

	if (b.use_landlock) {
		r = collect_grants(&b, p, interp);
		if (r >= 0)
			r = collect_ports(&b, p, SB_NET_IN, &b.restrict_bind, &b.bind_ports,
					  &b.n_bind_ports);
		if (r >= 0)
			r = collect_ports(&b, p, SB_NET_OUT, &b.restrict_connect, &b.connect_ports,
					  &b.n_connect_ports);
		if (r >= 0)
			r = sb_rule_files_check(p, &b.rule_file_conflict);
		for (size_t i = 0; r >= 0 && i < p->n_nets; i++) {
			const struct sb_net_rule *n = &p->nets[i];

			if (n->action == SB_NET_DENY || n->network_kind != SB_NET_NETWORK_ANY ||
			    (n->protocols & SB_NET_UDP))
				r = add_note(&b,
					     "net=%s: Landlock filters TCP ports only; hosts, UDP "
					     "and DENY rules are the Python guard's",
					     n->text);
		}
	}
	if (b.use_seccomp)
		build_seccomp(&b, p);
	/* A cgroup v2 memory limit for the whole tree, where one can be made
	 * (cgroup.h); RLIMIT_AS applies anyway. */
	if (r >= 0 && b.limits.memory_bytes && provider != SB_OS_NONE) {
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

void sb_boundary_done(struct sb_boundary *b)
{
	for (size_t i = 0; i < b->n_paths; i++)
		free((char *)b->paths[i].path);
	free(b->paths);
	sb_strv_free(b->path_reasons);
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

int sb_boundary_check_abi(const struct sb_boundary *b, int abi, char **reterr)
{
	if (!b->use_landlock)
		return 0;
	if (abi < 1)
		return sb_error(reterr, -EOPNOTSUPP, "the kernel has no Landlock");
	/* Without ABI 4 the ports a profile allows could not be told from the
	 * ports it refuses: running anyway would allow every port. */
	if (abi < 4 &&
	    ((b->restrict_bind && b->n_bind_ports) || (b->restrict_connect && b->n_connect_ports)))
		return sb_error(
		    reterr, -EOPNOTSUPP,
		    "net= allows TCP ports, but this kernel's Landlock ABI %d cannot "
		    "filter TCP (ABI 4, Linux 6.7, is needed); use os-sandbox=subprocess "
		    "to rely on seccomp and the Python guard, or a newer kernel",
		    abi);
	return 0;
}

int sb_boundary_enter(const struct sb_boundary *b, struct sb_landlock_report *report, char **reterr)
{
	struct sb_privileges_report privileges;
	int r;

	r = sb_boundary_check_abi(b, b->use_landlock ? sb_landlock_abi() : 0, reterr);
	if (r < 0)
		return r;
	if (b->rule_file_conflict)
		return sb_error(reterr, -EPERM, "%s", b->rule_file_conflict);

	if (b->use_landlock) {
		const struct sb_landlock_policy policy = {
		    .paths = b->paths,
		    .n_paths = b->n_paths,
		    .restrict_tcp_bind = b->restrict_bind,
		    .bind_ports = b->bind_ports,
		    .n_bind_ports = b->n_bind_ports,
		    .restrict_tcp_connect = b->restrict_connect,
		    .connect_ports = b->connect_ports,
		    .n_connect_ports = b->n_connect_ports,
		    .scope_abstract_unix = true,
		    .scope_signal = true,
		};

		r = sb_landlock_apply(&policy, report, reterr);
		if (r < 0)
			return r;
	}
	r = sb_privileges_drop(&b->user, b->drop_capabilities, &privileges, reterr);
	if (r < 0)
		return r;
	if (b->use_seccomp) {
		r = sb_seccomp_apply(&b->seccomp, reterr);
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

bool sb_boundary_supervise(const struct sb_boundary *b, struct sb_supervise_options *ret)
{
	*ret = (struct sb_supervise_options){
	    .timeout_ms = b->limits.timeout_ms,
	    .output_bytes = b->limits.output_bytes,
	    .memory_bytes = b->limits.memory_bytes,
	    .cgroup_parent = b->cgroup_parent,
	};
	return ret->timeout_ms || ret->output_bytes || ret->cgroup_parent;
}

static int explain_ports(struct sb_buf *out, const char *what, bool restricted,
			 const uint16_t *ports, size_t n)
{
	int r;

	if (!restricted)
		return sb_buf_printf(out, "#   TCP %s: any port (left to the Python guard)\n",
				     what);
	if (n == 0)
		return sb_buf_printf(out, "#   TCP %s: refused on every port\n", what);
	r = sb_buf_printf(out, "#   TCP %s: only port%s", what, n > 1 ? "s" : "");
	for (size_t i = 0; r >= 0 && i < n && i < 32; i++)
		r = sb_buf_printf(out, "%s%u", i ? "," : " ", ports[i]);
	if (r >= 0 && n > 32)
		r = sb_buf_printf(out, ",… (%zu ports)", n);
	return r < 0 ? r : sb_buf_puts(out, "\n");
}

int sb_boundary_explain(const struct sb_boundary *b, struct sb_buf *out)
{
	static const char *const limit_names[] = {
	    "limit-cpu",	"limit-memory", "limit-processes", "limit-file-size",
	    "limit-open-files", "timeout",	"limit-output"};
	const unsigned long long limit_values[] = {
	    b->limits.cpu_ms,	       b->limits.memory_bytes, b->limits.processes,
	    b->limits.file_size_bytes, b->limits.open_files,   b->limits.timeout_ms,
	    b->limits.output_bytes,
	};
	int r = sb_buf_puts(out, "\n# Kernel boundary\n");

	if (r >= 0 && b->use_landlock) {
		int abi = sb_landlock_abi();

		static const struct {
			int abi;
			const char *what;
		} features[] = {
		    {2, "REFER (renames/links across directories stay refused)"},
		    {3, "TRUNCATE (truncate() of granted files is not restricted)"},
		    {4, "TCP bind/connect rules"},
		    {5, "IOCTL_DEV (device ioctls are not restricted)"},
		    {6, "scoping of abstract Unix sockets and signals"},
		};

		r = sb_buf_printf(out,
				  "#   Landlock (ABI %d on this kernel): everything else is "
				  "refused\n",
				  abi);
		for (size_t i = 0; r >= 0 && i < ELEMENTSOF(features); i++)
			if (abi < features[i].abi)
				r = sb_buf_printf(out, "#   missing in this kernel (ABI %d+): %s\n",
						  features[i].abi, features[i].what);
		for (size_t i = 0; r >= 0 && i < b->n_paths; i++)
			r = sb_buf_printf(out, "#   %-3s %-40s (%s)\n",
					  b->paths[i].writable ? "rw" : "ro", b->paths[i].path,
					  b->path_reasons[i]);
		if (r >= 0)
			r = explain_ports(out, "bind", b->restrict_bind, b->bind_ports,
					  b->n_bind_ports);
		if (r >= 0)
			r = explain_ports(out, "connect", b->restrict_connect, b->connect_ports,
					  b->n_connect_ports);
		if (r >= 0)
			r = sb_buf_puts(out,
					"#   abstract Unix sockets and signals: limited to the "
					"sandbox (ABI 6+)\n");
		for (char **n = b->notes; r >= 0 && n && *n; n++)
			r = sb_buf_printf(out, "#   note: %s\n", *n);
		if (r >= 0 && b->rule_file_conflict)
			r = sb_buf_printf(out, "#   REFUSED, the program will not run: %s\n",
					  b->rule_file_conflict);
	} else if (r >= 0) {
		r = sb_buf_puts(out, "#   no Landlock ruleset with this provider\n");
	}
	if (r >= 0)
		r = sb_privileges_explain(&b->user, b->drop_capabilities, out);
	if (r >= 0 && b->use_seccomp)
		r = sb_seccomp_describe(&b->seccomp, out);
	else if (r >= 0)
		r = sb_buf_puts(out, "#   no seccomp filter with os-sandbox=none\n");
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(limit_names); i++)
		if (limit_values[i])
			r = sb_buf_printf(out, "#   %s: %llu%s\n", limit_names[i], limit_values[i],
					  i == 0 || i == 5	       ? " ms"
					  : i == 1 || i == 3 || i == 6 ? " bytes"
								       : "");
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
	if (r >= 0 && b->limits.output_bytes)
		r = sb_buf_puts(out, "#   limit-output holds by: the supervisor counts what the "
				     "program and its children write to stdout and stderr (pipes), "
				     "and kills them all at the first byte past it (status 125)\n");
	return r;
}
