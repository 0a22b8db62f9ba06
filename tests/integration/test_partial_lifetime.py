# SPDX-License-Identifier: MIT
"""Partial mode: the worker's lifetime is bound to its caller's by the kernel,
not by the worker's cooperation.

A sandboxed function that blocks and ignores SIGIO and clears O_ASYNC on every
descriptor (the channel's SIGIO, a wrapper's status-pipe lifeline) and then
spins must still die, with everything between it and the caller (python-sb,
python-sb-supervise, the PID namespace's init, bwrap, firejail), when the
caller is SIGKILLed: the parent-death signal python-sb arms, which seccomp
keeps the program from clearing. And since that signal follows the *thread*
that spawned the worker, a worker started from a short-lived thread must
outlive that thread."""

import os
import select
import shutil
import subprocess
import textwrap
import time

import pytest

from conftest import LANDLOCK_ABI, SANITIZER_ENV, TIMEOUT, USERNS_REFUSAL

PYTHON = "/usr/bin/python3"
# How long the whole tree may take to go once the caller is killed.
GONE_WITHIN = 10


def _providers(as_nobody):
    userns = as_nobody and USERNS_REFUSAL is not None
    return [
        pytest.param("landlock", marks=pytest.mark.skipif(LANDLOCK_ABI < 1,
                                                          reason="the kernel has no Landlock")),
        pytest.param("unshare", marks=pytest.mark.skipif(userns, reason=f"{USERNS_REFUSAL}")),
        pytest.param("bwrap", marks=pytest.mark.skipif(
            not shutil.which("bwrap") or userns,
            reason=f"bwrap is not installed, or {USERNS_REFUSAL}")),
        # firejail never lets the user nobody start a sandbox (firejail-users(5)).
        pytest.param("firejail", marks=pytest.mark.skipif(
            not shutil.which("firejail") or as_nobody,
            reason="firejail is not installed, or refuses the user nobody")),
    ]


MODULE = '''\
import fcntl
import os
import signal
import time
from pysandboxes import sandbox

@sandbox
def cling():
    """Everything the worker's own code can do to miss its caller's death."""
    done = []
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGIO})
    if signal.SIGIO in signal.pthread_sigmask(signal.SIG_BLOCK, set()):
        done.append("blocked")
    signal.signal(signal.SIGIO, signal.SIG_IGN)
    done.append("ignored")
    cleared = 0
    for fd in range(256):
        try:
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        except OSError:
            continue
        if flags & os.O_ASYNC:
            fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_ASYNC)
            cleared += 1
    done.append(f"cleared{cleared}")
    print("clinging", " ".join(done), flush=True)
    while True:
        time.sleep(0.1)

@sandbox
def inc(x):
    return x + 1

@sandbox
def pid():
    return os.getpid()
'''


def _stat(pid):
    """(state, start time) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return fields[0], fields[19]


def _descendants(root):
    """{pid: start time} of every process under root, found by parent links."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append((int(d), fields[19]))
    found, todo = {}, [root]
    while todo:
        for pid, start in children.get(todo.pop(), []):
            if pid not in found:
                found[pid] = start
                todo.append(pid)
    return found


def _alive(pid, start):
    s = _stat(pid)
    return s is not None and s[1] == start and s[0] not in ("Z", "X")


