/* SPDX-License-Identifier: MIT */
#include "profile-keys.h"

#include <ctype.h>
#include <stddef.h>
#include <strings.h>

#include "expand.h"
#include "units.h"

/* Appends one zeroed element to a dynamic array; returns it or NULL on OOM. */
#define ARRAY_APPEND(array, count)                                                                 \
	({                                                                                         \
		__typeof__(array) _n = realloc((array), ((count) + 1) * sizeof(*(array)));         \
		__typeof__(array) _e = NULL;                                                       \
		if (_n) {                                                                          \
			(array) = _n;                                                              \
			_e = &(array)[(count)++];                                                  \
			memset(_e, 0, sizeof(*_e));                                                \
		}                                                                                  \
		_e;                                                                                \
	})

static const char *const os_sandbox_names[SB_OS__N] = {
    [SB_OS_UNSET] = "auto",
    [SB_OS_AUTO] = "auto",
#define SB_OS_SANDBOX(id, name) [SB_OS_##id] = #name,
#include "os-sandbox-list.h"
#undef SB_OS_SANDBOX
};

/* For the message of an unknown name. */
static const char os_sandbox_choices[] = "auto"
#define SB_OS_SANDBOX(id, name) ", " #name
#include "os-sandbox-list.h"
#undef SB_OS_SANDBOX
    ;

const char *sb_os_sandbox_name(enum sb_os_sandbox o)
{
	return (unsigned)o < SB_OS__N ? os_sandbox_names[o] : NULL;
}

int sb_os_sandbox_from_name(const char *name)
{
	for (int i = SB_OS_AUTO; i < SB_OS__N; i++)
		if (streq(name, os_sandbox_names[i]))
			return i;
	return -EINVAL;
}

static const char *const scalar_key_names[SB_SCALAR__N] = {
#define SB_SCALAR_KEY(id, key, parse) [SB_KEY_##id] = key,
#include "scalar-key-list.h"
#undef SB_SCALAR_KEY
#define SB_LIMIT_KEY(id, key, unit, field, rlimit) [SB_KEY_##id] = key,
#include "limit-key-list.h"
#undef SB_LIMIT_KEY
};

const char *sb_scalar_key_name(enum sb_scalar_key k)
{
	return (unsigned)k < SB_SCALAR__N ? scalar_key_names[k] : NULL;
}

static bool word_in(const char *value, const char *const *words)
{
	for (; *words; words++)
		if (strcasecmp(value, *words) == 0)
			return true;
	return false;
}

static int parse_os_sandbox(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
			    const char *key _unused_, const char *value, struct sb_origin origin,
			    struct sb_diags *diags)
{
	int o = sb_os_sandbox_from_name(value);

	if (o < 0)
		return sb_diags_error(diags, origin, "Invalid os-sandbox '%s': expected one of %s",
				      value, os_sandbox_choices);
	p->os_sandbox = (enum sb_os_sandbox)o;
	return 0;
}

static int parse_py_sandbox(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
			    const char *key _unused_, const char *value, struct sb_origin origin,
			    struct sb_diags *diags)
{
	static const char *const yes[] = {"", "true", "1", NULL};
	static const char *const no[] = {"false", "none", "0", NULL};

	if (word_in(value, yes))
		p->py_sandbox = true;
	else if (word_in(value, no))
		p->py_sandbox = false;
	else
		return sb_diags_error(diags, origin,
				      "Invalid py-sandbox '%s': expected true, 1, false, none or 0",
				      value);
	return 0;
}

static int parse_learn(struct sb_profile *p, const struct sb_key_context *ctx,
		       const char *key _unused_, const char *value, struct sb_origin origin,
		       struct sb_diags *diags)
{
	static const char *const booleans[] = {"true", "1", "0", "yes", "no", "on", "off", NULL};
	_cleanup_free_ char *path = NULL;

