/* SPDX-License-Identifier: MIT */
/* Landlock provider tests in the kernel selftest style: every case forks, the
 * child restricts itself with a policy built for the case, performs one
 * operation and _exit()s with its errno (0 on success); the parent asserts.
 * Restriction is irreversible, so it never happens in the test process.
 *
 * Landlock needs no privilege and does not exempt root: run as root, the
 * denials below are checked with CAP_DAC_OVERRIDE in effect, and a subset is
 * run again after the child drops to nobody. Run as an unprivileged user the
 * whole file works the same way. */

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "landlock-compat.h"
#include "landlock.h"
#include "tap.h"
#include "util.h"

/* Child exit codes; errno values are all below these. */
#define CHILD_BAD_ERRNO	   123
#define CHILD_APPLY_FAILED 124
#define CHILD_DROP_FAILED  125
#define CHILD_SIGNALED	   (-1)

enum {
	G_RO = 1 << 0,	    /* base/ro, read-only */
	G_RW = 1 << 1,	    /* base/rw, writable */
	G_RW2 = 1 << 2,	    /* base/rw2, writable */
	G_FILE_RO = 1 << 3, /* base/files/granted alone, read-only */
	G_FILE_RW = 1 << 4, /* base/files/granted alone, writable */
	G_SYSTEM = 1 << 5,  /* /usr and the /lib, /bin links: enough to exec /bin/true */
	G_MISSING = 1 << 6, /* base/missing, which does not exist */
	G_DEVNULL = 1 << 7, /* /dev/null alone, writable (a device file rule) */
	/* The same grants marked is_file (known not to be a directory). */
	G_HINT_FILE_RO = 1 << 8, /* base/files/granted, read-only */
	G_HINT_DEVNULL = 1 << 9, /* /dev/null, writable */
	G_HINT_WRONG = 1 << 10,	 /* base/ro, a directory, wrongly marked is_file */
};

typedef int (*op_fn)(const void *arg);

static int abi;
static char base[64]; /* /tmp/sb-landlock-XXXXXX */
static bool have_nobody;
static uid_t nobody_uid;
static gid_t nobody_gid;

/* base/rel; a few rotating buffers are enough for one operation. */
static const char *fx(const char *rel)
{
	static char bufs[4][PATH_MAX];
	static unsigned i;
	char *b = bufs[i++ % ELEMENTSOF(bufs)];

	snprintf(b, PATH_MAX, "%s/%s", base, rel);
	return b;
}

static const char *errname(int e)
{
	const char *s;

	if (e == 0)
		return "success";
	if (e == CHILD_APPLY_FAILED)
		return "apply failed in child";
	if (e == CHILD_DROP_FAILED)
		return "dropping privileges failed in child";
	if (e == CHILD_SIGNALED)
		return "child killed by a signal";
	s = strerrorname_np(e);
	return s ? s : "?";
}

/* ---- fixture ---- */

