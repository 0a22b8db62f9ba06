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
#include "ipython.h"
#include "launcher.h"
#include "learn.h"
#include "profile.h"
#include "provider.h"
#include "report-denials.h"
#include "libexec.h"
#include "prefault.h"
#include "report-supervise.h"
#include "supervise-outcome.h"
#include "resource-limits.h"
#include "serve-exec.h"
#include "wrap.h"
#include "usage.h"
#include "venv.h"
#include "worker.h"
#include "zygote.h"
#include "util.h"

#define EXIT_USAGE  2
#define EXIT_CONFIG SB_EXIT_CONFIG
/* Debian's python3.11 has 1.2 MiB of data past RELRO, the static python-sb
 * 1.3 MiB: anything much larger is not an interpreter's start-up data. */
#define SB_PREFAULT_MAX_BYTES (4u << 20)

extern char **environ;

static const char *host_getenv(const char *name, void *userdata)
{
	return sb_strv_env_get(userdata, name);
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

/* The partial-mode worker's channel, once its parent is known: the reasons
 * the worker cannot start go there (the parent raises them as
 * ConfigSyntaxError or SandBoxError, naming its own keyword arguments)
 * rather than on a stderr the caller may not watch. */
static int worker_channel = -1;

/* The collected errors, to the parent of a worker. 0 when it has them. */
static int send_config_errors(const struct sb_diags *d)
{
	_cleanup_free_ const char **fields = NULL;
	_cleanup_strv_free_ char **lines = NULL;
	size_t n = 0;

	if (worker_channel < 0)
		return -EBADF;
	fields = calloc(3 * d->n_errors + 1, sizeof(char *));
	if (!fields)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++) {
		char *line;

		if (d->items[i].warning)
			continue;
		if (asprintf(&line, "%u", d->items[i].line) < 0 ||
		    sb_strv_consume(&lines, line) < 0)
			return -ENOMEM;
		fields[n++] = d->items[i].file;
		fields[n++] = line;
		fields[n++] = d->items[i].message;
	}
	return sb_worker_send_start_error(worker_channel, "config", fields, n);
}

/* warnings: false under a wrapper provider, where the launching python-sb
 * already showed them. */
static int report_diags(struct sb_diags *d, bool warnings)
{
	sb_diags_sort(d);
	for (size_t i = 0; warnings && i < d->n; i++)
		if (d->items[i].warning)
			fprintf(stderr, "python-sb: warning: %s:%u: %s\n", d->items[i].file,
				d->items[i].line, d->items[i].message);
	if (d->n_errors == 0)
		return 0;
	if (send_config_errors(d) == 0)
		return -EINVAL;
	fputs("python-sb: ConfigSyntaxError: Syntax error in config files.\n", stderr);
	for (size_t i = 0; i < d->n; i++)
		if (!d->items[i].warning)
			fprintf(stderr, "  %s:%u: %s\n", d->items[i].file, d->items[i].line,
				d->items[i].message);
	return -EINVAL;
}

