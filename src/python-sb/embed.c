/* SPDX-License-Identifier: MIT */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "embed.h"

#include "audit-guard.h"
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
static int replace_environment(char **envp)
{
	if (clearenv() != 0)
		return -ENOMEM;
	for (char **e = envp; e && *e; e++)
		if (putenv(*e) != 0)
			return -errno;
	return 0;
}

static bool will_run_repl(const struct sb_cli *cli)
{
	return cli->mode == SB_RUN_REPL && isatty(STDIN_FILENO);
}

static void print_banner(const struct sb_embed *e)
{
	/* CPython prints its banner on stderr too; ours says what limits apply. */
	fprintf(stderr, "SANDBOXES Python %s on %s\n", Py_GetVersion(), Py_GetPlatform());
	if (!e->profile->py_sandbox)
		fprintf(stderr, "APIs are LIMITED only by the os-sandbox of type %s\n",
			e->boundary);
	else
		fprintf(stderr, "APIs are LIMITED according to the rules in '%s'%s%s\n",
			e->profile_path ? e->profile_path : "(built-in defaults)",
			e->boundary ? " and by the os-sandbox=" : "",
			e->boundary ? e->boundary : "");
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
	} else if (e->self_exe) {
		status = PyConfig_SetBytesString(config, &config->executable, e->self_exe);
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

int sb_embed_run(const struct sb_embed *e, int *ret_exit_code, char **reterr)
{
	bool own_banner = will_run_repl(e->cli) && !e->cli->quiet;
	PyPreConfig preconfig;
	PyConfig config;
	PyStatus status;
	int r;

	r = replace_environment(e->envp);
	if (r < 0) {
		*reterr = strdup("cannot set the sandbox environment");
		return r;
	}

	PyPreConfig_InitPythonConfig(&preconfig);
	preconfig.parse_argv = 1;
	/* Locale coercion would add LC_CTYPE to the environment behind the
	 * policy's back; UTF-8 mode gives the same decoding without it. */
	preconfig.coerce_c_locale = 0;
	preconfig.coerce_c_locale_warn = 0;
	status = Py_PreInitializeFromBytesArgs(
	    &preconfig, (Py_ssize_t)sb_strv_length(e->cli->python_argv), e->cli->python_argv);
	if (PyStatus_Exception(status))
		return status_error(status, reterr);

	status = configure(e, &config, own_banner);
	if (PyStatus_Exception(status)) {
		PyConfig_Clear(&config);
		if (PyStatus_IsExit(status)) {
			*ret_exit_code = status.exitcode;
			return 0;
		}
		return status_error(status, reterr);
	}

	r = sb_guard_prepare(e->profile, e->profile_path);
	if (r < 0) {
		PyConfig_Clear(&config);
		*reterr = strdup("cannot register the audit hook");
		return r;
	}

	status = Py_InitializeFromConfig(&config);
	PyConfig_Clear(&config);
	if (PyStatus_Exception(status)) {
		if (PyStatus_IsExit(status)) {
			*ret_exit_code = status.exitcode;
			return 0;
		}
		return status_error(status, reterr);
	}

	r = sb_guard_activate(reterr);
	if (r < 0)
		return r;
	/* Children started through sys.executable get python-sb again, not a
	 * bare interpreter. */
	if (e->self_exe && set_sys_str("executable", e->self_exe) < 0)
		PyErr_Clear();
	if (will_run_repl(e->cli)) {
		if (set_sys_str("ps1", "\xe2\x9a\xa0 >>> ") < 0 ||
		    set_sys_str("ps2", "\xe2\x9a\xa0 ... ") < 0)
			PyErr_Clear();
	}
	if (own_banner)
		print_banner(e);

	*ret_exit_code = Py_RunMain();
	sb_guard_release();
	return 0;
}
