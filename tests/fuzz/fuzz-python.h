/* SPDX-License-Identifier: MIT */
#pragma once

/* The embedded interpreter of the targets that need one (unpickle, eval):
 * isolated, the system allocator so that AddressSanitizer sees every
 * object, no signal handlers (libFuzzer owns them), the same hashes on
 * every run, no bytecode written. Aborts when it cannot start. */
void fuzz_python_start(void);
