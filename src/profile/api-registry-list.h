/* SPDX-License-Identifier: MIT */
/* The sensitive-API registry of python-api= (spec section 4), one line per
 * function: SB_API(id, qualname, category). Included with SB_API defined by
 * api-registry.h (the enum sb_api_fn: SB_API_FN_<id>), api-registry.c (the
 * table) and src/tools/api-index-gen.c (the index by name, generated at build
 * time; it also fails the build when an id is not its qualname with the dots
 * turned into underscores, so that a qualname listed twice is an enum
 * constant defined twice). No include guard: each includer expands the list
 * its own way.
 *
 * Linux only: the Windows spellings (nt.*, os.startfile, _winapi.CreateProcess)
 * are left out, since no profile for this launcher can run there. Every
 * function is listed under each name it can be reached by: a guard on os.system
 * alone is walked around with `import posix`. */

/* process-exec */
SB_API(os_system, "os.system", PROCESS_EXEC)
SB_API(posix_system, "posix.system", PROCESS_EXEC)
SB_API(os_popen, "os.popen", PROCESS_EXEC)
SB_API(os_execv, "os.execv", PROCESS_EXEC)
SB_API(posix_execv, "posix.execv", PROCESS_EXEC)
SB_API(os_execve, "os.execve", PROCESS_EXEC)
SB_API(posix_execve, "posix.execve", PROCESS_EXEC)
SB_API(os_execl, "os.execl", PROCESS_EXEC)
SB_API(os_execle, "os.execle", PROCESS_EXEC)
SB_API(os_execlp, "os.execlp", PROCESS_EXEC)
SB_API(os_execlpe, "os.execlpe", PROCESS_EXEC)
SB_API(os_execvp, "os.execvp", PROCESS_EXEC)
SB_API(os_execvpe, "os.execvpe", PROCESS_EXEC)
SB_API(os_spawnv, "os.spawnv", PROCESS_EXEC)
SB_API(os_spawnve, "os.spawnve", PROCESS_EXEC)
SB_API(os_spawnvp, "os.spawnvp", PROCESS_EXEC)
SB_API(os_spawnvpe, "os.spawnvpe", PROCESS_EXEC)
SB_API(os_spawnl, "os.spawnl", PROCESS_EXEC)
SB_API(os_spawnle, "os.spawnle", PROCESS_EXEC)
SB_API(os_spawnlp, "os.spawnlp", PROCESS_EXEC)
SB_API(os_spawnlpe, "os.spawnlpe", PROCESS_EXEC)
SB_API(os_posix_spawn, "os.posix_spawn", PROCESS_EXEC)
SB_API(posix_posix_spawn, "posix.posix_spawn", PROCESS_EXEC)
SB_API(os_posix_spawnp, "os.posix_spawnp", PROCESS_EXEC)
SB_API(posix_posix_spawnp, "posix.posix_spawnp", PROCESS_EXEC)
SB_API(os_fork, "os.fork", PROCESS_EXEC)
SB_API(posix_fork, "posix.fork", PROCESS_EXEC)
SB_API(os_forkpty, "os.forkpty", PROCESS_EXEC)
SB_API(posix_forkpty, "posix.forkpty", PROCESS_EXEC)
SB_API(subprocess_Popen, "subprocess.Popen", PROCESS_EXEC)
SB_API(subprocess_run, "subprocess.run", PROCESS_EXEC)
SB_API(subprocess_call, "subprocess.call", PROCESS_EXEC)
SB_API(subprocess_check_call, "subprocess.check_call", PROCESS_EXEC)
SB_API(subprocess_check_output, "subprocess.check_output", PROCESS_EXEC)
SB_API(subprocess_getoutput, "subprocess.getoutput", PROCESS_EXEC)
SB_API(subprocess_getstatusoutput, "subprocess.getstatusoutput", PROCESS_EXEC)
/* subprocess keeps its own reference to fork_exec (3.13+). */
SB_API(subprocess__fork_exec, "subprocess._fork_exec", PROCESS_EXEC)
SB_API(_posixsubprocess_fork_exec, "_posixsubprocess.fork_exec", PROCESS_EXEC)
SB_API(pty_spawn, "pty.spawn", PROCESS_EXEC)
SB_API(pty_fork, "pty.fork", PROCESS_EXEC)
SB_API(multiprocessing_Process_start, "multiprocessing.Process.start", PROCESS_EXEC)
/* get_context("spawn").Process derives from BaseProcess, not from
 * multiprocessing.Process: the context classes need their own names. */
