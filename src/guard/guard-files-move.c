/* SPDX-License-Identifier: MIT */
/* The symbolic links a rename moves (guard-files-move.h). os.symlink() is
 * refused when the new link would lead outside the grants, decided from the
 * link's directory; a relative link means something else once it is moved:
 * rw/a/b/l -> ../../x leads to rw/x, renamed to rw/l it leads beside the
 * grant. The program cannot read through such a link (every use is resolved
 * again), but it stays in the writable grant for the caller to follow after
 * the run, which is what the os.symlink() rule is for. So a moved relative
 * link must lead within the grants from its new place, and so must every
 * relative link below a directory moved to another parent (one renamed in
 * place keeps what every link below it climbs through). A hard link to a
 * symbolic link (os.link() makes one: link() does not follow) is such a
 * link in a new place too. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-files-move.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guard-files-check.h"
#include "pysandboxes-module.h"
#include "util.h"

/* A directory with more entries than this is not walked: the move is
 * refused (fail closed) rather than held for long. */
#define MOVE_MAX_ENTRIES 100000

/* nftw() takes no context: one walk at a time, under the GIL. */
static struct {
	const char *src, *dst; /* resolved, the moved directory's old and new path */
	size_t src_len, entries;
	const char *raw; /* src as the program wrote it, for messages */
	int r;
} walk;

static int refuse_link(const char *raw, const char *link, const char *why)
{
	_cleanup_free_ char *text = NULL;

	PyErr_Clear();
	if (asprintf(&text,
		     "Cannot move '%s': the symbolic link '%s' %s, and no link in a writable "
		     "grant may lead outside the exposed directories",
		     raw, link, why) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return sb_raise_permission(EACCES, raw, text);
}

/* The link now at old_path, once at new_path: its target, when relative,
 * resolved from new_path's directory must be within the grants. */
static int check_link(const char *raw, const char *old_path, const char *new_path)
{
	char target[PATH_MAX], joined[PATH_MAX];
	_cleanup_free_ char *dir = NULL;
	ssize_t n = readlink(old_path, target, sizeof(target) - 1);

	if (n < 0)
		return 0; /* gone or no link: the rename itself will tell */
	target[n] = '\0';
	if (target[0] == '/')
		return 0; /* means the same wherever it is */
	dir = sb_path_dirname(new_path);
	if (!dir) {
		PyErr_NoMemory();
		return -1;
	}
	if (snprintf(joined, sizeof(joined), "%s/%s", dir, target) >= (int)sizeof(joined))
		return refuse_link(raw, old_path, "would be too long to resolve");
	if (sb_files_check_raw(joined, -1, false, true, NULL) < 0)
		return refuse_link(raw, old_path, "would lead outside from its new place");
	return 0;
}

static int on_entry(const char *path, const struct stat *st _unused_, int type,
		    struct FTW *ftw _unused_)
{
	char new_path[PATH_MAX];

	if (++walk.entries > MOVE_MAX_ENTRIES) {
		walk.r = refuse_link(walk.raw, path, "could not be checked (too many entries)");
		return 1;
	}
	if (type != FTW_SL && type != FTW_SLN)
		return 0;
	if (snprintf(new_path, sizeof(new_path), "%s%s", walk.dst, path + walk.src_len) >=
	    (int)sizeof(new_path)) {
		walk.r = refuse_link(walk.raw, path, "would be too long to resolve");
		return 1;
	}
	walk.r = check_link(walk.raw, path, new_path);
	return walk.r < 0;
}

static int resolved_of(PyObject *o, int dir_fd, char out[PATH_MAX], const char **raw,
		       PyObject **keep)
{
	switch (sb_files_path_bytes(o, false, raw, keep)) {
	case SB_PATH_STRING:
		break;
	case SB_PATH_ERROR:
		return -1;
	default:
		return 1; /* nothing a rename takes: the call refuses it */
	}
	/* Decided as a write already: this only asks for the resolution. */
	return sb_files_check_raw(*raw, dir_fd, true, false, out);
}

int sb_files_check_moved_links(PyObject *src, int src_dir_fd, PyObject *dst, int dst_dir_fd,
			       bool walk_dirs)
{
	char from[PATH_MAX], to[PATH_MAX];
	_cleanup_free_ char *from_dir = NULL, *to_dir = NULL;
	PyObject *keep_src = NULL, *keep_dst = NULL;
	const char *raw_src = NULL, *raw_dst = NULL;
	struct stat st;
	int r;

	r = resolved_of(src, src_dir_fd, from, &raw_src, &keep_src);
	if (r == 0)
		r = resolved_of(dst, dst_dir_fd, to, &raw_dst, &keep_dst);
	if (r != 0 || lstat(from, &st) < 0) {
		r = r < 0 ? -1 : 0;
		goto out;
	}
	from_dir = sb_path_dirname(from);
	to_dir = sb_path_dirname(to);
	if (!from_dir || !to_dir) {
		PyErr_NoMemory();
		r = -1;
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		r = streq(from_dir, to_dir) ? 0 : check_link(raw_src, from, to);
	} else if (walk_dirs && S_ISDIR(st.st_mode) && !streq(from_dir, to_dir)) {
		walk.src = from;
		walk.src_len = strlen(from);
		walk.dst = to;
		walk.raw = raw_src;
		walk.entries = 0;
		walk.r = 0;
		if (nftw(from, on_entry, 16, FTW_PHYS) < 0 && walk.r == 0)
			walk.r = refuse_link(raw_src, from, "could not be checked");
		r = walk.r;
	}
out:
	Py_XDECREF(keep_src);
	Py_XDECREF(keep_dst);
	return r;
}
