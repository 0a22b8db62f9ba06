# SPDX-License-Identifier: MIT
"""Partial mode (spec section 7, behaviours 39-43 of section 10): an ordinary
/usr/bin/python3 imports the pysandboxes package, and @sandbox functions run
in a python-sb worker under the provider.

Each test writes a module and a main script under the sandbox root and runs
the script with /usr/bin/python3; the worker is $PYTHON_SB."""

import re
import shutil
import signal
import subprocess
import textwrap
import time

import pytest

from conftest import LANDLOCK_ABI, SANITIZER_ENV, TIMEOUT

PYTHON = "/usr/bin/python3"
PROVIDERS = [
    "subprocess",
    pytest.param("landlock", marks=pytest.mark.skipif(LANDLOCK_ABI < 1,
                                                      reason="the kernel has no Landlock")),
    "unshare",
    # The worker started under the wrapper (python-sb runs itself again in it).
    pytest.param("bwrap", marks=pytest.mark.skipif(not shutil.which("bwrap"),
                                                   reason="bwrap is not installed")),
    pytest.param("firejail", marks=pytest.mark.skipif(not shutil.which("firejail"),
                                                      reason="firejail is not installed")),
]


class Partial:
    """Runs scripts of partial mode as the sandbox's user."""

    def __init__(self, sb, pkg_dir):
        self.sb = sb
        self.pkg_dir = pkg_dir

    def env(self, extra=None):
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.sb.root), "LC_ALL": "C.UTF-8",
               "PYTHONPATH": self.pkg_dir, "PYSANDBOXES_PYTHON_SB": self.sb.binary,
               "PYTHONDONTWRITEBYTECODE": "1"}
        env.update(SANITIZER_ENV)
        if extra:
            env.update(extra)
        return env

    def write(self, rel, text):
        return self.sb.write(rel, text)

    def cmd(self, script="main.py"):
        return self.sb.prefix + [PYTHON, str(self.sb.path(script))]

    def run(self, code, profile="python-import=*", script="main.py", timeout=TIMEOUT,
            env=None):
        if profile is not None:
            self.sb.profile(profile)
        self.write(script, code)
        proc = subprocess.run(self.cmd(script), cwd=str(self.sb.root), capture_output=True,
                              text=True, timeout=timeout, env=self.env(env),
                              stdin=subprocess.DEVNULL)
        return proc


@pytest.fixture
def partial(sb, pysandboxes_dir):
    return Partial(sb, pysandboxes_dir)


@pytest.fixture
def partial_nobody(sb_nobody, pysandboxes_dir):
    return Partial(sb_nobody, pysandboxes_dir)


MODULE = '''\
import asyncio
import os
import sys
from pysandboxes import sandbox

class Obj:
    def __init__(self, v):
        self.v = v

class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + MARKER,))

MARKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "PWNED")

class ConnectError(Exception):
    """Shaped like httpx.ConnectError: a keyword-only request attribute."""
    def __init__(self, message, *, request):
        super().__init__(message)
        self.request = request

@sandbox
def inc(x):
    return x + 1

@sandbox
async def ainc(x):
    await asyncio.sleep(0)
    return x + 1

@sandbox
def fail():
    raise ValueError("bad value")

@sandbox
async def afail():
    raise ValueError("bad async value")

@sandbox
def leave(code):
    raise SystemExit(code)

@sandbox
async def aleave(code):
    raise SystemExit(code)

@sandbox
def obj():
    return Obj(3)

@sandbox
def evil():
    return Evil()

@sandbox
def big(n):
    return b"x" * n

@sandbox
def chatty(i):
    print("out", i)
    print("err", i, file=sys.stderr)
    print("out-again", i)
    return i

@sandbox
async def achatty(i):
    print("aout", i)
    return i

@sandbox
def read(path):
    with open(path) as f:
        return f.read()

@sandbox
def connect(port):
    import socket
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
    except ConnectionRefusedError as e:
        raise ConnectError("cannot connect", request="GET /") from e
    finally:
        s.close()

@sandbox
def pid():
    return os.getpid()

@sandbox
def inside():
    import pysandboxes
    return pysandboxes.is_in_sandbox()

@sandbox
def sleep(s):
    import time
    time.sleep(s)
    return s

@sandbox
def values():
    import datetime, decimal, fractions, ipaddress, pathlib, uuid
    return [None, True, 2 ** 70, 2.5, 3j, "s", b"b", bytearray(b"ba"), (1,), {"k": {1, 2}},
            frozenset([1]), pathlib.PurePosixPath("/x"),
            datetime.datetime(2020, 1, 2, tzinfo=datetime.timezone.utc),
            datetime.timedelta(3), decimal.Decimal("1.5"), fractions.Fraction(1, 3),
            uuid.UUID(int=5), ipaddress.ip_address("10.0.0.1"),
            ipaddress.ip_network("10.0.0.0/8")]
'''


def main(body, provider="subprocess", rules=""):
    """A main script running `body` inside `with sandboxes(...)`."""
    return (f"import asyncio, os, sys\nimport pysandboxes\n"
            f"from pysandboxes import *\nfrom mod import *\n"
            f"with sandboxes(sandboxes_config='.py-sandboxes', os_sandbox={provider!r}{rules}):\n"
            + textwrap.indent(textwrap.dedent(body), "    "))


