/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Where each of a set of strings sits in its owner's array, found by
 * content in constant time: a grant list can hold thousands of paths (every
 * module beside a script under python-import=*), and finding a duplicate by
 * walking the list made building it quadratic. The strings stay the
 * owner's; they must not move or change while indexed. */
struct sb_str_index {
	struct sb_str_index_slot *slots;
	size_t cap, n;
};

/* The position recorded for key, or SIZE_MAX when it is not indexed. */
size_t sb_str_index_find(const struct sb_str_index *ix, const char *key);

/* Records key at position pos (key not yet indexed). 0 or -ENOMEM. */
int sb_str_index_add(struct sb_str_index *ix, const char *key, size_t pos);

void sb_str_index_done(struct sb_str_index *ix);

/* FNV-1a of s: the keys are paths and names the user and the profile chose,
 * not an attacker's collision set, and a bad spread costs time, never a
 * wrong answer. */
uint64_t sb_str_hash(const char *s);