SB_API(multiprocessing_process_BaseProcess_start, "multiprocessing.process.BaseProcess.start",
       PROCESS_EXEC)
SB_API(multiprocessing_context_Process_start, "multiprocessing.context.Process.start", PROCESS_EXEC)
SB_API(multiprocessing_context_ForkProcess_start, "multiprocessing.context.ForkProcess.start",
       PROCESS_EXEC)
SB_API(multiprocessing_context_SpawnProcess_start, "multiprocessing.context.SpawnProcess.start",
       PROCESS_EXEC)
SB_API(multiprocessing_context_ForkServerProcess_start,
       "multiprocessing.context.ForkServerProcess.start", PROCESS_EXEC)
/* Subinterpreters: _xxsubinterpreters (3.11-3.12), _interpreters (3.13+),
 * concurrent.interpreters (3.14). */
SB_API(_xxsubinterpreters_create, "_xxsubinterpreters.create", PROCESS_EXEC)
SB_API(_interpreters_create, "_interpreters.create", PROCESS_EXEC)
SB_API(concurrent_interpreters_create, "concurrent.interpreters.create", PROCESS_EXEC)

/* process-control; os._exit is absent on purpose (it only ends the
 * calling process, and the framework needs it), and so is signal.signal
 * (installing a handler emits nothing). */
SB_API(os_kill, "os.kill", PROCESS_CONTROL)
SB_API(posix_kill, "posix.kill", PROCESS_CONTROL)
SB_API(os_killpg, "os.killpg", PROCESS_CONTROL)
SB_API(posix_killpg, "posix.killpg", PROCESS_CONTROL)
SB_API(os_nice, "os.nice", PROCESS_CONTROL)
SB_API(posix_nice, "posix.nice", PROCESS_CONTROL)
SB_API(os_setpriority, "os.setpriority", PROCESS_CONTROL)
SB_API(posix_setpriority, "posix.setpriority", PROCESS_CONTROL)
SB_API(os_abort, "os.abort", PROCESS_CONTROL)
SB_API(posix_abort, "posix.abort", PROCESS_CONTROL)
SB_API(os_setsid, "os.setsid", PROCESS_CONTROL)
SB_API(posix_setsid, "posix.setsid", PROCESS_CONTROL)
SB_API(os_setpgid, "os.setpgid", PROCESS_CONTROL)
SB_API(posix_setpgid, "posix.setpgid", PROCESS_CONTROL)
SB_API(os_setpgrp, "os.setpgrp", PROCESS_CONTROL)
SB_API(posix_setpgrp, "posix.setpgrp", PROCESS_CONTROL)
SB_API(signal_alarm, "signal.alarm", PROCESS_CONTROL)
SB_API(_signal_alarm, "_signal.alarm", PROCESS_CONTROL)
SB_API(signal_setitimer, "signal.setitimer", PROCESS_CONTROL)
SB_API(_signal_setitimer, "_signal.setitimer", PROCESS_CONTROL)
SB_API(signal_raise_signal, "signal.raise_signal", PROCESS_CONTROL)
SB_API(_signal_raise_signal, "_signal.raise_signal", PROCESS_CONTROL)
SB_API(signal_pthread_kill, "signal.pthread_kill", PROCESS_CONTROL)
SB_API(_signal_pthread_kill, "_signal.pthread_kill", PROCESS_CONTROL)
SB_API(resource_setrlimit, "resource.setrlimit", PROCESS_CONTROL)
SB_API(resource_prlimit, "resource.prlimit", PROCESS_CONTROL)
/* Calls that name another process: its scheduling, a handle to it, a
 * signal through that handle. */
