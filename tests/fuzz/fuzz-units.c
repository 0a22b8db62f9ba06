/* SPDX-License-Identifier: MIT */
/* Counts, sizes and durations (src/base/units.c), against a reference parser
 * written here from units.h: digits with '_' between two digits, an optional
 * fraction (not for counts), a suffix of the kind (B/KB/MB/GB in any case for
 * sizes; ms, s, m exactly for durations; a bare duration is in seconds); the
 * value must be a whole number of bytes or milliseconds (-EINVAL) that fits
 * in 64 bits (-ERANGE). The first byte picks the parser. */
#include <ctype.h>
#include <string.h>

#include "fuzz.h"
#include "units.h"
#include "util.h"

enum kind {
	COUNT,
	SIZE,
	DURATION,
};

/* [0-9](_?[0-9])* at *p, into a digit string without the separators. */
static bool digits(const char **p, const char *end, char *out, size_t *n)
{
	const char *s = *p;

	*n = 0;
	if (s >= end || !isdigit((unsigned char)*s))
		return false;
	while (s < end) {
		if (isdigit((unsigned char)*s)) {
			out[(*n)++] = *s++;
		} else if (*s == '_' && s + 1 < end && isdigit((unsigned char)s[1])) {
			s++;
		} else {
			break;
		}
	}
	*p = s;
	return true;
}

/* 0, -EINVAL or -ERANGE, and the value. */
static int reference(const char *text, enum kind kind, unsigned long long *ret)
{
	static const struct {
		const char *name;
		enum kind kind;
		unsigned long long factor;
	} units[] = {{"B", SIZE, 1},	       {"KB", SIZE, 1000},  {"MB", SIZE, 1000000},
		     {"GB", SIZE, 1000000000}, {"ms", DURATION, 1}, {"s", DURATION, 1000},
		     {"m", DURATION, 60000}};
	size_t len = strlen(text), n_whole = 0, n_frac = 0;
	const char *p = text, *end = text + len;
	char whole[4096], frac[4096];
	unsigned long long factor = kind == DURATION ? 1000 : 1, w = 0, f = 0, scale = 1;
	unsigned __int128 v;

	while (p < end && isspace((unsigned char)*p))
		p++;
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	if (!digits(&p, end, whole, &n_whole))
		return -EINVAL;
	if (p < end && *p == '.') {
		p++;
		if (kind == COUNT || !digits(&p, end, frac, &n_frac))
			return -EINVAL;
	}
	if (p < end) {
		size_t i, n = (size_t)(end - p);

		for (i = 0; i < ELEMENTSOF(units); i++)
			if (strlen(units[i].name) == n &&
			    (units[i].kind == SIZE ? strncasecmp(units[i].name, p, n)
						   : strncmp(units[i].name, p, n)) == 0)
				break;
		if (i == ELEMENTSOF(units) || units[i].kind != kind)
			return -EINVAL;
		factor = units[i].factor;
	}
	/* The whole part, without its leading zeros, times the unit. */
	for (size_t i = 0; i < n_whole; i++) {
		v = (unsigned __int128)w * 10 + (unsigned)(whole[i] - '0');
		if (v > ~0ULL)
			return -ERANGE;
		w = (unsigned long long)v;
	}
	v = (unsigned __int128)w * factor;
	if (v > ~0ULL)
		return -ERANGE;
	/* The fraction without its trailing zeros: more than 9 digits left can
	 * never make a whole number of a unit that is at most 10^9. */
	while (n_frac && frac[n_frac - 1] == '0')
		n_frac--;
	if (n_frac > 9)
		return -EINVAL;
	for (size_t i = 0; i < n_frac; i++) {
		f = f * 10 + (unsigned long long)(frac[i] - '0');
		scale *= 10;
	}
	if (f * factor % scale)
		return -EINVAL;
	v += f * factor / scale;
	if (v > ~0ULL)
		return -ERANGE;
	*ret = (unsigned long long)v;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *text = NULL, *err = NULL;
	unsigned long long got = 0, want = 0;
	enum kind kind;
	int r, w;

	if (size < 1 || size > 4000)
		return 0;
	kind = (enum kind)(data[0] % 3);
	text = strndup((const char *)data + 1, size - 1);
	if (!text)
		return 0;
	r = kind == COUNT  ? sb_parse_count(text, &got, &err)
	    : kind == SIZE ? sb_parse_size(text, &got, &err)
			   : sb_parse_duration(text, &got, &err);
	w = reference(text, kind, &want);
	FUZZ_ASSERT(r == w, "'%s' as kind %d: %d (%s), the reference %d", text, kind, r,
		    err ? err : "", w);
	FUZZ_ASSERT(r != 0 || got == want, "'%s': %llu, the reference %llu", text, got, want);
	FUZZ_ASSERT(r == 0 || (err && err[0]), "a refusal without a message");
	return 0;
}
