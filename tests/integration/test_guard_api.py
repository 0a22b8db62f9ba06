# SPDX-License-Identifier: MIT
"""python-api=: the sensitive-API registry, enforced by the C guard.

Refusals are proven to come from the guard: the exception class is
RuleApiPermissionError and its qualname/category name the rule. Where the
effect itself must be shown not to happen (a process, a thread, a file), the
run uses os-sandbox=none, so that no seccomp filter stands between the program
and the effect: only the guard does."""

import pytest

PROBE = """\
import pysandboxes
def probe(label, fn):
    try:
        value = fn()
    except pysandboxes.RuleApiPermissionError as e:
        print(label, "DENIED", e.qualname, e.category, flush=True)
    else:
        print(label, "ALLOWED", flush=True)
        return value
"""


def run(sb, code, api=(), provider="subprocess", extra=""):
    lines = [f"os-sandbox={provider}", "python-import=*"]
    lines += [f"python-api={a}" for a in api]
    return sb.run_code("\n".join(lines) + "\n" + extra, PROBE + code)


def outcome(r, label="x"):
    for line in r.stdout.splitlines():
        if line.startswith(label + " "):
            return line[len(label) + 1:]
    raise AssertionError(f"no outcome for {label!r}: {r!r}")


def denied(r, qualname, category, label="x"):
    assert outcome(r, label) == f"DENIED {qualname} {category}", r


def allowed(r, label="x"):
    assert outcome(r, label) == "ALLOWED", r


# --- dynamic code (spec 10.1, 10.2) -------------------------------------------

def test_spec_10_1_eval_refused(sb):
    r = sb.run_code("os-sandbox=subprocess\npython-import=*\n", "print(eval('40 + 2'))\n")
    assert r.returncode != 0, r
    assert "dynamic-code" in r.stderr
    assert "RuleApiPermissionError" in r.stderr
    assert r.stdout == ""


def test_spec_10_2_allow_dynamic_code(sb):
    r = sb.run_code("os-sandbox=subprocess\npython-import=*\npython-api=ALLOW:dynamic-code\n",
                    "print(eval('40 + 2'))\n")
    assert (r.returncode, r.stdout) == (0, "42\n"), r


def test_allow_builtins_eval_alone(sb):
    r = run(sb, "print(eval('40 + 2'))\nprobe('x', lambda: exec('y = 1'))\n",
            api=["ALLOW:builtins.eval"])
    assert r.stdout.startswith("42\n"), r
    denied(r, "builtins.exec", "dynamic-code")


@pytest.mark.parametrize("call,qualname", [
    ("exec('y = 1')", "builtins.exec"),
    ("compile('1', 'f', 'eval')", "builtins.compile"),
    ("eval(compile.__self__ and 'len')", "builtins.eval"),
])
def test_dynamic_code_refused(sb, call, qualname):
    r = run(sb, f"probe('x', lambda: {call})\n")
    denied(r, qualname, "dynamic-code")


def test_eval_keys_hand_eval_to_the_eval_layer(sb):
    # With eval-* keys the program's eval is the eval layer's (test_eval.py):
    # guarded, not refused as dynamic-code. Source a library compiles on the
    # program's behalf is still the API guard's, refused.
    r = run(sb, "print('EVAL', eval('40 + 2'))\n"
                "import timeit\n"
                "probe('x', lambda: timeit.timeit('1 + 1', number=1))\n"
                "try:\n    timeit.timeit('1', number=1)\nexcept PermissionError as e:\n"
                "    print('MSG', e)\n",
            extra="eval-syntax=arith\n")
    assert "EVAL 42" in r.stdout, r
    denied(r, "builtins.compile", "dynamic-code")
    assert "not source a library compiles or runs for it" in r.stdout, r


