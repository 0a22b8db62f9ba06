/* SPDX-License-Identifier: MIT */
#include "eval-rules.h"

#include <ctype.h>

#include "eval-grammar.h"
#include "units.h"
#include "utf8.h"
#include "util.h"

#define SB_EVAL_PREFIX "eval-"
/* A pattern needs at least this many fixed characters to be read at a glance. */
#define SB_EVAL_PATTERN_MIN_FIXED 3

static const char *const sb_eval_list_key_names[SB_EVAL_LIST__N] = {
    [SB_EVAL_SYNTAX] = "eval-syntax",	    [SB_EVAL_CALL] = "eval-call",
    [SB_EVAL_ATTRIBUTE] = "eval-attribute", [SB_EVAL_IMPORT] = "eval-import",
    [SB_EVAL_MAGIC] = "eval-magic",
};

enum sb_eval_scalar_type {
	SB_EVAL_TYPE_NAMESPACE,
	SB_EVAL_TYPE_DURATION,
	SB_EVAL_TYPE_SIZE,
	SB_EVAL_TYPE_COUNT,
};

struct sb_eval_scalar_info {
	const char *name;
	enum sb_eval_scalar_type type;
	unsigned long long default_value;
	/* A timeout of 0 ms, or a node or depth budget of 0, refuses every
	 * evaluation: surely a mistake, so it is reported rather than obeyed.
	 * Zero iterations, allocations or leaked threads are meaningful. */
	unsigned long long min;
};

static const struct sb_eval_scalar_info sb_eval_scalars[SB_EVAL_SCALAR__N] = {
    [SB_EVAL_NAMESPACE] = {"eval-namespace", SB_EVAL_TYPE_NAMESPACE, SB_EVAL_NAMESPACE_ADAPTIVE, 0},
    [SB_EVAL_TIMEOUT] = {"eval-timeout", SB_EVAL_TYPE_DURATION, 5000, 1},
    [SB_EVAL_MAX_ITERATIONS] = {"eval-max-iterations", SB_EVAL_TYPE_COUNT, 1000000, 0},
    [SB_EVAL_MAX_CALL_DEPTH] = {"eval-max-call-depth", SB_EVAL_TYPE_COUNT, 20, 0},
    [SB_EVAL_MAX_DEPTH] = {"eval-max-depth", SB_EVAL_TYPE_COUNT, 20, 1},
    [SB_EVAL_MAX_NODES] = {"eval-max-nodes", SB_EVAL_TYPE_COUNT, 5000, 1},
    [SB_EVAL_MAX_ALLOC] = {"eval-max-alloc", SB_EVAL_TYPE_SIZE, 10000000, 0},
    [SB_EVAL_MAX_LEAKED_THREADS] = {"eval-max-leaked-threads", SB_EVAL_TYPE_COUNT, 4, 0},
};

static const char *const sb_eval_namespace_names[] = {
    [SB_EVAL_NAMESPACE_ADAPTIVE] = "adaptive",
    [SB_EVAL_NAMESPACE_CLOSED] = "closed",
    [SB_EVAL_NAMESPACE_CALLER] = "caller",
};

const char *sb_eval_list_key_name(enum sb_eval_list_key k)
{
	if ((unsigned)k >= SB_EVAL_LIST__N)
		return NULL;
	return sb_eval_list_key_names[k];
}

const char *sb_eval_scalar_key_name(enum sb_eval_scalar_key k)
{
	if ((unsigned)k >= SB_EVAL_SCALAR__N)
		return NULL;
	return sb_eval_scalars[k].name;
}

static bool sb_eval_valid_profile_name(const char *name)
{
	if (!*name)
		return false;
	for (; *name; name++)
		if (!isalnum((unsigned char)*name) && *name != '_' && *name != '-')
			return false;
	return true;
}

/* A Python identifier (non-ASCII letters are let through), '*' allowed for
 * patterns, and '.' between identifiers when dotted is set (module names). */
static bool sb_eval_valid_name(const char *s, bool dotted)
{
	bool segment_start = true;

	/* Python reads the name as a str: non-ASCII letters are accepted, as in
	 * identifiers, but only as UTF-8 (else every evaluation would fail on
	 * the rule). */
	if (!*s || !sb_utf8_valid(s, strlen(s)))
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '.' && dotted) {
			if (segment_start)
				return false;
			segment_start = true;
			continue;
		}
		if (!(isalnum(c) || c == '_' || c == '*' || c >= 0x80))
			return false;
		if (segment_start && isdigit(c))
			return false;
		segment_start = false;
	}
	return !segment_start;
}

