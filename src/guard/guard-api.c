/* SPDX-License-Identifier: MIT */
/* python-api=: the sensitive-API registry (spec section 4). The rules are
 * flattened before the interpreter exists into one decision per registry
 * function; after arming, a call is refused where it happens:
 *
 *  - through the audit events CPython raises for it (os.system, os.exec,
 *    subprocess.Popen, ctypes.dlopen, sys._getframe, gc.get_objects...);
 *  - through C wrappers put in place of the functions that raise no event
 *    (os.setuid, signal.alarm, threading.Thread.start, pickle.loads...), in
 *    every module that holds them, including modules loaded later.
 *
 * A function that has both (os.system and posix.system raise the same event)
 * is wrapped too: the event cannot tell which spelling was called, the
 * wrapper can. The wrapper then "claims" the event it is about to cause, and
 * the event handler only judges unclaimed events, i.e. calls that reached the
 * original by some path around the wrappers. */
#include "guard-part.h"

#include "api-registry.h"
#include "guard-imports.h"
#include "guard-observer.h"
#include "guard-runtime.h"
#include "pysandboxes-module.h"
#include "util.h"

/* Audit-event families a wrapper can claim. */
enum ev_family {
	EV_NONE,
	EV_SYSTEM,
	EV_EXEC,
	EV_POSIX_SPAWN,
	EV_FORK,
	EV_FORKPTY,
	EV_KILL,
	EV_KILLPG,
	EV_SETRLIMIT,
	EV_PRLIMIT,
	EV_STRING_AT,
	EV_WSTRING_AT,
	EV_DYNAMIC,
	EV__N,
};

enum {
	/* Not judged when the caller is the interpreter's library or
	 * site-packages: code generation (dataclasses, namedtuple, typing) and
	 * frame access (logging, warnings) are the runtime's own business. */
	F_EXEMPT_LIBRARY = 1 << 0,
	/* Installed on a class (guarded through an instancemethod, so that
	 * instances bind it and isinstance/subclassing are untouched). */
	F_METHOD = 1 << 1,
	/* Not a registry function: a hook into the import system, so that a
	 * module created behind builtins.__import__'s back is wrapped before
	 * anyone can call its functions. */
	F_IMP_HOOK = 1 << 2,
	F_AFTER_IMPORT = 1 << 3,
	/* Either name grants it (one function under two names); a refusal
	 * names the alias, the canonical one. */
	F_ANY_OF = 1 << 4,
};

/* The modules that hold guarded functions, in strcmp order of their names
 * (api_prepare checks it): a name in sys.modules or from _imp is found by
 * binary search, with no Python string made for it. */
enum api_module {
	M__imp,
	M__interpreters,
	M__pickle,
	M__posixsubprocess,
	M__signal,
	M__thread,
	M__xxsubinterpreters,
	M_builtins,
	M_concurrent_interpreters,
	M_ctypes,
	M_faulthandler,
	M_importlib,
	M_inspect,
	M_multiprocessing_context,
	M_multiprocessing_process,
	M_os,
	M_pickle,
	M_posix,
	M_pty,
	M_resource,
	M_signal,
	M_subprocess,
	M_sys,
	M_threading,
	M__N,
};

static const char *const module_names[M__N] = {
    [M__imp] = "_imp",
    [M__interpreters] = "_interpreters",
    [M__pickle] = "_pickle",
    [M__posixsubprocess] = "_posixsubprocess",
    [M__signal] = "_signal",
    [M__thread] = "_thread",
    [M__xxsubinterpreters] = "_xxsubinterpreters",
    [M_builtins] = "builtins",
    [M_concurrent_interpreters] = "concurrent.interpreters",
    [M_ctypes] = "ctypes",
    [M_faulthandler] = "faulthandler",
    [M_importlib] = "importlib",
    [M_inspect] = "inspect",
    [M_multiprocessing_context] = "multiprocessing.context",
    [M_multiprocessing_process] = "multiprocessing.process",
    [M_os] = "os",
    [M_pickle] = "pickle",
    [M_posix] = "posix",
    [M_pty] = "pty",
    [M_resource] = "resource",
    [M_signal] = "signal",
    [M_subprocess] = "subprocess",
    [M_sys] = "sys",
    [M_threading] = "threading",
};

/* Modules only ever made by _imp (built-in and extension modules): its
 * wrapped create_*()/exec_*() install their functions before anyone sees
 * them (imp_hook_done), whatever name sys.modules gives them, so the scan
 * after each import need not look for them. Nothing guarded of theirs is a
 * class (no F_METHOD entry): the create step installs all there is. */
static const bool made_by_imp[M__N] = {
    [M__imp] = true,
    [M__interpreters] = true,
    [M__pickle] = true,
    [M__posixsubprocess] = true,
    [M__signal] = true,
    [M__thread] = true,
    [M__xxsubinterpreters] = true,
    [M_builtins] = true,
    [M_faulthandler] = true,
    [M_posix] = true,
    [M_resource] = true,
    [M_sys] = true,
};

#define NO_FN (-1)

/* fn and alias are registry indices (SB_API_FN_*, api-registry.h): known at
 * compile time, so a misspelt name does not compile instead of leaving a
 * function unguarded. */
struct wrap_entry {
	enum api_module module;
	const char *cls; /* NULL for a module-level function */
	const char *attr;
	short fn;    /* the registry function; NO_FN for the import hooks */
	short alias; /* another registry name for the same thing, or NO_FN */
	enum ev_family family;
	unsigned flags;
};

/* module.attr, whose registry id is module_attr (dots as underscores). */
#define FN(m, a, fam)                                                                              \
	{                                                                                          \
		M_##m, NULL, #a, SB_API_FN_##m##_##a, NO_FN, fam, 0                                \
	}
#define FNX(m, a, fam)                                                                             \
	{                                                                                          \
		M_##m, NULL, #a, SB_API_FN_##m##_##a, NO_FN, fam, F_EXEMPT_LIBRARY                 \
	}
/* posix functions are copied into os by `from posix import *`: both dicts
 * hold the original, and both spellings are registry names. */
#define OS(a, fam) FN(posix, a, fam), FN(os, a, fam)
#define METHOD(m, c, a, fn, alias)                                                                 \
	{                                                                                          \
		M_##m, #c, #a, SB_API_FN_##fn, alias, EV_NONE, F_METHOD                            \
	}

