/* SPDX-License-Identifier: MIT */
#include "venv.h"

#include <Python.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The path python-sb was started by, as CPython finds its executable: argv0
 * with a slash (made absolute), else its first match on PATH. NULL when
 * there is none. Symlinks are kept. */
static char *started_as(const char *argv0, const char *path, const char *cwd)
{
	_cleanup_free_ char *copy = NULL;
	char *save = NULL;

	if (!argv0 || !*argv0)
		return NULL;
	if (strchr(argv0, '/'))
		return argv0[0] == '/' ? strdup(argv0) : sb_path_join(cwd, argv0);
	copy = path ? strdup(path) : NULL;
	for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d;
	     d = strtok_r(NULL, ":", &save)) {
		_cleanup_free_ char *candidate = sb_path_join(*d ? d : cwd, argv0);

		if (candidate && is_file(candidate) && access(candidate, X_OK) == 0)
			return TAKE_PTR(candidate);
	}
	return NULL;
}

/* "X.Y" of pyvenv.cfg's version (venv) or version_info (virtualenv), into
 * major/minor; false when it names none. */
static bool venv_version(const char *cfg, int *ret_major, int *ret_minor)
{
	_cleanup_fclose_ FILE *f = fopen(cfg, "re");
	char line[512];

	while (f && fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '='), *key = line, *end;

		if (!eq)
			continue;
		*eq = '\0';
		key += strspn(key, " \t");
		for (end = eq; end > key && (end[-1] == ' ' || end[-1] == '\t'); end--)
			;
		*end = '\0';
		if ((streq(key, "version") || streq(key, "version_info")) &&
		    sscanf(eq + 1, " %d.%d", ret_major, ret_minor) == 2)
			return true;
	}
	return false;
}

static int check_version(const char *venv, const char *cfg, const char *how, char **reterr)
{
	int major, minor;

	if (!venv_version(cfg, &major, &minor) ||
	    (major == PY_MAJOR_VERSION && minor == PY_MINOR_VERSION))
		return 0;
	return sb_error(reterr, -EPROTONOSUPPORT,
			"the virtual environment '%s' (%s) was made by Python %d.%d, and "
			"python-sb embeds Python %s: its packages cannot be loaded. Make the venv "
			"with Python %d.%d (python%d.%d -m venv), or build python-sb for %d.%d "
			"(meson setup -Dpython=python%d.%d)",
			venv, how, major, minor, PY_VERSION, PY_MAJOR_VERSION, PY_MINOR_VERSION,
			PY_MAJOR_VERSION, PY_MINOR_VERSION, major, minor, major, minor);
}

int sb_venv_detect(const char *argv0, const char *path, const char *cwd, const char *virtual_env,
		   char **ret_venv, char **reterr)
{
	_cleanup_free_ char *exe = started_as(argv0, path, cwd);
	_cleanup_free_ char *venv = NULL, *cfg = NULL;
	const char *how = NULL;
	int r;

	*ret_venv = NULL;
	/* CPython: pyvenv.cfg in the parent of the executable's directory. */
	if (exe) {
		char *slash = strrchr(exe, '/');

		if (slash && slash != exe) {
			*slash = '\0';
			slash = strrchr(exe, '/');
			if (slash) {
				venv = slash == exe ? strdup("/")
						    : strndup(exe, (size_t)(slash - exe));
				cfg = venv ? sb_path_join(venv, "pyvenv.cfg") : NULL;
				if (cfg && is_file(cfg))
					how = "python-sb was started from its bin/";
			}
		}
	}
	if (!how && virtual_env && virtual_env[0] == '/') {
		free(venv);
		free(cfg);
		venv = strdup(virtual_env);
		cfg = venv ? sb_path_join(venv, "pyvenv.cfg") : NULL;
		if (cfg && is_file(cfg))
			how = "VIRTUAL_ENV";
	}
	if (!how)
		return 0;
	r = check_version(venv, cfg, how, reterr);
	if (r < 0)
		return r;
	*ret_venv = TAKE_PTR(venv);
	return 0;
}
