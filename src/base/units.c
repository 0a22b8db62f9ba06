/* SPDX-License-Identifier: MIT */
#include "units.h"

#include <ctype.h>
#include <stdarg.h>

#include "util.h"

/* Which kind of quantity a parser expects: it decides which suffixes are
 * accepted and which ones are reported as belonging to the other kind. */
enum sb_unit_kind {
	SB_UNIT_COUNT,
	SB_UNIT_SIZE,
	SB_UNIT_DURATION,
};

struct sb_unit_suffix {
	const char *name;
	enum sb_unit_kind kind;
	unsigned long long factor; /* bytes or milliseconds */
	bool ignore_case;
};

/* Decimal multiples only: "10MB" is 10 000 000 bytes, as in the reference
 * implementation. Sizes are case-insensitive ("10mb"); durations are not,
 * because "M" next to "m" would read as mega rather than minutes. */
static const struct sb_unit_suffix sb_unit_suffixes[] = {
    {"B", SB_UNIT_SIZE, 1ULL, true},	      {"KB", SB_UNIT_SIZE, 1000ULL, true},
    {"MB", SB_UNIT_SIZE, 1000000ULL, true},   {"GB", SB_UNIT_SIZE, 1000000000ULL, true},
    {"ms", SB_UNIT_DURATION, 1ULL, false},    {"s", SB_UNIT_DURATION, 1000ULL, false},
    {"m", SB_UNIT_DURATION, 60000ULL, false},
};

static const char *sb_unit_kind_name(enum sb_unit_kind kind)
{
	switch (kind) {
	case SB_UNIT_COUNT:
		return "a count";
	case SB_UNIT_SIZE:
		return "a size";
	case SB_UNIT_DURATION:
		return "a duration";
	}
	return "a number";
}

static const char *sb_unit_expected(enum sb_unit_kind kind)
{
	switch (kind) {
	case SB_UNIT_COUNT:
		return "a plain number such as 1_000";
	case SB_UNIT_SIZE:
		return "a number with an optional B, KB, MB or GB suffix";
	case SB_UNIT_DURATION:
		return "a number of seconds, or a number with a ms, s or m suffix";
	}
	return "a number";
}

static const struct sb_unit_suffix *sb_unit_find_suffix(const char *s, size_t n)
{
	/* Exact spelling first, so that "m" (minutes) is never taken for "M". */
	for (size_t i = 0; i < ELEMENTSOF(sb_unit_suffixes); i++)
		if (strlen(sb_unit_suffixes[i].name) == n &&
		    strncmp(sb_unit_suffixes[i].name, s, n) == 0)
			return &sb_unit_suffixes[i];
	for (size_t i = 0; i < ELEMENTSOF(sb_unit_suffixes); i++)
		if (sb_unit_suffixes[i].ignore_case && strlen(sb_unit_suffixes[i].name) == n &&
		    strncasecmp(sb_unit_suffixes[i].name, s, n) == 0)
			return &sb_unit_suffixes[i];
	return NULL;
}

/* Reads digits with '_' separators as in a Python literal: a '_' must sit
 * between two digits. Returns the end of the digits, NULL on a misplaced '_'. */
static const char *sb_unit_scan_digits(const char *p, const char *end, unsigned long long *value,
				       unsigned *n_digits, bool *overflow)
{
	*value = 0;
	*n_digits = 0;
	for (; p < end; p++) {
		if (*p == '_') {
			if (*n_digits == 0 || p + 1 >= end || !isdigit((unsigned char)p[1]))
				return NULL;
			continue;
		}
		if (!isdigit((unsigned char)*p))
			break;
		if (__builtin_mul_overflow(*value, 10ULL, value) ||
		    __builtin_add_overflow(*value, (unsigned long long)(*p - '0'), value))
			*overflow = true;
		(*n_digits)++;
	}
	return p;
}

