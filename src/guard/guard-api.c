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
 * original by some path around the wrappers. In files:
 *
 *   guard-api.c          the event handlers and the part's life cycle;
 *   guard-api-check.c    the decisions;
 *   guard-api-wrap.c     the wrappers, installed as modules load;
 *   guard-api-table.c    the tables: guard-api-modules.h (the modules that
 *                        hold wrapped functions) and guard-api-wraps.h (the
 *                        wrapped functions), one line each. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-part.h"

#include <frameobject.h>

#include "api-registry.h"
#include "eval.h"
#include "guard-api-check.h"
#include "guard-api-table.h"
#include "guard-api-wrap.h"
#include "guard-code.h"
#include "guard-files-exec.h"
#include "guard-imports.h"
#include "guard-runtime.h"
#include "pysandboxes-module.h"
#include "util.h"

/* -c: the launcher compiles the command once, with no Python frame. */
static bool command_compile_pending;
/* The launcher compiled the program's code (the script, the command, a
 * line of the REPL): its run comes next, with no Python frame either. */
static bool main_exec_pending;

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
} families[SB_API_EV__N] = {
    [SB_API_EV_SYSTEM] = FAMILY(SB_API_FN_os_system, SB_API_FN_posix_system),
    [SB_API_EV_POSIX_SPAWN] = FAMILY(SB_API_FN_os_posix_spawn, SB_API_FN_posix_posix_spawn,
				     SB_API_FN_os_posix_spawnp, SB_API_FN_posix_posix_spawnp),
    [SB_API_EV_FORK] = FAMILY(SB_API_FN_os_fork, SB_API_FN_posix_fork),
    [SB_API_EV_FORKPTY] = FAMILY(SB_API_FN_os_forkpty, SB_API_FN_posix_forkpty),
    [SB_API_EV_KILL] = FAMILY(SB_API_FN_os_kill, SB_API_FN_posix_kill),
    [SB_API_EV_KILLPG] = FAMILY(SB_API_FN_os_killpg, SB_API_FN_posix_killpg),
    [SB_API_EV_SETRLIMIT] = FAMILY(SB_API_FN_resource_setrlimit),
    [SB_API_EV_PRLIMIT] = FAMILY(SB_API_FN_resource_prlimit),
    [SB_API_EV_STRING_AT] = FAMILY(SB_API_FN_ctypes_string_at),
    [SB_API_EV_WSTRING_AT] = FAMILY(SB_API_FN_ctypes_wstring_at),
};

/* os.exec passes (path, args, env): [with env][os, posix]. */
static const short exec_fns[2][2] = {
    {SB_API_FN_os_execv, SB_API_FN_posix_execv},
    {SB_API_FN_os_execve, SB_API_FN_posix_execve},
};

/* ---- audit events -------------------------------------------------------- */

/* An event a wrapper announced passes; any other must have every spelling
 * of its family allowed. */
static int check_family(enum sb_api_family family)
{
	if (sb_api_claimed(family))
		return 0;
	for (size_t k = 0; k < families[family].n; k++)
		if (sb_api_check(families[family].fn[k]) < 0)
			return -1;
	return 0;
}

/* After the API's verdict, the program the call runs, checked against the
 * kernel's view of the files (guard-files-exec.h). */
static PyObject *arg_at(PyObject *args, Py_ssize_t i)
{
	return PyTuple_Check(args) && PyTuple_GET_SIZE(args) > i ? PyTuple_GET_ITEM(args, i) : NULL;
}

static int on_system(PyObject *args _unused_)
{
	static PyObject *shell;

	if (check_family(SB_API_EV_SYSTEM) < 0)
		return -1;
	if (!shell && !(shell = PyUnicode_InternFromString("/bin/sh")))
		return -1;
	return sb_files_check_program(shell, NULL, false, "os.system's shell");
}

static int on_exec(PyObject *args)
{
	/* os.exec passes (path, args, env): env is None for execv. */
	PyObject *env = PyTuple_Size(args) >= 3 ? PyTuple_GET_ITEM(args, 2) : Py_None;
	const short *names = exec_fns[env != Py_None];

	PyErr_Clear();
	if (!sb_api_claimed(SB_API_EV_EXEC) &&
	    (sb_api_check(names[0]) < 0 || sb_api_check(names[1]) < 0))
		return -1;
	return sb_files_check_program(arg_at(args, 0), NULL, false, "os.exec");
}