static void bail_out(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

static void make_dir(const char *rel)
{
	if (mkdir(fx(rel), 0777) < 0)
		bail_out(rel);
}

static void make_file(const char *rel)
{
	int fd = open(fx(rel), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);

	if (fd < 0 || write(fd, "data\n", 5) != 5)
		bail_out(rel);
	close(fd);
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	if (ftw->level == 0)
		return 0; /* keep base itself */
	return (type == FTW_DP ? rmdir(path) : unlink(path)) < 0 ? -1 : 0;
}

/* Modes are 0777/0666 (umask 0) so that nobody, dropped to from root, would
 * be allowed by DAC: any denial it sees comes from Landlock. */
static void fixture_reset(void)
{
	if (nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
		bail_out("cleaning the fixture");
	make_dir("ro");
	make_file("ro/file");
	if (symlink("../outside/secret", fx("ro/escape")) < 0)
		bail_out("ro/escape");
	if (symlink("file", fx("ro/inner")) < 0)
		bail_out("ro/inner");
	make_dir("rw");
	make_file("rw/existing");
	make_dir("rw2");
	make_dir("outside");
	make_file("outside/secret");
	make_dir("files");
	make_file("files/granted");
	make_file("files/sibling");
}

/* ---- policies ---- */

struct policy_buf {
	struct sb_landlock_path paths[12];
	char strings[6][PATH_MAX];
	struct sb_landlock_policy policy;
};

static void add_grant(struct policy_buf *b, const char *path, bool writable)
{
	size_t n = b->policy.n_paths;

	if (n < ELEMENTSOF(b->strings)) {
		snprintf(b->strings[n], PATH_MAX, "%s", path);
		path = b->strings[n];
	}
	b->paths[n] = (struct sb_landlock_path){path, writable};
	b->policy.n_paths++;
}

static const struct sb_landlock_policy *make_policy(struct policy_buf *b, unsigned grants)
{
	*b = (struct policy_buf){0};
	b->policy.paths = b->paths;
	if (grants & G_RO)
		add_grant(b, fx("ro"), false);
	if (grants & G_RW)
		add_grant(b, fx("rw"), true);
	if (grants & G_RW2)
		add_grant(b, fx("rw2"), true);
	if (grants & G_FILE_RO)
		add_grant(b, fx("files/granted"), false);
	if (grants & G_FILE_RW)
		add_grant(b, fx("files/granted"), true);
	if (grants & G_MISSING)
		add_grant(b, fx("missing"), false);
	/* Literal strings from here on: no copy needed. */
	if (grants & G_DEVNULL)
		b->paths[b->policy.n_paths++] = (struct sb_landlock_path){"/dev/null", true};
	if (grants & G_HINT_FILE_RO) {
		add_grant(b, fx("files/granted"), false);
		b->paths[b->policy.n_paths - 1].is_file = true;
	}
	if (grants & G_HINT_WRONG) {
		add_grant(b, fx("ro"), false);
		b->paths[b->policy.n_paths - 1].is_file = true;
	}
	if (grants & G_HINT_DEVNULL)
		b->paths[b->policy.n_paths++] =
		    (struct sb_landlock_path){"/dev/null", true, .is_file = true};
	if (grants & G_SYSTEM) {
		/* /bin, /lib, /lib64 are links into /usr on Debian 12; a rule
		 * follows them, and one that does not exist is skipped. */
		static const char *const sys[] = {"/usr", "/bin", "/lib", "/lib64"};
		for (size_t i = 0; i < ELEMENTSOF(sys); i++)
			b->paths[b->policy.n_paths++] = (struct sb_landlock_path){sys[i], false};
	}
	return &b->policy;
}

/* ---- running a case ---- */

static int drop_to_nobody(void)
{
	if (setgroups(0, NULL) < 0 || setresgid(nobody_gid, nobody_gid, nobody_gid) < 0 ||
	    setresuid(nobody_uid, nobody_uid, nobody_uid) < 0)
		return -errno;
	return 0;
}

/* 0 or the errno of op in a restricted child, or a CHILD_* code. */
static int run_restricted(const struct sb_landlock_policy *policy, bool drop, op_fn op,
			  const void *arg)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		bail_out("fork");
	if (pid == 0) {
		struct sb_landlock_report report;
		char *err = NULL;
		int e;

		if (drop && drop_to_nobody() < 0)
			_exit(CHILD_DROP_FAILED);
		if (sb_landlock_apply(policy, &report, &err) < 0) {
			fprintf(stderr, "child: %s\n", err ? err : "?");
			_exit(CHILD_APPLY_FAILED);
		}
		e = op(arg);
		_exit(e >= 0 && e < CHILD_BAD_ERRNO ? e : CHILD_BAD_ERRNO);
	}
	if (waitpid(pid, &status, 0) < 0)
		bail_out("waitpid");
	return WIFEXITED(status) ? WEXITSTATUS(status) : CHILD_SIGNALED;
}

static void check(const char *name, const struct sb_landlock_policy *policy, bool drop, op_fn op,
		  const void *arg, int want)
{
	int got = run_restricted(policy, drop, op, arg);

	tap_ok(got == want, "%s%s: %s (want %s)", name,
	       drop		? " [nobody]"
	       : geteuid() == 0 ? " [root]"
				: "",
	       errname(got), errname(want));
}

/* ---- filesystem operations: 0 or errno ---- */

static int try_open(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0666);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int result(int r)
{
	return r < 0 ? errno : 0;
}

static int op_read_outside(const void *arg)
{
	(void)arg;
	return try_open(fx("outside/secret"), O_RDONLY);
}

static int op_read_ro(const void *arg)
{
	char c;
	int fd, e = 0;

	(void)arg;
	fd = open(fx("ro/file"), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (read(fd, &c, 1) != 1)
		e = errno ? errno : EIO;
	close(fd);
	return e;
}

static int op_list_ro(const void *arg)
{
	DIR *d;

	(void)arg;
	d = opendir(fx("ro"));
	if (!d)
		return errno;
	errno = 0;
	while (readdir(d))
		;
	closedir(d);
	return errno;
}

static int op_create_in_ro(const void *arg)
{
	(void)arg;
	return try_open(fx("ro/new"), O_WRONLY | O_CREAT);
}

static int op_write_ro_file(const void *arg)
{
	(void)arg;
	return try_open(fx("ro/file"), O_WRONLY);
}

static int op_truncate_ro(const void *arg)
{
	(void)arg;
	return result(truncate(fx("ro/file"), 0));
}

static int op_mkfifo_ro(const void *arg)
{
	(void)arg;
	return result(mkfifo(fx("ro/fifo"), 0666));
}

static int op_symlink_escape(const void *arg)
{
	(void)arg;
	return try_open(fx("ro/escape"), O_RDONLY);
}

static int op_symlink_inner(const void *arg)
{
	(void)arg;
	return try_open(fx("ro/inner"), O_RDONLY);
}

static int op_create_rw(const void *arg)
{
	int fd, e = 0;

	(void)arg;
	fd = open(fx("rw/new"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0)
		return errno;
	if (write(fd, "x", 1) != 1)
		e = errno;
	close(fd);
	return e;
}

static int op_write_rw(const void *arg)
{
	(void)arg;
	/* O_TRUNC also needs LANDLOCK_ACCESS_FS_TRUNCATE from ABI 3 on. */
	return try_open(fx("rw/existing"), O_WRONLY | O_TRUNC);
}

static int op_unlink_rw(const void *arg)
{
	(void)arg;
	return result(unlink(fx("rw/existing")));
}

static int op_mkdir_rmdir_rw(const void *arg)
{
	(void)arg;
	if (mkdir(fx("rw/dir"), 0777) < 0)
		return errno;
	return result(rmdir(fx("rw/dir")));
}

static int op_rename_in_rw(const void *arg)
{
	(void)arg;
	return result(rename(fx("rw/existing"), fx("rw/renamed")));
}

static int op_symlink_mkfifo_rw(const void *arg)
{
	(void)arg;
	if (symlink("existing", fx("rw/link")) < 0)
		return errno;
	return result(mkfifo(fx("rw/fifo"), 0666));
}

static int op_truncate_rw(const void *arg)
{
	(void)arg;
	return result(truncate(fx("rw/existing"), 0));
}

static int op_rename_rw_to_rw2(const void *arg)
{
	(void)arg;
	return result(rename(fx("rw/existing"), fx("rw2/moved")));
}

static int op_rename_rw_to_ro(const void *arg)
{
	(void)arg;
	return result(rename(fx("rw/existing"), fx("ro/moved")));
}

static int op_rename_ro_to_rw(const void *arg)
{
	(void)arg;
	return result(rename(fx("ro/file"), fx("rw/moved")));
}

static int op_link_ro_to_rw(const void *arg)
{
	(void)arg;
	return result(link(fx("ro/file"), fx("rw/linked")));
}

static int op_read_granted(const void *arg)
{
	(void)arg;
	return try_open(fx("files/granted"), O_RDONLY);
}

static int op_write_granted(const void *arg)
{
	(void)arg;
	return try_open(fx("files/granted"), O_WRONLY);
}

static int op_truncate_granted(const void *arg)
{
	(void)arg;
	return result(truncate(fx("files/granted"), 0));
}

static int op_read_sibling(const void *arg)
{
	(void)arg;
	return try_open(fx("files/sibling"), O_RDONLY);
}

static int op_list_files(const void *arg)
{
	(void)arg;
	return try_open(fx("files"), O_RDONLY | O_DIRECTORY);
}

static int op_create_beside_granted(const void *arg)
{
	(void)arg;
	return try_open(fx("files/new"), O_WRONLY | O_CREAT);
}

static int op_write_devnull(const void *arg)
{
	(void)arg;
	return try_open("/dev/null", O_WRONLY);
}

/* execve's errno, or the exit status of /bin/true (0) when it ran. */
static int op_exec_true(const void *arg)
{
	char *const argv[] = {(char *)"true", NULL};
	char *const envp[] = {NULL};

	(void)arg;
	execve("/bin/true", argv, envp);
	return errno;
}

struct fs_case {
	const char *name;
	unsigned grants;
	op_fn op;
	int want;
	int min_abi;
	bool as_nobody; /* rerun after dropping to nobody when run as root */
};

static const struct fs_case fs_cases[] = {
    {"no grant at all: read denied", 0, op_read_outside, EACCES, 1, true},
    {"read outside every grant", G_RO | G_RW, op_read_outside, EACCES, 1, true},
    {"read a file inside an ro grant", G_RO, op_read_ro, 0, 1, true},
    {"list an ro directory", G_RO, op_list_ro, 0, 1, false},
    {"create (O_WRONLY|O_CREAT) inside ro", G_RO, op_create_in_ro, EACCES, 1, true},
    {"open an existing file O_WRONLY inside ro", G_RO, op_write_ro_file, EACCES, 1, false},
    {"mkfifo inside ro", G_RO, op_mkfifo_ro, EACCES, 1, false},
    /* truncate(2) became controllable with ABI 3; before, it was allowed. */
    {"truncate a file inside ro", G_RO, op_truncate_ro, EACCES, 3, true},
    /* Landlock checks the resolved object, not the name: a link cannot
     * carry a grant to its target. */
    {"symlink inside ro pointing outside", G_RO, op_symlink_escape, EACCES, 1, true},
    {"symlink inside ro pointing inside", G_RO, op_symlink_inner, 0, 1, false},
    {"create+write inside rw", G_RW, op_create_rw, 0, 1, true},
    {"open O_WRONLY|O_TRUNC inside rw", G_RW, op_write_rw, 0, 1, false},
    {"unlink inside rw", G_RW, op_unlink_rw, 0, 1, false},
    {"mkdir+rmdir inside rw", G_RW, op_mkdir_rmdir_rw, 0, 1, false},
    {"rename inside rw", G_RW, op_rename_in_rw, 0, 1, false},
    {"symlink+mkfifo inside rw", G_RW, op_symlink_mkfifo_rw, 0, 1, false},
    {"truncate inside rw", G_RW, op_truncate_rw, 0, 3, false},
    /* Reparenting needs REFER on both directories (ABI 2); both rw grants
     * carry it and the file gains nothing by moving. */
    {"rename from rw into another rw", G_RW | G_RW2, op_rename_rw_to_rw2, 0, 2, false},
    /* The destination lacks MAKE_REG and REFER: the kernel could say EXDEV
     * (REFER) or EACCES (MAKE_REG); EACCES is documented to prevail, since
     * it is the error user space cannot work around by copying. */
    {"rename from rw into ro", G_RO | G_RW, op_rename_rw_to_ro, EACCES, 1, true},
    /* The source lacks REMOVE_FILE: EACCES again. */
    {"rename from ro into rw", G_RO | G_RW, op_rename_ro_to_rw, EACCES, 1, false},
    /* A link needs no REMOVE right and rw has MAKE_REG, so only the REFER
     * check is left: ro has no REFER and the file would gain write rights in
     * rw, hence EXDEV (which tells "cp" to fall back to copying, and the
     * copy then needs read access it legitimately has). */
    {"link from ro into rw", G_RO | G_RW, op_link_ro_to_rw, EXDEV, 1, false},
    {"file rule: the granted file is readable", G_FILE_RO, op_read_granted, 0, 1, true},
    {"file rule: a sibling is not", G_FILE_RO, op_read_sibling, EACCES, 1, true},
    {"file rule: its directory is not listable", G_FILE_RO, op_list_files, EACCES, 1, false},
    {"file rule ro: write denied", G_FILE_RO, op_write_granted, EACCES, 1, false},
    {"file rule rw: write allowed", G_FILE_RW, op_write_granted, 0, 1, false},
    {"file rule rw: truncate allowed", G_FILE_RW, op_truncate_granted, 0, 3, false},
    {"file rule rw: no create beside it", G_FILE_RW, op_create_beside_granted, EACCES, 1, false},
    {"device file rule rw: /dev/null writable", G_DEVNULL, op_write_devnull, 0, 1, false},
    {"missing path skipped, the rest applies", G_RO | G_MISSING, op_read_ro, 0, 1, false},
    /* is_file: the file rights go in first time; a wrong hint only grants
     * less (no listing), never more. */
    {"is_file rule: the granted file is readable", G_HINT_FILE_RO, op_read_granted, 0, 1, true},
    {"is_file rule: a sibling is not", G_HINT_FILE_RO, op_read_sibling, EACCES, 1, false},
    {"is_file rule ro: write denied", G_HINT_FILE_RO, op_write_granted, EACCES, 1, false},
    {"is_file device rule rw: /dev/null writable", G_HINT_DEVNULL, op_write_devnull, 0, 1, false},
    {"is_file on a directory: files below readable", G_HINT_WRONG, op_read_ro, 0, 1, false},
    {"is_file on a directory: not listable", G_HINT_WRONG, op_list_ro, EACCES, 1, false},
    {"execve outside every grant", G_RO, op_exec_true, EACCES, 1, true},
    {"execve inside an ro grant", G_SYSTEM, op_exec_true, 0, 1, true},
};

static void run_fs_cases(bool drop)
{
	for (size_t i = 0; i < ELEMENTSOF(fs_cases); i++) {
		const struct fs_case *c = &fs_cases[i];
		struct policy_buf b;

		if (drop && !c->as_nobody)
			continue;
		if (abi < c->min_abi) {
			tap_ok(true, "# SKIP %s: needs ABI %d", c->name, c->min_abi);
			continue;
		}
		fixture_reset();
		check(c->name, make_policy(&b, c->grants), drop, c->op, NULL, c->want);
	}
}

/* ---- TCP (ABI 4) ---- */

static int tcp_listener(uint16_t *ret_port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		bail_out("TCP listener");
	*ret_port = ntohs(a.sin_port);
	return fd;
}

static int op_inet(int type, bool do_bind, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd, r;

	fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (do_bind)
		r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	else
		r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	r = result(r);
	close(fd);
	return r;
}

static int op_tcp_connect(const void *arg)
{
	return op_inet(SOCK_STREAM, false, *(const uint16_t *)arg);
}

static int op_tcp_bind(const void *arg)
{
	return op_inet(SOCK_STREAM, true, *(const uint16_t *)arg);
}

static int op_udp_connect(const void *arg)
{
	return op_inet(SOCK_DGRAM, false, *(const uint16_t *)arg);
}

static void run_net_cases(void)
{
	uint16_t p_allowed, p_other, p_free, zero = 0;
	struct policy_buf b;
	struct sb_landlock_policy *p;
	int l1, l2;

	if (abi < 4) {
		tap_ok(true, "# SKIP TCP rules need ABI 4 (have %d)", abi);
		return;
	}
	/* Created before the fork: the child only connects. */
	l1 = tcp_listener(&p_allowed);
	l2 = tcp_listener(&p_other);
	/* A port that was free a moment ago, for the positive bind rule. */
	close(tcp_listener(&p_free));

	p = (struct sb_landlock_policy *)make_policy(&b, 0);
	p->restrict_tcp_connect = true;
	p->connect_ports = &p_allowed;
	p->n_connect_ports = 1;
	check("TCP connect to the listed port", p, false, op_tcp_connect, &p_allowed, 0);
	check("TCP connect to another port", p, false, op_tcp_connect, &p_other, EACCES);
	/* Landlock's net rights cover TCP only: UDP stays open (spec §8). */
	check("UDP is not restricted by TCP rules", p, false, op_udp_connect, &p_other, 0);
	check("bind is not restricted by connect rules", p, false, op_tcp_bind, &zero, 0);

	p = (struct sb_landlock_policy *)make_policy(&b, 0);
	p->restrict_tcp_bind = true;
	check("TCP bind with no port allowed", p, false, op_tcp_bind, &zero, EACCES);
	check("connect is not restricted by bind rules", p, false, op_tcp_connect, &p_other, 0);
	p->bind_ports = &p_free;
	p->n_bind_ports = 1;
	check("TCP bind to the listed port", p, false, op_tcp_bind, &p_free, 0);

	p = (struct sb_landlock_policy *)make_policy(&b, 0);
	check("no restrict flag: connect allowed", p, false, op_tcp_connect, &p_other, 0);
	check("no restrict flag: bind allowed", p, false, op_tcp_bind, &zero, 0);
	close(l1);
	close(l2);
}

/* ---- scopes (ABI 6) ---- */

struct unix_addr {
	struct sockaddr_un sun;
	socklen_t len;
};

static int op_connect_abstract(const void *arg)
{
	const struct unix_addr *a = arg;
	int fd, r;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	r = result(connect(fd, (const struct sockaddr *)&a->sun, a->len));
	close(fd);
	return r;
}

static int op_kill_parent(const void *arg)
{
	(void)arg;
	return result(kill(getppid(), 0));
}

static int op_kill_self(const void *arg)
{
	(void)arg;
	return result(kill(getpid(), 0));
}

/* A process created after the restriction is in the same domain. */
static int op_kill_own_child(const void *arg)
{
	pid_t pid;
	int r;

	(void)arg;
	pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		pause();
		_exit(0);
	}
	r = result(kill(pid, SIGKILL));
	waitpid(pid, NULL, 0);
	return r;
}

static void run_scope_cases(void)
{
	struct unix_addr ua = {.sun.sun_family = AF_UNIX};
	_cleanup_close_ int l = -1;
	struct policy_buf b;
	struct sb_landlock_policy *p;
	int n;

	if (abi < 6) {
		tap_ok(true, "# SKIP scopes need ABI 6 (have %d)", abi);
		return;
	}
	/* Abstract name: a leading NUL, no file, so no fs rule applies. */
	n = snprintf(ua.sun.sun_path + 1, sizeof(ua.sun.sun_path) - 1, "sb-landlock-test-%d",
		     (int)getpid());
	ua.len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&ua.sun, ua.len) < 0 || listen(l, 16) < 0)
		bail_out("abstract unix listener");

	p = (struct sb_landlock_policy *)make_policy(&b, 0);
	check("no scope: connect to the parent's abstract socket", p, false, op_connect_abstract,
	      &ua, 0);
	check("no scope: signal the parent", p, false, op_kill_parent, NULL, 0);

	p->scope_abstract_unix = true;
	check("scope: connect to an abstract socket outside the domain", p, false,
	      op_connect_abstract, &ua, EPERM);

	p = (struct sb_landlock_policy *)make_policy(&b, 0);
	p->scope_signal = true;
	check("scope: signal the parent", p, false, op_kill_parent, NULL, EPERM);
	check("scope: signal itself", p, false, op_kill_self, NULL, 0);
	check("scope: signal a process it created", p, false, op_kill_own_child, NULL, 0);
}

