/* SPDX-License-Identifier: MIT */
/* Replays fuzz corpus files through the fuzz entry point without libFuzzer, so
 * that every input the fuzzer ever kept is a regression test (systemd's
 * fuzz-main.c idea). Prints TAP. */
#include <dirent.h>
#include <stdint.h>

#include "tap.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		struct dirent *de;

		if (!d) {
			tap_ok(false, "open corpus %s", argv[i]);
			continue;
		}
		while ((de = readdir(d))) {
			_cleanup_free_ char *path = NULL, *data = NULL;
			size_t size = 0;

			if (de->d_name[0] == '.')
				continue;
			path = sb_path_join(argv[i], de->d_name);
			if (!path || sb_read_file(path, 1024 * 1024, &data, &size) < 0) {
				tap_ok(false, "read %s", de->d_name);
				continue;
			}
			LLVMFuzzerTestOneInput((const uint8_t *)data, size);
			tap_ok(true, "replayed %s (%zu bytes)", de->d_name, size);
		}
		closedir(d);
	}
	return tap_done();
}
