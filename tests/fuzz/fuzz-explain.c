/* SPDX-License-Identifier: MIT */
/* --explain's inputs, the way the launcher reads them: the command line
 * (sb_cli_parse(): rules given as --key=value), the rule file, the host
 * environment (${} in rules, env=/unenv=); then the effective policy is
 * built (the environment, the kernel boundary for the provider the profile
 * names) and rendered by sb_explain() and sb_boundary_explain(), as
 * `python-sb --explain` prints it. The input is the rule file's text, then
 * after a NUL byte the arguments (one a line), then after another NUL the
 * environment (NAME=value, one a line). Every rule the profile kept must
 * appear in the output. */
#include <string.h>
#include <unistd.h>

#include "boundary.h"
#include "cli.h"
#include "env-policy.h"
#include "explain.h"
#include "fuzz.h"
#include "profile.h"
#include "provider.h"
#include "util.h"

static const char *host_getenv(const char *name, void *userdata)
{
	size_t len = strlen(name);

	for (char **e = userdata; e && *e; e++)
		if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			return *e + len + 1;
	return NULL;
}

/* The lines of [p, end) as a vector. */
static char **lines(const uint8_t *p, const uint8_t *end)
{
	char **v = NULL;

	while (p < end) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (sb_strv_consume(&v, strndup((const char *)p, n)) < 0)
			break;
		p += n + 1;
	}
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_strv_free_ char **args = NULL, **env = NULL, **argv = NULL, **envp = NULL;
	_cleanup_free_ char *path = NULL, *err = NULL;
	_cleanup_(sb_cli_done) struct sb_cli cli = {0};
	_cleanup_(sb_profile_freep) struct sb_profile *p = NULL;
	_cleanup_(sb_boundary_done) struct sb_boundary boundary = {0};
	struct sb_diags diags = {0};
	struct sb_buf out = {0};
	struct sb_load_options opts;
	const struct sb_provider *provider;
	const uint8_t *sep = memchr(data, '\0', size), *sep2 = NULL;
	const char *dir = fuzz_tmpdir();
	char *interp_dirs[] = {"/usr/lib/python3.11", NULL};
	char *interp_files[] = {"/usr/bin/python-sb", NULL};
	const struct sb_interp_paths interp = {.dirs = interp_dirs, .files = interp_files};
	int r;

	if (size > 64 * 1024 || !dir)
		return 0;
	path = fuzz_write_file("profile", data, sep ? (size_t)(sep - data) : size);
	if (!path)
		return 0;
	if (sep) {
		sep2 = memchr(sep + 1, '\0', size - (size_t)(sep + 1 - data));
		args = lines(sep + 1, sep2 ? sep2 : data + size);
		if (sep2)
			env = lines(sep2 + 1, data + size);
	}
	sb_strv_push(&argv, "python-sb");
	for (char **a = args; a && *a; a++)
		sb_strv_push(&argv, *a);
	r = sb_cli_parse((int)sb_strv_length(argv), argv, &cli, &err);
	if (r < 0) {
		FUZZ_ASSERT(r != -EINVAL || err, "a usage error without a message");
		goto done;
	}

	opts = (struct sb_load_options){
	    .path = path,
	    .cli_rules = cli.rules,
	    .getenv = host_getenv,
	    .getenv_userdata = env,
	    .cwd = dir,
	    .home = dir,
	    .learn_default = "./.py-sandboxes",
	    .max_include_depth = 4,
	};
	r = sb_profile_load(&opts, &p, &diags);
	if ((r >= 0 || r == -EINVAL) && p) {
		int c = sb_profile_check(p, &opts, &diags);

		if (c < 0 && c != -EINVAL)
			r = c;
	}
	if ((r >= 0 || r == -EINVAL) && p) {
		int c = sb_provider_check_params(p, &diags);

		if (c < 0 && c != -EINVAL)
			r = c;
	}
	if (r < 0 && r != -EINVAL)
		goto done;
	FUZZ_ASSERT(p, "no profile");
	sb_diags_sort(&diags);
	if (diags.n_errors)
		goto done; /* the launcher stops here */
	/* auto as sb_provider_select() resolves it where Landlock works. */
	provider = sb_provider_get(p->os_sandbox == SB_OS_UNSET || p->os_sandbox == SB_OS_AUTO
				       ? SB_OS_LANDLOCK
				       : p->os_sandbox);
	FUZZ_ASSERT(provider, "no provider for os-sandbox %d", p->os_sandbox);
	FUZZ_ASSERT(sb_env_build(p, env, SB_MODE_ENFORCE, &envp) == 0, "the environment");
	FUZZ_ASSERT(sb_boundary_build(p, provider, &interp, SB_MODE_ENFORCE, &boundary) == 0,
		    "the boundary");
	FUZZ_ASSERT(sb_explain(p, path, provider, NULL, envp, &out) == 0, "explain");
	FUZZ_ASSERT(sb_boundary_explain(&boundary, &out) == 0, "the kernel side");
	FUZZ_ASSERT(out.data && startswith(out.data, "# Effective python-sb policy\n"), "header");
	for (size_t i = 0; i < p->n_nets; i++)
		FUZZ_ASSERT(strstr(out.data, p->nets[i].text), "net rule '%s' not shown",
			    p->nets[i].text);
	for (size_t i = 0; i < p->n_imports; i++)
		FUZZ_ASSERT(strstr(out.data, p->imports[i].name), "import '%s' not shown",
			    p->imports[i].name);
	for (size_t i = 0; i < p->n_exposes; i++)
		FUZZ_ASSERT(strstr(out.data, p->exposes[i].path), "expose '%s' not shown",
			    p->exposes[i].path);
	for (char **e = envp; e && *e; e++)
		FUZZ_ASSERT(memmem(out.data, out.len, *e, strcspn(*e, "=")),
			    "variable '%s' not shown", *e);
done:
	sb_buf_reset(&out);
	sb_diags_done(&diags);
	unlink(path);
	return 0;
}
