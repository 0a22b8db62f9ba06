/* SPDX-License-Identifier: MIT */
/* The sandbox's root: a plan of mounts built by lookups, then built over the
 * caller's root with the mount API (open_tree, fsmount, move_mount,
 * mount_setattr), pivoted into, the host's tree detached (new-root.h). */
#include "new-root.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* How many symbolic links a path may go through (the kernel's own limit). */
#define SB_MAX_LINKS 40

/* Placeholders for ignore=: created in the new root while it is built, bound
 * over the hidden paths, then unlinked. Mode 0: nobody without
 * CAP_DAC_OVERRIDE may read, list or enter them, and the program has none. */
#define PLACEHOLDER_DIR	 ".python-sb-hidden-dir"
#define PLACEHOLDER_FILE ".python-sb-hidden-file"

/* ------------------------------------------------------------------------ */
/* The plan */

static int find(const struct sb_root_plan *p, const char *path)
{
	size_t at = sb_str_index_find(&p->index, path);

	return at == SIZE_MAX ? -1 : (int)at;
}

/* The entry at path or at its nearest ancestor among those indexed for
 * which wanted() holds (NULL when none): one lookup per level of path, not
 * a walk over the plan, which may hold thousands of entries (every module
 * beside the script under python-import=*). */
static const struct sb_root_entry *nearest_at_or_above(const struct sb_root_plan *p,
						       const char *path,
						       bool (*wanted)(enum sb_root_kind))
{
	char cur[PATH_MAX];

	if (strlen(path) >= sizeof(cur) || path[0] != '/')
		return NULL;
	strcpy(cur, path);
	for (;;) {
		char *slash;
		int i = find(p, cur);

		if (i >= 0 && wanted(p->entries[i].kind))
			return &p->entries[i];
		if (streq(cur, "/"))
			return NULL;
		slash = strrchr(cur, '/');
		slash[slash == cur ? 1 : 0] = '\0';
	}
}

/* Which entry wins when two land on one path: a bind of the host's own tree
 * over everything (an expose rule says what is there), a directory of ours
 * under everything. */
static int priority(enum sb_root_kind k)
{
	return k == SB_ROOT_BIND ? 2 : k == SB_ROOT_DIR ? 0 : 1;
}

static void entry_done(struct sb_root_entry *e)
{
	free(e->path);
	free(e->text);
	free(e->why);
}

/* Adds (a copy of) e, or merges it with the entry already at its path. */
static int add_entry(struct sb_root_plan *p, const struct sb_root_entry *e)
{
	struct sb_root_entry *entries, copy = *e;
	int i = find(p, e->path);

	if (i >= 0) {
		struct sb_root_entry *old = &p->entries[i];

		if (old->kind == SB_ROOT_BIND && e->kind == SB_ROOT_BIND) {
			/* Granted twice: the widest right, required if either is. */
			old->writable = old->writable || e->writable;
			old->optional = old->optional && e->optional;
			old->device = old->device || e->device;
			return 0;
		}
		if (priority(e->kind) <= priority(old->kind))
			return 0;
	}
	copy.path = strdup(e->path);
	copy.text = e->text ? strdup(e->text) : NULL;
	copy.why = strdup(e->why ? e->why : "");
	if (!copy.path || (e->text && !copy.text) || !copy.why) {
		entry_done(&copy);
		return -ENOMEM;
	}
	if (i >= 0) {
		/* The same path: the indexed string stays. */
		char *indexed = p->entries[i].path;

		p->entries[i].path = copy.path;
		copy.path = indexed;
		entry_done(&p->entries[i]);
		p->entries[i] = copy;
		return 0;
	}
	entries = reallocarray(p->entries, p->n + 1, sizeof(*entries));
	if (!entries || sb_str_index_add(&p->index, copy.path, p->n) < 0) {
		if (entries)
			p->entries = entries;
		entry_done(&copy);
		return -ENOMEM;
	}
	p->entries = entries;
	p->entries[p->n++] = copy;
	return 0;
}

/* An empty directory for every ancestor of path that has no entry yet;
 * sb_root_plan_finish() drops those a bind shows anyway. */
