/* SPDX-License-Identifier: MIT */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "embed.h"
#include "path0-modules.h"
#include "provider.h"

#include "audit-guard.h"
#include "exceptions.h"
#include "learn.h"
#include "report-alloc.h"
#include "report-collector.h"
#include "report-denials.h"
#include "seccomp-filter.h"
#include "util.h"

static int status_error(PyStatus status, char **reterr)
{
	if (asprintf(reterr, "cannot start the interpreter: %s%s%s", status.func ? status.func : "",
		     status.func ? ": " : "",
		     status.err_msg ? status.err_msg : "unknown error") < 0)
		*reterr = NULL;
	return -EIO;
}

/* The program sees exactly the policy's environment: CPython reads PYTHON*
 * variables from it too, so a PYTHONPATH the profile did not pass has no
 * effect, as in the original. */
int sb_embed_set_environment(const struct sb_embed *e)
{
	if (clearenv() != 0)
		return -ENOMEM;
	for (char **v = e->envp; v && *v; v++)
		if (putenv(*v) != 0)
			return -errno;
	return 0;
}

static bool will_run_repl(const struct sb_cli *cli)
{
	return cli->mode == SB_RUN_REPL && isatty(STDIN_FILENO);
}

static void print_banner(const struct sb_embed *e)
{
	/* Named after the rules only when the provider's kernel enforces some
	 * of them: subprocess and none add nothing a reader could check. */
	bool kernel_rules = e->provider->flags & (SB_PROVIDER_FILES | SB_PROVIDER_NET_TCP_PORTS);

	/* CPython prints its banner on stderr too; ours says what limits apply. */
	fprintf(stderr, "SANDBOXES Python %s on %s\n", Py_GetVersion(), Py_GetPlatform());
	if (!e->profile->py_sandbox)
		fprintf(stderr, "APIs are LIMITED only by the os-sandbox of type %s\n",
			e->provider->name);
	else if (sb_learn_file_path())
		fprintf(stderr, "API calls are LEARNED and saved in '%s'\n", sb_learn_file_path());
	else
		fprintf(stderr, "APIs are LIMITED according to the rules in '%s'%s%s\n",
			e->profile_path ? e->profile_path : "(built-in defaults)",
			kernel_rules ? " and by the os-sandbox=" : "",
			kernel_rules ? e->provider->name : "");
	fflush(stderr);
}

static PyStatus configure(const struct sb_embed *e, PyConfig *config, bool own_banner)
{
	const struct sb_cli *cli = e->cli;
	int argc = (int)sb_strv_length(cli->python_argv);
	PyStatus status;

	PyConfig_InitPythonConfig(config);
	config->parse_argv = 1;
	if (own_banner)
		config->quiet = 1;
	/* ipython-sb: the plain REPL it may fall back to reads a piped stdin
	 * too, as the REPL ipython-sb would have run. */
	if (e->ipython)
		config->interactive = 1;
	status = PyConfig_SetBytesArgv(config, argc, cli->python_argv);
	if (PyStatus_Exception(status))
		return status;
	status = PyConfig_SetBytesString(config, &config->program_name, "python-sb");
	if (PyStatus_Exception(status))
		return status;
	if (e->venv) {
		/* getpath finds pyvenv.cfg beside the executable it is given: name
		 * the venv's interpreter so that sys.prefix and site-packages are
		 * the venv's, as with `python` run from an activated venv. */
		_cleanup_free_ char *venv_python = sb_path_join(e->venv, "bin/python");

		if (!venv_python)
			return PyStatus_NoMemory();
		status = PyConfig_SetBytesString(config, &config->executable, venv_python);
		/* The standard library is always the embedded interpreter's:
		 * pyvenv.cfg's home may name another installation of the same
		 * version (a pyenv build), whose library is not ours (nor in the
		 * boundary's grants). A home set skips getpath's venv search;
		 * site.py still makes the venv sys.prefix, with its packages. */
		if (!PyStatus_Exception(status))
			status = PyConfig_SetBytesString(config, &config->home, SB_PYTHON_HOME);
	} else if (e->self_exe) {
		status = PyConfig_SetBytesString(config, &config->executable, e->self_exe);
		/* The interpreter's home is known since the build: without it,
		 * getpath looks for the standard library's landmarks in the
		 * directories above python-sb's before its built-in prefix (0.5 M
		 * instructions, 1.7 % of `-c pass`). A PYTHONHOME the profile
		 * passes is honoured as before (unless -E or -I). */
		if (!PyStatus_Exception(status) && !getenv("PYTHONHOME"))
			status = PyConfig_SetBytesString(config, &config->home, SB_PYTHON_HOME);
	}
	if (PyStatus_Exception(status))
		return status;
	return PyConfig_Read(config);
}

