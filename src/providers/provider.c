/* SPDX-License-Identifier: MIT */
#include "provider.h"

#include <ctype.h>
#include <strings.h>

static const struct sb_provider *const providers[SB_OS__N] = {
#define SB_OS_SANDBOX(id, name) [SB_OS_##id] = &sb_provider_##name,
#include "os-sandbox-list.h"
#undef SB_OS_SANDBOX
};

const struct sb_provider *sb_provider_get(enum sb_os_sandbox id)
{
	return (unsigned)id < SB_OS__N ? providers[id] : NULL;
}

int sb_provider_probe_not_built(char **reterr)
{
	*reterr = strdup("this provider is not available in this version of python-sb yet");
	return *reterr ? -EOPNOTSUPP : -ENOMEM;
}

int sb_provider_select(enum sb_os_sandbox requested, enum sb_rules_mode mode,
		       const struct sb_provider **ret, char **ret_note, bool *ret_warn,
		       char **reterr)
{
	const struct sb_provider *p;
	_cleanup_free_ char *why = NULL;
	int r;

	*ret_note = NULL;
	*ret_warn = false;
	if (mode == SB_MODE_LEARN) {
		/* The guard records what the rules would refuse; a kernel that
		 * refused it first would leave nothing to record. */
		*ret = sb_provider_get(SB_OS_SUBPROCESS);
		if (requested == SB_OS_SUBPROCESS)
			return 0;
		if (asprintf(ret_note, "os-sandbox=%s does not apply while learning",
			     sb_os_sandbox_name(requested)) < 0) {
			*ret_note = NULL;
			return -ENOMEM;
		}
		return 0;
	}
	if (requested == SB_OS_UNSET || requested == SB_OS_AUTO) {
		p = sb_provider_get(SB_OS_LANDLOCK);
		r = p->probe(&why);
		if (r >= 0) {
			*ret = p;
			return 0;
		}
		if (asprintf(ret_note,
			     "os-sandbox=auto chose subprocess: landlock unavailable (%s)",
			     why ? why : strerror(-r)) < 0) {
			*ret_note = NULL;
			return -ENOMEM;
		}
		/* A warning only when the kernel is the reason (not a build without
		 * the provider). */
		*ret_warn = r == -ENOSYS || r == -EOPNOTSUPP;
		*ret = sb_provider_get(SB_OS_SUBPROCESS);
		return 0;
	}
	p = sb_provider_get(requested);
	if (!p)
		return -EINVAL;
	r = p->probe(&why);
	if (r < 0) {
		if (asprintf(reterr,
			     "os-sandbox=%s cannot be applied: %s. It was named explicitly, so "
			     "python-sb will not fall back to a weaker provider",
			     p->name, why ? why : strerror(-r)) < 0)
			*reterr = NULL;
		return r;
	}
	*ret = p;
	return 0;
}

/* <provider>.<key> parameters */

static bool word_in(const char *value, const char *const *words)
{
	for (; *words; words++)
		if (strcasecmp(value, *words) == 0)
			return true;
	return false;
}

static bool is_mib(const char *v)
{
	const char *c = v;

	while (isdigit((unsigned char)*c))
		c++;
	if (c == v)
		return false;
	return *c == '\0' || (strchr("kKmMgGtTpPeE", *c) && c[1] == '\0');
}

static bool is_seconds(const char *v)
{
	char *end;
	double d;

	if (!isdigit((unsigned char)*v))
		return false;
	errno = 0;
	d = strtod(v, &end);
	return errno == 0 && *end == '\0' && d > 0;
}

/* An option name a wrapped program could be given as --key. */
static bool is_option_name(const char *key)
{
	if (!isalnum((unsigned char)*key))
		return false;
	for (const char *c = key; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("-_.", *c))
			return false;
	return true;
}

