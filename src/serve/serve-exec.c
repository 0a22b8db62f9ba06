/* SPDX-License-Identifier: MIT */
/* serve-exec.h. The service is a binary of its own (python-sb-serve, in
 * libexec once installed; beside python-sb in a build tree), so that python-sb
 * itself does not load libmicrohttpd at every start. */
#include "serve-exec.h"

#include <limits.h>

#include "util.h"

int sb_serve_exec(int argc, char **argv, char **reterr)
{
	_cleanup_strv_free_ char **args = NULL;
	_cleanup_free_ char *sibling = NULL, *dir = NULL, *relative = NULL;
	char self[PATH_MAX];
	const char *serve = SB_SERVE_PATH;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int r;

	if (n <= 0)
		return sb_error(reterr, -errno, "cannot find python-sb itself: %s",
				strerror(errno));
	self[n] = '\0';
	dir = sb_path_dirname(self);
	sibling = dir ? sb_path_join(dir, "python-sb-serve") : NULL;
	relative = dir ? sb_path_join(dir, SB_SERVE_RELATIVE) : NULL;
	if (!sibling || !relative)
		return -ENOMEM;
	/* A build tree has it beside python-sb; an install (staged or moved
	 * with its prefix) where libexecdir is from bindir. */
	if (access(sibling, X_OK) == 0)
		serve = sibling;
	else if (access(relative, X_OK) == 0)
		serve = relative;
	r = sb_strv_push(&args, "python-sb serve");
	if (r >= 0)
		r = sb_strv_push(&args, "--python-sb");
	if (r >= 0)
		r = sb_strv_push(&args, self);
	for (int i = 2; r >= 0 && i < argc; i++)
		r = sb_strv_push(&args, argv[i]);
	if (r < 0)
		return r;
	execv(serve, args);
	return sb_error(reterr, -errno, "cannot start the service (%s): %s", serve,
			strerror(errno));
}