def test_stdlib_code_generation_exempt(sb):
    r = run(sb, """\
import collections, dataclasses, enum, typing, logging, json
P = collections.namedtuple('P', 'a b')
@dataclasses.dataclass(order=True, frozen=True)
class D:
    x: int = 1
class E(enum.Enum):
    A = 1
T = typing.NamedTuple('T', [('a', int)])
logging.getLogger('t').warning('logged')
class F:
    y: "int"
import unittest.mock, ast, gettext
auto = unittest.mock.create_autospec(lambda a, b: 0)
auto(1, 2)
ast.parse('1 + 1')
print(P(1, 2), D(), E.A, T(3), json.dumps([1]), typing.get_type_hints(F)['y'].__name__,
      auto.call_count)
""")
    assert r.returncode == 0, r
    assert r.stdout.strip().endswith("P(a=1, b=2) D(x=1) E.A T(a=3) [1] int 1"), r


def test_stdlib_compiling_the_programs_source_is_the_programs(sb):
    # The standard library compiles what the program hands it: that is the
    # program's dynamic code, refused without a grant.
    for body in ("import timeit; timeit.timeit('1', number=1)",
                 "import code; code.InteractiveInterpreter().runsource('1')",
                 "import runpy, os; open('x.py', 'w').write('1'); "
                 "runpy.run_path(os.path.abspath('x.py'))"):
        sb.profile("os-sandbox=none\npython-import=*\nexpose-rw=.\n")
        r = sb.run("-c", body)
        assert r.returncode != 0 and "builtins.compile" in r.stderr, (body, r)


def test_c_mode_runs_and_guards(sb):
    sb.profile("os-sandbox=subprocess\npython-import=*\n")
    r = sb.run("-c", "print('C-OK')")
    assert (r.returncode, r.stdout) == (0, "C-OK\n"), r
    r = sb.run("-c", "eval('1')")
    assert r.returncode != 0 and "dynamic-code" in r.stderr, r


@pytest.mark.parametrize("call", [
    "(lambda: 0).__code__.replace(co_name='x')",
    "type(lambda: 0)((lambda: 0).__code__, {})",
])
def test_code_objects_refused(sb, call):
    r = run(sb, f"probe('x', lambda: {call})\n")
    assert outcome(r).startswith("DENIED ") and outcome(r).endswith(" dynamic-code"), r


def test_function_code_swap_refused(sb):
    r = run(sb, "def f(): pass\ndef g(): return 'G'\n"
                "def swap(): f.__code__ = g.__code__\nprobe('x', swap)\n")
    assert outcome(r) == "DENIED setting function.__code__ dynamic-code", r


# --- process-exec (spec 10.3, 10.4, 10.13) ------------------------------------

def test_spec_10_3_os_system_denied(sb):
    r = sb.run_code("os-sandbox=subprocess\npython-import=*\n",
                    "import os\nos.system('true')\n")
    assert r.returncode != 0, r
    assert "denied by the API guard" in r.stderr
    assert "RuleApiPermissionError" in r.stderr


def test_spec_10_4_os_system_allowed(sb):
    r = run(sb, "import os\nprint('RC', type(os.system('true')).__name__)\n",
            api=["ALLOW:os.system,posix.system"])
    assert r.returncode == 0 and "RC int\n" in r.stdout, r


def test_each_spelling_needs_its_own_grant(sb):
    marker = sb.path("M")
    r = run(sb, f"import os, posix\nprint('RC', os.system('touch {marker}'))\n"
                f"probe('x', lambda: posix.system('true'))\n",
            api=["ALLOW:os.system"], provider="none")
    assert "RC 0\n" in r.stdout and marker.exists(), r
    denied(r, "posix.system", "process-exec")


def test_spec_10_9_exception_shape(sb):
    r = run(sb, """\
import os, pysandboxes
try:
    os.system('true')
except pysandboxes.RuleApiPermissionError as e:
    print(isinstance(e, PermissionError), isinstance(e, pysandboxes.SandBoxError),
          isinstance(e, RuntimeError), e.qualname, e.category)
    print('ALLOW-F', '`python-api=ALLOW:os.system`' in str(e))
    print('ALLOW-C', '`python-api=ALLOW:process-exec`' in str(e))
    print('SHAPE', 'os.system() is denied by the API guard (category: process-exec)' in str(e))
""")
    assert "True True True os.system process-exec\n" in r.stdout, r
    assert "ALLOW-F True" in r.stdout and "ALLOW-C True" in r.stdout
    assert "SHAPE True" in r.stdout


