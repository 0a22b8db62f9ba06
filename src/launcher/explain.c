/* SPDX-License-Identifier: MIT */
#include "explain.h"

#define LAYER_LAUNCHER "launcher: environment built before the interpreter starts"
#define LAYER_GUARD    "Python guard (C audit hook)"
/* Said plainly so that nobody mistakes a parsed rule for a protection. */
#define LAYER_PENDING "parsed and validated; NOT enforced by this version"
#define LAYER_EVAL    "eval guard: checked and rewritten in C, budgets at run time"

static int rule_line(struct sb_buf *out, const char *text, struct sb_origin o, const char *layer)
{
	if (o.file)
		return sb_buf_printf(out, "%-44s # %s:%u  [%s]\n", text, o.file, o.line, layer);
	return sb_buf_printf(out, "%-44s # default  [%s]\n", text, layer);
}

static int scalar_line(struct sb_buf *out, const struct sb_profile *p, enum sb_scalar_key k,
		       const char *value, const char *layer)
{
	_cleanup_free_ char *text = NULL;

	if (asprintf(&text, "%s=%s", sb_scalar_key_name(k), value) < 0)
		return -ENOMEM;
	return rule_line(
	    out, text, p->scalar_set[k] ? p->scalar_origin[k] : (struct sb_origin){NULL, 0}, layer);
}

static int explain_scalars(const struct sb_profile *p, const struct sb_provider *provider,
			   const char *provider_note, struct sb_buf *out)
{
	char port[16];
	int r;

	r = scalar_line(out, p, SB_KEY_OS_SANDBOX, sb_os_sandbox_name(p->os_sandbox),
			provider->summary);
	if (r >= 0 && provider_note)
		r = sb_buf_printf(out, "#   %s\n", provider_note);
	if (r >= 0)
		r = sb_buf_printf(out, "#   provider in use: %s\n", provider->name);
	if (r >= 0)
		r = scalar_line(out, p, SB_KEY_PY_SANDBOX, p->py_sandbox ? "true" : "false",
				"launcher");
	if (r >= 0 && (p->learn == SB_LEARN_FILE || p->learn_locked))
		r = scalar_line(out, p, SB_KEY_LEARN,
				p->learn == SB_LEARN_FILE ? p->learn_file : "false",
				p->learn_locked ? "lock: learning and command-line rules refused"
						: "learning mode");
	snprintf(port, sizeof(port), "%d", p->port);
	if (r >= 0 && p->port >= 0)
		r = scalar_line(
		    out, p, SB_KEY_PORT, port,
		    "partial mode: unused, the worker talks over an inherited socketpair");
	if (r >= 0)
		r = scalar_line(out, p, SB_KEY_RESULT_MODE,
				p->result_mode == SB_RESULT_DATA_ONLY ? "data-only" : "objects",
				"partial mode: the caller's result guard");
	if (r >= 0)
		r = scalar_line(out, p, SB_KEY_RESULT_GUARD, p->result_guard ? "true" : "false",
				"partial mode: the caller's result guard");
	return r;
}

static int explain_env(const struct sb_profile *p, char *const *envp, struct sb_buf *out)
{
	int r = sb_buf_puts(out, "\n# Environment (the program sees exactly these variables)\n");

	for (size_t i = 0; r >= 0 && i < p->n_envs; i++) {
		const struct sb_env_rule *e = &p->envs[i];
		_cleanup_free_ char *text = NULL;

		if (e->kind == SB_ENV_LITERAL)
			r = asprintf(&text, "env=%s=%s", e->name, e->value);
		else if (e->fallback)
			r = asprintf(&text, "env=%s=${%s:-%s}", e->name, e->host_name, e->fallback);
		else
			r = asprintf(&text, "env=%s=${%s}", e->name, e->host_name);
		if (r < 0)
			return -ENOMEM;
		r = rule_line(out, text, e->origin, LAYER_LAUNCHER);
	}
	for (size_t i = 0; r >= 0 && i < p->n_unenvs; i++) {
		_cleanup_free_ char *text = NULL;

		if (asprintf(&text, "unenv=%s", p->unenvs[i].name) < 0)
			return -ENOMEM;
		r = rule_line(out, text, p->unenvs[i].origin, LAYER_LAUNCHER);
	}
	if (r >= 0)
		r = sb_buf_puts(out, "#   resulting names:");
	for (char *const *e = envp; r >= 0 && e && *e; e++)
		r = sb_buf_printf(out, " %.*s", (int)strcspn(*e, "="), *e);
	if (r >= 0)
		r = sb_buf_puts(out, "\n");
	return r;
}

#define LAYER_OFF "not enforced: py-sandbox=false"

/* Which layer enforces a rule of the Python guard, and of the kernel too. */
static const char *guard_layer(const struct sb_profile *p)
{
	return p->py_sandbox ? LAYER_GUARD : LAYER_OFF;
}

