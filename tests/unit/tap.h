/* SPDX-License-Identifier: MIT */
#pragma once

/* A minimal TAP producer for `meson test` (protocol: 'tap'). Each check prints
 * one "ok"/"not ok" line; tap_done() prints the plan and returns the exit code. */

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned tap_count;
static unsigned tap_failed;

static inline bool tap_ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline bool tap_ok(bool cond, const char *fmt, ...)
{
	char *text = NULL;
	va_list ap;
	int n;

	tap_count++;
	if (!cond)
		tap_failed++;
	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	printf("%s %u - ", cond ? "ok" : "not ok", tap_count);
	/* One line per test whatever the description holds (a multi-line value
	 * compared by TAP_IS_STR): a bare line is "Unknown TAP output". */
	for (const char *p = n >= 0 ? text : "?"; *p; p++) {
		if (*p == '\n')
			fputs("\\n", stdout);
		else if (*p == '\r')
			fputs("\\r", stdout);
		else
			putchar(*p);
	}
	putchar('\n');
	fflush(stdout);
	free(text);
	return cond;
}

/* A comment; each line of a text with newlines is one. */
static inline void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tap_diag(const char *fmt, ...)
{
	char *text = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	fputs("# ", stdout);
	for (const char *p = text; *p; p++) {
		putchar(*p);
		if (*p == '\n')
			fputs("# ", stdout);
	}
	putchar('\n');
	free(text);
}

static inline int tap_skip_all(const char *reason)
{
	printf("1..0 # SKIP %s\n", reason);
	return 0;
}

static inline int tap_done(void)
{
	printf("1..%u\n", tap_count);
	return tap_failed ? 1 : 0;
}

/* Each argument is evaluated once: `got` is often a call with side effects. */
#define TAP_IS_INT(got, want, name)                                                                \
	({                                                                                         \
		long long _g = (long long)(got), _w = (long long)(want);                           \
		tap_ok(_g == _w, "%s (got %lld, want %lld)", name, _g, _w);                        \
	})

#define TAP_IS_STR(got, want, name)                                                                \
	({                                                                                         \
		const char *_g = (got), *_w = (want);                                              \
		bool _ok = (_g && _w) ? strcmp(_g, _w) == 0 : _g == _w;                            \
		tap_ok(_ok, "%s (got \"%s\", want \"%s\")", name, _g ? _g : "(null)",              \
		       _w ? _w : "(null)");                                                        \
	})