static const struct wrap_entry entries[] = {
    /* process-exec */
    OS(system, EV_SYSTEM),
    FN(os, popen, EV_NONE),
    OS(execv, EV_EXEC),
    OS(execve, EV_EXEC),
    FN(os, execl, EV_NONE),
    FN(os, execle, EV_NONE),
    FN(os, execlp, EV_NONE),
    FN(os, execlpe, EV_NONE),
    FN(os, execvp, EV_NONE),
    FN(os, execvpe, EV_NONE),
    FN(os, spawnv, EV_NONE),
    FN(os, spawnve, EV_NONE),
    FN(os, spawnvp, EV_NONE),
    FN(os, spawnvpe, EV_NONE),
    FN(os, spawnl, EV_NONE),
    FN(os, spawnle, EV_NONE),
    FN(os, spawnlp, EV_NONE),
    FN(os, spawnlpe, EV_NONE),
    OS(posix_spawn, EV_POSIX_SPAWN),
    OS(posix_spawnp, EV_POSIX_SPAWN),
    OS(fork, EV_FORK),
    OS(forkpty, EV_FORKPTY),
    FN(subprocess, run, EV_NONE),
    FN(subprocess, call, EV_NONE),
    FN(subprocess, check_call, EV_NONE),
    FN(subprocess, check_output, EV_NONE),
    FN(subprocess, getoutput, EV_NONE),
    FN(subprocess, getstatusoutput, EV_NONE),
    /* subprocess's own reference to _posixsubprocess.fork_exec (Debian's
     * 3.11 has it too): the spec's "ALLOW:subprocess.Popen also needs
     * ALLOW:_posixsubprocess.fork_exec" must hold through it. */
    {M_subprocess, NULL, "_fork_exec", SB_API_FN_subprocess__fork_exec,
     SB_API_FN__posixsubprocess_fork_exec, EV_NONE, F_ANY_OF},
    FN(_posixsubprocess, fork_exec, EV_NONE),
    FN(pty, spawn, EV_NONE),
    FN(pty, fork, EV_NONE),
    METHOD(multiprocessing_process, BaseProcess, start, multiprocessing_process_BaseProcess_start,
	   NO_FN),
    /* multiprocessing.Process is multiprocessing.context.Process: one class,
     * two registry names, both must be allowed. */
    METHOD(multiprocessing_context, Process, start, multiprocessing_context_Process_start,
	   SB_API_FN_multiprocessing_Process_start),
    METHOD(multiprocessing_context, ForkProcess, start, multiprocessing_context_ForkProcess_start,
	   NO_FN),
    METHOD(multiprocessing_context, SpawnProcess, start, multiprocessing_context_SpawnProcess_start,
	   NO_FN),
    METHOD(multiprocessing_context, ForkServerProcess, start,
	   multiprocessing_context_ForkServerProcess_start, NO_FN),
    FN(_xxsubinterpreters, create, EV_NONE),
    FN(_interpreters, create, EV_NONE),
    FN(concurrent_interpreters, create, EV_NONE),

    /* process-control */
    OS(kill, EV_KILL),
    OS(killpg, EV_KILLPG),
    OS(nice, EV_NONE),
    OS(setpriority, EV_NONE),
    OS(abort, EV_NONE),
    OS(setsid, EV_NONE),
    OS(setpgid, EV_NONE),
    OS(setpgrp, EV_NONE),
    FN(_signal, alarm, EV_NONE),
    FN(signal, alarm, EV_NONE),
    FN(_signal, setitimer, EV_NONE),
    FN(signal, setitimer, EV_NONE),
    FN(_signal, raise_signal, EV_NONE),
    FN(signal, raise_signal, EV_NONE),
    FN(_signal, pthread_kill, EV_NONE),
    FN(signal, pthread_kill, EV_NONE),
    FN(resource, setrlimit, EV_SETRLIMIT),
    FN(resource, prlimit, EV_PRLIMIT),

    /* privileges */
    OS(setuid, EV_NONE),
    OS(setgid, EV_NONE),
    OS(seteuid, EV_NONE),
    OS(setegid, EV_NONE),
    OS(setreuid, EV_NONE),
    OS(setregid, EV_NONE),
    OS(setresuid, EV_NONE),
    OS(setresgid, EV_NONE),
    OS(setgroups, EV_NONE),
    OS(initgroups, EV_NONE),
    OS(umask, EV_NONE),
    OS(unshare, EV_NONE),
    OS(setns, EV_NONE),

    /* threads: no audit event before 3.13 */
    FN(_thread, start_new_thread, EV_NONE),
    FN(_thread, start_new, EV_NONE),
    FN(_thread, start_joinable_thread, EV_NONE),
    FN(_thread, interrupt_main, EV_NONE),
    FN(_thread, stack_size, EV_NONE),
    FN(threading, _start_new_thread, EV_NONE),
    FN(threading, _start_joinable_thread, EV_NONE),
    FN(threading, settrace, EV_NONE),
    FN(threading, setprofile, EV_NONE),
    FN(threading, settrace_all_threads, EV_NONE),
    FN(threading, setprofile_all_threads, EV_NONE),
    FN(threading, stack_size, EV_NONE),
    FN(sys, _settraceallthreads, EV_NONE),
    FN(sys, _setprofileallthreads, EV_NONE),
    METHOD(threading, Thread, start, threading_Thread_start, NO_FN),

    /* native; ctypes.CDLL is judged on the ctypes.dlopen event */
    FN(ctypes, cast, EV_NONE),
    FN(ctypes, string_at, EV_STRING_AT),
    FN(ctypes, wstring_at, EV_WSTRING_AT),

    /* introspection; inspect's helpers call sys._getframe from the library,
     * which the sys._getframe event exempts, so they need their own guard. */
    FN(importlib, reload, EV_NONE),
    FNX(inspect, currentframe, EV_NONE),
    FNX(inspect, stack, EV_NONE),
    FNX(inspect, trace, EV_NONE),
    FN(faulthandler, enable, EV_NONE),

    /* dynamic-code */
    FNX(builtins, eval, EV_DYNAMIC),
    FNX(builtins, exec, EV_DYNAMIC),
    FNX(builtins, compile, EV_DYNAMIC),

    /* deserialization */
    FN(_pickle, loads, EV_NONE),
    FN(_pickle, load, EV_NONE),
    FN(pickle, loads, EV_NONE),
    FN(pickle, load, EV_NONE),
    FN(pickle, _loads, EV_NONE),
    FN(pickle, _load, EV_NONE),
    METHOD(pickle, _Unpickler, __init__, pickle__Unpickler, NO_FN),

    /* import hooks, no decision of their own */
    {M__imp, NULL, "create_builtin", NO_FN, NO_FN, EV_NONE, F_IMP_HOOK},
    {M__imp, NULL, "exec_builtin", NO_FN, NO_FN, EV_NONE, F_IMP_HOOK},
    {M__imp, NULL, "create_dynamic", NO_FN, NO_FN, EV_NONE, F_IMP_HOOK},
    {M__imp, NULL, "exec_dynamic", NO_FN, NO_FN, EV_NONE, F_IMP_HOOK},
    {M_importlib, NULL, "import_module", NO_FN, NO_FN, EV_NONE, F_AFTER_IMPORT},
};

#define N_ENTRIES ELEMENTSOF(entries)

/* The count of a family is that of its initialisers: it cannot disagree. */
#define FAMILY(...)                                                                                \
	{                                                                                          \
		sizeof((short[]){__VA_ARGS__}) / sizeof(short),                                    \
		{                                                                                  \
			__VA_ARGS__                                                                \
		}                                                                                  \
	}

/* Registry functions an unclaimed event of each family stands for: the event
 * does not say which spelling was called, so every one must be allowed. */