static int fail(const char *what, const char *detail, int r)
{
	if (worker_channel >= 0) {
		_cleanup_free_ char *text = NULL;

		if (asprintf(&text, "%s%s%s", what, detail ? ": " : "",
			     detail ? detail : (r < 0 ? strerror(-r) : "")) >= 0 &&
		    sb_worker_send_start_error(worker_channel, "start", (const char *const[]){text},
					       1) == 0)
			return EXIT_CONFIG;
	}
	fprintf(stderr, "python-sb: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : (r < 0 ? strerror(-r) : ""));
	return EXIT_CONFIG;
}

/* The supervisor's side: report like `python` would see it. */
static int mirror_child(const struct sb_supervise_result *res, const struct sb_limits *limits)
{
	struct sb_outcome o;

	sb_supervise_outcome(res, limits->timeout_ms, limits->output_bytes, limits->memory_bytes,
			     &o);
	if (o.message[0])
		fprintf(stderr, "python-sb: %s\n", o.message);
	if (o.signal) {
		signal(o.signal, SIG_DFL);
		raise(o.signal);
	}
	return o.exit_code;
}

/* What a wrapper provider needs besides the embedding: python-sb's own
 * command line and the host's environment, to start itself under the wrapper
 * (wrap.h); inside: set in the python-sb so started. */
struct wrapping {
	char *const *argv;
	char *const *host_env;
	const char *cwd;
	struct sb_wrap_inside *inside;
};

/* The launching side of a wrapper provider: the program's exit status as
 * `python` would give it. */
static int run_wrapped(const struct sb_wrap_launch *l)
{
	_cleanup_free_ char *err = NULL;
	struct sb_wrap_outcome o;
	int r, code;

	r = sb_wrap_run(l, &o, &err);
	if (r < 0)
		return fail("the sandbox cannot be applied", err, r);
	for (char **w = o.warnings; w && *w; w++)
		fprintf(stderr, "python-sb: warning: %s\n", *w);
	sb_strv_free(o.warnings);
	if (o.start_timed_out) {
		fprintf(stderr,
			"python-sb: the sandbox cannot be applied: os-sandbox=%s did not start "
			"the program within %.3g s (%s.start_timeout): it was killed\n",
			l->provider->name, (double)o.start_timeout_ms / 1000, l->provider->name);
		return EXIT_CONFIG;
	}
	if (o.deadline_killed)
		return mirror_child(&(struct sb_supervise_result){.timed_out = true},
				    &l->boundary->limits);
	/* What the inner python-sb reported first: the tool may die of the
	 * signal it forwarded (firejail and a Ctrl-C the program caught). */
	if (o.exited)
		return o.exit_code;
	/* The tool crashed before the program started (qemu aborts on a
	 * virtual CPU its KVM cannot set up): its failure, not a signal sent
	 * to the sandbox, which python-sb would die of again. */
	if (!o.started && WIFSIGNALED(o.wait_status) &&
	    (WTERMSIG(o.wait_status) == SIGABRT || WTERMSIG(o.wait_status) == SIGSEGV ||
	     WTERMSIG(o.wait_status) == SIGBUS)) {
		fprintf(stderr,
			"python-sb: the sandbox cannot be applied: %s could not start the "
			"program (it died of signal %d, %s)\n",
			l->provider->name, WTERMSIG(o.wait_status),
			strsignal(WTERMSIG(o.wait_status)));
		return EXIT_CONFIG;
	}
	/* Ended by the signal python-sb passed on, the program never reported
	 * its own status: die of that signal, as `python` would have. */
	if (o.started && o.forwarded_signal && !WIFSIGNALED(o.wait_status))
		return mirror_child(&(struct sb_supervise_result){.status = o.forwarded_signal},
				    &l->boundary->limits);
	if (WIFSIGNALED(o.wait_status))
		return mirror_child(&(struct sb_supervise_result){.status = o.wait_status},
				    &l->boundary->limits);
	code = WEXITSTATUS(o.wait_status);
	if (!o.started) {
		fprintf(stderr,
			"python-sb: the sandbox cannot be applied: %s could not start the "
			"program (exit status %d)\n",
			l->provider->name, code);
		return EXIT_CONFIG;
	}
	/* The program died without python-sb's exit: the wrapper's 128+N is
	 * the signal N, raised again here as `python` would have died. */
	if (code > 128 && code - 128 < NSIG)
		return mirror_child(
		    &(struct sb_supervise_result){.status = code - 128 /* killed by it */},
		    &l->boundary->limits);
	return code;
}

/* At exit, when something was refused (a program that catches its refusals
 * must not look as if it ran unrestricted): one line, the count and the
 * first rule to add; with --denials every refusal. */
static void print_denials(const struct sb_embed *e, bool summary)
{
	size_t n = sb_denials_count(), off, len;
	char *const *messages = sb_denials_messages();
	const char *first = messages ? messages[0] : NULL;

	if (n == 0 || (!summary && !e->cli->denials))
		return;
	fprintf(stderr, "python-sb: %zu operation%s refused; ", n, n == 1 ? " was" : "s were");
	/* The messages name what the program chose (a file, a module): one
	 * line each, without control characters, so that no name prints a
	 * line of python-sb's own or speaks to the terminal. */
	if (first && sb_report_rule_in_message(first, &off, &len) && e->profile_path) {
		_cleanup_free_ char *rule = strndup(first + off, len);
		_cleanup_free_ char *shown = rule ? sb_str_one_line(rule) : NULL;

		fprintf(stderr, "the first needs '%s' in '%s'", shown ? shown : "?",
			e->profile_path);
	} else {
		_cleanup_free_ char *shown = first ? sb_str_one_line(first) : NULL;

		fprintf(stderr, "the first: %s", shown ? shown : "(no message)");
	}
	fprintf(stderr, " (--denials lists them all; --no-denials-summary or "
			"PYSANDBOXES_NO_DENIALS_SUMMARY=1 turns this line off)\n");
	for (char *const *m = messages; e->cli->denials && m && *m; m++) {
		_cleanup_free_ char *shown = sb_str_one_line(*m);

		fprintf(stderr, "python-sb: refused: %s\n", shown ? shown : "?");
	}
	if (e->cli->denials && n > SB_DENIALS_KEPT)
		fprintf(stderr, "python-sb: refused: ... and %zu more\n", n - SB_DENIALS_KEPT);
}

/* From the policy to the program: the kernel boundary's plain data, the
 * supervisor, the interpreter's paths, then the embedded run. */
static int run(const struct sb_embed *e, enum sb_rules_mode mode, const char *note,
	       bool denials_summary, const struct wrapping *wrapping)
{
	_cleanup_(sb_boundary_done) struct sb_boundary boundary = {0};
	_cleanup_(sb_interp_paths_done) struct sb_interp_paths paths = {0};
	_cleanup_strv_free_ char **kernel_warnings = NULL;
	_cleanup_free_ char *err = NULL;
	_cleanup_free_ char *child_supervisor = NULL;
	struct sb_embed_state *state = NULL;
	struct sb_supervise_options supervise;
	struct sb_supervise_result res;
	struct sb_wrap_launch launch;
	bool is_child = true, wrapper, lifeline;
	int r, status = 0, exit_code = 0;

	r = sb_boundary_build_base(e->profile, e->provider, mode, &boundary);
	if (r < 0)
		return fail("cannot build the kernel policy", NULL, r);
	r = sb_embed_set_environment(e);
	if (r < 0)
		return fail("cannot set the sandbox environment", NULL, r);
	wrapper = (e->provider->flags & SB_PROVIDER_WRAPS_EXEC) && !wrapping->inside;
	/* A timeout alone, for a program that cannot start processes, needs no
	 * supervisor (watchdog.h). Not with --report, whose supervisor counts
	 * the run, nor with a wrapper, whose launching side waits for a status
	 * the inner python-sb reports. */
	if (!e->report && !e->worker && !wrapper && !wrapping->inside)
		sb_boundary_use_watchdog(&boundary, sb_monotonic_ns());
	launch = (struct sb_wrap_launch){
	    .provider = e->provider,
	    .boundary = &boundary,
	    .profile = e->profile,
	    .self_exe = e->self_exe,
	    .argv = wrapping->argv,
	    .host_env = wrapping->host_env,
	    .cwd = wrapping->cwd,
	    .worker = e->worker,
	    .report = e->report,
	};

	if (e->cli->explain) {
		struct sb_buf out = {0};

		r = sb_embed_prepare(e, &state, &paths, &err);
		if (r < 0)
			return fail("cannot prepare the interpreter", err, r);
		sb_embed_discard(state);
		r = sb_boundary_build_provider(&boundary, e->profile, &paths);
		if (r < 0)
			return fail("cannot build the kernel policy", NULL, r);
		r = sb_explain(e->profile, e->profile_path, e->provider, note, e->envp, &out);
		if (r >= 0)
			r = sb_boundary_explain(&boundary, &out);
		if (r >= 0 && wrapper && sb_wrap_explain(&launch, &out, &err) < 0)
			r = sb_buf_printf(&out, "#   the command line cannot be built: %s\n",
					  err ? err : "out of memory");
		if (r < 0)
			return fail("cannot explain the policy", NULL, r);
		fputs(out.data, stdout);
		sb_buf_reset(&out);
		return 0;
	}
	/* The inner python-sb does the rest, under the wrapper, which binds
	 * the grants: they name the interpreter's paths. */
	if (wrapper) {
		r = sb_embed_prepare(e, &state, &paths, &err);
		if (r < 0)
			return fail("cannot prepare the interpreter", err, r);
		sb_embed_discard(state);
		r = sb_boundary_build_provider(&boundary, e->profile, &paths);
		if (r < 0)
			return fail("cannot build the kernel policy", NULL, r);
		return run_wrapped(&launch);
	}
	boundary.entered_by_wrapper = wrapping->inside != NULL;

	if (e->profile->py_sandbox) {
		_cleanup_strv_free_ char **warnings = NULL;

		/* Host names are resolved and pinned now, while /etc/hosts and DNS
		 * are still reachable: the boundary may hide both. A kernel filter
		 * names the same addresses as the guard. */
		r = sb_guard_net_resolve(e->profile, &warnings, &err);
		for (char **w = warnings; w && *w; w++)
			fprintf(stderr, "python-sb: warning: %s\n", *w);
		if (r < 0) {
			fprintf(stderr, "python-sb: %s\n", err ? err : strerror(-r));
			return EXIT_CONFIG;
		}
		boundary.net_policy = sb_guard_net_policy();
	}
	/* The supervisor forks before CPython is pre-initialised: every page
	 * the parent has written by the fork costs the program a copy-on-write
	 * fault when it writes it again, and the interpreter's pre-initialisation
	 * and configuration write a few hundred (bench/README.md, issue 19). */
	/* A partial-mode worker under a wrapper lives while the launching
	 * python-sb does, which dies with the caller (worker.c): the status
	 * pipe's SIGKILL (wrap.c) is that lifeline. Not in the program's
	 * process, where its code could clear O_ASYNC or close the pipe and
	 * outlive the caller (firejail has no --die-with-parent): in a
	 * supervisor, forked (an exec would close the pipe), which the
	 * program dies with (PR_SET_PDEATHSIG, which seccomp keeps). */
	lifeline = e->worker && wrapping->inside;
	if (sb_boundary_supervise(&boundary, &supervise) || e->report || lifeline) {
		_cleanup_free_ char *supervisor = NULL;

		/* Without it (a wrapper's or qemu's view of the files), the
		 * supervisor forks instead. */
		if (!e->report && !lifeline &&
		    sb_libexec_find(e->self_exe, "python-sb-supervise", SB_SUPERVISE_RELATIVE,
				    SB_SUPERVISE_PATH, X_OK, &supervisor) == 0)
			supervise.supervisor_exe = supervisor;
		r = e->report ? sb_report_supervise(e->report, &supervise, &boundary.limits,
						    &is_child, &res, &err)
			      : sb_supervise_run(&supervise, &is_child, &res, &err);
		if (r < 0)
			return fail(e->report ? "cannot report on the program"
					      : "cannot start the supervisor",
				    err, r);
		if (!is_child)
			return mirror_child(&res, &boundary.limits);
		/* The supervisor reports the exit status, the program cannot. */
		if (wrapping->inside)
			sb_wrap_inside_detach(wrapping->inside);
	}
	/* This process runs the interpreter, whose start writes nearly every
	 * page of its executable's data: mapped at once here rather
	 * than a fault at a time (prefault.h; not before a wrapper or a
	 * supervisor's fork, whose child would fault on them again; nor for a
	 * provider that runs the program in a child of this process). */
	if (!(e->provider->flags & SB_PROVIDER_CHILD_PROCESS))
		sb_prefault_object_data(NULL, false, SB_PREFAULT_MAX_BYTES);
	r = sb_embed_prepare(e, &state, &paths, &err);
	if (r < 0)
		return fail("cannot prepare the interpreter", err, r);
	r = sb_boundary_build_provider(&boundary, e->profile, &paths);
	if (r < 0) {
		sb_embed_discard(state);
		return fail("cannot build the kernel policy", NULL, r);
	}
	/* The native observer's helper is forked now: before the boundary,
	 * and in the process that runs the program (after the supervisor). */
	r = sb_learn_begin(&paths, &boundary, &err);
	if (r < 0) {
		sb_embed_discard(state);
		return fail("cannot start learning mode", err, r);
	}
	/* A provider that runs the program in a child: this process becomes
	 * python-sb-supervise rather than wait as python-sb (supervise-exec.h). */
	if ((boundary.provider->flags & SB_PROVIDER_CHILD_PROCESS) &&
	    sb_libexec_find(e->self_exe, "python-sb-supervise", SB_SUPERVISE_RELATIVE,
			    SB_SUPERVISE_PATH, X_OK, &child_supervisor) == 0)
		boundary.supervisor_exe = child_supervisor;
	/* Under a wrapper that gets its network from the launching side: not
	 * before it is filtered (the wait as late as this, so that the start-up
	 * above ran meanwhile). */
	if (wrapping->inside)
		r = sb_wrap_inside_wait_network(wrapping->inside, &err);
	if (r >= 0)
		r = sb_boundary_enter(&boundary, &kernel_warnings, &status, &err);
	if (r < 0) {
		sb_embed_discard(state);
		return fail("the sandbox cannot be applied", err, r);
	}
	/* The provider ran the program in a child and left us outside. */
	if (r > 0) {
		sb_embed_discard(state);
		return mirror_child(&(struct sb_supervise_result){.status = status},
				    &boundary.limits);
	}
	for (char **w = kernel_warnings; w && *w; w++)
		fprintf(stderr, "python-sb: warning: %s\n", *w);

	r = sb_embed_run(state, &paths, &exit_code, &err);
	if (r < 0)
		return fail("cannot run the program safely", err, r);
	if (!e->worker)
		print_denials(e, denials_summary);
	return exit_code;
}

static void report_learning(const struct sb_learn_outcome *o)
{
	if (*sb_learn_native_warning())
		fprintf(stderr, "python-sb: warning: %s\n", sb_learn_native_warning());
	if (o->warning)
		fprintf(stderr, "python-sb: warning: %s\n", o->warning);
	for (char *const *w = o->warnings; w && *w; w++)
		fprintf(stderr, "python-sb: warning: %s\n", *w);
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

/* Where a bare --learn writes: the --pysandboxes-config file, else the rule
 * file in use (the one beside the script), never a module's resource (-m),
 * else ./.py-sandboxes. */
static const char *learn_default(const struct sb_cli *cli, const char *config)
{
	if (cli->config_path)
		return cli->config_path;
	if (cli->mode != SB_RUN_MODULE && config && access(config, F_OK) == 0)
		return config;
	return "./.py-sandboxes";
}

/* The program's own tree: the script's directory (resolved), else the cwd. */
static char *program_directory(const struct sb_cli *cli, const char *cwd)
{
	char real[PATH_MAX];

	if (cli->mode == SB_RUN_SCRIPT && cli->target && !streq(cli->target, "-") &&
	    realpath(cli->target, real))
		return sb_path_dirname(real);
	return strdup(cwd);
}

/* Learning mode (spec §6): refused by a learn=false of the shared profiles
 * when the rule file is missing; says that it is permissive, and under which
 * provider it runs (sb_provider_select()'s choice and note). */
static int start_learning(const struct sb_profile *profile, const struct sb_load_options *opts,
			  const char *file, char **host_env, const char *cwd,
			  const char *program_dir, const struct sb_provider *provider,
			  const char *note, char **reterr)
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
	    .program_dir = program_dir,
	    .host_env = host_env,
	    .native = true,
	    .report = report_learning,
	});
}

