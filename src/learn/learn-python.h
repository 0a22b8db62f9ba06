/* SPDX-License-Identifier: MIT */
#pragma once

/* The interpreter side of learning (learn-python.c): which host variables
 * the program reads, the SIGTERM/SIGQUIT handlers that turn those signals
 * into an orderly exit (so the learn file is written), and the names of the
 * standard library's modules, for grouping imports. */

/* What the program does with the host's variables, for the recorder
 * (learn.c): both called with the GIL held, once the guard is armed. */
struct sb_learn_env_sink {
	void (*read)(const char *name);	   /* read a variable that exists */
	void (*written)(const char *name); /* set or removed one itself */
};

/* After initialisation, GIL held; sink must outlive the run. *ret_stdlib
 * gets sys.stdlib_module_names. 0 or -errno with *reterr. */
int sb_learn_python_activate(const struct sb_learn_env_sink *sink, char ***ret_stdlib,
			     char **reterr);

/* The signal that ended the run through our handler, 0 if none. */
int sb_learn_python_exit_signal(void);