static const struct {
	unsigned n;
	short fn[4];
} families[EV__N] = {
    [EV_SYSTEM] = FAMILY(SB_API_FN_os_system, SB_API_FN_posix_system),
    [EV_POSIX_SPAWN] = FAMILY(SB_API_FN_os_posix_spawn, SB_API_FN_posix_posix_spawn,
			      SB_API_FN_os_posix_spawnp, SB_API_FN_posix_posix_spawnp),
    [EV_FORK] = FAMILY(SB_API_FN_os_fork, SB_API_FN_posix_fork),
    [EV_FORKPTY] = FAMILY(SB_API_FN_os_forkpty, SB_API_FN_posix_forkpty),
    [EV_KILL] = FAMILY(SB_API_FN_os_kill, SB_API_FN_posix_kill),
    [EV_KILLPG] = FAMILY(SB_API_FN_os_killpg, SB_API_FN_posix_killpg),
    [EV_SETRLIMIT] = FAMILY(SB_API_FN_resource_setrlimit),
    [EV_PRLIMIT] = FAMILY(SB_API_FN_resource_prlimit),
    [EV_STRING_AT] = FAMILY(SB_API_FN_ctypes_string_at),
    [EV_WSTRING_AT] = FAMILY(SB_API_FN_ctypes_wstring_at),
};

/* os.exec passes (path, args, env): [with env][os, posix]. */
static const short exec_fns[2][2] = {
    {SB_API_FN_os_execv, SB_API_FN_posix_execv},
    {SB_API_FN_os_execve, SB_API_FN_posix_execve},
};

/* Events a wrapper is about to cause, per thread: a count, restored when the
 * wrapped call returns. */
static _Thread_local unsigned claims[EV__N];

struct tracked_module {
	PyObject *key;	/* the name as a str, made when first needed (module_key) */
	PyObject *done; /* the module object every entry was installed on */
};

static struct {
	bool *allowed;				   /* indexed like sb_api_registry */
	const struct sb_api_rule **decider;	   /* NULL: the implicit default */
	bool category_allowed[SB_API_CATEGORY__N]; /* for names outside the registry */
	bool any_deserialization;		   /* some unpickling entry point granted */
	bool eval_keys; /* eval-* present: the eval layer, not a grant, decides */

	PyObject *original[N_ENTRIES]; /* strong; only C holds them */
	PyObject *wrapper[N_ENTRIES];
	PyObject *attr_key[N_ENTRIES]; /* entries[i].attr as a str */
	/* Each module's entries as a chain (first[m], then next[i]), linked
	 * by api_prepare: installing on a module walks its own entries. */
	short first[M__N], next[N_ENTRIES];
	struct tracked_module tracked[M__N];
	bool pending; /* a tracked module was still initialising at the last scan */
	/* "__spec__" and "_initializing", interned once: module_initializing()
	 * runs for every new guarded module and every pass it stays pending. */
	PyObject *spec_key, *initializing_key;
	char **site_dirs;
	size_t n_site_dirs;
	/* -c: the launcher compiles the command once, with no Python frame. */
	bool command_compile_pending;
} api;

static PyMethodDef defs[N_ENTRIES];

static bool is_our_wrapper(PyObject *o, size_t *ret_index)
{
	PyCFunctionObject *f = (PyCFunctionObject *)o;

	if (!o || !PyCFunction_Check(o) || f->m_ml < defs || f->m_ml >= defs + N_ENTRIES)
		return false;
	if (ret_index)
		*ret_index = (size_t)(f->m_ml - defs);
	return true;
}

/* ---- decisions ---------------------------------------------------------- */

static bool caller_is_library(void)
{
	PyFrameObject *frame;
	PyCodeObject *code;
	const char *file;
	bool library = false;

	if (sb_guard_caller_is_runtime())
		return true;
	frame = PyEval_GetFrame(); /* borrowed */
	if (!frame || api.n_site_dirs == 0)
		return false;
	code = PyFrame_GetCode(frame);
	file = PyUnicode_AsUTF8(code->co_filename);
	if (!file)
		PyErr_Clear();
	for (size_t i = 0; file && !library && i < api.n_site_dirs; i++) {
		const char *rest = startswith(file, api.site_dirs[i]);

		library = rest && *rest == '/';
	}
	Py_DECREF(code);
	return library;
}

/* -1 with RuleApiPermissionError set. */
static int deny(int index)
{
	const struct sb_api_function *fn = &sb_api_registry[index];
	const char *category = sb_api_category_name(fn->category);
	_cleanup_free_ char *message = NULL;

	if (sb_guard_refused(&(struct sb_refusal){.kind = SB_REFUSAL_API,
						  .subject = fn->qualname}) == SB_RECORDED_ALLOW)
		return 0;
	if (fn->category != SB_API_DYNAMIC_CODE || !api.eval_keys)
		return sb_raise_api_denied(fn->qualname, category);
	/* The profile asks for guarded evaluation, which a later version
	 * provides: refusing is the only safe answer until then. */
	if (asprintf(&message,
		     "%s() is denied (category: %s): '%s' has eval-* keys, which ask for the eval "
		     "guard, and the eval layer is not available yet in this version of "
		     "python-sb. Remove the eval-* keys and add `python-api=ALLOW:%s` to run it "
		     "unguarded",
		     fn->qualname, category, sb_guard_profile_path(), fn->qualname) < 0) {
		message = NULL;
		PyErr_NoMemory();
		return -1;
	}
	sb_raise_api_error(fn->qualname, category, message);
	return -1;
}

/* For guarded operations that are not registry functions (marshal.loads,
 * code-object construction, frame attributes): only a category or `*` rule
 * can grant them, so the message names the category alone. */
static int deny_outside_registry(const char *what, enum sb_api_category category)
{
	const char *name = sb_api_category_name(category);
	_cleanup_free_ char *message = NULL;

	if (sb_guard_refused(&(struct sb_refusal){.kind = SB_REFUSAL_API_CATEGORY,
						  .category = (int)category}) == SB_RECORDED_ALLOW)
		return 0;
	if (asprintf(&message,
		     "%s is denied by the API guard (category: %s). Add `python-api=ALLOW:%s` to "
		     "'%s' to allow the whole category",
		     what, name, name, sb_guard_profile_path()) < 0) {
		message = NULL;
		PyErr_NoMemory();
		return -1;
	}
	sb_raise_api_error(what, name, message);
	return -1;
}

static inline int check(int index)
{
	return api.allowed[index] ? 0 : deny(index);
}

static int check_entry(size_t i)
{
	if (!sb_guard_armed() || entries[i].fn == NO_FN)
		return 0;
	if ((entries[i].flags & F_EXEMPT_LIBRARY) && caller_is_library())
		return 0;
	if (entries[i].flags & F_ANY_OF)
		return api.allowed[entries[i].fn] ? 0 : check(entries[i].alias);
	if (check(entries[i].fn) < 0)
		return -1;
	if (entries[i].alias != NO_FN && check(entries[i].alias) < 0)
		return -1;
	return 0;
}

/* ---- wrappers ----------------------------------------------------------- */

static int install_on_module(const char *name, PyObject *module);

static PyObject *module_name_of(PyObject *module)
{
	return PyModule_Check(module) ? PyModule_GetNameObject(module) : NULL;
}

/* After _imp created or executed a module: wrap its functions before the
 * module is handed to anyone. */
static int imp_hook_done(PyObject *module)
{
	PyObject *name;
	const char *s;
	int r = 0;

	if (!module || !PyModule_Check(module))
		return 0;
	name = module_name_of(module);
	if (!name) {
		PyErr_Clear();
		return 0;
	}
	s = PyUnicode_AsUTF8(name);
	if (s) {
		r = install_on_module(s, module);
		if (r >= 0)
			r = sb_guard_module_loaded(s, module);
	} else
		PyErr_Clear();
	Py_DECREF(name);
	return r;
}

