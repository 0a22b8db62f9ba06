/* SPDX-License-Identifier: MIT */
#pragma once

/* The guard's one input besides the profile: an observer the launcher may
 * plug in before the interpreter exists (learning mode plugs in its
 * recorder, src/learn/learn.c). Every part calls sb_guard_refused() at each
 * refusal point that a missing rule explains (never for a DENY or ignore=
 * rule: those are decisions, not gaps); the observer answers either "refuse"
 * or "recorded, allow", and without an observer every refusal stands. The
 * notes tell the observer what it needs besides refusals (what was decided,
 * what a name resolved to, what a result needed); a part skips the work of a
 * note when sb_guard_observed() is false, a test of one pointer. The observer
 * is C data no Python object refers to, set once for the run. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sb_refusal_kind {
	SB_REFUSAL_FILE,	 /* subject: the resolved path; write */
	SB_REFUSAL_NET,		 /* subject: the name or address; protocol, port, direction */
	SB_REFUSAL_NET_NAME,	 /* subject: a name refused before any of its addresses is
				    decided on (at resolution, or no rule names it) */
	SB_REFUSAL_IMPORT,	 /* subject: the top-level module */
	SB_REFUSAL_API,		 /* subject: the registry function's qualname */
	SB_REFUSAL_API_CATEGORY, /* category: an operation only a category rule grants */
	SB_REFUSAL_EVAL,	 /* subject: what evaluated code used that the eval-*
				    rules do not allow; eval_kind, eval_profile */
};

struct sb_refusal {
	enum sb_refusal_kind kind;
	const char *subject;
	bool write;
	unsigned protocol;  /* SB_NET_TCP or SB_NET_UDP (net-policy.h) */
	unsigned direction; /* SB_NET_IN or SB_NET_OUT */
	uint16_t port;
	int category;		  /* enum sb_api_category */
	int eval_kind;		  /* enum sb_eval_learn_kind (src/eval/eval-learn.h) */
	const char *eval_profile; /* the eval profile's name, NULL for the default one */
};

enum sb_refusal_answer {
	SB_REFUSE,
	SB_RECORDED_ALLOW,
};

struct sb_guard_observer {
	enum sb_refusal_answer (*refused)(const struct sb_refusal *r);
	/* The notes; each may be NULL. */
	/* The files part decided on resolved (allowed or not). needed: what
	 * the profile must still name for the kernel boundary although the
	 * guard allowed it (an implicit sys.path grant of the guard's own),
	 * NULL when nothing. */
	void (*file_decided)(const char *resolved, bool write, const char *needed);
	/* The network part decided on an address (allowed or not). */
	void (*net_decided)(const char *ip, uint16_t port, unsigned direction);
	/* The program resolved name, and ip is one of its addresses. */
	void (*name_resolved)(const char *name, const char *ip);
	/* Partial mode: the worker sends a result back. needs_objects is NULL
	 * when remote-result-mode=data-only accepts it, else what needed
	 * objects ("module.Class"). An observer of results makes the worker
	 * announce objects mode, so that what data-only would refuse still
	 * comes back, to be recorded. */
	void (*result_sent)(const char *needs_objects);
};

/* Read inline by the parts; written by sb_guard_observe() only. Hidden, so
 * that python-sb does not export it with the interpreter's symbols. */
extern const struct sb_guard_observer *sb_guard_observer __attribute__((visibility("hidden")));

/* Plugs observer in (NULL: none) for the run; it must outlive the run.
 * sb_guard_prepare() calls it with the launcher's. */
void sb_guard_observe(const struct sb_guard_observer *observer);

/* At a refusal point: SB_RECORDED_ALLOW when the operation is to go ahead. */
enum sb_refusal_answer sb_guard_refused(const struct sb_refusal *r);

static inline bool sb_guard_observed(void)
{
	return sb_guard_observer != NULL;
}

static inline bool sb_guard_observes_results(void)
{
	return sb_guard_observer && sb_guard_observer->result_sent;
}

void sb_guard_note_file(const char *resolved, bool write, const char *needed);
void sb_guard_note_net(const char *ip, uint16_t port, unsigned direction);
void sb_guard_note_name(const char *name, const char *ip);
void sb_guard_note_result(const char *needs_objects);
