/* SPDX-License-Identifier: MIT */
#include "file-policy.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include "util.h"

static int cmp_grant_longest_first(const void *a, const void *b)
{
	const struct sb_fp_grant *x = a, *y = b;

	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return strcmp(x->dir, y->dir);
}

static char *format_origin(struct sb_origin o)
{
	char *s;

	if (asprintf(&s, "%s:%u", o.file ? o.file : SB_ORIGIN_CLI, o.line) < 0)
		return NULL;
	return s;
}

/* The grant of one resolved expose rule; false when out of memory. */
static bool fill_grant(struct sb_fp_grant *g, const struct sb_expose_rule *e)
{
	g->dir = strdup(e->resolved);
	g->written = strdup(e->path);
	g->origin = format_origin(e->origin);
	if (!g->dir || !g->written || !g->origin)
		return false;
	g->len = strlen(g->dir);
	while (g->len > 1 && g->dir[g->len - 1] == '/')
		g->dir[--g->len] = '\0';
	g->writable = e->writable;
	return true;
}

int sb_file_policy_add_grant(struct sb_file_policy *p, const struct sb_expose_rule *e)
{
	struct sb_fp_grant *grants;

	if (!e->resolved || e->resolved[0] != '/')
		return -EINVAL;
	grants = realloc(p->grants, (p->n_grants + 1) * sizeof(*grants));
	if (!grants)
		return -ENOMEM;
	p->grants = grants;
	grants[p->n_grants] = (struct sb_fp_grant){0};
	/* Counted even when incomplete: sb_file_policy_done() frees it. */
	if (!fill_grant(&grants[p->n_grants++], e))
		return -ENOMEM;
	qsort(p->grants, p->n_grants, sizeof(*p->grants), cmp_grant_longest_first);
	return 0;
}

/* A rule file's path as the kernel would find it: resolved when it exists,
 * else its resolved directory and its name (a file the program could
 * create). path relative to the current directory. */