const char *sb_launcher_library;

/* ipython-sb: whether IPython can run under the rules, found by a first
 * load of the profile the plain REPL's command line names (a profile with
 * errors keeps that command line: the real load reports them); if it can, the
 * command line that runs it, parsed again, and its rule file located again.
 * *ret_plain_reason: why the plain REPL runs instead, or NULL. */
static int choose_ipython(struct sb_ipython *ipy, struct sb_cli *cli,
			  const struct sb_lookup_env *lookup, char **config, char **host_env,
			  const char *cwd, const char **ret_plain_reason, char **reterr)
{
	_cleanup_(sb_profile_freep) struct sb_profile *probe = NULL;
	_cleanup_(sb_diags_done) struct sb_diags diags = {0};
	_cleanup_strv_free_ char **dirs = NULL;
	const char *pythonpath = lookup->pythonpath, *learn_file = NULL;
	struct sb_load_options opts = {
	    .path = *config,
	    .cli_rules = cli->rules,
	    .getenv = host_getenv,
	    .getenv_userdata = host_env,
	    .cwd = cwd,
	    .home = host_getenv("HOME", host_env),
	    .learn_default = learn_default(cli, *config),
	};
	enum sb_ipython_choice choice;
	int r;

	*ret_plain_reason = NULL;
	r = sb_profile_load(&opts, &probe, &diags);
	if (r >= 0)
		r = sb_profile_check(probe, &opts, &diags);
	if (r < 0)
		return r == -EINVAL ? 0 : r;
	/* Where the interpreter will look for IPython: sys.path[0] (the cwd),
	 * PYTHONPATH, the standard library's and the site directories. */
	r = sb_strv_push(&dirs, cwd);
	if (r >= 0)
		r = sb_strv_push_split(&dirs, SB_PYTHON_STDLIB_DIRS);
	for (char *const *d = lookup->site_dirs; r >= 0 && d && *d; d++)
		r = sb_strv_push(&dirs, *d);
	if (r >= 0)
		r = sb_strv_push_split(&dirs, pythonpath);
	if (r < 0)
		return r;
	choice = sb_ipython_decide(probe, sb_ipython_installed(dirs),
				   sb_learn_wanted(probe, *config, &learn_file), ret_plain_reason);
	if (choice == SB_IPYTHON_PLAIN)
		return 0;
	r = sb_ipython_build(ipy, choice, reterr);
	if (r < 0)
		return r;
	sb_cli_done(cli);
	r = sb_cli_parse(ipy->argc, ipy->argv, cli, reterr);
	if (r < 0)
		return r;
	free(*config);
	*config = NULL;
	return sb_config_locate(cli, lookup, config);
}

