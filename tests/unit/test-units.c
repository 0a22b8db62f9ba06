/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "tap.h"
#include "units.h"
#include "util.h"

enum kind {
	COUNT,
	SIZE,
	DURATION,
};

struct ok_case {
	enum kind kind;
	const char *text;
	unsigned long long want;
};

struct bad_case {
	enum kind kind;
	const char *text;
	int want_r;
	const char *want_in_message; /* a key word of the message */
};

static const struct ok_case ok_cases[] = {
    {COUNT, "0", 0},
    {COUNT, "20", 20},
    {COUNT, "1_000_000", 1000000},
    {COUNT, "5_000", 5000},
    {COUNT, "1_2_3", 123},
    {COUNT, " 42 ", 42},
    {COUNT, "18446744073709551615", 18446744073709551615ULL},
    {SIZE, "512", 512},
    {SIZE, "512B", 512},
    {SIZE, "10MB", 10000000},
    {SIZE, "1_000KB", 1000000},
    {SIZE, "1KB", 1000},
    {SIZE, "2GB", 2000000000},
    {SIZE, "10mb", 10000000},
    {SIZE, "1.5KB", 1500},
    {SIZE, "0.5MB", 500000},
    {SIZE, "0", 0},
    {DURATION, "5s", 5000},
    {DURATION, "250ms", 250},
    {DURATION, "2m", 120000},
    {DURATION, "5", 5000},
    {DURATION, "0", 0},
    {DURATION, "1_000ms", 1000},
    {DURATION, "1.5s", 1500},
    {DURATION, "0.25s", 250},
    {DURATION, "1.50s", 1500},
    {DURATION, "0.5m", 30000},
    /* Trailing zeros carry no precision, however many (found by fuzz-units). */
    {DURATION, "1.5000000000000000000000s", 1500},
    {SIZE, "0.000000001000000000000000000GB", 1},
};

static const struct bad_case bad_cases[] = {
    {COUNT, "", -EINVAL, "empty"},
    {COUNT, "   ", -EINVAL, "empty"},
    {COUNT, "-1", -EINVAL, "negative"},
    {COUNT, "+1", -EINVAL, "sign"},
    {COUNT, "*", -EINVAL, "pattern"},
    {COUNT, "1*", -EINVAL, "pattern"},
    {COUNT, "DENY:5", -EINVAL, "DENY:"},
    {COUNT, "abc", -EINVAL, "not a number"},
    {COUNT, "10MB", -EINVAL, "unit of a size"},
    {COUNT, "5s", -EINVAL, "unit of a duration"},
    {COUNT, "1.5", -EINVAL, "whole number"},
    {COUNT, "1k", -EINVAL, "unknown unit 'k'"},
    {COUNT, "1__000", -EINVAL, "'_'"},
    {COUNT, "_1000", -EINVAL, "'_' may only separate"},
    {COUNT, "1000_", -EINVAL, "'_'"},
    {COUNT, "1 000", -EINVAL, "unknown unit"},
    {COUNT, "18446744073709551616", -ERANGE, "too large"},
    {COUNT, "99999999999999999999999", -ERANGE, "too large"},
    {SIZE, "", -EINVAL, "empty"},
    {SIZE, "-5MB", -EINVAL, "negative"},
    {SIZE, "5s", -EINVAL, "unit of a duration"},
    {SIZE, "5m", -EINVAL, "unit of a duration"},
    {SIZE, "5ms", -EINVAL, "unit of a duration"},
    {SIZE, "10MiB", -EINVAL, "unknown unit 'MiB'"},
    {SIZE, "10TB", -EINVAL, "unknown unit"},
    {SIZE, "MB", -EINVAL, "not a number"},
    {SIZE, "0.5B", -EINVAL, "whole number of bytes"},
    {SIZE, "1.", -EINVAL, "digits after the decimal point"},
    {SIZE, "*", -EINVAL, "pattern"},
    {SIZE, "DENY:10MB", -EINVAL, "DENY:"},
    {SIZE, "18446744073709551616B", -ERANGE, "too large"},
    {SIZE, "18446744073709552GB", -ERANGE, "too large"},
    {DURATION, "10MB", -EINVAL, "unit of a size"},
    {DURATION, "10mb", -EINVAL, "unit of a size"},
    {DURATION, "10B", -EINVAL, "unit of a size"},
    {DURATION, "10S", -EINVAL, "unknown unit"},
    {DURATION, "10h", -EINVAL, "unknown unit 'h'"},
    {DURATION, "-1s", -EINVAL, "negative"},
    {DURATION, "", -EINVAL, "empty"},
    {DURATION, "*", -EINVAL, "pattern"},
    {DURATION, "DENY:5s", -EINVAL, "DENY:"},
    {DURATION, "1.5ms", -EINVAL, "whole number of milliseconds"},
    {DURATION, "0.0001s", -EINVAL, "whole number of milliseconds"},
    /* More significant digits than 64 bits hold: not whole, rather than too large. */
    {DURATION, "1.00000000000000000001s", -EINVAL, "whole number of milliseconds"},
    {SIZE, "1.10000000000000000000001GB", -EINVAL, "whole number of bytes"},
    {DURATION, "18446744073709551615", -ERANGE, "too large"},
    {DURATION, "18446744073709551615ms", 0, NULL},
    {DURATION, "307445734561825861m", -ERANGE, "too large"},
};

