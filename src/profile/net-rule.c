/* SPDX-License-Identifier: MIT */
#include "net-rule.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/socket.h>

#include "util.h"

#define SB_NET_FIELDS	 5
#define SB_PORT_MAX	 65535u
#define SB_DNS_NAME_MAX	 253
#define SB_DNS_LABEL_MAX 63

/* Splits s in place at every sep; the pieces are trimmed. Returns the number
 * of pieces, at most max (the last piece then keeps the remaining separators,
 * so that the caller can report how many there were). */
static size_t sb_net_split(char *s, char sep, char **pieces, size_t max)
{
	size_t n = 0;

	for (;;) {
		char *next = strchr(s, sep);

		if (next && n + 1 < max)
			*next = '\0';
		else
			next = NULL;
		pieces[n++] = sb_strstrip(s);
		if (!next)
			return n;
		s = next + 1;
	}
}

static size_t sb_net_count_char(const char *s, char c)
{
	size_t n = 0;

	for (; *s; s++)
		if (*s == c)
			n++;
	return n;
}

static int sb_net_parse_action(const char *field, const char *text, struct sb_net_rule *r,
			       char **reterr)
{
	/* Upper case only, as in the reference implementation: an action is a
	 * keyword of the file format, not a value. */
	if (streq(field, "ALLOW"))
		r->action = SB_NET_ALLOW;
	else if (streq(field, "DENY"))
		r->action = SB_NET_DENY;
	else
		return sb_error(reterr, -EINVAL,
				"invalid action '%s' in net rule '%s', expected ALLOW or DENY "
				"(upper case)",
				field, text);
	return 0;
}

bool sb_net_is_host_name(const char *name)
{
	size_t len = strlen(name), label = 0;
	bool last_label_numeric = true;

	/* One trailing dot is the absolute (FQDN) spelling of the same name. */
	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len == 0 || len > SB_DNS_NAME_MAX)
		return false;
	for (size_t i = 0; i <= len; i++) {
		char c = i < len ? name[i] : '.';

		if (c == '.') {
			if (label == 0 || label > SB_DNS_LABEL_MAX || name[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (label == 0) {
			if (c == '-')
				return false;
			last_label_numeric = true;
		}
		if (!isalnum((unsigned char)c) && c != '-')
			return false;
		if (!isdigit((unsigned char)c))
			last_label_numeric = false;
		label++;
	}
	/* No top-level domain is all digits: "10.0.0" or "1.2.3.256" is a
	 * mistyped address, which a resolver would read in surprising ways. */
	return !last_label_numeric;
}

static void sb_net_clear_host_bits(uint8_t *address, size_t size, unsigned prefix_len)
{
	for (size_t i = 0; i < size; i++) {
		unsigned bit = (unsigned)i * 8;

		if (bit >= prefix_len)
			address[i] = 0;
		else if (prefix_len - bit < 8)
			address[i] &= (uint8_t)(0xffu << (8 - (prefix_len - bit)));
	}
}

static int sb_net_parse_network(char *field, const char *text, struct sb_net_rule *r, char **reterr)
{
	char *slash;
	unsigned max_prefix;

	r->network = strdup(field);
	if (!r->network)
		return -ENOMEM;
	if (!*field)
		return sb_error(reterr, -EINVAL,
				"empty network in net rule '%s', expected an address, a "
				"network, a host name or '*'",
				text);
	if (streq(field, "*")) {
		r->network_kind = SB_NET_NETWORK_ANY;
		r->family = AF_UNSPEC;
		r->prefix_len = 0;
		return 0;
	}

	slash = strchr(field, '/');
	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, field, r->address) == 1) {
		r->family = AF_INET;
		max_prefix = 32;
	} else if (inet_pton(AF_INET6, field, r->address) == 1) {
		r->family = AF_INET6;
		max_prefix = 128;
	} else if (slash) {
		return sb_error(reterr, -EINVAL,
				"invalid network '%s' in net rule '%s': a prefix length needs "
				"an IPv4 or IPv6 address",
				r->network, text);
	} else if (sb_net_is_host_name(field)) {
		r->network_kind = SB_NET_NETWORK_HOST;
		return 0;
	} else {
		return sb_error(reterr, -EINVAL,
				"invalid network '%s' in net rule '%s': neither an IP address, "
				"a network (CIDR) nor a valid host name",
				r->network, text);
	}

	r->network_kind = SB_NET_NETWORK_CIDR;
	r->prefix_len = max_prefix;
	if (slash) {
		unsigned long long prefix;

		if (sb_safe_atou64(slash + 1, &prefix) < 0 || prefix > max_prefix)
			return sb_error(reterr, -EINVAL,
					"invalid prefix length '/%s' in net rule '%s', expected "
					"0..%u",
					slash + 1, text, max_prefix);
		r->prefix_len = (unsigned)prefix;
	}
	/* Non-strict, as Python's ip_network(strict=False): 10.1.2.3/8 is
	 * 10.0.0.0/8 rather than an error. */
	sb_net_clear_host_bits(r->address, r->family == AF_INET ? 4 : 16, r->prefix_len);
	return 0;
}

