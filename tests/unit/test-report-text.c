/* SPDX-License-Identifier: MIT */
/* The rule a guard message names (report-denials.c) and the UTF-8 checks of
 * text that goes into JSON (base/utf8.c). */
#include "report-denials.h"
#include "tap.h"
#include "utf8.h"
#include "util.h"

/* The collector is Python's; denials here are recorded as if code ran. */
bool sb_report_collector_in_program(void);
bool sb_report_collector_in_program(void)
{
	return true;
}

static void rule(const char *message, const char *want)
{
	size_t off = 0, len = 0;
	bool found = sb_report_rule_in_message(message, &off, &len);
	_cleanup_free_ char *got = found ? strndup(message + off, len) : NULL;

	TAP_IS_STR(got, want, message);
}

static void sanitize(const char *in, size_t n, const char *want)
{
	size_t len = 0;
	_cleanup_free_ char *got = sb_utf8_sanitize(in, n, &len);

	TAP_IS_STR(got, want, "sanitised");
	TAP_IS_INT(len, strlen(want), "  its length");
	tap_ok(sb_utf8_valid(got, len), "  is valid UTF-8");
}

int main(void)
{
	rule("Module named 'x' is not allowed by a rule. Add 'python-import=x' to '/p'",
	     "python-import=x");
	rule("Cannot write to '/d/'. Rule 'expose-ro=./d' from /p:3. Use 'expose-rw=./d' instead "
	     "to allow writing",
	     "expose-rw=./d");
	rule("os.kill() is denied by the API guard (category: signals). Add "
	     "`python-api=ALLOW:os.kill` to '/p' to allow this function, or "
	     "`python-api=ALLOW:signals` for the whole category",
	     "python-api=ALLOW:os.kill");
	rule("Guard network connection to 1.2.3.4 DENIED by implicit default policy. Add "
	     "'net=ALLOW|tcp|1.2.3.4|80|OUT' to '/p'",
	     "net=ALLOW|tcp|1.2.3.4|80|OUT");
	rule("Access to 'x' is ignored by rule 'ignore=x' from /p:1", NULL);
	rule("A path given as a int object cannot be checked by the guard; pass a str", NULL);
	rule("Add 'nothing here' to 'x'", NULL);

	tap_ok(sb_utf8_valid("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 12), "valid UTF-8");
	tap_ok(!sb_utf8_valid("\xc0\xaf", 2), "an overlong form is not");
	tap_ok(!sb_utf8_valid("\xed\xa0\x80", 3), "a surrogate is not");
	tap_ok(!sb_utf8_valid("\xf4\x90\x80\x80", 4), "past U+10FFFF is not");
	tap_ok(!sb_utf8_valid("\xe2\x82", 2), "a cut sequence is not");
	sanitize("a\xffz", 3, "a\xef\xbf\xbdz");
	sanitize("\xe2\x82", 2, "\xef\xbf\xbd\xef\xbf\xbd");
	sanitize("ok \xc3\xa9", 5, "ok \xc3\xa9");
	return tap_done();
}
