/* SPDX-License-Identifier: MIT */
#include "env-policy.h"

struct env_entry {
	char *name;
	char *value;
};

struct env_map {
	struct env_entry *items;
	size_t n;
};

static int env_map_set(struct env_map *m, const char *name, size_t name_len, const char *value)
{
	char *v = strdup(value), *n;
	struct env_entry *items;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++)
		if (strlen(m->items[i].name) == name_len &&
		    strncmp(m->items[i].name, name, name_len) == 0) {
			free(m->items[i].value);
			m->items[i].value = v;
			return 0;
		}
	n = strndup(name, name_len);
	items = realloc(m->items, (m->n + 1) * sizeof(*items));
	if (!n || !items) {
		free(v);
		free(n);
		if (items)
			m->items = items;
		return -ENOMEM;
	}
	m->items = items;
	m->items[m->n++] = (struct env_entry){n, v};
	return 0;
}

static void env_map_remove_matching(struct env_map *m, const char *pattern)
{
	size_t w = 0;

	for (size_t i = 0; i < m->n; i++) {
		if (sb_glob_star_match(pattern, m->items[i].name)) {
			free(m->items[i].name);
			free(m->items[i].value);
			continue;
		}
		m->items[w++] = m->items[i];
	}
	m->n = w;
}

static void env_map_done(struct env_map *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->items[i].name);
		free(m->items[i].value);
	}
	free(m->items);
}

static int apply_pattern(struct env_map *m, const struct sb_env_rule *rule, char *const *host_env)
{
	for (char *const *e = host_env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		_cleanup_free_ char *name = NULL;
		int r;

		if (!eq || eq[1] == '\0') /* a wildcard copies non-empty variables only */
			continue;
		name = strndup(*e, (size_t)(eq - *e));
		if (!name)
			return -ENOMEM;
		if (!sb_glob_star_match(rule->name, name))
			continue;
		r = env_map_set(m, name, strlen(name),
				rule->kind == SB_ENV_LITERAL ? rule->value : eq + 1);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Returns 1 when the rule sets a value, 0 when it leaves the name absent. */
static int exact_value(const struct sb_env_rule *rule, char *const *host_env, const char **ret)
{
	const char *v;

	if (rule->kind == SB_ENV_LITERAL) {
		*ret = rule->value;
		return 1;
	}
	v = sb_strv_env_get(host_env, rule->host_name);
	if (rule->fallback && (!v || !*v))
		v = rule->fallback;
	*ret = v;
	return v != NULL;
}

static int rules_environment(const struct sb_profile *p, char *const *host_env, char ***ret)
{
	struct env_map m = {0};
	char **out = NULL;
	const char *term = sb_strv_env_get(host_env, "TERM");
	int r = 0;

	/* The implicit env=TERM=${TERM}: weakest of all, any TERM rule replaces it. */
	if (term)
		r = env_map_set(&m, "TERM", 4, term);
	for (size_t i = 0; r >= 0 && i < p->n_envs; i++)
		if (p->envs[i].is_pattern)
			r = apply_pattern(&m, &p->envs[i], host_env);
	for (size_t i = 0; r >= 0 && i < p->n_envs; i++) {
		const struct sb_env_rule *rule = &p->envs[i];
		const char *v;

		if (rule->is_pattern)
			continue;
		if (exact_value(rule, host_env, &v))
			r = env_map_set(&m, rule->name, strlen(rule->name), v);
		else
			env_map_remove_matching(&m, rule->name);
	}
	for (size_t i = 0; r >= 0 && i < p->n_unenvs; i++)
		env_map_remove_matching(&m, p->unenvs[i].name);

	for (size_t i = 0; r >= 0 && i < m.n; i++) {
		char *kv;

		if (asprintf(&kv, "%s=%s", m.items[i].name, m.items[i].value) < 0)
			r = -ENOMEM;
		else
			r = sb_strv_consume(&out, kv);
	}
	if (r >= 0 && !out) {
		out = calloc(1, sizeof(char *));
		if (!out)
			r = -ENOMEM;
	}
	env_map_done(&m);
	if (r < 0) {
		sb_strv_free(out);
		return r;
	}
	*ret = out;
	return 0;
}

/* Learning (spec section 2): the whole host environment, with the values the
 * env= rules give on top; which host variables the program reads is what
 * learning records (learn-python.c). */
static int learning_environment(char *const *host_env, char *const *rule_env, char ***ret)
{
	_cleanup_strv_free_ char **env = NULL;
	int r = 0;

	for (char *const *e = host_env; r >= 0 && e && *e; e++)
		r = sb_strv_push(&env, *e);
	for (char *const *e = rule_env; r >= 0 && e && *e; e++) {
		size_t n = strcspn(*e, "=");
		bool replaced = false;

		for (char **h = env; h && *h; h++)
			if (strncmp(*h, *e, n) == 0 && (*h)[n] == '=') {
				char *copy = strdup(*e);

				if (!copy)
					return -ENOMEM;
				free(*h);
				*h = copy;
				replaced = true;
				break;
			}
		if (!replaced)
			r = sb_strv_push(&env, *e);
	}
	if (r < 0)
		return r;
	if (!env && !(env = calloc(1, sizeof(*env))))
		return -ENOMEM;
	*ret = TAKE_PTR(env);
	return 0;
}

int sb_env_build(const struct sb_profile *p, char *const *host_env, enum sb_rules_mode mode,
		 char ***ret)
{
	_cleanup_strv_free_ char **rule_env = NULL;
	int r;

	r = rules_environment(p, host_env, &rule_env);
	if (r < 0)
		return r;
	if (mode == SB_MODE_LEARN)
		return learning_environment(host_env, rule_env, ret);
	*ret = TAKE_PTR(rule_env);
	return 0;
}