	if (strcasecmp(value, "false") == 0) {
		if (ctx->from_cli)
			return sb_diags_error(
			    diags, origin, "learn=false is a lock that only a rule file can set");
		p->learn_locked = true;
		p->learn_lock_origin = origin;
		return 0;
	}
	if (word_in(value, booleans))
		return sb_diags_error(diags, origin,
				      "Invalid learn '%s'. Use the filename instead (learn=<file>)",
				      value);
	if (*value == '\0') {
		/* --learn alone writes into the chosen rule file, never into a
		 * module's resource. */
		if (!ctx->from_cli)
			return sb_diags_error(diags, origin,
					      "learn= needs a file name (learn=<file>)");
		path =
		    strdup(ctx->opts->learn_default ? ctx->opts->learn_default : "./.py-sandboxes");
	} else if (value[0] == '/' || ctx->from_cli || value[0] == '~') {
		path = sb_expand_tilde(value, ctx->opts->home);
	} else {
		/* A relative name in a file is relative to that file. */
		path = sb_path_join(ctx->rule_dir, value);
	}
	if (!path)
		return -ENOMEM;
	free(p->learn_file);
	p->learn_file = TAKE_PTR(path);
	p->learn = SB_LEARN_FILE;
	p->learn_origin = origin;
	p->learn_requested_by_cli = ctx->from_cli;
	return 0;
}

static int parse_port(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
		      const char *key _unused_, const char *value, struct sb_origin origin,
		      struct sb_diags *diags)
{
	unsigned long long v;

	if (sb_safe_atou64(value, &v) < 0 || v > 65535)
		return sb_diags_error(
		    diags, origin, "Invalid port '%s': expected an integer from 0 to 65535", value);
	p->port = (int)v;
	return 0;
}

static int parse_result_mode(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
			     const char *key _unused_, const char *value, struct sb_origin origin,
			     struct sb_diags *diags)
{
	static const char *const data[] = {"data-only", "data_only", NULL};
	static const char *const objects[] = {"objects", "default", NULL};

	if (word_in(value, data))
		p->result_mode = SB_RESULT_DATA_ONLY;
	else if (word_in(value, objects))
		p->result_mode = SB_RESULT_OBJECTS;
	else
		return sb_diags_error(
		    diags, origin, "Invalid remote-result-mode '%s': expected data-only or objects",
		    value);
	return 0;
}

static int parse_result_guard(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
			      const char *key _unused_, const char *value, struct sb_origin origin,
			      struct sb_diags *diags)
{
	static const char *const yes[] = {"true", "1", "on", NULL};
	static const char *const no[] = {"false", "0", "off", "none", NULL};

	if (word_in(value, yes))
		p->result_guard = true;
	else if (word_in(value, no))
		p->result_guard = false;
	else
		return sb_diags_error(diags, origin,
				      "Invalid remote-result-guard '%s': expected true, 1, on, "
				      "false, 0, off or none",
				      value);
	return 0;
}

