/* SPDX-License-Identifier: MIT */
/* The net= decision (spec §3.5, §10 items 28-32) on a compiled policy, with a
 * fake resolver and a private hosts file: no real name is ever looked up. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "net-policy.h"
#include "tap.h"
#include "util.h"

#define TCP SB_NET_TCP
#define UDP SB_NET_UDP
#define IN  SB_NET_IN
#define OUT SB_NET_OUT

static char hosts_path[] = "/tmp/test-net-policy-hostsXXXXXX";

/* The fake resolver: a table, plus names that fail transiently a given number
 * of times before answering. */
struct fake_dns {
	unsigned calls;
	unsigned again_left; /* -EAGAIN answers still to give */
	unsigned slept_ms[8];
	unsigned n_sleeps;
};

static const struct {
	const char *name;
	const char *addrs[4];
} dns_table[] = {
    {"three.example", {"192.0.2.1", "192.0.2.2", "10.0.0.7"}},
    {"dual.example", {"192.0.2.9", "2001:db8::9", "192.0.2.9"}},
    {"flaky.example", {"198.51.100.4"}},
};

static int fake_resolve(const char *name, struct sb_net_addr **ret, size_t *ret_n, void *userdata)
{
	struct fake_dns *dns = userdata;

	dns->calls++;
	if (streq(name, "flaky.example") && dns->again_left) {
		dns->again_left--;
		return -EAGAIN;
	}
	for (size_t i = 0; i < ELEMENTSOF(dns_table); i++) {
		if (!streq(dns_table[i].name, name))
			continue;
		for (size_t k = 0; k < 4 && dns_table[i].addrs[k]; k++) {
			*ret = reallocarray(*ret, *ret_n + 1, sizeof(**ret));
			if (!*ret)
				return -ENOMEM;
			sb_net_addr_parse(dns_table[i].addrs[k], &(*ret)[(*ret_n)++]);
		}
		return 0;
	}
	return -ENOENT;
}

static void fake_sleep(unsigned ms, void *userdata)
{
	struct fake_dns *dns = userdata;

	if (dns->n_sleeps < ELEMENTSOF(dns->slept_ms))
		dns->slept_ms[dns->n_sleeps++] = ms;
}

struct fixture {
	struct sb_net_rule rules[8];
	size_t n_rules;
	struct sb_net_policy *policy;
	char **warnings;
	char *error;
	int r;
	struct fake_dns dns;
};

/* Builds a policy from rule texts; each rule is "written" at line i+1 of
 * profile.sb. hosts: the hosts file to use (NULL: the test's own). */
static void build(struct fixture *f, const char *hosts, const char *const *texts)
{
	const struct sb_net_resolver res = {
	    .resolve = fake_resolve,
	    .sleep_ms = fake_sleep,
	    .hosts_file = hosts ? hosts : hosts_path,
	    .userdata = &f->dns,
	};

	for (f->n_rules = 0; texts[f->n_rules]; f->n_rules++) {
		char *err = NULL;
		int r = sb_net_rule_parse(texts[f->n_rules], &f->rules[f->n_rules], &err);

		if (r < 0) {
			tap_diag("cannot parse '%s': %s", texts[f->n_rules], err ? err : "?");
			abort();
		}
		free(err);
		f->rules[f->n_rules].origin =
		    (struct sb_origin){.file = "profile.sb", .line = (unsigned)f->n_rules + 1};
	}
	f->r = sb_net_policy_build(f->rules, f->n_rules, &res, &f->policy, &f->warnings, &f->error);
}

static void done(struct fixture *f)
{
	for (size_t i = 0; i < f->n_rules; i++)
		sb_net_rule_done(&f->rules[i]);
	sb_net_policy_free(f->policy);
	sb_strv_free(f->warnings);
	free(f->error);
	memset(f, 0, sizeof(*f));
}

/* The decision for "ip" (v4 or v6 text); *rule_text gets the deciding rule's
 * text or "default". */
