/* SPDX-License-Identifier: MIT */
#pragma once

/* The program a process-starting call runs (os.system's shell, os.exec*,
 * os.posix_spawn*, subprocess.Popen), checked against the kernel's view of
 * the files before the call, when the provider confines files: a program
 * outside the grants would otherwise fail in the child, silently for
 * os.system (status 32512, the shell's 127). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

/* Life cycle (guard-files.c): how the provider confines files. refuses:
 * a path outside the grants is refused (Landlock: EACCES); hides: it is not
 * in the program's file system (a new root: ENOENT). */
void sb_files_exec_prepare(bool confined, bool hides, const char *provider);

/* program: the path or name as the event gives it (str or bytes); with
 * search_path, a name without '/' is looked for in the PATH of env (the
 * environment the call passes: a mapping, or None for the program's own),
 * else relative to the cwd; by: the call, for the message. 0, or -1 with
 * the pysandboxes exception set. */
int sb_files_check_program(PyObject *program, PyObject *env, bool search_path, const char *by);
