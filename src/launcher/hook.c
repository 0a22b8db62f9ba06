/* SPDX-License-Identifier: MIT */
/*
 * python-sb as a start-up hook of Debian's own python3.X (docs/development.md,
 * "Two binaries"; bench/README.md, "The layout gap"): the installed python-sb
 * is a copy of the system's interpreter with this library added to its needed
 * ones (scripts/install-hook.sh). The library's constructor runs before the
 * executable's main() and is python-sb's whole main: the profile, the
 * boundary, the guard armed before the interpreter exists, the embedded run
 * through the embedding API, exactly as in the static python-sb, then exit().
 * The interpreter's own main() never runs; its machine code (LTO and PGO) does
 * the rest. The Py* symbols stay undefined here and resolve against the
 * executable, which exports CPython's API.
 */
#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "launcher.h"
#include "prefault.h"

#define BUILD_ID_MAX 64

static size_t note_build_id(const unsigned char *p, size_t len, unsigned char id[BUILD_ID_MAX])
{
	while (len >= sizeof(ElfW(Nhdr))) {
		const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
		size_t name = (n->n_namesz + 3) & ~(size_t)3, desc = (n->n_descsz + 3) & ~(size_t)3;
		size_t total = sizeof(*n) + name + desc;

		if (total > len)
			return 0;
		if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
		    memcmp(p + sizeof(*n), "GNU", 4) == 0 && n->n_descsz <= BUILD_ID_MAX) {
			memcpy(id, p + sizeof(*n) + name, n->n_descsz);
			return n->n_descsz;
		}
		p += total;
		len -= total;
	}
	return 0;
}

/* This process's executable: its notes are mapped. */
static size_t own_build_id(unsigned char id[BUILD_ID_MAX])
{
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
	size_t phnum = getauxval(AT_PHNUM), n;
	uintptr_t base = 0;

	if (!ph)
		return 0;
	for (size_t i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_PHDR)
			base = (uintptr_t)ph - ph[i].p_vaddr;
	for (size_t i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_NOTE &&
		    (n = note_build_id((const unsigned char *)(base + ph[i].p_vaddr), ph[i].p_memsz,
				       id)))
			return n;
	return 0;
}

/* The interpreter on disk: its notes lie in its first page. */
static size_t file_build_id(const char *path, unsigned char id[BUILD_ID_MAX])
{
	unsigned char page[4096];
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)page;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;
	size_t n;

	if (fd < 0)
		return 0;
	got = pread(fd, page, sizeof(page), 0);
	close(fd);
	if (got < (ssize_t)sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_phentsize != sizeof(ElfW(Phdr)) ||
	    eh->e_phoff + (size_t)eh->e_phnum * sizeof(ElfW(Phdr)) > (size_t)got)
		return 0;
	for (size_t i = 0; i < eh->e_phnum; i++) {
		const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(page + eh->e_phoff) + i;

		if (ph->p_type == PT_NOTE && ph->p_offset + ph->p_filesz <= (size_t)got &&
		    (n = note_build_id(page + ph->p_offset, ph->p_filesz, id)))
			return n;
	}
	return 0;
}

/* python-sb runs the copy of the interpreter it was installed with: after an
 * update of the system's (a Debian security update), it keeps working, as
 * self-contained as the static python-sb, but without the update's fixes.
 * Say so, rather than refuse: refusing would stop every sandboxed program at
 * the next `apt upgrade`, while nothing of the sandbox is weaker than before
 * it. An interpreter that cannot be read (a wrapper's new root) says nothing. */
static void warn_if_interpreter_changed(void)
{
	unsigned char own[BUILD_ID_MAX], sys[BUILD_ID_MAX];
	size_t own_n = own_build_id(own), sys_n;

	if (!own_n)
		return;
	sys_n = file_build_id(SB_HOOKED_INTERPRETER, sys);
	if (sys_n && (sys_n != own_n || memcmp(own, sys, own_n) != 0))
		fprintf(
		    stderr,
		    "python-sb: warning: %s changed since python-sb was installed (an update?): "
		    "python-sb still runs the interpreter it was installed with, without the "
		    "update's fixes; install python-sb again (scripts/install.sh)\n",
		    SB_HOOKED_INTERPRETER);
}

/* glibc calls a library's initialisers with the program's arguments. The
 * library is the copy's first needed one, so its initialiser runs after every
 * other library's (libc, libexpat, libz, libm: glibc initialises in reverse)
 * and before the executable's own, which never runs (python3.11 has one,
 * frame_dummy). */
__attribute__((constructor)) static void python_sb_hook(int argc, char **argv, char **envp)
{
	static char library[PATH_MAX];
	Dl_info self;

	(void)envp;
	/* This library's .data and .bss, before the launcher writes them a page
	 * at a time (prefault.h; the interpreter's own come later, in main.c). */
	sb_prefault_object_data((const void *)python_sb_hook, true, 1u << 20);
	warn_if_interpreter_changed();
	if (dladdr((void *)python_sb_hook, &self) && self.dli_fname &&
	    realpath(self.dli_fname, library))
		sb_launcher_library = library;
	exit(sb_launcher_main(argc, argv));
}