static unsigned dynamic_budget(size_t i, PyObject *const *args, Py_ssize_t nargs)
{
	/* eval/exec of a string compile then run (two events); of a code
	 * object, run only; compile() raises one. */
	if (streq(entries[i].attr, "compile"))
		return 1;
	return nargs > 0 && PyCode_Check(args[0]) ? 1 : 2;
}

static PyObject *call_entry(size_t i, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	enum ev_family family = entries[i].family;
	PyObject *original = api.original[i], *result;
	unsigned saved = 0;

	if (!original) {
		PyErr_Format(PyExc_RuntimeError, "%s is not available", entries[i].attr);
		return NULL;
	}
	if (check_entry(i) < 0)
		return NULL;
	if (family != EV_NONE) {
		saved = claims[family];
		/* A library caller's eval/exec/compile is not a grant: the
		 * "compile" event decides whose source it is (on_compile). */
		claims[family] = family != EV_DYNAMIC	      ? 1
				 : api.allowed[entries[i].fn] ? dynamic_budget(i, args, nargs)
							      : 0;
	}
	/* The original may be released by a re-wrap while it runs. */
	Py_INCREF(original);
	result = PyObject_Vectorcall(original, args, (size_t)nargs, kwnames);
	Py_DECREF(original);
	if (family != EV_NONE)
		claims[family] = saved;
	if (result && (entries[i].flags & F_IMP_HOOK)) {
		/* create_*() returns the new module, exec_*() takes it. */
		PyObject *module = startswith(entries[i].attr, "create") ? result
				   : nargs > 0				 ? args[0]
									 : NULL;

		if (imp_hook_done(module) < 0)
			Py_CLEAR(result);
	}
	if (result && (entries[i].flags & F_AFTER_IMPORT) && sb_guard_armed() &&
	    sb_guard_after_import() < 0)
		Py_CLEAR(result);
	return result;
}

/* One C function per entry, so that a wrapper needs no m_self: nothing
 * reachable from it (gc.get_referents, __self__) leads to the original. */
#define TRAMP(b, k)                                                                                \
	static PyObject *tramp_##b##_##k(PyObject *self _unused_, PyObject *const *args,           \
					 Py_ssize_t nargs, PyObject *kwnames)                      \
	{                                                                                          \
		return call_entry(8 * (b) + (k), args, nargs, kwnames);                            \
	}
#define TRAMP8(b)                                                                                  \
	TRAMP(b, 0)                                                                                \
	TRAMP(b, 1)                                                                                \
	TRAMP(b, 2) TRAMP(b, 3) TRAMP(b, 4) TRAMP(b, 5) TRAMP(b, 6) TRAMP(b, 7)
#define P8(b)                                                                                      \
	tramp_##b##_0, tramp_##b##_1, tramp_##b##_2, tramp_##b##_3, tramp_##b##_4, tramp_##b##_5,  \
	    tramp_##b##_6, tramp_##b##_7

TRAMP8(0)
TRAMP8(1)
TRAMP8(2)
TRAMP8(3)
TRAMP8(4)
TRAMP8(5)
TRAMP8(6)
TRAMP8(7)
TRAMP8(8)
TRAMP8(9)
TRAMP8(10)
TRAMP8(11)
TRAMP8(12)
TRAMP8(13)
TRAMP8(14)
TRAMP8(15)
TRAMP8(16)
TRAMP8(17)

typedef PyObject *(*tramp_fn)(PyObject *, PyObject *const *, Py_ssize_t, PyObject *);
static const tramp_fn tramps[] = {P8(0),  P8(1),  P8(2),  P8(3),  P8(4),  P8(5),
				  P8(6),  P8(7),  P8(8),  P8(9),  P8(10), P8(11),
				  P8(12), P8(13), P8(14), P8(15), P8(16), P8(17)};
_Static_assert(ELEMENTSOF(tramps) >= ELEMENTSOF(entries), "add TRAMP8 rows");