# ---- 39: exceptions cross as their own class; SystemExit does not kill -----

@pytest.mark.parametrize("provider", PROVIDERS)
def test_exception_and_base_exception_sync(partial, provider):
    partial.write("mod.py", MODULE)
    r = partial.run(main('''
        try:
            fail()
        except ValueError as e:
            print("caught", type(e).__name__, e, sandbox_denials(e))
            print("note" if "Traceback in the sandbox" in "".join(e.__notes__) else "no note")
        try:
            leave(3)
        except SandBoxBaseExceptionError as e:
            print("base:", e)
        print("after", inc(41))
    ''', provider))
    assert r.returncode == 0, r.stderr
    assert "caught ValueError bad value []" in r.stdout
    assert "note" in r.stdout.splitlines()
    assert "base: builtins.SystemExit: 3" in r.stdout
    assert "after 42" in r.stdout


@pytest.mark.parametrize("provider", PROVIDERS)
def test_exception_and_base_exception_async(partial, provider):
    partial.write("mod.py", MODULE)
    r = partial.run(f'''
import asyncio
import pysandboxes
from pysandboxes import *
from mod import *

async def go():
    async with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox={provider!r}):
        try:
            await afail()
        except ValueError as e:
            print("caught", e)
        try:
            await aleave(4)
        except SandBoxBaseExceptionError as e:
            print("base:", e)
        print("after", await ainc(1))
        # Two calls in flight at once: serialized, both answered.
        print("gather", await asyncio.gather(ainc(10), ainc(20), achatty(7)))
        # The event loop runs while a call waits.
        ticks = 0
        async def tick():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1
        t = asyncio.create_task(tick())
        await asyncio.to_thread(lambda: None)
        await asyncio.sleep(0)
        call = asyncio.get_running_loop().run_in_executor(None, sleep, 0.3)
        await call
        t.cancel()
        print("loop ran", ticks > 5)

asyncio.run(go())
''')
    assert r.returncode == 0, r.stderr
    assert "caught bad async value" in r.stdout
    assert "base: builtins.SystemExit: 4" in r.stdout
    assert "after 2" in r.stdout
    assert "gather [11, 21, 7]" in r.stdout
    assert "aout 7" in r.stdout
    assert "loop ran True" in r.stdout


def test_run_and_async_decorated_loop_not_blocked(partial):
    partial.write("mod.py", MODULE)
    r = partial.run('''
import asyncio, time
import pysandboxes
from mod import sleep

@pysandboxes.sandbox
async def slow():
    import asyncio
    await asyncio.sleep(0.3)
    return "slow done"

async def go():
    ticks = 0
    async def tick():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1
    t = asyncio.create_task(tick())
    r = await slow()
    t.cancel()
    return r, ticks

r, ticks = pysandboxes.run(go(), sandboxes_config=".py-sandboxes")
print(r, "ticks", ticks > 10)
try:
    pysandboxes.run(lambda: 1)
except ValueError as e:
    print("ValueError:", e)
''')
    assert r.returncode == 0, r.stderr
    assert "slow done ticks True" in r.stdout
    assert "ValueError: run() expects a coroutine" in r.stdout


# ---- 40: the daemon's life cycle and its misuse ----------------------------

def test_lifecycle_errors(partial):
    partial.write("mod.py", MODULE)
    r = partial.run('''
import asyncio
import pysandboxes
from pysandboxes import sandboxes
from mod import inc
try:
    inc(1)
except AssertionError as e:
    print("assert:", e)
with sandboxes(sandboxes_config=".py-sandboxes"):
    first = pysandboxes._core.worker_pid()
    with sandboxes(sandboxes_config=".py-sandboxes"):
        print("same worker", pysandboxes._core.worker_pid() == first, inc(1))
    print("still alive", pysandboxes._core.worker_pid() == first, inc(2))
print("stopped", pysandboxes._core.worker_pid())
try:
    pysandboxes._core.stop()
except ValueError as e:
    print("ValueError:", e)
try:
    inc(1)
except AssertionError as e:
    print("assert again")

async def mix():
    with sandboxes(sandboxes_config=".py-sandboxes"):
        pass
try:
    asyncio.run(mix())
except RuntimeError as e:
    print("RuntimeError:", e)
''')
    assert r.returncode == 0, r.stderr
    assert ("assert: Daemon not started. Use 'with sandboxes()' or 'pysandboxes.run()'"
            in r.stdout)
    assert "same worker True 2" in r.stdout
    assert "still alive True 3" in r.stdout
    assert "stopped None" in r.stdout
    assert "ValueError: sandboxes() was shut down more times than started" in r.stdout
    assert "assert again" in r.stdout
    assert "RuntimeError: It's not possible to mix synchronous and asynchronous" in r.stdout


