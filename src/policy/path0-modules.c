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

/* What an entry's name can be: nothing of interest, a module file (NAME.py,
 * NAME.pyc, NAME.so, NAME.<tag>.so; in __pycache__ NAME.<tag>.pyc) or a
 * package directory (a name without a dot). Decided on the name alone, so
 * that only the entries of an allowed module cost a system call: a data
 * directory of thousands of files beside the script is listed, not
 * stat()ed entry by entry. */
enum entry_kind { ENTRY_NONE, ENTRY_MODULE_FILE, ENTRY_PACKAGE_DIR };

static enum entry_kind entry_kind(const char *entry, bool in_cache, char name[NAME_MAX + 1])
{
	size_t n = strcspn(entry, "."), len = strlen(entry);

	if (n == 0 || len > NAME_MAX)
		return ENTRY_NONE;
	if (n == len) {
		if (in_cache || streq(entry, "__pycache__"))
			return ENTRY_NONE;
		memcpy(name, entry, n + 1);
		return ENTRY_PACKAGE_DIR;
	}
	if (!module_file(entry, in_cache, name))
		return ENTRY_NONE;
	return ENTRY_MODULE_FILE;
}

/* Whether the entry is what its name says: a directory for a package, a
 * regular file for a module, following a symbolic link as the import
 * machinery does. d_type answers without a system call on the filesystems
 * that fill it in; a link or DT_UNKNOWN takes a stat(). */
static bool entry_is(int dir_fd, const struct dirent *de, enum entry_kind kind)
{
	unsigned char type = de->d_type;
	struct stat st;

	if (type == DT_UNKNOWN || type == DT_LNK) {
		if (fstatat(dir_fd, de->d_name, &st, 0) < 0)
			return false;
		type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
	}
	return type == (kind == ENTRY_PACKAGE_DIR ? DT_DIR : DT_REG);
}

/* The expose-* tree of p that holds path (resolved), or NULL; writable: an
 * expose-rw one only. */
static const struct sb_expose_rule *exposed_under(const struct sb_profile *p, const char *path,
						  bool writable)
{
	for (size_t i = 0; i < p->n_exposes; i++)
		if (p->exposes[i].resolved && (!writable || p->exposes[i].writable) &&
		    sb_path_under(path, p->exposes[i].resolved))
			return &p->exposes[i];
	return NULL;
}

/* A symbolic link in sys.path[0] is followed when its module is granted: the
 * grant goes to its target, in every layer. In a directory the program may
 * write (an expose-rw tree), the program itself could have made the link on
 * an earlier run, "helper.py -> ~/.ssh/id_rsa" or a package "pkg -> /root",
 * to be granted its target by the next run's python-import=. Such a link is
 * followed only to what an expose-* rule grants anyway; elsewhere the run
 * stops (-EPERM) and says why. 0 when path is no link or harmless. */
static int check_link(const struct sb_profile *p, const char *path, char **reterr)
{
	const struct sb_expose_rule *rw = exposed_under(p, path, true);
	_cleanup_free_ char *target = NULL, *dir = NULL;
	struct stat st;

	if (!rw || lstat(path, &st) < 0 || !S_ISLNK(st.st_mode))
		return 0;
	target = realpath(path, NULL);
	if (!target)
		return 0; /* leads nowhere: nothing is granted */
	if (exposed_under(p, target, false))
		return 0;
	dir = sb_path_dirname(target);
	return sb_error(
	    reterr, -EPERM,
	    "%s, beside the script, is a symbolic link to %s, outside every expose-* rule, in a "
	    "directory the program may write (expose-rw=%s at %s:%u): a program could have made "
	    "it on an earlier run to be granted its target. Replace the link by the file, or "
	    "expose its target (expose-ro=%s)",
	    path, target, rw->path, rw->origin.file ? rw->origin.file : SB_ORIGIN_CLI,
	    rw->origin.line, dir ? dir : target);
}

/* Adds the entries of dir (cache: its __pycache__) that are files of an
 * allowed module, and (not cache) the directories of allowed packages. */
static int scan(const char *dir, bool cache, const struct sb_profile *p, const char *main_package,
		struct sb_strv_builder *found, char **reterr)
{
	_cleanup_free_ char *path = cache ? sb_path_join(dir, "__pycache__") : strdup(dir);
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (!path)
		return -ENOMEM;
	r = cache ? check_link(p, path, reterr) : 0;
	if (r < 0)
		return r;
	d = opendir(path);
	if (!d)
		return 0;
	while (r >= 0 && (de = readdir(d))) {
		char name[NAME_MAX + 1];
		enum entry_kind kind = entry_kind(de->d_name, cache, name);

		if (kind == ENTRY_NONE || !sb_path0_module_allowed(p, main_package, name) ||
		    !entry_is(dirfd(d), de, kind))
			continue;
		/* A builder: sys.path[0] may hold thousands of modules. */
		r = sb_strvb_consume(found, sb_path_join(path, de->d_name));
		if (r >= 0 && (de->d_type == DT_LNK || de->d_type == DT_UNKNOWN))
			r = check_link(p, found->v[found->n - 1], reterr);
	}
	closedir(d);
	return r;
}

bool sb_path0_module_is_file(const char *path)
{
	const char *base = strrchr(path, '/');

	return strchr(base ? base + 1 : path, '.') != NULL;
}

int sb_path0_modules(const char *dir, const struct sb_profile *p, const char *main_package,
		     char ***ret, char **reterr)
{
	struct sb_strv_builder f = {0};
	int r;

	r = scan(dir, false, p, main_package, &f, reterr);
	if (r >= 0)
		r = scan(dir, true, p, main_package, &f, reterr);
	if (r < 0) {
		sb_strv_free(f.v);
		return r;
	}
	if (f.v)
		qsort(f.v, f.n, sizeof(char *), cmp_str);
	*ret = f.v;
	return 0;
}
