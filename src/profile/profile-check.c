/* SPDX-License-Identifier: MIT */
#include "profile.h"

#include <limits.h>
#include <sys/stat.h>

static char *absolute_path(const char *path, const char *cwd)
{
	if (path[0] == '/' || !cwd)
		return strdup(path);
	return sb_path_join(cwd, path);
}

/* The expose-rw rule, other than e, whose tree holds the symbolic link
 * location, or NULL. */
static const struct sb_expose_rule *
writable_holding(const struct sb_profile *p, const struct sb_expose_rule *e, const char *location)
{
	for (size_t i = 0; i < p->n_exposes; i++) {
		const struct sb_expose_rule *w = &p->exposes[i];

		if (w != e && w->writable && w->resolved && sb_path_under(location, w->resolved))
			return w;
	}
	return NULL;
}

/* A rule's path resolved through a symbolic link inside another rule's
 * expose-rw tree, to a place outside that tree: the program may write there,
 * and could have made the link on an earlier run (work/inputs -> /root) to be
 * granted its target, or a read-only tree writable, by this run. An error
 * naming the link; the target named directly is what a profile that means it
 * says. 0 when there is none. */
static int check_planted_link(const struct sb_profile *p, const struct sb_expose_rule *e,
			      const char *abs, struct sb_diags *diags)
{
	_cleanup_free_ char *copy = strdup(abs);
	char *slash;

	if (!copy)
		return -ENOMEM;
	for (char *end = copy + 1; end;) {
		_cleanup_free_ char *parent = NULL, *real_parent = NULL, *location = NULL;
		const struct sb_expose_rule *w;
		struct stat st;
		char saved;

		slash = strchr(end, '/');
		saved = slash ? *slash : '\0';
		if (slash)
			*slash = '\0';
		parent = sb_path_dirname(copy);
		real_parent = parent ? realpath(parent, NULL) : NULL;
		location = real_parent ? sb_path_join(real_parent, strrchr(copy, '/') + 1) : NULL;
		if (location && lstat(location, &st) == 0 && S_ISLNK(st.st_mode) &&
		    (w = writable_holding(p, e, location)) &&
		    !sb_path_under(e->resolved, w->resolved))
			return sb_diags_error(
			    diags, e->origin,
			    "%s='%s' leads through the symbolic link %s, inside expose-rw=%s "
			    "(%s:%u), to %s: the program may write there and could have made the "
			    "link on an earlier run. Name the target itself (%s=%s) if it is meant",
			    e->writable ? "expose-rw" : "expose-ro", e->path, location, w->path,
			    w->origin.file ? w->origin.file : SB_ORIGIN_CLI, w->origin.line,
			    e->resolved, e->writable ? "expose-rw" : "expose-ro", e->resolved);
		if (slash)
			*slash = saved;
		end = slash ? slash + 1 : NULL;
	}
	return 0;
}

static int check_exposes(struct sb_profile *p, const struct sb_load_options *opts,
			 struct sb_diags *diags)
{
	int r;