static int sb_net_parse_port(const char *s, const char *item, const char *field, const char *text,
			     uint16_t *ret, char **reterr)
{
	unsigned long long v;
	int r = sb_safe_atou64(s, &v);

	if (r == -EINVAL)
		return sb_error(reterr, -EINVAL,
				"invalid port list '%s' in net rule '%s': '%s' is not a port "
				"number",
				field, text, item);
	if (r < 0 || v > SB_PORT_MAX)
		return sb_error(reterr, -EINVAL,
				"invalid port list '%s' in net rule '%s': '%s' is out of the "
				"range 0..65535",
				field, text, item);
	*ret = (uint16_t)v;
	return 0;
}

static int sb_port_range_cmp(const void *a, const void *b)
{
	const struct sb_port_range *x = a, *y = b;

	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->last < y->last ? -1 : x->last > y->last;
}

static int sb_net_parse_ports(char *field, const char *text, struct sb_net_rule *r, char **reterr)
{
	size_t n_items = sb_net_count_char(field, ',') + 1, n = 0;
	_cleanup_free_ char **items = NULL;
	_cleanup_free_ char *as_written = strdup(field);
	_cleanup_free_ struct sb_port_range *ranges = NULL;

	if (!as_written)
		return -ENOMEM;
	items = calloc(n_items, sizeof(char *));
	ranges = calloc(n_items, sizeof(*ranges));
	if (!items || !ranges)
		return -ENOMEM;
	n_items = sb_net_split(field, ',', items, n_items);

	for (size_t i = 0; i < n_items; i++) {
		_cleanup_free_ char *item = NULL;
		char *dash;
		uint16_t first = 0, last = 0;
		int k;

		/* Empty elements ("80,,443", a trailing comma) are ignored. */
		if (!*items[i])
			continue;
		if (streq(items[i], "*")) {
			ranges[n++] = (struct sb_port_range){0, SB_PORT_MAX};
			continue;
		}
		item = strdup(items[i]);
		if (!item)
			return -ENOMEM;
		dash = strchr(items[i], '-');
		if (dash) {
			*dash = '\0';
			if (!*sb_strstrip(items[i]))
				return sb_error(reterr, -EINVAL,
						"invalid port list '%s' in net rule '%s': '%s' has "
						"no first port",
						as_written, text, item);
			k = sb_net_parse_port(sb_strstrip(items[i]), item, as_written, text, &first,
					      reterr);
			if (k < 0)
				return k;
			/* "a-" is an open range up to the last port. */
			last = SB_PORT_MAX;
			if (*sb_strstrip(dash + 1)) {
				k = sb_net_parse_port(sb_strstrip(dash + 1), item, as_written, text,
						      &last, reterr);
				if (k < 0)
					return k;
			}
			if (first > last)
				return sb_error(reterr, -EINVAL,
						"invalid port list '%s' in net rule '%s': range "
						"'%s' is inverted",
						as_written, text, item);
		} else {
			k = sb_net_parse_port(items[i], item, as_written, text, &first, reterr);
			if (k < 0)
				return k;
			last = first;
		}
		ranges[n++] = (struct sb_port_range){first, last};
	}

	if (n == 0) {
		r->ports = NULL;
		r->n_ports = 0;
		return 0;
	}
	qsort(ranges, n, sizeof(*ranges), sb_port_range_cmp);
	{
		size_t w = 0;

		/* Overlapping and adjacent ranges become one: 80,81-90 is 80-90. */
		for (size_t i = 1; i < n; i++) {
			if ((unsigned)ranges[i].first <= (unsigned)ranges[w].last + 1) {
				if (ranges[i].last > ranges[w].last)
					ranges[w].last = ranges[i].last;
			} else {
				ranges[++w] = ranges[i];
			}
		}
		n = w + 1;
	}
	r->ports = TAKE_PTR(ranges);
	r->n_ports = n;
	return 0;
}

/* A word of the protocol or direction field and the bits it sets; a word
 * with `alone` set ("*", "any") stands for every bit and must be alone. */