static bool decide(const struct fixture *f, unsigned kind, const char *ip, unsigned port,
		   unsigned direction, const char **rule_text)
{
	const struct sb_net_policy_rule *rule = NULL;
	struct sb_net_addr a;
	bool ok;

	if (sb_net_addr_parse(ip, &a) < 0)
		abort();
	ok = sb_net_policy_decide_all(f->policy, kind, &a, 1, (uint16_t)port, direction, &rule,
				      NULL);
	if (rule_text)
		*rule_text = rule ? rule->text : "default";
	return ok;
}

#define RULES(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_no_rules(void)
{
	struct fixture f = {0};
	const char *why;

	build(&f, NULL, (const char *const[]){NULL});
	TAP_IS_INT(f.r, 0, "an empty policy builds");
	/* item 28 */
	tap_ok(!decide(&f, TCP, "93.184.216.34", 80, OUT, &why) && streq(why, "default"),
	       "item 28: no net= rule, connect refused by the implicit default policy");
	tap_ok(!decide(&f, UDP, "127.0.0.1", 53, OUT, NULL), "no rule: loopback UDP refused too");
	tap_ok(!f.policy->allows_networks, "no rule: arbitrary names cannot be allowed");
	done(&f);
}

static void test_item_29(void)
{
	struct fixture f = {0};
	const char *why;

	build(&f, NULL, RULES("ALLOW|*|0.0.0.0/0|443|OUT", "DENY|*|10.0.0.0/8|*|OUT"));
	TAP_IS_INT(f.r, 0, "item 29 policy builds");
	tap_ok(!decide(&f, TCP, "10.0.0.5", 443, OUT, &why) &&
		   streq(why, "DENY|*|10.0.0.0/8|*|OUT"),
	       "item 29: 10.0.0.5:443 refused by the DENY rule, though it comes second");
	tap_ok(decide(&f, TCP, "93.184.216.34", 443, OUT, &why) &&
		   streq(why, "ALLOW|*|0.0.0.0/0|443|OUT"),
	       "item 29: 93.184.216.34:443 allowed by the ALLOW rule");
	tap_ok(decide(&f, UDP, "93.184.216.34", 443, OUT, NULL), "'*' protocol covers UDP");
	tap_ok(!decide(&f, TCP, "93.184.216.34", 80, OUT, &why) && streq(why, "default"),
	       "item 29: another port refused by the implicit default");
	tap_ok(!decide(&f, TCP, "93.184.216.34", 443, IN, NULL),
	       "item 29: an OUT rule does not allow a bind (IN)");
	tap_ok(!decide(&f, TCP, "2001:db8::1", 443, OUT, NULL),
	       "0.0.0.0/0 does not cover IPv6 addresses");
	tap_ok(!decide(&f, TCP, "::ffff:10.0.0.5", 443, OUT, &why) &&
		   streq(why, "DENY|*|10.0.0.0/8|*|OUT"),
	       "IPv4-mapped ::ffff:10.0.0.5 judged by the IPv4 DENY");
	tap_ok(decide(&f, TCP, "::ffff:93.184.216.34", 443, OUT, NULL),
	       "IPv4-mapped ::ffff:93.184.216.34 judged by the IPv4 ALLOW");
	tap_ok(f.policy->allows_networks, "a CIDR ALLOW lets unpinned names resolve");
	done(&f);
}

