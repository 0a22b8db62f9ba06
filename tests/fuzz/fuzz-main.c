/* SPDX-License-Identifier: MIT */
/* Replays fuzz corpus files through a fuzz target without libFuzzer, so that
 * every input the fuzzer ever kept is a regression test (systemd's
 * fuzz-main.c idea). Arguments are corpus directories or single files. A
 * target that finds a violated invariant aborts, which fails the test; with
 * the ASan build, so does any memory error. Prints TAP. */
#include <dirent.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "tap.h"
#include "util.h"

/* Optional in a target. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static void replay(const char *path, const char *name)
{
	_cleanup_free_ char *data = NULL;
	size_t size = 0;

	if (sb_read_file(path, 4 * 1024 * 1024, &data, &size) < 0) {
		tap_ok(false, "read %s", path);
		return;
	}
	/* Flushed first: if the input crashes the target, the log names it. */
	fflush(stdout);
	LLVMFuzzerTestOneInput((const uint8_t *)data, size);
	tap_ok(true, "replayed %s (%zu bytes)", name, size);
}

int main(int argc, char **argv)
{
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		struct dirent **entries = NULL;
		int n;

		if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode)) {
			replay(argv[i], argv[i]);
			continue;
		}
		/* Sorted: the same order on every run. */
		n = scandir(argv[i], &entries, NULL, alphasort);
		if (n < 0) {
			tap_ok(false, "open corpus %s", argv[i]);
			continue;
		}
		for (int k = 0; k < n; k++) {
			_cleanup_free_ char *path = NULL;

			if (entries[k]->d_name[0] != '.') {
				path = sb_path_join(argv[i], entries[k]->d_name);
				if (path)
					replay(path, entries[k]->d_name);
				else
					tap_ok(false, "out of memory");
			}
			free(entries[k]);
		}
		free(entries);
	}
	return tap_done();
}