def test_spec_10_13_popen(sb):
    r = run(sb, """\
import subprocess
probe('x', lambda: subprocess.Popen(['true']))
class Mine(subprocess.Popen):
    pass
print('ISINSTANCE', isinstance(3, subprocess.Popen), issubclass(Mine, subprocess.Popen))
probe('y', lambda: Mine(['true']))
""")
    denied(r, "subprocess.Popen", "process-exec")
    denied(r, "subprocess.Popen", "process-exec", "y")
    assert "ISINSTANCE False True" in r.stdout, r


def test_popen_alone_needs_fork_exec(sb):
    marker = sb.path("M")
    r = run(sb, f"import subprocess\n"
                f"probe('x', lambda: subprocess.Popen(['/bin/sh', '-c', 'touch {marker}']))\n",
            api=["ALLOW:subprocess.Popen"], provider="none")
    denied(r, "_posixsubprocess.fork_exec", "process-exec")
    assert not marker.exists()


def test_popen_with_subprocess_fork_exec_spelling(sb):
    r = run(sb, "import subprocess\np = probe('x', lambda: subprocess.Popen(['true']))\n"
                "print('RC', p.wait())\n",
            api=["ALLOW:subprocess.Popen,subprocess._fork_exec"], provider="none")
    allowed(r)
    assert "RC 0" in r.stdout, r


def test_popen_with_fork_exec_runs(sb):
    marker = sb.path("M")
    r = run(sb, f"import subprocess\n"
                f"p = probe('x', lambda: subprocess.Popen(['/bin/sh', '-c', 'touch {marker}']))\n"
                f"print('RC', p.wait())\n",
            api=["ALLOW:subprocess.Popen,_posixsubprocess.fork_exec"], provider="none")
    allowed(r)
    assert "RC 0" in r.stdout and marker.exists(), r


def test_subprocess_run_denied_first_link(sb):
    r = run(sb, "import subprocess\nprobe('x', lambda: subprocess.run(['true']))\n")
    denied(r, "subprocess.run", "process-exec")


def test_subprocess_run_chain(sb):
    r = run(sb, "import subprocess\nprobe('x', lambda: subprocess.run(['true']))\n",
            api=["ALLOW:subprocess.run"])
    denied(r, "subprocess.Popen", "process-exec")


SPAWNERS = {
    "os.posix_spawn": ("import os", "os.posix_spawn('/bin/sh', ['sh', '-c', CMD], {})"),
    "os.posix_spawnp": ("import os", "os.posix_spawnp('sh', ['sh', '-c', CMD], {})"),
    "os.execv": ("import os", "os.execv('/bin/sh', ['sh', '-c', CMD])"),
    "os.execvp": ("import os", "os.execvp('sh', ['sh', '-c', CMD])"),
    "os.spawnv": ("import os", "os.spawnv(os.P_WAIT, '/bin/sh', ['sh', '-c', CMD])"),
    "os.popen": ("import os", "os.popen(CMD).close()"),
    "os.fork": ("import os", "os.fork() or None"),
    "posix.fork": ("import posix", "posix.fork() or None"),
    "os.forkpty": ("import os", "os.forkpty()[0] or None"),
    "pty.spawn": ("import pty", "pty.spawn(['/bin/sh', '-c', CMD])"),
    "_posixsubprocess.fork_exec": (
        "import _posixsubprocess, os",
        "_posixsubprocess.fork_exec([b'/bin/sh', b'-c', CMD.encode()], [b'/bin/sh'], True, (),"
        " None, None, -1, -1, -1, -1, -1, -1, *os.pipe(), False, False, None, None, None,"
        " -1, None, False)"),
}