# A child forked inside sandboxes() cannot use its parent's worker; its own
# sandboxes() starts a fresh one, and leaving the parent's block in the child
# neither fails nor stops the parent's worker.
@pytest.mark.parametrize("provider", PROVIDERS)
def test_forked_child_starts_its_own_worker(partial, provider):
    partial.write("mod.py", MODULE)
    body = main('''
        parent_worker = pysandboxes._core.worker_pid()
        sys.stdout.flush()
        child = os.fork()
        if child == 0:
            try:
                inc(1)
            except Exception as e:
                print("child without:", type(e).__name__, e, flush=True)
            with sandboxes(sandboxes_config='.py-sandboxes', os_sandbox=PROVIDER):
                w = pysandboxes._core.worker_pid()
                print("child own", w is not None and w != parent_worker, inc(10), flush=True)
            print("child after", pysandboxes._core.worker_pid(), flush=True)
        else:
            _, status = os.waitpid(child, 0)
            print("child status", os.waitstatus_to_exitcode(status))
            print("parent", pysandboxes._core.worker_pid() == parent_worker, inc(2))
    ''', provider)
    r = partial.run(f"PROVIDER = {provider!r}\n" + body + textwrap.dedent('''
        if child == 0:
            print("child left", flush=True)
            os._exit(0)
        print("parent left", pysandboxes._core.worker_pid())
    '''))
    assert r.returncode == 0, r.stderr
    assert ("child without: SandBoxProtocolError the sandbox belongs to process"
            in r.stdout), r.stdout + r.stderr
    assert "a forked child cannot use it; start sandboxes() in the child" in r.stdout
    assert "child own True 11" in r.stdout, r.stdout + r.stderr
    assert "child after None" in r.stdout
    assert "child left" in r.stdout
    assert "child status 0" in r.stdout, r.stdout + r.stderr
    assert "parent True 3" in r.stdout
    assert "parent left None" in r.stdout


# A forked child inherits the table of worker process groups that a fatal
# signal kills: its own death must not take its parent's worker along.
@pytest.mark.parametrize("provider", PROVIDERS)
def test_forked_child_killed_by_sigterm_spares_parents_worker(partial, provider):
    partial.write("mod.py", MODULE)
    r = partial.run(main('''
        import signal, time
        parent_worker = pysandboxes._core.worker_pid()
        sys.stdout.flush()
        child = os.fork()
        if child == 0:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
            os._exit(3)
        _, status = os.waitpid(child, 0)
        print("child by SIGTERM", os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM)
        print("parent", pysandboxes._core.worker_pid() == parent_worker, inc(2))
    ''', provider))
    assert r.returncode == 0, r.stderr
    assert "child by SIGTERM True" in r.stdout, r.stdout + r.stderr
    assert "parent True 3" in r.stdout, r.stdout + r.stderr


# ---- 41: the result guard -------------------------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_result_guard_data_only(partial, provider):
    partial.write("mod.py", MODULE)
    r = partial.run(main('''
        print("mode", pysandboxes._core.result_mode())
        print("values", values())
        for f in (obj, evil):
            try:
                f()
            except RestrictedUnpicklingError as e:
                print("refused:", e)
        print("marker", os.path.exists(MARKER))
    ''', provider))
    assert r.returncode == 0, r.stderr
    assert "mode data-only" in r.stdout
    assert ("values [None, True, 1180591620717411303424, 2.5, 3j, 's', b'b', bytearray(b'ba'), "
            "(1,), {'k': {1, 2}}, frozenset({1}), PurePosixPath('/x')" in r.stdout)
    assert "global 'mod.Obj' is not a value type of remote-result-mode=data-only" in r.stdout
    # The worker names os.system by its own spelling (os or its C twin).
    assert re.search(r"global '(os|posix)\.system' is not a value type", r.stdout)
    assert "marker False" in r.stdout
    assert not partial.sb.path("PWNED").exists()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_result_guard_objects(partial, provider):
    partial.write("mod.py", MODULE)
    r = partial.run(main('''
        print("mode", pysandboxes._core.result_mode())
        o = obj()
        print("rebuilt", type(o).__name__, o.v)
        try:
            evil()
        except RestrictedUnpicklingError as e:
            print("refused:", e)
        print("marker", os.path.exists(MARKER))
    ''', provider, rules=", remote_result_mode='objects'"))
    assert r.returncode == 0, r.stderr
    assert "mode objects" in r.stdout
    assert "rebuilt Obj 3" in r.stdout
    assert re.search(r"global '(os|posix)\.system' is in the result guard's denylist", r.stdout)
    assert "marker False" in r.stdout
    assert not partial.sb.path("PWNED").exists()


def test_result_mode_from_the_profile(partial):
    """The worker reports the mode it read from the profile file."""
    partial.write("mod.py", MODULE)
    r = partial.run(main('''
        print("mode", pysandboxes._core.result_mode())
        print("rebuilt", obj().v)
    '''), profile="python-import=*\nremote-result-mode=objects\n")
    assert r.returncode == 0, r.stderr
    assert "mode objects" in r.stdout
    assert "rebuilt 3" in r.stdout


def test_guarded_loads_refuses_before_running(partial):
    """The parent's guard on a crafted stream: nothing runs, whatever the mode."""
    r = partial.run('''
import os, pickle
from pysandboxes import _core, RestrictedUnpicklingError
class Evil:
    def __reduce__(self):
        return (os.system, ("touch PWNED",))
data = pickle.dumps(Evil(), 0)
for mode in ("data-only", "objects", "objects-unguarded", "exception"):
    try:
        _core.guarded_loads(data, mode)
    except RestrictedUnpicklingError as e:
        print(mode, "refused:", e)
print(_core.guarded_loads(pickle.dumps(Evil(), 5), "objects-unguarded") == 0)
''', profile=None)
    assert r.returncode == 0, r.stderr
    for mode in ("data-only", "objects", "objects-unguarded", "exception"):
        assert f"{mode} refused:" in r.stdout
        assert "GLOBAL (protocol 0) is refused" in r.stdout
    # remote-result-guard=false really removes the denylist (and nothing else).
    assert "True" in r.stdout
    assert partial.sb.path("PWNED").exists()


