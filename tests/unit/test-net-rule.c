/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>

#include "net-rule.h"
#include "tap.h"
#include "util.h"

#define ALL	   (SB_NET_TCP | SB_NET_UDP)
#define BOTH	   (SB_NET_IN | SB_NET_OUT)
#define MAX_RANGES 4

struct ok_case {
	const char *text;
	enum sb_net_action action;
	unsigned protocols;
	enum sb_net_network_kind kind;
	int family;
	const char *address; /* expected network address, host bits cleared */
	unsigned prefix_len;
	size_t n_ports;
	struct sb_port_range ports[MAX_RANGES];
	unsigned directions;
};

static const struct ok_case ok_cases[] = {
    /* spec §10 item 29 */
    {"ALLOW|*|0.0.0.0/0|443|OUT",
     SB_NET_ALLOW,
     ALL,
     SB_NET_NETWORK_CIDR,
     AF_INET,
     "0.0.0.0",
     0,
     1,
     {{443, 443}},
     SB_NET_OUT},
    {"DENY|*|10.0.0.0/8|*|OUT",
     SB_NET_DENY,
     ALL,
     SB_NET_NETWORK_CIDR,
     AF_INET,
     "10.0.0.0",
     8,
     1,
     {{0, 65535}},
     SB_NET_OUT},
    /* item 30 */
    {"ALLOW|udp|192.0.2.7/32|53|OUT",
     SB_NET_ALLOW,
     SB_NET_UDP,
     SB_NET_NETWORK_CIDR,
     AF_INET,
     "192.0.2.7",
     32,
     1,
     {{53, 53}},
     SB_NET_OUT},
    /* item 31: the port field */
    {"ALLOW|tcp|*|80,8000-8002,443|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     3,
     {{80, 80}, {443, 443}, {8000, 8002}},
     SB_NET_OUT},
    {"ALLOW|tcp|*|8000-|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{8000, 65535}},
     SB_NET_OUT},
    {"ALLOW|tcp|*|*|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{0, 65535}},
     SB_NET_OUT},
    {"ALLOW|tcp|*||OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     0,
     {{0, 0}},
     SB_NET_OUT},
    /* item 32: upper-case protocol, host name */
    {"ALLOW|TCP|localhost|9999|IN",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_HOST,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{9999, 9999}},
     SB_NET_IN},
    /* non-strict CIDR: host bits are cleared */
    {"ALLOW|tcp|10.1.2.3/8|1|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_CIDR,
     AF_INET,
     "10.0.0.0",
     8,
     1,
     {{1, 1}},
     SB_NET_OUT},
    {"ALLOW|tcp|192.168.1.255/23|1|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_CIDR,
     AF_INET,
     "192.168.0.0",
     23,
     1,
     {{1, 1}},
     SB_NET_OUT},
    {"ALLOW|tcp|127.0.0.1|1|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_CIDR,
     AF_INET,
     "127.0.0.1",
     32,
     1,
     {{1, 1}},
     SB_NET_OUT},
    {"ALLOW|tcp|::1|1|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_CIDR,
     AF_INET6,
     "::1",
     128,
     1,
     {{1, 1}},
     SB_NET_OUT},
    {"ALLOW|tcp|2001:db8::ff/33|1|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_CIDR,
     AF_INET6,
     "2001:db8::",
     33,
     1,
     {{1, 1}},
     SB_NET_OUT},
    {"ALLOW|tcp|2001:db8:ffff::/31|1|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_CIDR,
     AF_INET6,
     "2001:db8::",
     31,
     1,
     {{1, 1}},
     SB_NET_OUT},
    {"ALLOW|tcp|::/0|1|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_CIDR,
     AF_INET6,
     "::",
     0,
     1,
     {{1, 1}},
     SB_NET_OUT},
    /* protocols */
    {"ALLOW|tcp,udp|*|1|OUT",
     SB_NET_ALLOW,
     ALL,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{1, 1}},
     SB_NET_OUT},
    {"ALLOW|Udp , TCP|*|1|OUT",
     SB_NET_ALLOW,
     ALL,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{1, 1}},
     SB_NET_OUT},
    {"ALLOW|any|*|1|OUT",
     SB_NET_ALLOW,
     ALL,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{1, 1}},
     SB_NET_OUT},
    {"ALLOW|ANY|*|1|OUT",
     SB_NET_ALLOW,
     ALL,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{1, 1}},
     SB_NET_OUT},
    /* directions */
    {"DENY|tcp|*|1|IN,OUT",
     SB_NET_DENY,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{1, 1}},
     BOTH},
    {"DENY|tcp|*|1|*",
     SB_NET_DENY,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{1, 1}},
     BOTH},
    {"DENY|tcp|*|1|in",
     SB_NET_DENY,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{1, 1}},
     SB_NET_IN},
    {"DENY|tcp|*|1| out , in ",
     SB_NET_DENY,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{1, 1}},
     BOTH},
    /* ports: merging, empty elements, white space */
    {"ALLOW|tcp|*|81-90,80,85,91|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{80, 91}},
     SB_NET_OUT},
    {"ALLOW|tcp|*|443,,80,|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     2,
     {{80, 80}, {443, 443}},
     SB_NET_OUT},
    {"ALLOW|tcp|*| 1 - 3 , 0 |OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{0, 3}},
     SB_NET_OUT},
    {"ALLOW|tcp|*|65535|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{65535, 65535}},
     SB_NET_OUT},
    {"ALLOW|tcp|*|100-200,150-300,1000-1000|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     2,
     {{100, 300}, {1000, 1000}},
     SB_NET_OUT},
    {"ALLOW|tcp|*|,|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_ANY,
     AF_UNSPEC,
     NULL,
     0,
     0,
     {{0, 0}},
     SB_NET_OUT},
    /* host names */
    {"ALLOW|tcp|example.com|443|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_HOST,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{443, 443}},
     SB_NET_OUT},
    {"ALLOW|tcp|pypi.org.|443|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_HOST,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{443, 443}},
     SB_NET_OUT},
    {"ALLOW|tcp|ip6-localhost|1|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_HOST,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{1, 1}},
     SB_NET_OUT},
    {"ALLOW|tcp|3com.example|1|OUT",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_HOST,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{1, 1}},
     SB_NET_OUT},
    /* white space around fields */
    {" ALLOW | tcp | example.com | 443 | OUT ",
     SB_NET_ALLOW,
     SB_NET_TCP,
     SB_NET_NETWORK_HOST,
     AF_UNSPEC,
     NULL,
     0,
     1,
     {{443, 443}},
     SB_NET_OUT},
};

