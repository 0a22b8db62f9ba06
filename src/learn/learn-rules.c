/* SPDX-License-Identifier: MIT */
#include "learn-rules.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "file-policy.h"
#include "net-rule.h"
#include "str-index.h"
#include "util.h"

/* ---- string sets ----------------------------------------------------------- */

static int strset_grow(struct sb_learn_strset *s)
{
	size_t cap = s->cap ? s->cap * 2 : 64;
	char **slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		size_t j;

		if (!s->slots[i])
			continue;
		for (j = sb_str_hash(s->slots[i]) & (cap - 1); slots[j]; j = (j + 1) & (cap - 1))
			;
		slots[j] = s->slots[i];
	}
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

int sb_learn_strset_add(struct sb_learn_strset *s, const char *key)
{
	size_t j;

	if ((s->n + 1) * 2 > s->cap && strset_grow(s) < 0)
		return -ENOMEM;
	for (j = sb_str_hash(key) & (s->cap - 1); s->slots[j]; j = (j + 1) & (s->cap - 1))
		if (streq(s->slots[j], key))
			return 0;
	s->slots[j] = strdup(key);
	if (!s->slots[j])
		return -ENOMEM;
	s->n++;
	return 1;
}

bool sb_learn_strset_contains(const struct sb_learn_strset *s, const char *key)
{
	if (!s->cap)
		return false;
	for (size_t j = sb_str_hash(key) & (s->cap - 1); s->slots[j]; j = (j + 1) & (s->cap - 1))
		if (streq(s->slots[j], key))
			return true;
	return false;
}

void sb_learn_strset_done(struct sb_learn_strset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slots[i]);
	free(s->slots);
	*s = (struct sb_learn_strset){0};
}

/* ---- the observed set ------------------------------------------------------ */

int sb_learn_set_add_path(struct sb_learn_set *s, const char *path, bool write, bool native)
{
	struct sb_learn_path *paths;
	size_t at = sb_str_index_find(&s->path_index, path);
	char *copy;

	if (at != SIZE_MAX) {
		s->paths[at].write = s->paths[at].write || write;
		s->paths[at].native = s->paths[at].native && native;
		return 0;
	}
	copy = strdup(path);
	paths = realloc(s->paths, (s->n_paths + 1) * sizeof(*paths));
	if (paths)
		s->paths = paths;
	if (!copy || !paths || sb_str_index_add(&s->path_index, copy, s->n_paths) < 0) {
		free(copy);
		return -ENOMEM;
	}
	s->paths[s->n_paths++] =
	    (struct sb_learn_path){.path = copy, .write = write, .native = native};
	return 0;
}

int sb_learn_set_add_net(struct sb_learn_set *s, const char *host, unsigned protocol, uint16_t port,
			 unsigned direction, bool native)
{
	struct sb_learn_net *nets;
	char *copy;

	for (size_t i = 0; i < s->n_nets; i++) {
		struct sb_learn_net *n = &s->nets[i];

		if (streq(n->host, host) && n->protocol == protocol && n->port == port &&
		    n->direction == direction) {
			n->native = n->native && native;
			return 0;
		}
	}
	copy = strdup(host);
	nets = realloc(s->nets, (s->n_nets + 1) * sizeof(*nets));
	if (nets)
		s->nets = nets;
	if (!copy || !nets) {
		free(copy);
		return -ENOMEM;
	}
	s->nets[s->n_nets++] = (struct sb_learn_net){
	    .host = copy,
	    .protocol = protocol,
	    .port = port,
	    .direction = direction,
	    .native = native,
	};
	return 0;
}

static int add_unique(char ***v, const char *s)
{
	return sb_strv_contains(*v, s) ? 0 : sb_strv_push(v, s);
}

int sb_learn_set_add_import(struct sb_learn_set *s, const char *name)
{
	return add_unique(&s->imports, name);
}

int sb_learn_set_add_env(struct sb_learn_set *s, const char *name)
{
	return add_unique(&s->envs, name);
}

int sb_learn_set_add_api(struct sb_learn_set *s, const struct sb_api_function *fn)
{
	size_t i = (size_t)(fn - sb_api_registry);

	if (i >= sb_api_registry_size)
		return -EINVAL;
	if (!s->api) {
		s->api = calloc(sb_api_registry_size, sizeof(*s->api));
		if (!s->api)
			return -ENOMEM;
	}
	s->api[i] = true;
	return 0;
}

void sb_learn_set_add_api_category(struct sb_learn_set *s, enum sb_api_category c)
{
	if (c < SB_API_CATEGORY__N)
		s->api_category[c] = true;
}

void sb_learn_set_done(struct sb_learn_set *s)
{
	for (size_t i = 0; i < s->n_paths; i++)
		free(s->paths[i].path);
	free(s->paths);
	sb_str_index_done(&s->path_index);
	for (size_t i = 0; i < s->n_nets; i++)
		free(s->nets[i].host);
	free(s->nets);
	sb_strv_free(s->imports);
	sb_strv_free(s->envs);
	sb_strv_free(s->refused_syscalls);
	free(s->api);
	free(s->result_needs_objects);
	sb_eval_learned_done(&s->eval);
	*s = (struct sb_learn_set){0};
}

