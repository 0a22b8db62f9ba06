/* SPDX-License-Identifier: MIT */
/* The network namespace's plan: the nftables filter and /etc/hosts built from
 * net= rules and their pinned addresses (a fake resolver: no real lookup), and
 * when slirp4netns's special addresses are reachable. Pure: nothing runs. */
#include <stdlib.h>

#include "netns.h"
#include "tap.h"
#include "util.h"

static const struct {
	const char *name;
	const char *addrs[3];
} dns_table[] = {
    {"api.example", {"192.0.2.10", "2001:db8::10"}},
    {"host-gw.example", {"10.0.2.2"}},
};

static int fake_resolve(const char *name, struct sb_net_addr **ret, size_t *ret_n,
			void *userdata _unused_)
{
	for (size_t i = 0; i < ELEMENTSOF(dns_table); i++) {
		if (!streq(dns_table[i].name, name))
			continue;
		for (size_t k = 0; k < 3 && dns_table[i].addrs[k]; k++) {
			*ret = reallocarray(*ret, *ret_n + 1, sizeof(**ret));
			if (!*ret)
				return -ENOMEM;
			sb_net_addr_parse(dns_table[i].addrs[k], &(*ret)[(*ret_n)++]);
		}
		return 0;
	}
	return -ENOENT;
}

struct fixture {
	struct sb_net_rule rules[8];
	size_t n;
	struct sb_net_policy *pins;
	struct sb_netns_plan plan;
};

static bool setup(struct fixture *f, const char *const *texts, bool with_pins)
{
	const struct sb_net_resolver resolver = {.resolve = fake_resolve, .hosts_file = ""};
	_cleanup_strv_free_ char **warnings = NULL;
	_cleanup_free_ char *err = NULL;

	*f = (struct fixture){0};
	for (; *texts; texts++) {
		_cleanup_free_ char *perr = NULL;

		if (sb_net_rule_parse(*texts, &f->rules[f->n], &perr) < 0) {
			tap_diag("%s: %s", *texts, perr);
			return false;
		}
		f->rules[f->n].origin =
		    (struct sb_origin){.file = "p.sb", .line = (unsigned)f->n + 1};
		f->n++;
	}
	if (with_pins &&
	    sb_net_policy_build(f->rules, f->n, &resolver, &f->pins, &warnings, &err) < 0) {
		tap_diag("policy: %s", err);
		return false;
	}
	return sb_netns_plan_build(f->rules, f->n, with_pins ? f->pins : NULL, &f->plan) == 0;
}

static void teardown(struct fixture *f)
{
	sb_netns_plan_done(&f->plan);
	sb_net_policy_free(f->pins);
	for (size_t i = 0; i < f->n; i++)
		sb_net_rule_done(&f->rules[i]);
}

static bool has(const char *text, const char *needle)
{
	if (text && strstr(text, needle))
		return true;
	tap_diag("missing: %s", needle);
	return false;
}

static void test_no_rule_is_loopback_only(void)
{
	struct fixture f;
	const char *rules[] = {NULL};

	tap_ok(setup(&f, rules, true), "no rule: plan");
	tap_ok(!f.plan.outside && !f.plan.ruleset, "no rule: no slirp4netns, no filter");
	tap_ok(has(f.plan.hosts, "127.0.0.1\tlocalhost\n"), "no rule: /etc/hosts has localhost");
	teardown(&f);
}

static void test_deny_only_is_loopback_only(void)
{
	struct fixture f;
	const char *rules[] = {"DENY|tcp|*|*|OUT", NULL};

	tap_ok(setup(&f, rules, true), "DENY only: plan");
	tap_ok(!f.plan.outside, "DENY only: nothing to reach, no slirp4netns");
	teardown(&f);
}

