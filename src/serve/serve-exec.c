/* SPDX-License-Identifier: MIT */
/* serve-exec.h. The service is a binary of its own (python-sb-serve, in
 * libexec once installed; beside python-sb in a build tree), so that python-sb
 * itself does not load libmicrohttpd at every start. */
#include "serve-exec.h"

#include <limits.h>

#include "libexec.h"
#include "util.h"

int sb_serve_exec(int argc, char **argv, char **reterr)
{
	_cleanup_strv_free_ char **args = NULL;
	_cleanup_free_ char *serve = NULL;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int r;

	if (n <= 0)
		return sb_error(reterr, -errno, "cannot find python-sb itself: %s",
				strerror(errno));
	self[n] = '\0';
	r = sb_libexec_find(self, "python-sb-serve", SB_SERVE_RELATIVE, SB_SERVE_PATH, X_OK,
			    &serve);
	if (r == -ENOMEM)
		return r;
	/* Not found: execv() below names the path it expected. */
	if (r < 0 && !(serve = strdup(SB_SERVE_PATH)))
		return -ENOMEM;
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
