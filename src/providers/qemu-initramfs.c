/* SPDX-License-Identifier: MIT */
/* os-sandbox=qemu's kernel and initramfs (qemu-initramfs.h). */
#include "qemu-initramfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "util.h"
#include "wrap-common.h"

#define MODULES_DIR "/lib/modules"
#define BOOT_DIR    "/boot"

/* What the guest's init loads: the transport (microvm's devices are
 * virtio-mmio), the console ports, 9p over virtio. Their dependencies come
 * from modules.dep. */
static const char *const wanted_modules[] = {
    "kernel/drivers/virtio/virtio_mmio.ko",
    "kernel/drivers/char/virtio_console.ko",
    "kernel/net/9p/9pnet_virtio.ko",
    "kernel/fs/9p/9p.ko",
};

void sb_qemu_kernel_done(struct sb_qemu_kernel *k)
{
	free(k->image);
	free(k->release);
	sb_strv_free(k->modules);
	*k = (struct sb_qemu_kernel){0};
}

static bool has_9p(const char *release)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), MODULES_DIR "/%s/kernel/fs/9p/9p.ko", release);
	return access(path, R_OK) == 0;
}

/* The newest /boot/vmlinuz-<release> with 9p among its modules. */
static int newest_kernel(char **ret_release)
{
	DIR *d = opendir(BOOT_DIR);
	struct dirent *de;
	char *best = NULL;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		const char *release = startswith(de->d_name, "vmlinuz-");

		if (!release || !has_9p(release) || (best && strverscmp(release, best) <= 0))
			continue;
		free(best);
		best = strdup(release);
		if (!best) {
			closedir(d);
			return -ENOMEM;
		}
	}
	closedir(d);
	if (!best)
		return -ENOENT;
	*ret_release = best;
	return 0;
}

/* The line of modules.dep for module (relative path), its dependencies
 * after the colon; NULL when absent. */
static const char *dep_line(const char *deps, const char *module)
{
	size_t len = strlen(module);

	for (const char *line = deps; *line; line = strchrnul(line, '\n') + (*line ? 1 : 0)) {
		if (strncmp(line, module, len) == 0 && line[len] == ':')
			return line + len + 1;
		if (!*strchrnul(line, '\n'))
			break;
	}
	return NULL;
}

/* module and, before it, what it depends on: modules.dep lists the whole
 * closure, the deepest last, so it is loaded in reverse. */
static int add_module(struct sb_qemu_kernel *k, const char *deps, const char *module)
{
	const char *line = dep_line(deps, module);
	_cleanup_strv_free_ char **list = NULL;
	int r = 0;

	if (!line)
		return -ENOENT;
	for (const char *p = line; r >= 0 && *p && *p != '\n';) {
		size_t n;

		p += strspn(p, " ");
		n = strcspn(p, " \n");
		if (n) {
			_cleanup_free_ char *one = strndup(p, n);

			r = one ? sb_strv_push(&list, one) : -ENOMEM;
		}
		p += n;
	}
	for (size_t i = sb_strv_length(list); r >= 0 && i > 0; i--)
		if (!sb_strv_contains(k->modules, list[i - 1]))
			r = sb_strv_push(&k->modules, list[i - 1]);
	if (r >= 0 && !sb_strv_contains(k->modules, module))
		r = sb_strv_push(&k->modules, module);
	return r;
}

/* A kernel with everything built in (python-sb's own): no modules. The
 * release names it by its time, for the KVM verdict kept per kernel. */
