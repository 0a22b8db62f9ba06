/* SPDX-License-Identifier: MIT */
#include "profile.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "expand.h"
#include "profile-keys.h"

/* One "key=value" line before it is interpreted. */
struct sb_record {
	char *key;
	char *value;
	char *rule_dir; /* directory of the holding file; NULL for the command line */
	struct sb_origin origin;
	bool from_cli;
};

struct sb_file_id {
	dev_t dev;
	ino_t ino;
};

struct sb_loader {
	const struct sb_load_options *opts;
	struct sb_profile *profile;
	struct sb_diags *diags;
	struct sb_file_id *seen;
	size_t n_seen;
	struct sb_record *records;
	size_t n_records;
	size_t max_file_size;
	unsigned max_depth;
};

static void sb_loader_done(struct sb_loader *l)
{
	for (size_t i = 0; i < l->n_records; i++) {
		free(l->records[i].key);
		free(l->records[i].value);
		free(l->records[i].rule_dir);
	}
	free(l->records);
	free(l->seen);
}

static int push_record(struct sb_loader *l, const char *key, const char *value, const char *dir,
		       struct sb_origin origin, bool from_cli)
{
	struct sb_record *n = realloc(l->records, (l->n_records + 1) * sizeof(*n));
	struct sb_record *rec;

	if (!n)
		return -ENOMEM;
	l->records = n;
	rec = &l->records[l->n_records];
	*rec = (struct sb_record){.origin = origin, .from_cli = from_cli};
	rec->key = strdup(key);
	rec->value = strdup(value);
	rec->rule_dir = dir ? strdup(dir) : NULL;
	l->n_records++;
	if (!rec->key || !rec->value || (dir && !rec->rule_dir))
		return -ENOMEM;
	return 0;
}

/* Cuts a '#' comment that is outside single or double quotes. */
static void strip_comment(char *line)
{
	char quote = 0;

	for (char *c = line; *c; c++) {
		if (quote) {
			if (*c == quote)
				quote = 0;
		} else if (*c == '"' || *c == '\'') {
			quote = *c;
		} else if (*c == '#') {
			*c = '\0';
			return;
		}
	}
}

/* Removes one pair of matching surrounding quotes, which only exist to keep a
 * '#' or edge spaces in a value. */
static char *unquote(char *s)
{
	size_t n = strlen(s);

	if (n >= 2 && (s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0]) {
		s[n - 1] = '\0';
		return s + 1;
	}
	return s;
}

static int load_file(struct sb_loader *l, const char *path, unsigned depth, bool is_root,
		     struct sb_origin included_from);

/* Include resolution (spec 3.2): a bare name sits next to the including file,
 * "./" and other relative paths start from the current directory, "~" is the
 * home directory. */
static char *resolve_include(const struct sb_loader *l, const char *path, const char *including)
{
	_cleanup_free_ char *dir = NULL;

	if (path[0] == '/')
		return strdup(path);
	if (path[0] == '~')
		return sb_expand_tilde(path, l->opts->home);
	if (!strchr(path, '/')) {
		dir = sb_path_dirname(including);
		return dir ? sb_path_join(dir, path) : NULL;
	}
	return sb_path_join(l->opts->cwd ? l->opts->cwd : ".", path);
}

static int handle_include(struct sb_loader *l, char *arg, const char *file, struct sb_origin origin,
			  unsigned depth)
{
	_cleanup_free_ char *expanded = NULL, *err = NULL, *resolved = NULL, *unset = NULL;
	size_t n = strlen(arg);
	int r;

	if (n < 2 || (arg[0] != '"' && arg[0] != '\'') || arg[n - 1] != arg[0])
		return sb_diags_error(l->diags, origin,
				      "Invalid include: expected include \"path\"");
	arg[n - 1] = '\0';
	r = sb_expand_ex(arg + 1, l->opts->getenv, l->opts->getenv_userdata, &expanded, &err,
			 &unset);
	if (r == -EINVAL)
		return sb_diags_error(l->diags, origin, "%s", err);
	if (r < 0)
		return r;
	/* As for expose-*: a forgotten variable must not choose another file. */
	if (unset && *expanded)
		return sb_diags_error(l->diags, origin,
				      "include \"%s\": ${%s} is not set (or empty), which would "
				      "include '%s'; set it, or give a default: ${%s:-...}",
				      arg + 1, unset, expanded, unset);
	if (*expanded == '\0')
		return sb_diags_error(l->diags, origin, "Invalid include: empty path");
	resolved = resolve_include(l, expanded, file);
	if (!resolved)
		return -ENOMEM;
	if (depth + 1 > l->max_depth)
		return sb_diags_error(l->diags, origin, "includes nested deeper than %u files",
				      l->max_depth);
	return load_file(l, resolved, depth + 1, false, origin);
}