static int set_sys_str(const char *name, const char *value)
{
	PyObject *v = PyUnicode_DecodeFSDefault(value);
	int r;

	if (!v)
		return -1;
	r = PySys_SetObject(name, v);
	Py_DECREF(v);
	return r;
}

/* ipython-sb: a SandBoxError that reaches the top (IPython's import refused
 * something, before IPython's own crash handler is in place) gives the plain
 * REPL (spec section 2): CPython enters it after the module when
 * PYTHONINSPECT is set by then. Anything else is printed as ever. */
static const struct sb_embed *ipython_embed;

static PyObject *ipython_excepthook(PyObject *self _unused_, PyObject *const *args, Py_ssize_t n)
{
	PyObject *base = sb_exc_class(SB_EXC_SANDBOX_ERROR), *text, *fallback;

	if (n == 3 && base && PyType_Check(args[0]) &&
	    PyType_IsSubtype((PyTypeObject *)args[0], (PyTypeObject *)base)) {
		text = PyObject_Str(args[1]);
		fprintf(stderr, "python-sb: IPython stopped: %s: %s; the plain REPL runs\n",
			((PyTypeObject *)args[0])->tp_name,
			text && PyUnicode_Check(text) ? PyUnicode_AsUTF8(text) : "?");
		Py_XDECREF(text);
		PyErr_Clear();
		if (setenv("PYTHONINSPECT", "1", 1) == 0 &&
		    (set_sys_str("ps1", "\xe2\x9a\xa0 >>> ") < 0 ||
		     set_sys_str("ps2", "\xe2\x9a\xa0 ... ") < 0))
			PyErr_Clear();
		if (ipython_embed && !ipython_embed->cli->quiet)
			print_banner(ipython_embed);
		Py_RETURN_NONE;
	}
	fallback = PySys_GetObject("__excepthook__"); /* borrowed */
	if (!fallback) {
		PyErr_SetString(PyExc_RuntimeError, "lost sys.__excepthook__");
		return NULL;
	}
	return PyObject_Vectorcall(fallback, args, (size_t)n, NULL);
}

static PyMethodDef ipython_excepthook_def = {
    "excepthook", (PyCFunction)(void (*)(void))ipython_excepthook, METH_FASTCALL,
    "ipython-sb's: a SandBoxError stopping IPython gives the plain REPL."};

static int install_ipython_excepthook(const struct sb_embed *e)
{
	PyObject *hook = PyCFunction_New(&ipython_excepthook_def, NULL);
	int r = hook ? PySys_SetObject("excepthook", hook) : -1;

	Py_XDECREF(hook);
	ipython_embed = e;
	return r;
}

struct sb_embed_state {
	const struct sb_embed *e;
	PyConfig config;
	bool own_banner;
	/* Set when PyConfig_Read already decided the outcome (--help-like exits). */
	bool exit_now;
	int exit_code;
};

static int push_wide(char ***v, const wchar_t *w)
{
	char *s;

	if (!w || !*w)
		return 0;
	s = Py_EncodeLocale(w, NULL);
	if (!s)
		return -ENOMEM;
	/* Py_EncodeLocale memory belongs to PyMem_Free. */
	if (sb_strv_push(v, s) < 0) {
		PyMem_Free(s);
		return -ENOMEM;
	}
	PyMem_Free(s);
	return 0;
}

