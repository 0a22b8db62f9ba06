/* SPDX-License-Identifier: MIT */
#include "wrap-common.h"

#include <fts.h>
#include <limits.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/stat.h>

#include "file-policy.h"
#include "path0-modules.h"

/* Where Debian installs bubblewrap and firejail, when PATH is unset. */
#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* The last binary found: the provider's probe and its command line look for
 * the same one in the same PATH, one after the other. */
static struct {
	char *name, *path_env, *found;
} last_found;

static void remember_found(const char *name, const char *path_env, const char *found)
{
	free(last_found.name);
	free(last_found.path_env);
	free(last_found.found);
	last_found.name = strdup(name);
	last_found.path_env = strdup(path_env);
	last_found.found = strdup(found);
	if (!last_found.name || !last_found.path_env || !last_found.found) {
		free(last_found.name);
		free(last_found.path_env);
		free(last_found.found);
		last_found.name = last_found.path_env = last_found.found = NULL;
	}
}

/* Whether path and every directory above it (path resolved) is one only
 * root or the caller can change: owned by one of them, and not writable by
 * every user (a sticky directory, /tmp, aside: nobody replaces another's
 * entry there). Else -EPERM naming the first that is not. */
static int owned_by_trusted(const char *name, const char *found, const char *path, char **reterr)
{
	char cur[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(cur))
		return -ENAMETOOLONG;
	memcpy(cur, path, len + 1);
	for (;;) {
		struct stat st;
		char *slash;

		if (lstat(cur, &st) < 0)
			return sb_error(reterr, -errno, "cannot check %s: %s", cur,
					strerror(errno));
		if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
		    ((st.st_mode & S_IWOTH) && !(S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX))))
			return sb_error(
			    reterr, -EPERM,
			    "%s was found at %s, and %s can be changed by another user (%s): "
			    "what python-sb runs outside the sandbox must be root's or yours. Take "
			    "that directory out of PATH",
			    name, found, cur,
			    st.st_mode & S_IWOTH ? "writable by every user"
						 : "owned by another user");
		if (streq(cur, "/"))
			return 0;
		slash = strrchr(cur, '/');
		slash[slash == cur ? 1 : 0] = '\0';
	}
}

/* A binary python-sb runs outside the sandbox (the tool, qemu, xz...) must
 * not be one the program could have put on PATH on an earlier run: none in
 * an expose-rw tree of the profile (p may be NULL: the probe), none another
 * user may change. 0 or -EPERM with *reterr saying what to change. */
static int check_trusted(const char *name, const char *candidate, const struct sb_profile *p,
			 char **reterr)
{
	_cleanup_free_ char *real = realpath(candidate, NULL), *dir = sb_path_dirname(candidate),
			    *real_dir = NULL;
	int r;

	if (!real || !dir)
		return errno == ENOMEM
			   ? -ENOMEM
			   : sb_error(reterr, -errno, "%s: %s", candidate, strerror(errno));
	real_dir = realpath(dir, NULL);
	if (!real_dir)
		return sb_error(reterr, -errno, "%s: %s", dir, strerror(errno));
	for (size_t i = 0; p && i < p->n_exposes; i++) {
		const struct sb_expose_rule *e = &p->exposes[i];

		if (!e->writable || !e->resolved ||
		    !(sb_path_under(real, e->resolved) || sb_path_under(real_dir, e->resolved)))
			continue;
		return sb_error(
		    reterr, -EPERM,
		    "%s was found on PATH at %s, inside expose-rw=%s (%s:%u): the "
		    "program may write there, and could have put it there on an earlier "
		    "run for python-sb to run outside the sandbox. Take that directory "
		    "out of PATH",
		    name, candidate, e->path, e->origin.file ? e->origin.file : SB_ORIGIN_CLI,
		    e->origin.line);
	}
	r = owned_by_trusted(name, candidate, real, reterr);
	return r < 0 ? r : owned_by_trusted(name, candidate, real_dir, reterr);
}

int sb_wrap_find_binary(const char *name, const char *package, const char *path_env,
			const struct sb_profile *p, char **ret, char **reterr)
{
	_cleanup_free_ char *dirs = NULL;
	char *save = NULL;
	int r;

	if (!path_env || !*path_env)
		path_env = DEFAULT_PATH;
	/* Still there, as a moment ago (a removed binary: searched again). */
	if (last_found.found && streq(last_found.name, name) &&
	    streq(last_found.path_env, path_env) && access(last_found.found, X_OK) == 0) {
		r = check_trusted(name, last_found.found, p, reterr);
		if (r < 0)
			return r;
		*ret = strdup(last_found.found);
		return *ret ? 0 : -ENOMEM;
	}
	dirs = strdup(path_env);
	if (!dirs)
		return -ENOMEM;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		_cleanup_free_ char *candidate = NULL;
		struct stat st;

		/* A relative PATH entry would depend on the cwd: skipped. */
		if (d[0] != '/')
			continue;
		candidate = sb_path_join(d, name);
		if (!candidate)
			return -ENOMEM;
		if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(candidate, X_OK) == 0) {
			r = check_trusted(name, candidate, p, reterr);
			if (r < 0)
				return r;
			remember_found(name, path_env, candidate);
			*ret = TAKE_PTR(candidate);
			return 0;
		}
	}
	return sb_error(reterr, -ENOENT,
			"%s is not installed (not found in %s): install the Debian package %s "
			"(apt-get install %s)",
			name, path_env, package, package);
}