static int on_posix_spawn(PyObject *args)
{
	if (check_family(SB_API_EV_POSIX_SPAWN) < 0)
		return -1;
	/* posix_spawnp searches the process's PATH, posix_spawn the cwd: the
	 * event does not tell which, the search covers both's usual case. */
	return sb_files_check_program(arg_at(args, 0), NULL, true, "os.posix_spawn");
}

static int on_fork(PyObject *args _unused_)
{
	return check_family(SB_API_EV_FORK);
}

static int on_forkpty(PyObject *args _unused_)
{
	return check_family(SB_API_EV_FORKPTY);
}

static int on_kill(PyObject *args _unused_)
{
	return check_family(SB_API_EV_KILL);
}

static int on_killpg(PyObject *args _unused_)
{
	return check_family(SB_API_EV_KILLPG);
}

static int on_setrlimit(PyObject *args _unused_)
{
	return check_family(SB_API_EV_SETRLIMIT);
}

static int on_prlimit(PyObject *args _unused_)
{
	return check_family(SB_API_EV_PRLIMIT);
}

static int on_string_at(PyObject *args _unused_)
{
	return check_family(SB_API_EV_STRING_AT);
}

static int on_wstring_at(PyObject *args _unused_)
{
	return check_family(SB_API_EV_WSTRING_AT);
}

/* (executable, args, cwd, env): executable is args[0] when not given, the
 * shell with shell=True; found as Popen finds it, in env's PATH. */
static int on_popen(PyObject *args)
{
	if (sb_api_check(SB_API_FN_subprocess_Popen) < 0)
		return -1;
	return sb_files_check_program(arg_at(args, 0), arg_at(args, 3), true, "subprocess.Popen");
}

/* ctypes.CDLL and PyDLL (and _ctypes.dlopen) all open through this; every
 * other ctypes event (a symbol looked up, a foreign function called by
 * address, memory read or written through from_address(), from_buffer(),
 * addressof(), PyObj_FromPtr(), a buffer made, errno) is what a loaded
 * library is used with: the same grant. */
static int on_native(PyObject *args _unused_)
{
	return sb_api_check(SB_API_FN_ctypes_CDLL);
}

/* SQLite loading an extension is loading a shared library:
 * sqlite3.enable_load_extension(True) and load_extension() (the SQL
 * function load_extension() needs the first). */
static int on_sqlite_enable_extensions(PyObject *args)
{
	PyObject *enabled = PyTuple_Size(args) >= 2 ? PyTuple_GET_ITEM(args, 1) : NULL;

	PyErr_Clear();
	if (enabled && PyObject_IsTrue(enabled) == 0)
		return 0;
	PyErr_Clear();
	return sb_api_check(SB_API_FN_ctypes_CDLL);
}

/* A ctypes event no handler names (a newer CPython's): native code, the
 * same grant. */
static int on_native_unknown(const char *event _unused_, PyObject *args _unused_)
{
	return sb_api_check(SB_API_FN_ctypes_CDLL);
}

/* os events no part judges because there is nothing to judge: a lock on a
 * held file (os.lockf), the environment handed to child processes (which
 * need process-exec), a walk whose listings are each judged. Listed, so
 * that an os event the guard does not know is refused (on_os_unknown). */
static int on_os_harmless(PyObject *args _unused_)
{
	return 0;
}

/* An os event no part knows (a newer CPython's): refused, since os is
 * where the system is changed. The message says so; no rule can allow it. */
static int on_os_unknown(const char *event, PyObject *args _unused_)
{
	_cleanup_free_ char *message = NULL;

	if (asprintf(&message,
		     "%s is an operation of the os module that the guard of this python-sb does "
		     "not know, so it is refused",
		     event) < 0) {
		message = NULL;
		PyErr_NoMemory();
		return -1;
	}
	return sb_raise_api_error(event, "unknown", message);
}