struct bad_case {
	const char *text;
	const char *want_in_message;
};

static const struct bad_case bad_cases[] = {
    /* item 31 */
    {"ALLOW|tcp|*|70000|OUT", "invalid port list"},
    {"ALLOW|tcp|*|90-80|OUT", "invalid port list"},
    {"ALLOW|tcp|*|80|", "empty direction"},
    {"ALLOW|tcp|*|80", "Expected 5"},
    {"ALLOW|tcp|*|80", "incorrect number of parts"},
    {"ALLOW|tcp|*|80|OUT|x", "Expected 5"},
    {"", "Expected 5"},
    {"ALLOW", "incorrect number of parts (1)"},
    /* action */
    {"allow|tcp|*|80|OUT", "invalid action 'allow'"},
    {"PERMIT|tcp|*|80|OUT", "invalid action 'PERMIT'"},
    {"|tcp|*|80|OUT", "invalid action ''"},
    /* protocol */
    {"ALLOW|icmp|*|80|OUT", "invalid protocol 'icmp'"},
    {"ALLOW||*|80|OUT", "empty protocol"},
    {"ALLOW|tcp,*|*|80|OUT", "must be used alone"},
    {"ALLOW|any,udp|*|80|OUT", "must be used alone"},
    {"ALLOW|tcp,|*|80|OUT", "invalid protocol ''"},
    /* network */
    {"ALLOW|tcp||80|OUT", "empty network"},
    {"ALLOW|tcp|10.0.0.0/33|80|OUT", "invalid prefix length '/33'"},
    {"ALLOW|tcp|::/129|80|OUT", "invalid prefix length"},
    {"ALLOW|tcp|10.0.0.0/|80|OUT", "invalid prefix length"},
    {"ALLOW|tcp|10.0.0.0/x|80|OUT", "invalid prefix length"},
    {"ALLOW|tcp|10.0.0.0/-1|80|OUT", "invalid prefix length"},
    {"ALLOW|tcp|example.com/24|80|OUT", "prefix length needs"},
    {"ALLOW|tcp|1.2.3.256|80|OUT", "invalid network '1.2.3.256'"},
    {"ALLOW|tcp|10.0.0|80|OUT", "invalid network"},
    {"ALLOW|tcp|-bad.example|80|OUT", "valid host name"},
    {"ALLOW|tcp|bad-.example|80|OUT", "valid host name"},
    {"ALLOW|tcp|a..b|80|OUT", "valid host name"},
    {"ALLOW|tcp|under_score.example|80|OUT", "valid host name"},
    {"ALLOW|tcp|exa mple.com|80|OUT", "valid host name"},
    {"ALLOW|tcp|[::1]|80|OUT", "valid host name"},
    {"ALLOW|tcp|fe80::1%eth0|80|OUT", "valid host name"},
    {"ALLOW|tcp|.|80|OUT", "valid host name"},
    /* ports */
    {"ALLOW|tcp|*|http|OUT", "invalid port list"},
    {"ALLOW|tcp|*|-80|OUT", "no first port"},
    {"ALLOW|tcp|*|80-90-100|OUT", "invalid port list"},
    {"ALLOW|tcp|*|65536|OUT", "'65536' is out of the range"},
    {"ALLOW|tcp|*|80-65536|OUT", "out of the range"},
    {"ALLOW|tcp|*|99999999999999999999999|OUT", "out of the range"},
    {"ALLOW|tcp|*|+80|OUT", "invalid port list"},
    {"ALLOW|tcp|*|80,90-80|OUT", "range '90-80' is inverted"},
    /* directions */
    {"ALLOW|tcp|*|80|UP", "invalid direction 'UP'"},
    {"ALLOW|tcp|*|80|IN,*", "must be used alone"},
    {"ALLOW|tcp|*|80|IN,", "invalid direction ''"},
};

