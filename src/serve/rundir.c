/* SPDX-License-Identifier: MIT */
/* rundir.h. The names come from request.c, which allows only plain relative
 * components; files are still created with O_EXCL | O_NOFOLLOW below a
 * directory descriptor, so that nothing is written outside the run's
 * directory whatever the names. */
#include "rundir.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "util.h"

#define RUN_PREFIX     "run-"
#define MAX_NESTING    16
#define WORKDIR_PREFIX "python-sb-serve."
#define WORKDIR_RANDOM 6 /* mkdtemp()'s XXXXXX */
/* In a default work directory: held (flock) by the live service. */
#define LOCK_NAME "lock"

/* /dev/shm when it is the usual shared tmpfs: every run makes and removes a
 * directory and files, which costs a disk file system (ext4's inode
 * allocator) several times what it costs a tmpfs. */
static const char *default_parent(void)
{
	struct statfs fs;
	struct stat st;

	if (statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC &&
	    stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 01777) == 01777 &&
	    access("/dev/shm", W_OK | X_OK) == 0)
		return "/dev/shm";
	return "/tmp";
}

/* The lock of a default work directory, taken before it has its name: a
 * "lock" that exists is held by a live service, or by none (a service that
 * was killed), never free while its service starts. */
static int lock_workdir(const char *path, int *ret_fd)
{
	_cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int fd = -1;

	if (dfd < 0)
		return -errno;
	fd = openat(dfd, LOCK_NAME "~", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || renameat(dfd, LOCK_NAME "~", dfd, LOCK_NAME) < 0)
		return -errno;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* What the service itself puts in a work directory: its runs' directories,
 * the built-in profile, the lock. */
static bool ours(const char *name)
{
	return startswith(name, RUN_PREFIX) || streq(name, "default.py-sandboxes") ||
	       streq(name, LOCK_NAME) || streq(name, LOCK_NAME "~");
}

/* A --workdir is emptied at start and at exit: it must be one that holds
 * nothing but what a service left there (an empty or new directory, or the
 * work directory of a service that stopped or was killed), never a
 * directory of other files that a mistyped --workdir (., ~, /tmp) would
 * destroy; and no other live service may be using it, whose runs in flight
 * the emptying would remove. The lock is held for the service's life. */
static int claim_workdir(const char *dir, const char *path, int *ret_lock_fd, char **reterr)
{
	_cleanup_close_ int fd = -1;
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	int r = 0;

	if (dfd < 0)
		return sb_error(reterr, -errno, "--workdir %s: %s", dir, strerror(errno));
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		close(dfd);
		return sb_error(reterr, r, "--workdir %s: %s", dir, strerror(-r));
	}
	for (struct dirent *e; r == 0 && (e = readdir(d));)
		if (!streq(e->d_name, ".") && !streq(e->d_name, "..") && !ours(e->d_name))
			r = sb_error(reterr, -ENOTEMPTY,
				     "--workdir %s holds '%s', which python-sb serve did not make: "
				     "the service empties its work directory at start and at exit, "
				     "so it must be an empty or new directory of its own",
				     dir, e->d_name);
	if (r == 0) {
		fd = openat(dirfd(d), LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			r = sb_error(reterr, -errno, "--workdir %s: cannot create its lock: %s",
				     dir, strerror(errno));
		else if (flock(fd, LOCK_EX | LOCK_NB) < 0)
			r = sb_error(
			    reterr, errno == EWOULDBLOCK ? -EBUSY : -errno,
			    "--workdir %s is the work directory of another python-sb serve "
			    "that is running: give each service a directory of its own",
			    dir);
	}
	closedir(d);
	if (r < 0)
		return r;
	*ret_lock_fd = TAKE_FD(fd);
	return 0;
}

int sb_workdir_create(const char *dir, char **ret_path, int *ret_lock_fd, char **reterr)
{
	char *path;

	*ret_lock_fd = -1;
	if (!dir) {
		const char *parent = default_parent();
		char tmpl[64];
		int r;

		snprintf(tmpl, sizeof(tmpl), "%s/" WORKDIR_PREFIX "XXXXXX", parent);
		if (!mkdtemp(tmpl))
			return sb_error(reterr, -errno, "cannot create a work directory in %s: %s",
					parent, strerror(errno));
		r = lock_workdir(tmpl, ret_lock_fd);
		if (r < 0) {
			sb_workdir_clean(tmpl, true);
			return sb_error(reterr, r, "cannot lock the work directory %s: %s", tmpl,
					strerror(-r));
		}
		path = strdup(tmpl);
	} else {
		int r;

		if (mkdir(dir, 0711) < 0 && errno != EEXIST)
			return sb_error(reterr, -errno, "--workdir %s: %s", dir, strerror(errno));
		path = realpath(dir, NULL);
		if (!path)
			return sb_error(reterr, -errno, "--workdir %s: %s", dir, strerror(errno));
		r = claim_workdir(dir, path, ret_lock_fd, reterr);
		if (r < 0) {
			free(path);
			return r;
		}
	}
	if (!path)
		return -ENOMEM;
	if (chmod(path, 0711) < 0) {
		int e = errno;

		free(path);
		return sb_error(reterr, -e, "cannot set the mode of the work directory: %s",
				strerror(e));
	}
	*ret_path = path;
	return 0;
}

/* Removes what is below dfd (not dfd itself), but the entry named keep
 * (NULL: none) directly below it. */
static int remove_below(int dfd, unsigned depth, const char *keep)
{
	DIR *d;
	int r = 0;

	if (depth > MAX_NESTING) {
		close(dfd);
		return -ELOOP;
	}
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	for (struct dirent *e; (e = readdir(d));) {
		if (streq(e->d_name, ".") || streq(e->d_name, "..") || streq_ptr(e->d_name, keep))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0)
			continue;
		if (errno == EISDIR || errno == EPERM) {
			int sub = openat(dirfd(d), e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int s = sub < 0 ? -errno : remove_below(sub, depth + 1, NULL);

			if (s >= 0 && unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) < 0)
				s = -errno;
			if (s < 0 && r == 0)
				r = s;
		} else if (errno != ENOENT && r == 0) {
			r = -errno;
		}
	}
	closedir(d);
	return r;
}

