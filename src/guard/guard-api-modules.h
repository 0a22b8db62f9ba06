/* SPDX-License-Identifier: MIT */
/* The modules that hold functions the API guard wraps, one line each:
 * SB_API_MODULE(id, name, made_by_imp), id being the name with the dots
 * turned into underscores (enum sb_api_module: SB_API_M_<id>). In strcmp
 * order of their names: a name in sys.modules or from _imp is found by
 * binary search (sb_api_module_id()), with no Python string made for it.
 * src/tools/api-modules-gen.c writes the table of names at build time and
 * stops the build on a name out of order or an id that is not its name.
 *
 * made_by_imp: only ever made by _imp (built-in and extension modules): its
 * wrapped create_*()/exec_*() install their functions before anyone sees
 * them, whatever name sys.modules gives them, so the scan after each import
 * need not look for them. Nothing guarded of theirs is a class (no method
 * line in guard-api-wraps.h): the create step installs all there is.
 *
 * No include guard: each includer expands the list its own way. */

SB_API_MODULE(_imp, "_imp", true)
SB_API_MODULE(_interpreters, "_interpreters", true)
SB_API_MODULE(_pickle, "_pickle", true)
SB_API_MODULE(_posixsubprocess, "_posixsubprocess", true)
SB_API_MODULE(_signal, "_signal", true)
SB_API_MODULE(_thread, "_thread", true)
SB_API_MODULE(_xxsubinterpreters, "_xxsubinterpreters", true)
SB_API_MODULE(builtins, "builtins", true)
SB_API_MODULE(concurrent_interpreters, "concurrent.interpreters", false)
SB_API_MODULE(ctypes, "ctypes", false)
SB_API_MODULE(faulthandler, "faulthandler", true)
SB_API_MODULE(importlib, "importlib", false)
SB_API_MODULE(inspect, "inspect", false)
SB_API_MODULE(multiprocessing_context, "multiprocessing.context", false)
SB_API_MODULE(multiprocessing_process, "multiprocessing.process", false)
SB_API_MODULE(os, "os", false)
SB_API_MODULE(pickle, "pickle", false)
SB_API_MODULE(posix, "posix", true)
SB_API_MODULE(pty, "pty", false)
SB_API_MODULE(resource, "resource", true)
SB_API_MODULE(signal, "signal", false)
SB_API_MODULE(subprocess, "subprocess", false)
SB_API_MODULE(sys, "sys", true)
SB_API_MODULE(threading, "threading", false)
