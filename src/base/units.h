/* SPDX-License-Identifier: MIT */
#pragma once

/* Numbers with units, shared by eval-* and the resource limits: '_' is a digit
 * separator, sizes take the decimal suffixes KB/MB/GB (and B), durations take
 * ms/s/m. Each parser returns 0, or -EINVAL/-ERANGE; *reterr then gets a
 * message (malloc'ed) saying what was wrong with the text. */

/* A plain count such as "1_000_000". */
int sb_parse_count(const char *text, unsigned long long *ret, char **reterr);
/* A size in bytes: "10MB" -> 10000000, "512" -> 512, "1_000KB". */
int sb_parse_size(const char *text, unsigned long long *ret_bytes, char **reterr);
/* A duration in milliseconds: "5s" -> 5000, "250ms", "2m". A bare number is seconds. */
int sb_parse_duration(const char *text, unsigned long long *ret_ms, char **reterr);