@pytest.mark.parametrize("qualname", sorted(SPAWNERS))
def test_process_creation_refused_nothing_runs(sb, qualname):
    marker = sb.path("M")
    imports, call = SPAWNERS[qualname]
    r = run(sb, f"{imports}\nCMD = 'touch {marker}'\n"
                f"pid = probe('x', lambda: {call})\n"
                f"import os\n"
                f"if pid == 0:\n    os._exit(0)\n",
            provider="none")
    denied(r, qualname, "process-exec")
    assert not marker.exists()
    # A forked child would have printed the outcome too.
    assert r.stdout.count("x DENIED") == 1, r


def test_fork_under_subprocess_provider_is_the_guard(sb):
    r = run(sb, "import os\nprobe('x', lambda: os.fork())\n")
    denied(r, "os.fork", "process-exec")


def test_fork_child_did_not_run(sb):
    marker = sb.path("CHILD")
    r = run(sb, f"""\
import os
def f():
    pid = os.fork()
    if pid == 0:
        open({str(marker)!r}, 'w').close()
        os._exit(0)
    os.waitpid(pid, 0)
probe('x', f)
""", provider="none")
    denied(r, "os.fork", "process-exec")
    assert not marker.exists()


def test_multiprocessing_process_refused(sb):
    marker = sb.path("MP")
    r = run(sb, f"""\
import multiprocessing
def child():
    open({str(marker)!r}, 'w').close()
if __name__ == '__main__':
    probe('x', lambda: multiprocessing.Process(target=child).start())
""", provider="none")
    assert outcome(r).startswith("DENIED multiprocessing."), r
    assert not marker.exists()


# --- process-control, privileges ------------------------------------------------

def test_kill_parent_refused(sb):
    r = run(sb, "import os, signal\nprobe('x', lambda: os.kill(os.getppid(), signal.SIGTERM))\n"
                "print('ALIVE')\n", provider="none")
    denied(r, "os.kill", "process-control")
    assert "ALIVE" in r.stdout


@pytest.mark.parametrize("module,call,qualname,category", [
    ("signal", "signal.alarm(1)", "signal.alarm", "process-control"),
    ("_signal", "_signal.alarm(1)", "_signal.alarm", "process-control"),
    ("signal", "signal.setitimer(signal.ITIMER_REAL, 1)", "signal.setitimer", "process-control"),
    ("os", "os.killpg(os.getpgid(0), 0)", "os.killpg", "process-control"),
    ("os", "os.nice(1)", "os.nice", "process-control"),
    ("os", "os.setsid()", "os.setsid", "process-control"),
    ("resource", "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))", "resource.setrlimit",
     "process-control"),
    ("os", "os.setuid(os.getuid())", "os.setuid", "privileges"),
    ("posix", "posix.setuid(posix.getuid())", "posix.setuid", "privileges"),
    ("os", "os.umask(0)", "os.umask", "privileges"),
    ("os", "os.setgroups([])", "os.setgroups", "privileges"),
])
def test_no_event_functions_wrapped(sb, module, call, qualname, category):
    r = run(sb, f"import {module}\nprobe('x', lambda: {call})\n")
    denied(r, qualname, category)


def test_signal_alarm_allowed_by_grant(sb):
    r = run(sb, "import signal\nprobe('x', lambda: signal.alarm(0))\n",
            api=["ALLOW:signal.alarm"])
    allowed(r)


# A spelling its rules allow outright is left unwrapped (nothing to install at
# start); every other spelling of the same function stays guarded.

def test_allowed_copy_gets_the_original_back(sb):
    # signal copies alarm from _signal, wrapped at start: the copy must not
    # keep _signal's wrapper, which would refuse what signal.alarm's rule allows.
    r = run(sb, "import signal, _signal\nprint('ORIGINAL', signal.alarm.__self__ is _signal)\n"
                "probe('x', lambda: signal.alarm(0))\nprobe('y', lambda: _signal.alarm(0))\n",
            api=["ALLOW:signal.alarm"])
    assert "ORIGINAL True\n" in r.stdout, r
    allowed(r)
    denied(r, "_signal.alarm", "process-control", "y")


