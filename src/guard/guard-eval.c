/* SPDX-License-Identifier: MIT */
/* The eval-* layer (src/eval, eval.h) as a part of the guard: the rules are
 * compiled with the others' before the interpreter exists, and its pieces
 * taken from the interpreter before the guard is armed. */
#include "eval.h"
#include "guard-part.h"
#include "guard-runtime.h"
#include "util.h"

static int eval_prepare(const struct sb_profile *profile,
			const struct sb_interp_paths *interp _unused_, char **reterr)
{
	return sb_eval_prepare(profile, reterr);
}

static int eval_activate(char **reterr)
{
	return sb_eval_activate(sb_guard_profile_path(), reterr);
}

static int eval_after_import(void)
{
	return sb_eval_after_import() < 0 ? -1 : 0;
}

const struct sb_guard_part sb_guard_eval_part = {
    .name = "eval",
    .prepare = eval_prepare,
    .activate = eval_activate,
    .release = sb_eval_release,
    .after_import = eval_after_import,
};
