/* SPDX-License-Identifier: MIT */
#include <ftw.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "util.h"

static char tmpdir[4096];

static int remove_entry(const char *path, const struct stat *st _unused_, int flag _unused_,
			struct FTW *ftw _unused_)
{
	remove(path);
	return 0;
}

static void remove_tmpdir(void)
{
	if (tmpdir[0])
		nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	tmpdir[0] = '\0';
}

const char *fuzz_tmpdir(void)
{
	const char *base = getenv("TMPDIR");

	if (tmpdir[0])
		return tmpdir;
	if (!base || base[0] != '/')
		base = "/tmp";
	if ((size_t)snprintf(tmpdir, sizeof(tmpdir), "%s/sb-fuzz-XXXXXX", base) >= sizeof(tmpdir) ||
	    !mkdtemp(tmpdir)) {
		tmpdir[0] = '\0';
		return NULL;
	}
	atexit(remove_tmpdir);
	return tmpdir;
}

char *fuzz_write_file(const char *name, const void *data, size_t size)
{
	const char *dir = fuzz_tmpdir();
	char *path = dir ? sb_path_join(dir, name) : NULL;
	FILE *f = path ? fopen(path, "we") : NULL;

	if (!f) {
		free(path);
		return NULL;
	}
	if (fwrite(data, 1, size, f) != size) {
		fclose(f);
		unlink(path);
		free(path);
		return NULL;
	}
	fclose(f);
	return path;
}

/* Undefined behaviour is a finding like a memory error: stop at the first
 * report, so that libFuzzer records the input and the replay test fails. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}