/* Modules whose very loading is a registry function's business: _ctypes
 * calls any address with no audit event at all (a CFuncPtr made from an
 * integer), so without the grant it is not loaded. CPython's C-API test
 * modules (Debian installs them with the interpreter) are native code of the
 * same kind: _testcapi runs code objects (eval_code_ex), makes frames
 * (frame_new) and code objects under any file name (code_newempty), starts
 * C threads that run Python callables (call_in_temporary_c_thread), frees
 * objects still in use (decref_freed_object) and overflows buffers, none of
 * it with an audit event; _testinternalcapi rewrites the interpreter's
 * configuration (set_config) and installs frame evaluators; _testbuffer,
 * _testclinic, _xxtestfuzz and _ctypes_test test the C API the same way.
 * They need the native grant too. */
static const struct {
	const char *module;
	short fn;
} native_modules[] = {
    {"_ctypes", SB_API_FN_ctypes_CDLL},	    {"_ctypes_test", SB_API_FN_ctypes_CDLL},
    {"_testbuffer", SB_API_FN_ctypes_CDLL}, {"_testcapi", SB_API_FN_ctypes_CDLL},
    {"_testclinic", SB_API_FN_ctypes_CDLL}, {"_testinternalcapi", SB_API_FN_ctypes_CDLL},
    {"_xxtestfuzz", SB_API_FN_ctypes_CDLL},
};

static int api_module_loading(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(native_modules); i++)
		if (streq(name, native_modules[i].module))
			return sb_api_check(native_modules[i].fn);
	return 0;
}

/* The standard library's functions that read a frame (sys._getframe(), a
 * traceback's tb_frame, a generator's gi_frame...) and keep it to
 * themselves: a module name, a line, a summary, a printout. Their reads are
 * the runtime's own, whoever called them. */
static const struct {
	const char *file; /* relative to the standard library */
	const char *function;
} frame_readers[] = {
    {"/asyncio/coroutines.py", "_format_coroutine"},
    {"/asyncio/events.py", "__init__"}, /* the handle's source traceback */
    {"/asyncio/format_helpers.py", "extract_stack"},
    {"/asyncio/futures.py", "__init__"},
    {"/asyncio/streams.py", "__init__"},
    {"/asyncore.py", "compact_traceback"},
    {"/collections/__init__.py", "namedtuple"},
    {"/dis.py", "distb"},
    {"/dis.py", "from_traceback"},
    {"/doctest.py", "_find_lineno"},
    {"/doctest.py", "_normalize_module"},
    {"/enum.py", "_create_"},
    {"/inspect.py", "_get_code_position_from_tb"},
    {"/inspect.py", "findsource"},
    {"/inspect.py", "getcoroutinelocals"},
    {"/inspect.py", "getcoroutinestate"},
    {"/inspect.py", "getfile"},
    {"/inspect.py", "getframeinfo"},
    {"/inspect.py", "getgeneratorlocals"},
    {"/inspect.py", "getgeneratorstate"},
    {"/inspect.py", "getsourcelines"},
    {"/logging/__init__.py", "findCaller"},
    {"/logging/__init__.py", "handleError"},
    {"/subprocess.py", "_text_encoding"},
    {"/traceback.py", "_extract_from_extended_frame_gen"},
    {"/traceback.py", "clear_frames"},
    {"/traceback.py", "extended_frame_gen"},
    {"/traceback.py", "extract_stack"},
    {"/traceback.py", "format_stack"},
    {"/traceback.py", "print_stack"},
    {"/types.py", "<module>"}, /* FrameType, at its import */
    {"/typing.py", "_caller"},
    {"/unittest/result.py", "_clean_tracebacks"},
    {"/unittest/result.py", "_is_relevant_tb_level"},
    {"/unittest/result.py", "_remove_unittest_tb_frames"},
    {"/warnings.py", "warn"},
};

/* The standard library's functions that hand the frame they read to their
 * caller (traceback.walk_tb(), logging.currentframe(), inspect.stack(),
 * asyncio's Task.get_stack()...): the runtime's own only when their caller
 * is a reader of frame_readers or another function of their own module
 * (traceback's summaries walk a traceback with walk_tb()), not when the
 * program gets the frame. */
static const struct {
	const char *file;
	const char *function;
} frame_returners[] = {
    {"/asyncio/base_tasks.py", "_task_get_stack"},
    {"/inspect.py", "getinnerframes"},
    {"/inspect.py", "stack"},
    {"/inspect.py", "trace"},
    {"/logging/__init__.py", "<lambda>"}, /* currentframe = lambda: sys._getframe(1) */
    {"/logging/__init__.py", "currentframe"},
    {"/traceback.py", "_walk_tb_with_full_positions"},
    {"/traceback.py", "walk_stack"},
    {"/traceback.py", "walk_tb"},
    {"/types.py", "gi_frame"}, /* types.coroutine()'s wrapper */
};