static int parse_line(struct sb_loader *l, char *line, const char *file, const char *dir,
		      struct sb_origin origin, unsigned depth)
{
	const char *rest;
	char *eq, *key, *value;

	strip_comment(line);
	line = sb_strstrip(line);
	/* Template lines ("{...}") belong to the generator, not to the policy. */
	if (*line == '\0' || *line == '{')
		return 0;

	rest = startswith(line, "include");
	if (rest && (*rest == ' ' || *rest == '\t' || *rest == '"' || *rest == '\''))
		return handle_include(l, sb_strstrip((char *)rest), file, origin, depth);

	eq = strchr(line, '=');
	if (!eq)
		return sb_diags_error(l->diags, origin, "Invalid rule '%s'", line);
	*eq = '\0';
	key = sb_strstrip(line);
	value = unquote(sb_strstrip(eq + 1));
	if (*key == '\0') {
		*eq = '=';
		return sb_diags_error(l->diags, origin, "Invalid rule '%s'", line);
	}
	return push_record(l, key, value, dir, origin, false);
}

static int remember_file(struct sb_loader *l, int fd, bool *ret_seen)
{
	struct sb_file_id *n;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	for (size_t i = 0; i < l->n_seen; i++)
		if (l->seen[i].dev == st.st_dev && l->seen[i].ino == st.st_ino) {
			*ret_seen = true;
			return 0;
		}
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	n = realloc(l->seen, (l->n_seen + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	l->seen = n;
	l->seen[l->n_seen++] = (struct sb_file_id){st.st_dev, st.st_ino};
	*ret_seen = false;
	return 0;
}

static int read_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
	struct sb_buf buf = {0};
	char chunk[8192];

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		int r;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			sb_buf_reset(&buf);
			return r;
		}
		if (n == 0)
			break;
		if (buf.len + (size_t)n > max) {
			sb_buf_reset(&buf);
			return -EFBIG;
		}
		r = sb_buf_putn(&buf, chunk, (size_t)n);
		if (r < 0) {
			sb_buf_reset(&buf);
			return r;
		}
	}
	*ret_len = buf.len;
	*ret = sb_buf_steal(&buf);
	return *ret ? 0 : -ENOMEM;
}

static int load_file(struct sb_loader *l, const char *path, unsigned depth, bool is_root,
		     struct sb_origin included_from)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *text = NULL, *dir = NULL;
	const char *file;
	char *line, *save = NULL;
	bool seen = false;
	unsigned lineno = 0;
	size_t len = 0;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		struct stat st;

		/* A link to nothing is a rule file that cannot be read, not a
		 * missing one: a missing root file starts learning mode, which
		 * runs the program unconfined, and a profile linked from a share
		 * that is not mounted must not do that. */
		if (r == -ENOENT && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
			return sb_diags_error(
			    l->diags, is_root ? (struct sb_origin){path, 0} : included_from,
			    "'%s' is a symbolic link to a file that does not exist: "
			    "fix the link or remove it",
			    path);
		/* A missing include is skipped on purpose: the shipped defaults
		 * name optional per-user and system-wide files. */
		if (r == -ENOENT || r == -ENOTDIR) {
			if (is_root)
				l->profile->root_missing = true;
			else if (!sb_strv_contains(l->profile->missing_files, path) &&
				 sb_strv_push(&l->profile->missing_files, path) < 0)
				return -ENOMEM;
			return 0;
		}
		if (is_root)
			return sb_diags_error(l->diags, (struct sb_origin){path, 0},
					      "cannot read rule file: %s", strerror(-r));
		return sb_diags_error(l->diags, included_from, "cannot read include '%s': %s", path,
				      strerror(-r));
	}
	r = remember_file(l, fd, &seen);
	if (r == -EISDIR)
		return sb_diags_error(l->diags,
				      is_root ? (struct sb_origin){path, 0} : included_from,
				      "'%s' is a directory, not a rule file", path);
	if (r < 0)
		return r;
	if (seen) /* include loop, or the same file twice: loaded once */
		return 0;

	r = read_fd(fd, l->max_file_size, &text, &len);
	if (r == -EFBIG)
		return sb_diags_error(l->diags,
				      is_root ? (struct sb_origin){path, 0} : included_from,
				      "'%s' is larger than %zu bytes", path, l->max_file_size);
	if (r < 0)
		return sb_diags_error(l->diags,
				      is_root ? (struct sb_origin){path, 0} : included_from,
				      "cannot read '%s': %s", path, strerror(-r));
	if (strlen(text) != len)
		return sb_diags_error(l->diags,
				      is_root ? (struct sb_origin){path, 0} : included_from,
				      "'%s' contains a NUL byte: not a rule file", path);

	r = sb_strv_push(&l->profile->files, path);
	if (r < 0)
		return r;
	file = l->profile->files[sb_strv_length(l->profile->files) - 1];
	dir = sb_path_dirname(path);
	if (!dir)
		return -ENOMEM;

	/* Not strtok: empty lines must still count. */
	for (line = text; line; line = save) {
		char *nl = strchr(line, '\n');
		size_t line_len;

		save = nl ? nl + 1 : NULL;
		if (nl)
			*nl = '\0';
		line_len = strlen(line);
		if (line_len && line[line_len - 1] == '\r')
			line[line_len - 1] = '\0';
		lineno++;
		r = parse_line(l, line, file, dir, (struct sb_origin){file, lineno}, depth);
		if (r < 0)
			return r;
	}
	return 0;
}