static void test_item_30(void)
{
	struct fixture f = {0};
	const struct sb_net_pin *pin;
	const struct sb_net_policy_rule *rule = NULL;
	size_t index = 99;

	/* A host with three addresses, one of them inside a DENY network. */
	build(&f, NULL, RULES("ALLOW|tcp|three.example|443|OUT", "DENY|*|10.0.0.0/8|*|*"));
	TAP_IS_INT(f.r, 0, "item 30 policy builds");
	pin = sb_net_policy_pin(f.policy, "three.example");
	tap_ok(pin && pin->n_addrs == 3, "item 30: the host is pinned to its 3 addresses");
	tap_ok(pin && !sb_net_policy_decide_all(f.policy, TCP, pin->addrs, pin->n_addrs, 443, OUT,
						&rule, &index),
	       "item 30: a host with one address in a DENY network is refused");
	tap_ok(rule && streq(rule->text, "DENY|*|10.0.0.0/8|*|*") && index == 2,
	       "item 30: the refusal names the DENY rule and the denied address");
	tap_ok(!decide(&f, TCP, "10.0.0.7", 443, OUT, NULL),
	       "item 30: the denied address alone is refused");
	tap_ok(decide(&f, TCP, "192.0.2.1", 443, OUT, NULL),
	       "item 30: another of its addresses alone is allowed by the host rule");
	tap_ok(pin && !sb_net_policy_can_allow(f.policy, TCP | UDP, IN | OUT, pin->addrs,
					       pin->n_addrs, -1),
	       "item 30: resolving the host can never lead to an allowed use");
	done(&f);

	build(&f, NULL, RULES("ALLOW|tcp|three.example|443|OUT"));
	pin = sb_net_policy_pin(f.policy, "THREE.example.");
	tap_ok(pin && sb_net_policy_decide_all(f.policy, TCP, pin->addrs, pin->n_addrs, 443, OUT,
					       &rule, NULL),
	       "without the DENY every address is allowed (pin lookup ignores case and the "
	       "final dot)");
	tap_ok(pin && sb_net_policy_can_allow(f.policy, TCP | UDP, IN | OUT, pin->addrs,
					      pin->n_addrs, -1),
	       "the host can be allowed");
	done(&f);

	/* item 30, second half: a UDP rule does not allow TCP. */
	build(&f, NULL, RULES("ALLOW|udp|192.0.2.7/32|53|OUT"));
	tap_ok(!decide(&f, TCP, "192.0.2.7", 53, OUT, NULL),
	       "item 30: ALLOW|udp|ip/32|p|OUT does not allow TCP to ip:p");
	tap_ok(decide(&f, UDP, "192.0.2.7", 53, OUT, NULL), "item 30: it allows UDP to ip:p");
	tap_ok(!decide(&f, UDP, "192.0.2.8", 53, OUT, NULL), "a /32 is one address");
	done(&f);
}

static void test_item_32(void)
{
	struct fixture f = {0};

	build(&f, NULL, RULES("ALLOW|TCP|localhost|9999|IN"));
	TAP_IS_INT(f.r, 0, "item 32 policy builds");
	tap_ok(!decide(&f, TCP, "127.0.0.1", 9998, IN, NULL),
	       "item 32: bind 127.0.0.1:9998 refused");
	tap_ok(decide(&f, TCP, "127.0.0.1", 9999, IN, NULL),
	       "item 32: bind 127.0.0.1:9999 allowed");
	tap_ok(!decide(&f, TCP, "127.0.0.1", 9999, OUT, NULL), "an IN rule does not allow connect");
	tap_ok(!decide(&f, UDP, "127.0.0.1", 9999, IN, NULL), "a TCP rule does not allow UDP");
	tap_ok(!decide(&f, TCP, "0.0.0.0", 9999, IN, NULL),
	       "the wildcard address is not localhost");
	tap_ok(decide(&f, TCP, "::ffff:127.0.0.1", 9999, IN, NULL),
	       "a mapped loopback address is localhost");
	tap_ok(!f.policy->allows_networks, "a host rule does not let unpinned names resolve");
	done(&f);
}

