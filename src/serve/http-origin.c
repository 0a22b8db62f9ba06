/* SPDX-License-Identifier: MIT */
/* http-origin.h: pure string checks, no allocation (a few hundred ns per
 * request). */
#include "http-origin.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* The name of "name[:port]" or "[v6]:port": its length, or 0 when the port
 * is not digits. *v6 says whether it is a bracketed IPv6 literal. */
static size_t authority_name(const char *a, size_t len, bool *v6)
{
	const char *colon;
	size_t n = len;

	*v6 = false;
	if (len > 0 && a[0] == '[') {
		const char *end = memchr(a, ']', len);

		if (!end)
			return 0;
		*v6 = true;
		n = (size_t)(end - a) + 1;
		if (n < len && a[n] != ':')
			return 0;
	} else {
		colon = memchr(a, ':', len);
		if (colon)
			n = (size_t)(colon - a);
	}
	if (n < len) {
		if (n + 1 == len)
			return 0;
		for (size_t i = n + 1; i < len; i++)
			if (a[i] < '0' || a[i] > '9')
				return 0;
	}
	return n;
}

static bool allowed_name(const char *name, size_t n, char *const *allowed, bool any)
{
	for (char *const *a = allowed; a && *a; a++) {
		if (any && streq(*a, "*"))
			return true;
		if (strlen(*a) == n && strncasecmp(*a, name, n) == 0)
			return true;
	}
	return false;
}

/* An IP address, localhost or *.localhost: never a name a page of another
 * site can make resolve to this service. */
static bool local_name(const char *name, size_t n, bool v6)
{
	static const char suffix[] = ".localhost";
	char buf[256];
	struct in6_addr a6;
	struct in_addr a4;

	if (v6) {
		if (n < 3 || n - 2 >= sizeof(buf))
			return false;
		memcpy(buf, name + 1, n - 2);
		buf[n - 2] = '\0';
		return inet_pton(AF_INET6, buf, &a6) == 1;
	}
	if (n > 0 && name[n - 1] == '.')
		n--; /* "localhost." is localhost */
	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, name, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, &a4) == 1 || strcasecmp(buf, "localhost") == 0)
		return true;
	return n > sizeof(suffix) - 1 && strcasecmp(buf + n - (sizeof(suffix) - 1), suffix) == 0;
}

const char *sb_http_host_problem(const char *host, char *const *allowed)
{
	size_t n;
	bool v6;

	if (!host)
		return NULL;
	n = authority_name(host, strlen(host), &v6);
	if (n == 0)
		return "the Host header is not a valid HOST[:PORT]";
	if (local_name(host, n, v6) || allowed_name(host, n, allowed, true))
		return NULL;
	return "the Host is not a name of this service: it answers to IP addresses, localhost and "
	       "the names given with --allow-host (a web page could otherwise reach it by DNS "
	       "rebinding and run programs)";
}

const char *sb_http_origin_problem(const char *origin, const char *host, char *const *allowed)
{
	static const char refused[] =
	    "a web page of another origin may not run programs here (a cross-site request): "
	    "only the playground's own page, clients that send no Origin, and pages of the names "
	    "given with --allow-host may";
	const char *authority;
	size_t len, n;
	bool v6;

	if (!origin)
		return NULL;
	authority = strstr(origin, "://");
	if (!authority)
		return refused; /* "null": a sandboxed frame, a file:, data: page */
	authority += 3;
	len = strlen(authority);
	if (host && strcasecmp(authority, host) == 0)
		return NULL;
	n = authority_name(authority, len, &v6);
	if (n > 0 && allowed_name(authority, n, allowed, false))
		return NULL;
	return refused;
}
