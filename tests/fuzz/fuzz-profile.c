/* SPDX-License-Identifier: MIT */
/* libFuzzer entry for the profile parser: any bytes, one file, no crash, no
 * leak, no undefined behaviour. Includes are resolved relative to a private
 * empty directory so that fuzzed input cannot pull in real files; the
 * directory is removed at exit (fuzz.h). */
#include <unistd.h>

#include "fuzz.h"
#include "profile.h"
#include "provider.h"

static const char *no_env(const char *name _unused_, void *userdata _unused_)
{
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_(sb_profile_freep) struct sb_profile *p = NULL;
	struct sb_diags diags = {0};
	struct sb_load_options opts;
	const char *dir = fuzz_tmpdir();
	int r;

	if (size > 64 * 1024 || !dir)
		return 0;
	path = fuzz_write_file("profile", data, size);
	if (!path)
		return 0;
	opts = (struct sb_load_options){
	    .path = path, .getenv = no_env, .cwd = dir, .home = dir, .max_include_depth = 4};
	r = sb_profile_load(&opts, &p, &diags);
	/* As the launcher does: a profile with syntax errors is checked too. */
	if ((r >= 0 || r == -EINVAL) && p) {
		r = sb_profile_check(p, &opts, &diags);
		if (r >= 0 || r == -EINVAL)
			(void)sb_provider_check_params(p, &diags);
	}
	sb_diags_sort(&diags);
	sb_diags_done(&diags);
	unlink(path);
	return 0;
}