static int add_parents(struct sb_root_plan *p, const char *path)
{
	_cleanup_free_ char *cur = strdup(path);
	int r = 0;

	if (!cur)
		return -ENOMEM;
	for (char *slash = strchr(cur + 1, '/'); r >= 0 && slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (find(p, cur) < 0)
			r = add_entry(p, &(struct sb_root_entry){.path = cur,
								 .kind = SB_ROOT_DIR,
								 .mode = 0755,
								 .why = (char *)"path"});
		*slash = '/';
	}
	return r;
}

/* The bind nearest above path, or path's own (NULL when none). */
static bool is_bind(enum sb_root_kind k)
{
	return k == SB_ROOT_BIND;
}

static const struct sb_root_entry *bind_over(const struct sb_root_plan *p, const char *path)
{
	return nearest_at_or_above(p, path, is_bind);
}

/* Makes path lead where it leads on the host: each symbolic link on the way
 * becomes the same link in the new root, and the walk goes on at its target.
 * The walk stops inside a bind, whose content is the host's own. */
static int add_links(struct sb_root_plan *p, const char *path, unsigned depth)
{
	_cleanup_free_ char *cur = strdup(path);
	int r;

	if (!cur)
		return -ENOMEM;
	if (depth > SB_MAX_LINKS)
		return 0; /* the host's kernel would refuse it too (ELOOP) */
	for (char *slash = cur; slash;) {
		char *next = strchr(slash + 1, '/');
		char target[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (next)
			*next = '\0';
		if (bind_over(p, cur))
			return 0;
		if (lstat(cur, &st) < 0)
			return 0; /* missing: it will be missing inside too */
		if (S_ISLNK(st.st_mode)) {
			_cleanup_free_ char *dir = NULL, *joined = NULL, *norm = NULL;

			n = readlink(cur, target, sizeof(target) - 1);
			if (n < 0)
				return 0;
			target[n] = '\0';
			r = add_parents(p, cur);
			if (r >= 0)
				r = add_entry(p, &(struct sb_root_entry){.path = cur,
									 .kind = SB_ROOT_SYMLINK,
									 .text = target,
									 .why = (char *)"link"});
			if (r < 0)
				return r;
			dir = sb_path_dirname(cur);
			if (!dir)
				return -ENOMEM;
			if (asprintf(&joined, "%s/%s%s%s", target[0] == '/' ? "" : dir, target,
				     next ? "/" : "", next ? next + 1 : "") < 0)
				return -ENOMEM;
			norm = sb_path_normalize(joined);
			if (!norm)
				return -ENOMEM;
			return add_links(p, norm, depth + 1);
		}
		if (next)
			*next = '/';
		slash = next;
	}
	return 0;
}

/* realpath() and stat() of norm (absolute, normalised) at once, reusing what
 * the earlier calls found: a directory already seen to hold no link needs no
 * system call again, and the interpreter's many paths share their prefixes.
 * 0 with *ret (malloc'ed) and *st, or -errno. */
static int resolve(struct sb_root_plan *p, const char *norm, char **ret, struct stat *st)
{
	_cleanup_free_ char *cur = strdup(norm);

	if (!cur)
		return -ENOMEM;
	for (char *slash = strchr(cur + 1, '/');; slash = strchr(slash + 1, '/')) {
		if (slash)
			*slash = '\0';
		if (sb_strv_contains(p->canonical, cur)) {
			st->st_mode = S_IFDIR;
		} else {
			if (lstat(cur, st) < 0)
				return -errno;
			if (S_ISLNK(st->st_mode)) {
				/* A link on the way: the kernel's answer. */
				char *real = realpath(norm, NULL);

				if (!real)
					return -errno;
				if (stat(real, st) < 0) {
					free(real);
					return -errno;
				}
				*ret = real;
				return 0;
			}
			if (S_ISDIR(st->st_mode) && sb_strv_push(&p->canonical, cur) < 0)
				return -ENOMEM;
		}
		if (!slash)
			break;
		*slash = '/';
	}
	*ret = TAKE_PTR(cur);
	return 0;
}

static int plan_bind(struct sb_root_plan *p, const char *path, bool writable, bool optional,
		     bool device, const char *why)
{
	_cleanup_free_ char *norm = NULL, *real = NULL;
	struct stat st;
	int r;

	if (path[0] != '/') {
		/* Relative to the working directory, which is the program's too. */
		char cwd[PATH_MAX];
		_cleanup_free_ char *abs = NULL;

		if (!getcwd(cwd, sizeof(cwd)))
			return optional ? 0 : -errno;
		abs = sb_path_join(cwd, path);
		return abs ? plan_bind(p, abs, writable, optional, device, why) : -ENOMEM;
	}
	norm = sb_path_normalize(path);
	if (!norm)
		return -ENOMEM;
	if (streq(norm, "/")) {
		/* The host's root as a whole cannot lie over the new one: its
		 * entries, one by one. */
		DIR *d = opendir("/");

		if (!d)
			return optional ? 0 : -errno;
		r = 0;
		for (struct dirent *e; r >= 0 && (e = readdir(d));) {
			_cleanup_free_ char *child = NULL;

			if (streq(e->d_name, ".") || streq(e->d_name, ".."))
				continue;
			child = sb_path_join("/", e->d_name);
			r = child ? plan_bind(p, child, writable, true, device, why) : -ENOMEM;
		}
		closedir(d);
		return r;
	}
	/* ".." after a link is the link's parent, not the lexical one. */
	r = strstr(path, "/..") ? -EAGAIN : resolve(p, norm, &real, &st);
	if (r == -EAGAIN) {
		real = realpath(path, NULL);
		r = real && stat(real, &st) == 0 ? 0 : -errno;
	}
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		if (optional)
			return 0;
		/* Kept: building the root will fail on it, naming it. */
		free(real);
		real = strdup(norm);
		if (!real)
			return -ENOMEM;
		st.st_mode = S_IFDIR;
	}
	if (streq(real, "/"))
		return plan_bind(p, "/", writable, optional, device, why);
	r = add_parents(p, real);
	if (r >= 0)
		r = add_entry(p, &(struct sb_root_entry){.path = real,
							 .kind = SB_ROOT_BIND,
							 .writable = writable,
							 .is_dir = S_ISDIR(st.st_mode),
							 .device = device,
							 .optional = optional,
							 .why = (char *)why});
	if (r >= 0 && !streq(norm, real))
		r = add_links(p, norm, 0);
	return r;
}

