/* SPDX-License-Identifier: MIT */
/* The resource-limit keys (limit-*, timeout: our extension), one line per key:
 *   SB_LIMIT_KEY(id, key, unit, field, rlimit)
 *   id      SB_KEY_<id> in enum sb_scalar_key (profile.h)
 *   key     the profile's spelling
 *   unit    DURATION (stored in milliseconds), SIZE (bytes) or COUNT: which
 *           parser of units.h reads the value, and how --explain shows it
 *   field   its member of struct sb_limits (profile-limits.h)
 *   rlimit  the resource setrlimit() lowers (resource-limits.c); a DURATION is
 *           rounded up to the seconds RLIMIT_CPU counts. -1: not an rlimit
 *           (timeout is the supervisor's wall clock)
 *
 * Included by profile-limits.h (the struct), profile.h (the key ids),
 * profile-keys.c (the key table, the names, the parser), resource-limits.c
 * (setrlimit) and boundary.c (--explain). No include guard: each includer
 * expands the list its own way. */
SB_LIMIT_KEY(LIMIT_CPU, "limit-cpu", DURATION, cpu_ms, RLIMIT_CPU)
SB_LIMIT_KEY(LIMIT_MEMORY, "limit-memory", SIZE, memory_bytes, RLIMIT_AS)
SB_LIMIT_KEY(LIMIT_PROCESSES, "limit-processes", COUNT, processes, RLIMIT_NPROC)
SB_LIMIT_KEY(LIMIT_FILE_SIZE, "limit-file-size", SIZE, file_size_bytes, RLIMIT_FSIZE)
SB_LIMIT_KEY(LIMIT_OPEN_FILES, "limit-open-files", COUNT, open_files, RLIMIT_NOFILE)
SB_LIMIT_KEY(TIMEOUT, "timeout", DURATION, timeout_ms, -1)
SB_LIMIT_KEY(LIMIT_OUTPUT, "limit-output", SIZE, output_bytes, -1)
