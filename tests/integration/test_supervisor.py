# SPDX-License-Identifier: MIT
"""The timeout supervisor's two ways (src/kernel/supervise-exec.h). Where it
can, python-sb starts the program's process with its own memory
(clone(CLONE_VM)) and then becomes python-sb-supervise (a small static
program) by execve: the program's process pays no copy-on-write. The
instrumented (ASan) builds fork a copy instead. Statuses, messages, the
deadline and limit-output are tested through both in test_limits.py (the ASan
stage forks, the installed stage execs); here: which way ran, that the
program's thread state is whole after the clone, and that neither side can
outlive the other."""

import os
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import EXIT_CONFIG, HANG_BOUND, IS_ASAN, SANITIZER_ENV, still_alive_after

EXEC_WAY = not IS_ASAN
PROFILE = "os-sandbox=none\npy-sandbox=false\ntimeout=60s\n"


@pytest.fixture(params=["root", "nobody"])
def box(request):
    return request.getfixturevalue("sb" if request.param == "root" else "sb_nobody")


def supervise_binary(sb):
    """python-sb-supervise as python-sb finds it: beside it in a build tree,
    in libexec installed."""
    here = Path(os.path.realpath(sb.binary)).parent
    for p in (here / "python-sb-supervise",
              here.parent / "libexec" / "py-sandboxes" / "python-sb-supervise"):
        if os.access(p, os.X_OK):
            return p
    pytest.skip("no python-sb-supervise beside python-sb")


def test_the_supervisor_is_python_sb_supervise_or_a_fork(box):
    r = box.run_code(PROFILE, """
        import os
        ppid = os.getppid()
        print(open(f"/proc/{ppid}/comm").read().strip())
        print(os.readlink(f"/proc/{ppid}/exe"))
        """)
    assert r.returncode == 0, r
    comm, exe = r.stdout.split("\n")[:2]
    if EXEC_WAY:
        assert comm == "python-sb-super", r  # the kernel keeps 15 characters
        assert os.path.basename(exe) == "python-sb-supervise", r
    else:
        assert exe == os.path.realpath(box.binary), r


def test_the_program_thread_state_is_its_own(box):
    """What fork()'s child side redoes in glibc, the clone's program side
    redoes by hand: the thread id glibc keeps (pthread_kill of oneself sends
    through it; a stale one is ESRCH), the robust-mutex list, and threads,
    locks and forks that work as in any process."""
    r = box.run_code(PROFILE, """
        import ctypes, os, threading
        libc = ctypes.CDLL(None, use_errno=True)
        libc.pthread_self.restype = ctypes.c_ulong
        libc.pthread_kill.argtypes = [ctypes.c_ulong, ctypes.c_int]
        assert libc.pthread_kill(libc.pthread_self(), 0) == 0, "pthread_kill(self)"
        main = libc.pthread_self()
        errs = []
        def worker():
            errs.append(libc.pthread_kill(main, 0))
        t = threading.Thread(target=worker); t.start(); t.join()
        assert errs == [0], errs
        head, size = ctypes.c_void_p(), ctypes.c_size_t()
        assert libc.syscall(274, 0, ctypes.byref(head), ctypes.byref(size)) == 0  # get_robust_list
        assert head.value, "no robust list"
        lock, rlock, n = threading.Lock(), threading.RLock(), [0]
        def count():
            for _ in range(2000):
                with lock, rlock:
                    n[0] += 1
        ts = [threading.Thread(target=count) for _ in range(4)]
        [t.start() for t in ts]; [t.join() for t in ts]
        assert n[0] == 8000, n
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        assert os.waitpid(pid, 0)[1] >> 8 == 7
        print("whole")
        """)
    assert r.returncode == 0, r
    assert r.stdout == "whole\n", r


def test_the_program_dies_with_its_supervisor(box):
    """SIGKILL to python-sb's process (the supervisor, either way): the
    program goes too (its parent-death signal), nothing is left running."""
    box.profile(PROFILE)
    s = box.script('import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(120)\n')
    env = box.env()
    env.update(SANITIZER_ENV)
    p = subprocess.Popen(box.prefix + [box.binary, str(s)], cwd=str(box.root), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        program = int(p.stdout.readline())
        # setpriv execs: p.pid is python-sb's own process, whoever runs it.
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=HANG_BOUND)
        assert still_alive_after([program], HANG_BOUND) == [], \
            f"the program {program} outlived its supervisor"
    finally:
        p.kill()
        p.wait()


def test_the_supervisor_refuses_another_command_line(sb):
    """Started by anything but the python-sb it came with (another version's
    command line): it says so and stops, status 255."""
    if not EXEC_WAY:
        pytest.skip("the instrumented build forks: no python-sb-supervise runs")
    exe = supervise_binary(sb)
    for args in (["0", "1", "2", "3", "4"], ["1", "x", "2", "3", "4"], ["1"],
                 ["1", "99999999", "1", "0", "0", "3:9:0"],
                 # version 1's command line, and the init mode's without its
                 # descriptors (pid-init.h)
                 ["1", "99999999", "1", "0", "0"], ["init-1", "3", "4"],
                 ["init-1", "x", "4", "0"]):
        r = subprocess.run([str(exe)] + args, capture_output=True, text=True, timeout=30)
        assert r.returncode == EXIT_CONFIG, (args, r)
        assert "started by python-sb only" in r.stderr, (args, r)


@pytest.mark.parametrize("cpus", ["all", "one"])
def test_the_program_gets_the_callers_cpu_affinity(box, cpus):
    """The program's process starts on the CPU python-sb ran on (a warm
    cache, bench/README.md), then gets the caller's affinity back: the
    program sees what python would have seen, and so does its supervisor."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("one CPU: nothing to pin")
    want = allowed if cpus == "all" else allowed[-1:]
    box.profile(PROFILE)
    s = box.script('import os\nprint(sorted(os.sched_getaffinity(0)))\n'
                   'print(sorted(os.sched_getaffinity(os.getppid())))\n')
    env = box.env()
    env.update(SANITIZER_ENV)
    r = subprocess.run(box.prefix + [box.binary, str(s)], cwd=str(box.root), env=env,
                       capture_output=True, text=True, timeout=60,
                       preexec_fn=lambda: os.sched_setaffinity(0, want))
    assert r.returncode == 0, r
    assert r.stdout.split("\n")[:2] == [str(want), str(want)], r