static void test_networks(void)
{
	struct fixture f = {0};
	const char *why;

	build(&f, NULL,
	      RULES("ALLOW|tcp|*|80|OUT", "ALLOW|tcp|2001:db8::/32|*|OUT",
		    "ALLOW|udp|10.0.0.0/9|53|*", "ALLOW|tcp|192.0.2.0/24||OUT",
		    "DENY|tcp|::ffff:203.0.113.0/120|*|OUT", "ALLOW|tcp|203.0.113.0/24|*|OUT",
		    "DENY|tcp|2001:db8:bad::/48|8000-|OUT"));
	TAP_IS_INT(f.r, 0, "network policy builds");
	tap_ok(decide(&f, TCP, "198.51.100.1", 80, OUT, NULL), "'*' covers IPv4");
	tap_ok(decide(&f, TCP, "2001:db9::1", 80, OUT, NULL), "'*' covers IPv6");
	tap_ok(decide(&f, TCP, "2001:db8:ffff::1", 22, OUT, NULL), "IPv6 /32 allows inside");
	tap_ok(!decide(&f, TCP, "2001:db9::1", 22, OUT, NULL), "IPv6 /32 refuses outside");
	tap_ok(decide(&f, UDP, "10.127.255.255", 53, IN, NULL), "10.0.0.0/9 covers 10.127.x.x");
	tap_ok(!decide(&f, UDP, "10.128.0.0", 53, IN, NULL), "10.0.0.0/9 stops at 10.128.0.0");
	tap_ok(!decide(&f, TCP, "192.0.2.1", 80, OUT, &why) || streq(why, "ALLOW|tcp|*|80|OUT"),
	       "an empty port field allows no port (80 comes from the '*' rule)");
	tap_ok(!decide(&f, TCP, "192.0.2.1", 81, OUT, NULL),
	       "an empty port field: port 81 refused");
	tap_ok(!decide(&f, TCP, "203.0.113.9", 443, OUT, &why) &&
		   streq(why, "DENY|tcp|::ffff:203.0.113.0/120|*|OUT"),
	       "a DENY written as a mapped network applies to IPv4");
	tap_ok(!decide(&f, TCP, "2001:db8:bad::1", 8080, OUT, NULL),
	       "an open port range in a DENY refuses above it");
	tap_ok(decide(&f, TCP, "2001:db8:bad::1", 7999, OUT, NULL),
	       "an open port range in a DENY allows below it");
	done(&f);
}

static void test_can_allow(void)
{
	struct fixture f = {0};
	struct sb_net_addr lo, other, pair[2];

	sb_net_addr_parse("127.0.0.1", &lo);
	sb_net_addr_parse("192.0.2.1", &other);
	pair[0] = lo;
	pair[1] = other;

	build(&f, NULL, RULES("ALLOW|tcp|127.0.0.1|9999|IN"));
	tap_ok(sb_net_policy_can_allow(f.policy, TCP | UDP, IN | OUT, &lo, 1, -1),
	       "can_allow: some port of some use");
	tap_ok(sb_net_policy_can_allow(f.policy, TCP, IN, &lo, 1, 9999), "can_allow: the port");
	tap_ok(!sb_net_policy_can_allow(f.policy, TCP, IN, &lo, 1, 80), "can_allow: another port");
	tap_ok(!sb_net_policy_can_allow(f.policy, UDP, IN | OUT, &lo, 1, -1),
	       "can_allow: another kind");
	tap_ok(!sb_net_policy_can_allow(f.policy, TCP, OUT, &lo, 1, -1),
	       "can_allow: another direction");
	tap_ok(!sb_net_policy_can_allow(f.policy, TCP | UDP, IN | OUT, pair, 2, -1),
	       "can_allow: every address must be allowed");
	tap_ok(!sb_net_policy_can_allow(f.policy, TCP | UDP, IN | OUT, &lo, 0, -1),
	       "can_allow: no address is nothing allowed");
	done(&f);

	build(&f, NULL, RULES("ALLOW|tcp|*|*|OUT", "DENY|tcp|127.0.0.0/8|0-9998|OUT"));
	tap_ok(sb_net_policy_can_allow(f.policy, TCP, OUT, &lo, 1, -1),
	       "can_allow: a port above the DENY range is found");
	tap_ok(!sb_net_policy_can_allow(f.policy, TCP, OUT, &lo, 1, 80),
	       "can_allow: a port inside the DENY range is not");
	tap_ok(sb_net_policy_can_allow(f.policy, TCP, OUT, pair, 2, -1),
	       "can_allow: both addresses share an open port");
	done(&f);

	build(&f, NULL, RULES("ALLOW|*|*|*|*", "DENY|*|127.0.0.0/8|*|*"));
	tap_ok(!sb_net_policy_can_allow(f.policy, TCP | UDP, IN | OUT, &lo, 1, -1),
	       "can_allow: every port denied");
	tap_ok(sb_net_policy_can_allow(f.policy, TCP | UDP, IN | OUT, &other, 1, -1),
	       "can_allow: another address");
	done(&f);

	build(&f, NULL, RULES("ALLOW|tcp|127.0.0.1|80|OUT", "ALLOW|tcp|192.0.2.1|443|OUT"));
	tap_ok(!sb_net_policy_can_allow(f.policy, TCP, OUT, pair, 2, -1),
	       "can_allow: addresses allowed on different ports only are no common use");
	done(&f);
}

