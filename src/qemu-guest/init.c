/* SPDX-License-Identifier: MIT */
/* PID 1 of os-sandbox=qemu's guest (a static binary in the initramfs the
 * launching python-sb writes per run, src/providers/qemu-initramfs.c).
 *
 * It loads the kernel modules the run needs (virtio-mmio, the console ports,
 * 9p), builds a new root of the host's shares (the grants, read-only but
 * expose-rw, ignore= masked), finds the ports that carry stdin, stdout,
 * stderr and the status, makes the handover record the inner python-sb
 * expects (a sealed memfd: wrap.h) with a status pipe of its own, runs
 * python-sb, passes the status lines on to the host and powers the machine
 * off. Everything it is told comes from /sb/config in the initramfs, which
 * the launching side wrote: NUL-separated key=value entries.
 *
 * It has no library but libc and prints only to the console (the serial
 * line, which the host shows with qemu.show_boot_console): a failure ends the
 * run with no exit status reported, which the host reports as a failed start. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <grp.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROOT	     "/newroot"
#define SHARES	     "/shares"
#define MAX_ARGS     256
#define MAX_LINKS    16
#define MAX_ENV	     8
#define PORT_WAIT_MS 20000

static bool verbose;

static int console_fd = -1;

/* On the console (the serial line, which the host shows with
 * qemu.show_boot_console), opened before the new root hides /dev. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	if (console_fd < 0)
		console_fd = open("/dev/console", O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (console_fd < 0)
		return;
	va_start(ap, fmt);
	dprintf(console_fd, "python-sb-qemu-init: ");
	vdprintf(console_fd, fmt, ap);
	dprintf(console_fd, "\n");
	va_end(ap);
}

/* A reset, which -no-reboot makes qemu's end: python-sb's own kernel has no
 * ACPI, and there a power-off would halt the machine and leave qemu
 * running. */
static _Noreturn void power_off(void)
{
	sync();
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}

static _Noreturn void die(const char *what)
{
	say("%s: %s", what, strerror(errno));
	power_off();
}