static int add_rule_file(struct sb_file_policy *p, const char *path)
{
	_cleanup_free_ char *real = NULL, *dir = NULL, *dir_real = NULL, *joined = NULL;
	const char *name;
	char **v;

	if (!path || !*path)
		return 0;
	real = realpath(path, NULL);
	if (!real) {
		name = strrchr(path, '/');
		name = name ? name + 1 : path;
		dir = sb_path_dirname(path);
		if (!dir)
			return -ENOMEM;
		dir_real = realpath(dir, NULL);
		joined = sb_path_join(dir_real ? dir_real : dir, name);
		if (!joined)
			return -ENOMEM;
		real = sb_path_normalize(joined);
		if (!real || real[0] != '/')
			return real ? 0 : -ENOMEM;
	}
	v = realloc(p->rule_files, (p->n_rule_files + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->rule_files = v;
	v[p->n_rule_files++] = TAKE_PTR(real);
	return 0;
}

int sb_file_policy_add_startup_dir(struct sb_file_policy *p, const char *dir)
{
	_cleanup_free_ char *real = realpath(dir, NULL);
	char **v;

	if (!real)
		real = sb_path_normalize(dir);
	if (!real)
		return -ENOMEM;
	if (real[0] != '/' || streq(real, "/"))
		return 0;
	for (size_t i = 0; i < p->n_startup_dirs; i++)
		if (streq(p->startup_dirs[i], real))
			return 0;
	v = realloc(p->startup_dirs, (p->n_startup_dirs + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->startup_dirs = v;
	v[p->n_startup_dirs++] = TAKE_PTR(real);
	return 0;
}

/* "sitecustomize", "sitecustomize.py", "sitecustomize.cpython-311.pyc"... */
static bool startup_module_name(const char *base)
{
	static const char *const names[] = {"sitecustomize", "usercustomize"};

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		const char *rest = startswith(base, names[i]);

		if (rest && (*rest == '\0' || *rest == '.'))
			return true;
	}
	return false;
}

const char *sb_file_policy_startup_code(const struct sb_file_policy *p, const char *resolved)
{
	const char *last = strrchr(resolved, '/');
	size_t n = strlen(resolved);

	if (last && startup_module_name(last + 1))
		return resolved;
	for (size_t i = 0; i < p->n_startup_dirs; i++) {
		const char *d = p->startup_dirs[i];

		/* Anything in it (a .pth file, or a module one imports at
		 * start-up: certifi, _distutils_hack, apport_python_hook), the
		 * directory itself, or a directory on its way. */
		if (sb_path_under(resolved, d) ||
		    (strncmp(d, resolved, n) == 0 && (d[n] == '/' || (n == 1 && d[0] == '/'))))
			return d;
	}
	return NULL;
}

static int add_rule_files(struct sb_file_policy *p, const struct sb_profile *profile)
{
	int r = add_rule_file(p, profile->root_file);

	for (char **f = profile->files; r >= 0 && f && *f; f++)
		r = add_rule_file(p, *f);
	for (char **f = profile->missing_files; r >= 0 && f && *f; f++)
		r = add_rule_file(p, *f);
	if (r >= 0)
		r = add_rule_file(p, profile->learn_file);
	return r;
}

int sb_file_policy_init(struct sb_file_policy *p, const struct sb_profile *profile)
{
	*p = (struct sb_file_policy){0};
	if (profile->n_exposes) {
		p->grants = calloc(profile->n_exposes, sizeof(*p->grants));
		if (!p->grants)
			return -ENOMEM;
	}
	for (size_t i = 0; i < profile->n_exposes; i++) {
		const struct sb_expose_rule *e = &profile->exposes[i];

		/* sb_profile_check() refuses a profile whose grant does not
		 * resolve; an unresolved one grants nothing. */
		if (!e->resolved)
			continue;
		if (!fill_grant(&p->grants[p->n_grants], e))
			return -ENOMEM;
		p->n_grants++;
	}
	/* The longest prefix decides (expose-ro=/a/b inside expose-rw=/a). */
	if (p->n_grants)
		qsort(p->grants, p->n_grants, sizeof(*p->grants), cmp_grant_longest_first);
	if (profile->n_ignores) {
		p->ignores = calloc(profile->n_ignores, sizeof(*p->ignores));
		if (!p->ignores)
			return -ENOMEM;
	}
	for (size_t i = 0; i < profile->n_ignores; i++) {
		struct sb_fp_ignore *ig = &p->ignores[p->n_ignores];

		ig->pattern = strdup(profile->ignores[i].name);
		ig->origin = format_origin(profile->ignores[i].origin);
		if (!ig->pattern || !ig->origin)
			return -ENOMEM;
		ig->absolute = ig->pattern[0] == '/';
		p->n_ignores++;
	}
	return add_rule_files(p, profile);
}

static int resolve_walk(const char *path, const char *base, bool follow_last, char out[PATH_MAX],
			bool *complete, mode_t *last_mode);

/* The longest leading directory of path (ending at a component boundary)
 * that an earlier implicit grant showed to be canonical: an existing
 * directory with no symbolic link in it. 0 when none. */
static size_t canonical_prefix(const struct sb_file_policy *p, const char *path)
{
	size_t best = 0;

	for (size_t i = 0; i < p->n_canonical; i++) {
		const char *c = p->canonical[i];
		size_t k = 0, last = 0;

		while (c[k] && c[k] == path[k]) {
			k++;
			if (c[k] == '/' || (!c[k] && (path[k] == '/' || !path[k])))
				last = k;
		}
		if (last > best)
			best = last;
	}
	return best;
}

/* realpath() for the implicit grants, which share most of their leading
 * directories (/usr/lib/python3.11, its lib-dynload, /usr/lib/python3/...):
 * components below a directory already known to be canonical are looked at
 * one lstat each, instead of glibc's readlink() of every component of every
 * path (about 80 system calls on each start). -ENOENT when a component is
 * missing, as realpath() fails then. */
static int resolve_implicit(struct sb_file_policy *p, const char *path, char out[PATH_MAX],
			    mode_t *mode)
{
	_cleanup_free_ char *base = NULL;
	size_t n = path[0] == '/' ? canonical_prefix(p, path) : 0;
	bool complete = false;
	int r;

	*mode = 0;
	if (n > 1 && !path[n] && n < PATH_MAX) {
		/* A canonical directory itself: nothing to look at. */
		memcpy(out, path, n + 1);
		*mode = S_IFDIR;
		return 0;
	}
	if (n > 1) {
		base = strndup(path, n);
		if (!base)
			return -ENOMEM;
		while (path[n] == '/')
			n++;
	} else {
		n = 0;
	}
	r = resolve_walk(path + n, base, true, out, &complete, mode);
	if (r < 0)
		return r;
	return complete ? 0 : -ENOENT;
}

static int remember_canonical(struct sb_file_policy *p, const char *dir)
{
	char **c;

	for (size_t i = 0; i < p->n_canonical; i++)
		if (streq(p->canonical[i], dir))
			return 0;
	c = realloc(p->canonical, (p->n_canonical + 1) * sizeof(*c));
	if (!c)
		return -ENOMEM;
	p->canonical = c;
	c[p->n_canonical] = strdup(dir);
	if (!c[p->n_canonical])
		return -ENOMEM;
	p->n_canonical++;
	return 0;
}

int sb_file_policy_add_implicit(struct sb_file_policy *p, const char *path, bool file,
				bool writable, const char *why)
{
	struct sb_fp_grant *grants, *g;
	char resolved[PATH_MAX];
	struct stat st = {0};
	mode_t mode = 0;
	char *real;
	int r;

	if (!path || !*path)
		return 0;
	r = path[0] == '/' ? resolve_implicit(p, path, resolved, &mode) : -EINVAL;
	if (r == -ENOMEM)
		return r;
	/* Missing, looping or too long: grants nothing. */
	if (r < 0 && r != -EINVAL)
		return 0;
	if (r < 0) {
		/* A relative path (a sys.path entry): realpath() knows the cwd. */
		real = realpath(path, NULL);
		if (!real)
			return errno == ENOMEM ? -ENOMEM : 0;
	} else if (!(real = strdup(resolved))) {
		return -ENOMEM;
	}
	/* The resolver's last lstat() told already, unless it did not look
	 * (a canonical directory, a relative path). */
	if (mode)
		st.st_mode = mode;
	else if (stat(real, &st) < 0) {
		free(real);
		return 0;
	}
	/* Resolved to itself: no link on the way, so the directory (or, for
	 * a file, its parent) resolves to itself too (/dev for /dev/null). */
	if (streq(real, path)) {
		_cleanup_free_ char *parent = S_ISDIR(st.st_mode) ? NULL : sb_path_dirname(real);
		const char *dir = S_ISDIR(st.st_mode) ? real : parent;

		if (!dir || remember_canonical(p, dir) < 0) {
			free(real);
			return -ENOMEM;
		}
	}
	/* A zip file on sys.path, or a script: an exact file, not a tree. */
	file = file || !S_ISDIR(st.st_mode);
	for (size_t i = 0; i < p->n_implicit; i++)
		if (p->implicit[i].file == file && p->implicit[i].writable == writable &&
		    streq(p->implicit[i].dir, real)) {
			free(real);
			return 0;
		}
	grants = realloc(p->implicit, (p->n_implicit + 1) * sizeof(*grants));
	if (!grants) {
		free(real);
		return -ENOMEM;
	}
	p->implicit = grants;
	g = &grants[p->n_implicit++];
	*g = (struct sb_fp_grant){
	    .dir = real,
	    .len = strlen(real),
	    .writable = writable,
	    .implicit = true,
	    .file = file,
	    .why = why,
	};
	return 0;
}

static void grant_done(struct sb_fp_grant *g)
{
	free(g->dir);
	free(g->written);
	free(g->origin);
}

void sb_file_policy_done(struct sb_file_policy *p)
{
	for (size_t i = 0; i < p->n_grants; i++)
		grant_done(&p->grants[i]);
	for (size_t i = 0; i < p->n_implicit; i++)
		grant_done(&p->implicit[i]);
	for (size_t i = 0; i < p->n_canonical; i++)
		free(p->canonical[i]);
	free(p->canonical);
	for (size_t i = 0; i < p->n_ignores; i++) {
		free(p->ignores[i].pattern);
		free(p->ignores[i].origin);
	}
	for (size_t i = 0; i < p->n_rule_files; i++)
		free(p->rule_files[i]);
	free(p->rule_files);
	for (size_t i = 0; i < p->n_startup_dirs; i++)
		free(p->startup_dirs[i]);
	free(p->startup_dirs);
	free(p->grants);
	free(p->implicit);
	free(p->ignores);
	*p = (struct sb_file_policy){0};
}

/* Drops the last component of out ("/a/b" -> "/a", "/a" -> "/"). */
static void pop_component(char *out, size_t *o)
{
	while (*o > 1 && out[*o - 1] != '/')
		(*o)--;
	if (*o > 1)
		(*o)--;
	out[*o] = '\0';
}

/* The next component of *p, skipping '/'s: its start, its length in *len,
 * and *p moved just past it; NULL at the end of the path. */
static const char *next_component(const char **p, size_t *len)
{
	const char *c = *p;

	while (*c == '/')
		c++;
	if (!*c) {
		*p = c;
		return NULL;
	}
	*len = strcspn(c, "/");
	*p = c + *len;
	return c;
}

static int start_at(const char *path, const char *base, char *out, size_t *o)
{
	if (path[0] == '/' || !base) {
		out[0] = '/';
		out[1] = '\0';
		*o = 1;
		return 0;
	}
	*o = strlen(base);
	if (*o >= PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(out, base, *o + 1);
	while (*o > 1 && out[*o - 1] == '/')
		out[--*o] = '\0';
	return 0;
}

static int push_component(char *out, size_t *o, const char *c, size_t len)
{
	if (*o + 1 + len >= PATH_MAX)
		return -ENAMETOOLONG;
	if (*o > 1)
		out[(*o)++] = '/';
	memcpy(out + *o, c, len);
	*o += len;
	out[*o] = '\0';
	return 0;
}

/* The length of path when it is absolute and already in the form
 * sb_path_absolute() gives (no "//", "." or ".." component, no trailing
 * '/'), else 0: most paths a program hands over are. */
static size_t clean_absolute_len(const char *path)
{
	const char *s = path;

	if (*s != '/')
		return 0;
	for (;;) {
		const char *c = s + 1; /* s is at a '/' */

		if (*c == '/' || (*c == '\0' && s != path))
			return 0;
		if (*c == '.' &&
		    (c[1] == '/' || c[1] == '\0' || (c[1] == '.' && (c[2] == '/' || c[2] == '\0'))))
			return 0;
		s = strchr(c, '/');
		if (!s)
			return (size_t)(c - path) + strlen(c);
	}
}

int sb_path_absolute(const char *path, const char *base, char out[PATH_MAX])
{
	const char *p = path;
	size_t o, len = clean_absolute_len(path);
	int r;

	if (len) {
		if (len >= PATH_MAX)
			return -ENAMETOOLONG;
		memcpy(out, path, len + 1);
		return 0;
	}
	r = start_at(path, base, out, &o);
	if (r < 0)
		return r;
	for (const char *c; (c = next_component(&p, &len));) {
		if (len == 1 && c[0] == '.')
			continue;
		if (len == 2 && c[0] == '.' && c[1] == '.') {
			pop_component(out, &o);
			continue;
		}
		r = push_component(out, &o, c, len);
		if (r < 0)
			return r;
	}
	return 0;
}

/* sb_path_resolve_ex(); *last_mode (when given) is the mode the last lstat()
 * found for the final name when that was no link, else 0. */
static int resolve_walk(const char *path, const char *base, bool follow_last, char out[PATH_MAX],
			bool *complete, mode_t *last_mode)
{
	char rest[PATH_MAX], target[PATH_MAX], tmp[PATH_MAX];
	const char *p;
	unsigned links = 0;
	bool missing = false;
	size_t o;
	int r;

	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	strcpy(rest, path);
	r = start_at(path, base, out, &o);
	if (r < 0)
		return r;
	p = rest;
	for (;;) {
		const char *c, *q;
		struct stat st;
		bool last, trailing_slash;
		ssize_t n;
		size_t len;

		c = next_component(&p, &len);
		if (!c)
			break;
		for (q = p; *q == '/'; q++)
			;
		last = !*q;
		trailing_slash = last && *p == '/';
		if (len == 1 && c[0] == '.')
			continue;
		if (len == 2 && c[0] == '.' && c[1] == '.') {
			pop_component(out, &o);
			continue;
		}
		r = push_component(out, &o, c, len);
		if (r < 0)
			return r;
		if (missing)
			continue;
		/* lstat, unlink, rename act on the link itself, not on its
		 * target; a trailing '/' makes the kernel follow it anyway. */
		if (last && !follow_last && !trailing_slash)
			break;
		if (lstat(out, &st) < 0) {
			/* Not there (yet): the rest is what would be created. */
			missing = true;
			continue;
		}
		if (!S_ISLNK(st.st_mode)) {
			if (last && last_mode)
				*last_mode = st.st_mode;
			continue;
		}
		if (++links > 40)
			return -ELOOP;
		n = readlink(out, target, sizeof(target) - 1);
		if (n < 0) {
			missing = true;
			continue;
		}
		target[n] = '\0';
		/* Continue with the link's target followed by what remains:
		 * a dangling link is followed too, so creating through it is
		 * decided where the file would really appear. */
		len = strlen(p);
		if ((size_t)n + 1 + len >= PATH_MAX)
			return -ENAMETOOLONG;
		memcpy(tmp, target, (size_t)n);
		tmp[n] = '/';
		memcpy(tmp + n + 1, p, len + 1);
		memcpy(rest, tmp, (size_t)n + len + 2);
		p = rest;
		if (target[0] == '/') {
			out[0] = '/';
			out[1] = '\0';
			o = 1;
		} else {
			pop_component(out, &o);
		}
	}
	if (complete)
		*complete = !missing;
	return 0;
}

int sb_path_resolve_ex(const char *path, const char *base, bool follow_last, char out[PATH_MAX],
		       bool *complete)
{
	return resolve_walk(path, base, follow_last, out, complete, NULL);
}

int sb_path_resolve(const char *path, const char *base, bool follow_last, char out[PATH_MAX])
{
	return sb_path_resolve_ex(path, base, follow_last, out, NULL);
}

/* path is n bytes long: each grant costs a length test and, only where it
 * can match, one memcmp. */
static bool covers(const struct sb_fp_grant *g, const char *path, size_t n)
{
	if (g->file)
		return n == g->len && memcmp(g->dir, path, n) == 0;
	if (g->len == 1 && g->dir[0] == '/')
		return path[0] == '/';
	return n >= g->len && (path[g->len] == '\0' || path[g->len] == '/') &&
	       memcmp(path, g->dir, g->len) == 0;
}

static bool leads_to(const struct sb_fp_grant *g, const char *dir, size_t n)
{
	if (n == 1 && dir[0] == '/')
		return g->len > 1;
	return g->len > n && g->dir[n] == '/' && memcmp(g->dir, dir, n) == 0;
}

bool sb_file_policy_leads_to_grant(const struct sb_file_policy *p, const char *dir)
{
	size_t n = strlen(dir);

	for (size_t i = 0; i < p->n_grants; i++)
		if (leads_to(&p->grants[i], dir, n))
			return true;
	for (size_t i = 0; i < p->n_implicit; i++)
		if (leads_to(&p->implicit[i], dir, n))
			return true;
	return false;
}

const struct sb_fp_grant *sb_file_policy_grant_for(const struct sb_file_policy *p,
						   const char *resolved)
{
	size_t n = strlen(resolved);

	for (size_t i = 0; i < p->n_grants; i++)
		if (covers(&p->grants[i], resolved, n))
			return &p->grants[i];
	for (size_t i = 0; i < p->n_implicit; i++)
		if (covers(&p->implicit[i], resolved, n))
			return &p->implicit[i];
	return NULL;
}

static bool match(const char *pattern, const char *text)
{
	/* Python's fnmatch: '*' crosses '/', no escapes, dots not special. */
	return fnmatch(pattern, text, FNM_NOESCAPE) == 0;
}

/* An absolute pattern hides the path it matches and everything under it. */
static bool match_path_or_ancestor(const char *pattern, const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (match(pattern, path))
		return true;
	if (n >= sizeof(buf))
		return false;
	memcpy(buf, path, n + 1);
	for (size_t i = n; i > 1; i--)
		if (buf[i - 1] == '/') {
			buf[i - 1] = '\0';
			if (match(pattern, buf))
				return true;
		}
	return false;
}

/* Components of resolved below root_len: a relative pattern naming a
 * directory hides everything under it, but never the grant's root (nor the
 * components above it: ignore=.* must not hide a grant of ~/.venv). */
static bool match_component_below(const char *pattern, const char *resolved, size_t root_len)
{
	char comp[NAME_MAX + 1];
	const char *p = resolved + root_len;
	size_t len;

	for (const char *c; (c = next_component(&p, &len));) {
		if (len >= sizeof(comp))
			continue;
		memcpy(comp, c, len);
		comp[len] = '\0';
		if (match(pattern, comp))
			return true;
	}
	return false;
}

static const struct sb_fp_ignore *find_ignore(const struct sb_file_policy *p, const char *base,
					      const char *abs, const char *resolved)
{
	const struct sb_fp_grant *g;
	size_t root_len = 0;

	if (!p->n_ignores)
		return NULL;
	g = sb_file_policy_grant_for(p, resolved);
	if (g)
		root_len = g->file ? strlen(resolved) : (g->len == 1 ? 0 : g->len);
	for (size_t i = 0; i < p->n_ignores; i++) {
		const struct sb_fp_ignore *ig = &p->ignores[i];

		if (ig->absolute) {
			if (match_path_or_ancestor(ig->pattern, abs) ||
			    match_path_or_ancestor(ig->pattern, resolved))
				return ig;
			continue;
		}
		/* Never a whole exposed root. */
		if (g && resolved[root_len] == '\0')
			continue;
		if ((base && *base && match(ig->pattern, base)) || match(ig->pattern, abs) ||
		    match(ig->pattern, resolved) ||
		    match_component_below(ig->pattern, resolved, root_len))
			return ig;
	}
	return NULL;
}

/* The last component of a raw path, trailing slashes ignored, into buf. */
static const char *raw_basename(const char *raw, char buf[NAME_MAX + 1])
{
	size_t n = strlen(raw), start;

	while (n > 1 && raw[n - 1] == '/')
		n--;
	start = n;
	while (start > 0 && raw[start - 1] != '/')
		start--;
	/* "." and ".." name no entry of their own (ignore=.* must not hide
	 * os.listdir('.')). */
	if (n - start > NAME_MAX || (n - start == 1 && raw[start] == '.') ||
	    (n - start == 2 && raw[start] == '.' && raw[start + 1] == '.'))
		return "";
	memcpy(buf, raw + start, n - start);
	buf[n - start] = '\0';
	return buf;
}

#define RULE_FILE_NAME ".py-sandboxes"

const char *sb_file_policy_rule_file(const struct sb_file_policy *p, const char *resolved)
{
	const char *last = strrchr(resolved, '/');
	size_t n = strlen(resolved);

	if (last && streq(last + 1, RULE_FILE_NAME))
		return resolved;
	for (size_t i = 0; i < p->n_rule_files; i++) {
		const char *f = p->rule_files[i];

		/* The file itself, or a directory on its way. */
		if (streq(f, resolved) ||
		    (strncmp(f, resolved, n) == 0 && (f[n] == '/' || (n == 1 && f[0] == '/'))))
			return f;
	}
	return NULL;
}

enum sb_fp_verdict sb_file_policy_decide(const struct sb_file_policy *p, const char *raw,
					 const char *abs, const char *resolved, bool write,
					 const struct sb_fp_grant **ret_grant,
					 const struct sb_fp_ignore **ret_ignore)
{
	const struct sb_fp_grant *ro = NULL;
	const struct sb_fp_ignore *ig;
	char base[NAME_MAX + 1];
	size_t n = strlen(resolved);

	*ret_grant = NULL;
	*ret_ignore = NULL;
	/* The rules themselves come before any grant or ignore rule. */
	if (write && sb_file_policy_rule_file(p, resolved))
		return SB_FP_RULE_FILE;
	if (write && sb_file_policy_startup_code(p, resolved))
		return SB_FP_STARTUP_CODE;
	/* Ignore rules come before any grant. */
	ig = p->n_ignores ? find_ignore(p, raw ? raw_basename(raw, base) : NULL, abs, resolved)
			  : NULL;
	if (ig) {
		*ret_ignore = ig;
		return SB_FP_IGNORED;
	}
	for (size_t i = 0; i < p->n_grants; i++)
		if (covers(&p->grants[i], resolved, n)) {
			*ret_grant = &p->grants[i];
			if (!write || p->grants[i].writable)
				return SB_FP_ALLOW;
			ro = &p->grants[i];
			break;
		}
	/* Implicit grants only add (reading, and writing /dev/null): they never
	 * take away what an explicit rule gives, whatever their length, and a
	 * broader read-only rule (expose-ro=/, /dev) does not take away what
	 * works without a rule either. */
	for (size_t i = 0; i < p->n_implicit; i++)
		if (covers(&p->implicit[i], resolved, n)) {
			if (!write || p->implicit[i].writable) {
				*ret_grant = &p->implicit[i];
				return SB_FP_ALLOW;
			}
			if (!ro)
				ro = &p->implicit[i];
		}
	if (ro) {
		*ret_grant = ro;
		return SB_FP_READ_ONLY;
	}
	return SB_FP_NOT_EXPOSED;
}

bool sb_file_policy_system_dir(const char *dir)
{
	static const char *const trees[] = {"/usr",   "/etc",	"/bin",	   "/sbin", "/lib",
					    "/lib32", "/lib64", "/libx32", "/boot", "/dev",
					    "/proc",  "/sys",	"/run"};
	const char *slash;

	if (!dir || dir[0] != '/' || !dir[1])
		return true;
	slash = strchr(dir + 1, '/');
	if (!slash || !slash[1])
		return true;
	for (size_t i = 0; i < ELEMENTSOF(trees); i++)
		if (sb_path_under(dir, trees[i]))
			return true;
	return false;
}

/* Whether some text that starts with prefix can match pattern (match()'s
 * syntax: no escapes, '*' crosses '/'). Errs towards yes: once prefix is
 * used up, whatever the pattern still asks for is taken to be possible, and
 * a bracket expression to match any character. */
static bool match_some_extension(const char *pattern, const char *prefix)
{
	for (; *prefix; prefix++) {
		switch (*pattern) {
		case '\0':
			return false;
		case '*':
			/* It can take the rest of the prefix. */
			return true;
		case '[': {
			const char *end = pattern + 1;

			if (*end == '!' || *end == '^')
				end++;
			if (*end == ']')
				end++;
			end = strchr(end, ']');
			pattern = end ? end + 1 : pattern + 1;
			if (!end && *prefix != '[')
				return false;
			break;
		}
		case '?':
			pattern++;
			break;
		default:
			if (*pattern != *prefix)
				return false;
			pattern++;
			break;
		}
	}
	return true;
}

/* Whether a relative pattern can only match within one name, wherever it
 * is matched (a component, or a whole path, which '*' lets it span): no '/';
 * and either a first character that is no wildcard (a whole path starts
 * with '/', which it cannot match: "id_*.pub", ".env"), or no '?' or bracket
 * (they match '/') and one run of other characters at most ("*.key",
 * "*secret*"), which a '/' cannot be in. A move keeps the names below what
 * it moves, hence what such a pattern hides. */
static bool matches_one_name(const char *pattern)
{
	unsigned runs = 0;

	if (strchr(pattern, '/'))
		return false;
	if (!strchr("*?[", pattern[0]))
		return true;
	if (strpbrk(pattern, "?["))
		return false;
	for (const char *c = pattern; *c; c++)
		if (*c != '*' && (c == pattern || c[-1] == '*'))
			runs++;
	return runs <= 1;
}

const struct sb_fp_ignore *sb_file_policy_ignore_below(const struct sb_file_policy *p,
						       const char *dir)
{
	char prefix[PATH_MAX];

	if (!p->n_ignores || snprintf(prefix, sizeof(prefix), "%s/", streq(dir, "/") ? "" : dir) >=
				 (int)sizeof(prefix))
		return p->n_ignores ? &p->ignores[0] : NULL;
	for (size_t i = 0; i < p->n_ignores; i++) {
		const struct sb_fp_ignore *ig = &p->ignores[i];

		if (!ig->absolute && matches_one_name(ig->pattern))
			continue;
		if (match_some_extension(ig->pattern, prefix))
			return ig;
	}
	return NULL;
}

bool sb_file_policy_entry_ignored(const struct sb_file_policy *p, const char *dir, const char *name,
				  const struct sb_fp_ignore **ret_ignore)
{
	char path[PATH_MAX];

	*ret_ignore = NULL;
	if (!p->n_ignores)
		return false;
	if (snprintf(path, sizeof(path), "%s%s%s", dir, streq(dir, "/") ? "" : "/", name) >=
	    (int)sizeof(path))
		return false;
	*ret_ignore = find_ignore(p, name, path, path);
	return *ret_ignore != NULL;
}
