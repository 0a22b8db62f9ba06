/* SPDX-License-Identifier: MIT */
#pragma once

/* python-sb's main program (main.c). main() itself is alone in entry.c, so
 * that bench/meson.build can link the benchmark baseline, python-ref, from
 * every other object of python-sb with CPython's own main() in its place:
 * the same binary layout, a different entry point. */
int sb_launcher_main(int argc, char **argv);
