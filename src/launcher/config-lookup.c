/* SPDX-License-Identifier: MIT */
#include "config-lookup.h"

#include <sys/stat.h>

#include "util.h"

#define SB_PROFILE_NAME ".py-sandboxes"

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The directory holding module "a.b.c" under one sys.path entry: that of
 * a/b/c.py, or the package directory a/b/c itself (namespace packages too). */
static bool is_dangling_link(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && stat(path, &st) < 0 &&
	       errno == ENOENT;
}

static char *module_dir_in(const char *entry, const char *module)
{
	_cleanup_free_ char *rel = strdup(module), *base = NULL, *py = NULL;

	if (!rel)
		return NULL;
	for (char *c = rel; *c; c++)
		if (*c == '.')
			*c = '/';
	base = sb_path_join(entry, rel);
	if (!base)
		return NULL;
	if (is_dir(base))
		return TAKE_PTR(base);
	if (asprintf(&py, "%s.py", base) < 0) {
		py = NULL;
		return NULL;
	}
	if (is_file(py))
		return sb_path_dirname(base);
	return strdup("");
}

static int try_profile_in(const char *dir, char **ret)
{
	_cleanup_free_ char *candidate = sb_path_join(dir, SB_PROFILE_NAME);

	if (!candidate)
		return -ENOMEM;
	/* A link to nothing is chosen too: the loader then stops on it,
	 * where passing over it would fall back to ./.py-sandboxes, or to
	 * learning mode (no confinement) when that is missing. */
	if (!is_file(candidate) && !is_dangling_link(candidate))
		return 0;
	*ret = TAKE_PTR(candidate);
	return 1;
}

/* The order of sys.path: the current directory (unless -P/-I), PYTHONPATH,
 * then the site directories. */
static int module_entries(const struct sb_cli *cli, const struct sb_lookup_env *env, char ***ret)
{
	_cleanup_strv_free_ char **entries = NULL;
	int r;

	if (!cli->safe_path && (r = sb_strv_push(&entries, env->cwd)) < 0)
		return r;
	if (env->pythonpath) {
		_cleanup_free_ char *copy = strdup(env->pythonpath);
		char *save = NULL;

		if (!copy)
			return -ENOMEM;
		for (char *e = strtok_r(copy, ":", &save); e; e = strtok_r(NULL, ":", &save))
			if ((r = sb_strv_push(&entries, e)) < 0)
				return r;
	}
	for (char *const *s = env->site_dirs; s && *s; s++)
		if ((r = sb_strv_push(&entries, *s)) < 0)
			return r;
	*ret = TAKE_PTR(entries);
	return 0;
}

/* The directory of the first sys.path entry that has the module; "" when
 * none has it; NULL on OOM. */
static char *module_dir(const struct sb_cli *cli, const struct sb_lookup_env *env)
{
	_cleanup_strv_free_ char **entries = NULL;

	if (module_entries(cli, env, &entries) < 0)
		return NULL;
	for (char **e = entries; e && *e; e++) {
		char *dir = module_dir_in(*e, cli->target);

		/* The first entry that has the module is the one Python will use. */
		if (!dir || *dir != '\0')
			return dir;
		free(dir);
	}
	return strdup("");
}

static int locate_module(const struct sb_cli *cli, const struct sb_lookup_env *env, char **ret)
{
	_cleanup_free_ char *dir = module_dir(cli, env);

	if (!dir)
		return -ENOMEM;
	if (*dir == '\0')
		return 0;
	return try_profile_in(dir, ret);
}

int sb_config_locate(const struct sb_cli *cli, const struct sb_lookup_env *env, char **ret)
{
	int r = 0;

	if (cli->config_path) {
		*ret = strdup(cli->config_path);
		return *ret ? 0 : -ENOMEM;
	}
	if (cli->mode == SB_RUN_SCRIPT && cli->target && !streq(cli->target, "-")) {
		_cleanup_free_ char *abs = NULL, *norm = NULL, *dir = NULL;

		/* Absolute, so that messages name the file whatever the cwd. */
		abs = cli->target[0] == '/' ? strdup(cli->target)
					    : sb_path_join(env->cwd, cli->target);
		norm = abs ? sb_path_normalize(abs) : NULL;
		dir = norm ? sb_path_dirname(norm) : NULL;
		if (!dir)
			return -ENOMEM;
		r = try_profile_in(dir, ret);
	} else if (cli->mode == SB_RUN_MODULE && cli->target) {
		r = locate_module(cli, env, ret);
	}
	if (r != 0)
		return r < 0 ? r : 0;
	*ret = sb_path_join(env->cwd, SB_PROFILE_NAME);
	return *ret ? 0 : -ENOMEM;
}

int sb_config_shadowing(const struct sb_cli *cli, const struct sb_lookup_env *env,
			const char *chosen, char **ret)
{
	_cleanup_free_ char *dir = NULL, *candidate = NULL;

	*ret = NULL;
	if (cli->config_path)
		return 0;
	if (cli->mode == SB_RUN_SCRIPT && cli->target && !streq(cli->target, "-")) {
		_cleanup_free_ char *abs = cli->target[0] == '/'
					       ? strdup(cli->target)
					       : sb_path_join(env->cwd, cli->target);
		_cleanup_free_ char *norm = abs ? sb_path_normalize(abs) : NULL;

		dir = norm ? sb_path_dirname(norm) : NULL;
		if (!dir)
			return -ENOMEM;
	} else if (cli->mode == SB_RUN_MODULE && cli->target) {
		dir = module_dir(cli, env);
		if (!dir)
			return -ENOMEM;
		if (*dir == '\0')
			return 0;
	} else {
		return 0;
	}
	candidate = sb_path_join(dir, SB_PROFILE_NAME);
	if (!candidate)
		return -ENOMEM;
	if (!streq(candidate, chosen) && !is_file(candidate))
		*ret = TAKE_PTR(candidate);
	return 0;
}
