/* SPDX-License-Identifier: MIT */
/* The Host and Origin checks of python-sb serve (src/serve/http-origin.c):
 * which names a page of another site could use (refused), which it cannot
 * (accepted). */
#include "http-origin.h"
#include "tap.h"
#include "util.h"

static char *allowed[] = {"sandbox.example.org", NULL};
static char *any[] = {"*", NULL};

int main(void)
{
	static const char *const local_hosts[] = {
	    "127.0.0.1", "127.0.0.1:8000", "10.1.2.3:80", "[::1]:8000",	   "[::1]",
	    "localhost", "LocalHost:8000", "localhost.",  "dev.localhost", "a.b.localhost:1",
	};
	static const char *const foreign_hosts[] = {
	    "evil.example",
	    "evil.example:8000",
	    "localhost.evil.example",
	    "127.0.0.1.nip.io",
	    "xlocalhost",
	    "127.1",
	    "2130706433",
	    "[::1",
	    "[::1]x",
	    "localhost:",
	    "localhost:80x",
	    "[evil.example]:80",
	    ".localhost",
	    "",
	};

	for (size_t i = 0; i < ELEMENTSOF(local_hosts); i++)
		tap_ok(sb_http_host_problem(local_hosts[i], NULL) == NULL, "Host '%s' is local",
		       local_hosts[i]);
	for (size_t i = 0; i < ELEMENTSOF(foreign_hosts); i++)
		tap_ok(sb_http_host_problem(foreign_hosts[i], NULL) != NULL, "Host '%s' is refused",
		       foreign_hosts[i]);
	TAP_IS_STR(sb_http_host_problem(NULL, NULL), NULL, "no Host (HTTP/1.0) is not a page's");
	TAP_IS_STR(sb_http_host_problem("Sandbox.Example.ORG:443", allowed), NULL,
		   "an --allow-host name, any case, any port");
	tap_ok(sb_http_host_problem("sandbox.example.org.evil.example", allowed) != NULL,
	       "a name that only begins with an --allow-host name");
	TAP_IS_STR(sb_http_host_problem("anything.example", any), NULL, "--allow-host '*'");

	TAP_IS_STR(sb_http_origin_problem(NULL, "127.0.0.1:8000", NULL), NULL, "no Origin: curl");
	TAP_IS_STR(sb_http_origin_problem("http://127.0.0.1:8000", "127.0.0.1:8000", NULL), NULL,
		   "the service's own page");
	TAP_IS_STR(sb_http_origin_problem("https://Sandbox.example.org", "127.0.0.1:8000", allowed),
		   NULL, "a page of an --allow-host name behind a proxy that rewrites Host");
	tap_ok(sb_http_origin_problem("http://127.0.0.1:8001", "127.0.0.1:8000", NULL) != NULL,
	       "another port of the same address");
	tap_ok(sb_http_origin_problem("http://localhost:8000", "127.0.0.1:8000", NULL) != NULL,
	       "another name of the same service");
	tap_ok(sb_http_origin_problem("null", "127.0.0.1:8000", NULL) != NULL, "Origin: null");
	tap_ok(sb_http_origin_problem("http://127.0.0.1:8000", NULL, NULL) != NULL,
	       "an Origin without a Host");
	tap_ok(sb_http_origin_problem("http://evil.example", "evil.example", any) == NULL,
	       "same origin (the Host check refuses evil.example on its own)");
	tap_ok(sb_http_origin_problem("http://evil.example", "127.0.0.1:8000", any) != NULL,
	       "--allow-host '*' does not allow every Origin");
	return tap_done();
}