static bool frame_is_reader(PyFrameObject *frame)
{
	for (size_t i = 0; i < ELEMENTSOF(frame_readers); i++)
		if (sb_guard_frame_is(frame, frame_readers[i].file, frame_readers[i].function))
			return true;
	return false;
}

/* The returner whose code frame runs, or -1. */
static int frame_returner(PyFrameObject *frame)
{
	for (size_t i = 0; i < ELEMENTSOF(frame_returners); i++)
		if (sb_guard_frame_is(frame, frame_returners[i].file, frame_returners[i].function))
			return (int)i;
	return -1;
}

/* A frame read by the runtime for itself: a reader of the table; a
 * returner called by a reader or by its own module's other code; or
 * site-packages (pytest, attrs and loguru read frames too). Any other
 * function of the standard library reading a frame may hand it over: the
 * program's read, judged by its rules. */
static bool frame_read_by_runtime(void)
{
	PyFrameObject *frame = PyEval_GetFrame(), *back; /* borrowed */
	bool runtime = false;
	int r;

	if (!frame)
		return false;
	if (sb_api_caller_in_site_packages() || frame_is_reader(frame))
		return true;
	r = frame_returner(frame);
	if (r < 0)
		return false;
	back = PyFrame_GetBack(frame);
	if (back) {
		PyCodeObject *code = PyFrame_GetCode(back);
		const char *file = PyUnicode_AsUTF8(code->co_filename);

		if (!file)
			PyErr_Clear();
		runtime = frame_is_reader(back) ||
			  (file && sb_guard_is_stdlib_source(file, frame_returners[r].file) &&
			   frame_returner(back) < 0);
		Py_DECREF(code);
		Py_DECREF(back);
	}
	return runtime;
}

static int on_getframe(PyObject *args _unused_)
{
	/* inspect.currentframe(), stack(), trace() granted: their own read. */
	if (sb_api_claimed(SB_API_EV_FRAME))
		return 0;
	/* typing, logging, namedtuple, enum... read their caller's frame. */
	return frame_read_by_runtime() ? 0 : sb_api_check(SB_API_FN_sys__getframe);
}

static int on_getframemodulename(PyObject *args _unused_)
{
	return sb_api_caller_is_library() ? 0 : sb_api_check(SB_API_FN_sys__getframemodulename);
}

static int on_current_frames(PyObject *args _unused_)
{
	return sb_api_check(SB_API_FN_sys__current_frames);
}

static int on_current_exceptions(PyObject *args _unused_)
{
	return sb_api_check(SB_API_FN_sys__current_exceptions);
}

static int on_settrace(PyObject *args _unused_)
{
	return sb_api_check(SB_API_FN_sys_settrace);
}

static int on_setprofile(PyObject *args _unused_)
{
	return sb_api_check(SB_API_FN_sys_setprofile);
}

/* A second hook could not remove ours, but it could observe every event
 * (and the arguments of refused calls). */
static int on_addaudithook(PyObject *args _unused_)
{
	return sb_api_check(SB_API_FN_sys_addaudithook);
}

static int on_get_objects(PyObject *args _unused_)
{
	return sb_api_check(SB_API_FN_gc_get_objects);
}

static int on_get_referrers(PyObject *args _unused_)
{
	return sb_api_check(SB_API_FN_gc_get_referrers);
}

static int on_get_referents(PyObject *args _unused_)
{
	return sb_api_check(SB_API_FN_gc_get_referents);
}

static int on_subinterpreter(PyObject *args _unused_)
{
	return sb_api_check(SB_API_FN__xxsubinterpreters_create);
}

/* The guarded module whose body code is, or -1: a module's code object is
 * named "<module>" and carries the file it came from, which for a guarded
 * module is the standard library's (a copy compiled under that name is
 * refused by on_compile). */