# ---- 42: denials survive; attributes do not -------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_denials_cross_the_boundary(partial, provider):
    if provider == "firejail":
        pytest.skip("net= ALLOW rules stop a run under firejail (no bridge and netfilter): "
                    "test_kernel_wrappers.py checks that")
    # bwrap gives a sandbox with net= rules the host's network only when asked.
    share = ", **{'bwrap.share_net': 'yes'}" if provider == "bwrap" else ""
    partial.write("mod.py", MODULE)
    r = partial.run(main('''
        try:
            connect(9)
        except ConnectError as e:
            print("caught ConnectError", sandbox_denials(e)[:1])
            try:
                e.request
            except AttributeError:
                print("request lost")
        try:
            read("/etc/hostname")
        except FileNotFoundError as e:
            print("fnf", type(e).__name__, len(sandbox_denials(e)))
        try:
            fail()
        except ValueError as e:
            print("ordinary", sandbox_denials(e))
    ''', provider, rules=", net='ALLOW|TCP|127.0.0.1|8|OUT'" + share))
    assert r.returncode == 0, r.stderr
    assert re.search(r"caught ConnectError \[.RuleSocketConnectionRefusedError: .*DENIED",
                     r.stdout)
    assert "request lost" in r.stdout
    assert "fnf RuleFileNotFoundError 1" in r.stdout
    assert "ordinary []" in r.stdout


def outside(partial):
    """A directory out of the parent's sys.path (which the worker may read:
    the script's directory is on it), holding data/x.txt = "secret"."""
    d = partial.sb.root.parent / "outside"
    d.mkdir(exist_ok=True)
    (d / "x.txt").write_text("secret")
    return d


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rule_keyword_is_enforced(partial, provider):
    d = outside(partial)
    partial.write("mod.py", MODULE)
    code = f'''
        try:
            print("read", read("{d}/x.txt"))
        except FileNotFoundError as e:
            print("denied", bool(sandbox_denials(e)))
    '''
    denied = partial.run(main(code, provider))
    allowed = partial.run(main(code, provider, rules=f", expose_ro={{'{d}'}}"))
    assert denied.returncode == 0, denied.stderr
    assert "denied True" in denied.stdout
    assert allowed.returncode == 0, allowed.stderr
    assert "read secret" in allowed.stdout


@pytest.mark.skipif(LANDLOCK_ABI < 1, reason="the kernel has no Landlock")
def test_landlock_holds_without_the_python_layer(partial):
    """py_sandbox=False: the kernel alone refuses what no rule exposes."""
    d = outside(partial)
    partial.write("mod.py", MODULE)
    r = partial.run(main(f'''
        try:
            print("read", read("{d}/x.txt"))
        except PermissionError as e:
            print("kernel", e.errno)
    ''', "landlock", rules=", py_sandbox=False"))
    assert r.returncode == 0, r.stderr
    assert "kernel 13" in r.stdout


def test_imports_of_the_module_are_charged(partial):
    """The function's module is the worker's request; what it imports is
    the program's (refused when the worker starts: it imports the modules of
    the @sandbox functions then)."""
    partial.write("mod.py", MODULE)
    partial.write("other.py", "import colorsys\nfrom pysandboxes import sandbox\n"
                  "@sandbox\ndef f():\n    return 1\n")
    r = partial.run('''
from pysandboxes import sandboxes
import other
try:
    with sandboxes(sandboxes_config=".py-sandboxes"):
        other.f()
except ModuleNotFoundError as e:
    print("refused:", e)
''', profile="python-import=json\n")
    assert r.returncode == 0, r.stderr
    assert "refused: Module named 'colorsys' is not allowed by a rule" in r.stdout


