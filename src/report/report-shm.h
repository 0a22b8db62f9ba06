/* SPDX-License-Identifier: MIT */
#pragma once

/* The in-sandbox half of a run report (docs/report.md): a fixed-layout region
 * of shared memory that the collector fills while the program runs, and that
 * the supervisor reads once the program and everything it started are dead.
 *
 * Shared memory rather than a message written at exit, so that a program
 * killed at its timeout, by a limit or by a signal, or one that calls
 * os._exit(), still has its profile and denials reported. The region is a
 * sealed memfd (it can be neither shrunk nor grown, so reading the mapping
 * cannot fault) mapped before the fork: the child inherits the mapping and
 * needs no descriptor.
 *
 * Everything in it is written by the sandboxed process and so may be
 * anything: the supervisor copies it out and checks every count and string
 * reference against the layout's own constants, never against values found
 * in the region. Nothing measured outside (times, memory, exit) comes from
 * here. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SB_REPORT_SHM_MAGIC 0x31307470726273ULL /* "sbrpt01" */

/* Open addressing over the functions seen: at most 3/4 full. */
#define SB_REPORT_FN_SLOTS 4096
#define SB_REPORT_FN_MAX   3072
/* Executed-line counts of the program's own file: lines 1..LINES_MAX-1. */
#define SB_REPORT_LINES_MAX    65536
#define SB_REPORT_DENIALS_MAX  64
#define SB_REPORT_STRINGS_SIZE (512u * 1024u)

enum sb_report_fn_kind {
	SB_REPORT_FN_PYTHON = 1,
	SB_REPORT_FN_BUILTIN = 2,
};

/* What the guard refused (the part of the guard that refused). */
enum sb_report_denial_kind {
	SB_REPORT_DENIAL_IMPORT = 1,
	SB_REPORT_DENIAL_FILE,
	SB_REPORT_DENIAL_NETWORK,
	SB_REPORT_DENIAL_API,
	SB_REPORT_DENIAL_EVAL, /* the eval layer (src/eval): a construct, a name, a budget */
};

/* Flags: what the collector could not record in full. */
enum {
	SB_REPORT_F_STARTED = 1u << 0, /* the hooks ran: the program started */
	SB_REPORT_F_FUNCTIONS_FULL = 1u << 1,
	SB_REPORT_F_STRINGS_FULL = 1u << 2,
	SB_REPORT_F_LINES_BEYOND = 1u << 3,  /* a line past SB_REPORT_LINES_MAX */
	SB_REPORT_F_ALLOC_PARTIAL = 1u << 4, /* Python's allocators are not malloc's */
	SB_REPORT_F_STACK_PARTIAL = 1u << 5, /* calls deeper than the stack kept */
};

/* A string in the region's arena (UTF-8, not terminated). */
struct sb_report_str {
	uint32_t off;
	uint32_t len;
};

struct sb_report_fn {
	uint64_t key; /* the code object or PyMethodDef address; 0: an empty slot */
	struct sb_report_str name, file;
	uint32_t line;
	uint32_t kind; /* enum sb_report_fn_kind */
	uint64_t calls;
	uint64_t own_ns;
	uint64_t cum_ns;
};

struct sb_report_denial {
	uint32_t kind; /* enum sb_report_denial_kind */
	uint32_t reserved;
	struct sb_report_str subject, rule, message;
};

struct sb_report_shm {
	uint64_t magic;
	uint32_t flags;
	uint32_t n_functions;
	uint64_t calls_total;
	uint64_t exceptions_raised;
	uint64_t memory_errors; /* MemoryError raised: what limit-memory looks like inside */
	uint64_t peak_python_alloc_bytes;
	uint64_t denials_total;
	uint32_t n_denials;
	uint32_t strings_used;
	struct sb_report_str program_file;
	/* The highest line counted, and the slots in use in the order they
	 * were filled: the reader touches only these (a scan of the whole
	 * region would fault in every page of it, on both sides). */
	uint32_t lines_max;
	uint16_t fn_used[SB_REPORT_FN_MAX];
	uint32_t line_counts[SB_REPORT_LINES_MAX]; /* saturating */
	struct sb_report_fn functions[SB_REPORT_FN_SLOTS];
	struct sb_report_denial denials[SB_REPORT_DENIALS_MAX];
	char strings[SB_REPORT_STRINGS_SIZE];
};

/* The region of this process (set by sb_report_shm_create() before the fork,
 * inherited by the child); NULL when no report was asked for. */
extern struct sb_report_shm *sb_report_region;

/* Creates, seals and maps the region, and makes it sb_report_region. 0 or
 * -errno. */
int sb_report_shm_create(char **reterr);
/* Unmaps it (supervisor, at the end). */
void sb_report_shm_destroy(void);

/* Copies what the region holds into private memory (*ret, to free()), so
 * that what is checked is what is used: the counts are clamped to the
 * layout, fn_used[] to valid slots, and only the used parts are copied (the
 * rest of the copy reads as zeros). 0, -ENOMEM, or -ENOENT when the region
 * was never written by a collector (bad magic). */
int sb_report_shm_snapshot(struct sb_report_shm **ret);

/* Collector side: copies n bytes of s into the arena (cut at a UTF-8
 * boundary when the arena is nearly full). false when nothing fit. */
bool sb_report_shm_str_add(struct sb_report_shm *shm, const char *s, size_t n,
			   struct sb_report_str *ret);

/* The string ref as a pointer into snap's arena, or NULL when the reference
 * lies outside it. */
const char *sb_report_shm_str(const struct sb_report_shm *snap, struct sb_report_str s,
			      size_t *ret_len);
