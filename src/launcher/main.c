/* SPDX-License-Identifier: MIT */
#include <Python.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cli.h"
#include "config-lookup.h"
#include "boundary.h"
#include "embed.h"
#include "env-policy.h"
#include "explain.h"
#include "guard-net.h"
#include "inherited.h"
#include "launcher.h"
#include "learn.h"
#include "profile.h"
#include "provider.h"
#include "report-supervise.h"
#include "resource-limits.h"
#include "serve-exec.h"
#include "usage.h"
#include "worker.h"
#include "util.h"

#define EXIT_USAGE 2
/* What the original returns (-1) for a configuration error: distinct from any
 * exit status a Python program or a signal produces through us. */
#define EXIT_CONFIG 255
/* As timeout(1). */
#define EXIT_TIMEOUT 124
/* limit-output= exceeded: a status of its own for a service to tell apart. */
#define EXIT_OUTPUT 125

extern char **environ;

static const char *host_getenv(const char *name, void *userdata)
{
	return sb_strv_env_get(userdata, name);
}

/* VIRTUAL_ENV is what activation exports; honour it as `python` from the
 * venv's bin/ would, but only for a directory that really is a venv. */
static char *detect_venv(char **host_env)
{
	const char *venv = host_getenv("VIRTUAL_ENV", host_env);
	_cleanup_free_ char *cfg = NULL;
	struct stat st;

	if (!venv || venv[0] != '/')
		return NULL;
	cfg = sb_path_join(venv, "pyvenv.cfg");
	if (!cfg || stat(cfg, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	return strdup(venv);
}

static char **site_dirs_for(const char *venv)
{
	char **dirs = NULL;
	_cleanup_free_ char *copy = strdup(SB_PYTHON_SITE_DIRS);
	char *save = NULL;

	if (venv) {
		char *d;

		if (asprintf(&d, "%s/lib/python%d.%d/site-packages", venv, PY_MAJOR_VERSION,
			     PY_MINOR_VERSION) >= 0)
			sb_strv_consume(&dirs, d);
	}
	for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save))
		sb_strv_push(&dirs, d);
	return dirs;
}

static bool wants_cpython_help(const struct sb_cli *cli)
{
	static const char *const help[] = {"--help-env", "--help-xoptions", "--help-all", NULL};

	for (char **a = cli->python_argv; a && *a; a++)
		for (const char *const *h = help; *h; h++)
			if (streq(*a, *h))
				return true;
	return false;
}

static int report_diags(struct sb_diags *d)
{
	sb_diags_sort(d);
	for (size_t i = 0; i < d->n; i++)
		if (d->items[i].warning)
			fprintf(stderr, "python-sb: warning: %s:%u: %s\n", d->items[i].file,
				d->items[i].line, d->items[i].message);
	if (d->n_errors == 0)
		return 0;
	fputs("python-sb: ConfigSyntaxError: Syntax error in config files.\n", stderr);
	for (size_t i = 0; i < d->n; i++)
		if (!d->items[i].warning)
			fprintf(stderr, "  %s:%u: %s\n", d->items[i].file, d->items[i].line,
				d->items[i].message);
	return -EINVAL;
}

