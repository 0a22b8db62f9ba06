/* SPDX-License-Identifier: MIT */
#include "eval-learn.h"

#include "eval-grammar.h"
#include "profile.h"
#include "util.h"

static const char kind_code[SB_EVAL_LEARN__N] = {'n', 'c', 'a', 'i', 'm', 'x', 'f'};

static const enum sb_eval_list_key kind_key[SB_EVAL_LEARN__N] = {
    [SB_EVAL_LEARN_NODE] = SB_EVAL_SYNTAX,	   [SB_EVAL_LEARN_CALL] = SB_EVAL_CALL,
    [SB_EVAL_LEARN_ATTRIBUTE] = SB_EVAL_ATTRIBUTE, [SB_EVAL_LEARN_IMPORT] = SB_EVAL_IMPORT,
    [SB_EVAL_LEARN_MAGIC] = SB_EVAL_MAGIC,
};

int sb_eval_learned_add(struct sb_eval_learned *l, enum sb_eval_learn_kind kind,
			const char *profile, const char *name)
{
	_cleanup_free_ char *record = NULL;

	if ((unsigned)kind >= SB_EVAL_LEARN__N || !name || !*name || strpbrk(name, " \n\r"))
		return -EINVAL;
	/* A name becomes an item of an eval-* list, where '*' is a pattern
	 * and ',' '#' '=' are syntax: a name the program chose
	 * (getattr(o, "*")) that is no identifier is never learned. The sites
	 * of the two comment kinds are escaped where they are written. */
	if (kind < SB_EVAL_LEARN_CONTEXT &&
	    !sb_profile_name_valid(name, kind == SB_EVAL_LEARN_IMPORT))
		return -EINVAL;
	if (!profile)
		profile = "";
	if (strpbrk(profile, " \n\r"))
		return -EINVAL;
	if (asprintf(&record, "%c %s %s", kind_code[kind], profile, name) < 0) {
		record = NULL;
		return -ENOMEM;
	}
	if (sb_strv_contains(l->records, record))
		return 0;
	return sb_strv_consume(&l->records, TAKE_PTR(record));
}

void sb_eval_learned_done(struct sb_eval_learned *l)
{
	sb_strv_free(l->records);
	l->records = NULL;
}

/* Splits a record into its kind, profile ("" for the default) and name, in
 * place of a copy. */
static int parse_record(const char *record, enum sb_eval_learn_kind *kind, char **profile,
			char **name)
{
	_cleanup_free_ char *copy = strdup(record);
	char *sp1, *sp2;

	if (!copy)
		return -ENOMEM;
	sp1 = strchr(copy, ' ');
	sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (!sp1 || !sp2)
		return -EINVAL;
	*sp1 = *sp2 = '\0';
	*kind = SB_EVAL_LEARN__N;
	for (size_t k = 0; k < SB_EVAL_LEARN__N; k++)
		if (copy[0] == kind_code[k])
			*kind = (enum sb_eval_learn_kind)k;
	*profile = strdup(sp1 + 1);
	*name = strdup(sp2 + 1);
	if (!*profile || !*name) {
		free(*profile);
		free(*name);
		return -ENOMEM;
	}
	return 0;
}

static const struct sb_eval_profile *find_profile(const struct sb_eval_config *cfg,
						  const char *profile)
{
	return sb_eval_config_find(cfg, *profile ? profile : NULL);
}

/* Whether an item of key k in p names value: exactly, through a pattern
 * (not for eval-syntax), or through the group that holds the node. */
static bool item_matches(enum sb_eval_list_key k, const char *item, const char *value)
{
	int node;

	if (streq(item, value))
		return true;
	if (k == SB_EVAL_SYNTAX) {
		node = sb_eval_node_find(value);
		return node >= 0 && sb_eval_nodes[node].group &&
		       streq(sb_eval_nodes[node].group, item);
	}
	return strchr(item, '*') && sb_glob_star_match(item, value);
}

