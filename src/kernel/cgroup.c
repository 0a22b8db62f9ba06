/* SPDX-License-Identifier: MIT */
/* A cgroup v2 memory limit for the program's tree (cgroup.h).
 *
 * python-sb never changes its own cgroup's configuration: it only creates a
 * child where the memory controller is already delegated to children (a
 * systemd service with Delegate=, a user's delegated slice, a container
 * runtime's sub-hierarchy). Enabling the controller itself would mean moving
 * python-sb out of its cgroup first ("no internal processes"), changing the
 * caller's layout behind its back. The timeout supervisor, which stays
 * outside the sandbox, moves the program into the cgroup before the program
 * runs, and removes the cgroup after the whole tree is reaped. */
#include "cgroup.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

/* A small file of /proc or cgroupfs, whole (plain read(): no stdio buffer,
 * no fstat; these reads are on every start with limit-memory). */
static char *read_text(const char *root, const char *path)
{
	_cleanup_free_ char *full = sb_path_join(root, path);
	_cleanup_close_ int fd = full ? open(full, O_RDONLY | O_CLOEXEC) : -1;
	struct sb_buf b = {0};
	char chunk[4096];
	ssize_t n;

	if (fd < 0)
		return NULL;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		if (sb_buf_putn(&b, chunk, (size_t)n) < 0 || b.len > (1u << 20)) {
			sb_buf_reset(&b);
			return NULL;
		}
	if (n < 0) {
		sb_buf_reset(&b);
		return NULL;
	}
	return b.data ? sb_buf_steal(&b) : strdup("");
}

/* mountinfo escapes blanks and backslashes as \ooo. */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r;)
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	*w = '\0';
}

