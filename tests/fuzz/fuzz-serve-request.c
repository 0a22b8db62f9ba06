/* SPDX-License-Identifier: MIT */
/* The service's request decoding (src/serve/request.c): the body of
 * POST /v1/runs, as any client may send it, into a run spec; then the spec
 * into a run directory (src/serve/rundir.c), where the file names meet the
 * file system. The first byte picks the server's policy, the rest is the body.
 *
 * Oracle: a reference written here from docs/serve.md decides from the same
 * JSON (jansson's parse: the grammar is the library's) whether the request is
 * valid, and what it asks for; the decoder must agree on the verdict and, for
 * a valid one, on every field. A refusal names a message, and leaves nothing
 * decoded. Every valid spec can be written as a run directory that holds
 * exactly main.py and the spec's files, with their contents, and is removed
 * without a trace. */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "request.h"
#include "rundir.h"
#include "util.h"

static const struct sb_request_policy policies[] = {
    /* tests/unit/test-serve-request.c's */
    {.max = {.timeout_ms = 10000, .cpu_ms = 5000, .memory_bytes = 0, .output_bytes = 1000},
     .max_args = 3,
     .max_arg_len = 8,
     .max_files = 2,
     .max_file_depth = 2},
    /* serve-main.c's, with data/serve.py-sandboxes' limits */
    {.max =
	 {.timeout_ms = 10000, .cpu_ms = 5000, .memory_bytes = 256000000, .output_bytes = 1000000},
     .max_args = 256,
     .max_arg_len = 65536,
     .max_files = 64,
     .max_file_depth = 8},
    /* a server without limits, one level of files */
    {.max = {0}, .max_args = 1, .max_arg_len = 1, .max_files = 8, .max_file_depth = 1},
};

static const char *const limit_names[] = {"timeout_ms", "cpu_ms", "memory_bytes", "output_bytes"};

static uint64_t *limit_of(struct sb_run_limits *l, size_t i)
{
	uint64_t *fields[] = {&l->timeout_ms, &l->cpu_ms, &l->memory_bytes, &l->output_bytes};

	return fields[i];
}

/* docs/serve.md: a relative path of at most max_depth '/'-separated
 * components, each of letters, digits, '.', '_' and '-', none "." or "..",
 * at most 255 bytes; not main.py, nor below it. */
static bool reference_name_ok(const char *name, size_t max_depth)
{
	size_t len = strlen(name), depth = 0;
	const char *p = name;

	if (len == 0 || len > 255)
		return false;
	for (;;) {
		size_t n = strcspn(p, "/");

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		for (size_t i = 0; i < n; i++)
			if (!strchr(
				"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
				p[i]))
				return false;
		if (++depth > max_depth)
			return false;
		if (depth == 1 && n == 7 && memcmp(p, "main.py", 7) == 0)
			return false;
		if (!p[n])
			return true;
		p += n + 1;
	}
}

static bool is_string_or_absent(json_t *v)
{
	return !v || json_is_null(v) || json_is_string(v);
}

/* Whether root is a valid request under policy. */
static bool reference_valid(json_t *root, const struct sb_request_policy *pol)
{
	json_t *source = json_object_get(root, "source"), *args = json_object_get(root, "args");
	json_t *files = json_object_get(root, "files"), *limits = json_object_get(root, "limits");
	const char *key;
	json_t *v;
	size_t i;

	if (!json_is_object(root) || !json_is_string(source) ||
	    !is_string_or_absent(json_object_get(root, "stdin")))
		return false;
	json_object_foreach(root, key, v)
	{
		if (!streq(key, "source") && !streq(key, "stdin") && !streq(key, "args") &&
		    !streq(key, "files") && !streq(key, "limits"))
			return false;
	}
	if (args && !json_is_null(args)) {
		if (!json_is_array(args) || json_array_size(args) > pol->max_args)
			return false;
		json_array_foreach(args, i, v)
		{
			if (!json_is_string(v) || json_string_length(v) > pol->max_arg_len)
				return false;
		}
	}
	if (files && !json_is_null(files)) {
		const char *other;
		json_t *w;

		if (!json_is_object(files) || json_object_size(files) > pol->max_files)
			return false;
		json_object_foreach(files, key, v)
		{
			if (!json_is_string(v) || !reference_name_ok(key, pol->max_file_depth))
				return false;
			/* A file cannot be the directory of another. */
			json_object_foreach(files, other, w)
			{
				size_t n = strlen(key);

				if (strncmp(other, key, n) == 0 && other[n] == '/')
					return false;
			}
		}
	}
	if (limits && !json_is_null(limits)) {
		if (!json_is_object(limits))
			return false;
		json_object_foreach(limits, key, v)
		{
			struct sb_run_limits max = pol->max;
			size_t k;

			for (k = 0; k < ELEMENTSOF(limit_names); k++)
				if (streq(key, limit_names[k]))
					break;
			if (k == ELEMENTSOF(limit_names) || !json_is_integer(v) ||
			    json_integer_value(v) < 1 ||
			    (*limit_of(&max, k) &&
			     (uint64_t)json_integer_value(v) > *limit_of(&max, k)))
				return false;
		}
	}
	return true;
}

