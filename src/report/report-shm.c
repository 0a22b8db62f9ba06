/* SPDX-License-Identifier: MIT */
/* The report region: created, sealed and mapped by the supervisor before the
 * fork, read back after the program's process tree is gone (report-shm.h). */
#include "report-shm.h"

#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>

#include "util.h"

struct sb_report_shm *sb_report_region;

int sb_report_shm_create(char **reterr)
{
	_cleanup_close_ int fd = -1;
	void *map;

	if (sb_report_region)
		return 0;
	fd = memfd_create("python-sb-report", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return sb_error(reterr, -errno, "report: cannot create its memory: %s",
				strerror(errno));
	if (ftruncate(fd, sizeof(struct sb_report_shm)) < 0)
		return sb_error(reterr, -errno, "report: cannot size its memory: %s",
				strerror(errno));
	/* The program could otherwise shrink the file under the supervisor's
	 * mapping, and the supervisor's reads past the end would fault. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return sb_error(reterr, -errno, "report: cannot seal its memory: %s",
				strerror(errno));
	map = mmap(NULL, sizeof(struct sb_report_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return sb_error(reterr, -errno, "report: cannot map its memory: %s",
				strerror(errno));
	/* The mapping is all the child needs: the descriptor is closed here,
	 * before the fork, so there is none to find in the sandbox. */
	sb_report_region = map;
	return 0;
}

void sb_report_shm_destroy(void)
{
	if (sb_report_region)
		munmap(sb_report_region, sizeof(struct sb_report_shm));
	sb_report_region = NULL;
}

int sb_report_shm_snapshot(struct sb_report_shm **ret)
{
	const struct sb_report_shm *shm = sb_report_region;
	struct sb_report_shm *copy;
	uint32_t n;

	if (!shm || shm->magic != SB_REPORT_SHM_MAGIC)
		return -ENOENT;
	/* calloc() of this size maps fresh pages: those not written stay
	 * unallocated. */
	copy = calloc(1, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	memcpy(copy, shm, offsetof(struct sb_report_shm, fn_used));
	copy->lines_max =
	    shm->lines_max < SB_REPORT_LINES_MAX ? shm->lines_max : SB_REPORT_LINES_MAX - 1;
	memcpy(copy->line_counts, shm->line_counts,
	       (copy->lines_max + 1) * sizeof(copy->line_counts[0]));
	n = copy->n_functions < SB_REPORT_FN_MAX ? copy->n_functions : SB_REPORT_FN_MAX;
	copy->n_functions = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint16_t slot = shm->fn_used[i];

		if (slot >= SB_REPORT_FN_SLOTS || copy->functions[slot].key)
			continue; /* not a slot, or one listed twice */
		copy->functions[slot] = shm->functions[slot];
		if (!copy->functions[slot].key)
			continue;
		copy->fn_used[copy->n_functions++] = slot;
	}
	if (copy->n_denials > SB_REPORT_DENIALS_MAX)
		copy->n_denials = SB_REPORT_DENIALS_MAX;
	memcpy(copy->denials, shm->denials, copy->n_denials * sizeof(copy->denials[0]));
	if (copy->strings_used > SB_REPORT_STRINGS_SIZE)
		copy->strings_used = SB_REPORT_STRINGS_SIZE;
	memcpy(copy->strings, shm->strings, copy->strings_used);
	*ret = copy;
	return 0;
}

bool sb_report_shm_str_add(struct sb_report_shm *shm, const char *s, size_t n,
			   struct sb_report_str *ret)
{
	size_t room = SB_REPORT_STRINGS_SIZE - shm->strings_used;

	if (shm->strings_used > SB_REPORT_STRINGS_SIZE)
		return false;
	if (n > room) {
		shm->flags |= SB_REPORT_F_STRINGS_FULL;
		n = room;
		/* Not in the middle of a character: the reader keeps what is
		 * valid UTF-8 only. */
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	if (n == 0 && room == 0)
		return false;
	memcpy(shm->strings + shm->strings_used, s, n);
	*ret = (struct sb_report_str){.off = shm->strings_used, .len = (uint32_t)n};
	shm->strings_used += (uint32_t)n;
	return true;
}

const char *sb_report_shm_str(const struct sb_report_shm *snap, struct sb_report_str s,
			      size_t *ret_len)
{
	if (s.off > SB_REPORT_STRINGS_SIZE || s.len > SB_REPORT_STRINGS_SIZE - s.off)
		return NULL;
	*ret_len = s.len;
	return snap->strings + s.off;
}
