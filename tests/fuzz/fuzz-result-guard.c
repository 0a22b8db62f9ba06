/* SPDX-License-Identifier: MIT */
/* The result guard's opcode prescan (src/wire/result-guard.c), the first
 * thing the trusted caller runs on bytes a compromised worker wrote. Besides
 * memory safety, the channels must nest: whatever data-only admits, objects
 * the exception channel admits (which also refuses the checked constructors
 * as values); whatever that admits, objects admits; whatever objects admits,
 * remote-result-guard=false admits. Smaller budgets only ever refuse
 * more. The learning check is the data-only scan. Inputs are pickles: the
 * structure-aware mutator (pickle-mutator.c) writes opcodes, not bytes. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "result-guard.h"

static const char *const channel_names[] = {"data-only", "objects", "objects-noguard", "exception"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct sb_prescan_limits tight = {.max_bytes = 4096,
						       .max_opcodes = 64,
						       .max_memo = 4,
						       .max_marks = 3,
						       .max_stack = 8,
						       .max_depth = 5,
						       .max_same_hash = 2};
	char err[512], what[256];
	int r[4], small, check;

	for (int ch = 0; ch < 4; ch++) {
		memset(err, 0xaa, sizeof(err));
		r[ch] = sb_result_prescan(data, size, (enum sb_result_channel)ch, NULL, err,
					  sizeof(err));
		FUZZ_ASSERT(r[ch] == 0 || r[ch] == -EPERM, "%s: r=%d", channel_names[ch], r[ch]);
		FUZZ_ASSERT(memchr(err, '\0', sizeof(err)), "%s: unterminated message",
			    channel_names[ch]);
		FUZZ_ASSERT(r[ch] == 0 || err[0], "%s: a refusal without a reason",
			    channel_names[ch]);
		small = sb_result_prescan(data, size, (enum sb_result_channel)ch, &tight, err,
					  sizeof(err));
		FUZZ_ASSERT(small != 0 || r[ch] == 0,
			    "%s: admitted with small budgets, refused with the defaults",
			    channel_names[ch]);
	}
	FUZZ_ASSERT(r[SB_CHANNEL_DATA_ONLY] != 0 || r[SB_CHANNEL_EXCEPTION] == 0,
		    "data-only admits what the exception channel refuses");
	FUZZ_ASSERT(r[SB_CHANNEL_EXCEPTION] != 0 || r[SB_CHANNEL_OBJECTS] == 0,
		    "the exception channel admits what objects refuses");
	FUZZ_ASSERT(r[SB_CHANNEL_OBJECTS] != 0 || r[SB_CHANNEL_OBJECTS_NOGUARD] == 0,
		    "objects admits what remote-result-guard=false refuses");

	memset(what, 0xaa, sizeof(what));
	check = sb_result_data_only_check(data, size, what, sizeof(what));
	FUZZ_ASSERT(check == r[SB_CHANNEL_DATA_ONLY], "learning's check %d, the scan %d", check,
		    r[SB_CHANNEL_DATA_ONLY]);
	FUZZ_ASSERT(memchr(what, '\0', sizeof(what)), "unterminated learning verdict");
	FUZZ_ASSERT(check == 0 ? what[0] == '\0' : what[0] != '\0',
		    "learning's verdict '%s' for r=%d", what, check);
	/* A one-byte message buffer: the message is cut, still terminated. */
	(void)sb_result_prescan(data, size, SB_CHANNEL_DATA_ONLY, NULL, err, 1);
	return 0;
}