static void test_filter(void)
{
	struct fixture f;
	const char *rules[] = {"ALLOW|tcp|api.example|443|OUT",	     "DENY|tcp|192.0.2.0/24|25|OUT",
			       "ALLOW|udp|198.51.100.7|53,5353|OUT", "ALLOW|tcp|*|8000-8010|IN",
			       "ALLOW|tcp,udp|2001:db8::/32|*|OUT",  NULL};
	const char *s;

	if (!tap_ok(setup(&f, rules, true), "filter: plan"))
		return;
	s = f.plan.ruleset;
	tap_ok(f.plan.outside && !f.plan.symbolic, "filter: slirp4netns and nft");
	tap_ok(has(s, "hook output priority 0; policy drop;") &&
		   has(s, "hook input priority 0; policy drop;"),
	       "filter: default drop both ways");
	tap_ok(has(s, "ip daddr 192.0.2.0/24 meta l4proto tcp th dport 25 jump refuse\n"),
	       "DENY refuses (a reset, an ICMP error)");
	tap_ok(has(s, "\t\tjump refuse\n\t}\n}\n"), "what no rule allows is refused at the end");
	tap_ok(has(s, "ip daddr 192.0.2.10 meta l4proto tcp th dport 443 accept\n") &&
		   has(s, "ip6 daddr 2001:db8::10 meta l4proto tcp th dport 443 accept\n"),
	       "a host name: its pinned addresses, one statement per family");
	tap_ok(has(s, "ip daddr 198.51.100.7 meta l4proto udp th dport { 53, 5353 } accept\n"),
	       "udp and a port list");
	tap_ok(has(s, "ip6 daddr 2001:db8::/32 meta l4proto { tcp, udp } accept\n"),
	       "every port: no dport match; both protocols");
	tap_ok(strstr(s, "8000-8010") == NULL, "IN rules add nothing to the filter");
	tap_ok(strstr(s, "dport 25 jump refuse") < strstr(s, "dport 443 accept"),
	       "DENY before ALLOW");
	tap_ok(has(s, "ip daddr { 10.0.2.2, 10.0.2.3 } jump refuse\n"),
	       "slirp4netns's special addresses refused unless named");
	tap_ok(strstr(s, "{ 10.0.2.2, 10.0.2.3 } jump refuse") < strstr(s, "dport 443 accept"),
	       "... before the ALLOW rules that do not name them");
	tap_ok(!f.plan.host_loopback && !f.plan.dns, "host loopback and DNS off");
	tap_ok(has(f.plan.hosts, "192.0.2.10\tapi.example\n") &&
		   has(f.plan.hosts, "2001:db8::10\tapi.example\n"),
	       "/etc/hosts lists the pinned addresses");
	tap_ok(f.plan.notes && has(f.plan.notes[0], "IN rules"), "the IN rule is noted");
	teardown(&f);
}

static void test_special_addresses(void)
{
	struct fixture f;
	const char *rules[] = {"ALLOW|tcp|*|*|OUT", "ALLOW|tcp|10.0.2.2|5432|OUT",
			       "ALLOW|udp|10.0.2.3|53|OUT", NULL};
	const char *s;

	if (!tap_ok(setup(&f, rules, true), "special: plan"))
		return;
	s = f.plan.ruleset;
	tap_ok(f.plan.host_loopback && f.plan.dns, "rules naming 10.0.2.2 and 10.0.2.3 open them");
	tap_ok(strstr(s, "ip daddr 10.0.2.2 meta l4proto tcp th dport 5432 accept") <
		       strstr(s, "{ 10.0.2.2, 10.0.2.3 } jump refuse") &&
		   strstr(s, "{ 10.0.2.2, 10.0.2.3 } jump refuse") <
		       strstr(s, "\t\tmeta l4proto tcp accept"),
	       "the naming rules before the drop, the wildcard after it");
	teardown(&f);

	{
		const char *by_name[] = {"ALLOW|tcp|host-gw.example|80|OUT", NULL};

		tap_ok(setup(&f, by_name, true) && f.plan.host_loopback,
		       "a host name pinned to 10.0.2.2 names it too");
		teardown(&f);
	}
	{
		const char *wide[] = {"ALLOW|tcp|10.0.0.0/8|*|OUT", NULL};

		tap_ok(setup(&f, wide, true) && !f.plan.host_loopback && !f.plan.dns,
		       "a network containing 10.0.2.2 does not open the host's loopback");
		teardown(&f);
	}
}

static void test_symbolic(void)
{
	struct fixture f;
	const char *rules[] = {"ALLOW|tcp|api.example|443|OUT", NULL};
	struct sb_buf out = {0};

	if (!tap_ok(setup(&f, rules, false), "symbolic: plan"))
		return;
	tap_ok(f.plan.symbolic && has(f.plan.ruleset, "<api.example>"),
	       "without pins the host name stands in the text");
	tap_ok(sb_netns_explain(&f.plan, &out) == 0 && has(out.data, "nftables inside it"),
	       "explain");
	sb_buf_reset(&out);
	{
		struct sb_netns n;
		char *err = NULL;
		const struct sb_netns_tools tools = {.nft = (char *)"/bin/false",
						     .slirp4netns = (char *)"/bin/false"};

		tap_ok(sb_netns_start(&f.plan, &tools, 1, &n, &err) == -EINVAL,
		       "a symbolic plan is never started");
		free(err);
	}
	teardown(&f);
}

int main(void)
{
	test_no_rule_is_loopback_only();
	test_deny_only_is_loopback_only();
	test_filter();
	test_special_addresses();
	test_symbolic();
	return tap_done();
}