int sb_root_plan_bind(struct sb_root_plan *p, const char *path, bool writable, bool optional,
		      const char *why)
{
	return plan_bind(p, path, writable, optional, false, why);
}

int sb_root_plan_device(struct sb_root_plan *p, const char *path, const char *why)
{
	return plan_bind(p, path, true, true, true, why);
}

static int plan_at(struct sb_root_plan *p, const struct sb_root_entry *e)
{
	int r = add_parents(p, e->path);

	return r < 0 ? r : add_entry(p, e);
}

int sb_root_plan_tmpfs(struct sb_root_plan *p, const char *path, unsigned long long size,
		       unsigned mode, const char *why)
{
	return plan_at(p, &(struct sb_root_entry){.path = (char *)path,
						  .kind = SB_ROOT_TMPFS,
						  .size = size,
						  .mode = mode,
						  .is_dir = true,
						  .why = (char *)why});
}

int sb_root_plan_proc(struct sb_root_plan *p, const char *path, const char *why)
{
	return plan_at(
	    p, &(struct sb_root_entry){
		   .path = (char *)path, .kind = SB_ROOT_PROC, .is_dir = true, .why = (char *)why});
}

int sb_root_plan_symlink(struct sb_root_plan *p, const char *path, const char *target,
			 const char *why)
{
	return plan_at(p, &(struct sb_root_entry){.path = (char *)path,
						  .kind = SB_ROOT_SYMLINK,
						  .text = (char *)target,
						  .why = (char *)why});
}

int sb_root_plan_file(struct sb_root_plan *p, const char *path, const char *content, unsigned mode,
		      const char *why)
{
	return plan_at(p, &(struct sb_root_entry){.path = (char *)path,
						  .kind = SB_ROOT_FILE,
						  .text = (char *)content,
						  .mode = mode,
						  .why = (char *)why});
}