/* The module id of a module's name, or -1 when it holds nothing guarded. */
static int module_id(const char *name)
{
	size_t lo = 0, hi = M__N;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		/* Most names in sys.modules differ in their first letter. */
		int c = (unsigned char)name[0] - (unsigned char)module_names[mid][0];

		c = c ? c : strcmp(name, module_names[mid]);
		if (c == 0)
			return (int)mid;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

/* The name of module m as a str (the key in sys.modules, and the wrappers'
 * __module__): sys.modules' own key when activation found the module there,
 * else made (interned) when first needed; borrowed. */
static PyObject *module_key(enum api_module m)
{
	if (!api.tracked[m].key)
		api.tracked[m].key = PyUnicode_InternFromString(module_names[m]);
	return api.tracked[m].key;
}

/* Entry i's attribute name as a str (borrowed), made once and shared with a
 * neighbour of the same name: OS() puts posix.X and os.X side by side. */
static PyObject *attr_key(size_t i)
{
	if (api.attr_key[i])
		return api.attr_key[i];
	if (i > 0 && api.attr_key[i - 1] && streq(entries[i - 1].attr, entries[i].attr))
		api.attr_key[i] = Py_NewRef(api.attr_key[i - 1]);
	else if (i + 1 < N_ENTRIES && api.attr_key[i + 1] &&
		 streq(entries[i + 1].attr, entries[i].attr))
		api.attr_key[i] = Py_NewRef(api.attr_key[i + 1]);
	else
		api.attr_key[i] = PyUnicode_FromString(entries[i].attr);
	return api.attr_key[i];
}

/* Whether entry i's wrapper has anything to do: refuse a call, claim an
 * event for a family, or hook the import system. A spelling the rules allow
 * outright keeps its original function (nothing to create and install at
 * every start for, e.g., python-api=ALLOW:threads). */
static bool entry_needed(size_t i)
{
	const struct wrap_entry *e = &entries[i];

	return e->fn == NO_FN || e->family != EV_NONE || !api.allowed[e->fn] ||
	       (e->alias != NO_FN && !api.allowed[e->alias]);
}

/* Puts entry i's wrapper on target (a module or a class). 0 also when the
 * attribute does not exist in this Python version. */
static int install(size_t i, PyObject *target)
{
	/* A module's namespace is its dict: going to it directly skips the
	 * generic attribute machinery, ~90 times on every start. */
	PyObject *dict = PyModule_Check(target) ? PyModule_GetDict(target) : NULL;
	PyObject *name = attr_key(i), *current, *original, *value;
	size_t j;
	bool ours;
	int r;

	if (!name)
		return -1;
	if (dict) {
		/* A lookup that fails (a planted key whose __eq__ raises) must
		 * not leave the function unwrapped: the error propagates. */
		current = PyDict_GetItemWithError(dict, name); /* borrowed */
		if (!current)
			return PyErr_Occurred() ? -1 : 0;
		Py_INCREF(current);
	} else {
		current = PyObject_GetAttr(target, name);
		if (!current) {
			PyErr_Clear();
			return 0;
		}
	}
	ours = is_our_wrapper(current, &j);
	if (ours && j == i) {
		Py_DECREF(current);
		return 0;
	}
	if (!entry_needed(i)) {
		/* Another spelling's wrapper copied here (signal.alarm from
		 * _signal) would refuse what this spelling's rule allows. */
		value = ours ? api.original[j] : NULL;
		Py_DECREF(current);
		if (!value)
			return 0;
		return dict ? PyDict_SetItem(dict, name, value)
			    : PyObject_SetAttr(target, name, value);
	}
	/* Another spelling's wrapper (signal.alarm copied from the wrapped
	 * _signal): wrap the original behind it, so that each spelling needs
	 * its own grant and no more. */
	original = ours ? api.original[j] : current;
	if (!original) {
		Py_DECREF(current);
		return 0;
	}
	Py_INCREF(original);
	Py_XSETREF(api.original[i], original);
	Py_DECREF(current);
	if (!api.wrapper[i]) {
		PyObject *modname = module_key(entries[i].module);

		if (!modname)
			return -1;
		api.wrapper[i] = PyCFunction_NewEx(&defs[i], NULL, modname);
		if (!api.wrapper[i])
			return -1;
		/* m_self NULL, m_module a str: a wrapper is in no reference
		 * cycle, and the collector need not visit it on every pass. */
		PyObject_GC_UnTrack(api.wrapper[i]);
	}
	if (entries[i].flags & F_METHOD) {
		value = PyInstanceMethod_New(api.wrapper[i]);
		if (!value)
			return -1;
	} else {
		value = Py_NewRef(api.wrapper[i]);
	}
	r = dict ? PyDict_SetItem(dict, name, value) : PyObject_SetAttr(target, name, value);
	Py_DECREF(value);
	return r;
}

/* Module-level entries only when the module may not be complete (_imp's
 * create step); the classes come with the after_import scan. */
static int install_on_module(const char *name, PyObject *module)
{
	int m = module_id(name);

	for (int i = m >= 0 ? api.first[m] : -1; i >= 0; i = api.next[i])
		if (!(entries[i].flags & F_METHOD) && install((size_t)i, module) < 0)
			return -1;
	return 0;
}

/* Every entry of module m, then m is done until sys.modules holds another
 * module under its name. */
static int install_all(enum api_module m, PyObject *module)
{
	for (int i = api.first[m]; i >= 0; i = api.next[i]) {
		PyObject *cls;
		int r;

		if (!(entries[i].flags & F_METHOD)) {
			if (install((size_t)i, module) < 0)
				return -1;
			continue;
		}
		cls = PyObject_GetAttrString(module, entries[i].cls);
		if (!cls) {
			PyErr_Clear();
			continue;
		}
		r = PyType_Check(cls) ? install((size_t)i, cls) : 0;
		Py_DECREF(cls);
		if (r < 0)
			return -1;
	}
	Py_INCREF(module);
	Py_XSETREF(api.tracked[m].done, module);
	return 0;
}

static bool module_initializing(PyObject *module)
{
	PyObject *spec = NULL, *flag = NULL;
	bool initializing = false;

	if (!api.spec_key)
		api.spec_key = PyUnicode_InternFromString("__spec__");
	if (!api.initializing_key)
		api.initializing_key = PyUnicode_InternFromString("_initializing");
	if (api.spec_key && api.initializing_key)
		spec = PyObject_GetAttr(module, api.spec_key);
	if (spec && spec != Py_None)
		flag = PyObject_GetAttr(spec, api.initializing_key);
	if (flag)
		initializing = PyObject_IsTrue(flag) > 0;
	PyErr_Clear();
	Py_XDECREF(flag);
	Py_XDECREF(spec);
	return initializing;
}

/* After an import that changed sys.modules: each guarded module written in
 * Python, looked up by its interned name (the others: made_by_imp). */
static int scan_modules(void)
{
	PyObject *modules = PyImport_GetModuleDict(); /* borrowed */

	api.pending = false;
	for (size_t m = 0; m < M__N; m++) {
		PyObject *key, *module;

		if (made_by_imp[m])
			continue;
		key = module_key((enum api_module)m);
		if (!key)
			return -1;
		module = PyDict_GetItemWithError(modules, key); /* borrowed */
		if (!module) {
			if (PyErr_Occurred())
				return -1;
			continue;
		}
		if (module == api.tracked[m].done)
			continue;
		/* A module still running its body (an import inside it) gets
		 * its functions later: come back after the next import. */
		if (module_initializing(module)) {
			api.pending = true;
			continue;
		}
		if (install_all((enum api_module)m, module) < 0)
			return -1;
	}
	return 0;
}

/* At activation: the modules the runtime loaded so far (os, posix, _thread,
 * builtins, _imp...), found in one pass over sys.modules, with no string made
 * for the ~20 guarded modules that are not there; the rest are wrapped as
 * they are imported. No import is in progress at this point, so no module is
 * still initialising. The modules are collected first: installing looks up
 * classes, which may run Python code that changes sys.modules. */
static int install_loaded(void)
{
	PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
	PyObject *found[M__N] = {0}, *key, *value;
	Py_ssize_t pos = 0;
	int r = 0;

	while (PyDict_Next(modules, &pos, &key, &value)) {
		const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
		int m = name ? module_id(name) : -1;

		if (!name)
			PyErr_Clear();
		if (m < 0 || found[m])
			continue;
		found[m] = Py_NewRef(value);
		if (!api.tracked[m].key && PyUnicode_CheckExact(key))
			api.tracked[m].key = Py_NewRef(key);
	}
	for (size_t m = 0; m < M__N; m++) {
		if (found[m] && r == 0)
			r = install_all((enum api_module)m, found[m]);
		Py_XDECREF(found[m]);
	}
	return r;
}

/* sb_guard_after_import() calls this only when sys.modules changed, or when
 * it asked to be called again (1: a module was still initialising). */
static int api_after_import(void)
{
	if (scan_modules() < 0)
		return -1;
	return api.pending ? 1 : 0;
}

/* ---- audit events -------------------------------------------------------- */

/* An event a wrapper announced passes; any other must have every spelling
 * of its family allowed. */
static int check_family(enum ev_family family)
{
	if (claims[family] > 0) {
		claims[family]--;
		return 0;
	}
	for (size_t k = 0; k < families[family].n; k++)
		if (check(families[family].fn[k]) < 0)
			return -1;
	return 0;
}

static int on_system(PyObject *args _unused_)
{
	return check_family(EV_SYSTEM);
}

static int on_exec(PyObject *args)
{
	/* os.exec passes (path, args, env): env is None for execv. */
	PyObject *env = PyTuple_Size(args) >= 3 ? PyTuple_GET_ITEM(args, 2) : Py_None;
	const short *names = exec_fns[env != Py_None];

	PyErr_Clear();
	if (claims[EV_EXEC] > 0) {
		claims[EV_EXEC]--;
		return 0;
	}
	return check(names[0]) < 0 || check(names[1]) < 0 ? -1 : 0;
}

static int on_posix_spawn(PyObject *args _unused_)
{
	return check_family(EV_POSIX_SPAWN);
}

static int on_fork(PyObject *args _unused_)
{
	return check_family(EV_FORK);
}

static int on_forkpty(PyObject *args _unused_)
{
	return check_family(EV_FORKPTY);
}

static int on_kill(PyObject *args _unused_)
{
	return check_family(EV_KILL);
}

static int on_killpg(PyObject *args _unused_)
{
	return check_family(EV_KILLPG);
}

static int on_setrlimit(PyObject *args _unused_)
{
	return check_family(EV_SETRLIMIT);
}

static int on_prlimit(PyObject *args _unused_)
{
	return check_family(EV_PRLIMIT);
}

static int on_string_at(PyObject *args _unused_)
{
	return check_family(EV_STRING_AT);
}

static int on_wstring_at(PyObject *args _unused_)
{
	return check_family(EV_WSTRING_AT);
}

static int on_popen(PyObject *args _unused_)
{
	return check(SB_API_FN_subprocess_Popen);
}

/* ctypes.CDLL and PyDLL (and _ctypes.dlopen) all open through this. */
static int on_dlopen(PyObject *args _unused_)
{
	return check(SB_API_FN_ctypes_CDLL);
}

/* Standard-library functions that return the frame they read: exempt as
 * the runtime's only when the runtime called them (traceback.print_exc()
 * walks a traceback through walk_tb(); logging's findCaller() calls
 * currentframe()), not when the program did and gets the frame. */
static const struct {
	const char *file; /* relative to the standard library */
	const char *function;
} frame_returners[] = {
    {"/logging/__init__.py", "<lambda>"}, /* currentframe = lambda: sys._getframe(1) */
    {"/traceback.py", "walk_stack"},
    {"/traceback.py", "walk_tb"},
};

static bool hands_frame_to_program(void)
{
	PyFrameObject *frame = PyEval_GetFrame(), *back; /* borrowed */
	PyCodeObject *code;
	const char *file;
	bool returner = false, program = true;

	if (!frame)
		return false;
	for (size_t i = 0; !returner && i < ELEMENTSOF(frame_returners); i++)
		returner =
		    sb_guard_frame_is(frame, frame_returners[i].file, frame_returners[i].function);
	if (!returner)
		return false;
	back = PyFrame_GetBack(frame);
	if (back) {
		code = PyFrame_GetCode(back);
		file = PyUnicode_AsUTF8(code->co_filename);
		program = !(file && sb_guard_is_runtime_file(file));
		PyErr_Clear();
		Py_DECREF(code);
		Py_DECREF(back);
	}
	return program;
}

/* A frame read by the runtime for itself. */
static bool frame_read_by_runtime(void)
{
	return caller_is_library() && !hands_frame_to_program();
}

static int on_getframe(PyObject *args _unused_)
{
	/* typing, logging, namedtuple, enum... read their caller's frame. */
	return frame_read_by_runtime() ? 0 : check(SB_API_FN_sys__getframe);
}

static int on_getframemodulename(PyObject *args _unused_)
{
	return caller_is_library() ? 0 : check(SB_API_FN_sys__getframemodulename);
}

static int on_current_frames(PyObject *args _unused_)
{
	return check(SB_API_FN_sys__current_frames);
}

static int on_current_exceptions(PyObject *args _unused_)
{
	return check(SB_API_FN_sys__current_exceptions);
}

static int on_settrace(PyObject *args _unused_)
{
	return check(SB_API_FN_sys_settrace);
}

static int on_setprofile(PyObject *args _unused_)
{
	return check(SB_API_FN_sys_setprofile);
}

/* A second hook could not remove ours, but it could observe every event
 * (and the arguments of refused calls). */
static int on_addaudithook(PyObject *args _unused_)
{
	return check(SB_API_FN_sys_addaudithook);
}

static int on_get_objects(PyObject *args _unused_)
{
	return check(SB_API_FN_gc_get_objects);
}

static int on_get_referrers(PyObject *args _unused_)
{
	return check(SB_API_FN_gc_get_referrers);
}

static int on_get_referents(PyObject *args _unused_)
{
	return check(SB_API_FN_gc_get_referents);
}

static int on_subinterpreter(PyObject *args _unused_)
{
	return check(SB_API_FN__xxsubinterpreters_create);
}

/* The guarded module whose body code is, or -1: a module's code object is
 * named "<module>" and carries the file it came from, which for a guarded
 * module is the standard library's (a copy compiled under that name is
 * refused by on_compile). */
static int guarded_module_of_code(PyObject *code_obj)
{
	PyCodeObject *code = (PyCodeObject *)code_obj;
	const char *file;
	char rel[64];

	if (!PyCode_Check(code_obj) || !PyUnicode_Check(code->co_name) ||
	    PyUnicode_CompareWithASCIIString(code->co_name, "<module>") != 0)
		return -1;
	file = PyUnicode_AsUTF8(code->co_filename);
	if (!file) {
		PyErr_Clear();
		return -1;
	}
	for (size_t m = 0; m < M__N; m++) {
		const char *name = module_names[m];
		size_t n = 0;

		if (made_by_imp[m])
			continue;
		rel[n++] = '/';
		for (; *name && n < sizeof(rel) - 16; name++)
			rel[n++] = *name == '.' ? '/' : *name;
		memcpy(rel + n, ".py", 4);
		if (sb_guard_is_stdlib_source(file, rel))
			return (int)m;
		memcpy(rel + n, "/__init__.py", 13);
		if (sb_guard_is_stdlib_source(file, rel))
			return (int)m;
	}
	return -1;
}

/* A guarded module's code run again -- exec() of its code object, its
 * loader's exec_module() on the module or on a copy, importlib.reload(),
 * runpy.run_module() -- makes fresh functions that no wrapper covers, and
 * their frames pass for the standard library's own (inspect.currentframe()
 * of a copy returns a frame). Its code may run in its import only: from
 * importlib, into the module sys.modules holds under its name while that
 * module initialises, and not into the one already wrapped (a new import
 * after `del sys.modules[name]` makes a new module, wrapped by the next
 * scan). The interpreter's own `python-sb -m pickle` runs the program, not a
 * copy for it. No grant allows the rest, and learning does not record it:
 * the wrappers would be gone whatever the rules say. */
static int check_module_rerun(int m)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyObject *name = NULL, *ns = NULL, *module;
	_cleanup_free_ char *message = NULL;
	bool as_main = false;
	int r = -1;

	if (frame)
		sb_guard_module_run_target(frame, &name, &ns, &as_main);
	if (name && PyUnicode_CompareWithASCIIString(name, module_names[m]) == 0) {
		if (as_main) {
			r = 0;
			goto out;
		}
		module = PyDict_GetItemWithError(PyImport_GetModuleDict(), name); /* borrowed */
		if (!module && PyErr_Occurred())
			goto out;
		if (module && PyModule_Check(module) && PyModule_GetDict(module) == ns &&
		    module != api.tracked[m].done && module_initializing(module)) {
			r = 0;
			goto out;
		}
	}
	if (asprintf(&message,
		     "running the code of the guarded module '%s' again (exec(), exec_module(), "
		     "reload(), runpy) is refused by the API guard: its functions would come back "
		     "without their wrappers. Import it instead",
		     module_names[m]) < 0) {
		message = NULL;
		PyErr_NoMemory();
		goto out;
	}
	sb_raise_api_error(module_names[m], sb_api_category_name(SB_API_INTROSPECTION), message);
out:
	Py_XDECREF(name);
	Py_XDECREF(ns);
	return r;
}

