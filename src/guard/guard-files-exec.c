/* SPDX-License-Identifier: MIT */
#include "guard-files-exec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file-policy.h"
#include "guard-files-check.h"
#include "guard-runtime.h"
#include "pysandboxes-module.h"
#include "util.h"

static struct {
	bool confined, hides;
	const char *provider; /* static: a provider's name */
} view;

void sb_files_exec_prepare(bool confined, bool hides, const char *provider)
{
	view.confined = confined;
	view.hides = hides;
	view.provider = provider;
}

/* PATH of env (a mapping with str or bytes keys), else the process's. */
static PyObject *path_of(PyObject *env)
{
	PyObject *v = NULL;

	if (env && env != Py_None && PyMapping_Check(env)) {
		v = PyMapping_GetItemString(env, "PATH");
		if (!v) {
			PyObject *key = PyBytes_FromString("PATH");

			PyErr_Clear();
			v = key ? PyObject_GetItem(env, key) : NULL;
			Py_XDECREF(key);
			PyErr_Clear();
		}
		if (v)
			return v;
	}
	return NULL;
}

/* The refusal: the program's resolved path is outside the grants. */
static int refuse(const char *program, const char *resolved, bool hidden, const char *by)
{
	_cleanup_free_ char *dir = sb_path_dirname(resolved), *text = NULL;

	if (!dir || asprintf(&text,
			     "Running '%s' (%s) needs '%s', which %s os-sandbox=%s boundary. "
			     "Add 'expose-ro=%s' to '%s'",
			     program, by, resolved,
			     hidden ? "is not in the file system of the"
				    : "the program may not read or run under the",
			     view.provider, dir, sb_guard_profile_path()) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return hidden ? sb_raise_file_not_found(program, text)
		      : sb_raise_permission(EACCES, program, text);
}

/* 1 when path was found (checked), 0 when it does not exist in the view,
 * -1 with an exception. */
static int check_path(const char *program, const char *path, bool last_chance, const char *by)
{
	char resolved[PATH_MAX];
	struct stat st;
	int fd;

	if (sb_path_resolve(path, NULL, true, resolved) < 0)
		return 0;
	if (stat(resolved, &st) < 0) {
		/* Under a new root a program outside the grants is missing: say
		 * so where the call would fail silently or with no rule. */
		if (errno == ENOENT && view.hides && last_chance)
			return refuse(program, resolved, true, by);
		return errno == EACCES ? refuse(program, resolved, false, by) : 0;
	}
	if (!S_ISREG(st.st_mode))
		return 1;
	/* Landlock grants run with read: a file it lets the program read, it
	 * lets it run. */
	fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return errno == EACCES ? refuse(program, resolved, false, by) : 1;
}

int sb_files_check_program(PyObject *program, PyObject *env, bool search_path, const char *by)
{
	PyObject *keep = NULL, *path_keep = NULL, *pathv;
	const char *name = NULL, *search = NULL;
	int r = 0;

	if (!view.confined)
		return 0;
	if (sb_files_path_bytes(program, false, &name, &keep) != SB_PATH_STRING || !*name) {
		PyErr_Clear();
		Py_XDECREF(keep);
		return 0;
	}
	if (strchr(name, '/') || !search_path) {
		r = check_path(name, name, true, by);
		Py_XDECREF(keep);
		return r < 0 ? -1 : 0;
	}
	pathv = path_of(env);
	if (pathv) {
		if (sb_files_path_bytes(pathv, false, &search, &path_keep) != SB_PATH_STRING)
			search = NULL;
		Py_DECREF(pathv);
		PyErr_Clear();
	} else {
		search = getenv("PATH");
	}
	if (!search)
		search = "/bin:/usr/bin";
	for (const char *p = search; r == 0;) {
		size_t n = strcspn(p, ":");
		char candidate[PATH_MAX];

		if (n > 0 && (size_t)snprintf(candidate, sizeof(candidate), "%.*s/%s", (int)n, p,
					      name) < sizeof(candidate))
			r = check_path(name, candidate, false, by);
		if (!p[n])
			break;
		p += n + 1;
	}
	Py_XDECREF(keep);
	Py_XDECREF(path_keep);
	return r < 0 ? -1 : 0;
}
