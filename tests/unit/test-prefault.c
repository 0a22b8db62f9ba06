/* SPDX-License-Identifier: MIT */
/* sb_prefault_object_data(): the pages of this program's .data (and, when
 * asked, .bss) are mapped (present in /proc/self/pagemap) after the call and
 * not before, as private copies rather than the file's pages; a segment above
 * the size cap and an address outside every object are left alone. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prefault.h"
#include "tap.h"
#include "util.h"

#define PAGES 64

/* Initialised: in .data, backed by the file until written. Aligned, so that
 * no other variable shares (and touches) their pages. */
static char data_pages[PAGES * 4096] __attribute__((aligned(4096))) = {1};
static char bss_pages[PAGES * 4096] __attribute__((aligned(4096)));

#define PM_PRESENT     (1ull << 63)
#define PM_FILE_SHARED (1ull << 61) /* a page-cache or shared page, not a private copy */

/* How many of the n pages from p are present, and how many of those are
 * the file's own pages. -1 when pagemap cannot be read. */
static int count_present(const char *p, size_t n, int *ret_file)
{
	_cleanup_close_ int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	int present = 0;

	*ret_file = 0;
	if (fd < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		uint64_t e;
		off_t at = (off_t)(((uintptr_t)p / 4096 + i) * sizeof(e));

		if (pread(fd, &e, sizeof(e), at) != (ssize_t)sizeof(e))
			return -1;
		if (e & PM_PRESENT) {
			present++;
			if (e & PM_FILE_SHARED)
				(*ret_file)++;
		}
	}
	return present;
}

int main(void)
{
	int file, before_data, before_bss, r;

	void *probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (probe == MAP_FAILED || madvise(probe, 4096, 23 /* MADV_POPULATE_WRITE */) < 0)
		return tap_skip_all("no MADV_POPULATE_WRITE (Linux 5.14)");
	munmap(probe, 4096);
	/* The file's pages of .data may be mapped already (the kernel maps a
	 * read fault's neighbours too); no private copy is. */
	before_data = count_present(data_pages, PAGES, &file);
	before_data -= file;
	before_bss = count_present(bss_pages, PAGES, &file);
	if (before_data < 0 || before_bss < 0)
		return tap_skip_all("/proc/self/pagemap cannot be read");
	tap_ok(before_data == 0 && before_bss == 0,
	       "untouched .data and .bss pages have no private copy before (%d, %d of %d)",
	       before_data, before_bss, PAGES);

	/* Smaller than the segment: nothing is done. */
	r = sb_prefault_object_data(NULL, true, 4096);
	TAP_IS_INT(r, 0, "a segment above the cap is no error");
	tap_ok(count_present(bss_pages, PAGES, &file) == 0, "and is left unmapped");

	r = sb_prefault_object_data((const void *)8, true, 1u << 30);
	TAP_IS_INT(r, -ENOENT, "an address no loaded object holds");

	/* 0 also says the RELRO part was skipped: a write populate of a
	 * read-only page is EFAULT. */
	r = sb_prefault_object_data((const void *)main, false, 1u << 30);
	TAP_IS_INT(r, 0, "this program's writable data prefaulted");
	tap_ok(count_present(data_pages, PAGES, &file) == PAGES && file == 0,
	       "every .data page is mapped, as a private copy (%d file pages)", file);
	tap_ok(count_present(bss_pages, PAGES, &file) == 0, "the .bss is not, unless asked");

	r = sb_prefault_object_data((const void *)main, true, 1u << 30);
	TAP_IS_INT(r, 0, "this program's data and .bss prefaulted");
	tap_ok(count_present(bss_pages, PAGES, &file) == PAGES, "every .bss page is mapped");
	tap_ok(data_pages[0] == 1 && data_pages[PAGES * 4096 - 1] == 0 && bss_pages[7] == 0,
	       "contents unchanged");
	return tap_done();
}
