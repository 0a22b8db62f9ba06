/* SPDX-License-Identifier: MIT */
/* runner.h: what a run reads from memory: its stdin, --fresh-exec's rule file. A memfd is memory
 * outside the run's RLIMIT_AS: handed over writable, a program could fallocate() or write()
 * gigabytes into it (bounded only by limit-file-size, which a profile may not set), charged to no
 * one. So the content is sealed (no write, no growth, no shrinking, no new seal) and the run gets a
 * read-only descriptor of it. */
#include "runner.h"

#include <fcntl.h>
#include <sys/mman.h>

#define STDIN_SEALS (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL)

int sb_run_readonly_memfd(const char *name, const char *data, size_t len)
{
	_cleanup_close_ int fd = sb_memfd_with_flags(name, data, len, MFD_ALLOW_SEALING);
	char path[64];
	int ro;

	if (fd < 0)
		return fd;
	if (fcntl(fd, F_ADD_SEALS, STDIN_SEALS) < 0)
		return -errno;
	/* A new open file description, read-only, at offset 0: the seals
	 * already refuse writes (EPERM); this refuses them at the descriptor
	 * (EBADF), whatever the seals. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	if (ro < 0)
		return -errno;
	return ro;
}