int sb_wrap_probe_binary(const char *name, const char *package, char **reterr)
{
	_cleanup_free_ char *path = NULL;

	return sb_wrap_find_binary(name, package, getenv("PATH"), NULL, &path, reterr);
}

int sb_argv_add(char ***argv, ...)
{
	va_list ap;
	int r = 0;

	va_start(ap, argv);
	for (const char *s; r >= 0 && (s = va_arg(ap, const char *));)
		r = sb_strv_push(argv, s);
	va_end(ap);
	return r;
}

const char *sb_wrap_too_many_grants_hint(const struct sb_boundary *b)
{
	size_t modules = 0;

	for (size_t i = 0; i < b->n_paths; i++)
		if (streq(b->path_reasons[i], SB_PATH0_MODULE_WHY))
			modules++;
	return 2 * modules > b->n_paths
		   ? "most of them are modules python-import= allows beside the script "
		     "(sys.path[0]): name the modules the program imports instead of "
		     "python-import=*, or give the script a directory of its own"
		   : "narrow the expose-* rules (ignore= in a large exposed directory adds "
		     "one per match)";
}

const char *sb_wrap_param(const struct sb_profile *p, enum sb_os_sandbox provider, const char *key)
{
	const char *value = NULL;

	for (size_t i = 0; i < p->n_params; i++)
		if (p->params[i].os_sandbox == provider && streq(p->params[i].key, key))
			value = p->params[i].value;
	return value;
}

bool sb_wrap_param_true(const char *value)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};

	for (size_t i = 0; value && i < ELEMENTSOF(yes); i++)
		if (strcasecmp(value, yes[i]) == 0)
			return true;
	return false;
}

void sb_wrap_ignored_done(struct sb_wrap_ignored_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->items[i].path);
	free(s->items);
	*s = (struct sb_wrap_ignored_set){0};
}

struct walk {
	const struct sb_file_policy *fp;
	struct sb_wrap_ignored_set *set;
	size_t walked;
	char **reterr;
};

static bool already(const struct sb_wrap_ignored_set *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (sb_path_under(path, s->items[i].path))
			return true;
	return false;
}

static int add_ignored(struct walk *w, const char *path, bool dir, bool in_writable,
		       const char *under)
{
	struct sb_wrap_ignored *items;
	char *copy;

	if (already(w->set, path))
		return 0;
	if (w->set->n >= SB_WRAP_MAX_IGNORED)
		return sb_error(w->reterr, -E2BIG,
				"ignore= hides more than %d existing paths in the exposed "
				"directories, each a mount of its own: narrow the patterns or the "
				"expose-* rules",
				SB_WRAP_MAX_IGNORED);
	copy = strdup(path);
	items = realloc(w->set->items, (w->set->n + 1) * sizeof(*items));
	if (items)
		w->set->items = items;
	if (!copy || !items) {
		free(copy);
		return -ENOMEM;
	}
	w->set->items[w->set->n++] = (struct sb_wrap_ignored){
	    .path = copy, .dir = dir, .in_writable = in_writable, .under = under};
	return 0;
}

/* Whether a path below the walk's root can still lead to a match of the
 * literal prefix of an absolute pattern (NULL: every path can). */
static bool may_lead_to(const char *path, const char *prefix)
{
	size_t n = strlen(path);

	return !prefix || startswith(path, prefix) ||
	       (strncmp(prefix, path, n) == 0 && prefix[n] == '/');
}

