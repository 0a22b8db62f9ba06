/* SPDX-License-Identifier: MIT */
#include "eval-profile.h"

#include "eval-grammar.h"
#include "eval-runtime.h"
#include "util.h"

static struct {
	struct sb_eval_rules *rules;
	size_t n;
} profiles;

/* ---- before the interpreter ------------------------------------------------ */

static bool item_listed(const struct sb_eval_profile *p, enum sb_eval_list_key k, const char *name,
			bool deny)
{
	for (size_t i = 0; p && i < p->n_items[k]; i++)
		if (p->items[k][i].deny == deny && streq(p->items[k][i].value, name))
			return true;
	return false;
}

/* Whether node i is named by a syntax item (exactly or through its group). */
static bool syntax_listed(const struct sb_eval_profile *p, size_t i, bool deny)
{
	return item_listed(p, SB_EVAL_SYNTAX, sb_eval_nodes[i].name, deny) ||
	       (sb_eval_nodes[i].group &&
		item_listed(p, SB_EVAL_SYNTAX, sb_eval_nodes[i].group, deny));
}

static int compile_profile(struct sb_eval_rules *r, const struct sb_eval_profile *p,
			   const char *name)
{
	static const enum sb_eval_scalar_key keys[] = {
	    SB_EVAL_TIMEOUT,
	    SB_EVAL_MAX_ITERATIONS,
	    SB_EVAL_MAX_CALL_DEPTH,
	    SB_EVAL_MAX_DEPTH,
	    SB_EVAL_MAX_NODES,
	    SB_EVAL_MAX_ALLOC,
	    SB_EVAL_MAX_LEAKED_THREADS,
	};
	unsigned long long *fields[] = {
	    &r->timeout_ms, &r->max_iterations, &r->max_call_depth,	&r->max_depth,
	    &r->max_nodes,  &r->max_alloc,	&r->max_leaked_threads,
	};
	/* The defaults of eval-rules.c, for a default profile without lines. */
	static const unsigned long long defaults[] = {5000, 1000000, 20, 20, 5000, 10000000, 4};

	if (name && !(r->name = strdup(name)))
		return -ENOMEM;
	if (asprintf(&r->tag, "<eval%s%s>", name ? ":" : "", name ? name : "") < 0 ||
	    asprintf(&r->key_suffix, "%s%s", name ? ":" : "", name ? name : "") < 0) {
		r->tag = r->key_suffix = NULL;
		return -ENOMEM;
	}
	r->syntax = calloc(sb_eval_n_nodes, sizeof(bool));
	if (!r->syntax)
		return -ENOMEM;
	for (size_t i = 0; i < sb_eval_n_nodes; i++)
		r->syntax[i] = (sb_eval_nodes[i].flags &
				(SB_EVAL_NODE_CORE | SB_EVAL_NODE_MARKER | SB_EVAL_NODE_GATED)) ||
			       (syntax_listed(p, i, false) && !syntax_listed(p, i, true));
	for (size_t k = 0; k < ELEMENTSOF(keys); k++)
		*fields[k] = p ? p->scalars[keys[k]] : defaults[k];
	r->ns =
	    p ? (enum sb_eval_namespace)p->scalars[SB_EVAL_NAMESPACE] : SB_EVAL_NAMESPACE_ADAPTIVE;
	for (size_t k = 0; p && k < SB_EVAL_LIST__N; k++) {
		r->item_deny[k] = calloc(p->n_items[k] + 1, sizeof(bool));
		if (!r->item_deny[k])
			return -ENOMEM;
		for (size_t i = 0; i < p->n_items[k]; i++) {
			r->item_deny[k][i] = p->items[k][i].deny;
			if (sb_strv_push(&r->items[k], p->items[k][i].value) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

int sb_eval_rules_prepare(const struct sb_eval_config *cfg)
{
	bool has_default = sb_eval_config_find(cfg, NULL) != NULL;
	size_t n = cfg->n_profiles + !has_default, k = 0;
	int r;

	profiles.rules = calloc(n, sizeof(*profiles.rules));
	if (!profiles.rules)
		return -ENOMEM;
	profiles.n = n;
	if (!has_default) {
		r = compile_profile(&profiles.rules[k++], NULL, NULL);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < cfg->n_profiles; i++) {
		r = compile_profile(&profiles.rules[k++], &cfg->profiles[i], cfg->profiles[i].name);
		if (r < 0)
			return r;
	}
	return 0;
}

static void names_clear(struct sb_eval_names *n)
{
	sb_strv_free(n->allow_patterns);
	sb_strv_free(n->deny_patterns);
	/* The sets belonged to the finalized interpreter: dropped, not freed. */
	*n = (struct sb_eval_names){0};
}

void sb_eval_rules_release(void)
{
	for (size_t i = 0; i < profiles.n; i++) {
		struct sb_eval_rules *r = &profiles.rules[i];

		free(r->name);
		free(r->tag);
		free(r->key_suffix);
		free(r->syntax);
		for (size_t k = 0; k < SB_EVAL_LIST__N; k++) {
			sb_strv_free(r->items[k]);
			free(r->item_deny[k]);
		}
		names_clear(&r->call);
		names_clear(&r->attribute);
		names_clear(&r->import);
		names_clear(&r->magic);
	}
	free(profiles.rules);
	profiles.rules = NULL;
	profiles.n = 0;
}

struct sb_eval_rules *sb_eval_rules_find(const char *name)
{
	for (size_t i = 0; i < profiles.n; i++)
		if (streq_ptr(profiles.rules[i].name, name))
			return &profiles.rules[i];
	return NULL;
}

size_t sb_eval_rules_count(void)
{
	return profiles.n;
}

struct sb_eval_rules *sb_eval_rules_at(size_t i)
{
	return i < profiles.n ? &profiles.rules[i] : NULL;
}

/* ---- the Python half ------------------------------------------------------- */

/* What the helpers are bound to: an object with no attribute of its own, so
 * nothing leads from a helper back to the rules. */
typedef struct {
	PyObject_HEAD struct sb_eval_rules *rules;
} handle_object;

static PyTypeObject handle_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pysandboxes.eval_profile",
    .tp_basicsize = sizeof(handle_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An eval-* profile, as the eval guard's helpers see it.",
};

struct sb_eval_rules *sb_eval_rules_of(PyObject *handle)
{
	if (!handle || Py_TYPE(handle) != &handle_type)
		return NULL;
	return ((handle_object *)handle)->rules;
}

/* The public names of the types a group stands for (str-methods...). */
static int group_members(const char *group, PyObject *out)
{
	static const char *const str_like[] = {"str"}, *const list[] = {"list"},
				 *const dict[] = {"dict"}, *const set[] = {"set"},
				 *const tuple[] = {"tuple"}, *const num[] = {"int", "float"},
				 *const bytes[] = {"bytes"};
	static const struct {
		const char *group;
		const char *const *types;
		size_t n;
	} groups[] = {
	    {"str-methods", str_like, 1}, {"list-methods", list, 1},   {"dict-methods", dict, 1},
	    {"set-methods", set, 1},	  {"tuple-methods", tuple, 1}, {"num-methods", num, 2},
	    {"bytes-methods", bytes, 1},
	};
	PyObject *builtins = sb_eval_builtins_dict(); /* borrowed */
	PyObject *types[4] = {0};
	size_t n_types = 0;
	int r = -1;

	if (streq(group, "date-methods")) {
		PyObject *datetime = PyImport_ImportModule("datetime");
		static const char *const names[] = {"date", "time", "datetime", "timedelta"};

		if (!datetime)
			return -1;
		for (size_t i = 0; i < ELEMENTSOF(names); i++)
			if (!(types[n_types++] = PyObject_GetAttrString(datetime, names[i])))
				break;
		Py_DECREF(datetime);
	} else {
		for (size_t g = 0; g < ELEMENTSOF(groups); g++) {
			if (!streq(groups[g].group, group))
				continue;
			for (size_t i = 0; i < groups[g].n; i++) {
				PyObject *t =
				    builtins ? PyDict_GetItemString(builtins, groups[g].types[i])
					     : NULL;

				types[n_types++] = Py_XNewRef(t);
			}
		}
	}
	for (size_t i = 0; i < n_types; i++) {
		PyObject *names, *it, *name;

		if (!types[i])
			goto out;
		names = PyObject_Dir(types[i]);
		it = names ? PyObject_GetIter(names) : NULL;
		Py_XDECREF(names);
		if (!it)
			goto out;
		while ((name = PyIter_Next(it))) {
			const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
			int e = 0;

			/* str-methods leaves out format and format_map on
			 * purpose: they read attributes in C from the template. */
			if (s && s[0] != '_' && !sb_eval_is_blind_attribute(s))
				e = PySet_Add(out, name);
			Py_DECREF(name);
			if (e < 0 || (!s && PyErr_Occurred()))
				break;
		}
		Py_DECREF(it);
		if (PyErr_Occurred())
			goto out;
	}
	r = 0;
out:
	for (size_t i = 0; i < n_types; i++)
		Py_XDECREF(types[i]);
	return r;
}

static int names_make(struct sb_eval_rules *r, enum sb_eval_list_key k, struct sb_eval_names *n)
{
	n->allow = PySet_New(NULL);
	n->deny = PySet_New(NULL);
	if (!n->allow || !n->deny)
		return -1;
	for (size_t i = 0; r->items[k] && r->items[k][i]; i++) {
		const char *item = r->items[k][i];
		bool deny = r->item_deny[k][i];
		PyObject *set = deny ? n->deny : n->allow, *name;
		int e;

		if (k == SB_EVAL_ATTRIBUTE && sb_eval_is_attribute_group(item)) {
			if (group_members(item, set) < 0)
				return -1;
			continue;
		}
		if (strchr(item, '*')) {
			if (sb_strv_push(deny ? &n->deny_patterns : &n->allow_patterns, item) < 0) {
				PyErr_NoMemory();
				return -1;
			}
			continue;
		}
		name = PyUnicode_FromString(item);
		if (!name)
			return -1;
		PyUnicode_InternInPlace(&name);
		e = PySet_Add(set, name);
		Py_DECREF(name);
		if (e < 0)
			return -1;
	}
	return 0;
}

int sb_eval_rules_ready(struct sb_eval_rules *r)
{
	static const struct {
		enum sb_eval_list_key key;
		size_t offset;
	} keys[] = {
	    {SB_EVAL_CALL, offsetof(struct sb_eval_rules, call)},
	    {SB_EVAL_ATTRIBUTE, offsetof(struct sb_eval_rules, attribute)},
	    {SB_EVAL_IMPORT, offsetof(struct sb_eval_rules, import)},
	    {SB_EVAL_MAGIC, offsetof(struct sb_eval_rules, magic)},
	};
	handle_object *h;

	if (r->ready)
		return 0;
	if (PyType_Ready(&handle_type) < 0)
		return -1;
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (names_make(r, keys[i].key,
			       (struct sb_eval_names *)((char *)r + keys[i].offset)) < 0)
			return -1;
	/* Only an exact grant opens the blind methods: a pattern or a group
	 * never does. */
	for (size_t i = 0; r->items[SB_EVAL_ATTRIBUTE] && r->items[SB_EVAL_ATTRIBUTE][i]; i++) {
		const char *item = r->items[SB_EVAL_ATTRIBUTE][i];

		if (r->item_deny[SB_EVAL_ATTRIBUTE][i])
			continue;
		r->format_granted = r->format_granted || streq(item, "format");
		r->format_map_granted = r->format_map_granted || streq(item, "format_map");
	}
	h = PyObject_New(handle_object, &handle_type);
	if (!h)
		return -1;
	h->rules = r;
	r->handle = (PyObject *)h;
	r->ready = true;
	return 0;
}

static bool patterns_match(char **patterns, const char *s)
{
	for (char **p = patterns; p && *p; p++)
		if (sb_glob_star_match(*p, s))
			return true;
	return false;
}

bool sb_eval_names_denies(const struct sb_eval_names *n, PyObject *name)
{
	const char *s;
	int in = PySet_Contains(n->deny, name);

	if (in != 0) {
		PyErr_Clear();
		return true; /* a failed lookup denies */
	}
	if (!n->deny_patterns)
		return false;
	s = PyUnicode_AsUTF8(name);
	if (!s) {
		PyErr_Clear();
		return true;
	}
	return patterns_match(n->deny_patterns, s);
}

bool sb_eval_names_allows(const struct sb_eval_names *n, PyObject *name)
{
	const char *s;
	int in;

	if (!n->allow || sb_eval_names_denies(n, name))
		return false;
	in = PySet_Contains(n->allow, name);
	if (in != 0) {
		if (in < 0)
			PyErr_Clear();
		return in > 0;
	}
	if (!n->allow_patterns)
		return false;
	s = PyUnicode_AsUTF8(name);
	if (!s) {
		PyErr_Clear();
		return false;
	}
	return patterns_match(n->allow_patterns, s);
}

char *sb_eval_rule_line(const struct sb_eval_rules *r, enum sb_eval_list_key key, const char *value)
{
	char *s;

	if (asprintf(&s, "%s%s=%s", sb_eval_list_key_name(key), r->key_suffix, value) < 0)
		return NULL;
	return s;
}

void sb_eval_budget_text(const struct sb_eval_rules *r, enum sb_eval_scalar_key key, char *buf,
			 size_t size)
{
	const char *name = sb_eval_scalar_key_name(key);
	unsigned long long v = 0;

	switch (key) {
	case SB_EVAL_TIMEOUT:
		v = r->timeout_ms;
		if (v % 1000 == 0)
			snprintf(buf, size, "%s%s=%llus", name, r->key_suffix, v / 1000);
		else
			snprintf(buf, size, "%s%s=%llums", name, r->key_suffix, v);
		return;
	case SB_EVAL_MAX_ALLOC:
		v = r->max_alloc;
		if (v && v % 1000000000 == 0)
			snprintf(buf, size, "%s%s=%lluGB", name, r->key_suffix, v / 1000000000);
		else if (v && v % 1000000 == 0)
			snprintf(buf, size, "%s%s=%lluMB", name, r->key_suffix, v / 1000000);
		else if (v && v % 1000 == 0)
			snprintf(buf, size, "%s%s=%lluKB", name, r->key_suffix, v / 1000);
		else
			snprintf(buf, size, "%s%s=%llu", name, r->key_suffix, v);
		return;
	case SB_EVAL_MAX_ITERATIONS:
		v = r->max_iterations;
		break;
	case SB_EVAL_MAX_CALL_DEPTH:
		v = r->max_call_depth;
		break;
	case SB_EVAL_MAX_DEPTH:
		v = r->max_depth;
		break;
	case SB_EVAL_MAX_NODES:
		v = r->max_nodes;
		break;
	case SB_EVAL_MAX_LEAKED_THREADS:
		v = r->max_leaked_threads;
		break;
	default:
		break;
	}
	snprintf(buf, size, "%s%s=%llu", name ? name : "eval", r->key_suffix, v);
}
