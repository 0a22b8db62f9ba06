/* SPDX-License-Identifier: MIT */
/* The learning recorder: what the guard would have refused, as records, and
 * the write at exit (learn.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "learn.h"

#include <arpa/inet.h>
#include <signal.h>
#include <time.h>

#include "api-registry.h"
#include "guard-observer.h"
#include "learn-file.h"
#include "learn-native.h"
#include "learn-python.h"
#include "learn-rules.h"
#include "net-rule.h"
#include "util.h"

bool sb_learning;

static struct {
	const struct sb_profile *profile;
	char *file;
	char *cwd;
	char *program_dir;
	char **host_env;
	char **skip_dirs;
	char **stdlib_modules;
	void (*report)(const struct sb_learn_outcome *outcome);
	bool native, native_armed;
	char *native_warning;
	/* The boundary's filter waits until the observer arms (one listener per
	 * process: the observer's filter is the profile's allowlist). */
	struct sb_boundary *boundary;
	struct sb_seccomp_policy profile_seccomp, relaxed_seccomp;
	bool seccomp_deferred;

	struct sb_learn_set set;
	struct sb_learn_strset seen_paths; /* every path the guard decided on: not native */
	struct sb_learn_strset seen_nets;  /* "ip port direction" the guard decided on */
	char **env_written;
	char **names;	   /* pairs: ip, name (the first name that resolved to ip) */
	pid_t pid;	   /* the process that learns: not a child it forked */
	char **pythonpath; /* the host's PYTHONPATH entries (resolved) */
	bool pythonpath_used;
	bool begun, activated, done;
} learn;

bool sb_learn_wanted(const struct sb_profile *p, const char *root_file, const char **ret_file)
{
	if (!p->py_sandbox)
		return false;
	if (p->learn == SB_LEARN_FILE && p->learn_file) {
		*ret_file = p->learn_file;
		return true;
	}
	if (p->root_missing && root_file) {
		*ret_file = root_file;
		return true;
	}
	return false;
}

int sb_learn_check_default_lock(const struct sb_load_options *opts, char **reterr)
{
	/* The includes of data/py-sandboxes.template. */
	_cleanup_free_ char *user = opts->home
					? sb_path_join(opts->home, ".config/py-sandboxes/"
								   "user-py-sandboxes.profile")
					: NULL;
	const char *files[] = {user, "/etc/py-sandboxes/global-py-sandboxes.profile"};

	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		_cleanup_(sb_profile_freep) struct sb_profile *p = NULL;
		_cleanup_(sb_diags_done) struct sb_diags diags = {0};
		struct sb_load_options o = *opts;

		if (!files[i] || access(files[i], F_OK) < 0)
			continue;
		o.path = files[i];
		o.cli_rules = NULL;
		if (sb_profile_load(&o, &p, &diags) == -ENOMEM)
			return -ENOMEM;
		if (p && p->learn_locked)
			return sb_error(reterr, -EPERM,
					"%s:%u: learning mode is forbidden, but requested by a "
					"missing rule file '%s'",
					p->learn_lock_origin.file, p->learn_lock_origin.line,
					opts->path ? opts->path : "./.py-sandboxes");
	}
	return 0;
}

/* The interpreter reads PYTHONPATH itself, in C: a module the program
 * imports from one of its directories needs env=PYTHONPATH on replay (the
 * kernel boundary grants those directories from the program's PYTHONPATH). */
static int split_pythonpath(const char *value)
{
	_cleanup_free_ char *copy = strdup(value);
	char *save = NULL;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	for (char *d = strtok_r(copy, ":", &save); r >= 0 && d; d = strtok_r(NULL, ":", &save)) {
		char real[PATH_MAX];

		if (realpath(d, real))
			r = sb_strv_push(&learn.pythonpath, real);
	}
	return r;
}

int sb_learn_configure(const struct sb_learn_options *o)
{
	int r = 0;

	learn.profile = o->profile;
	learn.report = o->report;
	learn.native = o->native;
	learn.file = strdup(o->file);
	learn.cwd = strdup(o->cwd);
	learn.program_dir = strdup(o->program_dir ? o->program_dir : o->cwd);
	if (!learn.file || !learn.cwd || !learn.program_dir)
		return -ENOMEM;
	for (char *const *e = o->host_env; r >= 0 && e && *e; e++) {
		r = sb_strv_push(&learn.host_env, *e);
		if (r >= 0 && startswith(*e, "PYTHONPATH="))
			r = split_pythonpath(*e + strlen("PYTHONPATH="));
	}
	if (r < 0)
		return r;
	sb_learning = true;
	return 0;
}

