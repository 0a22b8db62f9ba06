/* SPDX-License-Identifier: MIT */
/* watchdog.h. */
#include "watchdog.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "supervise-outcome.h"
#include "util.h"

/* Written by the handler: formatted when the timers are armed, since
 * snprintf() is not async-signal-safe. */
static char deadline_message[sizeof(((struct sb_outcome *)0)->message) + 16];
static size_t deadline_message_len;

static void on_deadline(int sig)
{
	(void)sig;
	/* The caller's stderr may be a full pipe nobody reads: then this
	 * blocks, and the SIGKILL timer ends the process. */
	(void)!write(STDERR_FILENO, deadline_message, deadline_message_len);
	_exit(SB_EXIT_TIMEOUT);
}

/* The raw system calls: glibc's timer_t is not the kernel's id, which the
 * seccomp filter compares. */
static int timer_new(int signo, int *ret_id)
{
	struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = signo};

	return syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, ret_id) < 0 ? -errno : 0;
}

static int timer_at(int id, uint64_t ns)
{
	const struct itimerspec at = {.it_value = sb_ns_to_timespec(ns)};

	return syscall(SYS_timer_settime, id, TIMER_ABSTIME, &at, NULL) < 0 ? -errno : 0;
}

static void timer_drop(int id)
{
	if (id >= 0)
		(void)syscall(SYS_timer_delete, id);
}

int sb_watchdog_arm(const struct sb_watchdog *w, int ret_timers[2], char **reterr)
{
	struct sb_supervise_result timed_out = {.timed_out = true};
	struct sigaction sa = {.sa_handler = on_deadline};
	struct sb_outcome outcome;
	uint64_t kill_at;
	sigset_t set;
	int ids[2] = {-1, -1}, r;

	sb_supervise_outcome(&timed_out, w->timeout_ms, 0, 0, &outcome);
	r = snprintf(deadline_message, sizeof(deadline_message), "python-sb: %s\n",
		     outcome.message);
	deadline_message_len = r < 0 ? 0
			       : (size_t)r < sizeof(deadline_message)
				   ? (size_t)r
				   : sizeof(deadline_message) - 1;

	/* Every signal blocked in the handler: nothing of the program's
	 * interrupts the message. */
	sigfillset(&sa.sa_mask);
	if (sigaction(SB_WATCHDOG_SIGNAL, &sa, NULL) < 0)
		return sb_error(reterr, -errno,
				"timeout: cannot install the deadline's handler: %s",
				strerror(errno));
	/* A caller that blocked it would leave only the SIGKILL. */
	sigemptyset(&set);
	sigaddset(&set, SB_WATCHDOG_SIGNAL);
	if (sigprocmask(SIG_UNBLOCK, &set, NULL) < 0)
		return sb_error(reterr, -errno, "timeout: cannot unblock the deadline's signal: %s",
				strerror(errno));

	kill_at = w->deadline_ns > UINT64_MAX - SB_WATCHDOG_GRACE_MS * 1000000ULL
		      ? UINT64_MAX
		      : w->deadline_ns + SB_WATCHDOG_GRACE_MS * 1000000ULL;
	r = timer_new(SB_WATCHDOG_SIGNAL, &ids[0]);
	if (r >= 0)
		r = timer_new(SIGKILL, &ids[1]);
	/* The SIGKILL first: no moment with the catchable one alone. */
	if (r >= 0)
		r = timer_at(ids[1], kill_at);
	if (r >= 0)
		r = timer_at(ids[0], w->deadline_ns);
	if (r < 0) {
		timer_drop(ids[0]);
		timer_drop(ids[1]);
		return sb_error(reterr, r, "timeout: cannot start its timers: %s", strerror(-r));
	}
	ret_timers[0] = ids[0];
	ret_timers[1] = ids[1];
	return 0;
}
