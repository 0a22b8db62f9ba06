/* SPDX-License-Identifier: MIT */
#include "ipython.h"

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "api-registry.h"
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

int sb_ipython_prepare(int argc, char **argv, struct sb_ipython *ret)
{
	struct sb_ipython ipy = {.wanted = true, .args = argv, .n_args = argc};
	int i = 1;

	for (; i < argc && startswith(argv[i], "--") && !streq(argv[i], "--"); i++)
		if (streq(argv[i], "--pysandboxes-config") && i + 1 < argc)
			i++;
	ipy.n_options = i - 1;
	ipy.first_rest = i < argc && streq(argv[i], "--") ? i + 1 : i;
	*ret = ipy;
	return sb_ipython_build(ret, SB_IPYTHON_PLAIN, NULL);
}

/* The threads of IPython's history and its event loop. */
static bool allows_threads(const struct sb_profile *p)
{
	const struct sb_api_function *start = sb_api_lookup("threading.Thread.start");

	return start && sb_api_is_allowed(p->apis, p->n_apis, start, NULL);
}

static bool allows_ipython(const struct sb_profile *p)
{
	if (p->import_all)
		return true;
	for (size_t i = 0; i < p->n_imports; i++)
		if (streq(p->imports[i].name, "IPython"))
			return true;
	return false;
}

/* env=IPYTHONDIR=<dir> with an expose-rw= grant of dir (or above it). */
static bool declares_ipython_dir(const struct sb_profile *p)
{
	const char *dir = NULL;

	for (size_t i = 0; i < p->n_envs; i++)
		if (!p->envs[i].is_pattern && p->envs[i].kind == SB_ENV_LITERAL &&
		    streq(p->envs[i].name, "IPYTHONDIR"))
			dir = p->envs[i].value;
	if (!dir || dir[0] != '/')
		return false;
	for (size_t i = 0; i < p->n_exposes; i++) {
		const struct sb_expose_rule *e = &p->exposes[i];
		const char *granted = e->resolved ? e->resolved : e->path;
		const char *rest = e->writable ? startswith(dir, granted) : NULL;

		if (rest && (!*rest || *rest == '/' || streq(granted, "/")))
			return true;
	}
	return false;
}

enum sb_ipython_choice sb_ipython_decide(const struct sb_profile *p, bool installed, bool learning,
					 const char **ret_reason)
{
	*ret_reason = NULL;
	if (p->learn_locked && !declares_ipython_dir(p)) {
		*ret_reason = "learn=false refuses the command-line grants of IPython's "
			      "private directory (declare env=IPYTHONDIR=<dir> and "
			      "expose-rw=<dir> in the profile to use IPython)";
		return SB_IPYTHON_PLAIN;
	}
	if (!learning && !allows_ipython(p)) {
		*ret_reason = "python-import= does not allow IPython";
		return SB_IPYTHON_PLAIN;
	}
	if (!learning && !allows_threads(p)) {
		*ret_reason = "python-api= does not allow threads, which IPython needs "
			      "(python-api=ALLOW:threads)";
		return SB_IPYTHON_PLAIN;
	}
	if (!installed) {
		*ret_reason = "IPython is not installed for this interpreter";
		return SB_IPYTHON_PLAIN;
	}
	return p->learn_locked ? SB_IPYTHON_DECLARED : SB_IPYTHON_PRIVATE;
}

bool sb_ipython_installed(char *const *dirs)
{
	for (char *const *d = dirs; d && *d; d++) {
		_cleanup_free_ char *init = NULL;

		if (asprintf(&init, "%s/IPython/__init__.py", *d) < 0)
			return false;
		if (access(init, F_OK) == 0)
			return true;
	}
	return false;
}

int sb_ipython_build(struct sb_ipython *ipy, enum sb_ipython_choice choice, char **reterr)
{
	const char *tmp = getenv("TMPDIR");
	size_t n = 0;
	int r = 0;

	free(ipy->argv);
	/* argv0, the options, three grants, -m IPython, the rest, the NULL. */
	ipy->argv = calloc((size_t)ipy->n_args + 6, sizeof(char *));
	if (!ipy->argv)
		return -ENOMEM;
	ipy->argv[n++] = ipy->args[0];
	for (int i = 1; i <= ipy->n_options; i++)
		ipy->argv[n++] = ipy->args[i];
	if (choice == SB_IPYTHON_PRIVATE && !ipy->dir) {
		if (asprintf(&ipy->dir, "%s/ipython-sb.XXXXXX",
			     tmp && tmp[0] == '/' ? tmp : "/tmp") < 0) {
			ipy->dir = NULL;
			return -ENOMEM;
		}
		if (!mkdtemp(ipy->dir)) {
			r = sb_error(reterr, -errno,
				     "cannot make IPython's private directory %s: %m", ipy->dir);
			free(ipy->dir);
			ipy->dir = NULL;
			return r;
		}
	}
	if (choice == SB_IPYTHON_PRIVATE) {
		r = add_owned(ipy, &n, "--expose-rw=");
		if (r >= 0)
			r = add_owned(ipy, &n, "--env=IPYTHONDIR=");
		if (r >= 0)
			r = add_owned(ipy, &n, "--env=HOME=");
		if (r < 0)
			return r;
	}
	if (choice != SB_IPYTHON_PLAIN) {
		ipy->argv[n++] = (char *)"-m";
		ipy->argv[n++] = (char *)"IPython";
		for (int i = ipy->first_rest; i < ipy->n_args; i++)
			ipy->argv[n++] = ipy->args[i];
	}
	ipy->argc = (int)n;
	ipy->runs_ipython = choice != SB_IPYTHON_PLAIN;
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
