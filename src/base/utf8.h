/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Whether s[0..n) is valid UTF-8 (no overlong forms, no surrogates). */
bool sb_utf8_valid(const char *s, size_t n);

/* A copy of s[0..n) in which every byte that does not start a valid UTF-8
 * sequence becomes U+FFFD, as Python's errors="replace" decodes it (one
 * replacement per invalid byte). The copy is NUL-terminated and its length
 * goes to *ret_len. NULL on out of memory. */
char *sb_utf8_sanitize(const char *s, size_t n, size_t *ret_len);
