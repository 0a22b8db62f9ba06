/* SPDX-License-Identifier: MIT */
#pragma once

#include "embed.h"

/* python-sb serve's fork server (docs/serve.md, "The fork server"): started
 * by the service as `python-sb --pysandboxes-config PROFILE
 * --pysandboxes-zygote=FD -c ''`, it initialises one interpreter with the
 * profile's guard armed and the report's collector installed idle, imports
 * the modules a code runner needs that the profile allows, and then forks a
 * child per RUN message (zygote-proto.h) on the control socket FD. Each child
 * takes the run's descriptors, directory and limits, enters the profile's
 * kernel boundary with the run's directory read-only, begins the report and
 * only then runs the run's main.py as __main__; the server itself never runs
 * submitted code. The server is single-threaded, supervises its children
 * (the run's deadline, the service's KILL), and answers DONE for each once it
 * is reaped. */

/* Serves until the service closes the control socket: 0. -errno with
 * *reterr when the server cannot start (main() prints it). */
int sb_zygote_serve(const struct sb_embed *e, int fd, char **reterr);