int sb_cgroup_locate(const char *mountinfo, const char *proc_cgroup, char **ret)
{
	_cleanup_free_ char *mi = strdup(mountinfo ? mountinfo : ""),
			    *pc = strdup(proc_cgroup ? proc_cgroup : "");
	const char *path = NULL, *rel;
	char *save = NULL;

	if (!mi || !pc)
		return -ENOMEM;
	/* The unified hierarchy is the "0::" line. */
	for (char *l = strtok_r(pc, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (startswith(l, "0::"))
			path = l + 3;
	if (!path || path[0] != '/')
		return -ENOENT;
	save = NULL;
	for (char *l = strtok_r(mi, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *fields[5] = {0}, *dash = strstr(l, " - "), *fsave = NULL;
		int n = 0;

		if (!dash || !startswith(dash + 3, "cgroup2 "))
			continue;
		*dash = '\0';
		for (char *f = strtok_r(l, " ", &fsave); f && n < 5;
		     f = strtok_r(NULL, " ", &fsave))
			fields[n++] = f;
		if (n < 5)
			continue;
		unescape(fields[3]); /* the mount's root in the hierarchy */
		unescape(fields[4]); /* where it is mounted */
		/* A mount of a sub-hierarchy holds only what is below its root. */
		if (streq(fields[3], "/"))
			rel = path;
		else if ((rel = startswith(path, fields[3])) && (*rel == '/' || *rel == '\0'))
			;
		else
			continue;
		*ret = sb_path_join(fields[4], *rel == '/' ? rel + 1 : rel);
		return *ret ? 0 : -ENOMEM;
	}
	return -ENOENT;
}

static bool has_word(const char *text, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = text; (p = strstr(p, word)); p += n)
		if ((p == text || p[-1] == ' ' || p[-1] == '\n') &&
		    (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}

/* The unified hierarchy's "0::" path of /proc/self/cgroup text, or NULL. */
static const char *unified_path(char *proc_cgroup)
{
	char *save = NULL;

	for (char *l = strtok_r(proc_cgroup, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (startswith(l, "0::") && l[3] == '/')
			return l + 3;
	return NULL;
}

/* Where the hierarchy usually is (pure v2, or the hybrid layout's
 * "unified"), checked with statfs(): reading /proc/self/mountinfo costs some
 * 100 us in a container with many mounts. NULL when neither is, or when the
 * directory the path names is not there (a mount of a sub-hierarchy). */
static char *usual_dir(const char *root, const char *path)
{
	static const char *const mounts[] = {"sys/fs/cgroup", "sys/fs/cgroup/unified"};

	for (size_t i = 0; i < ELEMENTSOF(mounts); i++) {
		_cleanup_free_ char *mnt = sb_path_join(root, mounts[i]);
		struct statfs sfs;

		if (!mnt || statfs(mnt, &sfs) < 0 || sfs.f_type != CGROUP2_SUPER_MAGIC)
			continue;
		return sb_path_join(mnt, path + 1);
	}
	return NULL;
}

int sb_cgroup_probe(const char *root, char **ret_parent, char **reterr)
{
	_cleanup_free_ char *pc = read_text(root, "proc/self/cgroup"), *mi = NULL, *dir = NULL,
			    *full = NULL, *ctl = NULL, *ctl_path = NULL;
	_cleanup_free_ char *pc_copy = pc ? strdup(pc) : NULL;
	const char *path = pc_copy ? unified_path(pc_copy) : NULL;
	int r;

	if (!path)
		return sb_error(reterr, -EOPNOTSUPP, "no cgroup v2 hierarchy here");
	/* The usual mount first; a missing directory there means a mount of a
	 * sub-hierarchy, which mountinfo describes. */
	full = usual_dir(root, path);
	ctl_path = full ? sb_path_join(full, "cgroup.subtree_control") : NULL;
	ctl = ctl_path ? read_text("/", ctl_path) : NULL;
	if (!ctl && (!full || errno == ENOENT)) {
		free(full);
		free(ctl_path);
		full = ctl_path = NULL;
		mi = read_text(root, "proc/self/mountinfo");
		if (!mi)
			return sb_error(reterr, -EOPNOTSUPP, "/proc/self/mountinfo unreadable");
		r = sb_cgroup_locate(mi, pc, &dir);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return sb_error(reterr, -EOPNOTSUPP,
					"no cgroup v2 hierarchy is mounted here");
		full = sb_path_join(root, dir + 1);
		ctl_path = full ? sb_path_join(full, "cgroup.subtree_control") : NULL;
		if (!ctl_path)
			return -ENOMEM;
		ctl = read_text("/", ctl_path);
	}
	if (!ctl || !has_word(ctl, "memory"))
		return sb_error(reterr, -EOPNOTSUPP,
				"the cgroup v2 memory controller is not delegated to the children "
				"of %s",
				full);
	if (access(full, W_OK) < 0)
		return sb_error(reterr, -EOPNOTSUPP, "python-sb may not create cgroups in %s",
				full);
	*ret_parent = TAKE_PTR(full);
	return 0;
}

static int write_file(int dir_fd, const char *name, const char *value)
{
	_cleanup_close_ int fd = openat(dir_fd, name, O_WRONLY | O_CLOEXEC);
	size_t n = strlen(value);

	if (fd < 0)
		return -errno;
	if (write(fd, value, n) != (ssize_t)n)
		return -errno;
	return 0;
}

int sb_cgroup_create(const char *parent, unsigned long long memory_bytes, struct sb_cgroup *ret,
		     char **reterr)
{
	struct sb_cgroup cg = {.dir_fd = -1};
	char name[64], value[32];
	int r;

	snprintf(name, sizeof(name), "python-sb.%d", (int)getpid());
	cg.path = sb_path_join(parent, name);
	if (!cg.path)
		return -ENOMEM;
	if (mkdir(cg.path, 0755) < 0) {
		r = -errno;
		free(cg.path);
		return sb_error(reterr, r, "limit-memory: cannot create the cgroup %s: %s", cg.path,
				strerror(-r));
	}
	cg.dir_fd = open(cg.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = cg.dir_fd < 0 ? -errno : 0;
	snprintf(value, sizeof(value), "%llu", memory_bytes);
	if (r >= 0)
		r = write_file(cg.dir_fd, "memory.max", value);
	/* Swap would be memory outside memory.max; absent without swap
	 * accounting. The tree dies together: half a program is no result. */
	if (r >= 0 && (r = write_file(cg.dir_fd, "memory.swap.max", "0")) == -ENOENT)
		r = 0;
	if (r >= 0 && (r = write_file(cg.dir_fd, "memory.oom.group", "1")) == -ENOENT)
		r = 0;
	if (r < 0) {
		sb_cgroup_remove(&cg);
		return sb_error(reterr, r, "limit-memory: cannot configure the cgroup: %s",
				strerror(-r));
	}
	*ret = cg;
	return 0;
}

int sb_cgroup_attach(const struct sb_cgroup *cg, pid_t pid, char **reterr)
{
	char value[32];
	int r;

	snprintf(value, sizeof(value), "%d", (int)pid);
	r = write_file(cg->dir_fd, "cgroup.procs", value);
	if (r < 0)
		return sb_error(reterr, r, "limit-memory: cannot move the program into %s: %s",
				cg->path, strerror(-r));
	return 0;
}

bool sb_cgroup_oom_killed(const struct sb_cgroup *cg)
{
	_cleanup_close_ int fd = -1;
	char buf[512], *p;
	ssize_t n;

	if (cg->dir_fd < 0)
		return false;
	fd = openat(cg->dir_fd, "memory.events", O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strstr(buf, "oom_kill ");
	return p && strtoull(p + 9, NULL, 10) > 0;
}

void sb_cgroup_remove(struct sb_cgroup *cg)
{
	if (cg->dir_fd >= 0)
		close(cg->dir_fd);
	/* Empty once every process is reaped; a zombie still counts for an
	 * instant after its parent's wait, hence a few tries. */
	for (int i = 0; cg->path && i < 50 && rmdir(cg->path) < 0 && errno == EBUSY; i++)
		usleep(2000);
	free(cg->path);
	*cg = (struct sb_cgroup){.dir_fd = -1};
}