int sb_root_plan_set_file(struct sb_root_plan *p, const char *path, const char *content)
{
	int i = find(p, path);
	char *copy;

	if (i < 0 || p->entries[i].kind != SB_ROOT_FILE)
		return -ENOENT;
	copy = strdup(content);
	if (!copy)
		return -ENOMEM;
	free(p->entries[i].text);
	p->entries[i].text = copy;
	return 0;
}

int sb_root_plan_hide(struct sb_root_plan *p, const char *path, bool is_dir, const char *why)
{
	return add_entry(p, &(struct sb_root_entry){.path = (char *)path,
						    .kind = SB_ROOT_HIDDEN,
						    .is_dir = is_dir,
						    .why = (char *)why});
}

int sb_root_plan_cwd(struct sb_root_plan *p, const char *path)
{
	_cleanup_free_ char *real = realpath(path, NULL);
	const char *dir = real ? real : path;
	int r;

	if (dir[0] != '/')
		return -EINVAL;
	free(p->cwd);
	p->cwd = strdup(dir);
	if (!p->cwd)
		return -ENOMEM;
	if (streq(dir, "/"))
		return 0;
	r = plan_at(p, &(struct sb_root_entry){.path = (char *)dir,
					       .kind = SB_ROOT_DIR,
					       .mode = 0755,
					       .why = (char *)"working directory"});
	if (r >= 0 && !streq(dir, path) && path[0] == '/')
		r = add_links(p, path, 0);
	return r;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct sb_root_entry *)a)->path,
		      ((const struct sb_root_entry *)b)->path);
}

static bool is_mount(enum sb_root_kind k)
{
	return k == SB_ROOT_BIND || k == SB_ROOT_TMPFS || k == SB_ROOT_PROC || k == SB_ROOT_HIDDEN;
}

int sb_root_plan_finish(struct sb_root_plan *p)
{
	size_t kept = 0;
	int r = 0;

	if (p->n)
		qsort(p->entries, p->n, sizeof(*p->entries), by_path);
	/* Sorting moved the entries: the index is rebuilt over those kept. */
	sb_str_index_done(&p->index);
	for (size_t i = 0; i < p->n; i++) {
		struct sb_root_entry *e = &p->entries[i];
		/* The nearest mount above e among the entries kept: parents sort
		 * first, so it is already decided; e's own path, unique in the
		 * plan, is not indexed yet. */
		const struct sb_root_entry *m = nearest_at_or_above(p, e->path, is_mount);
		bool drop = false;

		if (m && (m->kind == SB_ROOT_PROC || m->kind == SB_ROOT_HIDDEN))
			drop = true;
		else if (m && m->kind == SB_ROOT_BIND) {
			if (e->kind == SB_ROOT_DIR || e->kind == SB_ROOT_SYMLINK)
				drop = true; /* the host's tree has it */
			else if (e->kind == SB_ROOT_BIND && e->writable == m->writable &&
				 e->device == m->device)
				drop = true; /* already shown with that right */
			else if (e->kind == SB_ROOT_FILE) {
				drop = true;
				if (r >= 0)
					r = sb_strv_pushf(&p->notes,
							  "%s: the host's file shows (%s binds %s)",
							  e->path, m->why, m->path);
			}
		}
		if (drop) {
			entry_done(e);
			continue;
		}
		p->entries[kept] = *e;
		/* Without the index the next entries' mounts would go unseen:
		 * the caller fails on r. */
		if (sb_str_index_add(&p->index, p->entries[kept].path, kept) < 0)
			r = -ENOMEM;
		kept++;
	}
	p->n = kept;
	return r;
}

void sb_root_plan_done(struct sb_root_plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		entry_done(&p->entries[i]);
	free(p->entries);
	sb_str_index_done(&p->index);
	free(p->cwd);
	sb_strv_free(p->notes);
	sb_strv_free(p->canonical);
	*p = (struct sb_root_plan){0};
}

/* ------------------------------------------------------------------------ */
/* Building it */

