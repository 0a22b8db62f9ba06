/* SPDX-License-Identifier: MIT */
/* os-sandbox=landlock: the process restricts itself (kernel/landlock.c) to
 * the files the profile exposes, what the interpreter and the system need,
 * and the TCP ports of the net= rules; the default provider where the kernel
 * has Landlock. Host, UDP and DENY rules and ignore= are the Python guard's. */
#include "provider.h"
#include "rule-files.h"

#include "boundary.h"
#include "grants.h"
#include "landlock.h"

static int probe(char **reterr)
{
	int abi = sb_landlock_abi();

	if (abi >= 0)
		return 0;
	/* The hints of the kernel's own sample: the two ways Landlock is absent.
	 * The version query never fails with EPERM but under a seccomp filter:
	 * a python-sb started inside a sandbox (python-sb's own refuses nested
	 * sandboxes), where "not supported by the kernel" would mislead. */
	*reterr = strdup(
	    abi == -EPERM ? "Landlock is refused by a seccomp filter on this process (python-sb "
			    "is running inside another sandbox, which does not allow a nested one)"
	    : abi == -EOPNOTSUPP
		? "Landlock is supported by the kernel but disabled at boot time "
		  "(add landlock to the lsm= kernel parameter)"
		: "Landlock is not supported by the running kernel (5.13+ built with "
		  "CONFIG_SECURITY_LANDLOCK)");
	return *reterr ? abi : -ENOMEM;
}

/* Landlock takes one rule per TCP port. Beyond this many allowed ports a
 * direction is left to the Python guard rather than adding tens of thousands
 * of rules (net=ALLOW|tcp|…|*|OUT allows every port anyway). */
#define SB_MAX_PORT_RULES 1024

static int collect_grants(struct sb_boundary *b, const struct sb_profile *p,
			  const struct sb_interp_paths *interp)
{
	int r = sb_provider_collect_grants(b, p, interp);

	/* The import machinery finds a module by listing its sys.path entry:
	 * sys.path[0]'s names are listed (and, Landlock's rules being
	 * hierarchical, those below it) where it holds an allowed module, its
	 * files read only as granted. */
	if (r >= 0 && interp && interp->path0 && interp->path0_modules &&
	    !sb_boundary_find_path(b, interp->path0)) {
		r = sb_provider_add_path(b, interp->path0, false, true, false,
					 "sys.path[0]: its listing only");
		if (r >= 0)
			b->paths[b->n_paths - 1].list_only = true;
	}
	if (r >= 0 && p->n_ignores)
		r = sb_strv_pushf(&b->notes,
				  "ignore= cannot hide paths from Landlock: the Python guard does");
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
		return sb_strv_pushf(&b->notes,
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

static int prepare(struct sb_boundary *b, const struct sb_profile *p,
		   const struct sb_interp_paths *interp)
{
	int r;

	r = collect_grants(b, p, interp);
	if (r >= 0)
		r = collect_ports(b, p, SB_NET_IN, &b->restrict_bind, &b->bind_ports,
				  &b->n_bind_ports);
	if (r >= 0)
		r = collect_ports(b, p, SB_NET_OUT, &b->restrict_connect, &b->connect_ports,
				  &b->n_connect_ports);
	/* Landlock cannot take a file back out of a granted directory. */
	if (r >= 0)
		r = sb_rule_files_check(p, &b->rule_file_conflict);
	for (size_t i = 0; r >= 0 && i < p->n_nets; i++) {
		const struct sb_net_rule *n = &p->nets[i];

		if (n->action == SB_NET_DENY || n->network_kind != SB_NET_NETWORK_ANY ||
		    (n->protocols & SB_NET_UDP))
			r = sb_strv_pushf(&b->notes,
					  "net=%s: Landlock filters TCP ports only; hosts, UDP "
					  "and DENY rules are the Python guard's",
					  n->text);
	}
	return r;
}

int sb_provider_landlock_check_abi(const struct sb_boundary *b, int abi, char **reterr)
{
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

static int enter(const struct sb_boundary *b, char ***warnings, int *ret_status _unused_,
		 char **reterr)
{
	_cleanup_(sb_landlock_report_done) struct sb_landlock_report report = {0};
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
	char *gaps;
	int r;

	r = sb_provider_landlock_check_abi(b, sb_landlock_abi(), reterr);
	if (r < 0)
		return r;
	r = sb_landlock_apply(&policy, &report, reterr);
	if (r < 0)
		return r;
	if (!report.fs_rights_missing && !report.net_rights_missing && !report.scopes_missing)
		return 0;
	if (asprintf(&gaps,
		     "Landlock ABI %d lacks some rights (fs 0x%llx, net 0x%llx, scopes 0x%llx): "
		     "those operations are not restricted by the kernel (see --explain)",
		     report.abi, (unsigned long long)report.fs_rights_missing,
		     (unsigned long long)report.net_rights_missing,
		     (unsigned long long)report.scopes_missing) < 0)
		return -ENOMEM;
	return sb_strv_consume(warnings, gaps);
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

static int explain(const struct sb_boundary *b, struct sb_buf *out)
{
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
	int abi = sb_landlock_abi();
	int r;

	r = sb_buf_printf(out, "#   Landlock (ABI %d on this kernel): everything else is refused\n",
			  abi);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(features); i++)
		if (abi < features[i].abi)
			r = sb_buf_printf(out, "#   missing in this kernel (ABI %d+): %s\n",
					  features[i].abi, features[i].what);
	for (size_t i = 0; r >= 0 && i < b->n_paths; i++)
		r = sb_buf_printf(out, "#   %-3s %-40s (%s)\n",
				  b->paths[i].writable	  ? "rw"
				  : b->paths[i].list_only ? "ls"
							  : "ro",
				  b->paths[i].path, b->path_reasons[i]);
	if (r >= 0)
		r = explain_ports(out, "bind", b->restrict_bind, b->bind_ports, b->n_bind_ports);
	if (r >= 0)
		r = explain_ports(out, "connect", b->restrict_connect, b->connect_ports,
				  b->n_connect_ports);
	if (r >= 0)
		r = sb_buf_puts(out, "#   abstract Unix sockets and signals: limited to the "
				     "sandbox (ABI 6+)\n");
	for (char **n = b->notes; r >= 0 && n && *n; n++)
		r = sb_buf_printf(out, "#   note: %s\n", *n);
	if (r >= 0 && b->rule_file_conflict)
		r = sb_buf_printf(out, "#   REFUSED, the program will not run: %s\n",
				  b->rule_file_conflict);
	return r;
}

const struct sb_provider sb_provider_landlock = {
    .name = "landlock",
    .flags = SB_PROVIDER_FILES | SB_PROVIDER_NET_TCP_PORTS | SB_PROVIDER_SECCOMP |
	     SB_PROVIDER_LIMITS | SB_PROVIDER_PRIVILEGES,
    .ignore = SB_IGNORE_GUARD_ONLY,
    .summary = "Landlock file and TCP rules",
    .files_layer = {"Python guard + kernel: Landlock", "kernel: Landlock (py-sandbox=false)"},
    .net_layer = {"Python guard + kernel: Landlock (TCP ports)",
		  "kernel: Landlock, TCP ports only (py-sandbox=false)"},
    .probe = probe,
    .prepare = prepare,
    .enter = enter,
    .explain = explain,
};