def _describe(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return f"{pid} (gone)"
    return f"{pid} {cmdline[:120]}"


def _env(sb, pkg_dir):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(sb.root), "LC_ALL": "C.UTF-8",
           "PYTHONPATH": pkg_dir, "PYSANDBOXES_PYTHON_SB": sb.binary,
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
    env.update(SANITIZER_ENV)
    return env


def _kill_caller_of_hostile_worker(sb, pkg_dir, provider):
    sb.profile("python-import=*")
    sb.write("mod.py", MODULE)
    sb.write("main.py", textwrap.dedent(f'''
        import os
        from pysandboxes import sandboxes
        from mod import cling
        with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox={provider!r}):
            cling()
    '''))
    proc = subprocess.Popen(sb.prefix + [PYTHON, str(sb.path("main.py"))], cwd=str(sb.root),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(sb, pkg_dir), stdin=subprocess.DEVNULL)
    tree = {}
    try:
        ready, _, _ = select.select([proc.stdout], [], [], TIMEOUT)
        line = proc.stdout.readline() if ready else ""
        if not line.startswith("clinging"):
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the sandboxed function did not start: {line!r} {out!r} {err!r}")
        # The attack took: SIGIO blocked and ignored (and, under a wrapper,
        # the status pipe's O_ASYNC cleared too).
        assert "blocked" in line and "ignored" in line, line
        time.sleep(0.3)
        tree = _descendants(proc.pid)
        assert tree, "no worker process found under the caller"
        proc.kill()
        proc.wait(timeout=TIMEOUT)
    finally:
        # Not communicate(): a process left behind holds the pipes open.
        proc.kill()
        proc.wait(timeout=TIMEOUT)
        proc.stdout.close()
        proc.stderr.close()
    deadline = time.monotonic() + GONE_WITHIN
    while time.monotonic() < deadline:
        left = [p for p, start in tree.items() if _alive(p, start)]
        if not left:
            return
        time.sleep(0.1)
    described = [_describe(p) for p in left]
    for p in left:
        try:
            os.kill(p, 9)
        except OSError:
            pass
    pytest.fail(f"{provider}: {len(left)} process(es) of the worker outlived the killed "
                f"caller: {described}")


@pytest.mark.parametrize("provider", _providers(False))
def test_killed_caller_takes_a_clinging_worker(sb, pysandboxes_dir, provider):
    _kill_caller_of_hostile_worker(sb, pysandboxes_dir, provider)


@pytest.mark.parametrize("provider", _providers(True))
def test_killed_caller_takes_a_clinging_worker_as_nobody(sb_nobody, pysandboxes_dir, provider):
    _kill_caller_of_hostile_worker(sb_nobody, pysandboxes_dir, provider)


@pytest.mark.parametrize("provider", _providers(False))
def test_worker_started_in_a_short_lived_thread_survives_it(sb, pysandboxes_dir, provider):
    """The parent-death signal follows the spawning thread: the workers must
    be spawned from one that lasts, not from the caller's thread."""
    sb.profile("python-import=*")
    sb.write("mod.py", MODULE)
    sb.write("main.py", textwrap.dedent(f'''
        import threading
        import time
        import pysandboxes
        from pysandboxes import sandboxes
        from mod import inc, pid

        box = sandboxes(sandboxes_config=".py-sandboxes", os_sandbox={provider!r},
                        max_workers=2)
        seen = {{}}

        def start():
            box.__enter__()
            seen["first"] = inc(1), pysandboxes._core.worker_pids()

        def busy():
            # Two calls at once: the second starts another worker, from
            # this thread too.
            seen.setdefault("pids", []).append(pid())

        t = threading.Thread(target=start)
        t.start()
        t.join()
        calls = [threading.Thread(target=busy) for _ in range(2)]
        for c in calls:
            c.start()
        for c in calls:
            c.join()
        workers = pysandboxes._core.worker_pids()
        time.sleep(1)
        print("first", seen["first"][0])
        print("after", inc(2), inc(3))
        print("same", sorted(pysandboxes._core.worker_pids()) == sorted(workers),
              len(workers))
        box.__exit__(None, None, None)
    '''))
    r = subprocess.run([PYTHON, str(sb.path("main.py"))], cwd=str(sb.root),
                       capture_output=True, text=True, timeout=TIMEOUT * 2, env=_env(sb, pysandboxes_dir),
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert "first 2" in r.stdout, r.stdout
    assert "after 3 4" in r.stdout, r.stdout
    # No worker was killed and replaced when its spawning thread ended.
    assert "same True" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("provider", _providers(False))
def test_program_cannot_clear_its_parent_death_signal(sb, pysandboxes_dir, provider):
    """The worker's parent-death signal is armed, and seccomp refuses
    PR_SET_PDEATHSIG to the program (it would clear it)."""
    sb.profile("python-import=*\npython-api=ALLOW:native")
    sb.write("mod.py", MODULE + '''
import ctypes

@sandbox
def deathsig():
    libc = ctypes.CDLL(None, use_errno=True)
    v = ctypes.c_int(-1)
    got = libc.prctl(2, ctypes.byref(v), 0, 0, 0)       # PR_GET_PDEATHSIG
    cleared = libc.prctl(1, 0, 0, 0, 0)                 # PR_SET_PDEATHSIG, 0
    return got, v.value, cleared, ctypes.get_errno()
''')
    sb.write("main.py", textwrap.dedent(f'''
        from pysandboxes import sandboxes
        from mod import deathsig
        with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox={provider!r}):
            print("deathsig", deathsig())
    '''))
    r = subprocess.run([PYTHON, str(sb.path("main.py"))], cwd=str(sb.root),
                       capture_output=True, text=True, timeout=TIMEOUT, env=_env(sb, pysandboxes_dir),
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    # (0, SIGKILL, -1, EPERM)
    assert "deathsig (0, 9, -1, 1)" in r.stdout, r.stdout + r.stderr
