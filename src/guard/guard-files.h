/* SPDX-License-Identifier: MIT */
#pragma once

/* What the files part (guard-files.c) offers the other parts. */

#include <stdbool.h>

/* The files part's decision for one path (AF_UNIX socket paths: the network
 * part; files extension modules open: guard-native-files.c): 0, or -1 with
 * the pysandboxes exception set. */
int sb_guard_file_check(const char *path, bool write);