SB_API(os_sched_setaffinity, "os.sched_setaffinity", PROCESS_CONTROL)
SB_API(posix_sched_setaffinity, "posix.sched_setaffinity", PROCESS_CONTROL)
SB_API(os_sched_setscheduler, "os.sched_setscheduler", PROCESS_CONTROL)
SB_API(posix_sched_setscheduler, "posix.sched_setscheduler", PROCESS_CONTROL)
SB_API(os_sched_setparam, "os.sched_setparam", PROCESS_CONTROL)
SB_API(posix_sched_setparam, "posix.sched_setparam", PROCESS_CONTROL)
SB_API(os_pidfd_open, "os.pidfd_open", PROCESS_CONTROL)
SB_API(posix_pidfd_open, "posix.pidfd_open", PROCESS_CONTROL)
SB_API(signal_pidfd_send_signal, "signal.pidfd_send_signal", PROCESS_CONTROL)
SB_API(_signal_pidfd_send_signal, "_signal.pidfd_send_signal", PROCESS_CONTROL)

/* privileges; chroot is a file-system operation, judged by the file guard. */
SB_API(os_setuid, "os.setuid", PRIVILEGES)
SB_API(posix_setuid, "posix.setuid", PRIVILEGES)
SB_API(os_setgid, "os.setgid", PRIVILEGES)
SB_API(posix_setgid, "posix.setgid", PRIVILEGES)
SB_API(os_seteuid, "os.seteuid", PRIVILEGES)
SB_API(posix_seteuid, "posix.seteuid", PRIVILEGES)
SB_API(os_setegid, "os.setegid", PRIVILEGES)
SB_API(posix_setegid, "posix.setegid", PRIVILEGES)
SB_API(os_setreuid, "os.setreuid", PRIVILEGES)
SB_API(posix_setreuid, "posix.setreuid", PRIVILEGES)
SB_API(os_setregid, "os.setregid", PRIVILEGES)
SB_API(posix_setregid, "posix.setregid", PRIVILEGES)
SB_API(os_setresuid, "os.setresuid", PRIVILEGES)
SB_API(posix_setresuid, "posix.setresuid", PRIVILEGES)
SB_API(os_setresgid, "os.setresgid", PRIVILEGES)
SB_API(posix_setresgid, "posix.setresgid", PRIVILEGES)
SB_API(os_setgroups, "os.setgroups", PRIVILEGES)
SB_API(posix_setgroups, "posix.setgroups", PRIVILEGES)
SB_API(os_initgroups, "os.initgroups", PRIVILEGES)
SB_API(posix_initgroups, "posix.initgroups", PRIVILEGES)
SB_API(os_umask, "os.umask", PRIVILEGES)
SB_API(posix_umask, "posix.umask", PRIVILEGES)
SB_API(os_unshare, "os.unshare", PRIVILEGES)
SB_API(posix_unshare, "posix.unshare", PRIVILEGES)
SB_API(os_setns, "os.setns", PRIVILEGES)
SB_API(posix_setns, "posix.setns", PRIVILEGES)

/* threads; the launch primitive moved in 3.13 (threading._start_new_thread
 * became threading._start_joinable_thread): both are listed so that a
 * profile stays portable across 3.11-3.14. */