int sb_learn_set_add_refused_syscall(struct sb_learn_set *s, const char *name)
{
	if (sb_strv_contains(s->refused_syscalls, name))
		return 0;
	return sb_strv_push(&s->refused_syscalls, name);
}

/* ---- helpers --------------------------------------------------------------- */

static const char *const markers[SB_LEARN__N] = {
    [SB_LEARN_ENVS] = "learning_guard_envs",	  [SB_LEARN_FILES] = "learning_guard_files",
    [SB_LEARN_SOCKET] = "learning_guard_socket",  [SB_LEARN_IMPORT] = "learning_guard_import",
    [SB_LEARN_API] = "learning_guard_api",	  [SB_LEARN_EVAL] = "learning_guard_eval",
    [SB_LEARN_RESULT] = "learning_remote_result",
};

const char *sb_learn_section_marker(enum sb_learn_section s)
{
	return s < SB_LEARN__N ? markers[s] : NULL;
}

static bool has_control(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return true;
	return false;
}

/* Every line goes through here. The names in it are the program's choice (a
 * file, a module, a class, a host): a newline in one would start a rule of its
 * own in the file, a control character would speak to the terminal of whoever
 * reads it. A comment gets them escaped; a rule that holds one is not written
 * (no rule could name it), a comment says what it was. Consumes line. */
static int push_line(struct sb_learn_rules *r, enum sb_learn_section s, bool rule, char *line)
{
	_cleanup_free_ char *owned = line, *shown = NULL;

	if (!has_control(line)) {
		if (rule)
			r->n_rules++;
		return sb_strv_consume(&r->lines[s], TAKE_PTR(owned));
	}
	shown = sb_str_one_line(line);
	if (!shown)
		return -ENOMEM;
	if (!rule)
		return sb_strv_consume(&r->lines[s], TAKE_PTR(shown));
	if (asprintf(&line, "# not written: '%s' holds a control character", shown) < 0)
		return -ENOMEM;
	return sb_strv_consume(&r->lines[s], line);
}

static int push_fmt(struct sb_learn_rules *r, enum sb_learn_section s, bool rule, const char *fmt,
		    ...) _printf_(4, 5);
