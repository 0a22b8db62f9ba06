/* SPDX-License-Identifier: MIT */
#pragma once

/* os-sandbox=qemu's guest: the kernel it boots (python-sb's own when it was
 * built and installed, scripts/qemu-kernel.sh: everything built in; else
 * Debian's, with the modules of virtio-mmio, the console ports and 9p beside
 * it) and the initramfs
 * written per run into a memfd: the guest's init (src/qemu-guest/init.c),
 * those modules in load order, the run's configuration and the handover
 * record (wrap.h). Uncompressed: the kernel unpacks it in a few milliseconds
 * where a compressed one would cost more than it saves under emulation. */

#include <stddef.h>

struct sb_profile;

/* The Debian package that provides a kernel with 9p (the cloud kernel has
 * none). */
#define SB_QEMU_KERNEL_PACKAGE "linux-image-amd64"

struct sb_qemu_kernel {
	char *image;	/* /boot/vmlinuz-<release>, or python-sb's own vmlinux */
	char *release;	/* its /lib/modules directory's name ("own-<mtime>": ours) */
	char **modules; /* the .ko files the guest loads, dependencies first */
};

/* The kernel to boot: the one override names (a Debian vmlinuz-<release>,
 * with its modules; any other name: a kernel with everything built in, as
 * python-sb's own), else own (python-sb's own kernel, where installed; may
 * be NULL), else the newest /boot/vmlinuz-* whose modules have 9p, with the
 * modules the guest needs. 0, or -ENOENT with *reterr naming the Debian
 * package. */
int sb_qemu_kernel_find(const char *override, const char *own, struct sb_qemu_kernel *ret,
			char **reterr);
void sb_qemu_kernel_done(struct sb_qemu_kernel *k);

/* The kernel as qemu should load it: Debian compresses its kernel with xz,
 * which the kernel's own decompressor takes about ten seconds to undo under
 * emulation; the ELF inside (booted through its PVH entry point) costs
 * nothing. It is unpacked with xz(1) once into cache_dir (NULL or unusable:
 * into a memfd per run, whose descriptor stays open for qemu) and reused
 * while the image keeps its size and time. *ret: the path for -kernel. 0, or
 * -errno with *reterr. xz is looked up in path_env as sb_wrap_find_binary()
 * does, checked against p. */
int sb_qemu_kernel_unpack(const struct sb_qemu_kernel *k, const char *cache_dir,
			  const char *path_env, const struct sb_profile *p, char **ret,
			  char **reterr);

/* What the initramfs holds besides the guest's init and the kernel's
 * modules. */
struct sb_qemu_initramfs {
	const char *init; /* the guest's init, as /init */
	const struct sb_qemu_kernel *kernel;
	const void *config; /* as /sb/config */
	size_t config_len;
	const void *record; /* as /sb/record */
	size_t record_len;
	/* Host files copied in as /files/0, /files/1... (small file grants:
	 * sharing their directory would show the guest's kernel the rest of
	 * it); may be NULL. */
	char *const *copies;
};

/* Writes the initramfs (a newc cpio archive) to fd. 0, or -errno with
 * *reterr. */
int sb_qemu_initramfs_write(int fd, const struct sb_qemu_initramfs *in, char **reterr);