/* 1: some config allows value, -1: some config denies it, 0: neither. */
static int decided(const struct sb_eval_config *const *configs, size_t n, const char *profile,
		   enum sb_eval_list_key k, const char *value)
{
	bool allowed = false;

	for (size_t c = 0; c < n; c++) {
		const struct sb_eval_profile *p =
		    configs[c] ? find_profile(configs[c], profile) : NULL;

		for (size_t i = 0; p && i < p->n_items[k]; i++) {
			if (!item_matches(k, p->items[k][i].value, value))
				continue;
			if (p->items[k][i].deny)
				return -1;
			allowed = true;
		}
	}
	return allowed ? 1 : 0;
}

static char *key_name(enum sb_eval_list_key k, const char *profile)
{
	char *s;

	if (asprintf(&s, "%s%s%s", sb_eval_list_key_name(k), *profile ? ":" : "", profile) < 0)
		return NULL;
	return s;
}

/* The learned names of one key and profile, missing from the configs. */
static int missing_names(const struct sb_eval_learned *l,
			 const struct sb_eval_config *const *configs, size_t n,
			 enum sb_eval_learn_kind kind, const char *profile, char ***ret)
{
	for (char **r = l->records; r && *r; r++) {
		_cleanup_free_ char *rp = NULL, *name = NULL;
		enum sb_eval_learn_kind rk;
		int e = parse_record(*r, &rk, &rp, &name);

		if (e == -ENOMEM)
			return e;
		if (e < 0 || rk != kind || !streq(rp, profile))
			continue;
		if (kind == SB_EVAL_LEARN_NODE) {
			int node = sb_eval_node_find(name);

			if (node < 0 || sb_eval_node_implicit((size_t)node))
				continue;
		}
		if (kind != SB_EVAL_LEARN_CONTEXT && kind != SB_EVAL_LEARN_FREE &&
		    decided(configs, n, profile, kind_key[kind], name))
			continue;
		if (sb_strv_push(ret, name) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* eval-syntax: whole groups first (spec order), then the nodes left, in the
 * ast module's order. */
static int syntax_value(char **nodes, struct sb_buf *value)
{
	size_t n = sb_strv_length(nodes);
	_cleanup_free_ bool *used = calloc(n ? n : 1, sizeof(bool));
	int r = 0;

	if (!used)
		return -ENOMEM;
	for (size_t g = 0; r >= 0 && g < sb_eval_n_syntax_groups; g++) {
		const char *group = sb_eval_syntax_groups[g];
		bool whole = true;

		for (size_t i = 0; whole && i < sb_eval_n_nodes; i++)
			if (sb_eval_nodes[i].group && streq(sb_eval_nodes[i].group, group))
				whole = sb_strv_contains(nodes, sb_eval_nodes[i].name);
		if (!whole)
			continue;
		for (size_t j = 0; j < n; j++) {
			int node = sb_eval_node_find(nodes[j]);

			if (node >= 0 && sb_eval_nodes[node].group &&
			    streq(sb_eval_nodes[node].group, group))
				used[j] = true;
		}
		r = sb_buf_printf(value, "%s%s", value->len ? ", " : "", group);
	}
	for (size_t i = 0; r >= 0 && i < sb_eval_n_nodes; i++)
		for (size_t j = 0; r >= 0 && j < n; j++)
			if (!used[j] && streq(nodes[j], sb_eval_nodes[i].name))
				r = sb_buf_printf(value, "%s%s", value->len ? ", " : "", nodes[j]);
	return r;
}

static int names_value(char **names, struct sb_buf *value)
{
	int r = 0;

	qsort(names, sb_strv_length(names), sizeof(char *), cmp_str);
	for (char **s = names; r >= 0 && s && *s; s++)
		r = sb_buf_printf(value, "%s%s", value->len ? ", " : "", *s);
	return r;
}

static int profile_lines(const struct sb_eval_learned *l,
			 const struct sb_eval_config *const *configs, size_t n, const char *profile,
			 char ***lines, size_t *rules)
{
	static const enum sb_eval_learn_kind order[] = {
	    SB_EVAL_LEARN_NODE,	 SB_EVAL_LEARN_CALL,   SB_EVAL_LEARN_ATTRIBUTE,
	    SB_EVAL_LEARN_MAGIC, SB_EVAL_LEARN_IMPORT,
	};
	_cleanup_strv_free_ char **sites = NULL;
	int r;

	r = missing_names(l, configs, n, SB_EVAL_LEARN_CONTEXT, profile, &sites);
	for (char **s = sites; r >= 0 && s && *s; s++) {
		char *line;

		if (asprintf(
			&line,
			"# 'eval() at %s' used the caller's namespace (eval-namespace=adaptive): "
			"eval-call lists what the code calls; eval-namespace=closed would "
			"declare the whole namespace here",
			*s) < 0)
			return -ENOMEM;
		r = sb_strv_consume(lines, line);
	}
	sb_strv_free(sites);
	sites = NULL;
	if (r >= 0)
		r = missing_names(l, configs, n, SB_EVAL_LEARN_FREE, profile, &sites);
	for (char **s = sites; r >= 0 && s && *s; s++) {
		/* "file:line:a,b": the names after the last ':'. */
		const char *names = strrchr(*s, ':');
		char *line;

		if (!names)
			continue;
		if (asprintf(&line,
			     "# 'eval() at %.*s' read the caller's variables %s: a guarded eval() "
			     "without a namespace sees none of them; pass them in a dict "
			     "(eval(source, {...}))",
			     (int)(names - *s), *s, names + 1) < 0)
			return -ENOMEM;
		r = sb_strv_consume(lines, line);
	}
	for (size_t o = 0; r >= 0 && o < ELEMENTSOF(order); o++) {
		_cleanup_strv_free_ char **names = NULL;
		_cleanup_free_ char *key = NULL;
		struct sb_buf value = {0};
		char *line;

		r = missing_names(l, configs, n, order[o], profile, &names);
		if (r < 0 || !names)
			continue;
		key = key_name(kind_key[order[o]], profile);
		if (!key)
			return -ENOMEM;
		r = order[o] == SB_EVAL_LEARN_NODE ? syntax_value(names, &value)
						   : names_value(names, &value);
		if (r >= 0 && asprintf(&line, "%s=%s", key, value.data ? value.data : "") < 0)
			r = -ENOMEM;
		sb_buf_reset(&value);
		if (r < 0)
			return r;
		r = sb_strv_consume(lines, line);
		(*rules)++;
	}
	return r;
}

int sb_eval_learned_lines(const struct sb_eval_learned *l,
			  const struct sb_eval_config *const *configs, size_t n_configs,
			  char ***ret_lines, size_t *ret_rules)
{
	_cleanup_strv_free_ char **profiles = NULL, **lines = NULL;
	size_t rules = 0;
	int r = 0;

	for (char **rec = l->records; r >= 0 && rec && *rec; rec++) {
		_cleanup_free_ char *profile = NULL, *name = NULL;
		enum sb_eval_learn_kind kind;

		r = parse_record(*rec, &kind, &profile, &name);
		if (r == -EINVAL) {
			r = 0;
			continue;
		}
		if (r >= 0 && !sb_strv_contains(profiles, profile))
			r = sb_strv_push(&profiles, profile);
	}
	/* The default profile first, then the named ones by name. */
	if (profiles)
		qsort(profiles, sb_strv_length(profiles), sizeof(char *), cmp_str);
	for (char **p = profiles; r >= 0 && p && *p; p++)
		r = profile_lines(l, configs, n_configs, *p, &lines, &rules);
	if (r < 0)
		return r;
	*ret_lines = TAKE_PTR(lines);
	*ret_rules = rules;
	return 0;
}