/* sys.path[0] as Py_RunMain() will set it (the directory of the script's
 * real path, else the cwd) and the modules the profile allows there. */
static int collect_path0(const struct sb_embed *e, struct sb_interp_paths *paths, char **reterr)
{
	_cleanup_free_ char *main_package = NULL;
	char cwd[PATH_MAX];

	if (e->cli->mode == SB_RUN_SCRIPT && e->cli->target && !streq(e->cli->target, "-")) {
		_cleanup_free_ char *real = realpath(e->cli->target, NULL);

		if (!real)
			return 0;
		paths->path0 = sb_path_dirname(real);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return 0;
		paths->path0 = strdup(cwd);
	}
	if (!paths->path0)
		return -ENOMEM;
	if (e->cli->mode == SB_RUN_MODULE && e->cli->target) {
		main_package = strndup(e->cli->target, strcspn(e->cli->target, "."));
		if (!main_package)
			return -ENOMEM;
	}
	return sb_path0_modules(paths->path0, e->profile, main_package, &paths->path0_modules,
				reterr);
}

/* python-sb itself and its hooked library run before any boundary, at every
 * start: in an expose-rw tree, the program could replace them on one run and
 * be unconfined at the next (a shell script named python-sb). Refused then,
 * -EPERM with *reterr naming the rule. */
static int check_self_not_writable(const struct sb_profile *p, const char *path, char **reterr)
{
	_cleanup_free_ char *real = NULL, *dir = NULL;
	bool any_writable = false;

	/* realpath() is a readlink per component: at every start, only when
	 * there is a tree to check against. */
	for (size_t i = 0; i < p->n_exposes; i++)
		any_writable |= p->exposes[i].writable && p->exposes[i].resolved;
	if (!any_writable || !path)
		return 0;
	real = realpath(path, NULL);
	dir = real ? sb_path_dirname(real) : NULL;
	for (size_t i = 0; dir && i < p->n_exposes; i++) {
		const struct sb_expose_rule *x = &p->exposes[i];

		if (!x->writable || !x->resolved || !sb_path_under(dir, x->resolved))
			continue;
		return sb_error(reterr, -EPERM,
				"%s, which runs before the sandbox at every start, is inside "
				"expose-rw=%s (%s:%u): the program could replace it and run "
				"unconfined next time. Install python-sb outside every expose-rw "
				"directory, or narrow the rule",
				real, x->path, x->origin.file ? x->origin.file : SB_ORIGIN_CLI,
				x->origin.line);
	}
	return 0;
}

static int collect_paths(const struct sb_embed *e, const PyConfig *config,
			 struct sb_interp_paths *paths, char **reterr)
{
	const char *pythonpath = config->use_environment ? getenv("PYTHONPATH") : NULL;
	int r;

