/* SPDX-License-Identifier: MIT */
/* Open addressing with linear probing, at most half full. */
#include "str-index.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sb_str_index_slot {
	const char *key; /* NULL: empty */
	size_t pos;
	uint64_t hash;
};

uint64_t sb_str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static struct sb_str_index_slot *slot_for(struct sb_str_index_slot *slots, size_t cap,
					  const char *key, uint64_t hash)
{
	for (size_t i = hash & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!slots[i].key || (slots[i].hash == hash && strcmp(slots[i].key, key) == 0))
			return &slots[i];
}

size_t sb_str_index_find(const struct sb_str_index *ix, const char *key)
{
	const struct sb_str_index_slot *s;

	if (!ix->cap)
		return SIZE_MAX;
	s = slot_for(ix->slots, ix->cap, key, sb_str_hash(key));
	return s->key ? s->pos : SIZE_MAX;
}

static int grow(struct sb_str_index *ix)
{
	size_t cap = ix->cap ? ix->cap * 2 : 64;
	struct sb_str_index_slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < ix->cap; i++)
		if (ix->slots[i].key)
			*slot_for(slots, cap, ix->slots[i].key, ix->slots[i].hash) = ix->slots[i];
	free(ix->slots);
	ix->slots = slots;
	ix->cap = cap;
	return 0;
}

int sb_str_index_add(struct sb_str_index *ix, const char *key, size_t pos)
{
	uint64_t hash = sb_str_hash(key);

	if (2 * (ix->n + 1) > ix->cap && grow(ix) < 0)
		return -ENOMEM;
	*slot_for(ix->slots, ix->cap, key, hash) =
	    (struct sb_str_index_slot){.key = key, .pos = pos, .hash = hash};
	ix->n++;
	return 0;
}

void sb_str_index_done(struct sb_str_index *ix)
{
	free(ix->slots);
	*ix = (struct sb_str_index){0};
}