# ---- 43: output and size ---------------------------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_print_on_every_call_in_order(partial, provider):
    partial.write("mod.py", MODULE)
    r = partial.run(main('''
        for i in range(3):
            print("before", i, flush=True)
            chatty(i)
            print("after", i, flush=True)
    ''', provider), env={"PYTHONUNBUFFERED": "1"})
    assert r.returncode == 0, r.stderr
    expected = []
    for i in range(3):
        expected += [f"before {i}", f"out {i}", f"out-again {i}", f"after {i}"]
    assert r.stdout.splitlines() == expected
    assert [line for line in r.stderr.splitlines() if line.startswith("err")] == \
        ["err 0", "err 1", "err 2"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_oversized_reply(partial, provider):
    partial.write("mod.py", MODULE)
    r = partial.run(main('''
        print(len(big(400 * 1024)))
        try:
            big(600 * 1024)
        except RestrictedUnpicklingError as e:
            print("refused:", e)
        print(inc(1))
    ''', provider))
    assert r.returncode == 0, r.stderr
    assert "409600" in r.stdout
    assert "over the limit of 524288 bytes (max_result_size)" in r.stdout
    assert "614409 bytes" in r.stdout
    assert r.stdout.splitlines()[-1] == "2"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_oversized_exception_keeps_its_class(partial, provider):
    """An exception whose description is over the result limit crosses
    without its message and traceback, as its own class."""
    partial.write("mod.py", MODULE)
    partial.write("huge.py", "from pysandboxes import sandbox\n"
                  "@sandbox\ndef huge(n):\n    raise ValueError('x' * n)\n")
    r = partial.run(main('''
        from huge import huge
        try:
            huge(600 * 1024)
        except ValueError as e:
            print("caught", type(e).__name__, str(e))
        print(inc(1))
    ''', provider))
    assert r.returncode == 0, r.stderr
    assert "caught ValueError (message too long)" in r.stdout, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "2"


# ---- the worker's life -------------------------------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_worker_killed_mid_call_is_restarted(partial, provider):
    partial.write("mod.py", MODULE)
    r = partial.run(f'''
import os, signal, threading, time
import pysandboxes
from pysandboxes import *
from mod import *

def init():
    # A token of each run: under unshare every worker is PID 2 of its own
    # PID namespace.
    print("init in", os.getpid(), os.urandom(8).hex(), flush=True)

# The worker runs this script as __mp_main__ (init is defined here).
if __name__ == "__main__":
  with sandboxes(init, sandboxes_config=".py-sandboxes", os_sandbox={provider!r}):
    first = pysandboxes._core.worker_pid()
    threading.Timer(0.3, os.kill, (first, signal.SIGKILL)).start()
    try:
        sleep(10)
    except SandBoxProtocolError as e:
        print("died:", e)
    print("next", inc(1), pysandboxes._core.worker_pid() not in (None, first))
    print("is it dead", os.path.exists(f"/proc/{{first}}/status") and
          "zombie" in open(f"/proc/{{first}}/status").read())
''')
    assert r.returncode == 0, r.stderr
    assert "died:" in r.stdout and "killed by signal 9" in r.stdout
    assert "mod.sleep" in r.stdout
    assert "next 2 True" in r.stdout
    assert "is it dead False" in r.stdout
    # init_fn ran at the start and again after the restart, in the workers
    # (the wrappers' PID namespaces number both workers alike).
    inits = [line for line in r.stdout.splitlines() if line.startswith("init in")]
    assert len(inits) == 2
    assert inits[0] != inits[1] or provider in ("bwrap", "firejail")


def test_worker_that_keeps_crashing(partial):
    partial.write("mod.py", MODULE)
    r = partial.run('''
import os, signal, time
import pysandboxes
from pysandboxes import *
from mod import *

@sandbox
def crash():
    os.kill(os.getpid(), signal.SIGKILL)

if __name__ == "__main__":
  with sandboxes(sandboxes_config=".py-sandboxes",
                 python_api="ALLOW:os.kill,posix.kill"):
    t = time.monotonic()
    for i in range(6):
        try:
            crash()
        except SandBoxProtocolError as e:
            print(i, str(e)[:60])
    print("took", round(time.monotonic() - t))
    try:
        inc(1)
    except SandBoxProtocolError as e:
        print("refused:", e)
  print("application alive")
''', timeout=60)
    assert r.returncode == 0, r.stderr
    assert "refused: the sandbox worker crashed 5 times in 180 s" in r.stdout
    assert "application alive" in r.stdout
    # Back-off between restarts: 1 + 1.5 + 2.25 + 3.375 s.
    took = int(next(line for line in r.stdout.splitlines() if line.startswith("took"))[5:])
    assert 7 <= took <= 20


def test_bad_profile_fails_the_start(partial):
    partial.write("mod.py", MODULE)
    r = partial.run('''
from pysandboxes import *
try:
    with sandboxes(sandboxes_config=".py-sandboxes"):
        pass
except SandBoxError as e:
    print("start refused:", type(e).__name__, e)
''', profile="os-sandbox=foo\n")
    assert r.returncode == 0, r.stderr
    # The worker's report, in the exception (a ConfigSyntaxError is a SandBoxError).
    assert "start refused: ConfigSyntaxError Syntax error in config files." in r.stdout
    assert ".py-sandboxes:1: Invalid os-sandbox 'foo'" in r.stdout


def test_main_script_functions_and_is_in_sandbox(partial):
    """Functions of the parent's script run in the worker from the script run
    as __mp_main__: its `if __name__ == "__main__"` block does not run there."""
    r = partial.run('''
import os
import pysandboxes
from pysandboxes import sandbox, sandboxes

print("script body ran as", __name__)

@sandbox
def where():
    return os.getpid(), pysandboxes.is_in_sandbox(), __name__

if __name__ == "__main__":
    with sandboxes(sandboxes_config=".py-sandboxes"):
        pid, inside, name = where()
        print("other process", pid != os.getpid(), "inside", inside, "name", name)
    print("parent inside", pysandboxes.is_in_sandbox())
''')
    assert r.returncode == 0, r.stderr
    assert "other process True inside True name __mp_main__" in r.stdout
    assert "parent inside False" in r.stdout
    assert r.stdout.count("script body ran as __main__") == 1
    assert "script body ran as __mp_main__" in r.stdout


def test_os_sandbox_none_is_in_process(partial):
    partial.write("mod.py", MODULE)
    r = partial.run(main('''
        print("same process", pid() == os.getpid(), pysandboxes._core.worker_pid())
    ''', "none"))
    assert r.returncode == 0, r.stderr
    assert "same process True None" in r.stdout


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_the_worker(partial, sig):
    partial.write("mod.py", MODULE)
    partial.sb.profile("python-import=*")
    partial.write("main.py", '''
import sys
import pysandboxes
from pysandboxes import sandboxes
from mod import sleep
with sandboxes(sandboxes_config=".py-sandboxes"):
    print(pysandboxes._core.worker_pid(), flush=True)
    sleep(60)
''')
    proc = subprocess.Popen(partial.cmd(), cwd=str(partial.sb.root), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=partial.env(),
                            stdin=subprocess.DEVNULL)
    try:
        worker = int(proc.stdout.readline())
        time.sleep(0.3)
        proc.send_signal(sig)
        # SIGINT: a KeyboardInterrupt that abandons the call; Python then
        # dies by SIGINT too.
        assert proc.wait(timeout=TIMEOUT) == -sig
    finally:
        proc.kill()
        proc.communicate()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{worker}/status") as f:
                if "zombie" in f.read():
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"worker {worker} still running after the parent's {sig!r}")


