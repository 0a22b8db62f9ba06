/* SPDX-License-Identifier: MIT */
/* The net= rule parser (src/profile/net-rule.c). A rule it accepts must be
 * well formed (ports sorted, disjoint and not adjacent; a prefix within the
 * family; no host bit set; the text kept as written), sb_net_rule_has_port()
 * must agree with the ranges, and the rule written back in canonical form
 * must parse to the same rule. A refused rule comes with a message. */
#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "net-rule.h"
#include "util.h"

static void check_rule(const struct sb_net_rule *r, const char *text)
{
	size_t size = r->family == AF_INET ? 4 : 16;

	FUZZ_ASSERT(streq(r->text, text), "the text is not kept as written");
	FUZZ_ASSERT(r->protocols && !(r->protocols & ~(unsigned)(SB_NET_TCP | SB_NET_UDP)),
		    "protocols %#x", r->protocols);
	FUZZ_ASSERT(r->directions && !(r->directions & ~(unsigned)(SB_NET_IN | SB_NET_OUT)),
		    "directions %#x", r->directions);
	FUZZ_ASSERT(r->network && r->network[0], "no network");
	switch (r->network_kind) {
	case SB_NET_NETWORK_ANY:
		FUZZ_ASSERT(streq(r->network, "*"), "'*' is the only any");
		break;
	case SB_NET_NETWORK_HOST:
		FUZZ_ASSERT(strlen(r->network) <= 254 && !strchr(r->network, '/'), "host name '%s'",
			    r->network);
		break;
	case SB_NET_NETWORK_CIDR:
		FUZZ_ASSERT(r->family == AF_INET || r->family == AF_INET6, "family %d", r->family);
		FUZZ_ASSERT(r->prefix_len <= size * 8, "prefix /%u", r->prefix_len);
		for (size_t bit = r->prefix_len; bit < size * 8; bit++)
			FUZZ_ASSERT(!(r->address[bit / 8] & (0x80 >> (bit % 8))),
				    "host bit %zu set in '%s'", bit, text);
		break;
	}
	for (size_t i = 0; i < r->n_ports; i++) {
		FUZZ_ASSERT(r->ports[i].first <= r->ports[i].last, "range %zu inverted", i);
		FUZZ_ASSERT(i == 0 || r->ports[i].first > (unsigned)r->ports[i - 1].last + 1,
			    "ranges %zu and %zu overlap or touch", i - 1, i);
	}
	/* has_port() is a binary search: compare with a walk at the edges. */
	for (size_t i = 0; i < r->n_ports; i++) {
		unsigned probes[] = {r->ports[i].first, r->ports[i].last,
				     r->ports[i].first ? r->ports[i].first - 1u : 0,
				     r->ports[i].last < 65535 ? r->ports[i].last + 1u : 65535};

		for (size_t k = 0; k < ELEMENTSOF(probes); k++) {
			bool in = false;

			for (size_t j = 0; j < r->n_ports; j++)
				in |=
				    probes[k] >= r->ports[j].first && probes[k] <= r->ports[j].last;
			FUZZ_ASSERT(sb_net_rule_has_port(r, (uint16_t)probes[k]) == in,
				    "has_port(%u)", probes[k]);
		}
	}
	if (r->n_ports == 0)
		FUZZ_ASSERT(!sb_net_rule_has_port(r, 0) && !sb_net_rule_has_port(r, 80),
			    "a rule without ports has a port");
}

/* ACTION|PROTO|NETWORK|PORTS|DIRECTION from the parsed rule. */
static char *canonical(const struct sb_net_rule *r)
{
	struct sb_buf b = {0};
	char addr[INET6_ADDRSTRLEN];

	sb_buf_printf(&b, "%s|", r->action == SB_NET_ALLOW ? "ALLOW" : "DENY");
	sb_buf_printf(&b, "%s%s%s|", r->protocols & SB_NET_TCP ? "tcp" : "",
		      r->protocols == (SB_NET_TCP | SB_NET_UDP) ? "," : "",
		      r->protocols & SB_NET_UDP ? "udp" : "");
	if (r->network_kind == SB_NET_NETWORK_CIDR) {
		FUZZ_ASSERT(inet_ntop(r->family, r->address, addr, sizeof(addr)), "inet_ntop");
		sb_buf_printf(&b, "%s/%u|", addr, r->prefix_len);
	} else {
		sb_buf_printf(&b, "%s|", r->network);
	}
	for (size_t i = 0; i < r->n_ports; i++)
		sb_buf_printf(&b, "%s%u-%u", i ? "," : "", r->ports[i].first, r->ports[i].last);
	sb_buf_printf(&b, "|%s%s%s", r->directions & SB_NET_IN ? "IN" : "",
		      r->directions == (SB_NET_IN | SB_NET_OUT) ? "," : "",
		      r->directions & SB_NET_OUT ? "OUT" : "");
	return sb_buf_steal(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *text = strndup((const char *)data, size), *err = NULL, *again = NULL,
			    *err2 = NULL;
	struct sb_net_rule rule = {0}, rule2 = {0};
	int r;

	if (!text || size > 4096)
		return 0;
	r = sb_net_rule_parse(text, &rule, &err);
	if (r < 0) {
		FUZZ_ASSERT(r == -EINVAL || r == -ENOMEM, "r=%d", r);
		FUZZ_ASSERT(r != -EINVAL || (err && err[0]), "a refusal without a message");
		return 0;
	}
	FUZZ_ASSERT(r == 0, "r=%d", r);
	check_rule(&rule, text);
	again = canonical(&rule);
	FUZZ_ASSERT(again, "out of memory");
	r = sb_net_rule_parse(again, &rule2, &err2);
	FUZZ_ASSERT(r == 0, "'%s' written back as '%s' is refused: %s", text, again,
		    err2 ? err2 : "?");
	FUZZ_ASSERT(rule2.action == rule.action && rule2.protocols == rule.protocols &&
			rule2.directions == rule.directions &&
			rule2.network_kind == rule.network_kind && rule2.family == rule.family &&
			rule2.prefix_len == rule.prefix_len &&
			memcmp(rule2.address, rule.address, sizeof(rule.address)) == 0 &&
			rule2.n_ports == rule.n_ports &&
			(rule.n_ports == 0 ||
			 memcmp(rule2.ports, rule.ports, rule.n_ports * sizeof(*rule.ports)) == 0),
		    "'%s' and its canonical form '%s' differ", text, again);
	FUZZ_ASSERT(rule.network_kind == SB_NET_NETWORK_CIDR || streq(rule2.network, rule.network),
		    "network '%s' became '%s'", rule.network, rule2.network);
	sb_net_rule_done(&rule);
	sb_net_rule_done(&rule2);
	return 0;
}