static void check_ok(const struct ok_case *c)
{
	struct sb_net_rule r;
	_cleanup_free_ char *err = NULL;
	uint8_t want_addr[16] = {0};
	bool ok;
	int k = sb_net_rule_parse(c->text, &r, &err);

	if (!tap_ok(k == 0, "'%s' parses (r=%d, %s)", c->text, k, err ? err : "-"))
		return;
	if (c->address)
		inet_pton(c->family, c->address, want_addr);
	ok = r.action == c->action && r.protocols == c->protocols &&
	     r.directions == c->directions && r.network_kind == c->kind &&
	     r.n_ports == c->n_ports && streq(r.text, c->text);
	if (c->kind == SB_NET_NETWORK_CIDR)
		ok = ok && r.family == c->family && r.prefix_len == c->prefix_len &&
		     memcmp(r.address, want_addr, c->family == AF_INET ? 4 : 16) == 0;
	for (size_t i = 0; ok && i < c->n_ports; i++)
		ok = r.ports[i].first == c->ports[i].first && r.ports[i].last == c->ports[i].last;
	tap_ok(ok,
	       "'%s': action %d proto %u dir %u kind %d family %d prefix %u n_ports %zu first "
	       "range %u-%u",
	       c->text, r.action, r.protocols, r.directions, r.network_kind, r.family, r.prefix_len,
	       r.n_ports, r.n_ports ? r.ports[0].first : 0, r.n_ports ? r.ports[0].last : 0);
	sb_net_rule_done(&r);
}

static void test_network_as_written(void)
{
	struct sb_net_rule r;

	if (sb_net_rule_parse("ALLOW|tcp| 10.1.2.3/8 |1|OUT", &r, NULL) < 0) {
		tap_ok(false, "network as written");
		return;
	}
	TAP_IS_STR(r.network, "10.1.2.3/8", "network keeps the text as written (trimmed)");
	TAP_IS_STR(r.text, "ALLOW|tcp| 10.1.2.3/8 |1|OUT", "text keeps the rule as written");
	sb_net_rule_done(&r);
	TAP_IS_INT(r.text == NULL && r.ports == NULL && r.network == NULL, 1,
		   "done clears the rule");
}