def test_allowed_original_copied_is_wrapped(sb):
    r = run(sb, "import _signal, signal\nprint('ORIGINAL', _signal.alarm.__self__ is _signal)\n"
                "probe('x', lambda: _signal.alarm(0))\nprobe('y', lambda: signal.alarm(0))\n",
            api=["ALLOW:_signal.alarm"])
    assert "ORIGINAL True\n" in r.stdout, r
    allowed(r)
    denied(r, "signal.alarm", "process-control", "y")


def test_allowed_os_spelling_posix_still_wrapped(sb):
    r = run(sb, "import os, posix\nm = os.umask(0o022)\nos.umask(m)\n"
                "print('ORIGINAL', os.umask.__self__ is posix)\n"
                "probe('x', lambda: posix.umask(m))\n",
            api=["ALLOW:os.umask"])
    assert "ORIGINAL True\n" in r.stdout, r
    denied(r, "posix.umask", "privileges")


def test_allowed_spelling_of_an_event_family_keeps_its_wrapper(sb):
    # os.kill raises the same event as posix.kill: unwrapped, nothing would
    # tell the event which spelling was called, and posix.kill's DENY would
    # refuse it.
    r = run(sb, "import os, posix\nprobe('x', lambda: os.kill(os.getpid(), 0))\n"
                "probe('y', lambda: posix.kill(os.getpid(), 0))\n",
            api=["ALLOW:os.kill"], provider="none")
    allowed(r)
    denied(r, "posix.kill", "process-control", "y")


def test_umask_unchanged_when_refused(sb):
    r = run(sb, "import os\nprobe('x', lambda: os.umask(0o777))\n"
                "print([l for l in open('/proc/self/status') if l.startswith('Umask')])\n",
            provider="none")
    denied(r, "os.umask", "privileges")
    assert "0777" not in r.stdout, r


# --- threads (spec 10.10) ---------------------------------------------------------

THREAD = """\
import threading
ran = []
t = threading.Thread(target=lambda: ran.append(1))
probe('start', t.start)
if ran or t.is_alive():
    t.join()
print('RAN', bool(ran))
probe('trace', lambda: threading.settrace(lambda *a: None))
"""


def test_thread_start_refused(sb):
    r = run(sb, THREAD)
    denied(r, "threading.Thread.start", "threads", "start")
    assert "RAN False" in r.stdout, r


def test_thread_start_allowed(sb):
    r = run(sb, THREAD, api=["ALLOW:threads"])
    allowed(r, "start")
    assert "RAN True" in r.stdout, r


@pytest.mark.parametrize("order", [
    ["ALLOW:threads", "DENY:threading.settrace"],
    ["DENY:threading.settrace", "ALLOW:threads"],
])
def test_spec_10_10_function_deny_beats_category(sb, order):
    r = run(sb, THREAD, api=order)
    allowed(r, "start")
    assert "RAN True" in r.stdout
    denied(r, "threading.settrace", "threads", "trace")


@pytest.mark.parametrize("order", [
    ["DENY:threads", "ALLOW:threading.settrace"],
    ["ALLOW:threading.settrace", "DENY:threads"],
])
def test_spec_10_10_reverse(sb, order):
    r = run(sb, THREAD, api=order)
    denied(r, "threading.Thread.start", "threads", "start")
    allowed(r, "trace")


def test_thread_start_chain(sb):
    r = run(sb, THREAD, api=["ALLOW:threading.Thread.start"])
    denied(r, "threading._start_new_thread", "threads", "start")
    assert "RAN False" in r.stdout


