/* SPDX-License-Identifier: MIT */
/* The index of grant paths (src/base/str-index.c): every key found at the
 * position it was added with, through the table's growth, and nothing else
 * found. */
#include <stdint.h>

#include "str-index.h"
#include "tap.h"

#define N_KEYS 5000

int main(void)
{
	static char keys[N_KEYS][32];
	struct sb_str_index ix = {0};
	bool all_found = true, none_wrong = true;

	tap_ok(sb_str_index_find(&ix, "/usr") == SIZE_MAX, "an empty index finds nothing");
	for (size_t i = 0; i < N_KEYS; i++) {
		snprintf(keys[i], sizeof(keys[i]), "/tmp/dir/m%zu.py", i);
		if (sb_str_index_add(&ix, keys[i], i) < 0)
			return tap_ok(false, "add %zu", i), tap_done();
	}
	tap_ok(ix.n == N_KEYS && ix.cap >= 2 * N_KEYS, "%d keys, the table at most half full (%zu)",
	       N_KEYS, ix.cap);
	for (size_t i = 0; i < N_KEYS; i++) {
		char probe[32];

		/* Found by content, not by the address added. */
		snprintf(probe, sizeof(probe), "/tmp/dir/m%zu.py", i);
		all_found = all_found && sb_str_index_find(&ix, probe) == i;
		snprintf(probe, sizeof(probe), "/tmp/dir/m%zu.pyc", i);
		none_wrong = none_wrong && sb_str_index_find(&ix, probe) == SIZE_MAX;
	}
	tap_ok(all_found, "every key is found at its position");
	tap_ok(none_wrong, "a key differing by one character is not found");
	tap_ok(sb_str_index_find(&ix, "/tmp/dir") == SIZE_MAX, "a prefix of the keys is not found");
	tap_ok(sb_str_index_find(&ix, "") == SIZE_MAX, "the empty string is not found");
	sb_str_index_done(&ix);
	tap_ok(ix.cap == 0 && sb_str_index_find(&ix, keys[0]) == SIZE_MAX,
	       "done leaves an empty index");
	return tap_done();
}
