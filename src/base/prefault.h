/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The writable data of a loaded ELF object mapped in one system call instead
 * of a page fault per page (bench/README.md, "Page faults, prefaulted"). On a
 * virtual machine a fault costs 10-16 us (an exit to the host), and CPython's
 * start writes almost every page of its executable's data: 300 of the ~820
 * faults of `python3 -c pass`. MADV_POPULATE_WRITE maps the same pages for well
 * under a microsecond each.
 *
 * object: an address inside the object (a function or variable of it), or
 * NULL for the main program. Only what follows the object's RELRO part, which
 * the loader has made read-only, is touched; nothing is written (the kernel
 * breaks copy-on-write sharing as a write fault would). Returns 0, -ENOENT if
 * no loaded object holds the address, or the kernel's error (-EINVAL before
 * Linux 5.14): only a hint, the caller goes on either way. A segment larger
 * than max_bytes is left alone: mapping what the program would never touch
 * costs memory. So is the .bss (the zeroed part past the file's data) unless
 * with_bss: CPython's start writes 2 of its executable's 69 .bss pages. */
int sb_prefault_object_data(const void *object, bool with_bss, size_t max_bytes);