SB_API(_thread_start_new_thread, "_thread.start_new_thread", THREADS)
SB_API(_thread_start_new, "_thread.start_new", THREADS)
SB_API(_thread_start_joinable_thread, "_thread.start_joinable_thread", THREADS)
SB_API(threading__start_joinable_thread, "threading._start_joinable_thread", THREADS)
SB_API(threading__start_new_thread, "threading._start_new_thread", THREADS)
SB_API(threading_Thread_start, "threading.Thread.start", THREADS)
SB_API(_thread_interrupt_main, "_thread.interrupt_main", THREADS)
SB_API(threading_settrace, "threading.settrace", THREADS)
SB_API(threading_setprofile, "threading.setprofile", THREADS)
SB_API(threading_settrace_all_threads, "threading.settrace_all_threads", THREADS)
SB_API(threading_setprofile_all_threads, "threading.setprofile_all_threads", THREADS)
SB_API(sys__settraceallthreads, "sys._settraceallthreads", THREADS)
SB_API(sys__setprofileallthreads, "sys._setprofileallthreads", THREADS)
SB_API(threading_stack_size, "threading.stack_size", THREADS)
SB_API(_thread_stack_size, "_thread.stack_size", THREADS)

/* native; ctypes.PyDLL inherits CDLL.__init__, so CDLL covers it. */
SB_API(ctypes_CDLL, "ctypes.CDLL", NATIVE)
SB_API(ctypes_cast, "ctypes.cast", NATIVE)
SB_API(ctypes_string_at, "ctypes.string_at", NATIVE)
SB_API(ctypes_wstring_at, "ctypes.wstring_at", NATIVE)

/* introspection */
SB_API(importlib_reload, "importlib.reload", INTROSPECTION)
SB_API(sys__getframe, "sys._getframe", INTROSPECTION)
SB_API(sys__getframemodulename, "sys._getframemodulename", INTROSPECTION)
SB_API(sys__current_frames, "sys._current_frames", INTROSPECTION)
SB_API(sys__current_exceptions, "sys._current_exceptions", INTROSPECTION)
SB_API(sys_settrace, "sys.settrace", INTROSPECTION)
SB_API(sys_setprofile, "sys.setprofile", INTROSPECTION)
SB_API(sys_addaudithook, "sys.addaudithook", INTROSPECTION)
SB_API(sys_monitoring_use_tool_id, "sys.monitoring.use_tool_id", INTROSPECTION)
SB_API(sys_monitoring_register_callback, "sys.monitoring.register_callback", INTROSPECTION)
SB_API(sys_monitoring_set_events, "sys.monitoring.set_events", INTROSPECTION)
SB_API(sys_monitoring_set_local_events, "sys.monitoring.set_local_events", INTROSPECTION)
SB_API(sys_remote_exec, "sys.remote_exec", INTROSPECTION)
SB_API(gc_get_objects, "gc.get_objects", INTROSPECTION)
SB_API(gc_get_referrers, "gc.get_referrers", INTROSPECTION)
SB_API(gc_get_referents, "gc.get_referents", INTROSPECTION)
SB_API(inspect_currentframe, "inspect.currentframe", INTROSPECTION)
SB_API(inspect_stack, "inspect.stack", INTROSPECTION)
SB_API(inspect_trace, "inspect.trace", INTROSPECTION)
SB_API(faulthandler_enable, "faulthandler.enable", INTROSPECTION)

/* dynamic-code: registered so that ALLOW:dynamic-code can be written,
 * but enforced by the eval guard. */
SB_API(builtins_eval, "builtins.eval", DYNAMIC_CODE)
SB_API(builtins_exec, "builtins.exec", DYNAMIC_CODE)
SB_API(builtins_compile, "builtins.compile", DYNAMIC_CODE)

/* deserialization; pickle.Unpickler is an immutable C type and cannot be
 * guarded, the pure-Python _Unpickler can. */
SB_API(pickle_loads, "pickle.loads", DESERIALIZATION)
SB_API(pickle_load, "pickle.load", DESERIALIZATION)
SB_API(_pickle_loads, "_pickle.loads", DESERIALIZATION)
SB_API(_pickle_load, "_pickle.load", DESERIALIZATION)
SB_API(pickle__loads, "pickle._loads", DESERIALIZATION)
SB_API(pickle__load, "pickle._load", DESERIALIZATION)
SB_API(pickle__Unpickler, "pickle._Unpickler", DESERIALIZATION)