static int self_contained(const char *image, struct sb_qemu_kernel *ret)
{
	struct stat st;

	if (stat(image, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOENT;
	if (asprintf(&ret->release, "own-%lld-%lld", (long long)st.st_size,
		     (long long)st.st_mtime) < 0) {
		ret->release = NULL;
		return -ENOMEM;
	}
	ret->image = strdup(image);
	return ret->image ? 0 : -ENOMEM;
}

/* Debian's kernel release (its image given, or the newest in /boot) with
 * the modules the guest needs. */
static int debian_kernel(const char *image, const char *release, struct sb_qemu_kernel *k,
			 char **reterr)
{
	_cleanup_free_ char *deps = NULL;
	char path[PATH_MAX];
	size_t len;
	int r;

	if (release) {
		k->release = strdup(release);
		k->image = strdup(image);
	} else {
		r = newest_kernel(&k->release);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return sb_error(reterr, -ENOENT,
					"os-sandbox=qemu needs a Linux kernel with 9p in " BOOT_DIR
					" (the cloud kernel has none): install the Debian package "
					"%s (apt-get install %s)",
					SB_QEMU_KERNEL_PACKAGE, SB_QEMU_KERNEL_PACKAGE);
		if (asprintf(&k->image, BOOT_DIR "/vmlinuz-%s", k->release) < 0)
			k->image = NULL;
	}
	if (!k->release || !k->image)
		return -ENOMEM;
	snprintf(path, sizeof(path), MODULES_DIR "/%s/modules.dep", k->release);
	r = sb_read_file(path, 64u << 20, &deps, &len);
	if (r < 0)
		return sb_error(reterr, -ENOENT,
				"%s: %s (the kernel %s has no modules here: install the Debian "
				"package %s)",
				path, strerror(-r), k->image, SB_QEMU_KERNEL_PACKAGE);
	for (size_t i = 0; i < ELEMENTSOF(wanted_modules); i++) {
		r = add_module(k, deps, wanted_modules[i]);
		if (r == -ENOENT)
			return sb_error(reterr, r,
					"the kernel %s has no module %s: os-sandbox=qemu needs "
					"Debian's %s",
					k->image, wanted_modules[i], SB_QEMU_KERNEL_PACKAGE);
		if (r < 0)
			return r;
	}
	return 0;
}

int sb_qemu_kernel_find(const char *override, const char *own, struct sb_qemu_kernel *ret,
			char **reterr)
{
	_cleanup_(sb_qemu_kernel_done) struct sb_qemu_kernel k = {0};
	int r;

	if (override) {
		const char *base = strrchr(override, '/');
		const char *release = startswith(base ? base + 1 : override, "vmlinuz-");

		if (access(override, R_OK) < 0)
			return sb_error(reterr, -ENOENT,
					"PYSANDBOXES_QEMU_KERNEL=%s: no readable kernel image "
					"(a Debian vmlinuz-<release> with its modules, or a "
					"kernel with everything built in)",
					override);
		r = release ? debian_kernel(override, release, &k, reterr)
			    : self_contained(override, &k);
		if (r < 0 && r != -ENOMEM && !(reterr && *reterr))
			return sb_error(reterr, r, "PYSANDBOXES_QEMU_KERNEL=%s: %s", override,
					strerror(-r));
	} else {
		/* python-sb's own where it was installed; a broken one is
		 * passed over for Debian's. */
		r = own && access(own, R_OK) == 0 ? self_contained(own, &k) : -ENOENT;
		if (r < 0 && r != -ENOMEM) {
			sb_qemu_kernel_done(&k);
			r = debian_kernel(NULL, NULL, &k, reterr);
		}
	}
	if (r < 0)
		return r;
	*ret = k;
	k = (struct sb_qemu_kernel){0};
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The kernel unpacked */

/* Where the compressed kernel lies in a bzImage (the boot protocol's setup
 * header), and the size it unpacks to (the four bytes the kernel's build
 * appends to an xz payload); false when it is no bzImage holding xz. */
static bool xz_payload(int fd, off_t *ret_off, unsigned long long *ret_size)
{
	unsigned char hdr[0x250], magic[6], size[4];
	unsigned setup_sects;
	unsigned long long off, len;

	if (pread(fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    memcmp(hdr + 0x202, "HdrS", 4) != 0)
		return false;
	setup_sects = hdr[0x1f1] ? hdr[0x1f1] : 4;
	off = (setup_sects + 1ull) * 512 + (hdr[0x248] | hdr[0x249] << 8 | hdr[0x24a] << 16 |
					    (unsigned long long)hdr[0x24b] << 24);
	len =
	    hdr[0x24c] | hdr[0x24d] << 8 | hdr[0x24e] << 16 | (unsigned long long)hdr[0x24f] << 24;
	if (len < 16 || pread(fd, magic, sizeof(magic), (off_t)off) != (ssize_t)sizeof(magic) ||
	    memcmp(magic,
		   "\xfd"
		   "7zXZ\0",
		   6) != 0 ||
	    pread(fd, size, sizeof(size), (off_t)(off + len - 4)) != (ssize_t)sizeof(size))
		return false;
	*ret_off = (off_t)off;
	*ret_size = size[0] | size[1] << 8 | size[2] << 16 | (unsigned long long)size[3] << 24;
	return true;
}

/* cache_dir made if need be, and only if this user alone can write it. */
static bool cache_usable(const char *dir)
{
	struct stat st;

	if (!dir)
		return false;
	if (stat(dir, &st) < 0) {
		_cleanup_free_ char *parent = strdup(dir);
		char *slash = parent ? strrchr(parent, '/') : NULL;

		if (!slash || slash == parent)
			return false;
		*slash = '\0';
		/* One level above may be missing too (~/.cache). */
		if (access(parent, F_OK) < 0 && mkdir(parent, 0700) < 0)
			return false;
		if (mkdir(dir, 0700) < 0 || stat(dir, &st) < 0)
			return false;
	}
	return S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022) &&
	       access(dir, W_OK) == 0;
}

/* xz -dc with stdin at the payload, stdout out_fd. */
static int run_xz(const char *xz, int in_fd, int out_fd, char **reterr)
{
	posix_spawn_file_actions_t fa;
	char *argv[] = {(char *)xz, (char *)"-dc", NULL};
	char *envp[] = {NULL};
	pid_t pid;
	int r, status;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	r = -posix_spawn(&pid, xz, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (r < 0)
		return sb_error(reterr, r, "cannot run %s: %s", xz, strerror(-r));
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	/* xz ends with an error on the bytes after its stream (the size the
	 * kernel's build appends): the output's size is the check. */
	return 0;
}

int sb_qemu_kernel_unpack(const struct sb_qemu_kernel *k, const char *cache_dir,
			  const char *path_env, const struct sb_profile *p, char **ret,
			  char **reterr)
{
	_cleanup_close_ int in = open(k->image, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int out = -1;
	_cleanup_free_ char *xz = NULL, *cached = NULL, *tmp = NULL;
	unsigned long long size;
	struct stat st, cst;
	off_t off;
	int r;

	if (in < 0 || fstat(in, &st) < 0)
		return sb_error(reterr, -errno, "%s: %s", k->image, strerror(errno));
	if (!xz_payload(in, &off, &size)) {
		/* An ELF, or a kernel compressed otherwise: as it is. */
		*ret = strdup(k->image);
		return *ret ? 0 : -ENOMEM;
	}
	if (cache_usable(cache_dir)) {
		if (asprintf(&cached, "%s/vmlinux-%s-%lld-%lld", cache_dir, k->release,
			     (long long)st.st_size, (long long)st.st_mtime) < 0)
			return -ENOMEM;
		if (stat(cached, &cst) == 0 && (unsigned long long)cst.st_size == size &&
		    cst.st_uid == geteuid()) {
			*ret = TAKE_PTR(cached);
			return 0;
		}
		if (asprintf(&tmp, "%s.XXXXXX", cached) < 0)
			return -ENOMEM;
		out = mkostemp(tmp, O_CLOEXEC);
		if (out < 0)
			return sb_error(reterr, -errno, "%s: %s", tmp, strerror(errno));
	} else {
		/* Inherited by qemu, which reads it through /proc/self/fd. */
		out = memfd_create("python-sb-vmlinux", 0);
		if (out < 0)
			return sb_error(reterr, -errno, "memfd_create: %s", strerror(errno));
	}
	r = sb_wrap_find_binary("xz", "xz-utils", path_env, p, &xz, reterr);
	if (r >= 0 && lseek(in, off, SEEK_SET) < 0)
		r = sb_error(reterr, -errno, "%s: %s", k->image, strerror(errno));
	if (r >= 0)
		r = run_xz(xz, in, out, reterr);
	if (r >= 0 && (fstat(out, &cst) < 0 || (unsigned long long)cst.st_size != size))
		r = sb_error(reterr, -EIO, "cannot unpack the kernel %s with %s", k->image, xz);
	if (r >= 0 && tmp && rename(tmp, cached) < 0)
		r = sb_error(reterr, -errno, "%s: %s", cached, strerror(errno));
	if (r < 0) {
		if (tmp)
			unlink(tmp);
		return r;
	}
	if (cached) {
		*ret = TAKE_PTR(cached);
		return 0;
	}
	if (asprintf(ret, "/proc/self/fd/%d", out) < 0)
		return -ENOMEM;
	out = -1; /* stays open for qemu */
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The newc cpio archive */

struct cpio {
	int fd;
	unsigned ino;
	off_t off;
};

static int put(struct cpio *c, const void *data, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = write(c->fd, (const char *)data + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	c->off += (off_t)len;
	return 0;
}

static int pad4(struct cpio *c)
{
	static const char zeros[4];
	size_t n = (size_t)((4 - (c->off & 3)) & 3);

	return n ? put(c, zeros, n) : 0;
}

static int entry(struct cpio *c, const char *name, unsigned mode, const void *data, size_t len)
{
	char header[160];
	int r;

	snprintf(header, sizeof(header),
		 "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X", ++c->ino, mode, 0u,
		 0u, 1u, 0u, len, 0u, 0u, 0u, 0u, strlen(name) + 1, 0u);
	r = put(c, header, 110);
	if (r >= 0)
		r = put(c, name, strlen(name) + 1);
	if (r >= 0)
		r = pad4(c);
	if (r >= 0 && len)
		r = put(c, data, len);
	return r < 0 ? r : pad4(c);
}

#define MODULE_SIG_MARKER "~Module signature appended~\n"

/* A module's length without its signature: the kernel checks a signature
 * it is given (RSA, a tenth of a second per module under emulation) but
 * loads an unsigned module all the same when the host does not enforce
 * them (it taints itself, which the guest does not mind). The guest
 * trusts this initramfs as a whole: the launching side wrote it. */
static size_t unsigned_length(const char *data, size_t len)
{
	const size_t marker = sizeof(MODULE_SIG_MARKER) - 1, info = 12;
	const unsigned char *sig;
	size_t sig_len;

	if (len < marker + info || memcmp(data + len - marker, MODULE_SIG_MARKER, marker) != 0)
		return len;
	/* struct module_signature: algo, hash, id_type, signer_len,
	 * key_id_len, pad[3], sig_len (big-endian). */
	sig = (const unsigned char *)data + len - marker - info;
	sig_len = (size_t)sig[8] << 24 | (size_t)sig[9] << 16 | (size_t)sig[10] << 8 | sig[11];
	sig_len += sig[3] + sig[4];
	if (sig_len > len - marker - info)
		return len;
	return len - marker - info - sig_len;
}

static int file_entry(struct cpio *c, const char *name, unsigned mode, const char *path,
		      bool module, char **reterr)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = sb_read_file(path, 256u << 20, &data, &len);

	if (r < 0)
		return sb_error(reterr, r, "cannot read %s: %s", path, strerror(-r));
	return entry(c, name, mode, data, module ? unsigned_length(data, len) : len);
}

int sb_qemu_initramfs_write(int fd, const struct sb_qemu_initramfs *in, char **reterr)
{
	static const char *const dirs[] = {"dev", "proc", "sys", "sb", "modules", "files"};
	const struct sb_qemu_kernel *k = in->kernel;
	struct cpio c = {.fd = fd};
	int r = 0;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(dirs); i++)
		r = entry(&c, dirs[i], S_IFDIR | 0755, NULL, 0);
	if (r >= 0)
		r = file_entry(&c, "init", S_IFREG | 0755, in->init, false, reterr);
	for (char **m = k->modules; r >= 0 && m && *m; m++) {
		char name[PATH_MAX], path[PATH_MAX];

		snprintf(name, sizeof(name), "modules/%s", strrchr(*m, '/') + 1);
		snprintf(path, sizeof(path), MODULES_DIR "/%s/%s", k->release, *m);
		r = file_entry(&c, name, S_IFREG | 0644, path, true, reterr);
	}
	for (size_t i = 0; r >= 0 && in->copies && in->copies[i]; i++) {
		char name[32];

		snprintf(name, sizeof(name), "files/%zu", i);
		r = file_entry(&c, name, S_IFREG | 0644, in->copies[i], false, reterr);
	}
	if (r >= 0)
		r = entry(&c, "sb/config", S_IFREG | 0600, in->config, in->config_len);
	if (r >= 0)
		r = entry(&c, "sb/record", S_IFREG | 0600, in->record, in->record_len);
	if (r >= 0)
		r = entry(&c, "TRAILER!!!", 0, NULL, 0);
	if (r < 0 && reterr && !*reterr)
		return sb_error(reterr, r, "cannot write the initramfs: %s", strerror(-r));
	return r;
}
