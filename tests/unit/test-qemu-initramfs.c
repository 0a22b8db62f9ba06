/* SPDX-License-Identifier: MIT */
/* os-sandbox=qemu's initramfs and kernel lookup (qemu-initramfs.h), without
 * booting anything: the archive is read back as the kernel would unpack it
 * (newc: each header and name and body 4-aligned), and the kernel lookup
 * fails closed naming the Debian package. test_kernel_qemu.py boots them. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qemu-initramfs.h"
#include "tap.h"

static char dir[] = "/tmp/sb-qemu-test-XXXXXX";

struct member {
	char name[64];
	unsigned mode;
	size_t size;
	const char *data;
};

static unsigned long hex8(const char *p)
{
	char buf[9];

	memcpy(buf, p, 8);
	buf[8] = '\0';
	return strtoul(buf, NULL, 16);
}

/* The members of a newc archive, in order; -1 on a malformed one. */
static int read_archive(const char *a, size_t len, struct member *out, size_t max)
{
	size_t off = 0, n = 0;

	while (off + 110 <= len && n < max) {
		size_t namesize, filesize;

		if (off % 4 != 0 || memcmp(a + off, "070701", 6) != 0)
			return -1;
		out[n].mode = (unsigned)hex8(a + off + 14);
		filesize = hex8(a + off + 54);
		namesize = hex8(a + off + 94);
		if (off + 110 + namesize > len || namesize == 0 || namesize > sizeof(out[n].name) ||
		    a[off + 110 + namesize - 1] != '\0')
			return -1;
		memcpy(out[n].name, a + off + 110, namesize);
		off = (off + 110 + namesize + 3) & ~(size_t)3;
		out[n].size = filesize;
		out[n].data = a + off;
		off = (off + filesize + 3) & ~(size_t)3;
		if (strcmp(out[n++].name, "TRAILER!!!") == 0)
			return off == len ? (int)n : -1;
	}
	return -1;
}