static int push_fmt(struct sb_learn_rules *r, enum sb_learn_section s, bool rule, const char *fmt,
		    ...)
{
	va_list ap;
	char *line;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	return push_line(r, s, rule, line);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- paths ----------------------------------------------------------------- */

/* Process-private or device paths: a rule for them means nothing (/proc is
 * per process, the devices are granted by the boundary or are descriptors). */
static bool never_emitted(const char *path)
{
	static const char *const trees[] = {"/proc", "/sys", "/dev/pts", "/dev/fd"};
	static const char *const files[] = {
	    "/dev/null", "/dev/zero",  "/dev/urandom", "/dev/random", "/dev/tty",
	    "/dev/full", "/dev/stdin", "/dev/stdout",  "/dev/stderr", "/dev/ptmx",
	};

	for (size_t i = 0; i < ELEMENTSOF(trees); i++)
		if (sb_path_under(path, trees[i]))
			return true;
	for (size_t i = 0; i < ELEMENTSOF(files); i++)
		if (streq(path, files[i]))
			return true;
	return false;
}

/* What the dynamic loader, libc and the kernel boundary take care of without
 * a rule: native code opens these on its own (loading a library, a locale, a
 * time zone), so they say nothing about the program. */
static bool native_system_path(const char *path)
{
	static const char *const trees[] = {
	    "/etc/ld.so.cache",
	    "/etc/ld.so.preload",
	    "/etc/ld.so.conf",
	    "/lib",
	    "/lib64",
	    "/lib32",
	    "/usr/lib",
	    "/usr/lib64",
	    "/usr/lib32",
	    "/usr/local/lib",
	    "/usr/share/locale",
	    "/usr/share/zoneinfo",
	    "/etc/localtime",
	    "/etc/ssl",
	    "/etc/pki",
	    "/etc/ca-certificates",
	    "/usr/share/ca-certificates",
	    "/usr/share/pki",
	    "/etc/gai.conf",
	    "/etc/resolv.conf",
	    "/etc/host.conf",
	    "/etc/nsswitch.conf",
	    "/run/nscd",
	    "/var/run/nscd",
	    "/usr/share/X11/locale",
	    "/usr/lib/locale",
	};

	for (size_t i = 0; i < ELEMENTSOF(trees); i++)
		if (sb_path_under(path, trees[i]))
			return true;
	return false;
}

static bool skipped(const char *path, const struct sb_learn_context *ctx)
{
	if (never_emitted(path))
		return true;
	for (char *const *d = ctx->skip_dirs; d && *d; d++)
		if (sb_path_under(path, *d))
			return true;
	return false;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The directory a rule should name: the path itself when it is a directory
 * (a listing, a directory created for output), else its parent; walking up
 * to one that exists, since expose-* must name an existing directory (a
 * temporary directory removed before the end leaves its parent). */
static char *rule_dir(const char *path)
{
	char *dir = is_dir(path) ? strdup(path) : sb_path_dirname(path);

	while (dir && !is_dir(dir) && !streq(dir, "/")) {
		char *up = sb_path_dirname(dir);

		free(dir);
		dir = up;
	}
	return dir;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

struct learned_dir {
	char *dir;
	bool rw, read, native, dropped;
};

static int cmp_learned_dir(const void *a, const void *b)
{
	return strcmp(((const struct learned_dir *)a)->dir, ((const struct learned_dir *)b)->dir);
}

/* A real path under value (a tool directory): value may itself go through
 * links, so both spellings are tried; returns the matched length. */
static size_t prefix_len(const char *path, const char *value, char *real_buf)
{
	if (!value || value[0] != '/' || streq(value, "/"))
		return 0;
	if (realpath(value, real_buf) && sb_path_under(path, real_buf))
		return strlen(real_buf);
	if (sb_path_under(path, value))
		return strlen(value);
	return 0;
}

/* Whether the learn file's directory is the run's cwd (true when unknown). */
static bool learn_file_in_cwd(const struct sb_learn_context *ctx)
{
	_cleanup_free_ char *dir = NULL, *joined = NULL;
	char a[PATH_MAX], b[PATH_MAX];

	if (!ctx->learn_file || !ctx->cwd)
		return true;
	dir = sb_path_dirname(ctx->learn_file);
	if (!dir)
		return true;
	if (dir[0] != '/' && asprintf(&joined, "%s/%s", ctx->cwd, dir) < 0)
		return true;
	if (!realpath(joined ? joined : dir, a) || !realpath(ctx->cwd, b))
		return true;
	return streq(a, b);
}

char *sb_learn_rewrite_path(const char *path, const struct sb_learn_context *ctx)
{
	/* Tool locations (spec §6), as ${NAME}/... so that the profile follows
	 * the variable; HF_* are added from the environment below. */
	static const char *const tools[] = {
	    "VIRTUAL_ENV",	  "PYENV_ROOT", "CONDA_HOME", "HF_HOME",
	    "TRANSFORMERS_CACHE", "TORCH_HOME", "KERAS_HOME", "TFHUB_CACHE_DIR",
	    "MXNET_HOME",	  "NLTK_DATA",	"SPACY_DATA",
	};
	char real[PATH_MAX], name[128];
	const char *prefix = NULL;
	size_t best = 0, n;
	char *out;

	for (size_t i = 0; i < ELEMENTSOF(tools); i++) {
		n = prefix_len(path, sb_strv_env_get(ctx->env, tools[i]), real);
		if (n > best) {
			best = n;
			snprintf(name, sizeof(name), "${%s}", tools[i]);
			prefix = name;
		}
	}
	for (char *const *e = ctx->env; e && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (!startswith(*e, "HF_") || !eq || (size_t)(eq - *e) >= sizeof(name) - 3)
			continue;
		n = prefix_len(path, eq + 1, real);
		if (n > best) {
			best = n;
			snprintf(name, sizeof(name), "${%.*s}", (int)(eq - *e), *e);
			prefix = name;
		}
	}
	/* The run's own places; a longer match is the more precise one. "./"
	 * is the cwd's, which the profile's relative paths start from: only
	 * when the learn file sits there (a profile beside the script is found
	 * from any cwd, so its paths must not depend on the one of this run). */
	n = ctx->cwd && !streq(ctx->cwd, "/") && sb_path_under(path, ctx->cwd) &&
		    learn_file_in_cwd(ctx)
		? strlen(ctx->cwd)
		: 0;
	if (n > best) {
		best = n;
		prefix = ".";
	}
	n = prefix_len(path, ctx->tmpdir ? ctx->tmpdir : "/tmp", real);
	if (n > best) {
		best = n;
		prefix = "${TMPDIR:-/tmp}";
	}
	n = prefix_len(path, ctx->home, real);
	if (n > best) {
		best = n;
		prefix = "~";
	}
	if (!prefix)
		return strdup(path);
	if (asprintf(&out, "%s%s", prefix, path + best) < 0)
		return NULL;
	return out;
}

/* A path the profile language cannot carry literally: '#' starts a comment,
 * '$' an expansion, quotes and control characters are not rule text, and the
 * parser drops the spaces at the edges of a value ('/data ' would grant
 * '/data', a directory the program never used). */
static bool writable_as_rule(const char *path)
{
	size_t n = strlen(path);

	if (n == 0 || isspace((unsigned char)path[0]) || isspace((unsigned char)path[n - 1]))
		return false;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		if (*p < 0x20 || *p == 0x7f || *p == '#' || *p == '$' || *p == '"' || *p == '\'' ||
		    *p == ',')
			return false;
	return true;
}

static bool same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	if (!a || !b)
		return false;
	if (streq(a, b))
		return true;
	return realpath(a, ra) && realpath(b, rb) && streq(ra, rb);
}

static int push_warning(struct sb_learn_rules *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int push_warning(struct sb_learn_rules *r, const char *fmt, ...)
{
	char *text, *shown;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	/* Shown on the terminal: the program's names without control
	 * characters (push_line). */
	shown = sb_str_one_line(text);
	free(text);
	if (!shown)
		return -ENOMEM;
	return sb_strv_consume(&r->warnings, shown);
}

/* Once per run: the comment in the file and the warning. */
static int warn_root(struct sb_learn_rules *r, const char *path, bool write)
{
	for (char **w = r->warnings; w && *w; w++)
		if (startswith(*w, "'/' is never learned"))
			return 0;
	if (push_fmt(r, SB_LEARN_FILES, false,
		     "# '/' is never learned ('%s' was %s): grant what the program needs there "
		     "by hand",
		     path, write ? "written" : "read") < 0)
		return -ENOMEM;
	return push_warning(r,
			    "'/' is never learned ('%s' was %s): grant what the program needs "
			    "there by hand",
			    path, write ? "written" : "read");
}

static int warn_system_write(struct sb_learn_rules *r, const char *dir)
{
	if (push_fmt(r, SB_LEARN_FILES, false,
		     "# '%s' was written to: no rule should grant writing in a system or "
		     "top-level directory, write elsewhere",
		     dir) < 0)
		return -ENOMEM;
	return push_warning(r,
			    "'%s' was written to: no rule should grant writing in a system or "
			    "top-level directory, write elsewhere (not learned)",
			    dir);
}

static int emit_dir(struct sb_learn_rules *r, const struct learned_dir *d,
		    const struct sb_learn_context *ctx)
{
	_cleanup_free_ char *spelled = sb_learn_rewrite_path(d->dir, ctx);
	const char *key = d->rw ? "rw" : "ro";

	if (!spelled)
		return -ENOMEM;
	if (!writable_as_rule(d->dir))
		return push_fmt(r, SB_LEARN_FILES, false,
				"# '%s' was used, but its name cannot be written in a rule",
				d->dir);
	/* A directory above the program's own grants its neighbours too (a
	 * tool probing every parent for its configuration): learned, but for
	 * the user to check. */
	if (ctx->program_dir && !streq(d->dir, ctx->program_dir) &&
	    sb_path_under(ctx->program_dir, d->dir)) {
		if (push_fmt(r, SB_LEARN_FILES, false,
			     "# above the program's directory '%s': check that the program needs "
			     "all of it",
			     ctx->program_dir) < 0 ||
		    push_warning(r,
				 "learned 'expose-%s=%s' is above the program's directory '%s': "
				 "check that the program needs all of it",
				 key, spelled, ctx->program_dir) < 0)
			return -ENOMEM;
	}
	return push_fmt(r, SB_LEARN_FILES, true, "expose-%s=%s", key, spelled);
}

/* The profiles a learned rule is compared with: the loaded one, and the
 * learn file's when it is another file. */
#define FOR_EACH_PROFILE(ps, profile)                                                              \
	for (size_t _pi = 0; _pi < 2; _pi++)                                                       \
		for (const struct sb_profile *profile = (ps)[_pi]; profile; profile = NULL)

static int build_files(const struct sb_learn_set *set, const struct sb_learn_context *ctx,
		       const struct sb_profile *const *ps, struct sb_learn_rules *r)
{
	struct learned_dir *dirs = calloc(set->n_paths ? set->n_paths : 1, sizeof(*dirs));
	size_t n = 0;
	bool any_native = false;
	int ret = 0;

	if (!dirs)
		return -ENOMEM;
	for (size_t i = 0; i < set->n_paths; i++) {
		const struct sb_learn_path *p = &set->paths[i];
		char *dir;
		bool merged = false;

		if (skipped(p->path, ctx) || (p->native && native_system_path(p->path)))
			continue;
		/* A lookup that found nothing (os.path.exists(), a probe for a
		 * configuration file, gettext's catalogs) needs no grant: the
		 * guard's refusal answers ENOENT as the file system did, and a
		 * grant of the directory would give far more than the program
		 * read ('/' for os.path.exists("/x.ini")). */
		if (!p->write && !exists(p->path))
			continue;
		dir = rule_dir(p->path);
		if (!dir) {
			ret = -ENOMEM;
			goto out;
		}
		if (skipped(dir, ctx) || (p->native && native_system_path(dir))) {
			free(dir);
			continue;
		}
		/* '/' would expose the whole machine: said, never learned. */
		if (streq(dir, "/")) {
			free(dir);
			ret = warn_root(r, p->path, p->write);
			if (ret < 0)
				goto out;
			continue;
		}
		for (size_t j = 0; j < n; j++)
			if (streq(dirs[j].dir, dir)) {
				dirs[j].rw = dirs[j].rw || p->write;
				dirs[j].read = dirs[j].read || !p->write;
				dirs[j].native = dirs[j].native && p->native;
				merged = true;
				break;
			}
		if (merged) {
			free(dir);
			continue;
		}
		dirs[n++] = (struct learned_dir){
		    .dir = dir, .rw = p->write, .read = !p->write, .native = p->native};
	}
	qsort(dirs, n, sizeof(*dirs), cmp_learned_dir);

	/* A write in '/', a top-level directory or a system tree is never
	 * learned as a read-write grant, as no refusal ever suggests one: the
	 * next run could replace what other programs trust there (a write in
	 * /etc, a file removed to climb to /tmp or /home). Said, and only what
	 * was read there is learned. */
	for (size_t i = 0; i < n; i++) {
		if (!dirs[i].rw || !sb_file_policy_system_dir(dirs[i].dir))
			continue;
		ret = warn_system_write(r, dirs[i].dir);
		if (ret < 0)
			goto out;
		dirs[i].rw = false;
		dirs[i].dropped = !dirs[i].read;
	}

	/* Nested duplicates: a directory under another one that grants at least
	 * as much adds nothing. */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			if (i == j || dirs[j].dropped || !sb_path_under(dirs[i].dir, dirs[j].dir))
				continue;
			if (dirs[j].rw || !dirs[i].rw) {
				dirs[i].dropped = true;
				dirs[j].native = dirs[j].native && dirs[i].native;
				break;
			}
		}

	/* What the profile grants already (native and sys.path records are
	 * not refusals, so they may be covered). */
	for (size_t i = 0; i < n; i++) {
		FOR_EACH_PROFILE(ps, profile)
		for (size_t k = 0; !dirs[i].dropped && k < profile->n_exposes; k++) {
			const struct sb_expose_rule *e = &profile->exposes[k];
			const char *granted = e->resolved ? e->resolved : e->path;

			if (!sb_path_under(dirs[i].dir, granted))
				continue;
			if (e->writable || !dirs[i].rw) {
				dirs[i].dropped = true;
			} else if (streq(dirs[i].dir, granted)) {
				/* Granting one directory both ro and rw is an error:
				 * the learned rw replaces the ro line when it is ours
				 * to edit; otherwise say where to change it. */
				if (same_file(e->origin.file, ctx->learn_file)) {
					unsigned *lines =
					    realloc(r->replaced_lines,
						    (r->n_replaced + 1) * sizeof(*lines));

					if (!lines) {
						ret = -ENOMEM;
						goto out;
					}
					r->replaced_lines = lines;
					lines[r->n_replaced++] = e->origin.line;
				} else {
					ret = push_fmt(
					    r, SB_LEARN_FILES, false,
					    "# '%s' was written to, but expose-ro=%s at "
					    "%s:%u grants it read-only: change that line "
					    "to expose-rw=",
					    dirs[i].dir, e->path, e->origin.file, e->origin.line);
					if (ret < 0)
						goto out;
					dirs[i].dropped = true;
				}
			}
		}
		if (!dirs[i].dropped && dirs[i].native)
			any_native = true;
	}

	for (size_t i = 0; ret >= 0 && i < n; i++)
		if (!dirs[i].dropped && !dirs[i].native)
			ret = emit_dir(r, &dirs[i], ctx);
	if (ret >= 0 && any_native)
		ret = push_fmt(r, SB_LEARN_FILES, false,
			       "# seen from native code (not the Python guard):");
	for (size_t i = 0; ret >= 0 && i < n; i++)
		if (!dirs[i].dropped && dirs[i].native)
			ret = emit_dir(r, &dirs[i], ctx);
out:
	for (size_t i = 0; i < n; i++)
		free(dirs[i].dir);
	free(dirs);
	return ret;
}

/* ---- network ----------------------------------------------------------------- */

static int cmp_net(const void *a, const void *b)
{
	const struct sb_learn_net *x = a, *y = b;
	int c = (int)x->native - (int)y->native;

	if (!c)
		c = strcmp(x->host, y->host);
	if (!c)
		c = (int)x->protocol - (int)y->protocol;
	if (!c)
		c = (int)x->direction - (int)y->direction;
	if (!c)
		c = (int)x->port - (int)y->port;
	return c;
}

static bool net_covered(const struct sb_profile *const *ps, const struct sb_learn_net *n)
{
	/* Only literal matches: a host rule would need resolving, and the guard's
	 * own records are refusals anyway. This serves native records. */
	FOR_EACH_PROFILE(ps, profile)
	for (size_t i = 0; i < profile->n_nets; i++) {
		const struct sb_net_rule *rule = &profile->nets[i];

		if (rule->action != SB_NET_ALLOW || !(rule->protocols & n->protocol) ||
		    !(rule->directions & n->direction) || !sb_net_rule_has_port(rule, n->port))
			continue;
		if (rule->network_kind == SB_NET_NETWORK_ANY || streq(rule->network, n->host))
			return true;
	}
	return false;
}

/* A host the NETWORK field names as itself: an address or a host name. A name
 * the program resolved may be anything the resolver took ('*' resolves to the
 * loopback), and '*' or a CIDR there would grant every host. */
static bool host_writable(const char *host)
{
	unsigned char addr[16];

	return inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1 ||
	       sb_net_is_host_name(host);
}

static int build_socket(const struct sb_learn_set *set, const struct sb_profile *const *ps,
			struct sb_learn_rules *r)
{
	_cleanup_free_ struct sb_learn_net *nets =
	    calloc(set->n_nets ? set->n_nets : 1, sizeof(*nets));
	struct sb_buf ports = {0};
	bool native_header = false;
	size_t n = 0;
	int ret = 0;

	if (!nets)
		return -ENOMEM;
	for (size_t i = 0; i < set->n_nets; i++) {
		const struct sb_learn_net *x = &set->nets[i];

		/* The resolver's own queries: pinned names need none on replay. */
		if (x->native && x->port == 53)
			continue;
		if (!host_writable(x->host))
			continue;
		if (net_covered(ps, x))
			continue;
		nets[n++] = *x;
	}
	qsort(nets, n, sizeof(*nets), cmp_net);
	for (size_t i = 0; ret >= 0 && i < n;) {
		size_t j = i;

		sb_buf_reset(&ports);
		for (; j < n && streq(nets[j].host, nets[i].host) &&
		       nets[j].protocol == nets[i].protocol &&
		       nets[j].direction == nets[i].direction && nets[j].native == nets[i].native;
		     j++)
			ret = sb_buf_printf(&ports, "%s%u", j > i ? "," : "", nets[j].port);
		if (ret >= 0 && nets[i].native && !native_header) {
			native_header = true;
			ret = push_fmt(r, SB_LEARN_SOCKET, false,
				       "# seen from native code (not the Python guard):");
		}
		if (ret >= 0)
			ret = push_fmt(r, SB_LEARN_SOCKET, true, "net=ALLOW|%s|%s|%s|%s",
				       nets[i].protocol == SB_NET_UDP ? "udp" : "tcp", nets[i].host,
				       ports.data, nets[i].direction == SB_NET_IN ? "IN" : "OUT");
		i = j;
	}
	sb_buf_reset(&ports);
	return ret;
}

/* ---- imports --------------------------------------------------------------- */

/* Modules that reach native code, start processes, load code or rebuild
 * objects from bytes: a reviewer should look at these first. */
static const char *const dangerous_modules[] = {
    "_ctypes",	 "_pickle", "_posixsubprocess", "cffi",	  "code", "codeop", "ctypes", "dill",
    "importlib", "marshal", "multiprocessing",	"pickle", "pty",  "runpy",  "shelve", "subprocess",
};

/* PEP 594 and the other modules removed after 3.11. */
static const char *const deprecated_modules[] = {
    "aifc",  "asynchat",  "asyncore",	 "audioop", "cgi",     "cgitb",	  "chunk",
    "crypt", "distutils", "imghdr",	 "imp",	    "lib2to3", "mailcap", "msilib",
    "nis",   "nntplib",	  "ossaudiodev", "pipes",   "smtpd",   "sndhdr",  "spwd",
    "sunau", "telnetlib", "uu",		 "xdrlib",
};

static bool in_table(const char *name, const char *const *table, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (streq(name, table[i]))
			return true;
	return false;
}

enum sb_learn_import_group sb_learn_import_group(const char *name, char *const *stdlib_modules)
{
	if (in_table(name, dangerous_modules, ELEMENTSOF(dangerous_modules)))
		return SB_LEARN_IMPORT_DANGEROUS;
	if (in_table(name, deprecated_modules, ELEMENTSOF(deprecated_modules)))
		return SB_LEARN_IMPORT_DEPRECATED;
	if (sb_strv_contains(stdlib_modules, name))
		return SB_LEARN_IMPORT_STDLIB;
	return SB_LEARN_IMPORT_EXTERNAL;
}

static bool import_allowed(const struct sb_profile *const *ps, const char *name)
{
	if (streq(name, "pysandboxes"))
		return true;
	FOR_EACH_PROFILE(ps, profile)
	{
		if (profile->import_all)
			return true;
		for (size_t i = 0; i < profile->n_imports; i++)
			if (streq(profile->imports[i].name, name))
				return true;
	}
	return false;
}

static int build_imports(const struct sb_learn_set *set, const struct sb_learn_context *ctx,
			 const struct sb_profile *const *ps, struct sb_learn_rules *r)
{
	static const struct {
		enum sb_learn_import_group group;
		const char *title;
	} groups[] = {
	    {SB_LEARN_IMPORT_DANGEROUS, "# Dangerous"},
	    {SB_LEARN_IMPORT_STDLIB, "# Standard Python"},
	    {SB_LEARN_IMPORT_EXTERNAL, "# External"},
	    {SB_LEARN_IMPORT_DEPRECATED, "# Deprecated"},
	};
	_cleanup_free_ char **sorted = NULL;
	size_t n = sb_strv_length(set->imports);
	int ret = 0;

	sorted = calloc(n + 1, sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	if (n > 0) {
		memcpy(sorted, set->imports, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), cmp_str);
	}
	for (size_t g = 0; ret >= 0 && g < ELEMENTSOF(groups); g++) {
		struct sb_buf line = {0};
		size_t count = 0;

		for (size_t i = 0; ret >= 0 && i < n; i++) {
			/* A name no import statement could spell ('*', a newline):
			 * never a rule (the recorder refuses them already). */
			if (!sb_profile_module_name_valid(sorted[i]) || strchr(sorted[i], '.') ||
			    import_allowed(ps, sorted[i]) ||
			    sb_learn_import_group(sorted[i], ctx->stdlib_modules) !=
				groups[g].group)
				continue;
			ret = sb_buf_printf(&line, "%s%s",
					    count ? ", " : "python-import=", sorted[i]);
			count++;
		}
		if (ret >= 0 && count) {
			ret = push_fmt(r, SB_LEARN_IMPORT, false, "%s", groups[g].title);
			if (ret >= 0) {
				ret = sb_strv_consume(&r->lines[SB_LEARN_IMPORT],
						      sb_buf_steal(&line));
				r->n_rules++;
			}
		}
		sb_buf_reset(&line);
	}
	return ret;
}

/* ---- environment ----------------------------------------------------------- */

static bool env_covered(const struct sb_profile *const *ps, const char *name)
{
	/* python-sb always passes TERM (spec §2). */
	if (streq(name, "TERM"))
		return true;
	FOR_EACH_PROFILE(ps, profile)
	{
		for (size_t i = 0; i < profile->n_envs; i++)
			if (sb_glob_star_match(profile->envs[i].name, name))
				return true;
		/* unenv= says the program must not see it: learning does not
		 * undo that. */
		for (size_t i = 0; i < profile->n_unenvs; i++)
			if (sb_glob_star_match(profile->unenvs[i].name, name))
				return true;
	}
	return false;
}

static bool env_name_ok(const char *name)
{
	if (!*name)
		return false;
	for (const char *p = name; *p; p++)
		if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9')))
			return false;
	return true;
}

static int build_envs(const struct sb_learn_set *set, const struct sb_profile *const *ps,
		      struct sb_learn_rules *r)
{
	_cleanup_free_ char **sorted = NULL;
	size_t n = sb_strv_length(set->envs);
	int ret = 0;

	sorted = calloc(n + 1, sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	if (n > 0) {
		memcpy(sorted, set->envs, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), cmp_str);
	}
	for (size_t i = 0; ret >= 0 && i < n; i++)
		if (env_name_ok(sorted[i]) && !env_covered(ps, sorted[i]))
			ret =
			    push_fmt(r, SB_LEARN_ENVS, true, "env=%s=${%s}", sorted[i], sorted[i]);
	return ret;
}

/* ---- python-api ------------------------------------------------------------ */

/* The other spelling of the same function (os.system is posix.system): a
 * program may reach it by either name, and the spec's example grants both. */
static const struct sb_api_function *twin_of(const struct sb_api_function *fn)
{
	static const char *const pairs[][2] = {
	    {"os.", "posix."},
	    {"signal.", "_signal."},
	    {"pickle.", "_pickle."},
	};
	char name[160];

	for (size_t i = 0; i < ELEMENTSOF(pairs); i++)
		for (size_t k = 0; k < 2; k++) {
			const char *rest = startswith(fn->qualname, pairs[i][k]);

			if (!rest)
				continue;
			snprintf(name, sizeof(name), "%s%s", pairs[i][1 - k], rest);
			return sb_api_lookup(name);
		}
	return NULL;
}

static bool api_allowed(const struct sb_profile *const *ps, const struct sb_api_function *fn)
{
	FOR_EACH_PROFILE(ps, profile)
	if (sb_api_is_allowed(profile->apis, profile->n_apis, fn, NULL))
		return true;
	return false;
}

static bool api_denied_explicitly(const struct sb_profile *const *ps,
				  const struct sb_api_function *fn)
{
	FOR_EACH_PROFILE(ps, profile)
	{
		const struct sb_api_rule *rule = NULL;

		if (!sb_api_is_allowed(profile->apis, profile->n_apis, fn, &rule) && rule &&
		    rule->deny)
			return true;
	}
	return false;
}

static int build_api(const struct sb_learn_set *set, const struct sb_profile *const *ps,
		     struct sb_learn_rules *r)
{
	_cleanup_free_ bool *learned = calloc(sb_api_registry_size, sizeof(bool));
	int ret = 0;

	if (!learned)
		return -ENOMEM;
	for (size_t i = 0; set->api && i < sb_api_registry_size; i++) {
		const struct sb_api_function *twin;

		if (!set->api[i])
			continue;
		learned[i] = true;
		twin = twin_of(&sb_api_registry[i]);
		/* A twin the profile denies explicitly stays denied. */
		if (twin && !api_denied_explicitly(ps, twin))
			learned[twin - sb_api_registry] = true;
	}
	for (unsigned c = 0; ret >= 0 && c < SB_API_CATEGORY__N; c++) {
		bool used = set->api_category[c], whole = true;

		for (size_t i = 0; i < sb_api_registry_size; i++) {
			const struct sb_api_function *fn = &sb_api_registry[i];

			if (fn->category != c)
				continue;
			if (learned[i] && !api_allowed(ps, fn))
				used = true;
			else if (!api_allowed(ps, fn))
				whole = false;
		}
		if (!used)
			continue;
		if (whole || set->api_category[c]) {
			ret = push_fmt(r, SB_LEARN_API, true, "python-api=ALLOW:%s",
				       sb_api_category_name(c));
			continue;
		}
		for (size_t i = 0; ret >= 0 && i < sb_api_registry_size; i++)
			if (learned[i] && sb_api_registry[i].category == c &&
			    !api_allowed(ps, &sb_api_registry[i]))
				ret = push_fmt(r, SB_LEARN_API, true, "python-api=ALLOW:%s",
					       sb_api_registry[i].qualname);
	}
	return ret;
}

/* ---- remote-result-mode ----------------------------------------------------- */

int sb_learn_set_add_result(struct sb_learn_set *s, const char *needs_objects)
{
	s->n_results++;
	if (needs_objects && !s->result_needs_objects) {
		s->result_needs_objects = strdup(needs_objects);
		if (!s->result_needs_objects)
			return -ENOMEM;
	}
	return 0;
}

/* A single-valued key: written once, and only where no profile sets it. A
 * profile that says objects is never tightened; one that says data-only is
 * never loosened either (that would be a second line, a configuration error,
 * and the user's explicit choice): a warning says what it will refuse. */
static int build_result(const struct sb_learn_set *set, const struct sb_profile *const *ps,
			struct sb_learn_rules *r)
{
	/* The class is the program's: shown without control characters. */
	_cleanup_free_ char *needs = NULL;

	if (!set->n_results)
		return 0;
	if (set->result_needs_objects && !(needs = sb_str_one_line(set->result_needs_objects)))
		return -ENOMEM;
	FOR_EACH_PROFILE(ps, profile)
	{
		const struct sb_origin *o = &profile->scalar_origin[SB_KEY_RESULT_MODE];

		if (!profile->scalar_set[SB_KEY_RESULT_MODE])
			continue;
		if (profile->result_mode == SB_RESULT_DATA_ONLY && needs &&
		    asprintf(&r->warning,
			     "a result needed remote-result-mode=objects (%s), but %s:%u says "
			     "data-only: without learning it is refused; change that line to "
			     "objects if this is wanted",
			     needs, o->file ? o->file : SB_ORIGIN_CLI, o->line) < 0) {
			r->warning = NULL;
			return -ENOMEM;
		}
		return 0;
	}
	if (!needs)
		return push_fmt(r, SB_LEARN_RESULT, true, "remote-result-mode=data-only");
	if (asprintf(
		&r->warning,
		"a result needed remote-result-mode=objects (%s): the learned line says objects; "
		"check that this is wanted",
		needs) < 0) {
		r->warning = NULL;
		return -ENOMEM;
	}
	if (push_fmt(r, SB_LEARN_RESULT, false,
		     "# objects: a result needed %s; check that this is wanted", needs) < 0)
		return -ENOMEM;
	return push_fmt(r, SB_LEARN_RESULT, true, "remote-result-mode=objects");
}

/* ---- eval ------------------------------------------------------------------- */

/* The eval-* lines: src/eval/eval-learn.c builds them. */
static int build_eval(const struct sb_learn_set *set, const struct sb_profile *const *ps,
		      struct sb_learn_rules *r)
{
	const struct sb_eval_config *configs[2] = {ps[0] ? &ps[0]->eval : NULL,
						   ps[1] ? &ps[1]->eval : NULL};
	_cleanup_strv_free_ char **lines = NULL;
	size_t rules = 0;
	int e;

	e = sb_eval_learned_lines(&set->eval, configs, ELEMENTSOF(configs), &lines, &rules);
	if (e < 0)
		return e;
	/* Counted by push_line. */
	(void)rules;
	for (char **l = lines; e >= 0 && l && *l; l++) {
		char *line = strdup(*l);

		e = line ? push_line(r, SB_LEARN_EVAL, (*l)[0] != '#', line) : -ENOMEM;
	}
	return e;
}

/* ---- all --------------------------------------------------------------------- */

int sb_learn_rules_build(const struct sb_learn_set *set, const struct sb_learn_context *ctx,
			 const struct sb_profile *profile, struct sb_learn_rules *ret)
{
	const struct sb_profile *const ps[2] = {profile, ctx->learn_profile};
	struct sb_learn_rules r = {0};
	int e;

	e = build_envs(set, ps, &r);
	if (e >= 0)
		e = build_files(set, ctx, ps, &r);
	if (e >= 0)
		e = build_socket(set, ps, &r);
	if (e >= 0)
		e = build_imports(set, ctx, ps, &r);
	if (e >= 0)
		e = build_api(set, ps, &r);
	/* No rule would change the answer: a note (kept without a rule after
	 * it, written once), for the reviewer. */
	for (char **s = set->refused_syscalls; e >= 0 && s && *s; s++)
		e = push_fmt(&r, SB_LEARN_API, false,
			     "# '%s' was called by native code: the kernel boundary (seccomp) "
			     "refuses it, no rule allows it",
			     *s);
	if (e >= 0)
		e = build_eval(set, ps, &r);
	if (e >= 0)
		e = build_result(set, ps, &r);
	if (e < 0) {
		sb_learn_rules_done(&r);
		return e;
	}
	*ret = r;
	return 0;
}

void sb_learn_rules_done(struct sb_learn_rules *r)
{
	for (size_t i = 0; i < SB_LEARN__N; i++)
		sb_strv_free(r->lines[i]);
	free(r->replaced_lines);
	free(r->warning);
	sb_strv_free(r->warnings);
	*r = (struct sb_learn_rules){0};
}