/* limit-* and timeout (limit-key-list.h): the unit decides the parser. */
static const struct limit_key {
	enum sb_scalar_key id;
	enum { LIMIT_DURATION, LIMIT_SIZE, LIMIT_COUNT } unit;
	size_t offset;
} limit_keys[] = {
#define SB_LIMIT_KEY(id, key, unit, field, rlimit)                                                 \
	{SB_KEY_##id, LIMIT_##unit, offsetof(struct sb_limits, field)},
#include "limit-key-list.h"
#undef SB_LIMIT_KEY
};

static int parse_limit(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
		       const char *key, const char *value, struct sb_origin origin,
		       struct sb_diags *diags)
{
	_cleanup_free_ char *err = NULL;
	unsigned long long v = 0;
	int r = -EINVAL;

	for (size_t i = 0; i < ELEMENTSOF(limit_keys); i++) {
		const struct limit_key *k = &limit_keys[i];

		if (!streq(scalar_key_names[k->id], key))
			continue;
		r = k->unit == LIMIT_DURATION ? sb_parse_duration(value, &v, &err)
		    : k->unit == LIMIT_SIZE   ? sb_parse_size(value, &v, &err)
					      : sb_parse_count(value, &v, &err);
		if (r == -ENOMEM)
			return r;
		if (r >= 0 && v == 0) {
			r = -EINVAL;
			free(err);
			err = strdup("must be greater than zero (leave the key out for no limit)");
		}
		if (r < 0)
			return sb_diags_error(diags, origin, "Invalid %s '%s': %s", key, value,
					      err ? err : "invalid value");
		*(unsigned long long *)((char *)&p->limits + k->offset) = v;
		return 0;
	}
	return -EINVAL;
}

static int parse_user(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
		      const char *key _unused_, const char *value, struct sb_origin origin,
		      struct sb_diags *diags)
{
	_cleanup_free_ char *err = NULL;
	int r = sb_identity_parse(value, &p->user, &err);

	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return sb_diags_error(diags, origin, "Invalid user '%s': %s", value, err);
	return 0;
}

static bool is_env_name(const char *s, bool allow_star)
{
	if (!*s)
		return false;
	for (const char *c = s; *c; c++)
		if (!(*c == '_' || isalnum((unsigned char)*c) || (allow_star && *c == '*')))
			return false;
	return !isdigit((unsigned char)*s);
}

struct host_env {
	sb_getenv_fn getenv;
	void *userdata;
};

/* env= gets its value raw: whether it is exactly one ${HOST} reference decides
 * between forwarding (absent when unset) and a literal (always set). */
static int parse_env(struct sb_profile *p, const struct sb_key_context *ctx,
		     const char *key _unused_, const char *raw, struct sb_origin origin,
		     struct sb_diags *diags)
{
	_cleanup_free_ char *raw_name = NULL, *name = NULL, *ref = NULL, *ref_default = NULL;
	_cleanup_free_ char *err = NULL, *value = NULL, *fallback = NULL;
	const char *eq = strchr(raw, '=');
	const struct sb_load_options *o = ctx->opts;
	struct sb_env_rule *rule;
	bool pattern;
	int r;

	if (!eq)
		return sb_diags_error(diags, origin,
				      "Invalid env rule 'env=%s': expected env=NAME=value", raw);
	raw_name = strndup(raw, (size_t)(eq - raw));
	if (!raw_name)
		return -ENOMEM;
	r = sb_expand(sb_strstrip(raw_name), o->getenv, o->getenv_userdata, &name, &err);
	if (r == -EINVAL)
		return sb_diags_error(diags, origin, "%s in env rule", err);
	if (r < 0)
		return r;
	pattern = strchr(name, '*') != NULL;
	if (!is_env_name(name, true))
		return sb_diags_error(diags, origin, "Invalid environment variable name '%s'",
				      name);

	r = sb_expand_single_reference(eq + 1, pattern, &ref, &ref_default);
	if (r < 0)
		return r;
	if (r > 0 && (strchr(ref, '*') || pattern) && (!pattern || !streq(ref, name)))
		return sb_diags_error(diags, origin,
				      "A wildcard env rule forwards the same pattern: write "
				      "env=%s=${%s}",
				      name, name);
	if (r > 0 && pattern && ref_default)
		return sb_diags_error(
		    diags, origin, "A wildcard env rule cannot have a default: write env=%s=${%s}",
		    name, name);
	if (r > 0 && ref_default) {
		r = sb_expand(ref_default, o->getenv, o->getenv_userdata, &fallback, &err);
		if (r == -EINVAL)
			return sb_diags_error(diags, origin, "%s", err);
		if (r < 0)
			return r;
	} else if (r == 0) {
		r = sb_expand(eq + 1, o->getenv, o->getenv_userdata, &value, &err);
		if (r == -EINVAL)
			return sb_diags_error(diags, origin, "%s", err);
		if (r < 0)
			return r;
	}

	rule = ARRAY_APPEND(p->envs, p->n_envs);
	if (!rule)
		return -ENOMEM;
	rule->name = TAKE_PTR(name);
	rule->is_pattern = pattern;
	rule->kind = value ? SB_ENV_LITERAL : SB_ENV_FORWARD;
	rule->value = TAKE_PTR(value);
	rule->host_name = rule->kind == SB_ENV_FORWARD ? TAKE_PTR(ref) : NULL;
	rule->fallback = TAKE_PTR(fallback);
	rule->written = strdup(eq + 1);
	if (!rule->written)
		return -ENOMEM;
	rule->origin = origin;
	return 0;
}

static int append_name(struct sb_name_rule **array, size_t *count, const char *name,
		       struct sb_origin origin)
{
	struct sb_name_rule *rule;
	char *copy = strdup(name);

	if (!copy)
		return -ENOMEM;
	rule = ARRAY_APPEND(*array, *count);
	if (!rule) {
		free(copy);
		return -ENOMEM;
	}
	rule->name = copy;
	rule->origin = origin;
	return 0;
}

static int parse_unenv(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
		       const char *key _unused_, const char *value, struct sb_origin origin,
		       struct sb_diags *diags)
{
	if (!is_env_name(value, true))
		return sb_diags_error(diags, origin, "Invalid unenv '%s': expected a variable name",
				      value);
	return append_name(&p->unenvs, &p->n_unenvs, value, origin);
}

static int parse_expose(struct sb_profile *p, const struct sb_key_context *ctx, const char *key,
			const char *value, struct sb_origin origin, struct sb_diags *diags)
{
	struct sb_expose_rule *rule;
	char *path;

	if (*value == '\0')
		return sb_diags_error(diags, origin, "%s= needs a directory", key);
	if (strchr(value, ','))
		return sb_diags_error(diags, origin,
				      "Invalid %s '%s': expected a single path (one rule per line)",
				      key, value);
	path = sb_expand_tilde(value, ctx->opts->home);
	if (!path)
		return -ENOMEM;
	rule = ARRAY_APPEND(p->exposes, p->n_exposes);
	if (!rule) {
		free(path);
		return -ENOMEM;
	}
	rule->path = path;
	rule->writable = streq(key, "expose-rw");
	rule->origin = origin;
	return 0;
}

static int parse_ignore(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
			const char *key _unused_, const char *value, struct sb_origin origin,
			struct sb_diags *diags)
{
	if (*value == '\0')
		return sb_diags_error(diags, origin, "ignore= needs a pattern");
	return append_name(&p->ignores, &p->n_ignores, value, origin);
}

static int parse_net(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
		     const char *key _unused_, const char *value, struct sb_origin origin,
		     struct sb_diags *diags)
{
	_cleanup_free_ char *err = NULL;
	struct sb_net_rule rule = {0}, *slot;
	int r;

	r = sb_net_rule_parse(value, &rule, &err);
	if (r == -EINVAL)
		return sb_diags_error(diags, origin, "Invalid net rule '%s': %s", value, err);
	if (r < 0)
		return r;
	rule.origin = origin;
	slot = ARRAY_APPEND(p->nets, p->n_nets);
	if (!slot) {
		sb_net_rule_done(&rule);
		return -ENOMEM;
	}
	*slot = rule;
	return 0;
}

bool sb_profile_module_name_valid(const char *s)
{
	return sb_profile_name_valid(s, true);
}

bool sb_profile_name_valid(const char *s, bool dotted)
{
	bool start = true;

	for (; *s; s++) {
		if (dotted && *s == '.') {
			if (start)
				return false;
			start = true;
			continue;
		}
		if (!(*s == '_' || isalnum((unsigned char)*s) || (unsigned char)*s >= 0x80))
			return false;
		if (start && isdigit((unsigned char)*s))
			return false;
		start = false;
	}
	return !start;
}

static int parse_python_import(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
			       const char *key _unused_, const char *value, struct sb_origin origin,
			       struct sb_diags *diags)
{
	_cleanup_free_ char *copy = strdup(value);
	char *save = NULL, *item;
	int r, n = 0;

	if (!copy)
		return -ENOMEM;
	if (*sb_strstrip(copy) == '\0')
		return sb_diags_error(diags, origin, "python-import= needs module names or '*'");
	for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		item = sb_strstrip(item);
		if (*item == '\0')
			continue;
		n++;
		if (streq(item, "*")) {
			p->import_all = true;
			p->import_all_origin = origin;
			continue;
		}
		if (!sb_profile_module_name_valid(item)) {
			r = sb_diags_error(diags, origin,
					   "Invalid module name '%s' in python-import", item);
			if (r < 0)
				return r;
			continue;
		}
		if (strchr(item, '.')) {
			/* Only the top-level name is ever compared; say so rather than
			 * silently granting nothing. */
			r = sb_diags_warning(diags, origin,
					     "python-import takes top-level names: '%s' never "
					     "matches, write '%.*s'",
					     item, (int)strcspn(item, "."), item);
			if (r < 0)
				return r;
		}
		r = append_name(&p->imports, &p->n_imports, item, origin);
		if (r < 0)
			return r;
	}
	if (n == 0)
		return sb_diags_error(diags, origin, "python-import= needs module names or '*'");
	return 0;
}

