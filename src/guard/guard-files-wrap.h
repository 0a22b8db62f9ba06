/* SPDX-License-Identifier: MIT */
#pragma once

/* The files part's C wrappers (guard-files-wrap.c): where CPython 3.11
 * raises no audit event (os.stat, lstat, access, readlink, statvfs,
 * pathconf, chroot, mkfifo, mknod: gh-115322) or one without the dir_fd the
 * path is relative to ("open" from os.open(dir_fd=)), a wrapper replaces the
 * function in posix and os (_io.open in _io, io and builtins) and decides
 * itself; every wrapper also turns a path-like or buffer argument into
 * str/bytes once, before the original sees it. */

/* After initialisation, before the program: installs them. 0, or -1 with
 * an exception. */
int sb_files_wrap_activate(void);
/* A posix or _io module _imp made afresh (a re-import, _imp.create_builtin()):
 * its functions replaced by the same wrappers, before anyone gets it. 0, or
 * -1 with an exception. */
int sb_files_wrap_module(const char *name, PyObject *module);
/* Raises the refusal of a set-user-ID or set-group-ID mode for raw: -1. */
int sb_files_refuse_set_id(const char *raw, unsigned long mode);
/* After the interpreter is gone. */
void sb_files_wrap_release(void);