static int guarded_module_of_code(PyObject *code_obj)
{
	PyCodeObject *code = (PyCodeObject *)code_obj;
	const char *file;
	char name[128];
	int m;

	if (!PyCode_Check(code_obj) || !PyUnicode_Check(code->co_name) ||
	    PyUnicode_CompareWithASCIIString(code->co_name, "<module>") != 0)
		return -1;
	file = PyUnicode_AsUTF8(code->co_filename);
	if (!file) {
		PyErr_Clear();
		return -1;
	}
	/* One lookup of the file's module name, rather than a comparison of
	 * the file with each guarded module's: this runs for every module
	 * body executed. */
	if (!sb_guard_stdlib_module(file, name, sizeof(name)))
		return -1;
	m = sb_api_module_id(name);
	return m >= 0 && !sb_api_module_made_by_imp[m] ? m : -1;
}

/* A guarded module's code run again -- exec() of its code object, its
 * loader's exec_module() on the module or on a copy, importlib.reload(),
 * runpy.run_module() -- makes fresh functions that no wrapper covers, and
 * their frames pass for the standard library's own (inspect.currentframe()
 * of a copy returns a frame). Its code may run in its import only: from
 * importlib serving an import a door let through (not _bootstrap._load()
 * called by the program, after which no scan would come), into the module
 * sys.modules holds under its name while that module initialises, and not
 * into the one already wrapped (a new import after `del sys.modules[name]`
 * makes a new module, wrapped by the next scan). The interpreter's own `python-sb -m pickle` runs
 * the program, not a copy for it. No grant allows the rest, and learning does not record it: the
 * wrappers would be gone whatever the rules say. */
static int check_module_rerun(int m)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyObject *name = NULL, *ns = NULL, *module;
	_cleanup_free_ char *message = NULL;
	bool as_main = false;
	int r = -1;

	if (frame)
		sb_guard_module_run_target(frame, &name, &ns, &as_main);
	if (name && PyUnicode_CompareWithASCIIString(name, sb_api_module_names[m]) == 0) {
		if (as_main) {
			r = 0;
			goto out;
		}
		module = PyDict_GetItemWithError(PyImport_GetModuleDict(), name); /* borrowed */
		if (!module && PyErr_Occurred())
			goto out;
		if (module && PyModule_Check(module) && PyModule_GetDict(module) == ns &&
		    module != sb_api_wrapped_module(m) && sb_api_module_initializing(module) &&
		    sb_guard_serving_import()) {
			r = 0;
			goto out;
		}
	}
	if (asprintf(&message,
		     "running the code of the guarded module '%s' again (exec(), exec_module(), "
		     "reload(), runpy) is refused by the API guard: its functions would come back "
		     "without their wrappers. Import it instead",
		     sb_api_module_names[m]) < 0) {
		message = NULL;
		PyErr_NoMemory();
		goto out;
	}
	sb_raise_api_error(sb_api_module_names[m], sb_api_category_name(SB_API_INTROSPECTION),
			   message);
out:
	Py_XDECREF(name);
	Py_XDECREF(ns);
	return r;
}

/* Running a code object (exec/eval of one, or the second half of exec of a
 * string). A guarded module's body is judged by what it is, whoever runs
 * it; any other module body of the standard library by the import guard
 * (it runs only as the module it is). The standard library's other code
 * objects (a function's, a class body's) never run on their own: with the
 * caller's globals, their frames would act for the caller. Otherwise the
 * code is the runtime's only when the import machinery runs a module for
 * an import, or a code generator of the standard library runs what it
 * built; site-packages keeps its exemption (attrs, pydantic). */
/* A code object with no bytecode (a Cython function's, see
 * extension_traceback_code()) is for tracebacks: run, the interpreter
 * reads its first instruction past the end of the object. Refused whoever
 * runs it, whatever the grants. */
static int refuse_bytecode_less(PyCodeObject *code)
{
	static const char what[] = "running a code object with no bytecode";
	const char *file = PyUnicode_AsUTF8(code->co_filename);
	_cleanup_free_ char *message = NULL;

	PyErr_Clear();
	if (asprintf(&message,
		     "%s ('%s') is refused by the API guard: the interpreter would read its "
		     "instructions past the end of the object",
		     what, file ? file : "?") < 0) {
		message = NULL;
		PyErr_NoMemory();
		return -1;
	}
	sb_raise_api_error(what, sb_api_category_name(SB_API_DYNAMIC_CODE), message);
	return -1;
}

