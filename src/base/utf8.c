/* SPDX-License-Identifier: MIT */
/* UTF-8 checks for text that crosses into JSON (utf8.h): program output and
 * names recorded inside the sandbox may be any bytes. */
#include "utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The length of the valid sequence at s (at most n bytes), or 0. */
static size_t sequence_length(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

bool sb_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		size_t len = sequence_length(p + i, n - i);

		if (len == 0)
			return false;
		i += len;
	}
	return true;
}

char *sb_utf8_sanitize(const char *s, size_t n, size_t *ret_len)
{
	const unsigned char *p = (const unsigned char *)s;
	char *out;
	size_t o = 0;

	/* Each invalid byte grows to three. */
	if (n > (SIZE_MAX - 1) / 3)
		return NULL;
	out = malloc(n * 3 + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t len = sequence_length(p + i, n - i);

		if (len == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, p + i, len);
		o += len;
		i += len;
	}
	out[o] = '\0';
	*ret_len = o;
	return out;
}