	for (size_t i = 0; i < p->n_exposes; i++) {
		struct sb_expose_rule *e = &p->exposes[i];
		const char *key = e->writable ? "expose-rw" : "expose-ro";
		_cleanup_free_ char *abs = absolute_path(e->path, opts->cwd);
		char resolved[PATH_MAX];
		struct stat st;

		if (!abs)
			return -ENOMEM;
		if (!realpath(abs, resolved) || stat(resolved, &st) < 0) {
			r = sb_diags_error(diags, e->origin,
					   "%s='%s': the directory must exist (%s)", key, e->path,
					   strerror(errno));
			if (r < 0)
				return r;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			r = sb_diags_error(diags, e->origin, "%s='%s': must be a directory", key,
					   e->path);
			if (r < 0)
				return r;
			continue;
		}
		e->resolved = strdup(resolved);
		if (!e->resolved)
			return -ENOMEM;
		for (size_t j = 0; j < i; j++) {
			const struct sb_expose_rule *o = &p->exposes[j];

			if (!o->resolved || o->writable == e->writable ||
			    !streq(o->resolved, e->resolved))
				continue;
			r = sb_diags_error(
			    diags, e->origin,
			    "'%s' is exposed both read-only and read-write (see %s:%u)",
			    e->resolved, o->origin.file, o->origin.line);
			if (r < 0)
				return r;
		}
	}
	/* Once every rule is resolved: any of them may hold the link. */
	for (size_t i = 0; i < p->n_exposes; i++) {
		const struct sb_expose_rule *e = &p->exposes[i];
		_cleanup_free_ char *abs = NULL;

		if (!e->resolved)
			continue;
		abs = absolute_path(e->path, opts->cwd);
		r = abs ? check_planted_link(p, e, abs, diags) : -ENOMEM;
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_learn(struct sb_profile *p, const struct sb_load_options *opts,
		       struct sb_diags *diags)
{
	int r;

	if (p->learn == SB_LEARN_FILE && p->learn_file) {
		_cleanup_free_ char *abs = absolute_path(p->learn_file, opts->cwd);
		_cleanup_free_ char *dir = NULL;
		struct stat st;

		if (!abs)
			return -ENOMEM;
		dir = sb_path_dirname(abs);
		if (!dir)
			return -ENOMEM;
		if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
			r = sb_diags_error(diags, p->learn_origin,
					   "learn='%s': the directory '%s' must exist",
					   p->learn_file, dir);
			if (r < 0)
				return r;
		}
	}

	if (!p->learn_locked)
		return 0;
	/* A learn= in another file is reported by the loader (it is also a
	 * repeated key); here only the command line can ask. */
	if (p->learn == SB_LEARN_FILE && p->learn_requested_by_cli)
		return sb_diags_error(diags, p->learn_lock_origin,
				      "learning mode is forbidden, but requested by --learn on the "
				      "command line");
	if (p->has_cli_rules)
		return sb_diags_error(diags, p->learn_lock_origin,
				      "learning mode is forbidden, but requested by rules on the "
				      "command line (learn=false refuses every command-line rule)");
	return 0;
}

static bool dynamic_code_granted(const struct sb_profile *p, const struct sb_api_rule **ret_rule)
{
	static const char *const builtins[] = {"builtins.eval", "builtins.exec",
					       "builtins.compile"};

	for (size_t i = 0; i < ELEMENTSOF(builtins); i++) {
		const struct sb_api_function *fn = sb_api_lookup(builtins[i]);

		if (fn && sb_api_is_allowed(p->apis, p->n_apis, fn, ret_rule))
			return true;
	}
	return false;
}

static bool eval_list_has(const struct sb_eval_profile *ep, enum sb_eval_list_key k,
			  const char *value, bool deny)
{
	for (size_t i = 0; i < ep->n_items[k]; i++)
		if (ep->items[k][i].deny == deny && streq(ep->items[k][i].value, value))
			return true;
	return false;
}

/* eval-import grants something only through import statements: the group or
 * its ast nodes, and DENY wins. A deny-only eval-import grants nothing. */
static bool eval_import_needs_syntax(const struct sb_eval_profile *ep)
{
	bool grants = false, statements;

	for (size_t i = 0; i < ep->n_items[SB_EVAL_IMPORT]; i++)
		grants = grants || !ep->items[SB_EVAL_IMPORT][i].deny;
	if (!grants)
		return false;
	statements = eval_list_has(ep, SB_EVAL_SYNTAX, "import", false) ||
		     eval_list_has(ep, SB_EVAL_SYNTAX, "Import", false) ||
		     eval_list_has(ep, SB_EVAL_SYNTAX, "ImportFrom", false);
	return !statements || eval_list_has(ep, SB_EVAL_SYNTAX, "import", true);
}

static int check_eval(struct sb_profile *p, struct sb_diags *diags)
{
	const struct sb_api_rule *grant = NULL;
	int r;

	/* Two answers to one question: either eval is unguarded or it is guarded
	 * by these rules. The original let the grant win silently. */
	if (p->eval.any_key && dynamic_code_granted(p, &grant) && grant) {
		r = sb_diags_error(
		    diags, grant->origin,
		    "python-api grants eval/exec/compile (dynamic-code) while eval-* "
		    "rules guard them: remove one of the two");
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < p->eval.n_profiles; i++) {
		const struct sb_eval_profile *ep = &p->eval.profiles[i];

		if (!eval_import_needs_syntax(ep))
			continue;
		r = sb_diags_error(diags, ep->items[SB_EVAL_IMPORT][0].origin,
				   "eval-import%s%s needs the import statements: add "
				   "eval-syntax%s%s=import",
				   ep->name ? ":" : "", ep->name ? ep->name : "",
				   ep->name ? ":" : "", ep->name ? ep->name : "");
		if (r < 0)
			return r;
	}
	return 0;
}

static int warn_dangerous_grants(const struct sb_profile *p, struct sb_diags *diags)
{
	static const enum sb_api_category dangerous[] = {SB_API_PROCESS_EXEC, SB_API_DYNAMIC_CODE,
							 SB_API_DESERIALIZATION};
	int r;

	for (size_t i = 0; i < p->n_apis; i++) {
		const struct sb_api_rule *a = &p->apis[i];

		if (a->deny)
			continue;
		for (size_t j = 0; j < ELEMENTSOF(dangerous); j++) {
			if (a->kind == SB_API_TARGET_FUNCTION ||
			    (a->kind == SB_API_TARGET_CATEGORY && a->category != dangerous[j]))
				continue;
			r = sb_diags_warning(
			    diags, a->origin,
			    "python-api grants the whole '%s' category: the "
			    "program can %s",
			    sb_api_category_name(dangerous[j]),
			    dangerous[j] == SB_API_PROCESS_EXEC ? "start any process"
			    : dangerous[j] == SB_API_DYNAMIC_CODE
				? "run any code it builds at run time"
				: "rebuild any object from bytes (pickle gadgets)");
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int sb_profile_check(struct sb_profile *p, const struct sb_load_options *opts,
		     struct sb_diags *diags)
{
	size_t errors_before = diags->n_errors;
	int r;

	r = check_exposes(p, opts, diags);
	if (r >= 0)
		r = check_learn(p, opts, diags);
	if (r >= 0)
		r = check_eval(p, diags);
	if (r >= 0)
		r = warn_dangerous_grants(p, diags);
	if (r < 0)
		return r;
	return diags->n_errors > errors_before ? -EINVAL : 0;
}
