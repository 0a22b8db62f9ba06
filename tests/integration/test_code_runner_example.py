# SPDX-License-Identifier: MIT
"""examples/code-runner: the strict profile, run exactly as the README shows
(`cd examples/code-runner && echo 5 | python-sb solve.py`), then with the
Python guard off (the kernel keeps refusing), then attacked with native code."""

import os
import shutil
import socket
import time
from pathlib import Path

import pytest

from conftest import HANG_BOUND, needs_landlock

pytestmark = needs_landlock

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "code-runner"

EXPECTED = (
    "alice: mean 88.3\n"
    "bob: mean 79.3\n"
    "carol: mean 100.7\n"
    "refused: write a file: [Errno 13] Permission denied\n"
    "refused: read /etc/passwd: [Errno 2] No such file or directory\n"
    "refused: start a process: [Errno 1] Operation not permitted\n"
)


@pytest.fixture
def example(sb):
    assert (EXAMPLE / "solve.py").is_file() and (EXAMPLE / ".py-sandboxes").is_file(), EXAMPLE
    out = EXAMPLE / "data" / "out.txt"
    assert not out.exists(), f"leftover {out}: the example's data directory was written"
    yield EXAMPLE
    assert not out.exists(), "the sandboxed program wrote into the example's data directory"


@pytest.fixture
def copy(sb, tmp_path):
    """A private copy of the example, for tests that add files."""
    d = tmp_path / "code-runner"
    shutil.copytree(EXAMPLE, d)
    return d


def test_readme_run(sb, example):
    r = sb.run("solve.py", cwd=example, input="5\n")
    assert (r.returncode, r.stdout) == (0, EXPECTED), r
    assert "NOT REFUSED" not in r.stdout


def test_readme_run_without_the_guard(sb, example):
    """--py-sandbox=false: the same three refusals, now all the kernel's
    (Landlock: the write and the read; seccomp: the process)."""
    r = sb.run("--py-sandbox=false", "solve.py", cwd=example, input="5\n")
    # Landlock answers EACCES where the guard hid the file (ENOENT).
    assert (r.returncode, r.stdout) == (0, EXPECTED.replace(
        "[Errno 2] No such file or directory", "[Errno 13] Permission denied")), r


def test_explain_shows_the_strict_boundary(sb, example):
    r = sb.run("--explain", "solve.py", cwd=example)
    assert r.returncode == 0, r
    out = r.stdout
    assert "#   provider in use: landlock" in out
    assert f"#   ro  {example / 'data'}" in out
    assert "#   TCP bind: refused on every port" in out
    assert "#   TCP connect: refused on every port" in out
    assert "AF_UNIX refused (needs an expose-rw rule and py-sandbox=true); AF_INET/AF_INET6 refused" in out
    assert ("#   seccomp refuses (needs python-api=ALLOW:process-exec), running programs: "
            "execve, execveat") in out
    assert ("#   seccomp refuses (needs an expose-rw rule), changing modes, owners, times, "
            "extended attributes: chmod,") in out
    assert "#   timeout: 10000 ms" in out


ATTACK = r'''
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def attempt(name, fn, *args):
    ctypes.set_errno(0)
    r = fn(*args)
    e = ctypes.get_errno()
    print(f"{name}: {errno.errorcode.get(e, e) if r == -1 else 'OK'}", flush=True)
    return r
port = int(sys.argv[1])
fd = attempt("read passwd", libc.open, b"/etc/passwd", os.O_RDONLY)
if fd >= 0:
    print(os.read(fd, 200))
attempt("write data", libc.open, b"data/evil.txt", os.O_WRONLY | os.O_CREAT, 0o644)
attempt("modify data", libc.open, b"data/scores.json", os.O_WRONLY | os.O_TRUNC)
attempt("write cwd", libc.open, b"evil.txt", os.O_WRONLY | os.O_CREAT, 0o644)
attempt("socket inet", libc.socket, 2, 1, 0)
attempt("socket unix", libc.socket, 1, 1, 0)
pid = attempt("fork", libc.fork)
if pid == 0:
    open("data/child.txt", "w").write("child")
    os._exit(0)
argv = (ctypes.c_char_p * 2)(b"true", None)
attempt("execve", libc.execve, b"/bin/true", argv, None)
attempt("kill parent", libc.kill, os.getppid(), 0)
attempt("ptrace parent", libc.ptrace, 0x4206, os.getppid(), None, None)
attempt("shmget", libc.shmget, 0, 4096, 0o1600)
attempt("mq_open", libc.syscall, 240, b"/x", 0o100, 0o600, None)
print("DONE")
'''


def test_native_code_under_the_strict_profile(sb, copy):
    """The code-runner profile with the guard off and native code: every door
    of the README's list (writes, sockets, processes, IPC, signals) is shut."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.3)
    try:
        (copy / "attack.py").write_text(ATTACK)
        before = (copy / "data" / "scores.json").read_bytes()
        r = sb.run("--py-sandbox=false", "attack.py", str(listener.getsockname()[1]),
                   cwd=copy)
        assert r.returncode == 0, r
        o = dict(line.split(": ", 1) for line in r.stdout.splitlines() if ": " in line)
        assert o == {"read passwd": "EACCES", "write data": "EACCES", "modify data": "EACCES",
                     "write cwd": "EACCES", "socket inet": "EPERM", "socket unix": "EPERM",
                     "fork": "EPERM", "execve": "EPERM", "kill parent": "EPERM",
                     "ptrace parent": "EPERM", "shmget": "EPERM", "mq_open": "EPERM"}, r
        assert r.stdout.endswith("DONE\n") and r.stdout.count("DONE") == 1
        assert "root:" not in r.stdout
        time.sleep(0.1)
        assert sorted(os.listdir(copy / "data")) == ["scores.json"]
        assert (copy / "data" / "scores.json").read_bytes() == before
        assert not (copy / "evil.txt").exists()
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()


def test_guard_refuses_ctypes_in_the_strict_profile(sb, copy):
    """With the guard on, native code does not even get ctypes (not listed)."""
    (copy / "attack.py").write_text(ATTACK)
    r = sb.run("attack.py", "1", cwd=copy)
    assert r.returncode == 1, r
    assert "Module named 'ctypes' is not allowed by a rule" in r.stderr
    assert r.stdout == ""


def test_example_timeout_kills_a_runaway_solution(sb, copy):
    """The example's timeout ends a runaway solution with status 124 (the copy's
    timeout is shortened from 10s to 1s to keep the test fast; limit-cpu=5s
    would come later)."""
    (copy / "spin.py").write_text("print('SPIN', flush=True)\nwhile True:\n    pass\n")
    profile = (copy / ".py-sandboxes").read_text()
    assert "timeout=10s\n" in profile
    (copy / ".py-sandboxes").write_text(profile.replace("timeout=10s\n", "timeout=1s\n"))
    t0 = time.monotonic()
    r = sb.run("spin.py", cwd=copy)
    assert r.returncode == 124, r
    assert r.stdout == "SPIN\n"
    assert "python-sb: timeout=1000ms expired" in r.stderr
    assert time.monotonic() - t0 < HANG_BOUND


def test_example_runs_from_another_directory(sb, example, tmp_path):
    """The rule file is found next to the script, but ./data is relative to
    the current directory: from elsewhere the data directory does not exist,
    and the profile is refused before anything runs."""
    r = sb.run(example / "solve.py", cwd=tmp_path, input="5\n")
    assert r.returncode == 255, r
    assert "expose-ro='./data': the directory must exist" in r.stderr
    assert r.stdout == ""