	/* CPython 3.11 computes sys.path only during initialisation, after the
	 * boundary: name its parts from what the build knows and what the
	 * program's environment adds. */
	r = sb_strv_push_split(&paths->dirs, SB_PYTHON_STDLIB_DIRS);
	for (Py_ssize_t i = 0; r >= 0 && i < config->module_search_paths.length; i++)
		r = push_wide(&paths->dirs, config->module_search_paths.items[i]);
	for (char *const *d = e->site_dirs; r >= 0 && d && *d; d++)
		r = sb_strv_push(&paths->dirs, *d);
	if (r >= 0)
		r = sb_strv_push_split(&paths->dirs, pythonpath);
	if (r >= 0 && e->venv) {
		_cleanup_free_ char *cfg = sb_path_join(e->venv, "pyvenv.cfg");

		r = cfg ? sb_strv_push(&paths->files, cfg) : -ENOMEM;
	}
	if (r >= 0)
		r = check_self_not_writable(e->profile, e->self_exe, reterr);
	if (r >= 0)
		r = check_self_not_writable(e->profile, e->self_lib, reterr);
	if (r >= 0 && e->self_exe)
		r = sb_strv_push(&paths->files, e->self_exe);
	if (r >= 0 && e->self_lib)
		r = sb_strv_push(&paths->files, e->self_lib);
	/* The worker imports the caller's modules: the parent's sys.path is
	 * readable, as every provider of the reference exposes it. */
	for (char **d = e->worker ? e->worker->paths : NULL; r >= 0 && d && *d; d++)
		r = sb_strv_push(&paths->dirs, *d);
	if (r >= 0 && e->worker && e->worker->main_path) {
		char *real = realpath(e->worker->main_path, NULL);

		if (real)
			r = sb_strv_consume(&paths->files, real);
	}
	if (r >= 0 && e->cli->mode == SB_RUN_SCRIPT && e->cli->target &&
	    !streq(e->cli->target, "-")) {
		char *real = realpath(e->cli->target, NULL);

		/* A missing script stays missing: CPython reports it (exit 2). */
		if (real)
			r = sb_strv_consume(&paths->files, real);
	}
	/* Not for the fork server: each run's sys.path[0] is its directory,
	 * granted whole; the server's own cwd is none of the runs'. */
	if (r >= 0 && !e->worker && !e->fork_server && !config->safe_path)
		r = collect_path0(e, paths, reterr);
	if (e->provider) {
		paths->provider = e->provider->name;
		paths->files_confined = e->provider->flags & SB_PROVIDER_FILES;
		paths->files_hidden = paths->files_confined && e->provider != &sb_provider_landlock;
	}
	return r;
}

void sb_interp_paths_done(struct sb_interp_paths *paths)
{
	sb_strv_free(paths->dirs);
	sb_strv_free(paths->files);
	free(paths->path0);
	sb_strv_free(paths->path0_modules);
	*paths = (struct sb_interp_paths){0};
}

int sb_embed_prepare(const struct sb_embed *e, struct sb_embed_state **ret_state,
		     struct sb_interp_paths *ret_paths, char **reterr)
{
	_cleanup_free_ struct sb_embed_state *st = calloc(1, sizeof(*st));
	PyPreConfig preconfig;
	PyStatus status;
	int r;

	if (!st)
		return -ENOMEM;
	st->e = e;
	st->own_banner = will_run_repl(e->cli) && !e->cli->quiet;

	PyPreConfig_InitPythonConfig(&preconfig);
	preconfig.parse_argv = 1;
	/* Locale coercion would add LC_CTYPE to the environment behind the
	 * policy's back; UTF-8 mode gives the same decoding without it. */
	preconfig.coerce_c_locale = 0;
	preconfig.coerce_c_locale_warn = 0;
	if (e->report)
		sb_report_alloc_preconfig(&preconfig);
	status = Py_PreInitializeFromBytesArgs(
	    &preconfig, (Py_ssize_t)sb_strv_length(e->cli->python_argv), e->cli->python_argv);
	if (PyStatus_Exception(status))
		return status_error(status, reterr);

	status = configure(e, &st->config, st->own_banner);
	if (PyStatus_Exception(status)) {
		PyConfig_Clear(&st->config);
		if (!PyStatus_IsExit(status))
			return status_error(status, reterr);
		st->exit_now = true;
		st->exit_code = status.exitcode;
	} else {
		r = collect_paths(e, &st->config, ret_paths, reterr);
		if (r < 0) {
			PyConfig_Clear(&st->config);
			sb_interp_paths_done(ret_paths);
			return r;
		}
	}
	*ret_state = TAKE_PTR(st);
	return 0;
}

/* A refusal while a Python frame runs is the program's: with none, the
 * runtime's own (printing an uncaught exception's traceback compiles its
 * lines, which the guard refuses). */
static bool program_code_runs(void)
{
	return PyEval_GetFrame() != NULL;
}

void sb_embed_discard(struct sb_embed_state *st)
{
	if (!st)
		return;
	if (!st->exit_now)
		PyConfig_Clear(&st->config);
	free(st);
}

/* Everything before the program: the guard prepared, the interpreter
 * initialised, the collector installed, the guard armed. *ret_done with
 * *ret_exit_code when the interpreter decided the outcome (--help-like
 * exits, an exit during initialisation). */
