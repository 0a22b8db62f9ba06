/* SPDX-License-Identifier: MIT */
/* rundir.h. The names come from request.c, which allows only plain relative
 * components; files are still created with O_EXCL | O_NOFOLLOW below a
 * directory descriptor, so that nothing is written outside the run's
 * directory whatever the names. */
#include "rundir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "util.h"

#define RUN_PREFIX  "run-"
#define MAX_NESTING 16

int sb_workdir_create(const char *dir, char **ret_path, char **reterr)
{
	char *path;

	if (!dir) {
		char tmpl[] = "/tmp/python-sb-serve.XXXXXX";

		if (!mkdtemp(tmpl))
			return sb_error(reterr, -errno,
					"cannot create a work directory in /tmp: %s",
					strerror(errno));
		path = strdup(tmpl);
	} else {
		if (mkdir(dir, 0711) < 0 && errno != EEXIST)
			return sb_error(reterr, -errno, "--workdir %s: %s", dir, strerror(errno));
		path = realpath(dir, NULL);
		if (!path)
			return sb_error(reterr, -errno, "--workdir %s: %s", dir, strerror(errno));
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

/* Removes what is below dfd (not dfd itself). */
static int remove_below(int dfd, unsigned depth)
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
		if (streq(e->d_name, ".") || streq(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0)
			continue;
		if (errno == EISDIR || errno == EPERM) {
			int sub = openat(dirfd(d), e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int s = sub < 0 ? -errno : remove_below(sub, depth + 1);

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
	r = remove_below(fd, 0);
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
	return remove_below(fd, 0);
}

static int write_at(int dfd, const char *name, const char *data, size_t len)
{
	_cleanup_close_ int fd =
	    openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

	if (fd < 0)
		return -errno;
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
static int parent_of(int dfd, const char *name, int *ret_fd, const char **ret_base)
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
		if (mkdirat(cur, seg, 0755) < 0 && errno != EEXIST) {
			close(cur);
			return -errno;
		}
		next = openat(cur, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(cur);
		if (next < 0)
			return -errno;
		cur = next;
		seg = slash + 1;
	}
	*ret_fd = cur;
	*ret_base = name + (seg - copy);
	return 0;
}

int sb_rundir_create(const char *workdir, const struct sb_run_spec *spec, char **ret_path)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int dfd = -1;
	int r;

	if (asprintf(&path, "%s/" RUN_PREFIX "XXXXXX", workdir) < 0) {
		path = NULL;
		return -ENOMEM;
	}
	if (!mkdtemp(path))
		return -errno;
	r = chmod(path, 0755) < 0 ? -errno : 0;
	if (r >= 0) {
		dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r = dfd < 0 ? -errno : 0;
	}
	if (r >= 0)
		r = write_at(dfd, "main.py", spec->source, spec->source_len);
	for (size_t i = 0; r >= 0 && i < spec->n_files; i++) {
		const char *base = NULL;
		int pfd = -1;

		r = parent_of(dfd, spec->files[i].name, &pfd, &base);
		if (r < 0)
			break;
		r = write_at(pfd, base, spec->files[i].content, spec->files[i].len);
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