/* One tree, without following links; root itself is never hidden. */
static int walk_tree(struct walk *w, const char *root, bool writable, const char *under,
		     const char *prefix)
{
	char *paths[] = {(char *)root, NULL};
	FTS *fts = fts_open(paths, FTS_PHYSICAL | FTS_NOCHDIR | FTS_NOSTAT, NULL);
	FTSENT *ent;
	int r = 0;

	if (!fts)
		return errno == ENOMEM ? -ENOMEM : 0;
	while (r >= 0 && (ent = fts_read(fts))) {
		const struct sb_fp_ignore *ig;
		bool is_dir = ent->fts_info == FTS_D;
		char dir[PATH_MAX];
		size_t dir_len;

		if (ent->fts_info == FTS_DP || ent->fts_level == 0)
			continue;
		if (++w->walked > SB_WRAP_MAX_WALKED_ENTRIES) {
			r = sb_error(
			    w->reterr, -E2BIG,
			    "ignore= would have python-sb walk more than %d entries of the "
			    "exposed directories at every start, to find what to hide: "
			    "expose smaller trees",
			    SB_WRAP_MAX_WALKED_ENTRIES);
			break;
		}
		if (!may_lead_to(ent->fts_path, prefix)) {
			if (is_dir)
				fts_set(fts, ent, FTS_SKIP);
			continue;
		}
		/* fts keeps every path in one buffer: the parent is a prefix. */
		dir_len = ent->fts_pathlen - ent->fts_namelen - 1;
		if (dir_len >= sizeof(dir))
			continue;
		memcpy(dir, ent->fts_path, dir_len ? dir_len : 1);
		dir[dir_len ? dir_len : 1] = '\0';
		if (sb_file_policy_entry_ignored(w->fp, dir, ent->fts_name, &ig)) {
			r = add_ignored(w, ent->fts_path, is_dir, writable, under);
			if (is_dir)
				fts_set(fts, ent, FTS_SKIP);
		}
	}
	fts_close(fts);
	return r;
}

/* The deepest existing directory of an absolute pattern's literal part. */
static char *literal_prefix(const char *pattern)
{
	size_t n = strcspn(pattern, "*?[");

	return strndup(pattern, n);
}

static const struct sb_landlock_path *grant_holding(const struct sb_boundary *b, const char *path)
{
	for (size_t i = 0; i < b->n_paths; i++)
		if (sb_path_under(path, b->paths[i].path))
			return &b->paths[i];
	return NULL;
}

int sb_wrap_collect_ignored(const struct sb_boundary *b, const struct sb_profile *p,
			    struct sb_wrap_ignored_set *ret, char **reterr)
{
	struct sb_file_policy fp;
	struct sb_wrap_ignored_set set = {0};
	struct walk w = {.fp = &fp, .set = &set, .reterr = reterr};
	_cleanup_strv_free_ char **starts = NULL, **prefixes = NULL;
	bool relative = false;
	int r;

	*ret = (struct sb_wrap_ignored_set){0};
	if (!p->n_ignores)
		return 0;
	r = sb_file_policy_init(&fp, p);
	/* An absolute pattern can only match below its literal part. */
	for (size_t i = 0; r >= 0 && i < p->n_ignores; i++) {
		char *prefix, *start, *slash;

		if (p->ignores[i].name[0] != '/') {
			relative = true;
			continue;
		}
		prefix = literal_prefix(p->ignores[i].name);
		start = prefix ? strdup(prefix) : NULL;
		if (start) {
			slash = strrchr(start, '/');
			slash[slash == start ? 1 : 0] = '\0';
		}
		r = sb_strv_consume(&prefixes, prefix);
		if (r >= 0)
			r = sb_strv_consume(&starts, start);
	}
	/* Every exposed tree a pattern can match in: a relative pattern
	 * anywhere in it. */
	for (size_t i = 0; r >= 0 && i < p->n_exposes; i++) {
		const char *root = p->exposes[i].resolved;
		bool needed = relative;

		for (char **s = starts; !needed && root && s && *s; s++)
			needed = sb_path_under(root, *s) || sb_path_under(*s, root);
		if (root && needed)
			r = walk_tree(&w, root, p->exposes[i].writable, root, NULL);
	}
	/* The other grants (the interpreter's tree...) only for an absolute
	 * pattern that names something in them. */
	for (size_t i = 0; r >= 0 && starts && starts[i]; i++) {
		const struct sb_landlock_path *g = grant_holding(b, starts[i]);
		bool exposed = false;

		for (size_t j = 0; j < p->n_exposes; j++)
			exposed = exposed || (p->exposes[j].resolved &&
					      sb_path_under(starts[i], p->exposes[j].resolved));
		if (g && !exposed)
			r = walk_tree(&w, starts[i], g->writable, NULL, prefixes[i]);
	}
	sb_file_policy_done(&fp);
	if (r < 0) {
		sb_wrap_ignored_done(&set);
		return r;
	}
	*ret = set;
	return 0;
}

const struct sb_net_rule *sb_wrap_first_allow_rule(const struct sb_profile *p)
{
	for (size_t i = 0; i < p->n_nets; i++)
		if (p->nets[i].action == SB_NET_ALLOW)
			return &p->nets[i];
	return NULL;
}

int sb_wrap_explain_grants(const struct sb_boundary *b, const char *heading, struct sb_buf *out)
{
	int r = sb_buf_puts(out, heading);

	for (size_t i = 0; r >= 0 && i < b->n_paths; i++)
		r = sb_buf_printf(out, "#   %-3s %-40s (%s)\n", b->paths[i].writable ? "rw" : "ro",
				  b->paths[i].path, b->path_reasons[i]);
	for (char **n = b->notes; r >= 0 && n && *n; n++)
		r = sb_buf_printf(out, "#   note: %s\n", *n);
	return r;
}
