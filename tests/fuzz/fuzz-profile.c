/* SPDX-License-Identifier: MIT */
/* libFuzzer entry for the profile parser: any bytes, one file, no crash, no
 * leak, no undefined behaviour. Includes are resolved relative to a private
 * empty directory so that fuzzed input cannot pull in real files. */
#include <stdint.h>
#include <sys/stat.h>

#include "profile.h"
#include "provider.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *no_env(const char *name _unused_, void *userdata _unused_)
{
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[] = "/tmp/sb-fuzz-XXXXXX";
	static bool have_dir;
	_cleanup_free_ char *path = NULL;
	_cleanup_(sb_profile_freep) struct sb_profile *p = NULL;
	struct sb_diags diags = {0};
	struct sb_load_options opts;
	FILE *f;

	if (size > 64 * 1024)
		return 0;
	if (!have_dir) {
		if (!mkdtemp(dir))
			return 0;
		have_dir = true;
	}
	path = sb_path_join(dir, "profile");
	if (!path)
		return 0;
	f = fopen(path, "we");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);

	opts = (struct sb_load_options){
	    .path = path, .getenv = no_env, .cwd = dir, .home = dir, .max_include_depth = 4};
	if (sb_profile_load(&opts, &p, &diags) == 0) {
		(void)sb_profile_check(p, &opts, &diags);
		(void)sb_provider_check_params(p, &diags);
	}
	sb_diags_sort(&diags);
	sb_diags_done(&diags);
	unlink(path);
	return 0;
}
