/* SPDX-License-Identifier: MIT */
/* The functions the API guard wraps (guard-api-wrap.c), in every module that
 * holds them, one line each (two for SB_WRAP_OS):
 *
 *   SB_WRAP_FN(module, attr, family)      module.attr, registry id module_attr
 *   SB_WRAP_FNX(module, attr, family)     the same, not judged when the caller
 *                                         is the interpreter's library or
 *                                         site-packages (code generation,
 *                                         frame access: the runtime's own)
 *   SB_WRAP_OS(attr, family)              posix.attr and os.attr: `from posix
 *                                         import *` copies the original into
 *                                         os, and both are registry names
 *   SB_WRAP_METHOD(module, cls, attr, fn) a method, guarded through an
 *                                         instancemethod (instances bind it,
 *                                         isinstance/subclassing untouched)
 *   SB_WRAP_METHOD_ALIAS(module, cls, attr, fn, alias)
 *                                         the same under a second registry
 *                                         name, which must be allowed too
 *   SB_WRAP_ANY_OF(module, attr, alias)   either name grants it (one function
 *                                         under two names); a refusal names
 *                                         alias, the canonical one
 *   SB_WRAP_HOOK(module, attr, flag)      no registry function: a hook into
 *                                         the import system (IMP_HOOK: wraps
 *                                         what _imp creates before anyone can
 *                                         call it; AFTER_IMPORT)
 *
 * module and cls are identifiers (module ids of guard-api-modules.h), fn and
 * alias registry ids (api-registry-list.h): a misspelt one does not compile,
 * instead of leaving a function unguarded. family is the audit event a call
 * causes (enum sb_api_family: SB_API_EV_<family>), which the wrapper claims
 * so that the event handler does not judge it again; NONE when it causes
 * none. The order is the order of installation. No include guard: each
 * includer expands the list its own way. */

/* process-exec */
SB_WRAP_OS(system, SYSTEM)
SB_WRAP_FN(os, popen, NONE)
SB_WRAP_OS(execv, EXEC)
SB_WRAP_OS(execve, EXEC)
SB_WRAP_FN(os, execl, NONE)
SB_WRAP_FN(os, execle, NONE)
SB_WRAP_FN(os, execlp, NONE)
SB_WRAP_FN(os, execlpe, NONE)
SB_WRAP_FN(os, execvp, NONE)
SB_WRAP_FN(os, execvpe, NONE)
SB_WRAP_FN(os, spawnv, NONE)
SB_WRAP_FN(os, spawnve, NONE)
SB_WRAP_FN(os, spawnvp, NONE)
SB_WRAP_FN(os, spawnvpe, NONE)
SB_WRAP_FN(os, spawnl, NONE)
SB_WRAP_FN(os, spawnle, NONE)
SB_WRAP_FN(os, spawnlp, NONE)
SB_WRAP_FN(os, spawnlpe, NONE)
SB_WRAP_OS(posix_spawn, POSIX_SPAWN)
SB_WRAP_OS(posix_spawnp, POSIX_SPAWN)
SB_WRAP_OS(fork, FORK)
SB_WRAP_OS(forkpty, FORKPTY)
SB_WRAP_FN(subprocess, run, NONE)
SB_WRAP_FN(subprocess, call, NONE)
SB_WRAP_FN(subprocess, check_call, NONE)
SB_WRAP_FN(subprocess, check_output, NONE)
SB_WRAP_FN(subprocess, getoutput, NONE)
SB_WRAP_FN(subprocess, getstatusoutput, NONE)
/* subprocess's own reference to _posixsubprocess.fork_exec (Debian's 3.11
 * has it too): the spec's "ALLOW:subprocess.Popen also needs
 * ALLOW:_posixsubprocess.fork_exec" must hold through it. */
SB_WRAP_ANY_OF(subprocess, _fork_exec, _posixsubprocess_fork_exec)
SB_WRAP_FN(_posixsubprocess, fork_exec, NONE)
SB_WRAP_FN(pty, spawn, NONE)
SB_WRAP_FN(pty, fork, NONE)
SB_WRAP_METHOD(multiprocessing_process, BaseProcess, start,
	       multiprocessing_process_BaseProcess_start)
/* multiprocessing.Process is multiprocessing.context.Process: one class, two
 * registry names, both must be allowed. */
SB_WRAP_METHOD_ALIAS(multiprocessing_context, Process, start, multiprocessing_context_Process_start,
		     multiprocessing_Process_start)
SB_WRAP_METHOD(multiprocessing_context, ForkProcess, start,
	       multiprocessing_context_ForkProcess_start)
SB_WRAP_METHOD(multiprocessing_context, SpawnProcess, start,
	       multiprocessing_context_SpawnProcess_start)
SB_WRAP_METHOD(multiprocessing_context, ForkServerProcess, start,
	       multiprocessing_context_ForkServerProcess_start)