/* The layer of a rule the provider's kernel enforces too: its own words, [0]
 * beside the guard, [1] with py-sandbox=false. */
static const char *kernel_layer(const struct sb_profile *p, const char *const layer[2])
{
	if (!layer[0])
		return guard_layer(p);
	return layer[p->py_sandbox ? 0 : 1];
}

static const char *ignore_layer(const struct sb_profile *p, const struct sb_provider *provider)
{
	static const char *const layers[][2] = {
	    [SB_IGNORE_VANISHES] = {"Python guard + kernel: the path does not exist",
				    "kernel: the path does not exist (py-sandbox=false)"},
	    [SB_IGNORE_REFUSED] = {"Python guard + kernel: access refused",
				   "kernel: access refused (py-sandbox=false)"},
	    [SB_IGNORE_MASKED] = {"Python guard + kernel: masked, reads return nothing",
				  "kernel: masked, reads return nothing (py-sandbox=false)"},
	};

	if (provider->ignore == SB_IGNORE_GUARD_ONLY)
		return guard_layer(p);
	return kernel_layer(p, layers[provider->ignore]);
}

static int explain_files(const struct sb_profile *p, const struct sb_provider *provider,
			 struct sb_buf *out)
{
	int r = sb_buf_puts(out, "\n# Files\n");

	for (size_t i = 0; r >= 0 && i < p->n_exposes; i++) {
		const struct sb_expose_rule *e = &p->exposes[i];
		_cleanup_free_ char *text = NULL;

		if (asprintf(&text, "expose-%s=%s%s%s", e->writable ? "rw" : "ro", e->path,
			     e->resolved && !streq(e->resolved, e->path) ? " -> " : "",
			     e->resolved && !streq(e->resolved, e->path) ? e->resolved : "") < 0)
			return -ENOMEM;
		r = rule_line(out, text, e->origin, kernel_layer(p, provider->files_layer));
	}
	for (size_t i = 0; r >= 0 && i < p->n_ignores; i++) {
		_cleanup_free_ char *text = NULL;

		if (asprintf(&text, "ignore=%s", p->ignores[i].name) < 0)
			return -ENOMEM;
		r = rule_line(out, text, p->ignores[i].origin, ignore_layer(p, provider));
	}
	return r;
}

static int explain_net(const struct sb_profile *p, const struct sb_provider *provider,
		       struct sb_buf *out)
{
	int r = sb_buf_puts(out, "\n# Network (no rule: every socket refused)\n");

	for (size_t i = 0; r >= 0 && i < p->n_nets; i++) {
		_cleanup_free_ char *text = NULL;

		if (asprintf(&text, "net=%s", p->nets[i].text) < 0)
			return -ENOMEM;
		r = rule_line(out, text, p->nets[i].origin, kernel_layer(p, provider->net_layer));
	}
	return r;
}

static int explain_imports(const struct sb_profile *p, struct sb_buf *out)
{
	int r = sb_buf_puts(out, "\n# Imports (top-level names; the runtime's own imports are not "
				 "charged)\n");

	if (r >= 0 && p->import_all)
		r = rule_line(out, "python-import=*", p->import_all_origin, guard_layer(p));
	for (size_t i = 0; r >= 0 && i < p->n_imports; i++) {
		_cleanup_free_ char *text = NULL;

		if (asprintf(&text, "python-import=%s", p->imports[i].name) < 0)
			return -ENOMEM;
		r = rule_line(out, text, p->imports[i].origin,
			      strchr(p->imports[i].name, '.') ? "never matches: dotted name"
							      : guard_layer(p));
	}
	if (r >= 0 && !p->import_all && p->n_imports == 0)
		r = sb_buf_puts(out, "#   no python-import rule: the program may import nothing\n");
	return r;
}

static int explain_api(const struct sb_profile *p, struct sb_buf *out)
{
	int r = sb_buf_puts(out, "\n# Sensitive APIs (registry denied unless granted)\n");

	for (size_t i = 0; r >= 0 && i < p->n_apis; i++) {
		const struct sb_api_rule *a = &p->apis[i];
		_cleanup_free_ char *text = NULL;
		const char *target = a->kind == SB_API_TARGET_ALL ? "*"
				     : a->kind == SB_API_TARGET_CATEGORY
					 ? sb_api_category_name(a->category)
					 : a->function->qualname;

		if (asprintf(&text, "python-api=%s:%s", a->deny ? "DENY" : "ALLOW", target) < 0)
			return -ENOMEM;
		r = rule_line(out, text, a->origin, guard_layer(p));
	}
	for (int c = 0; r >= 0 && c < SB_API_CATEGORY__N; c++) {
		size_t allowed = 0, total = 0;

		for (size_t i = 0; i < sb_api_registry_size; i++) {
			if (sb_api_registry[i].category != (enum sb_api_category)c)
				continue;
			total++;
			allowed += sb_api_is_allowed(p->apis, p->n_apis, &sb_api_registry[i], NULL);
		}
		r = sb_buf_printf(out, "#   %-16s %zu of %zu functions allowed\n",
				  sb_api_category_name((enum sb_api_category)c), allowed, total);
	}
	return r;
}