static int on_exec_code(PyObject *args)
{
	PyObject *code = PyTuple_GetItem(args, 0);
	bool claimed = sb_api_claimed(SB_API_EV_DYNAMIC);
	int m = code ? guarded_module_of_code(code) : -1;

	if (!code)
		PyErr_Clear();
	/* A code object's size is its count of instructions. */
	if (code && PyCode_Check(code) && Py_SIZE(code) == 0)
		return refuse_bytecode_less((PyCodeObject *)code);
	if (m >= 0)
		return check_module_rerun(m);
	/* The standard library's file name on code that is not a module body
	 * is refused whoever runs it, the eval layer included. */
	if (code && PyCode_Check(code) && sb_code_is_runtime((PyCodeObject *)code)) {
		PyCodeObject *c = (PyCodeObject *)code;
		const char *file = PyUnicode_AsUTF8(c->co_filename);

		if (PyUnicode_CompareWithASCIIString(c->co_name, "<module>") == 0)
			return 0;
		PyErr_Clear();
		return sb_code_refuse_laundering("running a code object", file ? file : "?");
	}
	/* The launcher running what it compiled. */
	if (!PyEval_GetFrame() && main_exec_pending) {
		main_exec_pending = false;
		return 0;
	}
	/* The eval layer running code it let through (its own, or while
	 * learning), whatever the grants: a guarded module's body above is
	 * judged all the same. */
	if (claimed || sb_eval_owns_event() || sb_guard_serving_import() ||
	    sb_code_generated_by_stdlib(NULL) || sb_api_caller_in_site_packages())
		return 0;
	return sb_api_check(SB_API_FN_builtins_exec);
}

static int check_compile(void)
{
	if (sb_api_claimed(SB_API_EV_DYNAMIC))
		return 0;
	return sb_api_check(SB_API_FN_builtins_compile);
}

/* Whether site-packages code gives code it makes a site-packages name:
 * jinja2 compiles a package's templates under their file names, pytest
 * rewrites the asserts of its plugins from an AST, types.coroutine()
 * derives a library's generator. The library's own act, as its dynamic
 * code is (docs/python-sb.md: the exemption is a path). */
static bool site_compiles_own_name(const char *name)
{
	return sb_guard_is_site_file(name) &&
	       (sb_api_caller_in_site_packages() || sb_code_derived_by_stdlib());
}

/* compile(), and eval/exec of a string, raise "compile" (source, filename).
 * Source compiled under a library's file name (the standard library's,
 * site-packages') is refused unless it is that file's content, whatever the
 * grants; site-packages code may use its own tree's names. The launcher's own
 * compiles have no Python frame: a file the parser reads (source None: the
 * script, stdin, the REPL's lines) and the -c command, once. Any other
 * frameless compile is a callback the program registered
 * (atexit.register(exec, ...)). Then the runtime's own: the import
 * machinery compiling a module's source for an import, the standard
 * library's code generators (entered through their public functions),
 * site-packages (attrs, pydantic, jinja2). Every other caller -- code,
 * codeop, timeit, runpy.run_path, trace, pdb, doctest, a configparser
 * converter, importlib's loaders called by the program -- compiles what the
 * program gave it: the program's python-api rules decide. */
static int on_compile(PyObject *args)
{
	PyObject *source, *filename;
	const char *name;

	if (PyTuple_Size(args) < 2) {
		PyErr_Clear();
		return sb_eval_owns_event() ? 0 : check_compile();
	}
	source = PyTuple_GET_ITEM(args, 0);
	filename = PyTuple_GET_ITEM(args, 1);
	name = PyUnicode_Check(filename) ? PyUnicode_AsUTF8(filename) : NULL;
	if (!name)
		PyErr_Clear();
	else if (source != Py_None && sb_guard_is_library_file(name) &&
		 !site_compiles_own_name(name) && sb_code_check_compile(source, name) < 0)
		return -1;
	/* The eval layer parsing a source it checks, or compiling the result
	 * (learning passes the program's compile() through: its file name is
	 * judged above like anyone's). */
	if (sb_eval_owns_event())
		return 0;
	if (!PyEval_GetFrame()) {
		if (source == Py_None || command_compile_pending) {
			command_compile_pending = false;
			main_exec_pending = true;
			return 0;
		}
		return check_compile();
	}
	if (sb_guard_serving_import() || sb_code_generated_by_stdlib(source))
		return 0;
	if (sb_api_claimed(SB_API_EV_DYNAMIC) || sb_api_caller_in_site_packages())
		return 0;
	return sb_api_check(SB_API_FN_builtins_compile);
}

