/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prefault.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; glibc 2.36's headers lack it */
#endif

struct prefault_search {
	uintptr_t address; /* 0: the main program, the first object listed */
	bool with_bss;
	size_t max_bytes;
	int result;
	bool found;
};

static bool object_holds(const struct dl_phdr_info *info, uintptr_t address)
{
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && address >= start && address - start < ph->p_memsz)
			return true;
	}
	return false;
}

static int populate_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct prefault_search *s = data;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), relro_end = 0;

	(void)size;
	if (s->address && !object_holds(info, s->address))
		return 0;
	s->found = true;
	/* The loader rounds the RELRO end down when it makes that part
	 * read-only: the page holding the end stays writable. A write populate
	 * of a read-only page is EFAULT. */
	for (size_t i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO)
			relro_end = (info->dlpi_addr + info->dlpi_phdr[i].p_vaddr +
				     info->dlpi_phdr[i].p_memsz) &
				    ~(page - 1);
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start, end;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		start = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
		end = (info->dlpi_addr + ph->p_vaddr + (s->with_bss ? ph->p_memsz : ph->p_filesz) +
		       page - 1) &
		      ~(page - 1);
		if (start < relro_end)
			start = relro_end;
		if (start >= end || end - start > s->max_bytes)
			continue;
		if (madvise((void *)start, end - start, MADV_POPULATE_WRITE) < 0 && s->result == 0)
			s->result = -errno;
	}
	return 1;
}

int sb_prefault_object_data(const void *object, bool with_bss, size_t max_bytes)
{
	struct prefault_search s = {
	    .address = (uintptr_t)object, .with_bss = with_bss, .max_bytes = max_bytes};

	dl_iterate_phdr(populate_object, &s);
	return s.found ? s.result : -ENOENT;
}
