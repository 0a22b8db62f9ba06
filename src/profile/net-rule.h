/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"

enum sb_net_action {
	SB_NET_ALLOW,
	SB_NET_DENY,
};

enum sb_net_protocol_bits {
	SB_NET_TCP = 1u << 0,
	SB_NET_UDP = 1u << 1,
};

enum sb_net_direction_bits {
	SB_NET_IN = 1u << 0,
	SB_NET_OUT = 1u << 1,
};

enum sb_net_network_kind {
	SB_NET_NETWORK_ANY,  /* "*": 0.0.0.0/0 and ::/0 */
	SB_NET_NETWORK_CIDR, /* an address or a network; a bare address is a /32 or /128 */
	SB_NET_NETWORK_HOST, /* a host name, resolved when the policy is applied */
};

struct sb_port_range {
	uint16_t first;
	uint16_t last;
};

/* net=ACTION|PROTO|NETWORK|PORTS|DIRECTION */
struct sb_net_rule {
	enum sb_net_action action;
	unsigned protocols;  /* sb_net_protocol_bits */
	unsigned directions; /* sb_net_direction_bits */
	enum sb_net_network_kind network_kind;
	char *network;	     /* as written (host name, address, CIDR or "*") */
	int family;	     /* AF_INET or AF_INET6 for CIDR */
	uint8_t address[16]; /* network address, host bits cleared (non-strict CIDR) */
	unsigned prefix_len;
	struct sb_port_range *ports; /* sorted, merged; n_ports == 0 means no port at all */
	size_t n_ports;
	char *text; /* the rule as written, for messages */
	struct sb_origin origin;
};

/* Parses the value of a net= line. No name resolution, no syscalls.
 * 0, or -EINVAL with *reterr set to a message (malloc'ed), or -ENOMEM. */
int sb_net_rule_parse(const char *value, struct sb_net_rule *ret, char **reterr);
void sb_net_rule_done(struct sb_net_rule *r);
/* Syntax of a DNS name (RFC 1123 host names), as the NETWORK field takes it:
 * nothing is resolved. Learning writes a name only when this accepts it. */
bool sb_net_is_host_name(const char *name);
/* True when port is in one of the rule's ranges. */
bool sb_net_rule_has_port(const struct sb_net_rule *r, uint16_t port);