static bool same_bytes(const char *a, size_t alen, json_t *s)
{
	return json_is_string(s) && alen == json_string_length(s) &&
	       memcmp(a, json_string_value(s), alen) == 0 && a[alen] == '\0';
}

/* A valid spec holds what root asks for, and the server's limits for what it
 * does not lower. */
static void check_spec(const struct sb_run_spec *spec, json_t *root,
		       const struct sb_request_policy *pol)
{
	json_t *stdin_v = json_object_get(root, "stdin"), *args = json_object_get(root, "args");
	json_t *files = json_object_get(root, "files"), *limits = json_object_get(root, "limits");
	size_t n_args = json_is_array(args) ? json_array_size(args) : 0;

	FUZZ_ASSERT(spec->source &&
			same_bytes(spec->source, spec->source_len, json_object_get(root, "source")),
		    "the source differs");
	if (json_is_string(stdin_v))
		FUZZ_ASSERT(spec->stdin_data &&
				same_bytes(spec->stdin_data, spec->stdin_len, stdin_v),
			    "stdin differs");
	else
		FUZZ_ASSERT(!spec->stdin_data && spec->stdin_len == 0, "stdin without one");
	FUZZ_ASSERT(sb_strv_length(spec->args) == n_args, "%zu args, %zu asked for",
		    sb_strv_length(spec->args), n_args);
	for (size_t i = 0; i < n_args; i++)
		FUZZ_ASSERT(streq(spec->args[i], json_string_value(json_array_get(args, i))),
			    "args[%zu] differs", i);
	FUZZ_ASSERT(spec->n_files == (json_is_object(files) ? json_object_size(files) : 0),
		    "%zu files", spec->n_files);
	for (size_t i = 0; i < spec->n_files; i++) {
		const struct sb_run_file *f = &spec->files[i];

		FUZZ_ASSERT(f->name && f->content, "file %zu is empty", i);
		FUZZ_ASSERT(same_bytes(f->content, f->len, json_object_get(files, f->name)),
			    "the content of '%s' differs", f->name);
		for (size_t j = 0; j < i; j++)
			FUZZ_ASSERT(!streq(f->name, spec->files[j].name), "'%s' twice", f->name);
	}
	for (size_t k = 0; k < ELEMENTSOF(limit_names); k++) {
		struct sb_run_limits max = pol->max, got = spec->limits;
		json_t *v = json_is_object(limits) ? json_object_get(limits, limit_names[k]) : NULL;
		uint64_t want = v ? (uint64_t)json_integer_value(v) : *limit_of(&max, k);

		FUZZ_ASSERT(*limit_of(&got, k) == want, "%s is %llu, not %llu", limit_names[k],
			    (unsigned long long)*limit_of(&got, k), (unsigned long long)want);
	}
}

/* ---- the run directory ---------------------------------------------------- */

static const struct sb_run_spec *walk_spec;
static const char *walk_root;
static size_t walk_files;

static const char *content_of(const char *rel, size_t *len)
{
	if (streq(rel, "main.py")) {
		*len = walk_spec->source_len;
		return walk_spec->source;
	}
	for (size_t i = 0; i < walk_spec->n_files; i++)
		if (streq(rel, walk_spec->files[i].name)) {
			*len = walk_spec->files[i].len;
			return walk_spec->files[i].content;
		}
	return NULL;
}