static int sys_openat2(int dirfd, const char *path, int flags, unsigned long long resolve)
{
	struct open_how how = {.flags = (unsigned long long)flags, .resolve = resolve};

	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* The directory that holds path, opened inside the new root (its absolute
 * links resolve there, never on the host); *ret_name points into path. */
static int open_parent(int root, const char *path, const char **ret_name)
{
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *rel = NULL;

	*ret_name = slash + 1;
	if (slash == path)
		return fcntl(root, F_DUPFD_CLOEXEC, 3);
	rel = strndup(path + 1, (size_t)(slash - path - 1));
	if (!rel) {
		errno = ENOMEM;
		return -1;
	}
	return sys_openat2(root, rel, O_PATH | O_DIRECTORY | O_CLOEXEC,
			   RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
}

/* The mount point, created in our tmpfs (found as it is in a bind), and the
 * tree attached there. name is one component of a normalised path (never "."
 * or ".."), looked up in parent without following a link it may be. */
static int attach(int tree, int parent, const char *name, bool is_dir)
{
	int r = is_dir ? mkdirat(parent, name, 0755) : mknodat(parent, name, S_IFREG | 0644, 0);

	if (r < 0 && errno != EEXIST && errno != EROFS && errno != EACCES)
		return -errno;
	if (move_mount(tree, "", parent, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

static int set_attr(int tree, bool recursive, unsigned long long attr)
{
	struct mount_attr a = {.attr_set = attr};

	return mount_setattr(tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &a,
			     sizeof(a)) < 0
		   ? -errno
		   : 0;
}

static int build_bind(const struct sb_root_entry *e, int parent, const char *name)
{
	_cleanup_close_ int tree = -1;
	unsigned long long attr = MOUNT_ATTR_NOSUID;
	int r;

	tree = open_tree(AT_FDCWD, e->path,
			 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW |
			     (e->is_dir ? AT_RECURSIVE : 0));
	if (tree < 0)
		return (errno == ENOENT && e->optional) ? 0 : -errno;
	if (!e->device)
		attr |= MOUNT_ATTR_NODEV;
	else
		attr |= MOUNT_ATTR_NOEXEC;
	if (!e->writable && !e->device)
		attr |= MOUNT_ATTR_RDONLY;
	r = set_attr(tree, e->is_dir, attr);
	if (r < 0)
		return r;
	return attach(tree, parent, name, e->is_dir);
}

static int fs_create(const char *type, const char *const *options)
{
	_cleanup_close_ int fs = fsopen(type, FSOPEN_CLOEXEC);

	if (fs < 0)
		return -1;
	for (; options && options[0]; options += 2)
		if (fsconfig(fs, FSCONFIG_SET_STRING, options[0], options[1], 0) < 0 &&
		    !(streq(options[0], "subset") && errno == EINVAL))
			return -1; /* subset=pid: Linux 5.8; a full /proc otherwise */
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -1;
	return fsmount(fs, FSMOUNT_CLOEXEC, 0);
}

static int build_fs(const struct sb_root_entry *e, int parent, const char *name)
{
	char size[32], mode[16];
	const char *tmpfs_options[] = {"mode", mode, e->size ? "size" : NULL, size, NULL};
	/* Only the processes of the sandbox's PID namespace, and no
	 * system-wide file (/proc/sys, kcore, sysrq-trigger...). */
	const char *proc_options[] = {"subset", "pid", NULL};
	_cleanup_close_ int tree = -1;
	int r;

	snprintf(size, sizeof(size), "%llu", e->size);
	snprintf(mode, sizeof(mode), "%o", e->mode);
	if (e->kind == SB_ROOT_PROC)
		tree = fs_create("proc", proc_options);
	else
		tree = fs_create("tmpfs", tmpfs_options);
	if (tree < 0)
		return -errno;
	r = set_attr(tree, false,
		     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
			 (e->kind == SB_ROOT_PROC ? MOUNT_ATTR_NOEXEC : 0));
	if (r < 0)
		return r;
	return attach(tree, parent, name, true);
}

static int build_hidden(const struct sb_root_entry *e, int root, int parent, const char *name)
{
	_cleanup_close_ int tree = open_tree(root, e->is_dir ? PLACEHOLDER_DIR : PLACEHOLDER_FILE,
					     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	int r;

	if (tree < 0)
		return -errno;
	r = set_attr(tree, false,
		     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (r < 0)
		return r;
	return attach(tree, parent, name, e->is_dir);
}

static int write_all(int fd, const char *text)
{
	size_t len = text ? strlen(text) : 0;

	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

/* The directory of the previous entry: siblings come one after another. */
struct parent_cache {
	char *path;
	int fd;
};

static void parent_cache_done(struct parent_cache *c)
{
	free(c->path);
	if (c->fd >= 0)
		close(c->fd);
	*c = (struct parent_cache){.fd = -1};
}

static int build_entry(const struct sb_root_entry *e, int root, struct parent_cache *cache)
{
	const char *slash = strrchr(e->path, '/');
	size_t len = (size_t)(slash - e->path);
	_cleanup_close_ int fd = -1;
	const char *name = slash + 1;
	int parent;

	if (!cache->path || strlen(cache->path) != len || strncmp(cache->path, e->path, len) != 0) {
		parent_cache_done(cache);
		cache->fd = open_parent(root, e->path, &name);
		if (cache->fd < 0)
			return (errno == ENOENT && e->kind == SB_ROOT_BIND && e->optional) ? 0
											   : -errno;
		cache->path = strndup(e->path, len);
		if (!cache->path)
			return -ENOMEM;
	}
	parent = cache->fd;
	switch (e->kind) {
	case SB_ROOT_DIR:
		if (mkdirat(parent, name, e->mode ? e->mode : 0755) < 0 && errno != EEXIST)
			return -errno;
		return 0;
	case SB_ROOT_SYMLINK:
		if (symlinkat(e->text, parent, name) < 0 && errno != EEXIST)
			return -errno;
		return 0;
	case SB_ROOT_FILE:
		fd = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    e->mode ? e->mode : 0644);
		if (fd < 0)
			return -errno;
		return write_all(fd, e->text);
	case SB_ROOT_BIND:
		return build_bind(e, parent, name);
	case SB_ROOT_TMPFS:
	case SB_ROOT_PROC:
		return build_fs(e, parent, name);
	case SB_ROOT_HIDDEN:
		return build_hidden(e, root, parent, name);
	}
	return -EINVAL;
}

static const char *what(enum sb_root_kind k)
{
	static const char *const names[] = {
	    [SB_ROOT_DIR] = "create the directory",
	    [SB_ROOT_SYMLINK] = "create the link",
	    [SB_ROOT_BIND] = "bind",
	    [SB_ROOT_TMPFS] = "mount a tmpfs on",
	    [SB_ROOT_PROC] = "mount a fresh /proc on",
	    [SB_ROOT_FILE] = "write",
	    [SB_ROOT_HIDDEN] = "hide",
	};

	return names[k];
}

int sb_root_build(const struct sb_root_plan *p, char **reterr)
{
	const char *root_options[] = {"mode", "0755", "size", "4m", NULL};
	struct parent_cache cache = {.fd = -1};
	_cleanup_close_ int root = -1, old_root = -1;
	bool hidden = false;
	int r;

	/* Nothing of ours may propagate to the host's mounts (in a mount
	 * namespace of a new user namespace it could not anyway: defence in
	 * depth), and pivot_root refuses shared mounts. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return sb_error(reterr, -errno, "cannot make the mounts private: %s",
				strerror(errno));
	old_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (old_root < 0)
		return sb_error(reterr, -errno, "cannot open /: %s", strerror(errno));
	root = fs_create("tmpfs", root_options);
	if (root < 0)
		return sb_error(
		    reterr, -errno, "cannot create the new root (a tmpfs): %s%s", strerror(errno),
		    errno == ENOSYS ? " (the mount API needs Linux 5.12 or newer)" : "");
	/* Over the host's root: lookups of absolute paths still start from the
	 * host's (the process's root is not the mount on top of it), so the
	 * host's paths stay reachable as bind sources until the pivot. */
	if (move_mount(root, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return sb_error(reterr, -errno, "cannot attach the new root: %s", strerror(errno));
	for (size_t i = 0; i < p->n; i++)
		hidden = hidden || p->entries[i].kind == SB_ROOT_HIDDEN;
	if (hidden) {
		_cleanup_close_ int f = -1;

		if (mkdirat(root, PLACEHOLDER_DIR, 0) < 0)
			return sb_error(reterr, -errno, "cannot create the ignore= placeholder: %s",
					strerror(errno));
		f = openat(root, PLACEHOLDER_FILE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
		if (f < 0)
			return sb_error(reterr, -errno, "cannot create the ignore= placeholder: %s",
					strerror(errno));
	}
	for (size_t i = 0; i < p->n; i++) {
		r = build_entry(&p->entries[i], root, &cache);
		if (r < 0) {
			parent_cache_done(&cache);
			return sb_error(reterr, r, "cannot %s %s in the new root: %s",
					what(p->entries[i].kind), p->entries[i].path, strerror(-r));
		}
	}
	parent_cache_done(&cache);
	if (hidden && (unlinkat(root, PLACEHOLDER_FILE, 0) < 0 ||
		       unlinkat(root, PLACEHOLDER_DIR, AT_REMOVEDIR) < 0))
		return sb_error(reterr, -errno, "cannot remove the ignore= placeholders: %s",
				strerror(errno));

	/* runc's pivot: the new root becomes "/", the old one lands on top of
	 * it, and is detached from there. */
	if (fchdir(root) < 0 || syscall(SYS_pivot_root, ".", ".") < 0)
		return sb_error(reterr, -errno, "cannot pivot into the new root: %s",
				strerror(errno));
	if (fchdir(old_root) < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return sb_error(reterr, -errno, "cannot detach the host's root: %s",
				strerror(errno));
	r = set_attr(root, false, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (r < 0)
		return sb_error(reterr, r, "cannot make the new root read-only: %s", strerror(-r));
	if (p->cwd && chdir(p->cwd) < 0)
		return sb_error(reterr, -errno, "cannot enter the working directory %s: %s", p->cwd,
				strerror(errno));
	return 0;
}

/* ------------------------------------------------------------------------ */

int sb_root_explain(const struct sb_root_plan *p, struct sb_buf *out)
{
	int r = sb_buf_puts(out, "#   new root: a read-only tmpfs holding only these (every other "
				 "path does not exist):\n");

	for (size_t i = 0; r >= 0 && i < p->n; i++) {
		const struct sb_root_entry *e = &p->entries[i];

		switch (e->kind) {
		case SB_ROOT_DIR:
			continue; /* implied by what lies under it */
		case SB_ROOT_SYMLINK:
			r = sb_buf_printf(out, "#     link %-36s -> %s\n", e->path, e->text);
			break;
		case SB_ROOT_BIND:
			r = sb_buf_printf(out, "#     %-4s %-36s (%s)\n",
					  e->device	? "dev"
					  : e->writable ? "rw"
							: "ro",
					  e->path, e->why);
			break;
		case SB_ROOT_TMPFS:
			r = sb_buf_printf(out, "#     tmpfs %-35s (%s, private", e->path, e->why);
			if (r >= 0 && e->size)
				r = sb_buf_printf(out, ", %llu MiB", e->size >> 20);
			if (r >= 0)
				r = sb_buf_puts(out, ")\n");
			break;
		case SB_ROOT_PROC:
			r = sb_buf_printf(out, "#     proc %-36s (%s)\n", e->path, e->why);
			break;
		case SB_ROOT_FILE:
			r = sb_buf_printf(out, "#     file %-36s (%s)\n", e->path, e->why);
			break;
		case SB_ROOT_HIDDEN:
			r = sb_buf_printf(out, "#     hide %-36s (%s: access refused)\n", e->path,
					  e->why);
			break;
		}
	}
	if (r >= 0 && p->cwd)
		r = sb_buf_printf(out, "#   working directory: %s\n", p->cwd);
	for (char **n = p->notes; r >= 0 && n && *n; n++)
		r = sb_buf_printf(out, "#   note: %s\n", *n);
	return r;
}
