# SPDX-License-Identifier: MIT
"""Partial mode as a new user meets it (issue 17, item 5 and the partial-mode
part of 7): modules found through relative sys.path entries, errors that say
what the user wrote, per-call timeouts, documented caps, concurrent calls,
generators refused where they are decorated."""

import subprocess

import pytest

from conftest import LANDLOCK_ABI, TIMEOUT
from test_partial import PROVIDERS, PYTHON, Partial


@pytest.fixture
def partial(sb, pysandboxes_dir):
    return Partial(sb, pysandboxes_dir)


@pytest.fixture
def partial_nobody(sb_nobody, pysandboxes_dir):
    return Partial(sb_nobody, pysandboxes_dir)


HELPER = '''\
from pysandboxes import sandbox

@sandbox
def answer():
    return 42
'''

CALL_HELPER = '''\
import helper
from pysandboxes import sandboxes
with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox={provider!r}):
    print("answer", helper.answer())
'''


def _run_python(partial, args, input=None):
    return subprocess.run(partial.sb.prefix + [PYTHON] + args, cwd=str(partial.sb.root),
                          capture_output=True, text=True, timeout=TIMEOUT,
                          env=partial.env(), input=input,
                          stdin=None if input is not None else subprocess.DEVNULL)


# ---- relative and empty sys.path entries -----------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_module_beside_c_code_is_found(partial, provider):
    """python3 -c: sys.path[0] is '' (the current directory)."""
    partial.sb.profile("python-import=json\n")
    partial.write("helper.py", HELPER)
    r = _run_python(partial, ["-c", CALL_HELPER.format(provider=provider)])
    assert r.returncode == 0, r.stderr
    assert r.stdout == "answer 42\n"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_module_beside_stdin_code_is_found(partial, provider):
    partial.sb.profile("python-import=json\n")
    partial.write("helper.py", HELPER)
    r = _run_python(partial, ["-"], input=CALL_HELPER.format(provider=provider))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "answer 42\n"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_relative_sys_path_entry_is_found(partial, provider):
    partial.sb.profile("python-import=json\n")
    partial.write("lib/helper.py", HELPER)
    r = partial.run('import sys\nsys.path.insert(0, "lib")\n' +
                    CALL_HELPER.format(provider=provider), profile=None)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "answer 42\n"


def test_relative_sys_path_as_nobody(partial_nobody):
    partial_nobody.sb.profile("python-import=json\n")
    partial_nobody.write("lib/helper.py", HELPER)
    provider = "landlock" if LANDLOCK_ABI >= 1 else "subprocess"
    r = partial_nobody.run('import sys\nsys.path.insert(0, "lib")\n' +
                           CALL_HELPER.format(provider=provider), profile=None)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "answer 42\n"


# ---- generators ------------------------------------------------------------

@pytest.mark.parametrize("kind", ["def", "async def"])
def test_generator_refused_at_decoration(partial, kind):
    body = "yield 1" if kind == "def" else "await asyncio.sleep(0)\n        yield 1"
    r = partial.run(f'''
import asyncio
from pysandboxes import sandbox
try:
    @sandbox
    {kind} gen():
        {body}
except TypeError as e:
    print("refused:", e)
else:
    print("accepted")
''', profile=None)
    assert r.returncode == 0, r.stderr
    assert "refused: @sandbox cannot run __main__.gen" in r.stdout
    assert "generator" in r.stdout
    assert "return a list" in r.stdout


# ---- the data-only refusal names the rule and the user's class --------------

def test_data_only_refusal_says_which_rule_and_main_class(partial):
    r = partial.run('''
from pysandboxes import sandbox, sandboxes, RestrictedUnpicklingError

class Point:
    pass

@sandbox
def point():
    return Point()

if __name__ == "__main__":
    with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox="subprocess"):
        try:
            point()
        except RestrictedUnpicklingError as e:
            print("refused:", e)
''')
    assert r.returncode == 0, r.stderr
    assert "global '__main__.Point' is not a value type" in r.stdout
    assert "__mp_main__" not in r.stdout
    assert "remote-result-mode=objects" in r.stdout


# ---- profile errors --------------------------------------------------------

