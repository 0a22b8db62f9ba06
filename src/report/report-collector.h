/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

#include "cli.h"

/* The profiling hooks of a run report: a C profile function (calls of Python
 * and built-in functions, own and cumulative time) and a C trace function
 * (executed lines of the program's own file, exceptions raised), installed
 * with PyEval_SetProfile/PyEval_SetTrace on the main thread. Their state is C
 * data in the report region (report-shm.h); they take no Python object as
 * argument, so sys.gettrace() and sys.getprofile() return None and nothing in
 * Python refers to them. They exist only when a report was asked for.
 *
 * Two steps, because installing them raises the sys.setprofile/sys.settrace
 * audit events that the armed guard refuses to the program:
 * sb_report_collector_install() after the interpreter is initialised and
 * before the guard is armed (the hooks are installed, idle), then
 * sb_report_collector_start() just before the program's code runs. Both do
 * nothing when no report was asked for. */

/* Whether Python code of the run is executing: a refusal outside it (while
 * the interpreter prints an uncaught exception, say) is the runtime's. */
bool sb_report_collector_in_program(void);

/* 0 or -errno with *reterr. */
int sb_report_collector_install(const struct sb_cli *cli, char **reterr);
void sb_report_collector_start(void);