SB_WRAP_FN(_xxsubinterpreters, create, NONE)
SB_WRAP_FN(_interpreters, create, NONE)
SB_WRAP_FN(concurrent_interpreters, create, NONE)

/* process-control */
SB_WRAP_OS(kill, KILL)
SB_WRAP_OS(killpg, KILLPG)
SB_WRAP_OS(nice, NONE)
SB_WRAP_OS(setpriority, NONE)
SB_WRAP_OS(abort, NONE)
SB_WRAP_OS(setsid, NONE)
SB_WRAP_OS(setpgid, NONE)
SB_WRAP_OS(setpgrp, NONE)
SB_WRAP_FN(_signal, alarm, NONE)
SB_WRAP_FN(signal, alarm, NONE)
SB_WRAP_FN(_signal, setitimer, NONE)
SB_WRAP_FN(signal, setitimer, NONE)
SB_WRAP_FN(_signal, raise_signal, NONE)
SB_WRAP_FN(signal, raise_signal, NONE)
SB_WRAP_FN(_signal, pthread_kill, NONE)
SB_WRAP_FN(signal, pthread_kill, NONE)
SB_WRAP_FN(resource, setrlimit, SETRLIMIT)
SB_WRAP_FN(resource, prlimit, PRLIMIT)

/* privileges */
SB_WRAP_OS(setuid, NONE)
SB_WRAP_OS(setgid, NONE)
SB_WRAP_OS(seteuid, NONE)
SB_WRAP_OS(setegid, NONE)
SB_WRAP_OS(setreuid, NONE)
SB_WRAP_OS(setregid, NONE)
SB_WRAP_OS(setresuid, NONE)
SB_WRAP_OS(setresgid, NONE)
SB_WRAP_OS(setgroups, NONE)
SB_WRAP_OS(initgroups, NONE)
SB_WRAP_OS(umask, NONE)
SB_WRAP_OS(unshare, NONE)
SB_WRAP_OS(setns, NONE)

/* threads: no audit event before 3.13 */
SB_WRAP_FN(_thread, start_new_thread, NONE)
SB_WRAP_FN(_thread, start_new, NONE)
SB_WRAP_FN(_thread, start_joinable_thread, NONE)
SB_WRAP_FN(_thread, interrupt_main, NONE)
SB_WRAP_FN(_thread, stack_size, NONE)
SB_WRAP_FN(threading, _start_new_thread, NONE)
SB_WRAP_FN(threading, _start_joinable_thread, NONE)
SB_WRAP_FN(threading, settrace, NONE)
SB_WRAP_FN(threading, setprofile, NONE)
SB_WRAP_FN(threading, settrace_all_threads, NONE)
SB_WRAP_FN(threading, setprofile_all_threads, NONE)
SB_WRAP_FN(threading, stack_size, NONE)
SB_WRAP_FN(sys, _settraceallthreads, NONE)
SB_WRAP_FN(sys, _setprofileallthreads, NONE)
SB_WRAP_METHOD(threading, Thread, start, threading_Thread_start)

/* native; ctypes.CDLL is judged on the ctypes.dlopen event */
SB_WRAP_FN(ctypes, cast, NONE)
SB_WRAP_FN(ctypes, string_at, STRING_AT)
SB_WRAP_FN(ctypes, wstring_at, WSTRING_AT)

/* introspection; inspect's helpers call sys._getframe from the library,
 * which the sys._getframe event exempts, so they need their own guard. */
SB_WRAP_FN(importlib, reload, NONE)
SB_WRAP_FNX(inspect, currentframe, NONE)
SB_WRAP_FNX(inspect, stack, NONE)
SB_WRAP_FNX(inspect, trace, NONE)
SB_WRAP_FN(faulthandler, enable, NONE)

/* dynamic-code */
SB_WRAP_FNX(builtins, eval, DYNAMIC)
SB_WRAP_FNX(builtins, exec, DYNAMIC)
SB_WRAP_FNX(builtins, compile, DYNAMIC)

/* deserialization */
SB_WRAP_FN(_pickle, loads, NONE)
SB_WRAP_FN(_pickle, load, NONE)
SB_WRAP_FN(pickle, loads, NONE)
SB_WRAP_FN(pickle, load, NONE)
SB_WRAP_FN(pickle, _loads, NONE)
SB_WRAP_FN(pickle, _load, NONE)
SB_WRAP_METHOD(pickle, _Unpickler, __init__, pickle__Unpickler)

/* import hooks, no decision of their own */
SB_WRAP_HOOK(_imp, create_builtin, IMP_HOOK)
SB_WRAP_HOOK(_imp, exec_builtin, IMP_HOOK)
SB_WRAP_HOOK(_imp, create_dynamic, IMP_HOOK)
SB_WRAP_HOOK(_imp, exec_dynamic, IMP_HOOK)
SB_WRAP_HOOK(importlib, import_module, AFTER_IMPORT)