def test_as_nobody(partial_nobody):
    partial_nobody.write("mod.py", MODULE)
    r = partial_nobody.run(main('''
        print("uid", os.getuid(), "result", inc(41))
        try:
            read("/etc/hostname")
        except FileNotFoundError as e:
            print("denied", bool(sandbox_denials(e)))
    ''', "landlock" if LANDLOCK_ABI >= 1 else "subprocess"))
    assert r.returncode == 0, r.stderr
    assert "result 42" in r.stdout
    assert "uid 0" not in r.stdout
    assert "denied True" in r.stdout


def test_parent_killed_mid_call_ends_the_worker(partial):
    """SIGKILL leaves the parent no chance to clean up: the worker notices the
    closed channel by itself, even in the middle of a call."""
    partial.write("mod.py", MODULE)
    partial.sb.profile("python-import=*")
    partial.write("main.py", '''
import pysandboxes
from pysandboxes import sandboxes
from mod import sleep
with sandboxes(sandboxes_config=".py-sandboxes"):
    print(pysandboxes._core.worker_pid(), flush=True)
    sleep(60)
''')
    proc = subprocess.Popen(partial.cmd(), cwd=str(partial.sb.root), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=partial.env(),
                            stdin=subprocess.DEVNULL)
    try:
        worker = int(proc.stdout.readline())
        time.sleep(0.3)
        proc.kill()
        proc.wait(timeout=TIMEOUT)
    finally:
        proc.kill()
        proc.communicate()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{worker}/status") as f:
                if "zombie" in f.read():
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"worker {worker} still running after the parent was killed")


def test_envs_and_python_args(partial):
    partial.write("mod.py", MODULE + '''
@sandbox
def env_and_flags():
    return os.environ.get("MY_VAR"), os.environ.get("HOME"), sys.flags.dev_mode
''')
    r = partial.run('''
import os
from pysandboxes import sandboxes
from mod import env_and_flags
with sandboxes(sandboxes_config=".py-sandboxes", envs={"MY_VAR": "a ${NOT_EXPANDED} b"},
               python_args=["-X", "dev"]):
    print(env_and_flags())
''')
    assert r.returncode == 0, r.stderr
    # Only the rule envs reach the sandbox; the value is not parsed as profile text.
    assert "('a ${NOT_EXPANDED} b', None, True)" in r.stdout


def test_missing_python_sb(partial):
    partial.write("mod.py", MODULE)
    r = partial.run('''
from pysandboxes import sandboxes, SandBoxError
try:
    with sandboxes(sandboxes_config=".py-sandboxes"):
        pass
except SandBoxError as e:
    print("SandBoxError:", e)
''', env={"PYSANDBOXES_PYTHON_SB": "/nonexistent/python-sb"})
    assert r.returncode == 0, r.stderr
    assert "SandBoxError: python-sb not found at '/nonexistent/python-sb'" in r.stdout


def test_same_code_under_python_sb(sb):
    """Under python-sb (complete mode) the built-in pysandboxes gives the same
    API: @sandbox calls directly, sandboxes() and run() start nothing."""
    sb.write("mod.py", MODULE)
    r = sb.run_code("python-import=*\nexpose-ro=.", '''
import asyncio, os
import pysandboxes
from pysandboxes import sandbox, sandboxes, run
from mod import inc, ainc, pid
print("inside", pysandboxes.is_in_sandbox())
with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox="landlock"):
    print("inc", inc(1), "same process", pid() == os.getpid())

async def go():
    async with sandboxes():
        return await ainc(5)
print("run", run(go()))
try:
    run(1)
except ValueError as e:
    print("ValueError")
''')
    assert r.returncode == 0, r.stderr
    assert "inside True" in r.stdout
    assert "inc 2 same process True" in r.stdout
    assert "run 6" in r.stdout
    assert "ValueError" in r.stdout


