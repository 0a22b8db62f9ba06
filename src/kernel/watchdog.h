/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdint.h>

/* timeout= without a supervisor process (issue 19): kernel timers of the
 * program's own process.
 *
 * A supervisor is a second process: a clone, an exec, a second exit and the
 * wake-ups between them, about 4 % of a `python3 -c pass` here
 * (bench/README.md). It is needed to kill what the program started, and to
 * report a status the program cannot forge; a program that cannot start
 * processes (seccomp refuses fork, vfork, clone of a process and exec) has
 * nothing to kill but itself. So for it, the deadline is two POSIX timers on
 * CLOCK_MONOTONIC:
 *  - at the deadline, SB_WATCHDOG_SIGNAL, whose handler writes the
 *    supervisor's message and _exit()s with status 124, as the supervisor
 *    would report it;
 *  - SB_WATCHDOG_GRACE_MS later, SIGKILL, which nothing can catch, block or
 *    ignore: the bound for a program that replaced the handler, blocked or
 *    consumed the signal, or stopped itself.
 * seccomp refuses timer_settime() and timer_delete() on those two timers
 * (seccomp-filter.h), and exec (which would drop them) is refused too. */

#define SB_WATCHDOG_GRACE_MS 1000u

struct sb_watchdog {
	uint64_t deadline_ns;	       /* CLOCK_MONOTONIC (> 0); 0: no watchdog */
	unsigned long long timeout_ms; /* for the message */
};

/* The signal of the first timer: the last real-time signal, which CPython and
 * glibc leave alone (glibc keeps the first ones for itself). */
#define SB_WATCHDOG_SIGNAL (SIGRTMAX)

/* Installs the handler, unblocks its signal and starts both timers (a deadline
 * already past fires at once). ret_timers: the kernel's ids of the two timers,
 * for the seccomp filter. 0 or -errno with *reterr; on failure nothing is left
 * armed. */
int sb_watchdog_arm(const struct sb_watchdog *w, int ret_timers[2], char **reterr);