/* Any global a pickle names (the gadget's os.system) is looked up here,
 * whichever unpickler runs, pickle.Unpickler included. Plain data needs no
 * lookup. Granting any unpickling entry point grants the lookups. */
static int on_find_class(PyObject *args _unused_)
{
	if (sb_api_any_deserialization())
		return 0;
	return sb_api_check(SB_API_FN_pickle_loads);
}

/* importlib reads every .pyc with marshal.loads: for an import it serves,
 * the runtime's own (the wrapper of marshal.loads checks what comes out,
 * guard-code.h). */
static int on_marshal(PyObject *args _unused_)
{
	if (sb_api_category_allowed(SB_API_DESERIALIZATION) || sb_guard_serving_import() ||
	    sb_api_caller_in_site_packages())
		return 0;
	return sb_api_deny_outside_registry("marshal.loads()", SB_API_DESERIALIZATION);
}

/* Whose code this is: the program's, when the innermost frame is. */
static bool asked_by_program(void)
{
	const struct sb_import_request *req;
	PyFrameObject *frame = NULL;
	enum sb_requester who = sb_guard_requester(&req, &frame);

	Py_XDECREF(frame);
	return who == SB_ASKED_BY_PROGRAM || who == SB_ASKED_BY_NOBODY;
}

/* Cython (0.29 on 3.11: PyCode_NewEmpty() then replace(); 3.x's limited
 * API: CodeType()) gives each of its functions a code object for its
 * tracebacks while its module initialises: no bytecode, a name of its own
 * source ("yaml/_yaml.pyx", "stringsource"). The library extension's C code
 * making one is its own act. Only a bytecode-less one: a C callable the
 * program planted (a finalizer whose partial() maps CodeType over its
 * arguments) runs under the same frames when gc strikes meanwhile, and
 * must get nothing it could run. */
static bool extension_traceback_code(PyObject *args)
{
	PyObject *bytecode = PyTuple_Size(args) >= 1 ? PyTuple_GET_ITEM(args, 0) : NULL;

	PyErr_Clear();
	return bytecode && PyBytes_CheckExact(bytecode) && PyBytes_GET_SIZE(bytecode) == 0 &&
	       sb_guard_library_extension_acting();
}

/* code.__new__ (CodeType(), code.replace()): (code, filename, name, ...).
 * A code object given the standard library's file name passes only when
 * the standard library derives it from its own (types.coroutine()), one
 * given a site-packages name when site-packages makes it too; and
 * any code object is the program's unless types.coroutine() (the same code
 * with other flags) or site-packages makes it: modulefinder's replace()
 * of file names, say, does what its caller asks. */
static int on_code_new(PyObject *args)
{
	PyObject *filename = PyTuple_Size(args) >= 2 ? PyTuple_GET_ITEM(args, 1) : NULL;
	const char *name =
	    filename && PyUnicode_Check(filename) ? PyUnicode_AsUTF8(filename) : NULL;

	PyErr_Clear();
	if (name && sb_guard_is_runtime_file(name) && !sb_code_derived_by_stdlib())
		return sb_code_refuse_laundering("making a code object", name);
	if (name && sb_guard_is_site_file(name) && !site_compiles_own_name(name))
		return sb_code_refuse_laundering("making a code object", name);
	if (sb_api_category_allowed(SB_API_DYNAMIC_CODE) || sb_code_derived_by_stdlib() ||
	    sb_api_caller_in_site_packages() || extension_traceback_code(args))
		return 0;
	return sb_api_deny_outside_registry("code.__new__() (building a code object)",
					    SB_API_DYNAMIC_CODE);
}

/* function.__new__ (FunctionType(code, globals)): the standard library's
 * code with the program's globals would act for the program. */
static int on_function_new(PyObject *args)
{
	PyObject *code = PyTuple_Size(args) >= 1 ? PyTuple_GET_ITEM(args, 0) : NULL;

	PyErr_Clear();
	if (code && PyCode_Check(code) && sb_code_is_runtime((PyCodeObject *)code) &&
	    asked_by_program()) {
		const char *file = PyUnicode_AsUTF8(((PyCodeObject *)code)->co_filename);

		PyErr_Clear();
		return sb_code_refuse_laundering("making a function", file ? file : "?");
	}
	if (sb_api_category_allowed(SB_API_DYNAMIC_CODE) || sb_api_caller_in_site_packages())
		return 0;
	return sb_api_deny_outside_registry("function.__new__() (a function from a code object)",
					    SB_API_DYNAMIC_CODE);
}