/* ---- the report and the error paths, through a pipe ---- */

struct apply_result {
	int r;
	int abi_probe;
	int abi;
	int nnp; /* PR_GET_NO_NEW_PRIVS after the call */
	uint64_t fs_missing, net_missing, scopes_missing;
	unsigned n_skipped;
	char skipped0[256];
	char err[512];
};

/* Makes landlock_create_ruleset() fail with e, to exercise the "no Landlock"
 * paths on a kernel that has it. A test filter injecting an errno, not a
 * boundary: no arch check needed. */
static int inject_create_ruleset_errno(int e)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_landlock_create_ruleset, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)e & SECCOMP_RET_DATA)),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = ELEMENTSOF(f), .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -errno;
	return 0;
}

static bool apply_in_child(const struct sb_landlock_policy *policy, int inject,
			   struct apply_result *out)
{
	int fds[2], status;
	pid_t pid;
	ssize_t n;

	*out = (struct apply_result){0};
	if (pipe2(fds, O_CLOEXEC) < 0)
		bail_out("pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		bail_out("fork");
	if (pid == 0) {
		struct sb_landlock_report report;
		struct apply_result res = {0};
		char *err = NULL;

		close(fds[0]);
		if (inject && inject_create_ruleset_errno(inject) < 0)
			_exit(CHILD_APPLY_FAILED);
		res.abi_probe = sb_landlock_abi();
		res.r = sb_landlock_apply(policy, policy ? &report : NULL, &err);
		res.nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
		if (policy) {
			res.abi = report.abi;
			res.fs_missing = report.fs_rights_missing;
			res.net_missing = report.net_rights_missing;
			res.scopes_missing = report.scopes_missing;
			res.n_skipped = (unsigned)sb_strv_length(report.skipped_paths);
			if (res.n_skipped)
				snprintf(res.skipped0, sizeof(res.skipped0), "%s",
					 report.skipped_paths[0]);
			sb_landlock_report_done(&report);
		}
		if (err)
			snprintf(res.err, sizeof(res.err), "%s", err);
		free(err);
		_exit(write(fds[1], &res, sizeof(res)) == (ssize_t)sizeof(res) ? 0 : 1);
	}
	close(fds[1]);
	n = read(fds[0], out, sizeof(*out));
	close(fds[0]);
	waitpid(pid, &status, 0);
	return n == (ssize_t)sizeof(*out) && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void run_report_cases(void)
{
	uint64_t want_fs = 0, want_net = 0, want_scopes = 0;
	struct apply_result res;
	struct policy_buf b;
	struct sb_landlock_policy *p;
	bool ok;

	fixture_reset();
	p = (struct sb_landlock_policy *)make_policy(&b, G_RO | G_MISSING);
	p->restrict_tcp_bind = p->restrict_tcp_connect = true;
	p->scope_abstract_unix = p->scope_signal = true;
	ok = apply_in_child(p, 0, &res);
	tap_ok(ok, "report: child ran");
	TAP_IS_INT(res.r, 0, "report: apply succeeds with a missing path");
	TAP_IS_INT(res.abi, abi, "report: abi is sb_landlock_abi()");
	if (abi < 2)
		want_fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi < 3)
		want_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi < 4)
		want_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
	if (abi < 5)
		want_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	if (abi < 6)
		want_scopes = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
	TAP_IS_INT(res.fs_missing, want_fs, "report: fs rights missing for this ABI");
	TAP_IS_INT(res.net_missing, want_net, "report: net rights missing for this ABI");
	TAP_IS_INT(res.scopes_missing, want_scopes, "report: scopes missing for this ABI");
	TAP_IS_INT(res.n_skipped, 1, "report: one skipped path");
	TAP_IS_STR(res.skipped0, fx("missing"), "report: the skipped path");
	TAP_IS_INT(res.nnp, 1, "report: no_new_privs set");

