/* SPDX-License-Identifier: MIT */
/* POST /v1/runs: decoding and checks (request.h). Every problem is an error
 * naming its field; nothing is run for a request with one. */
#include "request.h"

#include <stdarg.h>

#include "util.h"

/* The program's own file in the run's directory. */
#define PROGRAM_NAME "main.py"

void sb_request_error_done(struct sb_request_error *e)
{
	free(e->message);
	free(e->field);
	*e = (struct sb_request_error){0};
}

void sb_run_spec_done(struct sb_run_spec *spec)
{
	free(spec->source);
	free(spec->stdin_data);
	sb_strv_free(spec->args);
	for (size_t i = 0; i < spec->n_files; i++) {
		free(spec->files[i].name);
		free(spec->files[i].content);
	}
	free(spec->files);
	free(spec->poll_id);
	*spec = (struct sb_run_spec){0};
}

void sb_run_result_done(struct sb_run_result *res)
{
	sb_buf_reset(&res->out);
	sb_buf_reset(&res->err);
	json_decref(res->report);
	free(res->error);
	json_decref(res->reply);
	free(res->id);
	*res = (struct sb_run_result){0};
}

static int fail(struct sb_request_error *err, const char *field, const char *fmt, ...)
    _printf_(3, 4);
static int fail(struct sb_request_error *err, const char *field, const char *fmt, ...)
{
	va_list ap;
	int r;

	sb_request_error_done(err);
	va_start(ap, fmt);
	r = vasprintf(&err->message, fmt, ap);
	va_end(ap);
	if (r < 0) {
		err->message = NULL;
		return -ENOMEM;
	}
	if (field && !(err->field = strdup(field)))
		return -ENOMEM;
	return -EINVAL;
}

/* A copy of a JSON string that may hold NUL bytes: jansson accepts "\u0000"
 * only with JSON_ALLOW_NUL, which decode() does not pass, so none do. */
static int take_string(json_t *v, char **ret, size_t *ret_len)
{
	size_t n = json_string_length(v);
	char *s = malloc(n + 1);

	if (!s)
		return -ENOMEM;
	memcpy(s, json_string_value(v), n);
	s[n] = '\0';
	*ret = s;
	if (ret_len)
		*ret_len = n;
	return 0;
}

const char *sb_request_file_name_problem(const char *name, size_t max_depth)
{
	size_t depth = 1, seg = 0;

	if (!*name)
		return "is empty";
	if (strlen(name) > 255)
		return "is longer than 255 bytes";
	if (name[0] == '/')
		return "is absolute";
	if (streq(name, PROGRAM_NAME))
		return "is the program's own file (" PROGRAM_NAME ")";
	/* It would need main.py to be a directory: the run could not start. */
	if (startswith(name, PROGRAM_NAME "/"))
		return "is below the program's own file (" PROGRAM_NAME ")";
	for (const char *p = name;; p++) {
		if (*p == '/' || *p == '\0') {
			const char *start = p - seg;

			if (seg == 0)
				return "has an empty component";
			if ((seg == 1 && start[0] == '.') ||
			    (seg == 2 && start[0] == '.' && start[1] == '.'))
				return "has a '.' or '..' component";
			if (*p == '\0')
				break;
			if (++depth > max_depth)
				return "is nested too deep";
			seg = 0;
			continue;
		}
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return "has a character other than letters, digits, '.', '_', '-' and '/'";
		seg++;
	}
	return NULL;
}

static int decode_args(json_t *v, const struct sb_request_policy *policy, struct sb_run_spec *spec,
		       struct sb_request_error *err)
{
	size_t i;
	json_t *a;

	if (!json_is_array(v))
		return fail(err, "args", "must be an array of strings");
	if (json_array_size(v) > policy->max_args)
		return fail(err, "args", "has more than %zu arguments", policy->max_args);
	json_array_foreach(v, i, a)
	{
		char field[32];
		int r;

		snprintf(field, sizeof(field), "args[%zu]", i);
		if (!json_is_string(a))
			return fail(err, field, "must be a string");
		if (json_string_length(a) > policy->max_arg_len)
			return fail(err, field, "is longer than %zu bytes", policy->max_arg_len);
		r = sb_strv_push(&spec->args, json_string_value(a));
		if (r < 0)
			return r;
	}
	return 0;
}

static int decode_files(json_t *v, const struct sb_request_policy *policy, struct sb_run_spec *spec,
			struct sb_request_error *err)
{
	const char *name;
	json_t *content;

	if (!json_is_object(v))
		return fail(err, "files", "must be an object mapping file names to contents");
	if (json_object_size(v) > policy->max_files)
		return fail(err, "files", "has more than %zu files", policy->max_files);
	spec->files = calloc(json_object_size(v) + 1, sizeof(*spec->files));
	if (!spec->files)
		return -ENOMEM;
	json_object_foreach(v, name, content)
	{
		const char *problem = sb_request_file_name_problem(name, policy->max_file_depth);
		struct sb_run_file *f = &spec->files[spec->n_files];
		int r;

		if (problem)
			return fail(err, "files", "the name '%s' %s", name, problem);
		if (!json_is_string(content))
			return fail(err, "files", "the content of '%s' must be a string", name);
		f->name = strdup(name);
		if (!f->name)
			return -ENOMEM;
		spec->n_files++;
		r = take_string(content, &f->content, &f->len);
		if (r < 0)
			return r;
	}
	/* "a" and "a/b" cannot both be: one would be a file, the other needs it
	 * to be a directory. */
	for (size_t i = 0; i < spec->n_files; i++)
		for (size_t j = 0; j < spec->n_files; j++) {
			const char *rest = startswith(spec->files[j].name, spec->files[i].name);

			if (i != j && rest && *rest == '/')
				return fail(err, "files", "'%s' is both a file and a directory",
					    spec->files[i].name);
		}
	return 0;
}

