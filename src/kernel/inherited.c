/* SPDX-License-Identifier: MIT */
/* Descriptors and environment the caller hands python-sb (inherited.h).
 *
 * The environment: os.environ is built from the policy's copy, but the
 * caller's variables stay where execve put them, at the top of the stack,
 * readable through /proc/self/environ (which reads exactly that range) and
 * by any native code that scans memory; the launcher also kept a copy to
 * expand ${VAR} in the profile. Both are zeroed before the boundary. The
 * other way, re-executing python-sb with the filtered environment, leaves
 * nothing behind either but pays a second execve, dynamic loading and
 * launcher start (bench/README.md, "The caller's environment": about 0.6 ms,
 * 5 % of a `-c pass`, against a few microseconds here). What zeroing cannot
 * reach: the values the dynamic loader parsed for itself (LD_LIBRARY_PATH's
 * directories, GLIBC_TUNABLES) and what the profile's own ${VAR} expansions
 * made rules of. */
#include "inherited.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "util.h"

extern char **environ;

int sb_inherited_fd_named(const char *path)
{
	static const char *const prefixes[] = {"/dev/fd/", "/proc/self/fd/"};
	unsigned long long n;

	for (size_t i = 0; path && i < ELEMENTSOF(prefixes); i++) {
		const char *rest = startswith(path, prefixes[i]);

		if (rest && sb_safe_atou64(rest, &n) >= 0 && n <= INT32_MAX)
			return (int)n;
	}
	return -1;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int sb_inherited_close_fds(const int *keep, size_t n_keep, char **reterr)
{
	_cleanup_free_ int *sorted = calloc(n_keep + 1, sizeof(int));
	unsigned first = 3;

	if (!sorted)
		return -ENOMEM;
	if (n_keep) {
		memcpy(sorted, keep, n_keep * sizeof(int));
		qsort(sorted, n_keep, sizeof(int), cmp_int);
	}
	/* close_range() over the gaps between the descriptors kept. */
	for (size_t i = 0; i <= n_keep; i++) {
		unsigned last = i < n_keep ? (unsigned)sorted[i] : ~0U;

		if (i < n_keep && (sorted[i] < 3 || (unsigned)sorted[i] < first))
			continue; /* 0-2, or kept twice */
		if (last > first && close_range(first, last - 1, 0) < 0)
			return sb_error(reterr, -errno,
					"cannot close the inherited descriptors: %s",
					strerror(errno));
		if (last == ~0U)
			break;
		first = last + 1;
	}
	return 0;
}

/* [env_start, env_end) of /proc/self/stat (fields 50 and 51): when the
 * layout cannot be checked (something rewrote environ). */
static int env_block(uintptr_t *ret_start, uintptr_t *ret_end)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/stat", "re");
	char buf[1024], *p;
	unsigned long long v[2];
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	/* After "pid (comm)": comm may hold anything, the last ')' ends it. */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	/* Field 3 follows the ')'; skip to field 50. */
	for (int field = 2; field < 50 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu %llu", &v[0], &v[1]) != 2 || v[1] < v[0] ||
	    v[1] - v[0] > 64ULL << 20)
		return -EIO;
	*ret_start = (uintptr_t)v[0];
	*ret_end = (uintptr_t)v[1];
	return 0;
}

/* Where the block is without asking /proc (reading /proc/self/stat costs
 * some 40 us): execve lays out the argv strings, the environment strings and
 * the program's file name (AT_EXECFN) one after the other, so the block runs
 * from the end of argv to that name. Checked against environ, which still
 * points into it. */
static bool env_block_from_layout(const char *args_end, uintptr_t *ret_start, uintptr_t *ret_end)
{
	uintptr_t start = (uintptr_t)args_end, end = (uintptr_t)getauxval(AT_EXECFN);

	if (!start || !end || end <= start || end - start > 64u << 20)
		return false;
	for (char **e = environ; e && *e; e++)
		if ((uintptr_t)*e < start || (uintptr_t)*e >= end)
			return false;
	*ret_start = start;
	*ret_end = end;
	return true;
}

void sb_inherited_scrub_environment(char **host_env, const char *args_end)
{
	uintptr_t start, end;

	for (char **e = host_env; e && *e; e++)
		explicit_bzero(*e, strlen(*e));
	/* Where `environ` still points, in place, then the whole block. */
	for (char **e = environ; e && *e; e++)
		explicit_bzero(*e, strlen(*e));
	if (env_block_from_layout(args_end, &start, &end) || env_block(&start, &end) >= 0)
		if (end > start)
			explicit_bzero((void *)start, end - start);
}