static int start(struct sb_embed_state *st, const struct sb_interp_paths *interp, bool *ret_done,
		 int *ret_exit_code, char **reterr)
{
	const struct sb_embed *e = st->e;
	PyStatus status;
	int r;

	*ret_done = false;
	if (st->exit_now) {
		*ret_done = true;
		*ret_exit_code = st->exit_code;
		return 0;
	}
	r = sb_guard_prepare(e->profile, e->profile_path, interp, sb_learn_observer(), reterr);
	if (r < 0) {
		PyConfig_Clear(&st->config);
		if (!*reterr)
			*reterr = strdup("cannot prepare the guard");
		return r;
	}

	status = Py_InitializeFromConfig(&st->config);
	PyConfig_Clear(&st->config);
	if (PyStatus_Exception(status)) {
		if (PyStatus_IsExit(status)) {
			*ret_done = true;
			*ret_exit_code = status.exitcode;
			return 0;
		}
		return status_error(status, reterr);
	}

	/* Before the guard is armed: installing the hooks raises audit events
	 * it refuses to the program. */
	r = e->fork_server ? sb_report_collector_install_idle(reterr)
			   : sb_report_collector_install(e->cli, reterr);
	if (r < 0)
		return r;
	/* The fork server's runs set their own sys.argv: the guard must not
	 * take the server's for a script whose directory it grants. */
	if (e->fork_server) {
		PyObject *none = PyList_New(0);

		if (!none || PySys_SetObject("argv", none) < 0) {
			Py_XDECREF(none);
			PyErr_Clear();
			return sb_error(reterr, -ENOMEM, "cannot clear sys.argv");
		}
		Py_DECREF(none);
	}
	r = sb_guard_activate(reterr);
	if (r < 0)
		return r;
	/* Learning: env reads, exit signals, the native observer, the write
	 * at exit (a no-op otherwise). */
	r = sb_learn_activate(reterr);
	if (r < 0)
		return r;
	/* Children started through sys.executable get python-sb again, not a
	 * bare interpreter. */
	if (e->self_exe && set_sys_str("executable", e->self_exe) < 0)
		PyErr_Clear();
	return 0;
}

int sb_embed_start(struct sb_embed_state *st, const struct sb_interp_paths *interp, bool *ret_done,
		   int *ret_exit_code, char **reterr)
{
	_cleanup_free_ _unused_ struct sb_embed_state *owned = st;

	return start(st, interp, ret_done, ret_exit_code, reterr);
}

int sb_embed_run(struct sb_embed_state *st, const struct sb_interp_paths *interp,
		 int *ret_exit_code, char **reterr)
{
	_cleanup_free_ _unused_ struct sb_embed_state *owned = st;
	const struct sb_embed *e = st->e;
	bool done;
	int r;

	r = start(st, interp, &done, ret_exit_code, reterr);
	if (r < 0 || done)
		return r;
	/* The sandboxed REPL's prompt, also after `-i script.py`. */
	if (will_run_repl(e->cli) || (e->cli->interactive && isatty(STDIN_FILENO))) {
		if (set_sys_str("ps1", "\xe2\x9a\xa0 >>> ") < 0 ||
		    set_sys_str("ps2", "\xe2\x9a\xa0 ... ") < 0)
			PyErr_Clear();
	}
	if (st->own_banner)
		print_banner(e);
	if (e->ipython && install_ipython_excepthook(e) < 0)
		PyErr_Clear();

	if (e->worker) {
		*ret_exit_code = sb_worker_serve(e->worker, e->profile, e->provider->name);
		/* As Py_RunMain() ends: atexit handlers, then 120 if finalising
		 * fails. */
		if (Py_FinalizeEx() < 0 && *ret_exit_code == 0)
			*ret_exit_code = 120;
	} else {
		sb_report_collector_start();
		sb_denials_start(program_code_runs);
		*ret_exit_code = Py_RunMain();
		sb_denials_stop();
	}
	sb_guard_release();
	return 0;
}