def test_thread_subclass_refused(sb):
    r = run(sb, "import threading\nclass T(threading.Thread):\n    def run(self): print('RUN')\n"
                "probe('x', lambda: T().start())\n")
    denied(r, "threading.Thread.start", "threads")
    assert "RUN" not in r.stdout


def test_raw_thread_refused(sb):
    r = run(sb, "import _thread\nprobe('x', lambda: _thread.start_new_thread(print, ('RUN',)))\n")
    denied(r, "_thread.start_new_thread", "threads")


# --- resolution (spec 10.11) -------------------------------------------------------

@pytest.mark.parametrize("order", [["ALLOW:os.system", "DENY:os.system"],
                                   ["DENY:os.system", "ALLOW:os.system"]])
def test_spec_10_11_same_function_deny_wins(sb, order):
    r = run(sb, "import os\nprobe('x', lambda: os.system('true'))\n", api=order)
    denied(r, "os.system", "process-exec")


def test_spec_10_11_all_but_one(sb):
    r = run(sb, "import os, posix, signal\n"
                "probe('x', lambda: os.system('true'))\n"
                "probe('p', lambda: posix.system('true'))\n"
                "probe('a', lambda: signal.alarm(0))\n",
            api=["ALLOW:*", "DENY:os.system"], provider="none")
    denied(r, "os.system", "process-exec")
    allowed(r, "p")
    allowed(r, "a")


def test_spec_10_11_allow_all_deny_all(sb):
    r = run(sb, "import os, signal\nprobe('x', lambda: os.system('true'))\n"
                "probe('a', lambda: signal.alarm(0))\n",
            api=["ALLOW:*", "DENY:*"])
    denied(r, "os.system", "process-exec")
    denied(r, "signal.alarm", "process-control", "a")


# --- native, introspection, deserialization ---------------------------------------

def test_ctypes_cdll_refused(sb):
    r = run(sb, "def f():\n    import ctypes\n    return ctypes.CDLL('libc.so.6')\nprobe('x', f)\n")
    denied(r, "ctypes.CDLL", "native")


def test_ctypes_cdll_granted_cast_not(sb):
    r = run(sb, "import ctypes\nprobe('x', lambda: ctypes.CDLL(None))\n"
                "probe('s', lambda: ctypes.string_at(id(1), 4))\n"
                "probe('c', lambda: ctypes.cast(0, ctypes.c_char_p))\n",
            api=["ALLOW:ctypes.CDLL"])
    allowed(r)
    denied(r, "ctypes.string_at", "native", "s")
    denied(r, "ctypes.cast", "native", "c")


@pytest.mark.parametrize("call,qualname", [
    ("sys._getframe()", "sys._getframe"),
    ("sys._current_frames()", "sys._current_frames"),
    ("sys.settrace(None)", "sys.settrace"),
    ("sys.setprofile(None)", "sys.setprofile"),
    ("gc.get_objects()", "gc.get_objects"),
    ("gc.get_referrers(sys)", "gc.get_referrers"),
    ("gc.get_referents(sys)", "gc.get_referents"),
    ("inspect.currentframe()", "inspect.currentframe"),
    ("inspect.stack()", "inspect.stack"),
    ("importlib.reload(json)", "importlib.reload"),
    ("faulthandler.enable()", "faulthandler.enable"),
])
def test_introspection_refused(sb, call, qualname):
    r = run(sb, "import sys, gc, inspect, importlib, json, faulthandler\n"
                f"probe('x', lambda: {call})\n")
    denied(r, qualname, "introspection")


def test_addaudithook_not_added(sb):
    # CPython swallows a RuntimeError raised against sys.addaudithook (ours
    # derives from it): the refusal is silent, but the hook never runs.
    r = run(sb, "import sys\nseen = []\nsys.addaudithook(lambda e, a: seen.append(e))\n"
                "open(__file__).close()\nprint('SEEN', seen)\n")
    assert "SEEN []" in r.stdout, r


def test_introspection_granted(sb):
    r = run(sb, "import sys\nprobe('x', lambda: sys._getframe())\n",
            api=["ALLOW:introspection"])
    allowed(r)


