/* SPDX-License-Identifier: MIT */
#include "ipython.h"

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util.h"

bool sb_ipython_wanted(const char *argv0)
{
	const char *name = argv0 ? strrchr(argv0, '/') : NULL;

	name = name ? name + 1 : argv0;
	return name && (streq(name, "ipython-sb") || streq(name, "ipython3-sb"));
}

/* A string of ours for the command line. */
static int add_owned(struct sb_ipython *ipy, size_t *n, const char *prefix)
{
	char *s;

	if (asprintf(&s, "%s%s", prefix, ipy->dir) < 0)
		return -ENOMEM;
	if (sb_strv_consume(&ipy->owned, s) < 0)
		return -ENOMEM;
	ipy->argv[(*n)++] = s;
	return 0;
}

int sb_ipython_prepare(int argc, char **argv, struct sb_ipython *ret, char **reterr)
{
	const char *tmp = getenv("TMPDIR");
	struct sb_ipython ipy = {0};
	size_t n = 0;
	int i = 1, r = 0;

	if (asprintf(&ipy.dir, "%s/ipython-sb.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp") < 0)
		return -ENOMEM;
	if (!mkdtemp(ipy.dir)) {
		r = sb_error(reterr, -errno, "cannot make IPython's private directory %s: %m",
			     ipy.dir);
		sb_ipython_done(&ipy);
		return r;
	}
	/* argv, three grants, -m IPython, the NULL. */
	ipy.argv = calloc((size_t)argc + 6, sizeof(char *));
	if (!ipy.argv) {
		sb_ipython_done(&ipy);
		return -ENOMEM;
	}
	ipy.argv[n++] = argv[0];
	for (; i < argc && startswith(argv[i], "--"); i++) {
		if (streq(argv[i], "--")) {
			i++;
			break;
		}
		ipy.argv[n++] = argv[i];
		if (streq(argv[i], "--pysandboxes-config") && i + 1 < argc)
			ipy.argv[n++] = argv[++i];
	}
	r = add_owned(&ipy, &n, "--expose-rw=");
	if (r >= 0)
		r = add_owned(&ipy, &n, "--env=IPYTHONDIR=");
	if (r >= 0)
		r = add_owned(&ipy, &n, "--env=HOME=");
	if (r < 0) {
		sb_ipython_done(&ipy);
		return r;
	}
	ipy.argv[n++] = (char *)"-m";
	ipy.argv[n++] = (char *)"IPython";
	for (; i < argc; i++)
		ipy.argv[n++] = argv[i];
	ipy.argc = (int)n;
	*ret = ipy;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st _unused_, int flag,
			struct FTW *ftw _unused_)
{
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

int sb_ipython_watch(const struct sb_ipython *ipy)
{
	int fds[2];
	pid_t pid;

	if (!ipy->dir)
		return 0;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (pid == 0) {
		char c;

		/* A terminal's signals reach the whole group: outlive python-sb. */
		signal(SIGINT, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		close(fds[1]);
		while (read(fds[0], &c, 1) < 0 && errno == EINTR)
			;
		nftw(ipy->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		_exit(0);
	}
	/* Our end closes when python-sb ends, however it ends. */
	close(fds[0]);
	return 0;
}

void sb_ipython_done(struct sb_ipython *ipy)
{
	if (ipy->dir)
		nftw(ipy->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(ipy->dir);
	free(ipy->argv); /* its strings are borrowed or in owned */
	sb_strv_free(ipy->owned);
	*ipy = (struct sb_ipython){0};
}