static void test_resolution(void)
{
	struct fixture f = {0};
	const struct sb_net_pin *pin;
	char text[64];

	/* The hosts file wins over the resolver. */
	build(&f, NULL, RULES("ALLOW|tcp|pair.example|80|OUT"));
	pin = sb_net_policy_pin(f.policy, "pair.example");
	tap_ok(pin && pin->n_addrs == 2 && f.dns.calls == 0,
	       "a hosts file entry comes first (2 lines, the resolver is not asked)");
	done(&f);

	/* Fallbacks when the hosts file lacks the loopback names. */
	build(&f, "",
	      RULES("ALLOW|tcp|localhost|80|OUT", "ALLOW|tcp|ip6-localhost|80|OUT",
		    "ALLOW|tcp|IP6-LOOPBACK|80|OUT"));
	pin = sb_net_policy_pin(f.policy, "localhost");
	if (pin && pin->n_addrs == 1)
		sb_net_addr_format(&pin->addrs[0], true, text, sizeof(text));
	tap_ok(pin && pin->n_addrs == 1 && streq(text, "127.0.0.1"),
	       "fallback: localhost is 127.0.0.1");
	pin = sb_net_policy_pin(f.policy, "ip6-loopback");
	if (pin && pin->n_addrs == 1)
		sb_net_addr_format(&pin->addrs[0], true, text, sizeof(text));
	tap_ok(pin && pin->n_addrs == 1 && streq(text, "[::1]"),
	       "fallback: ip6-loopback is ::1 (brackets when asked)");
	tap_ok(decide(&f, TCP, "::1", 80, OUT, NULL), "ip6-localhost allows ::1");
	TAP_IS_INT(f.dns.calls, 0, "fallback names never reach the resolver");
	done(&f);

	/* Every address, deduplicated. */
	build(&f, NULL, RULES("ALLOW|tcp|dual.example|80|OUT"));
	pin = sb_net_policy_pin(f.policy, "dual.example");
	tap_ok(pin && pin->n_addrs == 2, "every address of both families, duplicates removed");
	tap_ok(decide(&f, TCP, "2001:db8::9", 80, OUT, NULL), "the IPv6 address of a host rule");
	done(&f);

	/* Transient errors: retried after 0.2 s then 0.4 s. */
	f.dns.again_left = 2;
	build(&f, NULL, RULES("ALLOW|tcp|flaky.example|80|OUT"));
	tap_ok(f.r == 0 && f.dns.calls == 3 && f.dns.n_sleeps == 2 && f.dns.slept_ms[0] == 200 &&
		   f.dns.slept_ms[1] == 400,
	       "EAI_AGAIN twice: retried after 200 then 400 ms, then resolved");
	tap_ok(decide(&f, TCP, "198.51.100.4", 80, OUT, NULL), "the retried name is pinned");
	done(&f);

	f.dns.again_left = 5;
	build(&f, NULL, RULES("ALLOW|tcp|flaky.example|80|OUT", "ALLOW|tcp|127.0.0.1|80|OUT"));
	tap_ok(f.r == 0 && f.dns.calls == 3 && f.warnings && sb_strv_length(f.warnings) == 1 &&
		   strstr(f.warnings[0], "profile.sb:1: ") == f.warnings[0] &&
		   strstr(f.warnings[0], "temporary failure") && strstr(f.warnings[0], "dropped"),
	       "three transient failures: the ALLOW is dropped with a file:line warning");
	TAP_IS_INT(f.policy ? f.policy->n_rules : 0, 1, "the dropped rule is gone");
	done(&f);

	/* An ALLOW that resolves to nothing is dropped; a DENY is fatal. */
	build(&f, NULL, RULES("ALLOW|tcp|nowhere.invalid|80|OUT"));
	tap_ok(f.r == 0 && f.warnings && strstr(f.warnings[0], "nowhere.invalid") &&
		   strstr(f.warnings[0], "no such host"),
	       "an ALLOW naming no host: warning, policy still built");
	pin = sb_net_policy_pin(f.policy, "nowhere.invalid");
	tap_ok(pin && pin->n_addrs == 0, "its name stays pinned to nothing");
	done(&f);

	build(&f, NULL, RULES("ALLOW|tcp|*|80|OUT", "DENY|tcp|nowhere.invalid|80|OUT"));
	tap_ok(f.r == -EHOSTUNREACH && f.error && strstr(f.error, "profile.sb:2: ") == f.error &&
		   strstr(f.error, "DENY") && !f.policy,
	       "a DENY naming no host is fatal, the error names file:line");
	done(&f);

	/* Two rules, one name: resolved once. */
	build(&f, NULL, RULES("ALLOW|tcp|dual.example|80|OUT", "DENY|udp|Dual.Example|53|OUT"));
	TAP_IS_INT(f.dns.calls, 1, "a name shared by rules is resolved once");
	TAP_IS_INT(f.policy ? f.policy->n_pins : 0, 1, "and pinned once");
	done(&f);

	/* A rule from the command line has no file. */
	{
		struct sb_net_rule rule = {0};
		struct sb_net_policy *p = NULL;
		char *err = NULL;
		const struct sb_net_policy_rule *why = NULL;
		struct sb_net_addr a;

		sb_net_rule_parse("DENY|*|127.0.0.1|*|*", &rule, &err);
		rule.origin = (struct sb_origin){.file = SB_ORIGIN_CLI, .line = 0};
		sb_net_addr_parse("127.0.0.1", &a);
		tap_ok(sb_net_policy_build(&rule, 1, NULL, &p, NULL, &err) == 0 && p &&
			   !sb_net_policy_decide_all(p, TCP, &a, 1, 1, OUT, &why, NULL) && why &&
			   streq(why->file, SB_ORIGIN_CLI) && why->line == 0,
		       "a command-line rule keeps its origin");
		sb_net_policy_free(p);
		sb_net_rule_done(&rule);
		free(err);
	}
}