def test_traceback_frame_refused_but_printing_works(sb):
    r = run(sb, """\
import traceback, sys
try:
    1 / 0
except ZeroDivisionError as e:
    traceback.print_exc(file=sys.stdout)
    probe('x', lambda: e.__traceback__.tb_frame)
def g():
    yield 1
probe('g', lambda: g().gi_frame)
""")
    assert "ZeroDivisionError" in r.stdout, r
    assert outcome(r) == "DENIED reading traceback.tb_frame introspection", r
    assert outcome(r, "g") == "DENIED reading generator.gi_frame introspection", r


def test_marshal_loads_refused(sb):
    r = run(sb, "import marshal\nprobe('x', lambda: marshal.loads(marshal.dumps(1)))\n")
    denied(r, "marshal.loads()", "deserialization")
    r = run(sb, "import marshal\nprobe('x', lambda: marshal.loads(marshal.dumps(1)))\n",
            api=["ALLOW:deserialization"])
    allowed(r)


GADGET = """\
import os, pickle, io
class Gadget:
    def __reduce__(self):
        return (os.system, ('touch {marker}',))
data = pickle.dumps(Gadget())
"""


def test_pickle_gadget_refused(sb):
    marker = sb.path("PWNED")
    r = run(sb, GADGET.format(marker=marker) + "probe('x', lambda: pickle.loads(data))\n",
            provider="none")
    denied(r, "pickle.loads", "deserialization")
    assert not marker.exists()


def test_pickle_unpickler_gadget_refused(sb):
    # pickle.Unpickler is an immutable C type: the global lookup is what stops it.
    marker = sb.path("PWNED")
    r = run(sb, GADGET.format(marker=marker) +
            "probe('x', lambda: pickle.Unpickler(io.BytesIO(data)).load())\n"
            "probe('y', lambda: pickle._Unpickler(io.BytesIO(data)).load())\n",
            provider="none")
    denied(r, "pickle.loads", "deserialization")
    denied(r, "pickle._Unpickler", "deserialization", "y")
    assert not marker.exists()


def test_pickle_loads_granted(sb):
    r = run(sb, "import pickle\nprint('V', probe('x', lambda: pickle.loads(pickle.dumps([1]))))\n",
            api=["ALLOW:pickle.loads"])
    allowed(r)
    assert "V [1]" in r.stdout


# --- getting around the wrappers -------------------------------------------------------

def test_wrapper_does_not_lead_to_original(sb):
    r = run(sb, """\
import os, gc
refs = gc.get_referents(os.setuid)
print('REFS', [type(x).__name__ for x in refs if callable(x)])
print('SELF', os.setuid.__self__)
probe('x', lambda: os.setuid(os.getuid()))
""", api=["ALLOW:introspection"])
    assert "REFS []" in r.stdout and "SELF None" in r.stdout, r
    denied(r, "os.setuid", "privileges")


def test_fresh_posix_module_still_wrapped(sb):
    r = run(sb, """\
import sys, importlib, _imp
del sys.modules['posix']
m = importlib.import_module('posix')
probe('x', lambda: m.setuid(m.getuid()))
fresh = _imp.create_builtin(m.__spec__)
probe('y', lambda: fresh.umask(0))
""")
    denied(r, "posix.setuid", "privileges")
    denied(r, "posix.umask", "privileges", "y")


def test_module_loaded_late_is_wrapped(sb):
    r = run(sb, "import importlib\ns = importlib.import_module('resource')\n"
                "probe('x', lambda: s.prlimit(0, s.RLIMIT_CORE, (0, 0)))\n")
    denied(r, "resource.prlimit", "process-control")


def test_profile_builtins_swap_no_help(sb):
    r = run(sb, "import builtins\nb = builtins.__dict__\n"
                "probe('x', lambda: b['exec']('y = 1'))\n")
    denied(r, "builtins.exec", "dynamic-code")