static int check_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw _unused_)
{
	const char *rel = path + strlen(walk_root);
	_cleanup_free_ char *data = NULL;
	const char *want;
	size_t len = 0;
	FILE *f;

	if (*rel == '\0')
		return 0;
	rel++;
	FUZZ_ASSERT(flag == FTW_F || flag == FTW_D, "'%s' is neither a file nor a directory", rel);
	if (flag == FTW_D) {
		/* Only the directories of a file's name. */
		bool parent = false;

		for (size_t i = 0; i < walk_spec->n_files && !parent; i++) {
			const char *rest = startswith(walk_spec->files[i].name, rel);

			parent = rest && *rest == '/';
		}
		FUZZ_ASSERT(parent, "directory '%s' is nobody's", rel);
		return 0;
	}
	want = content_of(rel, &len);
	FUZZ_ASSERT(want, "file '%s' was not asked for", rel);
	/* The run's user reads it (owner, or group when the service is root);
	 * others never. */
	FUZZ_ASSERT((size_t)st->st_size == len &&
			((st->st_mode & 0777) == 0600 || (st->st_mode & 0777) == 0640),
		    "file '%s': %lld bytes, mode %o", rel, (long long)st->st_size,
		    st->st_mode & 0777);
	data = malloc(len + 1);
	f = fopen(path, "re");
	FUZZ_ASSERT(data && f && fread(data, 1, len + 1, f) == len, "'%s' cannot be read", rel);
	fclose(f);
	FUZZ_ASSERT(memcmp(data, want, len) == 0, "'%s' holds other bytes", rel);
	walk_files++;
	return 0;
}

static void check_rundir(const struct sb_run_spec *spec)
{
	const char *workdir = fuzz_tmpdir();
	_cleanup_free_ char *path = NULL;
	DIR *d;
	int r;

	if (!workdir)
		return;
	r = sb_rundir_create(workdir, spec, false, 0, &path);
	FUZZ_ASSERT(r == 0, "a valid spec cannot be written: %s", strerror(-r));
	walk_spec = spec;
	walk_root = path;
	walk_files = 0;
	FUZZ_ASSERT(nftw(path, check_entry, 16, FTW_PHYS) == 0, "cannot walk the run directory");
	FUZZ_ASSERT(walk_files == spec->n_files + 1, "%zu files, %zu asked for", walk_files,
		    spec->n_files + 1);
	FUZZ_ASSERT(sb_rundir_remove(path) == 0, "the run directory stays");
	d = opendir(workdir);
	FUZZ_ASSERT(d, "the work directory is gone");
	for (struct dirent *e; (e = readdir(d));)
		FUZZ_ASSERT(streq(e->d_name, ".") || streq(e->d_name, ".."),
			    "'%s' is left in the work directory", e->d_name);
	closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct sb_request_policy *pol;
	struct sb_request_error err = {0};
	struct sb_run_spec spec;
	const char *body;
	json_t *root;
	bool want;
	int r;

	if (size < 1 || size > 256 * 1024)
		return 0;
	pol = &policies[data[0] % ELEMENTSOF(policies)];
	body = (const char *)data + 1;
	size--;

	r = sb_request_decode(body, size, pol, &spec, &err);
	FUZZ_ASSERT(r == 0 || r == -EINVAL, "decode: %d", r);
	root = json_loadb(body, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
	want = root && reference_valid(root, pol);
	FUZZ_ASSERT((r == 0) == want, "the decoder %s a request the reference %s (%s)",
		    r == 0 ? "accepts" : "refuses", want ? "accepts" : "refuses",
		    err.message ? err.message : "no message");
	if (r == 0) {
		FUZZ_ASSERT(!err.message && !err.field, "an error with a valid request");
		check_spec(&spec, root, pol);
		check_rundir(&spec);
		sb_run_spec_done(&spec);
	} else {
		FUZZ_ASSERT(err.message && *err.message, "a refusal without a message");
		FUZZ_ASSERT(!spec.source && !spec.stdin_data && !spec.args && !spec.files &&
				!spec.n_files,
			    "a refusal leaves something decoded");
		sb_request_error_done(&err);
	}
	json_decref(root);
	return 0;
}
