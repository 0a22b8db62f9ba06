/* SPDX-License-Identifier: MIT */
#pragma once

/* Learning mode in the launcher (spec §6). The guard's parts ask
 * sb_learn_active() at their refusal points: while learning, a refusal that a
 * missing rule explains is recorded here and the operation goes ahead. The
 * records are plain C data (src/learn/learn-rules.h); at exit they become rule
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
 * native observer's helper process (learn-native.c). 0 or -errno. */
int sb_learn_begin(const struct sb_interp_paths *interp, char **reterr);

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

/* ---- records (GIL held; cheap no-ops when not learning) --------------------- */

/* A file decision of the files part: resolved path. Returns true when the
 * refusal is to be replaced by a record (learning), false to refuse. */
bool sb_learn_file(const char *resolved, bool write);
/* A path the files part decided on, whatever the verdict: the native
 * observer does not charge it (nor the guard's own scan of its directory) to
 * native code. needed: what the profile must still name for the kernel
 * boundary (an implicit sys.path grant of the guard allowed it), NULL when
 * nothing. */
void sb_learn_file_decided(const char *resolved, bool write, const char *needed);
/* A network refusal by the implicit default policy (not by a DENY rule). */
bool sb_learn_net(const char *host, unsigned protocol, uint16_t port, unsigned direction);
/* A name the program resolved to ip: a connection to ip is learned as a
 * rule for the name. */
void sb_learn_net_name(const char *name, const char *ip);
/* An address the network part decided on (allowed or not), for the native
 * observer: a connection the guard saw is not charged to native code. */
void sb_learn_net_seen(const char *ip, uint16_t port, unsigned direction);
/* An import refused by python-import=. */
bool sb_learn_import(const char *top_level);
/* A registry function refused by python-api= (false: an explicit DENY rule
 * refuses it, which learning does not override). */
bool sb_learn_api(const char *qualname);
/* An operation only a category rule can grant. */
bool sb_learn_api_category(int category);
/* A host variable read by the program (learn-python.c). */
void sb_learn_env_read(const char *name);
/* A result a partial-mode worker sent back: needs_objects is NULL when
 * remote-result-mode=data-only would have accepted it, else what needed
 * objects ("module.Class"). */
void sb_learn_result(const char *needs_objects);
void sb_learn_env_written(const char *name);