int sb_launcher_main(int argc, char **argv)
{
	_cleanup_(sb_wrap_inside_done) struct sb_wrap_inside inside = SB_WRAP_INSIDE_NULL;
	_cleanup_(sb_ipython_done) struct sb_ipython ipython = {0};
	_cleanup_(sb_cli_done) struct sb_cli cli = {0};
	_cleanup_(sb_worker_done) struct sb_worker worker = {.fd = -1};
	_cleanup_(sb_profile_freep) struct sb_profile *profile = NULL;
	_cleanup_(sb_diags_done) struct sb_diags diags = {0};
	_cleanup_strv_free_ char **host_env = NULL, **site_dirs = NULL, **envp = NULL;
	_cleanup_free_ char *err = NULL, *config = NULL, *venv = NULL, *note = NULL;
	const char *learn_file = NULL;
	struct sb_report_request report = {.fd = -1};
	int zygote_fd = -1;
	char cwd[PATH_MAX], self_exe[PATH_MAX];
	const struct sb_provider *provider;
	enum sb_rules_mode mode = SB_MODE_ENFORCE;
	struct sb_lookup_env lookup;
	struct sb_load_options opts;
	bool warn = false, denials_summary;
	ssize_t n;
	int r;

	/* `python-sb serve`: the service, a program of its own (a script named
	 * "serve" runs as `python-sb ./serve`). */
	if (argc >= 2 && streq(argv[1], "serve")) {
		r = sb_serve_exec(argc, argv, &err);
		return fail("cannot start the service", err, r);
	}

	/* The kernel's argument block, whatever the command line becomes. */
	char **kernel_argv = argv;
	int kernel_argc = argc;

	/* ipython-sb: the sandbox options alone (the plain REPL) until the
	 * rules say whether IPython can run (choose_ipython()). */
	if (argc > 0 && sb_ipython_wanted(argv[0])) {
		r = sb_ipython_prepare(argc, argv, &ipython);
		if (r < 0)
			return fail("cannot start IPython", NULL, r);
		argc = ipython.argc;
		argv = ipython.argv;
	}
	r = sb_cli_parse(argc, argv, &cli, &err);
	if (r >= 0 && cli.inside) {
		r = sb_wrap_inside_open(cli.inside, &inside, &err);
		if (r < 0)
			return fail("cannot start inside the sandbox", err, r);
	}
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
		/* Under a wrapper, the launching python-sb read the configuration. */
		if (cli.inside && !inside.has_worker_config)
			return fail("--pysandboxes-worker", "no configuration handed over",
				    -EPROTO);
		r = sb_worker_setup(fd, cli.inside ? inside.worker_config : NULL,
				    inside.worker_config_len, &worker, &err);
		if (r < 0)
			return fail("cannot start the partial-mode worker", err, r);
		worker_channel = worker.fd;
	}
	if (cli.report_fd) {
		unsigned long long fd;

		if (sb_safe_atou64(cli.report_fd, &fd) < 0 || fd < 3 || fd > INT_MAX)
			return fail("--report-fd expects a descriptor number above 2",
				    cli.report_fd, -EINVAL);
		report.fd = (int)fd;
	}
	if (cli.zygote) {
		unsigned long long fd;

		if (sb_safe_atou64(cli.zygote, &fd) < 0 || fd < 3 || fd > INT_MAX)
			return fail("--pysandboxes-zygote expects a descriptor number above 2",
				    cli.zygote, -EINVAL);
		zygote_fd = (int)fd;
	}
	report.path = cli.report;
	/* Under a wrapper, the launching python-sb opened the report's file
	 * (the wrapper's view may not show it) and hands the descriptor over. */
	if (cli.inside && inside.report_fd >= 0) {
		report.fd = inside.report_fd;
		report.path = NULL;
	}
	/* Nothing the caller left open reaches the program: only the worker's
	 * channel, the report's descriptor (the supervisor's: the program's
	 * process closes it), a descriptor the command line names
	 * (python-sb <(cmd)), and under a wrapper the status pipe and the
	 * network's word (closed once read, before the program runs). */
	{
		const int keep[] = {
		    cli.worker ? worker.fd : -1,
		    report.fd,
		    zygote_fd,
		    cli.mode == SB_RUN_SCRIPT ? sb_inherited_fd_named(cli.target) : -1,
		    sb_inherited_fd_named(cli.config_path),
		    inside.status_fd,
		    inside.net_ready_fd,
		};

		r = sb_inherited_close_fds(keep, ELEMENTSOF(keep), &err);
		if (r < 0)
			return fail("cannot close the inherited descriptors", err, r);
	}
	/* CPython's longer help texts need no policy: nothing of the program runs. */
	if (wants_cpython_help(&cli))
		return Py_BytesMain((int)sb_strv_length(cli.python_argv), cli.python_argv);

	/* Under a wrapper: what the launching python-sb saw (the wrapper gives
	 * the program neither). */
	if (cli.inside)
		host_env = TAKE_PTR(inside.env);
	for (char **e = cli.inside ? NULL : environ; e && *e; e++)
		if (sb_strv_push(&host_env, *e) < 0)
			return fail("out of memory", NULL, -ENOMEM);
	if (cli.inside) {
		if (strlen(inside.cwd) >= sizeof(cwd))
			return fail("cannot read the current directory", NULL, -ENAMETOOLONG);
		strcpy(cwd, inside.cwd);
		/* bwrap makes it; firejail shows it when it holds a grant. */
		if (chdir(cwd) < 0)
			return fail(
			    "the sandbox does not show the current directory (expose it, or "
			    "run from a directory the rules expose)",
			    cwd, -errno);
	} else if (!getcwd(cwd, sizeof(cwd))) {
		return fail("cannot read the current directory", NULL, -errno);
	}
	r = sb_venv_detect(argc > 0 ? argv[0] : NULL, host_getenv("PATH", host_env), cwd,
			   host_getenv("VIRTUAL_ENV", host_env), &venv, &err);
	if (r < 0)
		return fail("cannot use the virtual environment", err, r);
	site_dirs = site_dirs_for(venv);
	lookup = (struct sb_lookup_env){
	    .cwd = cwd,
	    .pythonpath = cli.ignore_env ? NULL : host_getenv("PYTHONPATH", host_env),
	    .site_dirs = site_dirs,
	};
	r = sb_config_locate(&cli, &lookup, &config);
	if (r < 0)
		return fail("cannot locate the rule file", NULL, r);
	if (ipython.wanted) {
		const char *plain_reason = NULL;

		r = choose_ipython(&ipython, &cli, &lookup, &config, host_env, cwd, &plain_reason,
				   &err);
		if (r < 0)
			return fail("cannot start IPython", err, r);
		if (plain_reason)
			fprintf(
			    stderr, "python-sb: IPython is not used: %s; the plain REPL runs%s\n",
			    plain_reason,
			    ipython.first_rest < ipython.n_args ? " (IPython's options are ignored)"
								: "");
		argc = ipython.argc;
		argv = ipython.argv;
		r = sb_ipython_watch(&ipython);
		if (r < 0)
			return fail("cannot start IPython", "cannot watch its private directory",
				    r);
	}

	opts = (struct sb_load_options){
	    .path = config,
	    .cli_rules = cli.rules,
	    .getenv = host_getenv,
	    .getenv_userdata = host_env,
	    .cwd = cwd,
	    .home = host_getenv("HOME", host_env),
	    .learn_default = learn_default(&cli, config),
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
	if (report_diags(&diags, !cli.inside) < 0)
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
	if (cli.inside) {
		/* The wrapper named in the rules already runs: nothing to probe
		 * (its binary is not even in here). */
		provider = sb_provider_get(profile->os_sandbox);
		r = provider && mode == SB_MODE_ENFORCE
			? sb_wrap_inside_check(&inside, provider, profile, &err)
		    : mode != SB_MODE_ENFORCE
			? sb_error(&err, -EINVAL,
				   "started under os-sandbox=%s, but the rules now ask for "
				   "learning mode (is the rule file %s in the sandbox?)",
				   inside.provider, config ? config : "(none)")
			: sb_error(&err, -EINVAL,
				   "started under os-sandbox=%s, but the rules "
				   "now ask for no wrapper",
				   inside.provider);
	} else {
		r = sb_provider_select(profile->os_sandbox, mode, &provider, &note, &warn, &err);
	}
	if (r < 0)
		return fail("the sandbox cannot be applied", err, r);
	if (warn)
		fprintf(stderr, "python-sb: warning: %s\n", note);
	report.provider = provider->name;
	/* python-sb serve's fork server and its runs: what they run is
	 * untrusted code, which learning would let do what the rules refuse
	 * (a rule file removed between the service's check and this start
	 * must not mean learning). Refused before anything of learning starts. */
	if (cli.no_learn && mode == SB_MODE_LEARN)
		return fail("this run cannot learn",
			    profile->root_missing ? "its rule file does not exist"
						  : "its rules ask for learning",
			    -EINVAL);
	if (zygote_fd >= 0 && mode == SB_MODE_LEARN)
		return fail("the fork server cannot learn",
			    profile->root_missing ? "its rule file does not exist"
						  : "set learn=false",
			    -EINVAL);
	if (mode == SB_MODE_LEARN) {
		_cleanup_free_ char *program_dir = program_directory(&cli, cwd);

		if (!program_dir)
			return fail("out of memory", NULL, -ENOMEM);
		r = start_learning(profile, &opts, learn_file, host_env, cwd, program_dir, provider,
				   note, &err);
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
	{
		const char *off = host_getenv("PYSANDBOXES_NO_DENIALS_SUMMARY", host_env);

		denials_summary = !cli.no_denials_summary && !(off && *off);
	}
	/* The caller's variables were needed for ${VAR} and the policy's
	 * environment; nothing reads them from here on (learning shows the
	 * program the whole environment anyway). A wrapper provider's launching
	 * python-sb hands them to the inner one, which scrubs its copies: the
	 * program runs there. */
	if (mode != SB_MODE_LEARN && !((provider->flags & SB_PROVIDER_WRAPS_EXEC) && !cli.inside))
		sb_inherited_scrub_environment(
		    host_env, kernel_argc > 0 ? kernel_argv[kernel_argc - 1] +
						    strlen(kernel_argv[kernel_argc - 1]) + 1
					      : NULL);

	if (zygote_fd >= 0) {
		/* python-sb serve's fork server: every run it forks gets a
		 * report, and none is run here. */
		r = sb_zygote_serve(
		    &(struct sb_embed){
			.cli = &cli,
			.profile = profile,
			.profile_path = profile->root_missing ? NULL : config,
			.envp = envp,
			.self_exe = self_exe[0] ? self_exe : NULL,
			.self_lib = sb_launcher_library,
			.venv = venv,
			.site_dirs = site_dirs,
			.provider = provider,
			.report = &report,
			.fork_server = true,
		    },
		    zygote_fd, &err);
		return r < 0 ? fail("the fork server cannot start", err, r) : 0;
	}
	return sb_learn_end(run(
	    &(struct sb_embed){
		.cli = &cli,
		.profile = profile,
		.profile_path = profile->root_missing ? NULL : config,
		.envp = envp,
		.self_exe = self_exe[0] ? self_exe : NULL,
		.self_lib = sb_launcher_library,
		.venv = venv,
		.site_dirs = site_dirs,
		.worker = cli.worker ? &worker : NULL,
		.provider = provider,
		.ipython = ipython.runs_ipython,
		.report = (report.path || report.fd >= 0) && !cli.worker ? &report : NULL,
	    },
	    mode, note, denials_summary,
	    &(struct wrapping){
		.argv = argv,
		.host_env = host_env,
		.cwd = cwd,
		.inside = cli.inside ? &inside : NULL,
	    }));
}