static int load_cli_rules(struct sb_loader *l)
{
	char *const *rules = l->opts->cli_rules;

	for (size_t i = 0; rules && rules[i]; i++) {
		_cleanup_free_ char *copy = strdup(rules[i]);
		char *eq;
		int r;

		if (!copy)
			return -ENOMEM;
		eq = strchr(copy, '=');
		if (eq)
			*eq = '\0';
		r = push_record(l, copy, eq ? eq + 1 : "", NULL,
				(struct sb_origin){SB_ORIGIN_CLI, (unsigned)i + 1}, true);
		if (r < 0)
			return r;
		l->profile->has_cli_rules = true;
	}
	return 0;
}

static bool scalar_has_cli(const struct sb_loader *l, const char *key)
{
	for (size_t i = 0; i < l->n_records; i++)
		if (l->records[i].from_cli && streq(l->records[i].key, key))
			return true;
	return false;
}

/* learn=false in one file and learn=<file> in another: the repeat is an error
 * of its own, but the lock is the point, so it is reported too. */
static int check_learn_lock_in_files(struct sb_loader *l)
{
	const struct sb_record *lock = NULL, *request = NULL;

	for (size_t i = 0; i < l->n_records; i++) {
		const struct sb_record *rec = &l->records[i];

		if (rec->from_cli || !streq(rec->key, "learn"))
			continue;
		if (streq(rec->value, "false"))
			lock = lock ? lock : rec;
		else
			request = request ? request : rec;
	}
	if (!lock || !request)
		return 0;
	return sb_diags_error(l->diags, lock->origin,
			      "learning mode is forbidden, but requested by learn=%s at %s:%u",
			      request->value, request->origin.file, request->origin.line);
}

/* Interprets the records. A scalar key may appear once in the files and once on
 * the command line; the command line wins. */