/* Scalars are shown in profile syntax, so that a line can be pasted back. */
static char *eval_scalar_text(const struct sb_eval_profile *ep, int k)
{
	static const char *const namespaces[] = {
	    [SB_EVAL_NAMESPACE_ADAPTIVE] = "adaptive",
	    [SB_EVAL_NAMESPACE_CLOSED] = "closed",
	    [SB_EVAL_NAMESPACE_CALLER] = "caller",
	};
	unsigned long long v = ep->scalars[k];
	char *text = NULL;

	if (k == SB_EVAL_NAMESPACE && v < ELEMENTSOF(namespaces))
		return strdup(namespaces[v]);
	if (k == SB_EVAL_TIMEOUT)
		return asprintf(&text, v % 1000 == 0 ? "%llus" : "%llums",
				v % 1000 == 0 ? v / 1000 : v) < 0
			   ? NULL
			   : text;
	if (k == SB_EVAL_MAX_ALLOC)
		return asprintf(&text, "%lluB", v) < 0 ? NULL : text;
	return asprintf(&text, "%llu", v) < 0 ? NULL : text;
}

/* The eval guard is a part of the Python guard: off with it. */
static const char *eval_layer(const struct sb_profile *p)
{
	return p->py_sandbox ? LAYER_EVAL : LAYER_OFF;
}

static int explain_eval(const struct sb_profile *p, struct sb_buf *out)
{
	int r =
	    sb_buf_printf(out, "\n# Dynamic code: eval/exec/compile of strings %s\n",
			  p->eval.any_key ? "guarded by eval-* rules" : "refused (no eval-* rule)");

	for (size_t i = 0; r >= 0 && i < p->eval.n_profiles; i++) {
		const struct sb_eval_profile *ep = &p->eval.profiles[i];
		const char *suffix = ep->name ? ep->name : "";
		const char *colon = ep->name ? ":" : "";

		for (int k = 0; r >= 0 && k < SB_EVAL_LIST__N; k++)
			for (size_t j = 0; r >= 0 && j < ep->n_items[k]; j++) {
				_cleanup_free_ char *text = NULL;

				if (asprintf(&text, "%s%s%s=%s%s",
					     sb_eval_list_key_name((enum sb_eval_list_key)k), colon,
					     suffix, ep->items[k][j].deny ? "DENY:" : "",
					     ep->items[k][j].value) < 0)
					return -ENOMEM;
				r = rule_line(out, text, ep->items[k][j].origin, eval_layer(p));
			}
		for (int k = 0; r >= 0 && k < SB_EVAL_SCALAR__N; k++) {
			_cleanup_free_ char *text = NULL, *value = eval_scalar_text(ep, k);

			if (!value || asprintf(&text, "%s%s%s=%s",
					       sb_eval_scalar_key_name((enum sb_eval_scalar_key)k),
					       colon, suffix, value) < 0)
				return -ENOMEM;
			r = rule_line(out, text,
				      ep->scalar_set[k] ? ep->scalar_origin[k]
							: (struct sb_origin){NULL, 0},
				      eval_layer(p));
		}
	}
	return r;
}

static int explain_params(const struct sb_profile *p, struct sb_buf *out)
{
	int r = 0;

	if (p->n_params)
		r = sb_buf_puts(out,
				"\n# Provider parameters (read only by the active provider)\n");
	for (size_t i = 0; r >= 0 && i < p->n_params; i++) {
		_cleanup_free_ char *text = NULL;

		if (asprintf(&text, "%s.%s=%s", p->params[i].provider, p->params[i].key,
			     p->params[i].value) < 0)
			return -ENOMEM;
		r = rule_line(out, text, p->params[i].origin, LAYER_PENDING);
	}
	return r;
}

int sb_explain(const struct sb_profile *p, const char *profile_path,
	       const struct sb_provider *provider, const char *provider_note, char *const *envp,
	       struct sb_buf *out)
{
	int r;

	r = sb_buf_printf(out, "# Effective python-sb policy\n# rule file: %s%s\n",
			  profile_path ? profile_path : "(none)",
			  p->root_missing ? " (missing)" : "");
	for (char **f = p->files; r >= 0 && f && *f; f++)
		r = sb_buf_printf(out, "# read: %s\n", *f);
	if (r >= 0)
		r = explain_scalars(p, provider, provider_note, out);
	if (r >= 0)
		r = explain_env(p, envp, out);
	if (r >= 0)
		r = explain_files(p, provider, out);
	if (r >= 0)
		r = explain_net(p, provider, out);
	if (r >= 0)
		r = explain_imports(p, out);
	if (r >= 0)
		r = explain_api(p, out);
	if (r >= 0)
		r = explain_eval(p, out);
	if (r >= 0)
		r = explain_params(p, out);
	return r;
}
