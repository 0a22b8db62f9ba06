/* SPDX-License-Identifier: MIT */
#pragma once

/* python-sb's main program (main.c). main() itself is alone in entry.c, so
 * that bench/meson.build can link the benchmark baseline, python-ref, from
 * every other object of python-sb with CPython's own main() in its place:
 * the same binary layout, a different entry point. */
int sb_launcher_main(int argc, char **argv);

/* In the hooked copy (hook.c: python-sb as a library of a copy of the
 * system's interpreter), that library's path: a python-sb started again
 * inside the sandbox (sys.executable) loads it, so the boundary grants it as
 * it grants python-sb's binary. NULL in the static python-sb. */
extern const char *sb_launcher_library;