static void test_has_port(void)
{
	struct sb_net_rule r;
	static const struct {
		uint16_t port;
		bool in;
	} probes[] = {
	    {79, false},   {80, true},	  {81, false},	  {442, false}, {443, true},
	    {444, false},  {7999, false}, {8000, true},	  {8001, true}, {8002, true},
	    {8003, false}, {0, false},	  {65535, false},
	};

	if (sb_net_rule_parse("ALLOW|tcp|*|80,8000-8002,443|OUT", &r, NULL) < 0) {
		tap_ok(false, "has_port rule");
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(probes); i++)
		TAP_IS_INT(sb_net_rule_has_port(&r, probes[i].port), probes[i].in, "has_port");
	sb_net_rule_done(&r);

	if (sb_net_rule_parse("ALLOW|tcp|*||OUT", &r, NULL) < 0) {
		tap_ok(false, "empty port rule");
		return;
	}
	TAP_IS_INT(sb_net_rule_has_port(&r, 80), 0, "an empty port field matches no port");
	TAP_IS_INT(sb_net_rule_has_port(&r, 0), 0, "an empty port field matches not even 0");
	sb_net_rule_done(&r);

	if (sb_net_rule_parse("ALLOW|tcp|*|8000-|OUT", &r, NULL) < 0) {
		tap_ok(false, "open range rule");
		return;
	}
	TAP_IS_INT(sb_net_rule_has_port(&r, 65535), 1, "open range reaches 65535");
	TAP_IS_INT(sb_net_rule_has_port(&r, 7999), 0, "open range starts at 8000");
	sb_net_rule_done(&r);
}

static void test_long_names(void)
{
	char label64[80], name254[300], rule[400];
	struct sb_net_rule r;
	_cleanup_free_ char *err = NULL;
	int k;

	memset(label64, 'a', 63);
	strcpy(label64 + 63, ".example");
	snprintf(rule, sizeof(rule), "ALLOW|tcp|%s|1|OUT", label64);
	k = sb_net_rule_parse(rule, &r, NULL);
	TAP_IS_INT(k, 0, "a 63-character label is valid");
	if (k == 0)
		sb_net_rule_done(&r);

	memset(label64, 'a', 64);
	strcpy(label64 + 64, ".example");
	snprintf(rule, sizeof(rule), "ALLOW|tcp|%s|1|OUT", label64);
	k = sb_net_rule_parse(rule, &r, &err);
	tap_ok(k == -EINVAL && err && strstr(err, "host name"), "a 64-character label is invalid");
	free(TAKE_PTR(err));

	/* 63 x "a." is 126 characters; 127 labels of "a." gives 254. */
	for (size_t i = 0; i < 127; i++)
		memcpy(name254 + 2 * i, "a.", 2);
	name254[253] = 'x';
	name254[254] = '\0'; /* 254 characters, no trailing dot */
	snprintf(rule, sizeof(rule), "ALLOW|tcp|%s|1|OUT", name254);
	k = sb_net_rule_parse(rule, &r, &err);
	tap_ok(k == -EINVAL && err && strstr(err, "host name"), "a 254-character name is invalid");
	name254[252] = '\0'; /* 252 characters ending in "a" */
	snprintf(rule, sizeof(rule), "ALLOW|tcp|%s|1|OUT", name254);
	k = sb_net_rule_parse(rule, &r, NULL);
	TAP_IS_INT(k, 0, "a 252-character name is valid");
	if (k == 0)
		sb_net_rule_done(&r);
}

int main(void)
{
	for (size_t i = 0; i < ELEMENTSOF(ok_cases); i++)
		check_ok(&ok_cases[i]);

	for (size_t i = 0; i < ELEMENTSOF(bad_cases); i++) {
		struct sb_net_rule r = {.n_ports = 42};
		_cleanup_free_ char *err = NULL;
		int k = sb_net_rule_parse(bad_cases[i].text, &r, &err);

		tap_ok(k == -EINVAL && err && strstr(err, bad_cases[i].want_in_message) &&
			   r.n_ports == 42,
		       "'%s' -> error with '%s' (r=%d, \"%s\")", bad_cases[i].text,
		       bad_cases[i].want_in_message, k, err ? err : "(null)");
	}
	/* The message names the offending element, not only the rule. */
	{
		_cleanup_free_ char *err = NULL;
		struct sb_net_rule r;

		sb_net_rule_parse("ALLOW|tcp|*|80,70000,443|OUT", &r, &err);
		tap_ok(err && strstr(err, "'70000'") && strstr(err, "ALLOW|tcp|*|80,70000,443|OUT"),
		       "port message names the element and the rule: %s", err ? err : "(null)");
	}

	test_network_as_written();
	test_has_port();
	test_long_names();
	return tap_done();
}
