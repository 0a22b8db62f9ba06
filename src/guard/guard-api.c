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
#include "guard-imports.h"
#include "guard-runtime.h"
#include "pysandboxes-module.h"
#include "util.h"

/* -c: the launcher compiles the command once, with no Python frame. */
static bool command_compile_pending;

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

static int on_system(PyObject *args _unused_)
{
	return check_family(SB_API_EV_SYSTEM);
}

static int on_exec(PyObject *args)
{
	/* os.exec passes (path, args, env): env is None for execv. */
	PyObject *env = PyTuple_Size(args) >= 3 ? PyTuple_GET_ITEM(args, 2) : Py_None;
	const short *names = exec_fns[env != Py_None];

	PyErr_Clear();
	if (sb_api_claimed(SB_API_EV_EXEC))
		return 0;
	return sb_api_check(names[0]) < 0 || sb_api_check(names[1]) < 0 ? -1 : 0;
}

static int on_posix_spawn(PyObject *args _unused_)
{
	return check_family(SB_API_EV_POSIX_SPAWN);
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

static int on_popen(PyObject *args _unused_)
{
	return sb_api_check(SB_API_FN_subprocess_Popen);
}

/* ctypes.CDLL and PyDLL (and _ctypes.dlopen) all open through this. */
static int on_dlopen(PyObject *args _unused_)
{
	return sb_api_check(SB_API_FN_ctypes_CDLL);
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
	return sb_api_caller_is_library() && !hands_frame_to_program();
}

static int on_getframe(PyObject *args _unused_)
{
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
	if (name && PyUnicode_CompareWithASCIIString(name, sb_api_module_names[m]) == 0) {
		if (as_main) {
			r = 0;
			goto out;
		}
		module = PyDict_GetItemWithError(PyImport_GetModuleDict(), name); /* borrowed */
		if (!module && PyErr_Occurred())
			goto out;
		if (module && PyModule_Check(module) && PyModule_GetDict(module) == ns &&
		    module != sb_api_wrapped_module(m) && sb_api_module_initializing(module)) {
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
 * string): the code had to come from compile() or from the runtime. A
 * guarded module's body is judged by what it is, whoever runs it. */
static int on_exec_code(PyObject *args)
{
	PyObject *code = PyTuple_GetItem(args, 0);
	bool claimed = sb_api_claimed(SB_API_EV_DYNAMIC);
	int m = code ? guarded_module_of_code(code) : -1;

	if (!code)
		PyErr_Clear();
	if (m >= 0)
		return check_module_rerun(m);
	/* The eval layer running code it let through (its own, or while
	 * learning), whatever the grants: a guarded module's body above is
	 * judged all the same. */
	if (claimed || sb_eval_owns_event() || sb_api_caller_is_library())
		return 0;
	return sb_api_check(SB_API_FN_builtins_exec);
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
	if (sb_api_claimed(SB_API_EV_DYNAMIC))
		return 0;
	return sb_api_check(SB_API_FN_builtins_compile);
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

	/* The eval layer parsing a source it checks, or compiling the result. */
	if (sb_eval_owns_event())
		return 0;
	if (PyTuple_Size(args) < 2) {
		PyErr_Clear();
		return check_compile();
	}
	source = PyTuple_GET_ITEM(args, 0);
	filename = PyTuple_GET_ITEM(args, 1);
	if (!frame) {
		if (source == Py_None)
			return 0;
		if (command_compile_pending) {
			command_compile_pending = false;
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
	if (sb_api_claimed(SB_API_EV_DYNAMIC))
		return 0;
	/* Site-packages code generates code too (attrs, pydantic, jinja2): the
	 * library exemption stays for it; the standard library's is the table. */
	if (!in_runtime && sb_api_caller_is_library())
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

static int on_marshal(PyObject *args _unused_)
{
	/* importlib reads every .pyc with marshal.loads. */
	if (sb_api_category_allowed(SB_API_DESERIALIZATION) || sb_api_caller_is_library())
		return 0;
	return sb_api_deny_outside_registry("marshal.loads()", SB_API_DESERIALIZATION);
}

static int on_code_new(PyObject *args _unused_)
{
	if (sb_api_category_allowed(SB_API_DYNAMIC_CODE) || sb_api_caller_is_library())
		return 0;
	return sb_api_deny_outside_registry("code.__new__() (building a code object)",
					    SB_API_DYNAMIC_CODE);
}

static int on_function_new(PyObject *args _unused_)
{
	if (sb_api_category_allowed(SB_API_DYNAMIC_CODE) || sb_api_caller_is_library())
		return 0;
	return sb_api_deny_outside_registry("function.__new__() (a function from a code object)",
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
	if (sb_api_category_allowed(SB_API_DYNAMIC_CODE) || sb_api_caller_is_library())
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
	int r;

	r = sb_api_check_activate();
	if (r < 0)
		return r;
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
}

const struct sb_guard_part sb_guard_api_part = {
    .name = "api",
    .prepare = api_prepare,
    .activate = api_activate,
    .release = api_release,
    .handlers = api_handlers,
    .n_handlers = ELEMENTSOF(api_handlers),
    .after_import = sb_api_wrap_after_import,
};