int sb_learn_begin(const struct sb_interp_paths *interp, struct sb_boundary *boundary,
		   char **reterr _unused_)
{
	int r = 0;

	if (!sb_learning)
		return 0;
	/* The boundary of a learning run (SB_MODE_LEARN) holds the relaxed
	 * filter and the profile's own allowlist, which the observer watches. */
	learn.boundary = boundary;
	learn.profile_seccomp = boundary->seccomp_profile;
	learn.relaxed_seccomp = boundary->seccomp;
	for (char **d = interp ? interp->dirs : NULL; r >= 0 && d && *d; d++) {
		char real[PATH_MAX];

		r = sb_strv_push(&learn.skip_dirs, realpath(*d, real) ? real : *d);
	}
	for (char **f = interp ? interp->files : NULL; r >= 0 && f && *f; f++) {
		char real[PATH_MAX];

		r = sb_strv_push(&learn.skip_dirs, realpath(*f, real) ? real : *f);
	}
	if (r < 0)
		return r;
	if (learn.native) {
		_cleanup_free_ char *why = NULL;

		/* Without the observer the Python guard still learns: say so
		 * rather than refuse to run. */
		if (sb_learn_native_start(learn.skip_dirs, &learn.profile_seccomp, &why) < 0) {
			learn.native = false;
			if (asprintf(&learn.native_warning,
				     "native code is not observed during this learning run: %s",
				     why ? why : "the helper could not start") < 0)
				learn.native_warning = NULL;
		} else if (learn.boundary && learn.boundary->use_seccomp) {
			learn.boundary->use_seccomp = false;
			learn.seccomp_deferred = true;
		}
	}
	learn.boundary = NULL;
	learn.pid = getpid();
	learn.begun = true;
	return 0;
}

const char *sb_learn_file_path(void)
{
	return sb_learning ? learn.file : NULL;
}

int sb_learn_end(int exit_code)
{
	int sig;

	if (!sb_learning || !learn.begun)
		return exit_code;
	sb_learn_finish();
	sig = sb_learn_exit_signal();
	if (sig) {
		/* Die as `python` would have: the parent sees the signal. */
		signal(sig, SIG_DFL);
		raise(sig);
		return 128 + sig;
	}
	return exit_code;
}

const char *sb_learn_native_warning(void)
{
	return learn.native_warning ? learn.native_warning : "";
}

