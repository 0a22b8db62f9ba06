/* SPDX-License-Identifier: MIT */
#pragma once

/* The first stage of the result guard (spec section 7): a scan of a pickle
 * coming back from the worker, before anything is rebuilt. It models the
 * unpickler's stack and memo symbolically (kinds, not objects), so it knows
 * which global every object-building opcode calls, refuses the opcodes that
 * reach outside the stream (EXT*, protocol-0 GLOBAL/INST/OBJ, persistent ids,
 * out-of-band buffers) and enforces DoS budgets. Pure C, no Python. */

#include <stdbool.h>
#include <stddef.h>

enum sb_result_channel {
	SB_CHANNEL_DATA_ONLY,	    /* remote-result-mode=data-only: the closed list */
	SB_CHANNEL_OBJECTS,	    /* objects: any global minus the gadget denylist */
	SB_CHANNEL_OBJECTS_NOGUARD, /* objects with remote-result-guard=false */
	SB_CHANNEL_EXCEPTION,	    /* the exception channel (classes checked on rebuild) */
};

struct sb_prescan_limits {
	size_t max_bytes;
	size_t max_opcodes;
	size_t max_memo;  /* memo entries, and the largest memo index */
	size_t max_marks; /* MARK nesting */
	size_t max_stack;
	/* Nesting of the containers the unpickler rebuilds: CPython hashes a
	 * tuple used as a key by recursing in C without a limit, a stack
	 * overflow a few hundred thousand levels down. */
	size_t max_depth;
	/* Keys of one dict, set or frozenset sharing one hash value: each is
	 * compared with the others, quadratic with the GIL held. */
	size_t max_same_hash;
};

extern const struct sb_prescan_limits sb_prescan_default_limits;

/* 0, or -EPERM with a message in err naming the opcode or the global and the
 * byte offset; -ENOMEM. */
int sb_result_prescan(const void *data, size_t len, enum sb_result_channel channel,
		      const struct sb_prescan_limits *limits, char *err, size_t errlen);

/* Whether remote-result-mode=data-only would accept a result, by the same
 * prescan (learning mode records it, spec section 6). 0 when it would;
 * -EPERM when not, with what set to the module.name of the global it refused,
 * or to the refusal's message when no global is to blame; -ENOMEM. */
int sb_result_data_only_check(const void *data, size_t len, char *what, size_t whatlen);

/* Whether module.name is one of the data-only value types. */
bool sb_result_data_type(const char *module, const char *name);

/* Whether module.name is one of the value types whose constructor a few bytes
 * can make cost unbounded time or memory (Fraction("1e999999999"),
 * bytearray(1 << 40), Decimal of a huge int): in data-only and the exception
 * channel the unpickler calls them only with the arguments pickle writes for
 * them, and the prescan refuses them as values there (the unpickler hands
 * out a check, not the class). */
bool sb_result_checked_constructor(const char *module, const char *name);

/* Whether module.name is in the gadget denylist of objects mode (every C twin
 * included). */
bool sb_result_denied_global(const char *module, const char *name);
