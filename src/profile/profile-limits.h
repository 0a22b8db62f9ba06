/* SPDX-License-Identifier: MIT */
#pragma once

/* Resource limits, a profile extension of ours (limit-*, timeout): plain data,
 * one field per line of limit-key-list.h, in the unit the line names
 * (milliseconds, bytes, a count). A zero field is "no limit". Applied by
 * src/kernel/resource-limits.c. */
struct sb_limits {
#define SB_LIMIT_KEY(id, key, unit, field, rlimit) unsigned long long field;
#include "limit-key-list.h"
#undef SB_LIMIT_KEY
};