static void test_archive(void)
{
	static const char config[] = "module=a.ko\0arg=/bin/python-sb";
	static const char record[] = "python-sb-inside 1\0provider=qemu";
	static const char *const names[] = {"dev",	 "proc",      "sys",	   "sb",
					    "modules",	 "files",     "init",	   "files/0",
					    "sb/config", "sb/record", "TRAILER!!!"};
	struct sb_qemu_kernel k = {.image = (char *)"/nonexistent", .release = (char *)"0"};
	char init[PATH_MAX], copied[PATH_MAX], *err = NULL;
	char *copies[] = {copied, NULL};
	struct sb_qemu_initramfs in = {.kernel = &k,
				       .config = config,
				       .config_len = sizeof(config),
				       .record = record,
				       .record_len = sizeof(record),
				       .copies = copies};
	struct member m[16];
	struct stat st;
	char *a;
	int fd, ifd, n, r;

	snprintf(copied, sizeof(copied), "%s/copied.txt", dir);
	ifd = open(copied, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	tap_ok(ifd >= 0 && write(ifd, "COPIED", 6) == 6, "a file to copy written");
	close(ifd);
	snprintf(init, sizeof(init), "%s/init", dir);
	ifd = open(init, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	tap_ok(ifd >= 0 && write(ifd, "INIT-BYTES", 10) == 10, "the init written");
	close(ifd);
	fd = memfd_create("test", 0);
	in.init = init;
	TAP_IS_INT(sb_qemu_initramfs_write(fd, &in, &err), 0, "the initramfs is written");
	fstat(fd, &st);
	a = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	n = read_archive(a, (size_t)st.st_size, m, 16);
	TAP_IS_INT(n, 11, "a newc archive of 11 members, each 4-aligned, ending at the trailer");
	for (int i = 0; i < n && i < 11; i++)
		TAP_IS_STR(m[i].name, names[i], "member in order");
	if (n == 11) {
		tap_ok(S_ISDIR(m[0].mode) && S_ISREG(m[6].mode) && (m[6].mode & 0777) == 0755,
		       "directories, an executable init");
		tap_ok(m[6].size == 10 && memcmp(m[6].data, "INIT-BYTES", 10) == 0,
		       "the init's bytes");
		tap_ok(m[7].size == 6 && memcmp(m[7].data, "COPIED", 6) == 0, "the copied file");
		tap_ok(m[8].size == sizeof(config) &&
			   memcmp(m[8].data, config, sizeof(config)) == 0,
		       "the configuration, NUL-separated");
		tap_ok(m[9].size == sizeof(record) &&
			   memcmp(m[9].data, record, sizeof(record)) == 0,
		       "the record");
		tap_ok((m[9].mode & 0777) == 0600, "the record readable by root alone");
	}
	munmap(a, (size_t)st.st_size);
	close(fd);

	/* A missing init: an error naming it, nothing half-written counted. */
	fd = memfd_create("test", 0);
	free(err);
	err = NULL;
	in.init = "/nonexistent/init";
	r = sb_qemu_initramfs_write(fd, &in, &err);
	tap_ok(r == -ENOENT && err && strstr(err, "/nonexistent/init"),
	       "a missing init is an error naming it (%s)", err ? err : "(none)");
	close(fd);
	free(err);
}

static void test_kernel_lookup(void)
{
	struct sb_qemu_kernel k = {0};
	char path[PATH_MAX], *err = NULL, *unpacked = NULL;
	int fd, r;

	snprintf(path, sizeof(path), "%s/missing-vmlinux", dir);
	r = sb_qemu_kernel_find(path, NULL, &k, &err);
	tap_ok(r == -ENOENT && err && strstr(err, "no readable kernel image"),
	       "a missing kernel is refused (%s)", err ? err : "(none)");
	free(err);
	err = NULL;

	/* Any other name: a kernel with everything built in (python-sb's
	 * own), booted without modules. */
	snprintf(path, sizeof(path), "%s/vmlinux", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(fd);
	r = sb_qemu_kernel_find(path, NULL, &k, &err);
	tap_ok(r == 0 && k.image && strcmp(k.image, path) == 0 && !k.modules && k.release &&
		   strncmp(k.release, "own-", 4) == 0,
	       "a kernel not named vmlinuz-<release> is booted without modules (%s)",
	       k.release ? k.release : "(none)");
	sb_qemu_kernel_done(&k);
	free(err);
	err = NULL;

	/* python-sb's own kernel, where installed, before /boot's. */
	r = sb_qemu_kernel_find(NULL, path, &k, &err);
	tap_ok(r == 0 && k.image && strcmp(k.image, path) == 0 && !k.modules,
	       "python-sb's own kernel is taken over /boot's");
	sb_qemu_kernel_done(&k);
	free(err);
	err = NULL;

	snprintf(path, sizeof(path), "%s/vmlinuz-0.0-sb-test", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	tap_ok(fd >= 0 && write(fd, "not a kernel", 12) == 12, "a fake kernel written");
	close(fd);
	r = sb_qemu_kernel_find(path, NULL, &k, &err);
	tap_ok(r == -ENOENT && err &&
		   strstr(err, "install the Debian package " SB_QEMU_KERNEL_PACKAGE),
	       "a kernel without its modules fails closed, naming the package (%s)",
	       err ? err : "(none)");
	free(err);
	err = NULL;

	/* What is not an xz bzImage is booted as it is (an ELF, an LZ4
	 * kernel): no cache, no xz. */
	k = (struct sb_qemu_kernel){.image = path, .release = (char *)"0.0-sb-test"};
	TAP_IS_INT(sb_qemu_kernel_unpack(&k, NULL, "/nonexistent", NULL, &unpacked, &err), 0,
		   "a kernel that is no xz bzImage needs no unpacking");
	TAP_IS_STR(unpacked, path, "... and is booted from its own path");
	free(unpacked);
	free(err);
}

int main(void)
{
	char cmd[PATH_MAX + 16];

	if (!mkdtemp(dir))
		return tap_skip_all("no temporary directory");
	test_archive();
	test_kernel_lookup();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		tap_diag("cannot remove %s", dir);
	return tap_done();
}