def test_profile_error_is_config_syntax_error_with_keywords(partial):
    r = partial.run('''
from pysandboxes import sandboxes, ConfigSyntaxError
try:
    with sandboxes(sandboxes_config=".py-sandboxes", python_imports="json",
                   expose_ro="/nonexistent-sb-dir"):
        pass
except ConfigSyntaxError as e:
    print("refused:", e)
''', profile="os-sandbox=subprocess\npython-import=json\nbogus-key=1\n")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("refused: ")
    assert "python_imports='json'" in out
    assert "expose_ro='/nonexistent-sb-dir'" in out
    assert ".py-sandboxes:3" in out
    assert "<command line>" not in out
    assert "--python-imports" not in out
    assert "status 255" not in out
    # Said once, in the exception: not also on stderr.
    assert "ConfigSyntaxError" not in r.stderr


def test_fatal_start_error_is_in_the_exception(partial):
    """A provider that cannot be applied: its message is the exception's."""
    r = partial.run('''
from pysandboxes import sandboxes, SandBoxError
try:
    with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox="qemu"):
        pass
except SandBoxError as e:
    print("refused:", type(e).__name__, e)
''', profile="python-import=json\n")
    assert r.returncode == 0, r.stderr
    assert "refused: SandBoxError" in r.stdout
    assert "qemu" in r.stdout
    assert "status 255" not in r.stdout


def test_module_problem_reported_at_entry(partial):
    """A @sandbox function's module that the worker cannot import fails
    sandboxes() itself, not the first call."""
    partial.write("tool.py", "import colorsys\nfrom pysandboxes import sandbox\n"
                  "@sandbox\ndef f():\n    return 1\n")
    r = partial.run('''
from pysandboxes import sandboxes
import tool
try:
    with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox="subprocess"):
        print("entered")
        tool.f()
except ModuleNotFoundError as e:
    print("refused:", type(e).__name__, e)
''', profile="python-import=json\n")
    assert r.returncode == 0, r.stderr
    assert "entered" not in r.stdout
    assert "refused: RuleModuleNotFoundError" in r.stdout
    assert "python-import=colorsys" in r.stdout


# ---- timeouts and caps -----------------------------------------------------

SLOW = '''\
import time
from pysandboxes import sandbox

@sandbox(timeout=0.5)
def slow_short(s):
    time.sleep(s)
    return s

@sandbox
def slow(s):
    time.sleep(s)
    return s

@sandbox
def blob(n):
    return b"x" * n

@sandbox
def size(b):
    return len(b)
'''