struct sb_net_word {
	const char *word;
	unsigned bits;
	bool alone;
};

static const struct sb_net_word sb_net_protocol_words[] = {
    {"tcp", SB_NET_TCP, false},
    {"udp", SB_NET_UDP, false},
    {"*", SB_NET_TCP | SB_NET_UDP, true},
    {"any", SB_NET_TCP | SB_NET_UDP, true},
    {NULL, 0, false},
};

/* Lower case is accepted ("in", "out"), as for tcp/udp: the word is
 * unambiguous, and refusing it would only turn a readable rule into a
 * startup error. */
static const struct sb_net_word sb_net_direction_words[] = {
    {"IN", SB_NET_IN, false},
    {"OUT", SB_NET_OUT, false},
    {"*", SB_NET_IN | SB_NET_OUT, true},
    {NULL, 0, false},
};

/* A comma list of words (any case) into a bit set. `what` names the field,
 * `empty_hint` and `hint` list its words for the messages. */
static int sb_net_parse_words(char *field, const char *text, const char *what,
			      const char *empty_hint, const char *hint,
			      const struct sb_net_word *words, unsigned *ret, char **reterr)
{
	size_t n_items = sb_net_count_char(field, ',') + 1;
	_cleanup_free_ char **items = calloc(n_items, sizeof(char *));
	unsigned bits = 0;

	if (!items)
		return -ENOMEM;
	if (!*field)
		return sb_error(reterr, -EINVAL, "empty %s in net rule '%s', expected %s", what,
				text, empty_hint);
	n_items = sb_net_split(field, ',', items, n_items);
	for (size_t i = 0; i < n_items; i++) {
		const struct sb_net_word *w = words;

		while (w->word && strcasecmp(items[i], w->word) != 0)
			w++;
		if (!w->word)
			return sb_error(reterr, -EINVAL,
					"invalid %s '%s' in net rule '%s', expected %s", what,
					items[i], text, hint);
		if (w->alone && n_items != 1)
			return sb_error(reterr, -EINVAL,
					"'%s' must be used alone in the %s field of net rule '%s'",
					items[i], what, text);
		bits |= w->bits;
	}
	*ret = bits;
	return 0;
}

int sb_net_rule_parse(const char *value, struct sb_net_rule *ret, char **reterr)
{
	struct sb_net_rule rule = {0};
	_cleanup_free_ char *copy = NULL;
	char *fields[SB_NET_FIELDS + 1];
	size_t n;
	int r;

	if (!value)
		value = "";
	rule.text = strdup(value);
	copy = strdup(value);
	if (!rule.text || !copy) {
		r = -ENOMEM;
		goto fail;
	}
	/* One more slot than needed, so that a sixth field is detected. */
	n = sb_net_split(copy, '|', fields, SB_NET_FIELDS + 1);
	if (n != SB_NET_FIELDS) {
		r = sb_error(reterr, -EINVAL,
			     "net rule '%s' has incorrect number of parts (%zu). Expected 5: "
			     "ACTION|PROTO|NETWORK|PORTS|DIRECTION",
			     value, sb_net_count_char(value, '|') + 1);
		goto fail;
	}

	r = sb_net_parse_action(fields[0], value, &rule, reterr);
	if (r >= 0)
		r = sb_net_parse_words(fields[1], value, "protocol",
				       "tcp, udp, a comma list of them, or '*'", "tcp, udp or '*'",
				       sb_net_protocol_words, &rule.protocols, reterr);
	if (r >= 0)
		r = sb_net_parse_network(fields[2], value, &rule, reterr);
	if (r >= 0)
		r = sb_net_parse_ports(fields[3], value, &rule, reterr);
	if (r >= 0)
		r = sb_net_parse_words(fields[4], value, "direction", "IN, OUT, IN,OUT or '*'",
				       "IN, OUT or '*'", sb_net_direction_words, &rule.directions,
				       reterr);
	if (r < 0)
		goto fail;
	*ret = rule;
	return 0;
fail:
	sb_net_rule_done(&rule);
	return r;
}

void sb_net_rule_done(struct sb_net_rule *r)
{
	if (!r)
		return;
	free(r->network);
	free(r->ports);
	free(r->text);
	*r = (struct sb_net_rule){0};
}

bool sb_net_rule_has_port(const struct sb_net_rule *r, uint16_t port)
{
	size_t lo = 0, hi = r->n_ports;

	/* The ranges are sorted and disjoint, so a binary search is exact. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (port < r->ports[mid].first)
			hi = mid;
		else if (port > r->ports[mid].last)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}
