/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

/* What the caller hands python-sb and the program must not get (inherited.c):
 * descriptors above 2, and the caller's environment, which os.environ
 * filters but the process's memory and /proc/self/environ still hold. */

/* The descriptor a command-line path names ("/dev/fd/N", "/proc/self/fd/N":
 * `python-sb <(cmd)`), or -1. */
int sb_inherited_fd_named(const char *path);

/* Closes every descriptor above 2 but those in keep[] (python-sb's own, and
 * those the command line names). 0, or -errno with *reterr. */
int sb_inherited_close_fds(const int *keep, size_t n_keep, char **reterr);

/* Zeroes the environment block the kernel put on the stack at execve (what
 * /proc/self/environ shows) and the launcher's copies of it (host_env, a
 * NULL-ended vector; may be NULL). args_end: the byte after the last argv
 * string, where the kernel starts the block (NULL: found in /proc). Call once
 * nothing needs the caller's environment any more: the interpreter's
 * environment is the policy's own copy (embed.c replaces `environ` with it). */
void sb_inherited_scrub_environment(char **host_env, const char *args_end);
