/* SPDX-License-Identifier: MIT */
#pragma once

/* What the fuzz targets share. Each target is one file defining
 * LLVMFuzzerTestOneInput (and LLVMFuzzerInitialize where it needs set-up);
 * it is linked with libFuzzer for fuzzing, and with fuzz-main.c as an
 * ordinary test that replays its corpus (tests/fuzz/README.md). */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
/* libFuzzer's own byte mutator, for the structure-aware mutators to fall back on. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* An invariant of the code under test: a violation aborts, which libFuzzer
 * records as a crash with its input, and which fails the replay test. */
#define FUZZ_ASSERT(cond, ...)                                                                     \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: invariant violated: %s: ", __FILE__, __LINE__,     \
				#cond);                                                            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* A private directory under $TMPDIR (or /tmp), made on first use and removed
 * with its content when the process exits normally. A crash (abort, _Exit)
 * leaves it: scripts/test.sh runs the fuzzers with TMPDIR set to a directory
 * of its own, removed whatever happens. NULL if it cannot be made. */
const char *fuzz_tmpdir(void);

/* Writes data to a file in fuzz_tmpdir(); the path is malloc'ed. NULL on
 * failure. */
char *fuzz_write_file(const char *name, const void *data, size_t size);
