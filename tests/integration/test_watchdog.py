# SPDX-License-Identifier: MIT
"""timeout= without a supervisor (src/kernel/watchdog.h): when the program
cannot start processes, two timers of its own process hold the deadline, a
catchable signal whose handler exits 124 and, a second later, SIGKILL; the
seccomp filter keeps the program from changing or deleting them."""

import os
import signal
import subprocess
import time

import pytest

from conftest import EXIT_TIMEOUT, HANG_BOUND, SANITIZER_ENV, needs_landlock

pytestmark = needs_landlock

MESSAGE = "python-sb: timeout=1s expired: the program and every process it started were killed"
# No ctypes without py-sandbox=false: the kernel side alone is what is tested.
KERNEL_ONLY = "os-sandbox=landlock\npy-sandbox=false\ntimeout=1s\n"
PARENT = '''
import os, sys
print("PARENT", os.getppid() == int(sys.argv[1]), flush=True)
'''


def run_timed(sb, profile, code, *args):
    t0 = time.monotonic()
    r = sb.run_code(profile, code, *args)
    return r, time.monotonic() - t0


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_a_timeout_alone_holds_in_the_programs_own_process(request, who):
    """No supervisor between the caller and the program: the program's parent
    is the caller (setpriv execs, it does not fork), and the deadline still
    ends it with 124 and the supervisor's message."""
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    r, elapsed = run_timed(sb, "os-sandbox=landlock\npython-import=*\ntimeout=1s\n",
                           PARENT + "while True:\n    pass\n", os.getpid())
    assert r.returncode == EXIT_TIMEOUT, r
    assert r.stdout == "PARENT True\n", r
    assert MESSAGE in r.stderr
    assert 0.9 < elapsed < HANG_BOUND, elapsed


def test_a_program_that_may_start_processes_gets_a_supervisor(sb):
    """Its children would outlive its timers: the supervisor (a process of
    its own, the program's parent) holds the timeout."""
    r, _ = run_timed(sb, KERNEL_ONLY + "python-api=ALLOW:process-exec\n",
                     PARENT + "while True:\n    pass\n", os.getpid())
    assert r.returncode == EXIT_TIMEOUT, r
    assert r.stdout == "PARENT False\n", r
    assert MESSAGE in r.stderr


def test_without_seccomp_a_supervisor_holds_the_timeout(sb):
    """os-sandbox=none loads no filter: nothing would protect the timers."""
    r, _ = run_timed(sb, "os-sandbox=none\npy-sandbox=false\ntimeout=1s\n",
                     PARENT + "while True:\n    pass\n", os.getpid())
    assert r.returncode == EXIT_TIMEOUT, r
    assert r.stdout == "PARENT False\n", r


def test_explain_says_which_holds_the_timeout(sb):
    sb.profile(KERNEL_ONLY)
    out = sb.run("--explain", "-c", "pass").stdout
    assert "timeout holds by: two timers of the program's own process" in out, out
    sb.profile(KERNEL_ONLY + "python-api=ALLOW:process-exec\n")
    out = sb.run("--explain", "-c", "pass").stdout
    assert "timeout holds by: a supervisor process" in out, out


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_the_program_cannot_change_or_delete_the_timers(request, who):
    """timer_delete and timer_settime on the watchdog's timers fail with
    EINVAL (ids 0 and 1: the first timers of the process), also with high bits
    set in the id; the program's own timer works; the deadline still holds."""
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    r, elapsed = run_timed(sb, KERNEL_ONLY, '''
        import ctypes, errno
        libc = ctypes.CDLL(None, use_errno=True)
        NR_create, NR_settime, NR_delete = 222, 223, 226
        zero = (ctypes.c_long * 4)()
        def call(*a):
            ctypes.set_errno(0)
            return libc.syscall(*a), ctypes.get_errno()
        for t in (0, 1, (1 << 32) | 0, (1 << 32) | 1):
            print("settime", call(NR_settime, ctypes.c_long(t), 0, ctypes.byref(zero), None))
        for t in (0, 1):
            print("delete", call(NR_delete, ctypes.c_long(t)))
        own = ctypes.c_int(-1)
        sev = (ctypes.c_int * 16)()
        sev[2] = 1  # SIGEV_NONE
        print("create", call(NR_create, 1, ctypes.byref(sev), ctypes.byref(own)), own.value > 1)
        print("own settime", call(NR_settime, own.value, 0, ctypes.byref(zero), None))
        print("own delete", call(NR_delete, own.value))
        print("END", flush=True)
        while True:
            pass
        ''')
    einval = f"(-1, {22})"
    assert r.returncode == EXIT_TIMEOUT, r
    assert r.stdout.splitlines() == [f"settime {einval}"] * 4 + [f"delete {einval}"] * 2 + [
        "create (0, 0) True", "own settime (0, 0)", "own delete (0, 0)", "END"], r
    assert MESSAGE in r.stderr
    assert 0.9 < elapsed < HANG_BOUND, elapsed