/* Running a code object (exec/eval of one, or the second half of exec of a
 * string): the code had to come from compile() or from the runtime. A
 * guarded module's body is judged by what it is, whoever runs it. */
static int on_exec_code(PyObject *args)
{
	PyObject *code = PyTuple_GetItem(args, 0);
	bool claimed = claims[EV_DYNAMIC] > 0;
	int m = code ? guarded_module_of_code(code) : -1;

	if (!code)
		PyErr_Clear();
	if (claimed)
		claims[EV_DYNAMIC]--;
	if (m >= 0)
		return check_module_rerun(m);
	if (claimed || caller_is_library())
		return 0;
	return check(SB_API_FN_builtins_exec);
}

/* The standard library's own code generators: what they compile is built
 * from their own templates (field names are checked identifiers), not source
 * a caller hands over. Every other standard-library caller of compile() --
 * code, codeop, timeit, runpy.run_path, trace, pdb, doctest, a configparser
 * converter, an atexit or thread callback -- compiles what the program gave
 * it, so the program's python-api rules decide, not the caller's file. */
static const struct {
	const char *file; /* relative to the standard library */
	const char *function;
} stdlib_code_generators[] = {
    {"/ast.py", "parse"}, /* an AST only: running it needs another compile() */
    {"/collections/__init__.py", "namedtuple"},
    {"/dataclasses.py", "_create_fn"},
    {"/gettext.py", "c2py"}, /* plural forms, checked by its own tokenizer */
    {"/multiprocessing/managers.py", "MakeProxyType"},
    {"/multiprocessing/sharedctypes.py", "make_property"},
    {"/typing.py", "__init__"},		     /* ForwardRef: evaluating it is a separate exec */
    {"/unittest/mock.py", "_set_signature"}, /* create_autospec: the name is an identifier */
    {"/zipimport.py", "_compile_source"},
};