static char *read_file(const char *path, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return NULL;
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*ret_len = (size_t)n;
	return buf;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -1;
	for (char *s = strchr(buf + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(buf, mode) < 0 && errno != EEXIST ? -1 : 0;
}

/* An empty file at path (a file's mount point), its parents made. */
static int touch_p(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int fd;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return -1;
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir_p(dir, 0755) < 0)
			return -1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno == EISDIR ? 0 : -1;
	close(fd);
	return 0;
}

static void load_modules(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX];
		int fd;

		snprintf(path, sizeof(path), "/modules/%s", names[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die(path);
		if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)
			die(path);
		close(fd);
	}
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The /dev node of the virtio port named name (/sys/class/virtio-ports/
 * vportNpM/name), opened; the ports appear once the host's control messages
 * arrived, a little after the driver loaded. */
static int open_port(const char *name, int flags)
{
	long deadline = now_ms() + PORT_WAIT_MS;

	for (;;) {
		DIR *d = opendir("/sys/class/virtio-ports");
		struct dirent *de;

		while (d && (de = readdir(d))) {
			char path[PATH_MAX], buf[64];
			ssize_t n;
			int fd;

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", de->d_name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (n <= 0)
				continue;
			buf[n] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
			if (strcmp(buf, name) != 0)
				continue;
			snprintf(path, sizeof(path), "/dev/%s", de->d_name);
			fd = open(path, flags | O_CLOEXEC | O_NOCTTY);
			if (fd >= 0) {
				closedir(d);
				return fd;
			}
		}
		if (d)
			closedir(d);
		if (now_ms() > deadline) {
			errno = ETIMEDOUT;
			die(name);
		}
		usleep(2000);
	}
}

static void mount_or_die(const char *src, const char *target, const char *type, unsigned long flags,
			 const char *data)
{
	if (mount(src, target, type, flags, data) < 0) {
		say("mount %s on %s (%s): %s", src, target, type ? type : "bind", strerror(errno));
		power_off();
	}
}

/* A share: the 9p tag mounted at the host's path, read-only but rw ones. */
static void mount_share(const char *spec, bool writable)
{
	char tag[32], target[PATH_MAX], opts[128];
	const char *path = strchr(spec, ':');

	if (!path || (size_t)(path - spec) >= sizeof(tag))
		die("bad share entry");
	memcpy(tag, spec, (size_t)(path - spec));
	tag[path - spec] = '\0';
	path++;
	snprintf(target, sizeof(target), ROOT "%s", path);
	if (mkdir_p(target, 0755) < 0)
		die(target);
	/* Read-only trees are the host's interpreter and libraries: the page
	 * cache may keep them (cache=loose); a writable one is shared with the
	 * host and other runs, so nothing is cached. */
	snprintf(opts, sizeof(opts), "trans=virtio,version=9p2000.L,msize=262144%s",
		 writable ? ",cache=none" : ",cache=loose");
	mount_or_die(tag, target, "9p", MS_NOSUID | MS_NODEV | (writable ? 0 : MS_RDONLY), opts);
}

/* The tags of the files' shares mounted aside (a 9p channel mounts once). */
static char aside_tags[64][32];
static size_t n_aside;

/* A file's share: its directory's tag mounted aside (once), the file bound
 * in. */
static void mount_file(const char *spec)
{
	char tag[32], aside[PATH_MAX], source[PATH_MAX], target[PATH_MAX];
	const char *path = strchr(spec, ':');
	const char *base;
	bool mounted = false;

	if (!path || (size_t)(path - spec) >= sizeof(tag))
		die("bad file entry");
	memcpy(tag, spec, (size_t)(path - spec));
	tag[path - spec] = '\0';
	path++;
	base = strrchr(path, '/');
	snprintf(aside, sizeof(aside), SHARES "/%s", tag);
	for (size_t i = 0; i < n_aside; i++)
		mounted = mounted || strcmp(aside_tags[i], tag) == 0;
	if (!mounted) {
		if (n_aside >= sizeof(aside_tags) / sizeof(aside_tags[0]) ||
		    mkdir_p(aside, 0700) < 0)
			die(aside);
		mount_or_die(tag, aside, "9p", MS_NOSUID | MS_NODEV | MS_RDONLY,
			     "trans=virtio,version=9p2000.L,cache=loose");
		strcpy(aside_tags[n_aside++], tag);
	}
	snprintf(source, sizeof(source), "%s%s", aside, base);
	snprintf(target, sizeof(target), ROOT "%s", path);
	if (touch_p(target) < 0)
		die(target);
	mount_or_die(source, target, NULL, MS_BIND, NULL);
	mount_or_die(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
		     NULL);
}

/* A small file's grant: its copy in the initramfs (/files/N) bound in,
 * read-only. */
static void mount_copy(const char *spec)
{
	char source[PATH_MAX], target[PATH_MAX];
	const char *path = strchr(spec, ':');

	if (!path)
		die("bad copy entry");
	snprintf(source, sizeof(source), "/files/%.*s", (int)(path - spec), spec);
	snprintf(target, sizeof(target), ROOT "%s", path + 1);
	if (touch_p(target) < 0)
		die(target);
	mount_or_die(source, target, NULL, MS_BIND, NULL);
	mount_or_die(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
		     NULL);
}

/* ignore=: an empty read-only directory over a directory, /dev/null over a
 * file (reads succeed and return nothing, as under bwrap). */
static void mask(const char *path, bool dir)
{
	char target[PATH_MAX];

	snprintf(target, sizeof(target), ROOT "%s", path);
	if (dir)
		mount_or_die("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
			     "mode=0555,size=4k");
	else
		mount_or_die(ROOT "/dev/null", target, NULL, MS_BIND, NULL);
}

/* The program's /dev: the harmless nodes only (the ports stay out of its
 * reach). */
static void make_dev(void)
{
	static const struct {
		const char *name;
		unsigned major, minor;
	} nodes[] = {{"null", 1, 3},   {"zero", 1, 5},	  {"full", 1, 7},
		     {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};

	if (mkdir_p(ROOT "/dev", 0755) < 0)
		die(ROOT "/dev");
	mount_or_die("tmpfs", ROOT "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k");
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), ROOT "/dev/%s", nodes[i].name);
		if (mknod(path, S_IFCHR | 0666, makedev(nodes[i].major, nodes[i].minor)) < 0)
			die(path);
	}
	if (mkdir(ROOT "/dev/shm", 01777) < 0 || symlink("/proc/self/fd", ROOT "/dev/fd") < 0)
		die(ROOT "/dev");
	mount_or_die("tmpfs", ROOT "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		     "mode=1777,size=16m");
}