def test_c_modules_reimported_by_statement_are_wrapped(sb):
    # The scan after an import skips the modules only _imp makes: its hooks
    # must wrap a fresh one however it is imported.
    r = run(sb, """\
import sys, resource, _thread
del sys.modules['resource'], sys.modules['_thread']
import resource as r2, _thread as t2
probe('x', lambda: r2.prlimit(0, r2.RLIMIT_CORE, (0, 0)))
probe('y', lambda: t2.stack_size(0))
""")
    denied(r, "resource.prlimit", "process-control")
    denied(r, "_thread.stack_size", "threads", "y")


def test_python_module_reimported_is_wrapped(sb):
    r = run(sb, """\
import sys, subprocess
del sys.modules['subprocess']
import subprocess as again
probe('x', lambda: again.getoutput('true'))
""", api=["ALLOW:subprocess.Popen", "ALLOW:_posixsubprocess.fork_exec"])
    denied(r, "subprocess.getoutput", "process-exec")


# --- the pysandboxes module's classes, made on first use ------------------------

def test_exception_classes_made_on_first_use_keep_identity(sb):
    # No python-import= for pickle or _pickle: RestrictedUnpicklingError's
    # base is the runtime's import, made when the class is first asked for.
    r = sb.run_code("os-sandbox=subprocess\npython-import=sys\npython-import=pysandboxes\n", """\
import sys
try:
    open('/etc/shadow')
except OSError as e:
    first = type(e)
print('PICKLE-BEFORE', '_pickle' in sys.modules)
import pysandboxes
print('FIRST', first is pysandboxes.RuleFileNotFoundError)
R = pysandboxes.RestrictedUnpicklingError
print('BASES', issubclass(R, sys.modules['_pickle'].UnpicklingError),
      issubclass(R, pysandboxes.SandBoxError), R.__module__, R.__name__)
del sys.modules['pysandboxes']
import pysandboxes as again
print('SAME', again is not pysandboxes, again.RestrictedUnpicklingError is R,
      again.SandBoxError is pysandboxes.SandBoxError, again.RuleFileNotFoundError is first)
from pysandboxes import *
print('STAR', RestrictedUnpicklingError is R, sandbox_denials is again.sandbox_denials)
try:
    again.NoSuchClass
except AttributeError as e:
    print('MISSING', e)
""")
    assert r.returncode == 0, r
    assert "PICKLE-BEFORE False" in r.stdout, r
    assert "FIRST True" in r.stdout, r
    assert "BASES True True pysandboxes RestrictedUnpicklingError" in r.stdout, r
    assert "SAME True True True True" in r.stdout, r
    assert "STAR True True" in r.stdout, r
    assert "MISSING module 'pysandboxes' has no attribute 'NoSuchClass'" in r.stdout, r


# --- a guarded module's code run again ------------------------------------------

def test_guarded_module_rerun_refused_even_with_reload_granted(sb):
    # The wrappers would be gone whatever the rules say: no grant allows it,
    # while reload() of an unguarded module follows the rule.
    r = run(sb, """\
import importlib, inspect, json, runpy
probe('x', lambda: importlib.reload(inspect))
probe('y', lambda: inspect.__spec__.loader.exec_module(inspect))
probe('z', lambda: runpy.run_module('inspect', run_name='copy'))
probe('j', lambda: importlib.reload(json))
probe('f', lambda: inspect.currentframe())
""", api=["ALLOW:importlib.reload"])
    for label in "xyz":
        assert outcome(r, label) == "DENIED inspect introspection", r
    allowed(r, "j")
    denied(r, "inspect.currentframe", "introspection", "f")


def test_stdlib_module_run_as_main_still_works(sb):
    # `python-sb -m inspect` runs the program, not a copy of inspect for it.
    sb.profile("os-sandbox=subprocess\npython-import=*\n")
    r = sb.run("-m", "inspect", "json")
    assert r.returncode == 0, r
    assert "JSON (JavaScript Object Notation)" in r.stdout, r
