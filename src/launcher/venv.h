/* SPDX-License-Identifier: MIT */
#pragma once

/* Which virtual environment the embedded interpreter uses, as `python` would:
 * the one python-sb was started from (a python-sb linked into venv/bin, run
 * by that path: its pyvenv.cfg is beside it, as CPython looks for it), else
 * the VIRTUAL_ENV that activation exports. Only a directory with a
 * pyvenv.cfg is one. */

/* argv0 as the program was started (not resolved: a symlink in venv/bin is
 * what names the venv), path the caller's PATH, cwd its directory, env the
 * VIRTUAL_ENV variable. *ret_venv gets the venv's directory or NULL. A venv
 * made by another Python version (pyvenv.cfg's version or version_info) is
 * refused: -EPROTONOSUPPORT with *reterr saying which versions. 0, or -errno. */
int sb_venv_detect(const char *argv0, const char *path, const char *cwd, const char *virtual_env,
		   char **ret_venv, char **reterr);
