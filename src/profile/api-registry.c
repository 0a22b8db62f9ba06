/* SPDX-License-Identifier: MIT */
#include "api-registry.h"

#include <stdarg.h>
#include <stdint.h>
#include <strings.h>

#include "util.h"

/* The list and why each function is in it: api-registry-list.h. */
const struct sb_api_function sb_api_registry[SB_API_FN__N] = {
#define SB_API(id, name, cat) [SB_API_FN_##id] = {name, SB_API_##cat},
#include "api-registry-list.h"
#undef SB_API
};

const size_t sb_api_registry_size = ELEMENTSOF(sb_api_registry);

static const char *const sb_api_category_names[SB_API_CATEGORY__N] = {
    [SB_API_PROCESS_EXEC] = "process-exec",
    [SB_API_PROCESS_CONTROL] = "process-control",
    [SB_API_PRIVILEGES] = "privileges",
    [SB_API_THREADS] = "threads",
    [SB_API_NATIVE] = "native",
    [SB_API_INTROSPECTION] = "introspection",
    [SB_API_DYNAMIC_CODE] = "dynamic-code",
    [SB_API_DESERIALIZATION] = "deserialization",
};

const char *sb_api_category_name(enum sb_api_category c)
{
	if ((unsigned)c >= SB_API_CATEGORY__N)
		return NULL;
	return sb_api_category_names[c];
}

int sb_api_category_from_name(const char *name)
{
	for (size_t i = 0; i < SB_API_CATEGORY__N; i++)
		if (streq(sb_api_category_names[i], name))
			return (int)i;
	return -EINVAL;
}

static int cmp_qualname(const void *key, const void *entry)
{
	return strcmp(key, sb_api_registry[*(const unsigned short *)entry].qualname);
}

const struct sb_api_function *sb_api_lookup(const char *qualname)
{
	const unsigned short *found = bsearch(qualname, sb_api_by_name, SB_API_FN__N,
					      sizeof(sb_api_by_name[0]), cmp_qualname);

	return found ? &sb_api_registry[*found] : NULL;
}

/* "closest known name is 'threads'" over the categories and every qualname;
 * NULL when nothing is close enough to be a plausible typo. */
static const char *sb_api_closest(const char *target)
{
	_cleanup_free_ const char **names = NULL;
	size_t n = 0, max_distance = strlen(target) / 3 + 1;

	names = malloc((SB_API_CATEGORY__N + sb_api_registry_size) * sizeof(*names));
	if (!names)
		return NULL;
	for (size_t i = 0; i < SB_API_CATEGORY__N; i++)
		names[n++] = sb_api_category_names[i];
	for (size_t i = 0; i < sb_api_registry_size; i++)
		names[n++] = sb_api_registry[i].qualname;
	if (max_distance < 2)
		max_distance = 2;
	return sb_closest_name(target, names, n, max_distance);
}

static int sb_api_unknown_target(const char *value, const char *target, char **reterr)
{
	const char *closest = sb_api_closest(target);
	/* A dotted name can only be meant as a function; a bare one as a category. */
	const char *what =
	    strchr(target, '.') ? "function (not in the sensitive-API registry)" : "category";

	if (closest)
		return sb_error(reterr, -EINVAL,
				"in 'python-api=%s': unknown %s '%s', closest known name "
				"is '%s'",
				value, what, target, closest);
	return sb_error(reterr, -EINVAL,
			"in 'python-api=%s': unknown %s '%s'; the categories are process-exec, "
			"process-control, privileges, threads, native, introspection, "
			"dynamic-code and deserialization",
			value, what, target);
}

static bool sb_api_is_action_word(const char *s)
{
	return strcasecmp(s, "ALLOW") == 0 || strcasecmp(s, "DENY") == 0;
}

