/* SPDX-License-Identifier: MIT */
#pragma once

/* The interpreter side of learning (learn-python.c): which host variables
 * the program reads, the SIGTERM/SIGQUIT handlers that turn those signals
 * into an orderly exit (so the learn file is written), and the names of the
 * standard library's modules, for grouping imports. */

/* After initialisation, GIL held. *ret_stdlib gets sys.stdlib_module_names.
 * 0 or -errno with *reterr. */
int sb_learn_python_activate(char ***ret_stdlib, char **reterr);

/* The signal that ended the run through our handler, 0 if none. */
int sb_learn_python_exit_signal(void);
