/* SPDX-License-Identifier: MIT */
#pragma once

/* `python-sb serve ...`: replaces python-sb with the service's own binary
 * (python-sb-serve), telling it which python-sb to run for each program.
 * Returns only on failure: -errno with *reterr. */
int sb_serve_exec(int argc, char **argv, char **reterr);
