/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "str-index.h"
#include "util.h"

/* The file system a sandbox with a mount namespace of its own sees
 * (os-sandbox=unshare): an empty tmpfs, read-only once built, holding only
 * what the plan lists: the host's files and trees bound at their own paths
 * (read-only or writable, recursively), the symbolic links that lead to them
 * as on the host, private tmpfs (/tmp, /dev/shm), a fresh /proc, files
 * python-sb writes (/etc/hosts), and inaccessible placeholders over the paths
 * ignore= hides. Every other path of the host does not exist.
 *
 * The plan is plain data built by lookups only (lstat, readlink, realpath);
 * sb_root_build() applies it in a process that has a mount namespace and a
 * PID namespace of its own and CAP_SYS_ADMIN in their user namespace. */

enum sb_root_kind {
	SB_ROOT_DIR,	 /* an empty directory of the new root itself */
	SB_ROOT_SYMLINK, /* a symbolic link with the host's target */
	SB_ROOT_BIND,	 /* the host's file or tree at the same path */
	SB_ROOT_TMPFS,	 /* a private, writable tmpfs */
	SB_ROOT_PROC,	 /* a fresh /proc of the PID namespace (its processes only) */
	SB_ROOT_FILE,	 /* a file whose content python-sb writes */
	SB_ROOT_HIDDEN,	 /* ignore=: an inaccessible, read-only placeholder over the path */
};

struct sb_root_entry {
	char *path; /* absolute, normalised, the same inside and on the host */
	enum sb_root_kind kind;
	bool writable;		 /* BIND */
	bool is_dir;		 /* BIND, HIDDEN: a directory, else a file */
	bool device;		 /* BIND: a device node (its mount keeps devices usable) */
	bool optional;		 /* BIND: skipped when the host has no such path any more */
	char *text;		 /* SYMLINK: the target; FILE: the content */
	unsigned long long size; /* TMPFS: bytes, 0 for the kernel's default */
	unsigned mode;		 /* TMPFS: of its root; FILE, DIR: of the entry */
	char *why;		 /* for --explain */
};

struct sb_root_plan {
	struct sb_root_entry *entries; /* sorted, parents first, after sb_root_plan_finish() */
	size_t n;
	struct sb_str_index index; /* over entries, by path */
	char *cwd;		   /* where the program starts (a path the plan makes exist) */
	char **notes;
	char **canonical; /* directories seen to hold no link, while planning */
};

/* The host's path (file or directory) at the same place, with the symbolic
 * links of path leading to it as on the host. A missing path is skipped when
 * optional, and makes sb_root_build() fail otherwise. 0 or -ENOMEM. */
int sb_root_plan_bind(struct sb_root_plan *p, const char *path, bool writable, bool optional,
		      const char *why);
/* A device node of the host (/dev/null...): writable, devices allowed. */
int sb_root_plan_device(struct sb_root_plan *p, const char *path, const char *why);
/* A private tmpfs; size in bytes (0: the kernel's default), mode of its root. */
int sb_root_plan_tmpfs(struct sb_root_plan *p, const char *path, unsigned long long size,
		       unsigned mode, const char *why);
int sb_root_plan_proc(struct sb_root_plan *p, const char *path, const char *why);
int sb_root_plan_symlink(struct sb_root_plan *p, const char *path, const char *target,
			 const char *why);
/* A file of the new root with this content (copied). */
int sb_root_plan_file(struct sb_root_plan *p, const char *path, const char *content, unsigned mode,
		      const char *why);
/* Replaces the content of a file entry (e.g. /etc/hosts once names are
 * pinned); -ENOENT when the plan has no such file. */
int sb_root_plan_set_file(struct sb_root_plan *p, const char *path, const char *content);
/* ignore=: a placeholder over path, inside a tree the plan binds. */
int sb_root_plan_hide(struct sb_root_plan *p, const char *path, bool is_dir, const char *why);
/* The program's working directory: made to exist (an empty directory when no
 * bind shows it), with the symbolic links leading to it. */
int sb_root_plan_cwd(struct sb_root_plan *p, const char *path);
/* Sorts, and drops what a bind above already shows (the same right, or the
 * host's own directories and links). 0 or -ENOMEM. */
int sb_root_plan_finish(struct sb_root_plan *p);
void sb_root_plan_done(struct sb_root_plan *p);

/* Builds the tree over the current root, mounts the fresh /proc (the caller
 * must be in the PID namespace it shows), pivots into it, detaches the host's
 * root, makes the new root read-only and enters the working directory. Before
 * the pivot every step can fail without harm (the mount namespace is the
 * caller's own); after it the host's tree is gone for this namespace. 0, or
 * -errno with *reterr naming the path. */
int sb_root_build(const struct sb_root_plan *p, char **reterr);

int sb_root_explain(const struct sb_root_plan *p, struct sb_buf *out);