/* The record the inner python-sb reads (wrap.c): the host's, with this
 * guest's status descriptor. A sealed memfd of the same name. */
static int make_record(const char *data, size_t len, int status_fd)
{
	int fd = memfd_create("python-sb-inside", MFD_ALLOW_SEALING);
	char entry[32];

	if (fd < 0)
		die("memfd_create");
	for (const char *e = data; e < data + len; e += strlen(e) + 1) {
		const char *out = e;

		if (strncmp(e, "status-fd=", 10) == 0) {
			snprintf(entry, sizeof(entry), "status-fd=%d", status_fd);
			out = entry;
		}
		if (write(fd, out, strlen(out) + 1) < 0)
			die("record");
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
		die("record seals");
	return fd;
}

/* Moves fd to want (not close-on-exec). */
static void place(int fd, int want)
{
	if (fd == want) {
		fcntl(fd, F_SETFD, 0);
		return;
	}
	if (dup2(fd, want) < 0)
		die("dup2");
	close(fd);
}

int main(void)
{
	char *config, *record = NULL, *cwd = "/";
	char *env[MAX_ENV + 1];
	size_t n_env = 0;
	bool sysfs = false;
	uid_t uid = 0;
	gid_t gid = 0;
	char *args[MAX_ARGS + 1], *modules[64], *links[MAX_LINKS + 1] = {0}, *targets[MAX_LINKS];
	size_t len, record_len = 0, n_args = 0, n_modules = 0, n_links = 0;
	int ports[4], status_fd, record_fd, wstatus;
	pid_t pid;

	mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	/* Nothing the program runs may read this process's descriptors (the
	 * ports) through /proc/1/fd: a process it cannot trace. */
	prctl(PR_SET_DUMPABLE, 0);

	config = read_file("/sb/config", &len);
	if (!config)
		die("/sb/config");
	/* First pass: what must be there before the shares. */
	for (char *e = config; e < config + len; e += strlen(e) + 1) {
		if (strncmp(e, "module=", 7) == 0 && n_modules < 64)
			modules[n_modules++] = e + 7;
		else if (strcmp(e, "verbose=1") == 0)
			verbose = true;
		/* The host's probe of its accelerator (qemu.c): a guest that
		 * got here runs, and says so (a reset alone could be a
		 * crash's). */
		else if (strcmp(e, "probe=1") == 0) {
			say("probe: the guest runs");
			power_off();
		}
	}
	if (verbose)
		say("init at %ld ms", now_ms());
	load_modules(modules, n_modules);
	if (verbose)
		say("modules loaded at %ld ms", now_ms());

	if (mkdir_p(ROOT, 0755) < 0)
		die(ROOT);
	mount_or_die("tmpfs", ROOT, "tmpfs", MS_NOSUID, "mode=0755");
	make_dev();
	for (char *e = config; e < config + len; e += strlen(e) + 1) {
		if (strncmp(e, "ro=", 3) == 0)
			mount_share(e + 3, false);
		else if (strncmp(e, "rw=", 3) == 0)
			mount_share(e + 3, true);
		else if (strncmp(e, "file=", 5) == 0)
			mount_file(e + 5);
		else if (strncmp(e, "copy=", 5) == 0)
			mount_copy(e + 5);
		else if (strncmp(e, "mask-dir=", 9) == 0)
			mask(e + 9, true);
		else if (strncmp(e, "mask-file=", 10) == 0)
			mask(e + 10, false);
		else if (strncmp(e, "uid=", 4) == 0)
			uid = (uid_t)strtoul(e + 4, NULL, 10);
		else if (strncmp(e, "gid=", 4) == 0)
			gid = (gid_t)strtoul(e + 4, NULL, 10);
		else if (strcmp(e, "sysfs=1") == 0)
			sysfs = true;
		else if (strncmp(e, "cwd=", 4) == 0)
			cwd = e + 4;
		else if (strncmp(e, "arg=", 4) == 0 && n_args < MAX_ARGS)
			args[n_args++] = e + 4;
		else if (strncmp(e, "env=", 4) == 0 && n_env < MAX_ENV)
			env[n_env++] = e + 4;
		else if (strncmp(e, "link=", 5) == 0 && n_links < MAX_LINKS)
			links[n_links] = e + 5;
		else if (strncmp(e, "to=", 3) == 0 && n_links < MAX_LINKS && links[n_links])
			targets[n_links++] = e + 3;
	}
	args[n_args] = NULL;
	env[n_env] = NULL;
	if (n_args == 0)
		die("no command");
	{
		char target[PATH_MAX];

		snprintf(target, sizeof(target), ROOT "%s", cwd);
		if (mkdir_p(target, 0755) < 0)
			die(target);
		if (mkdir_p(ROOT "/proc", 0555) < 0 || mkdir_p(ROOT "/tmp", 01777) < 0)
			die(ROOT "/proc");
	}
	mount_or_die("proc", ROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	if (sysfs) {
		if (mkdir_p(ROOT "/sys", 0555) < 0)
			die(ROOT "/sys");
		mount_or_die("sysfs", ROOT "/sys", "sysfs",
			     MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	}
	record = read_file("/sb/record", &record_len);
	if (!record)
		die("/sb/record");
	/* It holds the host's environment: in this process's memory only
	 * (which nothing may trace), then in the sealed copy. */
	unlink("/sb/record");

	if (verbose)
		say("shares mounted at %ld ms", now_ms());
	ports[0] = open_port("sb.stdin", O_RDONLY);
	ports[1] = open_port("sb.stdout", O_WRONLY);
	ports[2] = open_port("sb.stderr", O_WRONLY);
	ports[3] = open_port("sb.status", O_WRONLY);

	/* The new root becomes /, read-only but the writable shares; the
	 * shares' mounts aside go (the files bound from them stay). */
	for (size_t i = 0; i < n_aside; i++) {
		char aside[PATH_MAX];

		snprintf(aside, sizeof(aside), SHARES "/%s", aside_tags[i]);
		umount2(aside, MNT_DETACH);
	}
	if (chdir(ROOT) < 0)
		die("chdir " ROOT);
	mount_or_die(ROOT, "/", NULL, MS_MOVE, NULL);
	if (chroot(".") < 0 || chdir("/") < 0)
		die("chroot");
	/* The root's links into /usr, where nothing was mounted. */
	for (size_t i = 0; i < n_links; i++) {
		struct stat st;

		if (lstat(links[i], &st) < 0 && symlink(targets[i], links[i]) < 0)
			die(links[i]);
	}
	mount_or_die(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, NULL);

	/* The inner python-sb writes its status lines to the host's port
	 * itself: no pipe to read here, whose reads would raise its
	 * lifeline's signal (the status descriptor is O_ASYNC, wrap.c). */
	status_fd = fcntl(ports[3], F_DUPFD_CLOEXEC, 3);
	if (status_fd < 0)
		die("status port");
	record_fd = make_record(record, record_len, status_fd);
	explicit_bzero(record, record_len);
	if (verbose)
		say("python-sb starts at %ld ms", now_ms());
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		char opt[64];

		prctl(PR_SET_DUMPABLE, 1);
		for (int i = 0; i < 3; i++)
			place(ports[i], i);
		close(ports[3]);
		fcntl(status_fd, F_SETFD, 0);
		fcntl(record_fd, F_SETFD, 0);
		/* The launching side's argv names its own descriptor. */
		snprintf(opt, sizeof(opt), "--pysandboxes-inside=%d", record_fd);
		for (size_t i = 1; i < n_args; i++)
			if (strncmp(args[i], "--pysandboxes-inside=", 21) == 0)
				args[i] = opt;
		if (chdir(cwd) < 0)
			_exit(127);
		/* The launching side's identity: the shares show the host's
		 * owners, and qemu writes as that user anyway. */
		if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
			die("identity");
		/* Nothing but a sanitizer build's options: the inner python-sb
		 * has the host's environment from the record. */
		execve(args[0], args, env);
		say("exec %s: %s", args[0], strerror(errno));
		_exit(127);
	}
	close(status_fd);
	close(record_fd);
	for (int i = 0; i < 3; i++)
		close(ports[i]);
	while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
		;
	/* Killed before it could report (the OOM killer): as a wrapper
	 * reports it, 128+N. One that exited reported its status itself, or
	 * never started (the host then says so). */
	if (WIFSIGNALED(wstatus))
		dprintf(ports[3], "exit=%d\n", 128 + WTERMSIG(wstatus));
	fsync(ports[3]);
	close(ports[3]);
	power_off();
}