static int remove_tree(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int r;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	r = remove_below(fd, 0, NULL);
	if (r >= 0 && rmdir(path) < 0)
		r = -errno;
	return r;
}

int sb_workdir_clean(const char *path, bool remove_self)
{
	int fd;

	if (remove_self)
		return remove_tree(path);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return remove_below(fd, 0, NULL);
}

int sb_workdir_empty(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return remove_below(fd, 0, LOCK_NAME);
}

/* Who may read a run's directory: the run's user, and no other user of the
 * machine (a submitted program and its files are the client's). When the
 * service is root, the run's group (files stay root's: the run cannot change
 * them); otherwise the run is the service's own user. */
struct rundir_access {
	bool by_group;
	gid_t gid;
};

static int restrict_access(int fd, const struct rundir_access *a, mode_t owner_only,
			   mode_t group_read)
{
	if (a->by_group && fchown(fd, (uid_t)-1, a->gid) < 0)
		return -errno;
	return fchmod(fd, a->by_group ? group_read : owner_only) < 0 ? -errno : 0;
}

static int write_at(int dfd, const char *name, const char *data, size_t len,
		    const struct rundir_access *a)
{
	_cleanup_close_ int fd =
	    openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int r;

	if (fd < 0)
		return -errno;
	r = restrict_access(fd, a, 0600, 0640);
	if (r < 0)
		return r;
	while (len > 0) {
		ssize_t n = write(fd, data, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* name's directories below dfd, created as needed; the descriptor of the last
 * one (dfd itself, duplicated, for a plain name) and the last component. */
static int parent_of(int dfd, const char *name, const struct rundir_access *a, int *ret_fd,
		     const char **ret_base)
{
	_cleanup_free_ char *copy = strdup(name);
	char *slash, *seg;
	int cur;

	if (!copy)
		return -ENOMEM;
	cur = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return -errno;
	seg = copy;
	while ((slash = strchr(seg, '/'))) {
		int next;

		*slash = '\0';
		bool made = mkdirat(cur, seg, 0700) == 0;
		int e;

		if (!made && errno != EEXIST) {
			close(cur);
			return -errno;
		}
		next = openat(cur, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(cur);
		if (next < 0)
			return -errno;
		e = made ? restrict_access(next, a, 0700, 0750) : 0;
		if (e < 0) {
			close(next);
			return e;
		}
		cur = next;
		seg = slash + 1;
	}
	*ret_fd = cur;
	*ret_base = name + (seg - copy);
	return 0;
}

int sb_rundir_create(const char *workdir, const struct sb_run_spec *spec, bool by_group, gid_t gid,
		     char **ret_path)
{
	const struct rundir_access access = {.by_group = by_group, .gid = gid};
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int dfd = -1;
	int r;

	if (asprintf(&path, "%s/" RUN_PREFIX "XXXXXX", workdir) < 0) {
		path = NULL;
		return -ENOMEM;
	}
	if (!mkdtemp(path))
		return -errno;
	/* mkdtemp() made it 0700. */
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = dfd < 0 ? -errno : 0;
	if (r >= 0)
		r = restrict_access(dfd, &access, 0700, 0750);
	if (r >= 0)
		r = write_at(dfd, "main.py", spec->source, spec->source_len, &access);
	for (size_t i = 0; r >= 0 && i < spec->n_files; i++) {
		const char *base = NULL;
		int pfd = -1;

		r = parent_of(dfd, spec->files[i].name, &access, &pfd, &base);
		if (r < 0)
			break;
		r = write_at(pfd, base, spec->files[i].content, spec->files[i].len, &access);
		close(pfd);
	}
	if (r < 0) {
		remove_tree(path);
		return r;
	}
	*ret_path = TAKE_PTR(path);
	return 0;
}

int sb_rundir_remove(const char *path)
{
	return remove_tree(path);
}

/* One entry of a default parent: a directory of ours (not a link, this
 * user's, the name mkdtemp() gives) whose lock is free. */
static int remove_if_stale(int parent, const char *name)
{
	_cleanup_close_ int dfd = -1, lock = -1;
	struct stat st, lst;
	const char *rand = startswith(name, WORKDIR_PREFIX);
	int r;

	if (!rand || strlen(rand) != WORKDIR_RANDOM)
		return 0;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid())
		return 0;
	dfd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &lst) < 0 || lst.st_dev != st.st_dev || lst.st_ino != st.st_ino)
		return 0;
	/* No lock: a service of an older version, or one being created; both
	 * are left alone. */
	lock = openat(dfd, LOCK_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (lock < 0 || fstat(lock, &lst) < 0 || !S_ISREG(lst.st_mode) || lst.st_uid != geteuid())
		return 0;
	if (flock(lock, LOCK_EX | LOCK_NB) < 0)
		return 0; /* a live service's */
	r = remove_below(TAKE_FD(dfd), 0, NULL);
	if (r >= 0 && unlinkat(parent, name, AT_REMOVEDIR) < 0)
		r = -errno;
	return r < 0 ? r : 1;
}

int sb_workdir_remove_stale(unsigned *ret_removed)
{
	static const char *const parents[] = {"/dev/shm", "/tmp"};
	int r = 0;

	*ret_removed = 0;
	for (size_t i = 0; i < ELEMENTSOF(parents); i++) {
		int fd = open(parents[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *d = fd < 0 ? NULL : fdopendir(fd);

		if (!d) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		for (struct dirent *e; (e = readdir(d));) {
			int s;

			if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
				continue;
			s = remove_if_stale(dirfd(d), e->d_name);
			if (s > 0)
				(*ret_removed)++;
			else if (s < 0 && r == 0)
				r = s;
		}
		closedir(d);
	}
	return r;
}