def test_learning_in_partial_mode(partial):
    """sandboxes(learn=...) reaches the worker, which learns and writes the
    file when it leaves; the function's module itself is not learned."""
    partial.write("mod.py", MODULE + '''
@sandbox
def uses_colorsys():
    import colorsys
    return colorsys.rgb_to_hsv(1, 0, 0)
''')
    learned = partial.sb.path("learned.py-sandboxes")
    r = partial.run(f'''
from pysandboxes import sandboxes
from mod import uses_colorsys
with sandboxes(sandboxes_config={str(learned)!r}, learn={str(learned)!r}):
    print(uses_colorsys())
''', profile=None)
    assert r.returncode == 0, r.stderr
    assert "(0.0, 1.0, 1)" in r.stdout
    imports = [line for line in learned.read_text().splitlines()
               if line.startswith("python-import=")]
    names = {n.strip() for line in imports for n in line.split("=", 1)[1].split(",")}
    # What the module's body and the function import is the program's.
    assert {"colorsys", "asyncio"} <= names, imports
    assert "mod" not in names and "pysandboxes" not in names and "pickle" not in names


def _learn_results(partial, name, body):
    """Learns into `name` (a missing file: the template) while running body."""
    learned = partial.sb.path(name)
    r = partial.run(f"""
import pysandboxes
from pysandboxes import sandboxes
from mod import *
with sandboxes(sandboxes_config={str(learned)!r}, learn={str(learned)!r}):
    print("mode", pysandboxes._core.result_mode())
""" + textwrap.indent(textwrap.dedent(body), "    "), profile=None)
    return learned, r


def _result_block(text):
    lines = text.splitlines()
    start = lines.index("# <learning_remote_result>")
    end = lines.index("# </learning_remote_result>")
    return lines[start + 1:end]


def test_learning_only_data_results_writes_data_only(partial):
    """Spec section 6: only data results observed -> remote-result-mode=data-only,
    in its block; a replay with that file refuses an object."""
    partial.write("mod.py", MODULE)
    learned, r = _learn_results(partial, "data.py-sandboxes", """
        print("inc", inc(1), inc(2))
    """)
    assert r.returncode == 0, r.stderr
    # Learning records and allows: the parent decodes in objects mode.
    assert "mode objects" in r.stdout
    assert "inc 2 3" in r.stdout
    text = learned.read_text()
    block = _result_block(text)
    assert block[-1] == "remote-result-mode=data-only", block
    assert sum(line.startswith("remote-result-mode=") for line in text.splitlines()) == 1
    assert "needed remote-result-mode=objects" not in r.stderr

    # Replayed without learning, the learned data-only refuses an object.
    r = partial.run(f"""
import pysandboxes
from pysandboxes import sandboxes, RestrictedUnpicklingError
from mod import *
with sandboxes(sandboxes_config={str(learned)!r}):
    print("mode", pysandboxes._core.result_mode())
    print("inc", inc(1))
    try:
        obj()
    except RestrictedUnpicklingError as e:
        print("refused:", e)
""", profile=None)
    assert r.returncode == 0, r.stderr
    assert "mode data-only" in r.stdout
    assert "inc 2" in r.stdout
    assert "global 'mod.Obj' is not a value type of remote-result-mode=data-only" in r.stdout


def test_learning_an_object_result_writes_objects(partial):
    """One custom instance among data results -> objects under a comment naming
    the class, a warning in the report; the call itself succeeded while
    learning, and a replay with the file gets the object back."""
    partial.write("mod.py", MODULE)
    learned, r = _learn_results(partial, "objects.py-sandboxes", """
        print("inc", inc(1))
        o = obj()
        print("rebuilt", type(o).__name__, o.v)
        print("inc", inc(5))
    """)
    assert r.returncode == 0, r.stderr
    assert "mode objects" in r.stdout
    assert "rebuilt Obj 3" in r.stdout
    assert "inc 6" in r.stdout
    text = learned.read_text()
    block = _result_block(text)
    assert block[-2:] == ["# objects: a result needed mod.Obj; check that this is wanted",
                          "remote-result-mode=objects"], block
    assert sum(line.startswith("remote-result-mode=") for line in text.splitlines()) == 1
    assert re.search(r"warning: a result needed remote-result-mode=objects \(mod\.Obj\)",
                     r.stderr), r.stderr

    # Replayed without learning: objects mode, the object comes back; the
    # gadget denylist still refuses.
    r = partial.run(f"""
import os
import pysandboxes
from pysandboxes import sandboxes, RestrictedUnpicklingError
from mod import *
with sandboxes(sandboxes_config={str(learned)!r}):
    print("mode", pysandboxes._core.result_mode())
    o = obj()
    print("rebuilt", type(o).__name__, o.v)
    try:
        evil()
    except RestrictedUnpicklingError as e:
        print("refused:", e)
""", profile=None)
    assert r.returncode == 0, r.stderr
    assert "mode objects" in r.stdout
    assert "rebuilt Obj 3" in r.stdout
    assert re.search(r"global '(os|posix)\.system' is in the result guard's denylist", r.stdout)
    assert not partial.sb.path("PWNED").exists()

    # Learning again adds no second line, whatever the results.
    before = learned.read_text()
    _, r = _learn_results(partial, "objects.py-sandboxes", """
        print("inc", inc(1))
    """)
    assert r.returncode == 0, r.stderr
    after = learned.read_text()
    assert [line for line in after.splitlines()
            if line.startswith("remote-result-mode=")] == ["remote-result-mode=objects"]
    assert _result_block(after) == _result_block(before)


