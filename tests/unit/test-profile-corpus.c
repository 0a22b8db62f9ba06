/* SPDX-License-Identifier: MIT */
/* Replays tests/data/profiles: every file under valid/ must load and check
 * without an error; every file under invalid/ states, in "# expect:" lines,
 * exactly the errors it must produce ("# expect: FILE:LINE: text"), and
 * optionally "# warn: FILE:LINE: text" for warnings. */
#include <dirent.h>
#include <libgen.h>

#include "profile.h"
#include "provider.h"
#include "fake-env.h"
#include "tap.h"

/* A fixed host environment so the corpus does not depend on the machine. */
static char *fake_env[] = {
    "HOME=/home/tester",
    "FOO=foo-value",
    "EMPTY=",
    "INJECT=${FOO}",
    "TMPDIR=/tmp",
    "API_TOKEN=secret",
    "API_URL=https://example.test",
    NULL,
};

struct expectation {
	char file[128];
	unsigned line;
	char text[256];
	bool warning;
	bool matched;
};

static size_t read_expectations(const char *path, struct expectation *ex, size_t max)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char buf[512];
	size_t n = 0;

	if (!f)
		return 0;
	while (fgets(buf, sizeof(buf), f) && n < max) {
		const char *rest;
		bool warning = false;
		char *colon1, *colon2;

		if ((rest = startswith(buf, "# expect: ")))
			warning = false;
		else if ((rest = startswith(buf, "# warn: ")))
			warning = true;
		else
			continue;
		colon1 = strchr(rest, ':');
		colon2 = colon1 ? strchr(colon1 + 1, ':') : NULL;
		if (!colon1 || !colon2)
			continue;
		snprintf(ex[n].file, sizeof(ex[n].file), "%.*s", (int)(colon1 - rest), rest);
		ex[n].line = (unsigned)strtoul(colon1 + 1, NULL, 10);
		snprintf(ex[n].text, sizeof(ex[n].text), "%s", sb_strstrip(colon2 + 1));
		ex[n].warning = warning;
		ex[n].matched = false;
		n++;
	}
	return n;
}

static bool diag_matches(const struct sb_diag *d, const struct expectation *e)
{
	_cleanup_free_ char *copy = strdup(d->file);

	return copy && d->warning == e->warning && d->line == e->line &&
	       streq(basename(copy), e->file) && strstr(d->message, e->text);
}

static void run_file(const char *dir, const char *name, bool valid, const char *cli_rule)
{
	_cleanup_free_ char *path = sb_path_join(dir, name);
	_cleanup_(sb_profile_freep) struct sb_profile *p = NULL;
	struct sb_diags diags = {0};
	struct expectation ex[32];
	char *cli[] = {(char *)cli_rule, NULL};
	struct sb_load_options opts = {
	    .path = path,
	    .cli_rules = cli_rule ? cli : NULL,
	    .getenv = fake_getenv,
	    .getenv_userdata = fake_env,
	    .cwd = dir,
	    .home = "/home/tester",
	};
	size_t n_ex = read_expectations(path, ex, ELEMENTSOF(ex));
	bool ok = true;
	int r;

	r = sb_profile_load(&opts, &p, &diags);
	if (r >= 0 || r == -EINVAL)
		r = sb_profile_check(p, &opts, &diags) < 0 && r >= 0 ? -EINVAL : r;
	if (r >= 0 || r == -EINVAL)
		r = sb_provider_check_params(p, &diags) < 0 && r >= 0 ? -EINVAL : r;
	sb_diags_sort(&diags);

	for (size_t i = 0; i < diags.n; i++) {
		bool found = false;

		for (size_t j = 0; j < n_ex && !found; j++)
			if (!ex[j].matched && diag_matches(&diags.items[i], &ex[j]))
				found = ex[j].matched = true;
		if (!found && (!diags.items[i].warning || n_ex > 0 || !valid)) {
			/* Warnings only have to be declared when a file declares any. */
			if (diags.items[i].warning && valid)
				continue;
			ok = false;
			tap_diag("%s: unexpected %s %s:%u: %s", name,
				 diags.items[i].warning ? "warning" : "error", diags.items[i].file,
				 diags.items[i].line, diags.items[i].message);
		}
	}
	for (size_t j = 0; j < n_ex; j++)
		if (!ex[j].matched) {
			ok = false;
			tap_diag("%s: missing %s %s:%u: %s", name,
				 ex[j].warning ? "warning" : "error", ex[j].file, ex[j].line,
				 ex[j].text);
		}
	if (valid && diags.n_errors) {
		ok = false;
	}
	if (!valid && diags.n_errors == 0) {
		ok = false;
		tap_diag("%s: loaded without any error", name);
	}
	tap_ok(ok && (valid ? r == 0 : r == -EINVAL), "%s/%s (r=%d)", valid ? "valid" : "invalid",
	       name, r);
	sb_diags_done(&diags);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_dir(const char *root, const char *sub, bool valid)
{
	_cleanup_free_ char *dir = sb_path_join(root, sub);
	_cleanup_strv_free_ char **names = NULL;
	DIR *d = opendir(dir);
	struct dirent *de;

	tap_ok(d != NULL, "open %s", dir);
	if (!d)
		return;
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".prof"))
			sb_strv_push(&names, de->d_name);
	closedir(d);
	if (names)
		qsort(names, sb_strv_length(names), sizeof(char *), cmp_names);
	for (char **n = names; n && *n; n++)
		run_file(dir, *n, valid, NULL);
}

int main(int argc, char **argv)
{
	/* Absolute, as the launcher's paths are: rules relative to their file
	 * (learn=) and to the cwd must agree. */
	char *root = realpath(argc > 1 ? argv[1] : "tests/data/profiles", NULL);

	if (!root)
		return tap_skip_all("corpus directory not found");

	run_dir(root, "valid", true);
	run_dir(root, "invalid", false);
	free(root);
	return tap_done();
}
