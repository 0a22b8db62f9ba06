/* SPDX-License-Identifier: MIT */
#pragma once

/* Learning mode in the launcher (spec §6). The guard offers its refusals to
 * an observer (src/guard/guard-observer.h), and learning plugs in its
 * recorder (sb_learn_observer()): while learning, a refusal that a missing
 * rule explains is recorded here and the operation goes ahead. The records
 * are plain C data (src/learn/learn-rules.h); at exit they become rule
 * lines written once into the learn file (src/learn/learn-file.h).
 *
 * Life cycle, each step for whoever runs a program under learning (the
 * launcher's main(), a partial-mode worker):
 *   sb_learn_begin()     before the kernel boundary: the options, and the
 *                        native observer's helper process (learn-native.c);
 *   sb_learn_activate()  after the guard is armed, GIL held: env read
 *                        recording, SIGTERM/SIGQUIT handlers, the stdlib module
 *                        names, the native observer's seccomp filter, and the
 *                        at-exit write (Py_AtExit: it also runs when an
 *                        uncaught KeyboardInterrupt makes Py_RunMain kill the
 *                        process with SIGINT);
 *   sb_learn_end()       after the run (main() returns its value): writes the
 *                        file through sb_learn_finish() if the at-exit hook did
 *                        not (the write happens once, later calls do nothing),
 *                        then dies of the signal that ended the run, if one did. */

#include <stdbool.h>
#include <stdint.h>

#include "boundary.h"
#include "profile.h"

struct sb_guard_observer;

extern bool sb_learning;

static inline bool sb_learn_active(void)
{
	return sb_learning;
}

/* The outcome of the write, for the caller to report. */
struct sb_learn_outcome {
	const char *file;
	int error;	     /* 0, or -errno */
	const char *message; /* the error's text, NULL when none */
	const char *backup;  /* the previous file's new name, NULL if none */
	size_t added;	     /* rule lines added */
	bool created, changed;
	const char *rules_text; /* on error: the lines that could not be written */
	const char *warning;	/* about a learned line (remote-result-mode), NULL if none */
};

struct sb_learn_options {
	const struct sb_profile *profile; /* must outlive the run */
	const char *file;		  /* the learn file */
	const char *cwd;
	char *const *host_env; /* KEY=VALUE of the launching process */
	bool native;	       /* observe native code (seccomp notify) */
	/* Called once with the outcome (main() prints it). */
	void (*report)(const struct sb_learn_outcome *outcome);
};

/* Whether this profile runs in learning mode, and into which file: a missing
 * rule file (into root_file) or learn=<file>; never with py-sandbox=false. */
bool sb_learn_wanted(const struct sb_profile *p, const char *root_file, const char **ret_file);

/* A missing rule file means the template, whose includes (the user's and
 * the system's shared profiles) may hold learn=false. 0, or -EPERM with
 * *reterr naming the lock; -ENOMEM. */
int sb_learn_check_default_lock(const struct sb_load_options *opts, char **reterr);

/* Takes the options (copied) and turns learning on. 0 or -ENOMEM. */
int sb_learn_configure(const struct sb_learn_options *o);

/* Before the kernel boundary: the interpreter's paths (never emitted) and the
 * native observer's helper process (learn-native.c), which watches the
 * profile's own seccomp allowlist (boundary->seccomp_profile); while it is
 * armed the boundary's relaxed filter is not loaded (one listener per
 * process), and sb_learn_activate() loads it when the observer could not
 * arm. 0 or -errno. */
int sb_learn_begin(const struct sb_interp_paths *interp, struct sb_boundary *boundary,
		   char **reterr);

/* After the run: writes the file if the at-exit hook did not, then dies of
 * the signal that ended the run, if one did. Returns exit_code otherwise. */
int sb_learn_end(int exit_code);

/* The learn file (for the REPL banner); NULL when not learning. */
const char *sb_learn_file_path(void);
/* 0 or -errno with *reterr; a failure of the native observer is not one (it
 * is reported as a warning through the outcome's caller). */
int sb_learn_activate(char **reterr);
/* A warning from the native observer's start ("" when none), for main(). */
const char *sb_learn_native_warning(void);
/* Writes the learn file if not done yet. */
void sb_learn_finish(void);
/* The signal (SIGTERM, SIGQUIT) that ended the run, 0 if none: the caller
 * re-raises it after the write so the exit status is what `python` shows. */
int sb_learn_exit_signal(void);

/* The recorder, for the guard (guard-observer.h): the refusals a missing rule
 * explains become records and go ahead; the decisions it notes tell the
 * program's accesses from native code's. NULL when not learning. */
const struct sb_guard_observer *sb_learn_observer(void);