static int parse_python_api(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
			    const char *key _unused_, const char *value, struct sb_origin origin,
			    struct sb_diags *diags)
{
	_cleanup_free_ char *err = NULL;
	int r;

	r = sb_api_rule_parse(value, origin, &p->apis, &p->n_apis, &err);
	if (r == -EINVAL)
		return sb_diags_error(diags, origin, "Invalid python-api '%s': %s", value, err);
	return r;
}

static int parse_eval(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
		      const char *key, const char *value, struct sb_origin origin,
		      struct sb_diags *diags)
{
	return sb_eval_config_add(&p->eval, key, value, origin, diags);
}

/* <provider>.<key>: stored for the provider named, which checks its own
 * parameters (sb_provider_check_params(), a step of its own: the profile
 * layer knows the providers' names, not what they take). */
static int parse_provider_param(struct sb_profile *p, const struct sb_key_context *ctx _unused_,
				const char *key, const char *value, struct sb_origin origin,
				struct sb_diags *diags)
{
	const char *dot = strchr(key, '.');
	_cleanup_free_ char *provider = strndup(key, (size_t)(dot - key));
	struct sb_provider_param *param;
	int id;

	if (!provider)
		return -ENOMEM;
	if (dot[1] == '\0')
		return sb_diags_error(diags, origin, "Invalid rule '%s=%s': empty parameter name",
				      key, value);
	/* Exact case, as os-sandbox= itself: "BWRAP.x" would never be read. */
	id = sb_os_sandbox_from_name(provider);
	if (id < 0) {
		const char *closest =
		    sb_closest_name(provider, os_sandbox_names + SB_OS_AUTO, SB_OS__N - SB_OS_AUTO,
				    strlen(provider) / 3 + 1);

		if (closest)
			return sb_diags_error(diags, origin,
					      "Invalid rule '%s=%s': no provider '%s', closest "
					      "known provider is '%s'",
					      key, value, provider, closest);
		return sb_diags_error(diags, origin, "Invalid rule '%s=%s'", key, value);
	}
	param = ARRAY_APPEND(p->params, p->n_params);
	if (!param)
		return -ENOMEM;
	param->os_sandbox = (enum sb_os_sandbox)id;
	param->provider = TAKE_PTR(provider);
	param->key = strdup(dot + 1);
	param->value = strdup(value);
	param->origin = origin;
	if (!param->key || !param->value)
		return -ENOMEM;
	return 0;
}