static bool caller_generates_code(PyCodeObject *code, const char *file)
{
	/* importlib compiling a module's source: the import guard decides. */
	if (startswith(file, "<frozen importlib"))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(stdlib_code_generators); i++)
		if (sb_guard_code_is(code, stdlib_code_generators[i].file,
				     stdlib_code_generators[i].function))
			return true;
	return false;
}

static int refuse_laundering(const char *filename)
{
	_cleanup_free_ char *message = NULL;

	if (asprintf(&message,
		     "compiling source under the standard library's file name '%s' is refused "
		     "by the API guard: its frames would pass for the interpreter's own",
		     filename) < 0) {
		message = NULL;
		PyErr_NoMemory();
		return -1;
	}
	sb_raise_api_error("builtins.compile", sb_api_category_name(SB_API_DYNAMIC_CODE), message);
	return -1;
}

static int check_compile(void)
{
	if (claims[EV_DYNAMIC] > 0) {
		claims[EV_DYNAMIC]--;
		return 0;
	}
	return check(SB_API_FN_builtins_compile);
}

/* compile(), and eval/exec of a string, raise "compile" (source, filename).
 * The launcher's own compiles have no Python frame: a file the parser reads
 * (source None: the script, stdin, the REPL's lines) and the -c command,
 * once. Any other frameless compile is a callback the program registered
 * (atexit.register(exec, ...)). */
static int on_compile(PyObject *args)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyObject *source, *filename;
	PyCodeObject *code;
	const char *name, *file;
	bool generated, in_runtime;

	if (PyTuple_Size(args) < 2) {
		PyErr_Clear();
		return check_compile();
	}
	source = PyTuple_GET_ITEM(args, 0);
	filename = PyTuple_GET_ITEM(args, 1);
	if (!frame) {
		if (source == Py_None)
			return 0;
		if (api.command_compile_pending) {
			api.command_compile_pending = false;
			return 0;
		}
		return check_compile();
	}
	code = PyFrame_GetCode(frame);
	file = PyUnicode_AsUTF8(code->co_filename);
	generated = file && caller_generates_code(code, file);
	in_runtime = file && sb_guard_is_runtime_file(file);
	Py_DECREF(code);
	if (!file)
		PyErr_Clear();
	if (generated)
		return 0;
	/* Code compiled under a standard-library file name would pass for the
	 * runtime's in every frame-based decision, granted or not. */
	name = PyUnicode_Check(filename) ? PyUnicode_AsUTF8(filename) : NULL;
	if (!name)
		PyErr_Clear();
	else if (sb_guard_runtime_relative(name))
		return refuse_laundering(name);
	if (claims[EV_DYNAMIC] > 0) {
		claims[EV_DYNAMIC]--;
		return 0;
	}
	/* Site-packages code generates code too (attrs, pydantic, jinja2): the
	 * library exemption stays for it; the standard library's is the table. */
	if (!in_runtime && caller_is_library())
		return 0;
	return check(SB_API_FN_builtins_compile);
}

/* Any global a pickle names (the gadget's os.system) is looked up here,
 * whichever unpickler runs, pickle.Unpickler included. Plain data needs no
 * lookup. Granting any unpickling entry point grants the lookups. */
static int on_find_class(PyObject *args _unused_)
{
	if (api.any_deserialization)
		return 0;
	return check(SB_API_FN_pickle_loads);
}

static int on_marshal(PyObject *args _unused_)
{
	/* importlib reads every .pyc with marshal.loads. */
	if (api.category_allowed[SB_API_DESERIALIZATION] || caller_is_library())
		return 0;
	return deny_outside_registry("marshal.loads()", SB_API_DESERIALIZATION);
}

static int on_code_new(PyObject *args _unused_)
{
	if (api.category_allowed[SB_API_DYNAMIC_CODE] || caller_is_library())
		return 0;
	return deny_outside_registry("code.__new__() (building a code object)",
				     SB_API_DYNAMIC_CODE);
}

static int on_function_new(PyObject *args _unused_)
{
	if (api.category_allowed[SB_API_DYNAMIC_CODE] || caller_is_library())
		return 0;
	return deny_outside_registry("function.__new__() (a function from a code object)",
				     SB_API_DYNAMIC_CODE);
}

static int on_setattr(PyObject *args)
{
	PyObject *obj, *name;

	if (PyTuple_Size(args) < 2) {
		PyErr_Clear();
		return 0;
	}
	obj = PyTuple_GET_ITEM(args, 0);
	name = PyTuple_GET_ITEM(args, 1);
	if (!PyFunction_Check(obj) || !PyUnicode_Check(name) ||
	    PyUnicode_CompareWithASCIIString(name, "__code__") != 0)
		return 0;
	if (api.category_allowed[SB_API_DYNAMIC_CODE] || caller_is_library())
		return 0;
	return deny_outside_registry("setting function.__code__", SB_API_DYNAMIC_CODE);
}

/* Frames reached through tracebacks and generators are as good as
 * sys._getframe(). */
static int on_getattr(PyObject *args)
{
	static const char *const frame_attrs[] = {"tb_frame", "gi_frame", "cr_frame", "ag_frame"};
	PyObject *name;
	_cleanup_free_ char *what = NULL;

	if (PyTuple_Size(args) < 2) {
		PyErr_Clear();
		return 0;
	}
	name = PyTuple_GET_ITEM(args, 1);
	if (!PyUnicode_Check(name))
		return 0;
	for (size_t k = 0; k < ELEMENTSOF(frame_attrs); k++) {
		if (PyUnicode_CompareWithASCIIString(name, frame_attrs[k]) != 0)
			continue;
		if (api.allowed[SB_API_FN_sys__getframe] || frame_read_by_runtime())
			return 0;
		if (asprintf(&what, "reading %s.%s", Py_TYPE(PyTuple_GET_ITEM(args, 0))->tp_name,
			     frame_attrs[k]) < 0) {
			what = NULL;
			PyErr_NoMemory();
			return -1;
		}
		return deny_outside_registry(what, SB_API_INTROSPECTION);
	}
	return 0;
}