static const char *sb_eval_profile_label(const char *profile)
{
	return profile ? profile : "";
}

static void sb_eval_profile_done(struct sb_eval_profile *p)
{
	free(p->name);
	for (size_t k = 0; k < SB_EVAL_LIST__N; k++) {
		for (size_t i = 0; i < p->n_items[k]; i++)
			free(p->items[k][i].value);
		free(p->items[k]);
	}
	*p = (struct sb_eval_profile){0};
}

void sb_eval_config_done(struct sb_eval_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->n_profiles; i++)
		sb_eval_profile_done(&cfg->profiles[i]);
	free(cfg->profiles);
	*cfg = (struct sb_eval_config){0};
}

static struct sb_eval_profile *sb_eval_find_mutable(struct sb_eval_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_profiles; i++)
		if (streq_ptr(cfg->profiles[i].name, name))
			return &cfg->profiles[i];
	return NULL;
}

const struct sb_eval_profile *sb_eval_config_find(const struct sb_eval_config *cfg,
						  const char *name)
{
	return sb_eval_find_mutable((struct sb_eval_config *)cfg, name);
}

/* The profile of that name, created with the defaults on first use. The
 * profiles array may move: pointers into it last until the next call. */
static int sb_eval_get_profile(struct sb_eval_config *cfg, const char *name,
			       struct sb_eval_profile **ret)
{
	struct sb_eval_profile *p = sb_eval_find_mutable(cfg, name), *grown;
	_cleanup_free_ char *copy = NULL;