static int expected_values(const struct sb_provider_param_def *d, char **ret)
{
	static const char *const texts[] = {
	    [SB_PARAM_BOOL] = "true, false, yes, no, on, off, 1 or 0",
	    [SB_PARAM_MIB] = "an integer of MiB with at most one suffix k, M, G, T, P or E",
	    [SB_PARAM_SECONDS] = "a positive number of seconds",
	};
	struct sb_buf b = {0};
	int r = 0;

	if (d->kind != SB_PARAM_CHOICE) {
		*ret = strdup(texts[d->kind]);
		return *ret ? 0 : -ENOMEM;
	}
	for (const char *const *c = d->choices; r >= 0 && *c; c++)
		r = sb_buf_printf(&b, "%s%s", c == d->choices ? "" : c[1] ? ", " : " or ", *c);
	if (r < 0) {
		sb_buf_reset(&b);
		return r;
	}
	*ret = sb_buf_steal(&b);
	return *ret ? 0 : -ENOMEM;
}

static bool value_ok(const struct sb_provider_param_def *d, const char *value)
{
	static const char *const booleans[] = {"true", "false", "yes", "no", "on",
					       "off",  "1",	"0",   NULL};

	switch (d->kind) {
	case SB_PARAM_TEXT:
		return true;
	case SB_PARAM_BOOL:
		return word_in(value, booleans);
	case SB_PARAM_CHOICE:
		return word_in(value, d->choices);
	case SB_PARAM_MIB:
		return is_mib(value);
	case SB_PARAM_SECONDS:
		return is_seconds(value);
	}
	return false;
}

static int check_value(const struct sb_provider_param *param, const struct sb_provider_param_def *d,
		       struct sb_diags *diags)
{
	_cleanup_free_ char *expected = NULL;
	int r;

	if (value_ok(d, param->value))
		return 0;
	r = expected_values(d, &expected);
	if (r < 0)
		return r;
	if (d->fallback)
		return sb_diags_warning(diags, param->origin,
					"Invalid %s.%s '%s' (expected %s): the default %s applies",
					param->provider, param->key, param->value, expected,
					d->fallback);
	return sb_diags_error(diags, param->origin, "Invalid %s.%s '%s': expected %s",
			      param->provider, param->key, param->value, expected);
}

static int check_param(const struct sb_provider_param *param, struct sb_diags *diags)
{
	const struct sb_provider *prov = sb_provider_get(param->os_sandbox);
	bool pass_through = prov && (prov->flags & SB_PROVIDER_PARAMS_PASS_THROUGH);
	_cleanup_free_ const char **known = NULL;
	const char *closest;
	size_t n = 0;

	if (!prov || (!prov->params && !pass_through))
		return sb_diags_error(diags, param->origin,
				      "The %s provider takes no parameters ('%s.%s')",
				      param->provider, param->provider, param->key);
	for (const struct sb_provider_param_def *d = prov->params; d && d->key; d++, n++)
		if (streq(d->key, param->key))
			return check_value(param, d, diags);
	if (pass_through && !is_option_name(param->key))
		return sb_diags_error(diags, param->origin,
				      "Invalid %s parameter '%s': it is passed to %s as --%s, "
				      "so it must be letters, digits, '-', '_' or '.'",
				      param->provider, param->key, param->provider, param->key);

	known = calloc(n ? n : 1, sizeof(*known));
	if (!known)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		known[i] = prov->params[i].key;
	closest = sb_closest_name(param->key, known, n, strlen(param->key) / 4 + 1);
	/* Passed on as it is; a near miss of a documented key is probably a
	 * typo, but the wrapped program may well know the name. */
	if (pass_through)
		return closest ? sb_diags_warning(diags, param->origin,
						  "%s.%s is passed to %s as it is: did you mean "
						  "%s.%s?",
						  param->provider, param->key, param->provider,
						  param->provider, closest)
			       : 0;
	if (closest)
		return sb_diags_error(diags, param->origin,
				      "Unknown %s parameter '%s', closest known parameter is '%s'",
				      param->provider, param->key, closest);
	return sb_diags_error(diags, param->origin, "Unknown %s parameter '%s'", param->provider,
			      param->key);
}

int sb_provider_check_params(const struct sb_profile *p, struct sb_diags *diags)
{
	size_t errors_before = diags->n_errors;

	for (size_t i = 0; i < p->n_params; i++) {
		int r = check_param(&p->params[i], diags);

		if (r < 0)
			return r;
	}
	return diags->n_errors > errors_before ? -EINVAL : 0;
}