static const struct sb_audit_handler api_handlers[] = {
    {"os.system", on_system},
    {"os.exec", on_exec},
    {"os.posix_spawn", on_posix_spawn},
    {"os.fork", on_fork},
    {"os.forkpty", on_forkpty},
    {"os.kill", on_kill},
    {"os.killpg", on_killpg},
    {"resource.setrlimit", on_setrlimit},
    {"resource.prlimit", on_prlimit},
    {"ctypes.string_at", on_string_at},
    {"ctypes.wstring_at", on_wstring_at},
    {"subprocess.Popen", on_popen},
    {"ctypes.dlopen", on_dlopen},
    {"sys._getframe", on_getframe},
    {"sys._getframemodulename", on_getframemodulename},
    {"sys._current_frames", on_current_frames},
    {"sys._current_exceptions", on_current_exceptions},
    {"sys.settrace", on_settrace},
    {"sys.setprofile", on_setprofile},
    {"sys.addaudithook", on_addaudithook},
    {"gc.get_objects", on_get_objects},
    {"gc.get_referrers", on_get_referrers},
    {"gc.get_referents", on_get_referents},
    {"cpython.PyInterpreterState_New", on_subinterpreter},
    {"compile", on_compile},
    {"exec", on_exec_code},
    {"pickle.find_class", on_find_class},
    {"marshal.loads", on_marshal},
    {"marshal.load", on_marshal},
    {"code.__new__", on_code_new},
    {"function.__new__", on_function_new},
    {"object.__setattr__", on_setattr},
    {"object.__getattr__", on_getattr},
};

/* ---- life cycle ---------------------------------------------------------- */

static int api_prepare(const struct sb_profile *profile,
		       const struct sb_interp_paths *interp _unused_, char **reterr)
{
	api.allowed = calloc(sb_api_registry_size, sizeof(*api.allowed));
	api.decider = calloc(sb_api_registry_size, sizeof(*api.decider));
	if (!api.allowed || !api.decider)
		return -ENOMEM;
	api.eval_keys = profile->eval.any_key;
	/* One decision per function, computed once: the hot path is an array
	 * read. Without python-api= lines every decision is the implicit
	 * refusal calloc() wrote (denied, no deciding rule). */
	for (size_t i = 0; profile->n_apis > 0 && i < sb_api_registry_size; i++) {
		const struct sb_api_function *fn = &sb_api_registry[i];

		api.allowed[i] =
		    sb_api_is_allowed(profile->apis, profile->n_apis, fn, &api.decider[i]);
		if (fn->category == SB_API_DYNAMIC_CODE && api.eval_keys)
			api.allowed[i] = false;
		if (fn->category == SB_API_DESERIALIZATION && api.allowed[i])
			api.any_deserialization = true;
	}
	/* A name no function rule can match: the category and `*` rules
	 * decide. */
	for (size_t c = 0; profile->n_apis > 0 && c < SB_API_CATEGORY__N; c++) {
		const struct sb_api_function outside = {"", (enum sb_api_category)c};

		api.category_allowed[c] =
		    sb_api_is_allowed(profile->apis, profile->n_apis, &outside, NULL);
	}
	if (api.eval_keys)
		api.category_allowed[SB_API_DYNAMIC_CODE] = false;

	/* The registry functions of the tables above are compile-time
	 * indices; module_id() needs its table in order. */
	for (size_t m = 1; m < M__N; m++)
		if (strcmp(module_names[m - 1], module_names[m]) >= 0) {
			if (asprintf(reterr,
				     "internal error: the API guard's module '%s' is out of order",
				     module_names[m]) < 0)
				*reterr = NULL;
			return -EINVAL;
		}
	for (size_t m = 0; m < M__N; m++)
		api.first[m] = -1;
	for (size_t i = N_ENTRIES; i-- > 0;) {
		defs[i] = (PyMethodDef){
		    .ml_name = entries[i].attr,
		    .ml_meth = (PyCFunction)(void (*)(void))tramps[i],
		    .ml_flags = METH_FASTCALL | METH_KEYWORDS,
		    .ml_doc = "Guarded by the python-api= rules of py-sandboxes.",
		};
		api.next[i] = api.first[entries[i].module];
		api.first[entries[i].module] = (short)i;
	}
	return 0;
}

/* site-packages and dist-packages on sys.path: code there generates code
 * (attrs, pydantic) and reads frames like the standard library does. */
static int collect_site_dirs(void)
{
	PyObject *path = PySys_GetObject("path"); /* borrowed */
	Py_ssize_t n;

	if (!path || !PyList_Check(path))
		return 0;
	n = PyList_GET_SIZE(path);
	api.site_dirs = calloc((size_t)n + 1, sizeof(char *));
	if (!api.site_dirs)
		return -ENOMEM;
	for (Py_ssize_t k = 0; k < n; k++) {
		PyObject *item = PyList_GET_ITEM(path, k);
		const char *dir = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
		const char *base;
		size_t len;

		if (!dir) {
			PyErr_Clear();
			continue;
		}
		len = strlen(dir);
		while (len > 1 && dir[len - 1] == '/')
			len--;
		base = memrchr(dir, '/', len);
		base = base ? base + 1 : dir;
		if (strncmp(base, "site-packages", (size_t)(dir + len - base)) != 0 &&
		    strncmp(base, "dist-packages", (size_t)(dir + len - base)) != 0)
			continue;
		if ((size_t)(dir + len - base) != strlen("site-packages"))
			continue;
		api.site_dirs[api.n_site_dirs] = strndup(dir, len);
		if (!api.site_dirs[api.n_site_dirs])
			return -ENOMEM;
		api.n_site_dirs++;
	}
	return 0;
}

/* sys.argv[0] is "-c" before Py_RunMain() compiles the command. */
static bool running_command(void)
{
	PyObject *argv = PySys_GetObject("argv"); /* borrowed */
	PyObject *arg0 = argv && PyList_Check(argv) && PyList_GET_SIZE(argv) > 0
			     ? PyList_GET_ITEM(argv, 0)
			     : NULL;

	return arg0 && PyUnicode_Check(arg0) && PyUnicode_CompareWithASCIIString(arg0, "-c") == 0;
}

static int api_activate(char **reterr)
{
	int r;

	r = collect_site_dirs();
	if (r < 0)
		return r;
	api.command_compile_pending = running_command();
	if (install_loaded() < 0)
		goto fail;
	return 0;
fail:
	PyErr_Clear();
	*reterr = strdup("cannot install the API guard");
	return -EIO;
}

static void api_release(void)
{
	free(api.allowed);
	free(api.decider);
	for (size_t i = 0; i < api.n_site_dirs; i++)
		free(api.site_dirs[i]);
	free(api.site_dirs);
	/* The Python objects belonged to the finalized interpreter: drop them,
	 * don't DECREF. */
	memset(&api, 0, sizeof(api));
}

const struct sb_guard_part sb_guard_api_part = {
    .name = "api",
    .prepare = api_prepare,
    .activate = api_activate,
    .release = api_release,
    .handlers = api_handlers,
    .n_handlers = ELEMENTSOF(api_handlers),
    .after_import = api_after_import,
};
