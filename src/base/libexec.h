/* SPDX-License-Identifier: MIT */
#pragma once

/* python-sb's helper programs (python-sb-serve, python-sb-supervise, the qemu
 * guest's init): beside python-sb in a build tree, at `relative` from
 * python-sb's directory in an install (staged, or moved with its prefix),
 * else at `absolute`, where meson installs it. self: python-sb's own path.
 * 0 with *ret (malloc'd), -ENOENT when none is there, -ENOMEM. */
int sb_libexec_find(const char *self, const char *name, const char *relative, const char *absolute,
		    int mode, char **ret);
