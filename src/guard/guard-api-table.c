/* SPDX-License-Identifier: MIT */
/* The API guard's tables, expanded from their lists (guard-api-table.h). */
#include "guard-api-table.h"

#include <string.h>

/* Each line of guard-api-wraps.h as a row; a function module.attr has the
 * registry id module_attr. */
#define WRAP(m, a, f, al, fam, fl)                                                                 \
	{.module = SB_API_M_##m, .attr = #a, .fn = f, .alias = al, .family = fam, .flags = fl},
#define SB_WRAP_FN(m, a, fam) WRAP(m, a, SB_API_FN_##m##_##a, SB_API_NO_FN, SB_API_EV_##fam, 0)
#define SB_WRAP_FNX(m, a, fam)                                                                     \
	WRAP(m, a, SB_API_FN_##m##_##a, SB_API_NO_FN, SB_API_EV_##fam, SB_API_F_EXEMPT_LIBRARY)
#define SB_WRAP_OS(a, fam)			 SB_WRAP_FN(posix, a, fam) SB_WRAP_FN(os, a, fam)
#define SB_WRAP_METHOD(m, c, a, fn)		 METHOD(m, c, a, fn, SB_API_NO_FN)
#define SB_WRAP_METHOD_ALIAS(m, c, a, fn, alias) METHOD(m, c, a, fn, SB_API_FN_##alias)
#define METHOD(m, c, a, f, al)                                                                     \
	{.module = SB_API_M_##m,                                                                   \
	 .cls = #c,                                                                                \
	 .attr = #a,                                                                               \
	 .fn = SB_API_FN_##f,                                                                      \
	 .alias = al,                                                                              \
	 .family = SB_API_EV_NONE,                                                                 \
	 .flags = SB_API_F_METHOD},
#define SB_WRAP_ANY_OF(m, a, alias)                                                                \
	WRAP(m, a, SB_API_FN_##m##_##a, SB_API_FN_##alias, SB_API_EV_NONE, SB_API_F_ANY_OF)
#define SB_WRAP_HOOK(m, a, flag)                                                                   \
	WRAP(m, a, SB_API_NO_FN, SB_API_NO_FN, SB_API_EV_NONE, SB_API_F_##flag)

const struct sb_api_wrap sb_api_wraps[SB_API_N_WRAPS] = {
#include "guard-api-wraps.h"
};

int sb_api_module_id(const char *name)
{
	size_t lo = 0, hi = SB_API_M__N;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		/* Most names in sys.modules differ in their first letter. */
		int c = (unsigned char)name[0] - (unsigned char)sb_api_module_names[mid][0];

		c = c ? c : strcmp(name, sb_api_module_names[mid]);
		if (c == 0)
			return (int)mid;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}