static void test_addresses(void)
{
	struct sb_net_addr a, u;
	char text[64];

	tap_ok(sb_net_addr_parse("::ffff:1.2.3.4", &a) == 0 && a.family == AF_INET6,
	       "a mapped address parses as IPv6");
	sb_net_addr_unmap(&a, &u);
	sb_net_addr_format(&u, true, text, sizeof(text));
	tap_ok(u.family == AF_INET && streq(text, "1.2.3.4"), "and unmaps to IPv4");
	tap_ok(sb_net_addr_parse("localhost", &a) == -EINVAL, "a name is not an address");
	tap_ok(sb_net_addr_parse("10.0.0.1/8", &a) == -EINVAL, "a network is not an address");
	sb_net_addr_parse("2001:db8::1", &a);
	sb_net_addr_format(&a, false, text, sizeof(text));
	tap_ok(streq(text, "2001:db8::1"), "IPv6 without brackets when not asked");
	tap_ok(!sb_net_policy_decide_all(NULL, TCP, &a, 1, 80, OUT, NULL, NULL),
	       "no policy allows nothing");
}

int main(void)
{
	int fd = mkstemp(hosts_path);
	static const char hosts[] = "# a private hosts file\n"
				    "127.0.0.1\tlocalhost mybox\n"
				    "192.0.2.1 pair.example # first line\n"
				    "192.0.2.2 Pair.Example.\n"
				    "not-an-address pair.example\n"
				    "::1 ip6-localhost\n";

	if (fd < 0 || write(fd, hosts, sizeof(hosts) - 1) != (ssize_t)(sizeof(hosts) - 1))
		return tap_skip_all("cannot write a temporary hosts file");
	close(fd);

	test_no_rules();
	test_item_29();
	test_item_30();
	test_item_32();
	test_networks();
	test_can_allow();
	test_resolution();
	test_addresses();
	unlink(hosts_path);
	return tap_done();
}
