/* SPDX-License-Identifier: MIT */
#pragma once

/* net= rules compiled for decisions (spec §3.5). Building the policy resolves
 * host names once, before the sandbox starts; deciding afterwards is plain
 * arithmetic over a flat array: no allocation, no system call, no Python. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net-rule.h"

/* One IP address. AF_INET uses bytes[0..3]. */
struct sb_net_addr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t bytes[16];
};

struct sockaddr;
/* The address of an AF_INET or AF_INET6 socket address (port dropped);
 * false for any other family. */
bool sb_net_addr_from_sockaddr(const struct sockaddr *sa, struct sb_net_addr *ret);

/* A rule as the policy keeps it: a copy, so that the policy does not depend on
 * the lifetime of the parsed profile. */
struct sb_net_policy_rule {
	enum sb_net_action action;
	unsigned protocols;  /* sb_net_protocol_bits */
	unsigned directions; /* sb_net_direction_bits */
	struct sb_port_range *ports;
	size_t n_ports;
	char *text; /* "ALLOW|tcp|localhost|80|OUT" */
	char *file; /* where it was written; "<command line>" for --net= */
	unsigned line;
};

/* The addresses a host name of a rule was pinned to when the policy was built. */
struct sb_net_pin {
	char *name; /* lower case, without a trailing dot */
	struct sb_net_addr *addrs;
	size_t n_addrs;
};

struct sb_net_entry;

struct sb_net_policy {
	struct sb_net_policy_rule *rules; /* the rules kept (dropped ALLOWs are not) */
	size_t n_rules;
	struct sb_net_entry *entries; /* one per (rule, network): every DENY first */
	size_t n_entries;
	size_t n_deny_entries;
	struct sb_net_pin *pins;
	size_t n_pins;
	/* An ALLOW rule names a network ('*' or a CIDR): a name no rule pins may
	 * still resolve into it, so resolving such names cannot be refused
	 * beforehand. Without one, a name outside the pin is refused without
	 * sending any query (no DNS exfiltration). */
	bool allows_networks;
};

/* How host names are resolved; every member is optional (NULL: the system's).
 * Tests replace the resolver and the clock. */
struct sb_net_resolver {
	/* 0 and a malloc'ed array; -ENOENT for a name that does not exist;
	 * -EAGAIN for a transient failure (retried); another -errno. */
	int (*resolve)(const char *name, struct sb_net_addr **ret, size_t *ret_n, void *userdata);
	void (*sleep_ms)(unsigned ms, void *userdata);
	const char *hosts_file; /* NULL: /etc/hosts; "" for none */
	void *userdata;
};

/* Compiles rules (in profile order) into *ret. Host names are looked up in the
 * hosts file first, then the built-in loopback names, then the resolver
 * (getaddrinfo without AI_ADDRCONFIG, every address), transient errors being
 * retried after 0.2 s and 0.4 s. An ALLOW naming a host that resolves to
 * nothing is dropped, and a line is added to *ret_warnings (a NULL-terminated
 * vector, "file:line: message", for the caller to print; may stay NULL). A
 * DENY naming such a host is fatal: -EHOSTUNREACH with *reterr "file:line:
 * message". Otherwise 0, or -ENOMEM. */
int sb_net_policy_build(const struct sb_net_rule *rules, size_t n_rules,
			const struct sb_net_resolver *resolver, struct sb_net_policy **ret,
			char ***ret_warnings, char **reterr);
struct sb_net_policy *sb_net_policy_free(struct sb_net_policy *p);
static inline void sb_net_policy_freep(struct sb_net_policy **p)
{
	sb_net_policy_free(*p);
}

/* The decision for the addresses of one endpoint (a host name's, or one
 * address): allowed only if every address is. The DENY pass over every rule
 * comes first, then the ALLOW pass; an IPv4-mapped IPv6 address is judged by
 * the IPv4 rules. kind is SB_NET_TCP or SB_NET_UDP, direction SB_NET_IN or
 * SB_NET_OUT. *ret_rule (when not NULL) is the deciding rule, NULL for the
 * implicit default policy. When refused, *ret_index is the address that
 * decided (the first one a DENY rule matches, else the first one no ALLOW
 * rule matches). */
bool sb_net_policy_decide_all(const struct sb_net_policy *p, unsigned kind,
			      const struct sb_net_addr *addrs, size_t n_addrs, uint16_t port,
			      unsigned direction, const struct sb_net_policy_rule **ret_rule,
			      size_t *ret_index);

/* Whether some use of these addresses can be allowed: some kind in kinds, some
 * direction in directions and the given port (port < 0: some port), every
 * address being allowed for that same kind and direction. Resolution
 * requests are judged with it ("a name no rule can allow is refused"). */
bool sb_net_policy_can_allow(const struct sb_net_policy *p, unsigned kinds, unsigned directions,
			     const struct sb_net_addr *addrs, size_t n_addrs, int port);

/* The pin of a host name (case-insensitive, trailing dot ignored), or NULL. */
const struct sb_net_pin *sb_net_policy_pin(const struct sb_net_policy *p, const char *name);

/* A numeric IPv4 or IPv6 address (no scope, no prefix); 0 or -EINVAL. */
int sb_net_addr_parse(const char *text, struct sb_net_addr *ret);
/* Numeric text of an address; IPv6 in brackets when bracket is set. */
void sb_net_addr_format(const struct sb_net_addr *a, bool bracket, char *buf, size_t size);
/* An IPv4-mapped IPv6 address becomes the IPv4 address; others are copied. */
void sb_net_addr_unmap(const struct sb_net_addr *a, struct sb_net_addr *ret);
