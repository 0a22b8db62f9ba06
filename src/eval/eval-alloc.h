/* SPDX-License-Identifier: MIT */
#pragma once

/* eval-max-alloc where no operator is rewritten (a known gap of the
 * original): bytes(10**8), 'x'.ljust(10**9), str.__mul__, list.extend in a
 * doubling loop, sum() of lists... allocate inside C builtins. A hook on
 * CPython's raw allocator -- where every block over 512 bytes ends up --
 * charges the evaluation running on the thread with what it allocates and
 * frees; a request that would take it past its budget fails (a MemoryError
 * where it happens) and interrupts the evaluation (EvalInterrupted:
 * eval-max-alloc). Blocks of 512 bytes or less go uncounted: each iteration
 * makes a bounded number of them, and the iteration budget bounds those.
 * Memory a native library takes from malloc directly is not seen (the OS
 * layer's limit-memory bounds the process). */

/* Installs the hook (once, after initialisation). 0, or -1. */
int sb_eval_alloc_install(void);

struct sb_eval_state;
/* The evaluation ended: its blocks still alive are no longer its own. */
void sb_eval_alloc_forget(struct sb_eval_state *s);