static const struct limit_field {
	const char *name;
	size_t offset;
} limit_fields[] = {
    {"timeout_ms", offsetof(struct sb_run_limits, timeout_ms)},
    {"cpu_ms", offsetof(struct sb_run_limits, cpu_ms)},
    {"memory_bytes", offsetof(struct sb_run_limits, memory_bytes)},
    {"output_bytes", offsetof(struct sb_run_limits, output_bytes)},
};

static int decode_limits(json_t *v, const struct sb_request_policy *policy,
			 struct sb_run_spec *spec, struct sb_request_error *err)
{
	const char *key;
	json_t *value;

	if (!json_is_object(v))
		return fail(err, "limits", "must be an object");
	json_object_foreach(v, key, value)
	{
		const struct limit_field *f = NULL;
		char field[64];
		uint64_t max;
		json_int_t n;

		for (size_t i = 0; i < ELEMENTSOF(limit_fields); i++)
			if (streq(key, limit_fields[i].name))
				f = &limit_fields[i];
		snprintf(field, sizeof(field), "limits.%.40s", key);
		if (!f)
			return fail(err, field,
				    "unknown limit (known: timeout_ms, cpu_ms, memory_bytes, "
				    "output_bytes)");
		if (!json_is_integer(value) || (n = json_integer_value(value)) < 1)
			return fail(err, field, "must be a whole number of at least 1");
		max = *(const uint64_t *)((const char *)&policy->max + f->offset);
		if (max && (uint64_t)n > max)
			return fail(
			    err, field,
			    "%lld is above the server's limit of %llu: limits may only lower "
			    "it",
			    (long long)n, (unsigned long long)max);
		*(uint64_t *)((char *)&spec->limits + f->offset) = (uint64_t)n;
	}
	return 0;
}

static int decode(json_t *root, const struct sb_request_policy *policy, struct sb_run_spec *spec,
		  struct sb_request_error *err)
{
	json_t *source = json_object_get(root, "source");
	json_t *stdin_v = json_object_get(root, "stdin");
	json_t *args = json_object_get(root, "args");
	json_t *files = json_object_get(root, "files");
	json_t *limits = json_object_get(root, "limits");
	const char *key;
	json_t *value;
	int r;

	json_object_foreach(root, key, value)
	{
		static const char *const known[] = {"source", "stdin", "args", "files", "limits"};
		bool ok = policy->queued && streq(key, "wait");

		for (size_t i = 0; i < ELEMENTSOF(known); i++)
			ok = ok || streq(key, known[i]);
		if (!ok)
			return fail(
			    err, key,
			    policy->queued
				? "unknown field (known: source, stdin, args, files, "
				  "limits, wait)"
				: "unknown field (known: source, stdin, args, files, limits)");
	}
	if (policy->queued) {
		json_t *wait = json_object_get(root, "wait");

		if (wait && !json_is_boolean(wait))
			return fail(err, "wait", "must be true or false");
		spec->no_wait = json_is_false(wait);
	}
	if (!source)
		return fail(err, "source", "is required");
	if (!json_is_string(source))
		return fail(err, "source", "must be a string");
	if (stdin_v && !json_is_string(stdin_v) && !json_is_null(stdin_v))
		return fail(err, "stdin", "must be a string");

	r = take_string(source, &spec->source, &spec->source_len);
	if (r >= 0 && json_is_string(stdin_v))
		r = take_string(stdin_v, &spec->stdin_data, &spec->stdin_len);
	if (r >= 0 && args && !json_is_null(args))
		r = decode_args(args, policy, spec, err);
	if (r >= 0 && files && !json_is_null(files))
		r = decode_files(files, policy, spec, err);
	spec->limits = policy->max;
	if (r >= 0 && limits && !json_is_null(limits))
		r = decode_limits(limits, policy, spec, err);
	return r;
}

int sb_request_decode_value(json_t *root, const struct sb_request_policy *policy,
			    struct sb_run_spec *spec, struct sb_request_error *err)
{
	int r;

	*spec = (struct sb_run_spec){0};
	if (!json_is_object(root))
		return fail(err, NULL, "the body must be a JSON object");
	r = decode(root, policy, spec, err);
	if (r < 0)
		sb_run_spec_done(spec);
	return r;
}

int sb_request_decode(const char *body, size_t len, const struct sb_request_policy *policy,
		      struct sb_run_spec *spec, struct sb_request_error *err)
{
	json_error_t jerr;
	json_t *root;
	int r;

	*spec = (struct sb_run_spec){0};
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!root)
		return fail(err, NULL, "the body is not JSON: %s (line %d, column %d)", jerr.text,
			    jerr.line, jerr.column);
	r = sb_request_decode_value(root, policy, spec, err);
	json_decref(root);
	return r;
}