def test_learning_never_tightens_an_active_objects(partial):
    """A profile that says objects keeps it: only data results add nothing."""
    partial.write("mod.py", MODULE)
    learned = partial.sb.path("given.py-sandboxes")
    learned.write_text("python-import=*\nremote-result-mode=objects\n")
    _, r = _learn_results(partial, "given.py-sandboxes", """
        print("inc", inc(1))
    """)
    assert r.returncode == 0, r.stderr
    assert "inc 2" in r.stdout
    assert [line for line in learned.read_text().splitlines()
            if line.startswith("remote-result-mode=")] == ["remote-result-mode=objects"]


def test_learning_keeps_a_data_only_profile_and_warns(partial):
    """Our choice for a profile that says data-only when a result needs objects:
    the line stays (no second line, no loosening of an explicit choice), the
    call succeeds while learning, and the report says what will be refused."""
    partial.write("mod.py", MODULE)
    learned = partial.sb.path("strict.py-sandboxes")
    learned.write_text("python-import=*\nremote-result-mode=data-only\n")
    _, r = _learn_results(partial, "strict.py-sandboxes", """
        print("rebuilt", obj().v)
    """)
    assert r.returncode == 0, r.stderr
    assert "rebuilt 3" in r.stdout
    assert [line for line in learned.read_text().splitlines()
            if line.startswith("remote-result-mode=")] == ["remote-result-mode=data-only"]
    assert re.search(r"warning: a result needed remote-result-mode=objects \(mod\.Obj\), "
                     r"but .*strict\.py-sandboxes:2 says data-only", r.stderr), r.stderr


def test_exception_channel_rich_and_unknown(partial):
    partial.write("hidden.py", "class HiddenError(Exception):\n    pass\n")
    partial.write("mod.py", MODULE + '''
class Coded(Exception):
    def __init__(self, msg, code=0):
        super().__init__(msg, code)
        self.code = code

@sandbox
def coded():
    raise Coded("with a code", 7)

@sandbox
def hidden():
    import hidden
    raise hidden.HiddenError("from a module the caller never imported")

@sandbox
def bad_getattr():
    class Gadget(Exception):
        pass
    raise Gadget("local class")
''')
    r = partial.run(main('''
        try:
            coded()
        except Coded as e:
            print("rich", e.args, e.code)
        try:
            hidden()
        except SandBoxProtocolError as e:
            print("unknown:", e)
        print("hidden imported", "hidden" in sys.modules)
        try:
            bad_getattr()
        except SandBoxProtocolError as e:
            print("local:", e)
    '''))
    assert r.returncode == 0, r.stderr
    assert "rich ('with a code', 7) 7" in r.stdout
    assert "unknown: hidden.HiddenError: from a module the caller never imported" in r.stdout
    assert "hidden imported False" in r.stdout
    assert "local: mod.bad_getattr.<locals>.Gadget: local class" in r.stdout


def test_reduce_to_a_c_function_is_charged_in_the_worker(partial):
    """Pickling the reply runs the result's __reduce__: a C function put
    there is called as the program's call, not as the worker's machinery."""
    partial.write("mod.py", MODULE + '''
import functools

class Sneaky:
    __reduce__ = functools.partial(os.system, "touch " + MARKER)

@sandbox
def sneaky():
    return Sneaky()
''')
    r = partial.run(main('''
        try:
            sneaky()
        except SandBoxProtocolError as e:
            print("refused:", e)
    ''', "subprocess"))
    assert r.returncode == 0, r.stderr
    assert "refused: mod.sneaky: the result of mod.sneaky cannot be sent back" in r.stdout
    assert "denied by the API guard" in r.stdout
    assert not partial.sb.path("PWNED").exists()


def test_arguments_of_user_classes(partial):
    """Arguments are plain pickle from the trusted caller: classes of a
    module the worker has not imported yet, and of the caller's script."""
    partial.write("shapes.py", "class Point:\n    def __init__(self, x, y):\n"
                  "        self.x, self.y = x, y\n")
    partial.write("mod.py", MODULE + '''
@sandbox
def describe(p):
    return type(p).__module__, type(p).__name__, p.x + p.y
''')
    r = partial.run('''
from pysandboxes import sandboxes
from mod import describe
import shapes

class Local:
    def __init__(self):
        self.x, self.y = 10, 20

if __name__ == "__main__":
    with sandboxes(sandboxes_config=".py-sandboxes"):
        print(describe(shapes.Point(1, 2)))
        print(describe(Local()))
''', profile="python-import=asyncio,os,sys,mod,shapes\n")
    # The worker imports shapes (for the argument) as its own request; the
    # script run as __mp_main__ imports mod and shapes as the program.
    assert r.returncode == 0, r.stderr
    assert "('shapes', 'Point', 3)" in r.stdout
    assert "('__mp_main__', 'Local', 30)" in r.stdout
    # shapes is not in the profile: importing it for the argument is the
    # worker's machinery, not the program's.
    strict = partial.run('''
from pysandboxes import sandboxes
from mod import describe
import shapes
with sandboxes(sandboxes_config=".py-sandboxes"):
    print(describe(shapes.Point(1, 2)))
''', profile="python-import=asyncio,os,sys\n")
    assert strict.returncode == 0, strict.stderr
    assert "('shapes', 'Point', 3)" in strict.stdout