static int sb_parse_quantity(const char *text, enum sb_unit_kind kind, unsigned long long *ret,
			     char **reterr)
{
	unsigned long long whole = 0, frac = 0, frac_scale = 1, factor = 1, result;
	unsigned n_whole = 0, n_frac = 0;
	bool overflow = false, too_precise = false;
	const char *start, *end, *p, *suffix;
	const struct sb_unit_suffix *unit = NULL;
	int len;

	if (!text)
		return sb_error(reterr, -EINVAL, "empty value, expected %s",
				sb_unit_expected(kind));
	start = text;
	end = text + strlen(text);
	while (start < end && isspace((unsigned char)*start))
		start++;
	while (end > start && isspace((unsigned char)end[-1]))
		end--;
	len = (int)(end - start);

	if (start == end)
		return sb_error(reterr, -EINVAL, "empty value, expected %s",
				sb_unit_expected(kind));
	if (startswith(start, "DENY:"))
		return sb_error(reterr, -EINVAL,
				"'%.*s': 'DENY:' applies to list keys only, expected %s", len,
				start, sb_unit_expected(kind));
	if (memchr(start, '*', (size_t)len))
		return sb_error(reterr, -EINVAL,
				"'%.*s': a '*' pattern applies to list keys only, expected %s", len,
				start, sb_unit_expected(kind));
	if (*start == '-')
		return sb_error(reterr, -EINVAL, "'%.*s' is negative, expected %s", len, start,
				sb_unit_expected(kind));
	if (*start == '+')
		return sb_error(reterr, -EINVAL, "'%.*s': no sign allowed, expected %s", len, start,
				sb_unit_expected(kind));

	p = sb_unit_scan_digits(start, end, &whole, &n_whole, &overflow);
	if (!p)
		return sb_error(reterr, -EINVAL,
				"'%.*s': '_' may only separate two digits, as in 1_000", len,
				start);
	if (n_whole == 0)
		return sb_error(reterr, -EINVAL, "'%.*s' is not a number, expected %s", len, start,
				sb_unit_expected(kind));
	if (p < end && *p == '.') {
		const char *digits = p + 1, *significant;
		bool with_zeros_overflow = false;

		if (kind == SB_UNIT_COUNT)
			return sb_error(reterr, -EINVAL,
					"'%.*s' is not a whole number, expected %s", len, start,
					sb_unit_expected(kind));
		p = sb_unit_scan_digits(digits, end, &frac, &n_frac, &with_zeros_overflow);
		if (!p)
			return sb_error(reterr, -EINVAL,
					"'%.*s': '_' may only separate two digits, as in 1_000",
					len, start);
		if (n_frac == 0)
			return sb_error(reterr, -EINVAL,
					"'%.*s': expected digits after the decimal point", len,
					start);
		/* Trailing zeros carry no precision ("1.50000000000000000000s" is
		 * 1.5 s): the fraction is read again without them, so that they
		 * neither overflow nor make the scale too large. */
		for (significant = p;
		     significant > digits && (significant[-1] == '0' || significant[-1] == '_');
		     significant--)
			;
		sb_unit_scan_digits(digits, significant, &frac, &n_frac, &too_precise);
		/* More significant digits than a 64-bit scale holds: no unit (at
		 * most 10^9 of the base unit) makes that a whole number. */
		too_precise |= n_frac > 19;
		for (unsigned i = 0; i < n_frac && !too_precise; i++)
			frac_scale *= 10;
	}

	suffix = p;
	if (suffix < end) {
		unit = sb_unit_find_suffix(suffix, (size_t)(end - suffix));
		if (!unit)
			return sb_error(reterr, -EINVAL, "'%.*s': unknown unit '%.*s', expected %s",
					len, start, (int)(end - suffix), suffix,
					sb_unit_expected(kind));
		if (unit->kind != kind)
			return sb_error(reterr, -EINVAL,
					"'%.*s': '%s' is the unit of %s, but %s is expected (%s)",
					len, start, unit->name, sb_unit_kind_name(unit->kind),
					sb_unit_kind_name(kind), sb_unit_expected(kind));
		factor = unit->factor;
	} else if (kind == SB_UNIT_DURATION) {
		factor = 1000; /* a bare duration is in seconds */
	}

	if (overflow || __builtin_mul_overflow(whole, factor, &result))
		return sb_error(reterr, -ERANGE, "'%.*s' is too large", len, start);
	if (n_frac > 0) {
		unsigned long long part;

		/* frac/frac_scale of the unit must be a whole number of bytes or
		 * milliseconds: "1.5s" is fine, "1.5ms" or "0.5B" is not. */
		if (too_precise || __builtin_mul_overflow(frac, factor, &part) ||
		    part % frac_scale != 0)
			return sb_error(reterr, -EINVAL, "'%.*s' is not a whole number of %s", len,
					start, kind == SB_UNIT_SIZE ? "bytes" : "milliseconds");
		if (__builtin_add_overflow(result, part / frac_scale, &result))
			return sb_error(reterr, -ERANGE, "'%.*s' is too large", len, start);
	}
	*ret = result;
	return 0;
}

int sb_parse_count(const char *text, unsigned long long *ret, char **reterr)
{
	return sb_parse_quantity(text, SB_UNIT_COUNT, ret, reterr);
}

int sb_parse_size(const char *text, unsigned long long *ret_bytes, char **reterr)
{
	return sb_parse_quantity(text, SB_UNIT_SIZE, ret_bytes, reterr);
}

int sb_parse_duration(const char *text, unsigned long long *ret_ms, char **reterr)
{
	return sb_parse_quantity(text, SB_UNIT_DURATION, ret_ms, reterr);
}
