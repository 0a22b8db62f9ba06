/* SPDX-License-Identifier: MIT */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Ownership helpers in the systemd/bubblewrap style: a variable declared with
 * _cleanup_free_ is released on every return path, TAKE_PTR hands it out. */
#define _cleanup_(f)	    __attribute__((cleanup(f)))
#define _cleanup_free_	    _cleanup_(sb_freep)
#define _cleanup_fclose_    _cleanup_(sb_fclosep)
#define _cleanup_close_	    _cleanup_(sb_closep)
#define _cleanup_strv_free_ _cleanup_(sb_strv_freep)
#define _unused_	    __attribute__((unused))
#define _printf_(a, b)	    __attribute__((format(printf, a, b)))

#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p = (p);                                                            \
		(p) = NULL;                                                                        \
		_p;                                                                                \
	})
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd = (fd);                                                                    \
		(fd) = -1;                                                                         \
		_fd;                                                                               \
	})

/* AddressSanitizer reserves terabytes of shadow address space: an
 * address-space limit cannot be applied to an instrumented build. */
#if defined(__SANITIZE_ADDRESS__)
#define SB_HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SB_HAVE_ASAN 1
#endif
#endif

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

static inline void sb_freep(void *p)
{
	free(*(void **)p);
}

static inline void sb_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

/* Closes *fd if open and marks it closed (-1): a cleanup, or a pipe ended
 * early whose variable is looked at again. */
static inline void sb_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static inline bool streq(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static inline const char *startswith(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);
	return strncmp(s, prefix, n) == 0 ? s + n : NULL;
}

/* NULL-terminated string vectors. */
void sb_strv_free(char **v);
static inline void sb_strv_freep(char ***v)
{
	sb_strv_free(*v);
}
size_t sb_strv_length(char *const *v);
/* CLOCK_MONOTONIC in nanoseconds: deadlines and durations must not move
 * with a wall clock step (NTP, date -s). */
static inline uint64_t sb_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}
static inline struct timespec sb_ns_to_timespec(uint64_t ns)
{
	return (struct timespec){
	    .tv_sec = (time_t)(ns / 1000000000ULL),
	    .tv_nsec = (long)(ns % 1000000000ULL),
	};
}
static inline uint64_t sb_monotonic_ms(void)
{
	return sb_monotonic_ns() / 1000000;
}

/* Appends a copy of s; 0 or -ENOMEM. */
int sb_strv_push(char ***v, const char *s);
/* Appends s itself, taking ownership even on failure; 0 or -ENOMEM. */
int sb_strv_consume(char ***v, char *s);
/* Appends the formatted text; 0 or -ENOMEM. */
int sb_strv_pushf(char ***v, const char *fmt, ...) _printf_(2, 3);
int sb_strv_vpushf(char ***v, const char *fmt, va_list ap) _printf_(2, 0);
/* A string vector built by many appends (a wrapper's command line: hundreds
 * of words), its length and capacity kept, where sb_strv_push() counts the
 * vector on every append. v is NULL or NULL-terminated throughout; the
 * owner frees it with sb_strv_free(b.v) or takes it. */
struct sb_strv_builder {
	char **v;
	size_t n, cap;
};
/* As sb_strv_consume(), sb_strv_push(), sb_strv_pushf(); 0 or -ENOMEM. */
int sb_strvb_consume(struct sb_strv_builder *b, char *s);
int sb_strvb_push(struct sb_strv_builder *b, const char *s);
int sb_strvb_pushf(struct sb_strv_builder *b, const char *fmt, ...) _printf_(2, 3);
/* Appends a copy of each argument up to NULL; 0 or -ENOMEM. */
int sb_strvb_add(struct sb_strv_builder *b, ...) __attribute__((sentinel));
/* Appends each non-empty entry of a colon-separated list (PATH, PYTHONPATH;
 * NULL: none); 0 or -ENOMEM. */
int sb_strv_push_split(char ***v, const char *list);
bool sb_strv_contains(char *const *v, const char *s);
/* The value of NAME in a NAME=VALUE list (an environment), or NULL. */
const char *sb_strv_env_get(char *const *env, const char *name);
/* Whether path is dir or below it, lexically (dir may end in '/', or be "/"). */
bool sb_path_under(const char *path, const char *dir);

/* Growable byte buffer used to build strings without asprintf chains. */
struct sb_buf {
	char *data;
	size_t len;
	size_t cap;
};
int sb_buf_putn(struct sb_buf *b, const char *s, size_t n);
int sb_buf_puts(struct sb_buf *b, const char *s);
int sb_buf_putc(struct sb_buf *b, char c);
int sb_buf_printf(struct sb_buf *b, const char *fmt, ...) _printf_(2, 3);
/* Hands out the NUL-terminated string and resets the buffer. */
char *sb_buf_steal(struct sb_buf *b);
void sb_buf_reset(struct sb_buf *b);

/* Formats a message into *reterr (when reterr is not NULL) for the caller to
 * show, and returns r (or -ENOMEM when the message cannot be allocated). */
int sb_error(char **reterr, int r, const char *fmt, ...) _printf_(3, 4);

/* Trims ASCII white space in place; returns the start of the trimmed text. */
char *sb_strstrip(char *s);
/* A copy of s fit for one line of a rule file's comment or of a message: the
 * names in it may be a program's choice, and a newline would start a line of
 * its own, an escape sequence would speak to the terminal. Control characters
 * become \xNN, '\' becomes '\\'. NULL on OOM. */
char *sb_str_one_line(const char *s);

/* Linear-time single-'*' glob (the profile's wildcard: no '?', no classes). */
bool sb_glob_star_match(const char *pattern, const char *text);

/* Parses a decimal unsigned integer that fills the whole string. */
int sb_safe_atou64(const char *s, unsigned long long *ret);

/* Reads a whole file (at most max_size bytes); 0 or -errno (-EFBIG when larger). */
int sb_read_file(const char *path, size_t max_size, char **ret, size_t *ret_size);

/* A memory file (close-on-exec) holding len bytes of data, at offset 0: the
 * descriptor, or -errno. */
int sb_memfd_with(const char *name, const void *data, size_t len);
/* The same with more memfd_create() flags (MFD_ALLOW_SEALING). */
int sb_memfd_with_flags(const char *name, const void *data, size_t len, unsigned flags);

/* Joins dir and name with one '/'; NULL on OOM. */
char *sb_path_join(const char *dir, const char *name);
/* Directory part of a path ("." when there is none); NULL on OOM. */
char *sb_path_dirname(const char *path);
/* Lexically normalises an absolute path: removes ".", "..", repeated '/'. */
char *sb_path_normalize(const char *path);

/* The candidate closest to word by Levenshtein distance, for "did you mean"
 * hints; NULL when none is within max_distance (ties: the first one). */
const char *sb_closest_name(const char *word, const char *const *candidates, size_t n,
			    size_t max_distance);