int sb_api_rule_parse(const char *value, struct sb_origin origin, struct sb_api_rule **rules,
		      size_t *n_rules, char **reterr)
{
	_cleanup_free_ char *copy = NULL;
	_cleanup_free_ struct sb_api_rule *parsed = NULL;
	struct sb_api_rule *grown;
	char *text, *colon, *action, *targets;
	size_t n_parsed = 0, cap;
	bool deny;

	copy = strdup(value ? value : "");
	if (!copy)
		return -ENOMEM;
	text = sb_strstrip(copy);
	if (!*text)
		return sb_error(reterr, -EINVAL,
				"empty 'python-api=' value, expected ALLOW:<targets> or "
				"DENY:<targets>");

	colon = strchr(text, ':');
	if (!colon)
		return sb_error(reterr, -EINVAL,
				"in 'python-api=%s': missing action, expected the form "
				"ALLOW:<targets> or DENY:<targets>",
				text);
	*colon = '\0';
	action = sb_strstrip(text);
	targets = colon + 1;
	/* Upper case only, as the reference implementation: "allow" is most
	 * likely a typo of the keyword, and the message says how to fix it. */
	if (streq(action, "ALLOW"))
		deny = false;
	else if (streq(action, "DENY"))
		deny = true;
	else
		return sb_error(reterr, -EINVAL,
				"in 'python-api=%s:%s': unknown action '%s', expected ALLOW or "
				"DENY (upper case)",
				action, targets, action);

	cap = 1;
	for (const char *p = targets; *p; p++)
		if (*p == ',')
			cap++;
	parsed = calloc(cap, sizeof(*parsed));
	if (!parsed)
		return -ENOMEM;

	for (char *item = targets, *next; item; item = next) {
		struct sb_api_rule rule = {.deny = deny, .origin = origin};
		char *target;
		int c;

		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		target = sb_strstrip(item);
		if (!*target)
			return sb_error(reterr, -EINVAL,
					"in 'python-api=%s': empty target; list categories or "
					"functions separated by commas",
					value);
		/* "ALLOW:threads,DENY:os.system" would silently grant or refuse
		 * the wrong thing if the second half were read as a name. */
		if (strchr(target, ':') || sb_api_is_action_word(target))
			return sb_error(reterr, -EINVAL,
					"in 'python-api=%s': one action per line, do not mix "
					"ALLOW and DENY; put '%s' on a python-api= line of its own",
					value, target);
		if (streq(target, "*")) {
			rule.kind = SB_API_TARGET_ALL;
		} else if ((c = sb_api_category_from_name(target)) >= 0) {
			rule.kind = SB_API_TARGET_CATEGORY;
			rule.category = (enum sb_api_category)c;
		} else if ((rule.function = sb_api_lookup(target))) {
			rule.kind = SB_API_TARGET_FUNCTION;
			rule.category = rule.function->category;
		} else {
			return sb_api_unknown_target(value, target, reterr);
		}
		parsed[n_parsed++] = rule;
	}

	/* Nothing is appended unless the whole line is valid. */
	grown = realloc(*rules, (*n_rules + n_parsed) * sizeof(**rules));
	if (!grown)
		return -ENOMEM;
	memcpy(grown + *n_rules, parsed, n_parsed * sizeof(*parsed));
	*rules = grown;
	*n_rules += n_parsed;
	return 0;
}

static bool is_registry_row(const struct sb_api_function *fn)
{
	return (uintptr_t)fn >= (uintptr_t)sb_api_registry &&
	       (uintptr_t)fn < (uintptr_t)(sb_api_registry + SB_API_FN__N);
}

static unsigned sb_api_rule_specificity(const struct sb_api_rule *rule,
					const struct sb_api_function *fn)
{
	switch (rule->kind) {
	case SB_API_TARGET_FUNCTION:
		if (!rule->function)
			return 0;
		if (rule->function == fn)
			return 3;
		/* The registry's rows have distinct names: only a function from
		 * elsewhere needs its name compared (python-sb decides every row
		 * against every rule at start). */
		if (is_registry_row(fn) && is_registry_row(rule->function))
			return 0;
		return streq(rule->function->qualname, fn->qualname) ? 3 : 0;
	case SB_API_TARGET_CATEGORY:
		return rule->category == fn->category ? 2 : 0;
	case SB_API_TARGET_ALL:
		return 1;
	}
	return 0;
}

bool sb_api_is_allowed(const struct sb_api_rule *rules, size_t n_rules,
		       const struct sb_api_function *fn, const struct sb_api_rule **ret_rule)
{
	const struct sb_api_rule *decider = NULL;
	unsigned best = 0;

	/* Line order never matters: the most specific matching rule decides, and
	 * among equally specific ones a DENY beats an ALLOW. */
	for (size_t i = 0; i < n_rules; i++) {
		unsigned s = sb_api_rule_specificity(&rules[i], fn);

		if (s == 0 || s < best)
			continue;
		if (s > best || (rules[i].deny && !decider->deny)) {
			best = s;
			decider = &rules[i];
		}
	}
	if (ret_rule)
		*ret_rule = decider;
	return decider && !decider->deny;
}