	/* Any error but ENOENT fails, naming the path, before anything
	 * irreversible (no_new_privs stays off). */
	p = (struct sb_landlock_policy *)make_policy(&b, G_RO);
	b.paths[0].path = fx("ro/file/below");
	ok = apply_in_child(p, 0, &res);
	tap_ok(ok, "bad path: child ran");
	TAP_IS_INT(res.r, -ENOTDIR, "bad path: apply fails with ENOTDIR");
	tap_ok(strstr(res.err, fx("ro/file/below")) != NULL, "bad path: message names it: %s",
	       res.err);
	TAP_IS_INT(res.nnp, 0, "bad path: no_new_privs untouched");

	ok = apply_in_child(NULL, 0, &res);
	tap_ok(ok && res.r == -EINVAL, "NULL policy: -EINVAL (got %d)", res.r);

	p = (struct sb_landlock_policy *)make_policy(&b, G_RO);
	ok = apply_in_child(p, ENOSYS, &res);
	tap_ok(ok, "ENOSYS: child ran");
	TAP_IS_INT(res.abi_probe, -ENOSYS, "ENOSYS: sb_landlock_abi()");
	TAP_IS_INT(res.r, -ENOSYS, "ENOSYS: apply fails");
	tap_ok(strstr(res.err, "not supported by the running kernel") != NULL, "ENOSYS: hint: %s",
	       res.err);