static int apply_records(struct sb_loader *l)
{
	struct sb_profile *p = l->profile;
	const struct sb_origin *first_file[SB_SCALAR__N] = {NULL},
			       *first_cli[SB_SCALAR__N] = {NULL};
	int r;

	for (size_t i = 0; i < l->n_records; i++) {
		const struct sb_record *rec = &l->records[i];
		const struct sb_key_def *def = sb_key_lookup(rec->key);
		struct sb_key_context ctx = {
		    .opts = l->opts, .rule_dir = rec->rule_dir, .from_cli = rec->from_cli};
		_cleanup_free_ char *value = NULL, *err = NULL;

		if (!def) {
			const char *closest = sb_key_closest(rec->key);

			if (closest)
				r = sb_diags_error(
				    l->diags, rec->origin,
				    "Invalid rule '%s%s=%s': unknown key '%s', closest "
				    "known key is '%s'",
				    rec->from_cli ? "--" : "", rec->key, rec->value, rec->key,
				    closest);
			else
				r = sb_diags_error(l->diags, rec->origin, "Invalid rule '%s%s=%s'",
						   rec->from_cli ? "--" : "", rec->key, rec->value);
			if (r < 0)
				return r;
			continue;
		}
		if (def->scalar >= 0) {
			const struct sb_origin **first = rec->from_cli ? first_cli : first_file;

			if (first[def->scalar]) {
				r = sb_diags_error(
				    l->diags, rec->origin,
				    "Multiple %s parameters (first at %s:%u)", rec->key,
				    first[def->scalar]->file ? first[def->scalar]->file
							     : SB_ORIGIN_CLI,
				    first[def->scalar]->line);
				if (r < 0)
					return r;
				continue;
			}
			first[def->scalar] = &rec->origin;
			/* The lock is kept even when the command line names another
			 * learn value: it exists to refuse exactly that. */
			if (!rec->from_cli && scalar_has_cli(l, rec->key) &&
			    !(def->scalar == SB_KEY_LEARN && streq(rec->value, "false")))
				continue;
			p->scalar_set[def->scalar] = true;
			p->scalar_origin[def->scalar] = rec->origin;
		}
		if (def->raw_value) {
			value = strdup(rec->value);
			if (!value)
				return -ENOMEM;
		} else {
			_cleanup_free_ char *unset = NULL;

			r = sb_expand_ex(rec->value, l->opts->getenv, l->opts->getenv_userdata,
					 &value, &err, def->path_value ? &unset : NULL);
			if (r == -EINVAL) {
				r = sb_diags_error(l->diags, rec->origin, "%s", err);
				if (r < 0)
					return r;
				continue;
			}
			if (r < 0)
				return r;
			/* expose-ro=${DATA}/ with DATA unset would grant all of /: a
			 * deployment that forgot a variable must not widen a grant
			 * (nor move an ignore= elsewhere). An empty value has an
			 * error of its own. */
			if (unset && *value) {
				r = sb_diags_error(
				    l->diags, rec->origin,
				    "%s=%s: ${%s} is not set (or empty), which would "
				    "make the rule name '%s'; set it, or give a "
				    "default: ${%s:-...}",
				    rec->key, rec->value, unset, value, unset);
				if (r < 0)
					return r;
				continue;
			}
		}
		r = def->parse(p, &ctx, rec->key, value, rec->origin, l->diags);
		if (r < 0)
			return r;
	}
	return 0;
}

int sb_profile_load(const struct sb_load_options *opts, struct sb_profile **ret,
		    struct sb_diags *diags)
{
	_cleanup_(sb_profile_freep) struct sb_profile *p = NULL;
	struct sb_loader l = {
	    .opts = opts,
	    .diags = diags,
	    .max_file_size = opts->max_file_size ? opts->max_file_size : 1024 * 1024,
	    .max_depth = opts->max_include_depth ? opts->max_include_depth : 32,
	};
	size_t errors_before = diags->n_errors;
	int r;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->py_sandbox = true;
	p->port = -1;
	p->result_mode = SB_RESULT_DATA_ONLY;
	p->result_guard = true;
	l.profile = p;

	if (opts->path) {
		p->root_file = strdup(opts->path);
		if (!p->root_file)
			return -ENOMEM;
		r = load_file(&l, opts->path, 0, true, (struct sb_origin){opts->path, 0});
	} else {
		p->root_missing = true;
		r = 0;
	}
	if (r >= 0)
		r = load_cli_rules(&l);
	if (r >= 0)
		r = apply_records(&l);
	if (r >= 0)
		r = check_learn_lock_in_files(&l);
	sb_loader_done(&l);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(p);
	return diags->n_errors > errors_before ? -EINVAL : 0;
}

struct sb_profile *sb_profile_free(struct sb_profile *p)
{
	if (!p)
		return NULL;
	sb_strv_free(p->files);
	sb_strv_free(p->missing_files);
	free(p->root_file);
	free(p->learn_file);
	for (size_t i = 0; i < p->n_envs; i++) {
		free(p->envs[i].name);
		free(p->envs[i].value);
		free(p->envs[i].host_name);
		free(p->envs[i].fallback);
		free(p->envs[i].written);
	}
	free(p->envs);
	for (size_t i = 0; i < p->n_unenvs; i++)
		free(p->unenvs[i].name);
	free(p->unenvs);
	for (size_t i = 0; i < p->n_exposes; i++) {
		free(p->exposes[i].path);
		free(p->exposes[i].resolved);
	}
	free(p->exposes);
	for (size_t i = 0; i < p->n_ignores; i++)
		free(p->ignores[i].name);
	free(p->ignores);
	for (size_t i = 0; i < p->n_nets; i++)
		sb_net_rule_done(&p->nets[i]);
	free(p->nets);
	for (size_t i = 0; i < p->n_imports; i++)
		free(p->imports[i].name);
	free(p->imports);
	free(p->apis);
	sb_eval_config_done(&p->eval);
	for (size_t i = 0; i < p->n_params; i++) {
		free(p->params[i].provider);
		free(p->params[i].key);
		free(p->params[i].value);
	}
	free(p->params);
	free(p);
	return NULL;
}
