/* SPDX-License-Identifier: MIT */
#include "net-policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "util.h"

#define SB_PORT_MAX	 65535u
#define SB_HOSTS_MAX	 (4u << 20)
#define SB_RESOLVE_TRIES 3

/* One network of one rule, flattened so that a decision is a linear scan with
 * no pointer chasing into the rule except for its port ranges. */
struct sb_net_entry {
	uint8_t protocols;
	uint8_t directions;
	uint8_t family; /* 4 or 6 */
	uint8_t prefix_len;
	uint8_t address[16];
	const struct sb_net_policy_rule *rule;
};

void sb_net_addr_unmap(const struct sb_net_addr *a, struct sb_net_addr *ret)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (a->family == AF_INET6 && memcmp(a->bytes, mapped, sizeof(mapped)) == 0) {
		*ret = (struct sb_net_addr){.family = AF_INET};
		memcpy(ret->bytes, a->bytes + 12, 4);
		return;
	}
	*ret = *a;
}

int sb_net_addr_parse(const char *text, struct sb_net_addr *ret)
{
	*ret = (struct sb_net_addr){0};
	if (inet_pton(AF_INET, text, ret->bytes) == 1) {
		ret->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, text, ret->bytes) == 1) {
		ret->family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

void sb_net_addr_format(const struct sb_net_addr *a, bool bracket, char *buf, size_t size)
{
	char text[INET6_ADDRSTRLEN];

	if (!inet_ntop(a->family, a->bytes, text, sizeof(text)))
		snprintf(text, sizeof(text), "?");
	if (bracket && a->family == AF_INET6)
		snprintf(buf, size, "[%s]", text);
	else
		snprintf(buf, size, "%s", text);
}

static bool prefix_matches(const uint8_t *network, const uint8_t *address, unsigned prefix_len)
{
	unsigned full = prefix_len / 8, rest = prefix_len % 8;

	if (memcmp(network, address, full) != 0)
		return false;
	if (!rest)
		return true;
	return ((network[full] ^ address[full]) & (uint8_t)(0xffu << (8 - rest))) == 0;
}

static bool ports_contain(const struct sb_net_policy_rule *r, unsigned port)
{
	/* Ranges are few, sorted and merged by the parser. */
	for (size_t i = 0; i < r->n_ports; i++) {
		if (port < r->ports[i].first)
			return false;
		if (port <= r->ports[i].last)
			return true;
	}
	return false;
}

static bool entry_matches_address(const struct sb_net_entry *e, const struct sb_net_addr *a)
{
	return e->family == (a->family == AF_INET ? 4 : 6) &&
	       prefix_matches(e->address, a->bytes, e->prefix_len);
}

static bool entry_matches(const struct sb_net_entry *e, unsigned kind, const struct sb_net_addr *a,
			  unsigned port, unsigned direction)
{
	return (e->protocols & kind) && (e->directions & direction) &&
	       entry_matches_address(e, a) && ports_contain(e->rule, port);
}

/* The first entry of [from, to) matching; NULL when none does. */
static const struct sb_net_entry *first_match(const struct sb_net_policy *p, size_t from, size_t to,
					      unsigned kind, const struct sb_net_addr *a,
					      unsigned port, unsigned direction)
{
	for (size_t i = from; i < to; i++)
		if (entry_matches(&p->entries[i], kind, a, port, direction))
			return &p->entries[i];
	return NULL;
}

bool sb_net_policy_decide_all(const struct sb_net_policy *p, unsigned kind,
			      const struct sb_net_addr *addrs, size_t n_addrs, uint16_t port,
			      unsigned direction, const struct sb_net_policy_rule **ret_rule,
			      size_t *ret_index)
{
	const struct sb_net_entry *e = NULL;
	struct sb_net_addr a;

	if (ret_rule)
		*ret_rule = NULL;
	if (ret_index)
		*ret_index = 0;
	/* Nothing to check is nothing allowed: a caller with no address must
	 * not be waved through. */
	if (!p || n_addrs == 0)
		return false;
	/* Pass 1: a DENY matching any address refuses the whole access. */
	for (size_t i = 0; i < n_addrs; i++) {
		sb_net_addr_unmap(&addrs[i], &a);
		e = first_match(p, 0, p->n_deny_entries, kind, &a, port, direction);
		if (e) {
			if (ret_rule)
				*ret_rule = e->rule;
			if (ret_index)
				*ret_index = i;
			return false;
		}
	}
	/* Pass 2: every address needs an ALLOW. */
	for (size_t i = 0; i < n_addrs; i++) {
		sb_net_addr_unmap(&addrs[i], &a);
		e = first_match(p, p->n_deny_entries, p->n_entries, kind, &a, port, direction);
		if (!e) {
			if (ret_index)
				*ret_index = i;
			return false;
		}
	}
	/* With several addresses the ALLOW of the last one is reported: any of
	 * them is a rule that allowed. */
	if (ret_rule)
		*ret_rule = e->rule;
	return true;
}

/* The first port of [port, last] that no DENY entry matching (kind,
 * direction) covers for any of the addresses; -1 when there is none. Each step
 * moves past one DENY range, so it ends. */
static long next_open_port(const struct sb_net_policy *p, unsigned kind, unsigned direction,
			   const struct sb_net_addr *addrs, size_t n_addrs, unsigned port,
			   unsigned last)
{
	bool moved = true;

	while (moved && port <= last) {
		moved = false;
		for (size_t i = 0; i < p->n_deny_entries && !moved; i++) {
			const struct sb_net_entry *d = &p->entries[i];

			if (!(d->protocols & kind) || !(d->directions & direction))
				continue;
			for (size_t k = 0; k < n_addrs && !moved; k++) {
				if (!entry_matches_address(d, &addrs[k]))
					continue;
				for (size_t j = 0; j < d->rule->n_ports; j++)
					if (port >= d->rule->ports[j].first &&
					    port <= d->rule->ports[j].last) {
						port = d->rule->ports[j].last + 1u;
						moved = true;
						break;
					}
			}
		}
	}
	return port <= last ? (long)port : -1;
}

/* Whether every address has an ALLOW entry for (kind, direction) containing
 * port. */
static bool all_have_allow(const struct sb_net_policy *p, unsigned kind, unsigned direction,
			   const struct sb_net_addr *addrs, size_t n_addrs, unsigned port)
{
	for (size_t k = 0; k < n_addrs; k++)
		if (!first_match(p, p->n_deny_entries, p->n_entries, kind, &addrs[k], port,
				 direction))
			return false;
	return true;
}

bool sb_net_policy_can_allow(const struct sb_net_policy *p, unsigned kinds, unsigned directions,
			     const struct sb_net_addr *addrs, size_t n_addrs, int port)
{
	struct sb_net_addr unmapped[16];
	static const unsigned all_kinds[] = {SB_NET_TCP, SB_NET_UDP};
	static const unsigned all_directions[] = {SB_NET_OUT, SB_NET_IN};

	if (!p || n_addrs == 0 || port > (int)SB_PORT_MAX)
		return false;
	/* Bounded so that the question needs no allocation; a longer answer is
	 * judged on its first addresses here, and every address is still
	 * decided at connect time. */
	if (n_addrs > ELEMENTSOF(unmapped))
		n_addrs = ELEMENTSOF(unmapped);
	for (size_t i = 0; i < n_addrs; i++)
		sb_net_addr_unmap(&addrs[i], &unmapped[i]);

	for (size_t ki = 0; ki < ELEMENTSOF(all_kinds); ki++) {
		unsigned kind = all_kinds[ki];

		if (!(kinds & kind))
			continue;
		for (size_t di = 0; di < ELEMENTSOF(all_directions); di++) {
			unsigned direction = all_directions[di];

			if (!(directions & direction))
				continue;
			if (port >= 0) {
				if (sb_net_policy_decide_all(p, kind, unmapped, n_addrs,
							     (uint16_t)port, direction, NULL, NULL))
					return true;
				continue;
			}
			/* Some port: a candidate is a port of an ALLOW entry for the
			 * first address that no DENY covers for any address; it must
			 * then be allowed for every address (by any ALLOW entry). */
			for (size_t i = p->n_deny_entries; i < p->n_entries; i++) {
				const struct sb_net_entry *e = &p->entries[i];

				if (!(e->protocols & kind) || !(e->directions & direction) ||
				    !entry_matches_address(e, &unmapped[0]))
					continue;
				for (size_t j = 0; j < e->rule->n_ports; j++) {
					unsigned last = e->rule->ports[j].last;
					long open = e->rule->ports[j].first;

					while ((open = next_open_port(p, kind, direction, unmapped,
								      n_addrs, (unsigned)open,
								      last)) >= 0) {
						if (all_have_allow(p, kind, direction, unmapped,
								   n_addrs, (unsigned)open))
							return true;
						open++;
					}
				}
			}
		}
	}
	return false;
}

static void normalize_name(const char *name, char *buf, size_t size)
{
	size_t n = 0;

	for (; *name && n + 1 < size; name++)
		buf[n++] = (char)tolower((unsigned char)*name);
	while (n > 0 && buf[n - 1] == '.')
		n--;
	buf[n] = '\0';
}

const struct sb_net_pin *sb_net_policy_pin(const struct sb_net_policy *p, const char *name)
{
	char key[256];

	if (!p || !name || strlen(name) >= sizeof(key))
		return NULL;
	normalize_name(name, key, sizeof(key));
	for (size_t i = 0; i < p->n_pins; i++)
		if (streq(p->pins[i].name, key))
			return &p->pins[i];
	return NULL;
}

/* Adds a unless the list already has it (resolvers repeat an address per
 * socket type, hosts files per line). */
static int addrs_add(struct sb_net_addr **addrs, size_t *n, const struct sb_net_addr *a)
{
	struct sb_net_addr *grown;

	for (size_t i = 0; i < *n; i++)
		if ((*addrs)[i].family == a->family &&
		    memcmp((*addrs)[i].bytes, a->bytes, sizeof(a->bytes)) == 0)
			return 0;
	grown = reallocarray(*addrs, *n + 1, sizeof(**addrs));
	if (!grown)
		return -ENOMEM;
	*addrs = grown;
	grown[(*n)++] = *a;
	return 0;
}

/* Every address the hosts file gives name (all lines, as glibc's "multi on"). */
static int hosts_lookup(const char *hosts_file, const char *name, struct sb_net_addr **ret,
			size_t *ret_n)
{
	_cleanup_free_ char *data = NULL;
	char *save_line = NULL, *line;
	size_t size;
	int r;

	r = sb_read_file(hosts_file, SB_HOSTS_MAX, &data, &size);
	if (r < 0)
		return r == -ENOMEM ? r : 0; /* no hosts file: nothing pinned from it */
	for (line = strtok_r(data, "\n", &save_line); line;
	     line = strtok_r(NULL, "\n", &save_line)) {
		char *save = NULL, *tok, *hash = strchr(line, '#');
		struct sb_net_addr a;

		if (hash)
			*hash = '\0';
		tok = strtok_r(line, " \t\r", &save);
		if (!tok || sb_net_addr_parse(tok, &a) < 0)
			continue;
		while ((tok = strtok_r(NULL, " \t\r", &save))) {
			char key[256];

			normalize_name(tok, key, sizeof(key));
			if (streq(key, name)) {
				r = addrs_add(ret, ret_n, &a);
				if (r < 0)
					return r;
				break;
			}
		}
	}
	return 0;
}

static int fallback_lookup(const char *name, struct sb_net_addr **ret, size_t *ret_n)
{
	struct sb_net_addr a;

	if (streq(name, "localhost"))
		sb_net_addr_parse("127.0.0.1", &a);
	else if (streq(name, "ip6-localhost") || streq(name, "ip6-loopback"))
		sb_net_addr_parse("::1", &a);
	else
		return 0;
	return addrs_add(ret, ret_n, &a);
}

bool sb_net_addr_from_sockaddr(const struct sockaddr *sa, struct sb_net_addr *ret)
{
	*ret = (struct sb_net_addr){.family = sa->sa_family};
	if (sa->sa_family == AF_INET)
		memcpy(ret->bytes, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(ret->bytes, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
	else
		return false;
	return true;
}

static int system_resolve(const char *name, struct sb_net_addr **ret, size_t *ret_n,
			  void *userdata _unused_)
{
	/* No AI_ADDRCONFIG: a rule pins every address of the name, not the
	 * ones this host happens to have a route for today. One socket type,
	 * or each address comes back three times. */
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	int e, r = 0;

	e = getaddrinfo(name, NULL, &hints, &res);
	switch (e) {
	case 0:
		break;
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_NONAME:
	case EAI_NODATA:
	case EAI_FAIL:
	case EAI_ADDRFAMILY:
		return -ENOENT;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_SYSTEM:
		return errno > 0 ? -errno : -EIO;
	default:
		return -EIO;
	}
	for (struct addrinfo *ai = res; ai && r >= 0; ai = ai->ai_next) {
		struct sb_net_addr a;

		if (sb_net_addr_from_sockaddr(ai->ai_addr, &a))
			r = addrs_add(ret, ret_n, &a);
	}
	freeaddrinfo(res);
	return r;
}

static void system_sleep_ms(unsigned ms, void *userdata _unused_)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* 0 with at least one address, or -errno (-ENOENT: no address at all). */
static int resolve_name(const struct sb_net_resolver *res, const char *name,
			struct sb_net_addr **ret, size_t *ret_n)
{
	static const unsigned delays_ms[SB_RESOLVE_TRIES - 1] = {200, 400};
	const char *hosts = res && res->hosts_file ? res->hosts_file : "/etc/hosts";
	int r;

	if (*hosts) {
		r = hosts_lookup(hosts, name, ret, ret_n);
		if (r < 0 || *ret_n)
			return r;
	}
	r = fallback_lookup(name, ret, ret_n);
	if (r < 0 || *ret_n)
		return r;
	for (unsigned attempt = 0;; attempt++) {
		struct sb_net_addr *found = NULL;
		size_t n_found = 0;

		r = res && res->resolve ? res->resolve(name, &found, &n_found, res->userdata)
					: system_resolve(name, &found, &n_found, NULL);
		if (r >= 0) {
			for (size_t i = 0; i < n_found && r >= 0; i++)
				r = addrs_add(ret, ret_n, &found[i]);
			free(found);
			if (r < 0)
				return r;
			return *ret_n ? 0 : -ENOENT;
		}
		free(found);
		if (r != -EAGAIN || attempt + 1 >= SB_RESOLVE_TRIES)
			return r;
		if (res && res->sleep_ms)
			res->sleep_ms(delays_ms[attempt], res->userdata);
		else
			system_sleep_ms(delays_ms[attempt], NULL);
	}
}

static const char *resolve_error_text(int r)
{
	switch (r) {
	case -ENOENT:
		return "no such host";
	case -EAGAIN:
		return "temporary failure in name resolution, after 3 attempts";
	default:
		return strerror(-r);
	}
}

static void pin_done(struct sb_net_pin *pin)
{
	free(pin->name);
	free(pin->addrs);
}

static void policy_rule_done(struct sb_net_policy_rule *r)
{
	free(r->ports);
	free(r->text);
	free(r->file);
}

struct sb_net_policy *sb_net_policy_free(struct sb_net_policy *p)
{
	if (!p)
		return NULL;
	for (size_t i = 0; i < p->n_rules; i++)
		policy_rule_done(&p->rules[i]);
	free(p->rules);
	free(p->entries);
	for (size_t i = 0; i < p->n_pins; i++)
		pin_done(&p->pins[i]);
	free(p->pins);
	free(p);
	return NULL;
}

/* Pins every distinct host name of the rules; errors[i] is the resolution
 * result of rule i's name (0, or -errno when it resolves to nothing: the
 * caller drops an ALLOW naming it and refuses a DENY). */
static int pin_hosts(struct sb_net_policy *p, const struct sb_net_rule *rules, size_t n_rules,
		     const struct sb_net_resolver *res, int *errors)
{
	p->pins = calloc(n_rules ? n_rules : 1, sizeof(*p->pins));
	if (!p->pins)
		return -ENOMEM;
	for (size_t i = 0; i < n_rules; i++) {
		const struct sb_net_pin *known;
		struct sb_net_pin *pin;
		char key[256];
		int r;

		if (rules[i].network_kind != SB_NET_NETWORK_HOST)
			continue;
		normalize_name(rules[i].network, key, sizeof(key));
		known = sb_net_policy_pin(p, key);
		if (known) {
			/* Resolved once per name: every rule naming it sees the
			 * same addresses. */
			errors[i] = known->n_addrs ? 0 : -ENOENT;
			continue;
		}
		pin = &p->pins[p->n_pins];
		pin->name = strdup(key);
		if (!pin->name)
			return -ENOMEM;
		p->n_pins++;
		r = resolve_name(res, key, &pin->addrs, &pin->n_addrs);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			free(pin->addrs);
			pin->addrs = NULL;
			pin->n_addrs = 0;
		}
		errors[i] = r;
	}
	return 0;
}

static int copy_rule(struct sb_net_policy_rule *d, const struct sb_net_rule *s)
{
	*d = (struct sb_net_policy_rule){
	    .action = s->action,
	    .protocols = s->protocols,
	    .directions = s->directions,
	    .n_ports = s->n_ports,
	    .line = s->origin.line,
	};
	d->text = strdup(s->text ? s->text : "");
	d->file = strdup(s->origin.file ? s->origin.file : SB_ORIGIN_CLI);
	if (s->n_ports) {
		d->ports = calloc(s->n_ports, sizeof(*d->ports));
		if (d->ports)
			memcpy(d->ports, s->ports, s->n_ports * sizeof(*d->ports));
	}
	if (!d->text || !d->file || (s->n_ports && !d->ports))
		return -ENOMEM;
	return 0;
}

static void set_entry(struct sb_net_entry *e, const struct sb_net_policy_rule *rule, int family,
		      const uint8_t *address, unsigned prefix_len)
{
	*e = (struct sb_net_entry){
	    .protocols = (uint8_t)rule->protocols,
	    .directions = (uint8_t)rule->directions,
	    .family = family == AF_INET ? 4 : 6,
	    .prefix_len = (uint8_t)prefix_len,
	    .rule = rule,
	};
	memcpy(e->address, address, family == AF_INET ? 4 : 16);
}

/* Entries of one rule, appended at *n. */
static void add_entries(struct sb_net_policy *p, const struct sb_net_rule *s,
			const struct sb_net_policy_rule *rule, size_t *n)
{
	static const uint8_t zero[16];

	switch (s->network_kind) {
	case SB_NET_NETWORK_ANY:
		set_entry(&p->entries[(*n)++], rule, AF_INET, zero, 0);
		set_entry(&p->entries[(*n)++], rule, AF_INET6, zero, 0);
		break;
	case SB_NET_NETWORK_CIDR: {
		/* A rule written as a mapped address (::ffff:10.0.0.0/104)
		 * speaks of IPv4, where decisions look for it. */
		struct sb_net_addr a = {.family = s->family}, u;

		memcpy(a.bytes, s->address, sizeof(a.bytes));
		sb_net_addr_unmap(&a, &u);
		if (u.family == AF_INET && s->family == AF_INET6)
			set_entry(&p->entries[(*n)++], rule, AF_INET, u.bytes,
				  s->prefix_len >= 96 ? s->prefix_len - 96 : 0);
		else
			set_entry(&p->entries[(*n)++], rule, s->family, s->address, s->prefix_len);
		break;
	}
	case SB_NET_NETWORK_HOST: {
		const struct sb_net_pin *pin = sb_net_policy_pin(p, s->network);

		for (size_t i = 0; pin && i < pin->n_addrs; i++) {
			struct sb_net_addr u;

			sb_net_addr_unmap(&pin->addrs[i], &u);
			set_entry(&p->entries[(*n)++], rule, u.family, u.bytes,
				  u.family == AF_INET ? 32 : 128);
		}
		break;
	}
	}
}

int sb_net_policy_build(const struct sb_net_rule *rules, size_t n_rules,
			const struct sb_net_resolver *resolver, struct sb_net_policy **ret,
			char ***ret_warnings, char **reterr)
{
	_cleanup_(sb_net_policy_freep) struct sb_net_policy *p = calloc(1, sizeof(*p));
	_cleanup_free_ int *errors = NULL;
	_cleanup_free_ size_t *rule_of = NULL;
	size_t n_entries = 0;
	int r;

	if (!p)
		return -ENOMEM;
	errors = calloc(n_rules + 1, sizeof(*errors));
	rule_of = calloc(n_rules + 1, sizeof(*rule_of));
	if (!errors || !rule_of)
		return -ENOMEM;
	r = pin_hosts(p, rules, n_rules, resolver, errors);
	if (r < 0)
		return r;

	for (size_t i = 0; i < n_rules; i++) {
		const struct sb_net_rule *s = &rules[i];
		const char *file = s->origin.file ? s->origin.file : SB_ORIGIN_CLI;

		if (s->network_kind != SB_NET_NETWORK_HOST || errors[i] >= 0)
			continue;
		if (s->action == SB_NET_DENY)
			return sb_error(reterr, -EHOSTUNREACH,
					"%s:%u: net=%s: host '%s' does not resolve (%s); a DENY "
					"rule must name a host that resolves",
					file, s->origin.line, s->text, s->network,
					resolve_error_text(errors[i]));
		if (ret_warnings) {
			_cleanup_free_ char *w = NULL;

			if (asprintf(&w,
				     "%s:%u: net=%s: host '%s' does not resolve (%s); the rule "
				     "is dropped",
				     file, s->origin.line, s->text, s->network,
				     resolve_error_text(errors[i])) < 0)
				return -ENOMEM;
			r = sb_strv_consume(ret_warnings, TAKE_PTR(w));
			if (r < 0)
				return r;
		}
	}

	p->rules = calloc(n_rules ? n_rules : 1, sizeof(*p->rules));
	if (!p->rules)
		return -ENOMEM;
	for (size_t i = 0; i < n_rules; i++) {
		const struct sb_net_rule *s = &rules[i];
		const struct sb_net_pin *pin;

		if (s->network_kind == SB_NET_NETWORK_HOST) {
			pin = sb_net_policy_pin(p, s->network);
			if (!pin || pin->n_addrs == 0)
				continue; /* a dropped ALLOW (a DENY failed above) */
			n_entries += pin->n_addrs;
		} else {
			n_entries += s->network_kind == SB_NET_NETWORK_ANY ? 2 : 1;
			if (s->action == SB_NET_ALLOW)
				p->allows_networks = true;
		}
		r = copy_rule(&p->rules[p->n_rules], s);
		p->n_rules++;
		if (r < 0)
			return r;
		rule_of[p->n_rules - 1] = i;
	}

	p->entries = calloc(n_entries ? n_entries : 1, sizeof(*p->entries));
	if (!p->entries)
		return -ENOMEM;
	/* DENY entries first, each group in profile order: a decision takes
	 * the first match of the DENY pass, then of the ALLOW pass. */
	for (int pass = 0; pass < 2; pass++) {
		enum sb_net_action action = pass == 0 ? SB_NET_DENY : SB_NET_ALLOW;

		for (size_t i = 0; i < p->n_rules; i++)
			if (p->rules[i].action == action)
				add_entries(p, &rules[rule_of[i]], &p->rules[i], &p->n_entries);
		if (pass == 0)
			p->n_deny_entries = p->n_entries;
	}
	*ret = TAKE_PTR(p);
	return 0;
}