static const struct sb_key_def key_table[] = {
#define SB_SCALAR_KEY(id, key, parse) {key, false, SB_KEY_##id, false, parse},
#include "scalar-key-list.h"
#undef SB_SCALAR_KEY
#define SB_LIMIT_KEY(id, key, unit, field, rlimit) {key, false, SB_KEY_##id, false, parse_limit},
#include "limit-key-list.h"
#undef SB_LIMIT_KEY
    {"env", false, -1, true, parse_env},
    {"unenv", false, -1, false, parse_unenv},
    {"expose-ro", false, -1, false, parse_expose, true},
    {"expose-rw", false, -1, false, parse_expose, true},
    {"ignore", false, -1, false, parse_ignore, true},
    {"net", false, -1, false, parse_net},
    {"python-import", false, -1, false, parse_python_import},
    {"python-api", false, -1, false, parse_python_api},
    {"eval-", true, -1, false, parse_eval},
};

static const struct sb_key_def provider_param_key = {"<provider>.<key>", false, -1, false,
						     parse_provider_param};

const char *sb_key_closest(const char *key)
{
	const char *names[ELEMENTSOF(key_table)];
	size_t n = 0, len = strlen(key);

	for (size_t i = 0; i < ELEMENTSOF(key_table); i++)
		if (!key_table[i].prefix)
			names[n++] = key_table[i].name;
	/* A third of the word, at least one edit: "bad" is no "port". */
	return sb_closest_name(key, names, n, len / 3 > 1 ? len / 3 : 1);
}

const struct sb_key_def *sb_key_lookup(const char *key)
{
	for (size_t i = 0; i < ELEMENTSOF(key_table); i++) {
		const struct sb_key_def *k = &key_table[i];

		if (k->prefix ? startswith(key, k->name) != NULL : streq(key, k->name))
			return k;
	}
	if (strchr(key, '.') && key[0] != '.')
		return &provider_param_key;
	return NULL;
}