@pytest.mark.parametrize("provider", PROVIDERS)
def test_per_call_timeout(partial, provider):
    partial.write("slow.py", SLOW)
    r = partial.run(f'''
import time
from pysandboxes import sandboxes, SandBoxProtocolError
from slow import slow, slow_short
with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox={provider!r}, call_timeout=1):
    for f, s in ((slow_short, 20), (slow, 20)):
        t = time.monotonic()
        try:
            f(s)
        except SandBoxProtocolError as e:
            print("timeout:", e)
        print("under 15 s", time.monotonic() - t < 15)
    print("again", slow_short(0))
''', timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("timeout: slow.slow_short took longer than its timeout of "
                               "0.5 s"), lines
    assert lines[1] == "under 15 s True"
    assert lines[2].startswith("timeout: slow.slow took longer than its timeout of 1 s"), lines
    assert lines[3] == "under 15 s True"
    assert lines[4] == "again 0"


def test_timeout_argument_checked(partial):
    r = partial.run('''
from pysandboxes import sandbox, sandboxes
for bad in (0, -1, "2s"):
    try:
        @sandbox(timeout=bad)
        def f():
            pass
    except (TypeError, ValueError) as e:
        print("refused:", e)
try:
    sandboxes(call_timeout=-3)
except ValueError as e:
    print("refused:", e)
''', profile=None)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("refused:") == 4, r.stdout


@pytest.mark.parametrize("provider", PROVIDERS)
def test_size_caps_are_settings(partial, provider):
    partial.write("slow.py", SLOW)
    r = partial.run(f'''
from pysandboxes import sandboxes, RestrictedUnpicklingError, SandBoxProtocolError
from slow import blob, size
with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox={provider!r},
               max_result_size=4096, max_argument_size="8KiB"):
    print("small", len(blob(1000)))
    try:
        blob(5000)
    except RestrictedUnpicklingError as e:
        print("result:", e)
    print("arg", size(b"y" * 4000))
    try:
        size(b"y" * 9000)
    except SandBoxProtocolError as e:
        print("argument:", e)
with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox={provider!r},
               max_result_size="2MiB"):
    print("big", len(blob(1024 * 1024)))
''', timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "small 1000" in out
    assert "over the limit of 4096 bytes (max_result_size)" in out
    assert "arg 4000" in out
    assert "over the limit of 8192 bytes (max_argument_size)" in out
    assert "big 1048576" in out


# ---- concurrent calls ------------------------------------------------------

RENDEZVOUS = '''\
import os, time
from pysandboxes import sandbox

def _meet(directory, i, n, wait):
    """True when all n calls were running at the same time (within wait s:
    a hang guard; workers may take long to start on a loaded machine)."""
    open(os.path.join(directory, str(i)), "w").close()
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if len(os.listdir(directory)) >= n:
            return True
        time.sleep(0.01)
    return False

@sandbox
def meet(directory, i, n, wait=60):
    return _meet(directory, i, n, wait)

@sandbox
async def ameet(directory, i, n, wait=60):
    return _meet(directory, i, n, wait)
'''


@pytest.mark.parametrize("provider", PROVIDERS)
def test_concurrent_async_calls_run_at_once(partial, provider):
    partial.write("meet.py", RENDEZVOUS)
    d = partial.sb.mkdir("rv")
    d2 = partial.sb.mkdir("rv2")
    r = partial.run(f'''
import asyncio, threading
import pysandboxes
from meet import meet, ameet

async def main():
    async with pysandboxes.sandboxes(sandboxes_config=".py-sandboxes",
                                     os_sandbox={provider!r}):
        print("async", await asyncio.gather(*(ameet({str(d)!r}, i, 5) for i in range(5))))

asyncio.run(main())

with pysandboxes.sandboxes(sandboxes_config=".py-sandboxes", os_sandbox={provider!r}):
    out = []
    ts = [threading.Thread(target=lambda i=i: out.append(meet({str(d2)!r}, i, 5)))
          for i in range(5)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("threads", out)
''', profile=f"python-import=*\nexpose-rw={d}\nexpose-rw={d2}\n", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "async [True, True, True, True, True]" in r.stdout
    assert "threads [True, True, True, True, True]" in r.stdout


def test_max_workers_one_serialises(partial):
    partial.write("meet.py", RENDEZVOUS)
    d = partial.sb.mkdir("rv")
    r = partial.run(f'''
import threading
import pysandboxes
from meet import meet
with pysandboxes.sandboxes(sandboxes_config=".py-sandboxes", os_sandbox="subprocess",
                           max_workers=1):
    out = []
    ts = [threading.Thread(target=lambda i=i: out.append(meet({str(d)!r}, i, 2, 3)))
          for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("threads", sorted(out))
''', profile=f"python-import=*\nexpose-rw={d}\n", timeout=60)
    assert r.returncode == 0, r.stderr
    assert "threads [False, True]" in r.stdout


# ---- the caller's own top-level imports (issue 17, item 5) -----------------
# The worker runs the caller's script again (as __mp_main__) to find its
# functions: an import of the script's own top level that the worker's rules
# refuse no longer stops the worker. The name is bound to a placeholder that
# raises the refusal, with its rule, where a sandboxed function uses it.

TOP_LEVEL = '''\
import colorsys
import colorsys as cs
from colorsys import rgb_to_hsv
from pysandboxes import sandbox, sandboxes

@sandbox
def plain(x):
    return x * 2

@sandbox
def uses_it():
    return colorsys.rgb_to_hsv(1, 0, 0)

@sandbox
def uses_the_name():
    return rgb_to_hsv(1, 0, 0)

if __name__ == "__main__":
    with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox={provider!r}):
        print("plain", plain(21))
        for f in (uses_it, uses_the_name):
            try:
                f()
            except ModuleNotFoundError as e:
                print("refused:", type(e).__name__, e)
'''


def check_top_level(partial, provider):
    r = partial.run(TOP_LEVEL.format(provider=provider), profile="python-import=json\n")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "plain 42", r.stdout + r.stderr
    assert len(lines) == 3, r.stdout
    for line in lines[1:]:
        assert line.startswith("refused: RuleModuleNotFoundError Module named 'colorsys' is "
                               "not allowed by a rule. Add 'python-import=colorsys'"), line


@pytest.mark.parametrize("provider", PROVIDERS)
def test_callers_top_level_imports_are_not_charged(partial, provider):
    check_top_level(partial, provider)


def test_callers_top_level_imports_as_nobody(partial_nobody):
    check_top_level(partial_nobody, "landlock" if LANDLOCK_ABI >= 1 else "subprocess")