	ok = apply_in_child(p, EOPNOTSUPP, &res);
	tap_ok(ok, "EOPNOTSUPP: child ran");
	TAP_IS_INT(res.r, -EOPNOTSUPP, "EOPNOTSUPP: apply fails");
	tap_ok(strstr(res.err, "disabled at boot time") && strstr(res.err, "lsm=landlock"),
	       "EOPNOTSUPP: hint: %s", res.err);
}

/* Descriptors open in [from, from + 64): /proc/self/fd is not readable
 * under the policy, fcntl() needs no access. */
static unsigned count_fds(int from)
{
	unsigned n = 0;

	for (int fd = from; fd < from + 64; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* The rules' O_PATH descriptors are closed in runs of consecutive numbers:
 * none may stay open, and one the caller held in between must survive. */
static void run_descriptor_case(void)
{
	struct policy_buf b;
	int status, lowest;
	pid_t pid;

	fixture_reset();
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		bail_out("fork");
	if (pid == 0) {
		const struct sb_landlock_policy *p =
		    make_policy(&b, G_RO | G_RW | G_MISSING | G_FILE_RO | G_DEVNULL | G_SYSTEM);
		struct sb_landlock_report report;
		char *err = NULL;
		unsigned before;

		lowest = dup(0);
		if (lowest < 0 || close(lowest) < 0 || dup2(0, lowest + 2) < 0)
			_exit(CHILD_BAD_ERRNO);
		before = count_fds(lowest);
		if (sb_landlock_apply(p, &report, &err) < 0)
			_exit(CHILD_APPLY_FAILED);
		if (fcntl(lowest + 2, F_GETFD) < 0)
			_exit(1); /* the caller's descriptor was closed */
		_exit(count_fds(lowest) == before ? 0 : 2);
	}
	if (waitpid(pid, &status, 0) < 0)
		bail_out("waitpid");
	TAP_IS_INT(WIFEXITED(status) ? WEXITSTATUS(status) : CHILD_SIGNALED, 0,
		   "rule descriptors all closed, the caller's one between them kept "
		   "(1: caller's closed, 2: one left open)");
}

int main(void)
{
	struct passwd *pw;

	abi = sb_landlock_abi();
	if (abi < 0) {
		char reason[128];

		snprintf(reason, sizeof(reason), "Landlock unavailable: %s", strerror(-abi));
		return tap_skip_all(reason);
	}
	tap_diag("Landlock ABI %d, euid %d", abi, (int)geteuid());

	umask(0);
	snprintf(base, sizeof(base), "/tmp/sb-landlock-XXXXXX");
	if (!mkdtemp(base) || chmod(base, 0777) < 0)
		bail_out("mkdtemp");

	if (geteuid() == 0) {
		pw = getpwnam("nobody");
		if (pw) {
			have_nobody = true;
			nobody_uid = pw->pw_uid;
			nobody_gid = pw->pw_gid;
		}
	}

	run_fs_cases(false);
	if (have_nobody)
		run_fs_cases(true);
	else if (geteuid() == 0)
		tap_diag("no user nobody: the unprivileged rerun is skipped");
	run_descriptor_case();
	run_net_cases();
	run_scope_cases();
	run_report_cases();

	/* The parent never restricted itself. */
	fixture_reset();
	TAP_IS_INT(try_open(fx("outside/secret"), O_RDONLY), 0, "parent unaffected: reads outside");
	TAP_IS_INT(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 0, "parent unaffected: no_new_privs");

	if (nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 || rmdir(base) < 0)
		tap_diag("cannot remove %s: %s", base, strerror(errno));
	return tap_done();
}