static int fail(const char *what, const char *detail, int r)
{
	fprintf(stderr, "python-sb: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : (r < 0 ? strerror(-r) : ""));
	return EXIT_CONFIG;
}

/* The supervisor's side: report like `python` would see it. */
static int mirror_child(const struct sb_supervise_result *res, const struct sb_limits *limits)
{
	if (res->timed_out) {
		fprintf(stderr,
			"python-sb: timeout=%llums expired: the program and every process it "
			"started were killed\n",
			limits->timeout_ms);
		return EXIT_TIMEOUT;
	}
	if (res->output_exceeded) {
		fprintf(stderr,
			"python-sb: limit-output=%lluB exceeded: the program and every process it "
			"started were killed\n",
			limits->output_bytes);
		return EXIT_OUTPUT;
	}
	if (res->memory_exceeded)
		fprintf(stderr,
			"python-sb: limit-memory=%lluB exceeded: the kernel killed the program "
			"(its cgroup's memory.max)\n",
			limits->memory_bytes);
	if (WIFSIGNALED(res->status)) {
		/* Die the same way, so our parent sees what `python` would show. */
		signal(WTERMSIG(res->status), SIG_DFL);
		raise(WTERMSIG(res->status));
		return 128 + WTERMSIG(res->status);
	}
	return WEXITSTATUS(res->status);
}

/* From the policy to the program: the interpreter's paths, the kernel
 * boundary, then the embedded run. */
static int run(const struct sb_embed *e, enum sb_rules_mode mode, const char *note)
{
	_cleanup_(sb_boundary_done) struct sb_boundary boundary = {0};
	_cleanup_(sb_interp_paths_done) struct sb_interp_paths paths = {0};
	_cleanup_strv_free_ char **kernel_warnings = NULL;
	_cleanup_free_ char *err = NULL;
	struct sb_embed_state *state = NULL;
	struct sb_supervise_options supervise;
	struct sb_supervise_result res;
	bool is_child = true;
	int r, exit_code = 0;

	r = sb_embed_prepare(e, &state, &paths, &err);
	if (r < 0)
		return fail("cannot prepare the interpreter", err, r);
	r = sb_boundary_build(e->profile, e->provider, &paths, mode, &boundary);
	if (r < 0)
		return fail("cannot build the kernel policy", NULL, r);

	if (e->cli->explain) {
		struct sb_buf out = {0};

		r = sb_explain(e->profile, e->profile_path, e->provider, note, e->envp, &out);
		if (r >= 0)
			r = sb_boundary_explain(&boundary, &out);
		if (r < 0)
			return fail("cannot explain the policy", NULL, r);
		fputs(out.data, stdout);
		sb_buf_reset(&out);
		return 0;
	}

	if (e->profile->py_sandbox) {
		_cleanup_strv_free_ char **warnings = NULL;

		/* Host names are resolved and pinned now, while /etc/hosts and DNS
		 * are still reachable: the boundary may hide both. */
		r = sb_guard_net_resolve(e->profile, &warnings, &err);
		for (char **w = warnings; w && *w; w++)
			fprintf(stderr, "python-sb: warning: %s\n", *w);
		if (r < 0) {
			fprintf(stderr, "python-sb: %s\n", err ? err : strerror(-r));
			return EXIT_CONFIG;
		}
	}
	if (sb_boundary_supervise(&boundary, &supervise) || e->report) {
		r = e->report ? sb_report_supervise(e->report, &supervise, &boundary.limits,
						    &is_child, &res, &err)
			      : sb_supervise_run(&supervise, &is_child, &res, &err);
		if (r < 0)
			return fail(e->report ? "cannot report on the program"
					      : "cannot start the supervisor",
				    err, r);
		if (!is_child)
			return mirror_child(&res, &boundary.limits);
	}
	/* The native observer's helper is forked now: before the boundary,
	 * and in the process that runs the program (after the supervisor). */
	r = sb_learn_begin(&paths, &boundary, &err);
	if (r < 0)
		return fail("cannot start learning mode", err, r);
	r = sb_boundary_enter(&boundary, &kernel_warnings, &err);
	if (r < 0)
		return fail("the sandbox cannot be applied", err, r);
	for (char **w = kernel_warnings; w && *w; w++)
		fprintf(stderr, "python-sb: warning: %s\n", *w);

	r = sb_embed_run(state, &paths, &exit_code, &err);
	if (r < 0)
		return fail("cannot run the program safely", err, r);
	return exit_code;
}

static void report_learning(const struct sb_learn_outcome *o)
{
	if (*sb_learn_native_warning())
		fprintf(stderr, "python-sb: warning: %s\n", sb_learn_native_warning());
	if (o->warning)
		fprintf(stderr, "python-sb: warning: %s\n", o->warning);
	if (o->error) {
		fprintf(stderr, "python-sb: the learned rules were not written: %s\n",
			o->message ? o->message : strerror(-o->error));
		if (o->rules_text && *o->rules_text)
			fprintf(stderr, "python-sb: the learned rules were:\n%s", o->rules_text);
		return;
	}
	if (!o->changed) {
		fprintf(stderr, "python-sb: learning found no missing rule: '%s' is unchanged\n",
			o->file);
		return;
	}
	fprintf(stderr,
		"python-sb: Write all learning rules in '%s'. Check and update this file to "
		"validate the rules.\n",
		o->file);
	if (o->backup)
		fprintf(stderr, "python-sb: the previous version is kept as '%s'\n", o->backup);
}

/* Learning mode (spec §6): refused by a learn=false of the shared profiles
 * when the rule file is missing; says that it is permissive, and under which
 * provider it runs (sb_provider_select()'s choice and note). */
static int start_learning(const struct sb_profile *profile, const struct sb_load_options *opts,
			  const char *file, char **host_env, const char *cwd,
			  const struct sb_provider *provider, const char *note, char **reterr)
{
	int r;

	if (profile->root_missing) {
		r = sb_learn_check_default_lock(opts, reterr);
		if (r < 0)
			return r;
	}
	fprintf(stderr,
		"python-sb: LEARNING MODE: what the rules would refuse is recorded and "
		"allowed, the program sees the whole environment, and os-sandbox=%s is "
		"forced%s%s%s. Never learn with untrusted code.\n",
		provider->name, note ? " (" : "", note ? note : "", note ? ")" : "");
	return sb_learn_configure(&(struct sb_learn_options){
	    .profile = profile,
	    .file = file,
	    .cwd = cwd,
	    .host_env = host_env,
	    .native = true,
	    .report = report_learning,
	});
}

int sb_launcher_main(int argc, char **argv)
{
	_cleanup_(sb_cli_done) struct sb_cli cli = {0};
	_cleanup_(sb_worker_done) struct sb_worker worker = {.fd = -1};
	_cleanup_(sb_profile_freep) struct sb_profile *profile = NULL;
	_cleanup_(sb_diags_done) struct sb_diags diags = {0};
	_cleanup_strv_free_ char **host_env = NULL, **site_dirs = NULL, **envp = NULL;
	_cleanup_free_ char *err = NULL, *config = NULL, *venv = NULL, *note = NULL;
	const char *learn_file = NULL;
	struct sb_report_request report = {.fd = -1};
	char cwd[PATH_MAX], self_exe[PATH_MAX];
	const struct sb_provider *provider;
	enum sb_rules_mode mode = SB_MODE_ENFORCE;
	struct sb_lookup_env lookup;
	struct sb_load_options opts;
	bool warn = false;
	ssize_t n;
	int r;

	/* `python-sb serve`: the service, a program of its own (a script named
	 * "serve" runs as `python-sb ./serve`). */
	if (argc >= 2 && streq(argv[1], "serve")) {
		r = sb_serve_exec(argc, argv, &err);
		return fail("cannot start the service", err, r);
	}

	r = sb_cli_parse(argc, argv, &cli, &err);
	if (r < 0) {
		fprintf(stderr,
			"%s\nusage: python-sb [option] ... [-c cmd | -m mod | file | -] "
			"[arg] ...\nTry `python-sb -h' for more information.\n",
			err ? err : strerror(-r));
		return EXIT_USAGE;
	}
	if (cli.help) {
		fputs(sb_usage_text, stdout);
		return 0;
	}
	if (cli.version) {
		printf("Python %s (python-sb %s)\n",
		       cli.version_level > 1 ? Py_GetVersion() : PY_VERSION, SB_VERSION);
		return 0;
	}

	if (cli.worker) {
		int fd;

		if (sb_worker_parse_fd(cli.worker, &fd) < 0)
			return fail("--pysandboxes-worker expects a descriptor number", cli.worker,
				    -EINVAL);
		r = sb_worker_setup(fd, &worker, &err);
		if (r < 0)
			return fail("cannot start the partial-mode worker", err, r);
	}
	if (cli.report_fd) {
		unsigned long long fd;

		if (sb_safe_atou64(cli.report_fd, &fd) < 0 || fd < 3 || fd > INT_MAX)
			return fail("--report-fd expects a descriptor number above 2",
				    cli.report_fd, -EINVAL);
		report.fd = (int)fd;
	}
	report.path = cli.report;
	/* Nothing the caller left open reaches the program: only the worker's
	 * channel, the report's descriptor (the supervisor's: the program's
	 * process closes it), and a descriptor the command line names
	 * (python-sb <(cmd)). */
	{
		const int keep[] = {
		    cli.worker ? worker.fd : -1,
		    report.fd,
		    cli.mode == SB_RUN_SCRIPT ? sb_inherited_fd_named(cli.target) : -1,
		    sb_inherited_fd_named(cli.config_path),
		};

		r = sb_inherited_close_fds(keep, ELEMENTSOF(keep), &err);
		if (r < 0)
			return fail("cannot close the inherited descriptors", err, r);
	}

	/* CPython's longer help texts need no policy: nothing of the program runs. */
	if (wants_cpython_help(&cli))
		return Py_BytesMain((int)sb_strv_length(cli.python_argv), cli.python_argv);

	for (char **e = environ; e && *e; e++)
		if (sb_strv_push(&host_env, *e) < 0)
			return fail("out of memory", NULL, -ENOMEM);
	if (!getcwd(cwd, sizeof(cwd)))
		return fail("cannot read the current directory", NULL, -errno);
	venv = detect_venv(host_env);
	site_dirs = site_dirs_for(venv);
	lookup = (struct sb_lookup_env){
	    .cwd = cwd,
	    .pythonpath = cli.ignore_env ? NULL : host_getenv("PYTHONPATH", host_env),
	    .site_dirs = site_dirs,
	};
	r = sb_config_locate(&cli, &lookup, &config);
	if (r < 0)
		return fail("cannot locate the rule file", NULL, r);

	opts = (struct sb_load_options){
	    .path = config,
	    .cli_rules = cli.rules,
	    .getenv = host_getenv,
	    .getenv_userdata = host_env,
	    .cwd = cwd,
	    .home = host_getenv("HOME", host_env),
	    .learn_default = cli.config_path ? cli.config_path : "./.py-sandboxes",
	};
	r = sb_profile_load(&opts, &profile, &diags);
	/* Check even a profile with syntax errors: every problem is reported in
	 * one go. */
	if (r >= 0 || r == -EINVAL) {
		int c = sb_profile_check(profile, &opts, &diags);

		if (c < 0 && c != -EINVAL)
			r = c;
	}
	if (r >= 0 || r == -EINVAL) {
		int c = sb_provider_check_params(profile, &diags);

		if (c < 0 && c != -EINVAL)
			r = c;
	}
	if (r < 0 && r != -EINVAL)
		return fail("cannot load the rules", NULL, r);
	if (report_diags(&diags) < 0)
		return EXIT_CONFIG;
	/* A rule file the next run would read first, if the program made it:
	 * the kernel boundary keeps it out of reach too. */
	{
		char *shadow = NULL;

		r = sb_config_shadowing(&cli, &lookup, config, &shadow);
		if (r >= 0 && shadow)
			r = sb_strv_consume(&profile->missing_files, shadow);
		if (r < 0)
			return fail("out of memory", NULL, r);
	}

	if (sb_learn_wanted(profile, config, &learn_file))
		mode = SB_MODE_LEARN;
	r = sb_provider_select(profile->os_sandbox, mode, &provider, &note, &warn, &err);
	if (r < 0)
		return fail("the sandbox cannot be applied", err, r);
	if (warn)
		fprintf(stderr, "python-sb: warning: %s\n", note);
	report.provider = provider->name;
	if (mode == SB_MODE_LEARN) {
		r = start_learning(profile, &opts, learn_file, host_env, cwd, provider, note, &err);
		if (r < 0)
			return fail("cannot start learning mode", err, r);
	}

	r = sb_env_build(profile, host_env, mode, &envp);
	if (r < 0)
		return fail("cannot build the environment", NULL, r);
	/* The kernel's name for the binary is already canonical: one readlink()
	 * instead of realpath()'s one per component. */
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	self_exe[n > 0 ? n : 0] = '\0';
	/* The caller's variables were needed for ${VAR} and the policy's
	 * environment; nothing reads them from here on (learning shows the
	 * program the whole environment anyway). */
	if (mode != SB_MODE_LEARN)
		sb_inherited_scrub_environment(
		    host_env, argc > 0 ? argv[argc - 1] + strlen(argv[argc - 1]) + 1 : NULL);

	return sb_learn_end(run(
	    &(struct sb_embed){
		.cli = &cli,
		.profile = profile,
		.profile_path = profile->root_missing ? NULL : config,
		.envp = envp,
		.self_exe = self_exe[0] ? self_exe : NULL,
		.venv = venv,
		.site_dirs = site_dirs,
		.worker = cli.worker ? &worker : NULL,
		.provider = provider,
		.report = (report.path || report.fd >= 0) && !cli.worker ? &report : NULL,
	    },
	    mode, note));
}