	if (p) {
		*ret = p;
		return 0;
	}
	if (name) {
		copy = strdup(name);
		if (!copy)
			return -ENOMEM;
	}
	grown = realloc(cfg->profiles, (cfg->n_profiles + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	cfg->profiles = grown;
	p = &cfg->profiles[cfg->n_profiles++];
	*p = (struct sb_eval_profile){.name = TAKE_PTR(copy)};
	for (size_t k = 0; k < SB_EVAL_SCALAR__N; k++)
		p->scalars[k] = sb_eval_scalars[k].default_value;
	*ret = p;
	return 0;
}

static bool sb_eval_is_cli(struct sb_origin origin)
{
	return streq_ptr(origin.file, SB_ORIGIN_CLI);
}

static int sb_eval_add_scalar(struct sb_eval_profile *p, enum sb_eval_scalar_key k, const char *key,
			      const char *value, struct sb_origin origin, struct sb_diags *diags)
{
	const struct sb_eval_scalar_info *info = &sb_eval_scalars[k];
	_cleanup_free_ char *err = NULL;
	unsigned long long v = 0;
	int r;

	if (p->scalar_set[k]) {
		bool was_cli = sb_eval_is_cli(p->scalar_origin[k]), is_cli = sb_eval_is_cli(origin);

		/* A command-line value overrides the file, in whichever order the
		 * two arrive; two values from the same side are a conflict. */
		if (was_cli && !is_cli)
			return 0;
		if (was_cli == is_cli)
			return sb_diags_error(
			    diags, origin, "Multiple %s parameters in %s%s%s (first at %s:%u)",
			    info->name, p->name ? "profile '" : "the default profile",
			    sb_eval_profile_label(p->name), p->name ? "'" : "",
			    p->scalar_origin[k].file ? p->scalar_origin[k].file : "",
			    p->scalar_origin[k].line);
	}
	/* Marked as seen even when the value is wrong, so that a repeat is still
	 * reported; an invalid value leaves the default in place. */
	p->scalar_set[k] = true;
	p->scalar_origin[k] = origin;

	if (startswith(value, "DENY:") || strchr(value, '*'))
		return sb_diags_error(
		    diags, origin,
		    "In '%s=%.80s': %s takes a single value; 'DENY:' and '*' patterns "
		    "apply to list keys only",
		    key, value, info->name);

	switch (info->type) {
	case SB_EVAL_TYPE_NAMESPACE:
		for (size_t i = 0; i < ELEMENTSOF(sb_eval_namespace_names); i++)
			if (streq(value, sb_eval_namespace_names[i])) {
				p->scalars[k] = i;
				if (i != SB_EVAL_NAMESPACE_CALLER)
					return 0;
				/* The caller's namespace, CPython's injection of every
				 * builtin and no run-time checks: a debugging mode. */
				return sb_diags_warning(
				    diags, origin,
				    "%s=caller: evaluated code sees the caller's namespace and "
				    "every builtin, and runs without the eval guard's run-time "
				    "checks (only the syntax is checked); for debugging only",
				    key);
			}
		return sb_diags_error(
		    diags, origin,
		    "In '%s=%.80s': invalid eval-namespace mode '%s', expected one of "
		    "adaptive, closed or caller",
		    key, value, value);
	case SB_EVAL_TYPE_DURATION:
		r = sb_parse_duration(value, &v, &err);
		break;
	case SB_EVAL_TYPE_SIZE:
		r = sb_parse_size(value, &v, &err);
		break;
	case SB_EVAL_TYPE_COUNT:
		r = sb_parse_count(value, &v, &err);
		break;
	default:
		r = -EINVAL;
		break;
	}
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return sb_diags_error(diags, origin, "In '%s=%.80s': %s", key, value,
				      err ? err : "invalid value");
	if (v < info->min)
		return sb_diags_error(
		    diags, origin,
		    "In '%s=%.80s': %s must be at least %llu%s, or every evaluation "
		    "would be refused",
		    key, value, info->name, info->min,
		    info->type == SB_EVAL_TYPE_DURATION ? "ms" : "");
	p->scalars[k] = v;
	return 0;
}

/* Checks one item of a list key; *ret_error set when the line must be
 * refused. Warnings are recorded straight away. */
static int sb_eval_check_item(enum sb_eval_list_key k, const char *key, const char *value,
			      const char *item, bool deny, struct sb_origin origin,
			      struct sb_diags *diags, bool *ret_error)
{
	int r = 0;

	*ret_error = true;
	if (strchr(item, '*')) {
		size_t fixed = 0;

		if (k == SB_EVAL_SYNTAX)
			return sb_diags_error(
			    diags, origin,
			    "In '%s=%.80s': a pattern ('%s') is not accepted in "
			    "eval-syntax, whose vocabulary is finite; list the groups "
			    "or ast node names",
			    key, value, item);
		if (!sb_eval_valid_name(item, k == SB_EVAL_IMPORT))
			return sb_diags_error(diags, origin, "In '%s=%.80s': invalid pattern '%s'",
					      key, value, item);
		for (const char *c = item; *c; c++)
			fixed += *c != '*';
		if (fixed < SB_EVAL_PATTERN_MIN_FIXED)
			r = sb_diags_warning(
			    diags, origin,
			    "%s=%s: the pattern '%s' has fewer than %d fixed "
			    "characters and may match far more names than intended; "
			    "narrow it or add a DENY",
			    key, value, item, SB_EVAL_PATTERN_MIN_FIXED);
		*ret_error = false;
		return r;
	}

	switch (k) {
	case SB_EVAL_SYNTAX:
		if (!sb_eval_is_syntax_group(item) && sb_eval_node_find(item) < 0) {
			_cleanup_free_ const char **known = NULL;
			const size_t n_groups = sb_eval_n_syntax_groups;
			const size_t n_known = n_groups + sb_eval_n_nodes;
			const char *closest = NULL;
			size_t max_distance = strlen(item) / 3 + 1;

			known = malloc(n_known * sizeof(*known));
			if (!known)
				return -ENOMEM;
			for (size_t i = 0; i < n_groups; i++)
				known[i] = sb_eval_syntax_groups[i];
			for (size_t i = 0; i < sb_eval_n_nodes; i++)
				known[n_groups + i] = sb_eval_nodes[i].name;
			closest = sb_closest_name(item, known, n_known,
						  max_distance < 2 ? 2 : max_distance);
			if (closest)
				return sb_diags_error(
				    diags, origin,
				    "In '%s=%.80s': unknown syntax token '%s', closest "
				    "known token is '%s'",
				    key, value, item, closest);
			return sb_diags_error(
			    diags, origin,
			    "In '%s=%.80s': unknown syntax token '%s'; expected a group "
			    "(arith, compare, conditional, loop, comprehension, assign, "
			    "func, async, class, exception, context, import, subscript, "
			    "fstring, tstring, yield) or an ast node class name",
			    key, value, item);
		}
		break;
	case SB_EVAL_ATTRIBUTE:
	case SB_EVAL_CALL:
	case SB_EVAL_MAGIC:
	case SB_EVAL_IMPORT:
		/* Attribute groups ("str-methods") are accepted as written. */
		if (k == SB_EVAL_ATTRIBUTE && sb_eval_is_attribute_group(item))
			break;
		if (!sb_eval_valid_name(item, k == SB_EVAL_IMPORT))
			return sb_diags_error(diags, origin, "In '%s=%.80s': invalid %s '%s'", key,
					      value, k == SB_EVAL_IMPORT ? "module name" : "name",
					      item);
		break;
	default:
		break;
	}
	*ret_error = false;
	if (deny)
		return 0;

	if (strstr(item, SB_EVAL_RESERVED_PREFIX))
		return sb_diags_warning(
		    diags, origin,
		    "%s=%s: names containing '__sb_' belong to the eval guard and "
		    "are refused whatever the rules; '%s' grants nothing",
		    key, value, item);
	if ((k == SB_EVAL_ATTRIBUTE || k == SB_EVAL_MAGIC) && sb_eval_is_frame_attribute(item))
		return sb_diags_warning(
		    diags, origin,
		    "%s=%s: the frame attribute '%s' is always denied by the eval "
		    "guard; this grant has no effect",
		    key, value, item);
	if ((k == SB_EVAL_ATTRIBUTE || k == SB_EVAL_MAGIC) && sb_eval_is_namespace_attribute(item))
		return sb_diags_warning(
		    diags, origin,
		    "%s=%s: '%s' would hand over the evaluation's own namespace and is "
		    "always denied by the eval guard; this grant has no effect",
		    key, value, item);
	if (k == SB_EVAL_ATTRIBUTE && sb_eval_is_blind_attribute(item))
		return sb_diags_warning(
		    diags, origin,
		    "%s=%s: '%s' resolves attributes in C from the template "
		    "string, so it cannot be checked statically; the template is "
		    "checked field by field at runtime. Prefer an f-string",
		    key, value, item);
	if (k == SB_EVAL_CALL && sb_eval_is_sensitive_call(item))
		return sb_diags_warning(diags, origin,
					"%s=%s: '%s' is a sensitive builtin; it is guarded, but it "
					"widens what the evaluated code can reach",
					key, value, item);
	return 0;
}

static bool sb_eval_has_item(const struct sb_eval_profile *p, enum sb_eval_list_key k,
			     const char *value, bool deny)
{
	for (size_t i = 0; i < p->n_items[k]; i++)
		if (p->items[k][i].deny == deny && streq(p->items[k][i].value, value))
			return true;
	return false;
}

static int sb_eval_add_list(struct sb_eval_config *cfg, const char *profile_name,
			    enum sb_eval_list_key k, const char *key, const char *value,
			    struct sb_origin origin, struct sb_diags *diags)
{
	_cleanup_free_ char *copy = strdup(value);
	_cleanup_free_ struct sb_eval_item *parsed = NULL;
	struct sb_eval_profile *p;
	struct sb_eval_item *grown;
	size_t n_parsed = 0, cap = 1;
	bool line_deny = false, failed = false;
	char *rest;
	int r;

	if (!copy)
		return -ENOMEM;
	rest = copy;
	if (!*rest)
		return sb_diags_error(diags, origin,
				      "In '%s=': empty value; list the names separated by commas",
				      key);
	/* "DENY:" in front of the value covers the whole line, as in the
	 * reference implementation; in front of a later item it covers that
	 * item only. Read either way, nothing is ever granted by mistake. */
	if (startswith(rest, "DENY:")) {
		line_deny = true;
		rest += strlen("DENY:");
	}
	for (const char *c = rest; *c; c++)
		cap += *c == ',';
	parsed = calloc(cap, sizeof(*parsed));
	if (!parsed)
		return -ENOMEM;

	for (char *item = rest, *next; item; item = next) {
		bool deny = line_deny, bad;
		const char *after;

		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		item = sb_strstrip(item);
		if ((after = startswith(item, "DENY:"))) {
			deny = true;
			item = sb_strstrip((char *)after);
		}
		if (!*item) {
			r = sb_diags_error(diags, origin,
					   "In '%s=%.80s': empty item; list the names separated by "
					   "commas",
					   key, value);
			if (r < 0)
				goto fail;
			failed = true;
			continue;
		}
		r = sb_eval_check_item(k, key, value, item, deny, origin, diags, &bad);
		if (r < 0)
			goto fail;
		if (bad) {
			failed = true;
			continue;
		}
		parsed[n_parsed].value = strdup(item);
		if (!parsed[n_parsed].value) {
			r = -ENOMEM;
			goto fail;
		}
		parsed[n_parsed].deny = deny;
		parsed[n_parsed].origin = origin;
		n_parsed++;
	}
	/* Every bad item has been reported; a line with one is dropped whole. */
	if (failed) {
		r = 0;
		goto fail;
	}

	r = sb_eval_get_profile(cfg, profile_name, &p);
	if (r < 0)
		goto fail;
	grown = realloc(p->items[k], (p->n_items[k] + n_parsed) * sizeof(*grown));
	if (!grown && p->n_items[k] + n_parsed > 0) {
		r = -ENOMEM;
		goto fail;
	}
	p->items[k] = grown;
	for (size_t i = 0; i < n_parsed; i++) {
		if (sb_eval_has_item(p, k, parsed[i].value, parsed[i].deny)) {
			free(parsed[i].value);
			continue;
		}
		p->items[k][p->n_items[k]++] = parsed[i];
	}
	return 0;
fail:
	for (size_t i = 0; i < n_parsed; i++)
		free(parsed[i].value);
	return r;
}

int sb_eval_config_add(struct sb_eval_config *cfg, const char *key, const char *value,
		       struct sb_origin origin, struct sb_diags *diags)
{
	_cleanup_free_ char *key_copy = strdup(key ? key : "");
	_cleanup_free_ char *value_copy = strdup(value ? value : "");
	char *base, *colon, *profile_name = NULL, *v;
	struct sb_eval_profile *p;
	int r;

	if (!key_copy || !value_copy)
		return -ENOMEM;
	base = sb_strstrip(key_copy);
	v = sb_strstrip(value_copy);
	/* Even a wrong eval-* line shows the intent to guard eval/exec/compile:
	 * they must not fall back to being refused as unconfigured. */
	cfg->any_key = true;

	colon = strchr(base, ':');
	if (colon) {
		*colon = '\0';
		profile_name = colon + 1;
		if (!sb_eval_valid_profile_name(profile_name))
			return sb_diags_error(diags, origin,
					      "In '%s:%s=%s': invalid eval profile name '%s'; use "
					      "letters, digits, '_' and '-'",
					      base, profile_name, v, profile_name);
	}

	for (size_t k = 0; k < SB_EVAL_LIST__N; k++)
		if (streq(base, sb_eval_list_key_names[k]))
			return sb_eval_add_list(cfg, profile_name, (enum sb_eval_list_key)k, key, v,
						origin, diags);

	for (size_t k = 0; k < SB_EVAL_SCALAR__N; k++) {
		if (!streq(base, sb_eval_scalars[k].name))
			continue;
		r = sb_eval_get_profile(cfg, profile_name, &p);
		if (r < 0)
			return r;
		if (k == SB_EVAL_NAMESPACE && profile_name) {
			r = sb_diags_warning(diags, origin,
					     "%s:%s=%s: eval-namespace does not apply to a named "
					     "profile; guarded_eval() takes its names explicitly",
					     base, profile_name, v);
			if (r < 0)
				return r;
		}
		return sb_eval_add_scalar(p, (enum sb_eval_scalar_key)k, key, v, origin, diags);
	}

	{
		const char *known[SB_EVAL_LIST__N + SB_EVAL_SCALAR__N];
		const char *closest;
		size_t n = 0;

		for (size_t k = 0; k < SB_EVAL_LIST__N; k++)
			known[n++] = sb_eval_list_key_names[k];
		for (size_t k = 0; k < SB_EVAL_SCALAR__N; k++)
			known[n++] = sb_eval_scalars[k].name;
		closest = sb_closest_name(base, known, n, strlen(base) / 4 + 1);
		if (closest)
			return sb_diags_error(diags, origin,
					      "unknown key '%s', closest known key is '%s'", base,
					      closest);
		return sb_diags_error(diags, origin, "unknown key '%s'", base);
	}
}
