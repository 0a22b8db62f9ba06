/* SPDX-License-Identifier: MIT */
#include "expand.h"
#include "fake-env.h"
#include "tap.h"

static char *env[] = {"HOME=/home/u", "A=a-value", "EMPTY=", "INJECT=${A}", "TMP=/t", NULL};

static const struct {
	const char *in;
	const char *out; /* NULL: must fail */
	const char *error_part;
} cases[] = {
    {"plain", "plain", NULL},
    {"", "", NULL},
    {"${A}", "a-value", NULL},
    {"x${A}y", "xa-valuey", NULL},
    {"${UNSET}", "", NULL},
    {"${UNSET:-dflt}", "dflt", NULL},
    {"${A:-dflt}", "a-value", NULL},
    {"${EMPTY:-dflt}", "dflt", NULL},
    {"${TMPDIR:-${TEMP:-${TMP:-/tmp}}}", "/t", NULL},
    {"${TMPDIR:-${TEMP:-${NOPE:-/tmp}}}/x", "/tmp/x", NULL},
    {"${INJECT}", "${A}", NULL}, /* substituted values are never expanded again */
    {"${UNSET:-${INJECT}}", "${A}", NULL},
    {"$A and $", "$A and $", NULL},
    {"${UNSET:-}", "", NULL},
    {"${UNSET:-a}b}", "ab}", NULL},
    {"${A:B}", NULL, "invalid variable expansion '${A:B}'"},
    {"${A:=x}", NULL, "invalid variable expansion '${A:=x}'"},
    {"${A-x}", NULL, "invalid variable expansion"},
    {"${}", NULL, "invalid variable expansion"},
    {"${1A}", NULL, "invalid variable expansion"},
    {"${A", NULL, "unterminated"},
    {"${A:-x", NULL, "unterminated"},
    {"${A:-${B}", NULL, "unterminated"},
    {"pre ${A B}", NULL, "invalid variable expansion"},
    {"${A:-${B:C}}", NULL, "invalid variable expansion '${B:C}'"},
    {"${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-"
     "1}}}}}}}}}}}}}}}}}}",
     NULL, "nested too deeply"},
};

int main(void)
{
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *out = NULL, *err = NULL;
		int r = sb_expand(cases[i].in, fake_getenv, env, &out, &err);

		if (cases[i].out) {
			tap_ok(r == 0 && out && streq(out, cases[i].out),
			       "expand '%s' -> '%s' (got '%s')", cases[i].in, cases[i].out,
			       out ? out : "(error)");
		} else {
			tap_ok(r == -EINVAL && err && strstr(err, cases[i].error_part),
			       "expand '%s' fails with '%s' (got r=%d '%s')", cases[i].in,
			       cases[i].error_part, r, err ? err : "");
		}
	}

	{
		_cleanup_free_ char *name = NULL, *dflt = NULL;

		TAP_IS_INT(sb_expand_single_reference("${HOST}", false, &name, &dflt), 1,
			   "single ref");
		TAP_IS_STR(name, "HOST", "single ref name");
		tap_ok(dflt == NULL, "single ref has no default");
	}
	{
		_cleanup_free_ char *name = NULL, *dflt = NULL;

		TAP_IS_INT(sb_expand_single_reference("${H:-${X:-y}}", false, &name, &dflt), 1,
			   "single ref with nested default");
		TAP_IS_STR(dflt, "${X:-y}", "default kept unexpanded");
	}
	{
		_cleanup_free_ char *name = NULL, *dflt = NULL;

		TAP_IS_INT(sb_expand_single_reference("${API_*}", true, &name, &dflt), 1,
			   "pattern ref allowed with allow_star");
		TAP_IS_STR(name, "API_*", "pattern ref name");
	}
	{
		char *name = NULL, *dflt = NULL;

		TAP_IS_INT(sb_expand_single_reference("${API_*}", false, &name, &dflt), 0,
			   "pattern ref refused without allow_star");
		TAP_IS_INT(sb_expand_single_reference("x${A}", false, &name, &dflt), 0,
			   "text around a ref is not a single ref");
		TAP_IS_INT(sb_expand_single_reference("${A}${B}", false, &name, &dflt), 0,
			   "two refs are not a single ref");
	}
	{
		_cleanup_free_ char *a = sb_expand_tilde("~/x", "/home/u");
		_cleanup_free_ char *b = sb_expand_tilde("~", "/home/u");
		_cleanup_free_ char *c = sb_expand_tilde("~other/x", "/home/u");

		TAP_IS_STR(a, "/home/u/x", "tilde slash");
		TAP_IS_STR(b, "/home/u", "tilde alone");
		TAP_IS_STR(c, "~other/x", "~user is left alone");
	}
	return tap_done();
}