static void at_exit(void)
{
	int sig;

	sb_learn_finish();
	/* SystemExit from our SIGTERM/SIGQUIT handler: Py_RunMain() may end
	 * the process itself (Py_Exit), so die of the signal here, as `python`
	 * would have, once the file is written. */
	sig = sb_learn_exit_signal();
	if (sig) {
		fflush(NULL);
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

static void env_read(const char *name);
static void env_written(const char *name);

int sb_learn_activate(char **reterr)
{
	static const struct sb_learn_env_sink env_sink = {.read = env_read, .written = env_written};
	int r;

	if (!sb_learning || !learn.begun)
		return 0;
	r = sb_learn_python_activate(&env_sink, &learn.stdlib_modules, reterr);
	if (r < 0)
		return r;
	/* Py_FinalizeEx() calls it after the program, whatever ended it; and
	 * before Py_RunMain() re-kills itself for an unhandled Ctrl-C. */
	if (Py_AtExit(at_exit) < 0)
		return sb_error(reterr, -ENOMEM, "cannot register the learning write at exit");
	learn.activated = true;
	if (learn.native) {
		_cleanup_free_ char *why = NULL;

		r = sb_learn_native_arm(&why);
		if (r == -EPIPE)
			return sb_error(reterr, r, "learning: %s", why ? why : "no listener");
		if (r < 0) {
			free(learn.native_warning);
			if (asprintf(&learn.native_warning,
				     "native code is not observed during this learning run: %s",
				     why ? why : "the filter could not be installed") < 0)
				learn.native_warning = NULL;
		} else {
			learn.native_armed = true;
		}
	}
	/* Without the observer, the relaxed allowlist the boundary would have
	 * loaded: learning never runs without a filter. */
	if (learn.seccomp_deferred && !learn.native_armed)
		return sb_seccomp_apply(&learn.relaxed_seccomp, NULL, reterr);
	return 0;
}

int sb_learn_exit_signal(void)
{
	return sb_learn_python_exit_signal();
}

/* ---- records ------------------------------------------------------------------ */

static bool record_file(const char *resolved, bool write)
{
	if (!sb_learning || learn.done)
		return false;
	/* Out of memory: keep the refusal, which is what a run without learning
	 * would do; the profile misses the line rather than the sandbox a check. */
	if (sb_learn_set_add_path(&learn.set, resolved, write, false) < 0)
		return false;
	sb_learn_strset_add(&learn.seen_paths, resolved);
	return true;
}

static void file_decided(const char *resolved, bool write, const char *needed)
{
	if (!sb_learning || learn.done)
		return;
	for (char **d = learn.pythonpath; !learn.pythonpath_used && d && *d; d++)
		learn.pythonpath_used = sb_path_under(resolved, *d);
	if (learn.native_armed && sb_learn_strset_add(&learn.seen_paths, resolved) == 1) {
		/* The guard resolves a path by scanning its directory (in C). */
		_cleanup_free_ char *dir = sb_path_dirname(resolved);

		if (dir)
			sb_learn_strset_add(&learn.seen_paths, dir);
	}
	if (needed)
		sb_learn_set_add_path(&learn.set, needed, write, false);
}

static void name_resolved(const char *name, const char *ip)
{
	/* Only a name the NETWORK field takes as one host: the resolver takes
	 * more ('*' is the loopback), which a rule would read as every host.
	 * The address is learned instead. */
	if (!sb_learning || learn.done || !sb_net_is_host_name(name))
		return;
	for (char **p = learn.names; p && p[0] && p[1]; p += 2)
		if (streq(p[0], ip))
			return;
	if (sb_strv_push(&learn.names, ip) >= 0 && sb_strv_push(&learn.names, name) < 0) {
		/* Keep the pairs aligned. */
		size_t n = sb_strv_length(learn.names);

		free(learn.names[n - 1]);
		learn.names[n - 1] = NULL;
	}
}

static bool record_net(const char *host, unsigned protocol, uint16_t port, unsigned direction)
{
	if (!sb_learning || learn.done)
		return false;
	for (char **p = learn.names; p && p[0] && p[1]; p += 2)
		if (streq(p[0], host)) {
			host = p[1];
			break;
		}
	return sb_learn_set_add_net(&learn.set, host, protocol, port, direction, false) >= 0;
}

static void net_decided(const char *ip, uint16_t port, unsigned direction)
{
	char key[INET6_ADDRSTRLEN + 32];

	if (!sb_learning || !learn.native_armed || learn.done)
		return;
	snprintf(key, sizeof(key), "%s %u %u", ip, port, direction);
	sb_learn_strset_add(&learn.seen_nets, key);
}

static bool record_import(const char *top_level)
{
	/* A name no import statement spells (__import__("*"), a newline):
	 * refused as it will be on the next run, never a rule ('*' grants
	 * every module). */
	if (!sb_learning || learn.done || !sb_profile_module_name_valid(top_level) ||
	    strchr(top_level, '.'))
		return false;
	return sb_learn_set_add_import(&learn.set, top_level) >= 0;
}

static bool record_api(const char *qualname)
{
	const struct sb_api_function *fn;
	const struct sb_api_rule *rule = NULL;

	if (!sb_learning || learn.done || !(fn = sb_api_lookup(qualname)))
		return false;
	/* An explicit DENY is a decision, not a missing rule. */
	if (!sb_api_is_allowed(learn.profile->apis, learn.profile->n_apis, fn, &rule) && rule &&
	    rule->deny)
		return false;
	return sb_learn_set_add_api(&learn.set, fn) >= 0;
}

static bool record_api_category(int category)
{
	if (!sb_learning || learn.done || category < 0 || category >= SB_API_CATEGORY__N)
		return false;
	for (size_t i = 0; i < learn.profile->n_apis; i++) {
		const struct sb_api_rule *a = &learn.profile->apis[i];

		if (a->deny &&
		    (a->kind == SB_API_TARGET_ALL ||
		     (a->kind == SB_API_TARGET_CATEGORY && (int)a->category == category)))
			return false;
	}
	sb_learn_set_add_api_category(&learn.set, (enum sb_api_category)category);
	return true;
}

static bool record_eval(int kind, const char *profile, const char *name)
{
	if (!sb_learning || learn.done)
		return false;
	return sb_eval_learned_add(&learn.set.eval, (enum sb_eval_learn_kind)kind, profile, name) >=
	       0;
}

static void env_read(const char *name)
{
	if (!sb_learning || learn.done || sb_strv_contains(learn.env_written, name))
		return;
	sb_learn_set_add_env(&learn.set, name);
}

static void result_sent(const char *needs_objects)
{
	if (!sb_learning || learn.done)
		return;
	sb_learn_set_add_result(&learn.set, needs_objects);
}

static void env_written(const char *name)
{
	if (!sb_learning || learn.done || sb_strv_contains(learn.env_written, name))
		return;
	sb_strv_push(&learn.env_written, name);
}

/* The refusals a missing rule explains become records; a name is let
 * resolve (the connection to its addresses is what is recorded). */
static enum sb_refusal_answer refused(const struct sb_refusal *r)
{
	bool recorded = false;

	switch (r->kind) {
	case SB_REFUSAL_FILE:
		recorded = record_file(r->subject, r->write);
		break;
	case SB_REFUSAL_NET:
		recorded = record_net(r->subject, r->protocol, r->port, r->direction);
		break;
	case SB_REFUSAL_NET_NAME:
		recorded = true;
		break;
	case SB_REFUSAL_IMPORT:
		recorded = record_import(r->subject);
		break;
	case SB_REFUSAL_API:
		recorded = record_api(r->subject);
		break;
	case SB_REFUSAL_API_CATEGORY:
		recorded = record_api_category(r->category);
		break;
	case SB_REFUSAL_EVAL:
		recorded = record_eval(r->eval_kind, r->eval_profile, r->subject);
		break;
	}
	return recorded ? SB_RECORDED_ALLOW : SB_REFUSE;
}

static const struct sb_guard_observer observer = {
    .refused = refused,
    .file_decided = file_decided,
    .net_decided = net_decided,
    .name_resolved = name_resolved,
    .result_sent = result_sent,
};

const struct sb_guard_observer *sb_learn_observer(void)
{
	return sb_learning ? &observer : NULL;
}

/* ---- the write --------------------------------------------------------------- */

static void native_file(const char *path, bool write, void *userdata _unused_)
{
	if (sb_learn_strset_contains(&learn.seen_paths, path))
		return;
	sb_learn_set_add_path(&learn.set, path, write, true);
}

static void native_net(const char *ip, unsigned protocol, uint16_t port, unsigned direction,
		       void *userdata _unused_)
{
	char key[INET6_ADDRSTRLEN + 32];

	snprintf(key, sizeof(key), "%s %u %u", ip, port, direction);
	if (sb_learn_strset_contains(&learn.seen_nets, key))
		return;
	sb_learn_set_add_net(&learn.set, ip, protocol, port, direction, true);
}

/* A native call outside the profile's allowlist. */
static void native_syscall(const char *name, enum sb_seccomp_need need, void *userdata _unused_)
{
	if (need != SB_SECCOMP_NEED_PROCESS) {
		sb_learn_set_add_refused_syscall(&learn.set, name);
		return;
	}
	/* A process the guard saw started from Python (os.fork, subprocess):
	 * its function's rule is learned already, and it is what the kernel
	 * boundary follows. */
	for (size_t i = 0; learn.set.api && i < sb_api_registry_size; i++)
		if (learn.set.api[i] && sb_api_registry[i].category == SB_API_PROCESS_EXEC)
			return;
	/* python-api=ALLOW:process-exec, unless the profile denies it. */
	for (size_t i = 0; i < learn.profile->n_apis; i++) {
		const struct sb_api_rule *a = &learn.profile->apis[i];

		if (a->deny &&
		    (a->kind == SB_API_TARGET_ALL ||
		     (a->kind == SB_API_TARGET_CATEGORY && a->category == SB_API_PROCESS_EXEC)))
			return;
	}
	sb_learn_set_add_api_category(&learn.set, SB_API_PROCESS_EXEC);
}

static const char *env_lookup(const char *name, void *userdata)
{
	return sb_strv_env_get(userdata, name);
}

/* The learn file's rules when it is not the loaded profile (--learn=<other
 * file>), so that what it has already is not added again; NULL otherwise. A
 * file with errors still gives the rules that parsed. */
static struct sb_profile *load_learn_profile(const char *home)
{
	_cleanup_(sb_diags_done) struct sb_diags diags = {0};
	struct sb_profile *p = NULL;
	char a[PATH_MAX], b[PATH_MAX];
	struct sb_load_options o = {
	    .path = learn.file,
	    .getenv = env_lookup,
	    .getenv_userdata = learn.host_env,
	    .cwd = learn.cwd,
	    .home = home,
	};
	int r;

	if (!realpath(learn.file, a))
		return NULL;
	for (char **f = learn.profile->files; f && *f; f++)
		if (realpath(*f, b) && streq(a, b))
			return NULL;
	r = sb_profile_load(&o, &p, &diags);
	if ((r >= 0 || r == -EINVAL) && p)
		(void)sb_profile_check(p, &o, &diags);
	return p;
}

static char *rules_text(const struct sb_learn_rules *rules)
{
	struct sb_buf b = {0};

	for (size_t s = 0; s < SB_LEARN__N; s++)
		for (char **l = rules->lines[s]; l && *l; l++)
			if (sb_buf_printf(&b, "%s\n", *l) < 0) {
				sb_buf_reset(&b);
				return NULL;
			}
	return b.data ? sb_buf_steal(&b) : strdup("");
}

void sb_learn_finish(void)
{
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules rules = {0};
	_cleanup_(sb_learn_write_result_done) struct sb_learn_write_result res = {0};
	_cleanup_free_ char *err = NULL, *text = NULL;
	_cleanup_(sb_profile_freep) struct sb_profile *learn_profile = NULL;
	char real_file[PATH_MAX];
	struct sb_learn_outcome out = {.file = learn.file};
	const char *tmpdir = NULL, *home = NULL;
	int r;

	/* A child forked by the program (os.fork, multiprocessing) finalizes
	 * too: only the learning process writes. */
	/* Not activated: the interpreter never ran the program (a usage error
	 * CPython reported while reading its configuration). */
	if (!sb_learning || !learn.activated || learn.done || getpid() != learn.pid)
		return;
	learn.done = true;

	if (learn.native_armed) {
		sb_learn_native_collect(&(struct sb_learn_native_sink){
		    .file = native_file,
		    .net = native_net,
		    .syscall = native_syscall,
		});
	}
	for (char **e = learn.host_env; e && *e; e++)
		if (startswith(*e, "TMPDIR=") && (*e)[7] == '/')
			tmpdir = *e + 7;
		else if (startswith(*e, "HOME=") && (*e)[5] == '/')
			home = *e + 5;

	if (learn.pythonpath_used)
		sb_learn_set_add_env(&learn.set, "PYTHONPATH");
	learn_profile = load_learn_profile(home);
	r = sb_learn_rules_build(
	    &learn.set,
	    &(struct sb_learn_context){
		.cwd = learn.cwd,
		.program_dir = learn.program_dir,
		.home = home,
		.tmpdir = tmpdir,
		.env = learn.host_env,
		.skip_dirs = learn.skip_dirs,
		.stdlib_modules = learn.stdlib_modules,
		.learn_file = realpath(learn.file, real_file) ? real_file : learn.file,
		.learn_profile = learn_profile,
	    },
	    learn.profile, &rules);
	/* The records are rule lines now, and nothing records any more
	 * (learn.done): a long run's thousands of paths need not stay. */
	sb_learn_set_done(&learn.set);
	if (r >= 0)
		r = sb_learn_file_write(learn.file, &rules, time(NULL), &res, &err);
	out.error = r < 0 ? r : 0;
	out.message = err;
	out.backup = res.backup;
	out.added = res.added;
	out.created = res.created;
	out.changed = res.changed;
	out.warning = rules.warning;
	out.warnings = rules.warnings;
	if (r < 0)
		out.rules_text = text = rules_text(&rules);
	if (learn.report)
		learn.report(&out);
}