/* Setting function.__code__: the program's function given the standard
 * library's code object would pass for the standard library's. */
static int on_setattr(PyObject *args)
{
	PyObject *obj, *name, *value;

	if (PyTuple_Size(args) < 3) {
		PyErr_Clear();
		return 0;
	}
	obj = PyTuple_GET_ITEM(args, 0);
	name = PyTuple_GET_ITEM(args, 1);
	value = PyTuple_GET_ITEM(args, 2);
	if (!PyFunction_Check(obj) || !PyUnicode_Check(name) ||
	    PyUnicode_CompareWithASCIIString(name, "__code__") != 0)
		return 0;
	if (PyCode_Check(value) && sb_code_is_runtime((PyCodeObject *)value) &&
	    !sb_code_derived_by_stdlib()) {
		const char *file = PyUnicode_AsUTF8(((PyCodeObject *)value)->co_filename);

		PyErr_Clear();
		return sb_code_refuse_laundering("setting function.__code__", file ? file : "?");
	}
	if (sb_api_category_allowed(SB_API_DYNAMIC_CODE) || sb_code_derived_by_stdlib() ||
	    sb_api_caller_in_site_packages())
		return 0;
	return sb_api_deny_outside_registry("setting function.__code__", SB_API_DYNAMIC_CODE);
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
		if (sb_api_allowed(SB_API_FN_sys__getframe) || frame_read_by_runtime())
			return 0;
		if (asprintf(&what, "reading %s.%s", Py_TYPE(PyTuple_GET_ITEM(args, 0))->tp_name,
			     frame_attrs[k]) < 0) {
			what = NULL;
			PyErr_NoMemory();
			return -1;
		}
		return sb_api_deny_outside_registry(what, SB_API_INTROSPECTION);
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
    {"os.fwalk", on_os_harmless},
    {"os.lockf", on_os_harmless},
    {"os.putenv", on_os_harmless},
    {"os.unsetenv", on_os_harmless},
    {"os.walk", on_os_harmless},
    {"ctypes.PyObj_FromPtr", on_native},
    {"ctypes.addressof", on_native},
    {"ctypes.call_function", on_native},
    {"ctypes.cdata", on_native},
    {"ctypes.cdata/buffer", on_native},
    {"ctypes.create_string_buffer", on_native},
    {"ctypes.create_unicode_buffer", on_native},
    {"ctypes.dlopen", on_native},
    {"ctypes.dlsym", on_native},
    {"ctypes.dlsym/handle", on_native},
    {"ctypes.get_errno", on_native},
    {"ctypes.get_last_error", on_native},
    {"ctypes.set_errno", on_native},
    {"ctypes.set_last_error", on_native},
    {"sqlite3.enable_load_extension", on_sqlite_enable_extensions},
    {"sqlite3.load_extension", on_native},
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
		       const struct sb_interp_paths *interp _unused_, char **reterr _unused_)
{
	int r = sb_api_check_prepare(profile);

	if (r < 0)
		return r;
	sb_api_wrap_prepare();
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
	command_compile_pending = running_command();
	if (sb_api_wrap_activate() < 0) {
		PyErr_Clear();
		*reterr = strdup("cannot install the API guard");
		return -EIO;
	}
	return 0;
}

static void api_release(void)
{
	sb_api_wrap_release();
	sb_api_check_release();
	command_compile_pending = false;
	main_exec_pending = false;
}

static const struct sb_audit_prefix api_prefixes[] = {
    {"ctypes.", on_native_unknown},
    {"os.", on_os_unknown},
};

const struct sb_guard_part sb_guard_api_part = {
    .name = "api",
    .prepare = api_prepare,
    .activate = api_activate,
    .release = api_release,
    .handlers = api_handlers,
    .n_handlers = ELEMENTSOF(api_handlers),
    .after_import = sb_api_wrap_after_import,
    .module_loading = api_module_loading,
    .prefixes = api_prefixes,
    .n_prefixes = ELEMENTSOF(api_prefixes),
};