static int parse(enum kind kind, const char *text, unsigned long long *ret, char **reterr)
{
	switch (kind) {
	case COUNT:
		return sb_parse_count(text, ret, reterr);
	case SIZE:
		return sb_parse_size(text, ret, reterr);
	case DURATION:
		return sb_parse_duration(text, ret, reterr);
	}
	return -EINVAL;
}

static const char *kind_name(enum kind kind)
{
	return kind == COUNT ? "count" : kind == SIZE ? "size" : "duration";
}

int main(void)
{
	for (size_t i = 0; i < ELEMENTSOF(ok_cases); i++) {
		const struct ok_case *c = &ok_cases[i];
		unsigned long long got = 12345;
		_cleanup_free_ char *err = NULL;
		int r = parse(c->kind, c->text, &got, &err);

		tap_ok(r == 0 && got == c->want && !err, "%s '%s' -> %llu (r=%d got %llu err=%s)",
		       kind_name(c->kind), c->text, c->want, r, got, err ? err : "-");
	}

	for (size_t i = 0; i < ELEMENTSOF(bad_cases); i++) {
		const struct bad_case *c = &bad_cases[i];
		unsigned long long got = 777;
		_cleanup_free_ char *err = NULL;
		int r = parse(c->kind, c->text, &got, &err);

		if (c->want_r == 0) {
			tap_ok(r == 0 && got == 18446744073709551615ULL,
			       "%s '%s' is the largest value (r=%d)", kind_name(c->kind), c->text,
			       r);
			continue;
		}
		tap_ok(r == c->want_r && err && strstr(err, c->want_in_message) && got == 777,
		       "%s '%s' -> %d with '%s' (got r=%d, message \"%s\", value untouched %d)",
		       kind_name(c->kind), c->text, c->want_r, c->want_in_message, r,
		       err ? err : "(null)", got == 777);
	}

	/* The message quotes the text, so that a profile error points at the culprit. */
	{
		_cleanup_free_ char *err = NULL;
		unsigned long long v;

		sb_parse_duration("10MB", &v, &err);
		tap_ok(err && strstr(err, "'10MB'") && strstr(err, "duration"),
		       "duration message names the text and the expected kind: %s",
		       err ? err : "(null)");
	}
	/* A NULL reterr is allowed for callers that only want the value. */
	{
		unsigned long long v = 1;

		TAP_IS_INT(sb_parse_count("x", &v, NULL), -EINVAL, "NULL reterr");
		TAP_IS_INT(sb_parse_count("7", &v, NULL), 0, "NULL reterr, valid");
		TAP_IS_INT(v, 7, "value with NULL reterr");
		TAP_IS_INT(sb_parse_count(NULL, &v, NULL), -EINVAL, "NULL text");
	}

	return tap_done();
}