@pytest.mark.parametrize("how", ["handler", "blocked", "consumed", "ignored", "stopped"])
def test_a_program_that_keeps_the_signal_from_its_handler_is_killed(sb, how):
    """Replacing the handler, blocking the signal (in every thread: here the
    only one), waiting for it to consume it, ignoring it, or stopping itself
    (a stopped process runs no handler) only delays the end to the SIGKILL
    timer, one second after the deadline."""
    r, elapsed = run_timed(sb, KERNEL_ONLY, f'''
        import signal, time
        how = {how!r}
        if how == "handler":
            signal.signal(signal.SIGRTMAX, lambda *a: print("CAUGHT", flush=True))
        elif how == "ignored":
            signal.signal(signal.SIGRTMAX, signal.SIG_IGN)
        elif how in ("blocked", "consumed"):
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMAX])
        if how == "consumed":
            print("GOT", signal.sigwaitinfo([signal.SIGRTMAX]).si_signo == signal.SIGRTMAX,
                  flush=True)
        if how == "stopped":
            import os
            os.kill(os.getpid(), signal.SIGSTOP)
        while True:
            time.sleep(0.01)
        ''')
    assert r.returncode == -signal.SIGKILL, r
    assert r.stdout == {"handler": "CAUGHT\n", "consumed": "GOT True\n"}.get(how, ""), r
    assert MESSAGE not in r.stderr
    assert 1.9 < elapsed < HANG_BOUND, elapsed


def test_the_deadline_ends_a_blocked_read_and_a_busy_thread(sb):
    """The signal reaches the process, whichever thread takes it: here the
    main thread waits for stdin (a pipe nobody writes) while another spins."""
    sb.profile(KERNEL_ONLY)
    s = sb.script('''
        import sys, threading
        threading.Thread(target=lambda: [None for _ in iter(int, 1)], daemon=True).start()
        print("READING", flush=True)
        sys.stdin.read()
        print("NEVER")
        ''')
    env = sb.env()
    env.update(SANITIZER_ENV)
    read_end, write_end = os.pipe()  # the write end stays open: no end of file
    t0 = time.monotonic()
    try:
        with subprocess.Popen([sb.binary, str(s)], cwd=sb.root, env=env, stdin=read_end,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
            out, err = p.communicate(timeout=HANG_BOUND)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert (p.returncode, out) == (EXIT_TIMEOUT, "READING\n"), err
    assert MESSAGE in err
    assert 0.9 < time.monotonic() - t0 < HANG_BOUND


def test_a_program_ending_early_keeps_its_status(sb):
    r, elapsed = run_timed(sb, KERNEL_ONLY, "import sys\nprint('OUT')\nsys.exit(7)\n")
    assert (r.returncode, r.stdout) == (7, "OUT\n"), r
    assert "expired" not in r.stderr
    assert elapsed < 0.9, elapsed
