/* SPDX-License-Identifier: MIT */
#include "path0-modules.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

bool sb_path0_module_allowed(const struct sb_profile *p, const char *main_package, const char *name)
{
	if (p->import_all || streq(name, "pysandboxes") ||
	    (main_package && streq(name, main_package)))
		return true;
	for (size_t i = 0; i < p->n_imports; i++)
		if (streq(p->imports[i].name, name))
			return true;
	return false;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && streq(s + n - k, suffix);
}

/* The module a file of a sys.path entry holds: NAME.py, NAME.pyc, NAME.so
 * and NAME.<tag>.so (an extension), and in __pycache__ NAME.<tag>.pyc. */
static bool module_file(const char *entry, bool in_cache, char name[NAME_MAX + 1])
{
	size_t n = strcspn(entry, "."), len = strlen(entry);

	if (n == 0 || n == len)
		return false;
	if (!(in_cache ? has_suffix(entry, ".pyc")
		       : (has_suffix(entry, ".py") || has_suffix(entry, ".pyc") ||
			  has_suffix(entry, ".so"))))
		return false;
	/* A source or bytecode file names its module with one dot only. */
	if (!in_cache && !has_suffix(entry, ".so") && strchr(entry + n + 1, '.'))
		return false;
	memcpy(name, entry, n);
	name[n] = '\0';
	return true;
}

/* Adds the entries of dir (cache: its __pycache__) that are files of an
 * allowed module, and (not cache) the directories of allowed packages. */
static int scan(const char *dir, bool cache, const struct sb_profile *p, const char *main_package,
		char ***v)
{
	_cleanup_free_ char *path = cache ? sb_path_join(dir, "__pycache__") : strdup(dir);
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (!path)
		return -ENOMEM;
	d = opendir(path);
	if (!d)
		return 0;
	while (r >= 0 && (de = readdir(d))) {
		char name[NAME_MAX + 1];
		struct stat st;
		bool is_dir;

		if (de->d_name[0] == '.')
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, 0) < 0)
			continue;
		is_dir = S_ISDIR(st.st_mode);
		if (is_dir &&
		    (cache || strchr(de->d_name, '.') || streq(de->d_name, "__pycache__")))
			continue;
		if (is_dir)
			snprintf(name, sizeof(name), "%s", de->d_name);
		else if (!S_ISREG(st.st_mode) || !module_file(de->d_name, cache, name))
			continue;
		if (!sb_path0_module_allowed(p, main_package, name))
			continue;
		_cleanup_free_ char *full = sb_path_join(path, de->d_name);

		r = full ? sb_strv_push(v, full) : -ENOMEM;
	}
	closedir(d);
	return r;
}

int sb_path0_modules(const char *dir, const struct sb_profile *p, const char *main_package,
		     char ***ret)
{
	_cleanup_strv_free_ char **v = NULL;
	int r;

	r = scan(dir, false, p, main_package, &v);
	if (r >= 0)
		r = scan(dir, true, p, main_package, &v);
	if (r < 0)
		return r;
	if (v)
		qsort(v, sb_strv_length(v), sizeof(char *), cmp_str);
	*ret = TAKE_PTR(v);
	return 0;
}
