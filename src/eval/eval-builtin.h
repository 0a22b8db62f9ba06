/* SPDX-License-Identifier: MIT */
#pragma once

/* The three builtins the eval layer takes over (eval.h's interface and the
 * layer's own modules name them alike; a header of its own so that none of
 * those modules includes eval.h back). */

enum sb_eval_builtin {
	SB_EVAL_BUILTIN_EVAL,
	SB_EVAL_BUILTIN_EXEC,
	SB_EVAL_BUILTIN_COMPILE,
	SB_EVAL_BUILTIN__N,
};
