/* SPDX-License-Identifier: MIT */
#pragma once

/* What a rename does to the symbolic links it moves (guard-files-move.c). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

/* A rename (walk_dirs) or a hard link of src (relative to src_dir_fd when
 * >= 0) to dst: a relative symbolic link it puts at dst (src itself, or, for
 * a rename, one below a directory src) must still lead within the grants
 * from its new place, as os.symlink() requires of a new link. Both paths
 * were decided as writes before. 0, or -1 with the exception set. */
int sb_files_check_moved_links(PyObject *src, int src_dir_fd, PyObject *dst, int dst_dir_fd,
			       bool walk_dirs);
