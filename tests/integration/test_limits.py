# SPDX-License-Identifier: MIT
"""limit-* (hard rlimits set before the interpreter starts) and timeout (a
supervisor that kills the whole process tree and exits 124, or under
landlock, for a program that cannot start processes, the watchdog's timers:
test_watchdog.py), run under
os-sandbox=landlock, unshare, bwrap and firejail (where the inner python-sb
sets them) with py-sandbox=false so that only the kernel acts."""

import errno
import os
import re
import resource
import signal
import subprocess
import time

import shutil

import pytest

from conftest import (EXIT_CONFIG, EXIT_TIMEOUT, HANG_BOUND, SANITIZER_ENV, needs_landlock, needs_userns,
                      not_under_asan)

def _wrapper(name):
    return pytest.param(name, marks=pytest.mark.skipif(
        shutil.which(name) is None, reason=f"{name} is not installed"))


PROVIDERS = [pytest.param("landlock", marks=needs_landlock),
             pytest.param("unshare", marks=needs_userns),
             _wrapper("bwrap"), _wrapper("firejail")]


def not_firejail_as_nobody(provider):
    """firejail never lets the user nobody start a sandbox (firejail-users(5),
    test_kernel_wrappers.py checks the refusal)."""
    if provider == "firejail":
        pytest.skip("firejail refuses the user nobody")


def base(sb):
    return f"os-sandbox={sb.kernel}\npy-sandbox=false\nexpose-rw=./rw\n"


@pytest.fixture(params=PROVIDERS)
def provider(request):
    return request.param


@pytest.fixture
def box(sb, provider):
    sb.kernel = provider
    sb.mkdir("rw")
    return sb


def run(sb, extra, code, **kw):
    return sb.run_code(base(sb) + extra, code, **kw)


def by(sb, landlock, unshare):
    """The provider's answer where the two kernels differ."""
    return landlock if sb.kernel == "landlock" else unshare


@not_under_asan
def test_memory_limit_gives_memory_error_and_the_program_survives(box):
    r = run(box, "limit-memory=200MB\n", '''
        try:
            b = bytearray(400 * 1000 * 1000)
            print("ALLOCATED", len(b))
        except MemoryError:
            print("MemoryError")
        small = bytearray(10 * 1000 * 1000)
        print("SURVIVED", len(small))
        ''')
    assert (r.returncode, r.stdout) == (0, "MemoryError\nSURVIVED 10000000\n"), r


@not_under_asan
def test_memory_bomb_stopped_as_nobody(sb_nobody, provider):
    """The same unprivileged: a program that allocates without end gets
    MemoryError at the limit, not the host's memory."""
    not_firejail_as_nobody(provider)
    sb = sb_nobody
    sb.kernel = provider
    sb.mkdir("rw")
    r = sb.run_code(base(sb) + "limit-memory=200MB\n", '''
        chunks = []
        try:
            while True:
                chunks.append(bytearray(10 * 1000 * 1000))
        except MemoryError:
            n = len(chunks)
            chunks = None
            print("MemoryError after", n)
        ''')
    assert r.returncode == 0, r
    n = int(r.stdout.split()[-1])
    assert r.stdout.startswith("MemoryError after") and 5 < n < 20, r


@not_under_asan
def test_memory_limit_is_a_hard_limit(box):
    r = run(box, "limit-memory=200MB\n", '''
        import resource
        print(resource.getrlimit(resource.RLIMIT_AS))
        try:
            resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY,) * 2)
        except (ValueError, OSError) as e:
            print("raise refused")
        ''')
    assert r.stdout.splitlines()[0] == "(200000000, 200000000)", r
    # Root too: the program has no CAP_SYS_RESOURCE left to raise it with.
    assert r.stdout.splitlines()[1] == "raise refused", r


def test_cpu_limit_kills_a_busy_loop(box):
    """soft = hard, so the kernel sends SIGKILL at the limit (SIGXCPU only
    comes while the soft limit is below the hard one): python-sb, which is
    the program's process, dies of SIGKILL."""
    # CPU time, not wall time: at a load of 40 one second of CPU took seven
    # of wall time. What the kernel counts and what rusage reports differ by
    # its tick (0.87 s seen): the bounds tell "near the limit" from "at once"
    # and "never".
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = run(box, "limit-cpu=1s\n", '''
        import resource
        print(resource.getrlimit(resource.RLIMIT_CPU), flush=True)
        while True:
            pass
        ''')
    elapsed = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert r.returncode == -signal.SIGKILL, r
    assert r.stdout == "(1, 1)\n", r
    if box.kernel == "bwrap":
        # bwrap's monitor ends without reaping its PID namespace's init: the
        # program's CPU time never reaches our RUSAGE_CHILDREN. One second of
        # CPU takes at least one of wall time.
        assert 0.9 < elapsed < HANG_BOUND, elapsed
    else:
        assert 0.5 < cpu < 3.0, cpu


def test_cpu_limit_rounds_milliseconds_up(box):
    r = run(box, "limit-cpu=1500ms\n", '''
        import resource
        print(resource.getrlimit(resource.RLIMIT_CPU))
        ''')
    assert (r.returncode, r.stdout) == (0, "(2, 2)\n"), r


def test_cpu_limit_kill_is_mirrored_through_the_timeout_supervisor(box):
    """With a timeout the program runs in the supervisor's child (or, under
    landlock, in python-sb's own process, the watchdog holding the timeout):
    its death by SIGKILL is reported the same way, not as a timeout."""
    r = run(box, "limit-cpu=1s\ntimeout=20s\n", "while True: pass\n")
    assert r.returncode == -signal.SIGKILL, r
    assert "expired" not in r.stderr


def test_file_size_limit_stops_the_write(box):
    """Python ignores SIGXFSZ (as CPython always does), so the write fails
    with EFBIG instead of killing the program; the file stops at the limit."""
    r = run(box, "limit-file-size=1000\n", '''
        import signal
        print("SIGXFSZ ignored:", signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN)
        try:
            with open("rw/big.bin", "wb", buffering=0) as f:
                n = f.write(b"x" * 5000)
                print("first write:", n)
                f.write(b"y" * 10)
        except OSError as e:
            print("error:", e.errno)
        print("AFTER")
        ''')
    assert r.returncode == 0, r
    assert r.stdout == ("SIGXFSZ ignored: True\nfirst write: 1000\nerror: "
                        f"{errno.EFBIG}\nAFTER\n"), r
    assert os.path.getsize(box.path("rw/big.bin")) == 1000


def test_file_size_limit_holds_against_preallocation(box):
    """fallocate(FALLOC_FL_KEEP_SIZE) gives a file blocks past its end: its
    size stays 0, so RLIMIT_FSIZE never sees them (200 MB of disk under
    limit-file-size=1MB before the filter refused it). Refused (EPERM), as
    with ZERO_RANGE; extending the file (posix_fallocate, mode 0) still meets
    the limit (EFBIG), and within it works."""
    r = run(box, "limit-file-size=1MB\n", '''
        import ctypes, errno, os
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open("rw/big.bin", os.O_WRONLY | os.O_CREAT, 0o644)
        for mode, name in [(1, "KEEP_SIZE"), (0x11, "ZERO_RANGE|KEEP_SIZE"),
                           (0, "past the limit"), (0, "within it")]:
            size = 4096 if name == "within it" else 64 << 20
            ctypes.set_errno(0)
            ok = libc.fallocate(fd, mode, ctypes.c_long(0), ctypes.c_long(size)) == 0
            print(name + ":", "OK" if ok else errno.errorcode[ctypes.get_errno()])
        ''')
    assert r.returncode == 0, r
    assert r.stdout == ("KEEP_SIZE: EPERM\nZERO_RANGE|KEEP_SIZE: EPERM\n"
                        "past the limit: EFBIG\nwithin it: OK\n"), r
    st = os.stat(box.path("rw/big.bin"))
    assert st.st_size == 4096 and st.st_blocks * 512 <= 1 << 20, st


def test_open_files_limit(box):
    r = run(box, "limit-open-files=20\n", '''
        files = []
        try:
            for _ in range(100):
                files.append(open("/dev/null"))
            print("opened all")
        except OSError as e:
            print("errno", e.errno, "after", len(files))
        ''')
    assert r.returncode == 0, r
    words = r.stdout.split()
    assert words[:2] == ["errno", str(errno.EMFILE)], r
    assert 0 < int(words[3]) < 20, r


@not_under_asan
def test_limits_are_inherited_by_children(box):
    r = run(box, "limit-open-files=20\nlimit-memory=300MB\nexpose-ro=/usr/bin\n"
            "python-api=ALLOW:process-exec\n", '''
        import subprocess
        print(subprocess.run(["/bin/sh", "-c", "ulimit -n; ulimit -v"],
                             capture_output=True, text=True).stdout, end="")
        ''')
    # ulimit -v is in KiB.
    assert (r.returncode, r.stdout) == (0, f"20\n{300000000 // 1024}\n"), r


def test_timeout_kills_a_busy_loop(box):
    t0 = time.monotonic()
    r = run(box, "timeout=1s\n", 'print("STARTED", flush=True)\nwhile True: pass\n')
    elapsed = time.monotonic() - t0
    assert r.returncode == EXIT_TIMEOUT, r
    assert r.stdout == "STARTED\n"
    assert ("python-sb: timeout=1s expired: the program and every process it started "
            "were killed") in r.stderr
    assert 0.9 < elapsed < HANG_BOUND, elapsed


def test_timeout_kills_a_sleeping_program(box):
    t0 = time.monotonic()
    r = run(box, "timeout=500ms\n", "import time\ntime.sleep(30)\n")
    assert r.returncode == EXIT_TIMEOUT, r
    assert "timeout=500ms expired" in r.stderr
    assert time.monotonic() - t0 < HANG_BOUND


def test_timeout_kills_the_whole_process_tree(box):
    """A forked child, a grandchild that left with setsid() and was orphaned
    (double fork), and an exec'd shell: none survives the deadline to write
    its marker."""
    rw = box.path("rw")
    t0 = time.monotonic()
    r = run(box, "timeout=1s\npython-api=ALLOW:process-exec\nexpose-ro=/usr/bin\n", f'''
        import os, subprocess, time
        def later(name):
            time.sleep(2)
            open(os.path.join({str(rw)!r}, name), "w").write("alive")
        if os.fork() == 0:
            later("CHILD")
            os._exit(0)
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                later("DAEMON")
            os._exit(0)
        subprocess.Popen(["/bin/sh", "-c", "sleep 2; echo alive > {rw}/SHELL"])
        print("PARENT WAITING", flush=True)
        time.sleep(30)
        ''')
    assert r.returncode == EXIT_TIMEOUT, r
    assert r.stdout == "PARENT WAITING\n", r
    time.sleep(max(0, t0 + 3.0 - time.monotonic()))
    assert sorted(os.listdir(rw)) == []


def test_timeout_kills_children_as_nobody(sb_nobody, provider):
    not_firejail_as_nobody(provider)
    sb = sb_nobody
    sb.kernel = provider
    rw = sb.mkdir("rw")
    t0 = time.monotonic()
    r = sb.run_code(base(sb) + "timeout=1s\npython-api=ALLOW:process-exec\n", f'''
        import os, time
        if os.fork() == 0:
            time.sleep(2)
            open({str(rw / "CHILD")!r}, "w").write("alive")
            os._exit(0)
        while True:
            pass
        ''')
    assert r.returncode == EXIT_TIMEOUT, r
    time.sleep(max(0, t0 + 3.0 - time.monotonic()))
    assert os.listdir(rw) == []


def test_program_ending_before_the_timeout_keeps_its_status(box):
    t0 = time.monotonic()
    r = run(box, "timeout=10s\n", '''
        import sys
        print("OUT")
        print("ERR", file=sys.stderr)
        sys.exit(3)
        ''')
    assert (r.returncode, r.stdout) == (3, "OUT\n"), r
    assert "ERR" in r.stderr and "expired" not in r.stderr
    assert time.monotonic() - t0 < HANG_BOUND


def test_program_killed_by_a_signal_under_timeout_dies_the_same_way(box):
    r = run(box, "timeout=10s\n", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    assert r.returncode == -signal.SIGTERM, r
    assert "expired" not in r.stderr


def test_background_children_are_killed_when_the_program_ends(box):
    """After the program exits, the supervisor kills what it left behind."""
    rw = box.path("rw")
    t0 = time.monotonic()
    r = run(box, "timeout=10s\npython-api=ALLOW:process-exec\n", f'''
        import os, time
        if os.fork() == 0:
            os.setsid()
            time.sleep(1.5)
            open({str(rw / "LEFTOVER")!r}, "w").write("alive")
            os._exit(0)
        print("MAIN DONE")
        ''')
    assert (r.returncode, r.stdout) == (0, "MAIN DONE\n"), r
    time.sleep(max(0, t0 + 2.5 - time.monotonic()))
    assert os.listdir(rw) == []


def test_bad_limit_values(sb):
    marker = sb.path("RAN")
    p = sb.profile("os-sandbox=landlock\npython-import=*\nlimit-memory=abc\ntimeout=0\n"
                   "limit-cpu=10MB\n")
    s = sb.script(f"open({str(marker)!r}, 'w')\n")
    r = sb.run(s)
    assert r.returncode == EXIT_CONFIG, r
    errs = r.errors
    assert len(errs) == 3, errs
    assert errs[0].startswith(f"{p}:3: Invalid limit-memory 'abc'"), errs
    assert errs[1].startswith(f"{p}:4: Invalid timeout '0': must be greater than zero"), errs
    assert errs[2].startswith(f"{p}:5: Invalid limit-cpu '10MB'"), errs
    assert "duration is expected" in errs[2]
    assert not marker.exists()


@needs_landlock
def test_explain_lists_the_limits(sb):
    sb.profile("os-sandbox=landlock\nlimit-cpu=2s\nlimit-memory=1GB\nlimit-file-size=10KB\n"
               "limit-open-files=32\ntimeout=1500ms\n")
    out = sb.run("--explain", "-c", "pass").stdout
    for line in ("#   limit-cpu: 2000 ms", "#   limit-memory: 1000000000 bytes",
                 "#   limit-file-size: 10000 bytes", "#   limit-open-files: 32",
                 "#   timeout: 1500 ms"):
        assert line in out, out


# --------------------------------------------------------------------------
# limit-output (issue 12, finding 7)

EXIT_OUTPUT = 125


def test_output_limit_kills_at_the_first_byte_past_it(box):
    """stdout and stderr together; what is past the limit is not copied, the
    program and its children are killed, status 125."""
    rw = box.path("rw")
    t0 = time.monotonic()
    r = run(box, "limit-output=1000\npython-api=ALLOW:process-exec\n", f'''
        import os, sys, time
        sys.stdout.write("a" * 600)
        sys.stdout.flush()
        sys.stderr.write("b" * 300)
        sys.stderr.flush()
        if os.fork() == 0:           # a child's output counts too
            os.write(1, b"c" * 500)
            time.sleep(30)
            os._exit(0)
        time.sleep(2)
        open({str(rw / "AFTER")!r}, "w").write("the program ran on")
        ''')
    assert r.returncode == EXIT_OUTPUT, r
    assert ("python-sb: limit-output=1000B exceeded: the program and every process it "
            "started were killed") in r.stderr, r
    assert r.stdout.startswith("a" * 600) and set(r.stdout[600:]) <= {"c"}, r
    # Which pipe the supervisor read first is up to poll(): exactly 1000
    # bytes were copied, whatever their order.
    b_run = max(len(run_) for run_ in re.findall("b{2,}|$", r.stderr))
    assert len(r.stdout) + b_run == 1000, r
    assert time.monotonic() - t0 < HANG_BOUND
    assert not (rw / "AFTER").exists()


def test_output_within_the_limit_is_copied_whole_and_in_order(box):
    """Under the limit nothing changes but that stdout and stderr are pipes:
    the status is the program's, and stdout and stderr going to one file
    (2>&1) go through one pipe, so their order is kept."""
    box.profile(base(box) + "limit-output=1MB\n")
    s = box.script('''
        import sys
        for i in range(200):
            print("out", i, flush=True)
            print("err", i, file=sys.stderr, flush=True)
        sys.exit(7)
        ''')
    proc = subprocess.run([box.binary, str(s)], cwd=box.root, env={**box.env(), **SANITIZER_ENV},
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 7, proc
    want = "".join(f"out {i}\nerr {i}\n" for i in range(200))
    assert proc.stdout == want, proc.stdout[:300]


def test_output_limit_as_nobody_with_a_timeout(sb_nobody, provider):
    not_firejail_as_nobody(provider)
    sb = sb_nobody
    sb.kernel = provider
    sb.mkdir("rw")
    r = sb.run_code(base(sb) + "limit-output=10KB\ntimeout=20s\n", '''
        while True:
            print("y" * 99)
        ''')
    assert r.returncode == EXIT_OUTPUT, r
    assert len(r.stdout) == 10000 and "limit-output=10000B exceeded" in r.stderr, r


def test_output_limit_keeps_a_closed_reader_an_epipe(box):
    """The caller's reader goes away: the program gets EPIPE as it would have,
    and the supervisor is not killed by SIGPIPE."""
    box.profile(base(box) + "limit-output=1MB\n")
    s = box.script('''
        import sys, time
        try:
            for i in range(100000):
                print("z" * 100, flush=True)
        except BrokenPipeError:
            sys.stderr.write("EPIPE\\n")
            sys.stderr.flush()
            sys.stdout = None
            sys.exit(4)
        ''')
    p = subprocess.Popen([box.binary, str(s)], cwd=box.root,
                         env={**box.env(), **SANITIZER_ENV}, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    p.stdout.read(1000)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=30) == 4, err
    assert "EPIPE" in err, err


def test_explain_says_which_mechanism_holds_which_limit(sb):
    sb.profile("os-sandbox=landlock\nlimit-memory=1GB\nlimit-output=1MB\n")
    out = sb.run("--explain", "-c", "pass").stdout
    assert "#   limit-output: 1000000 bytes" in out, out
    assert "#   limit-output holds by: the supervisor counts" in out, out
    assert "#   limit-memory holds by: RLIMIT_AS (each process's address space)" in out, out
    assert "memfd_create and System V shared memory refused by seccomp" in out, out


def _memory_cgroup():
    """Whether python-sb can make a cgroup v2 with memory.max here."""
    try:
        line = [l for l in open("/proc/self/cgroup").read().splitlines()
                if l.startswith("0::")][0]
        for m in open("/proc/self/mountinfo").read().splitlines():
            if " - cgroup2 " in m:
                mnt = m.split()[4]
                ctl = open(os.path.join(mnt, line[3:].lstrip("/"), "cgroup.subtree_control"))
                return "memory" in ctl.read().split()
    except (OSError, IndexError):
        pass
    return False


@pytest.mark.skipif(not _memory_cgroup(), reason="no cgroup v2 memory controller is delegated "
                    "to this process's children: RLIMIT_AS is the only memory bound here")
def test_memory_limit_holds_for_the_whole_tree_with_a_cgroup(box):
    """Where a cgroup can be made, memory the address space does not show
    (a tmpfs file: the pages of /dev/shm or of an expose-rw in tmpfs) counts,
    and the kernel kills the tree at the limit."""
    if box.kernel in ("bwrap", "firejail"):
        pytest.skip("under a wrapper the inner python-sb sees no cgroup hierarchy: "
                    "RLIMIT_AS alone (docs/python-sb.md)")
    r = run(box, "limit-memory=300MB\n", '''
        import os
        print(open("/proc/self/cgroup").read().strip().rsplit("/", 1)[-1], flush=True)
        with open("/dev/null") as f:
            pass
        r, w = os.pipe()
        chunks = []
        while True:
            chunks.append(bytearray(50 * 1000 * 1000))
        ''')
    # unshare: the cgroup namespace's root is that cgroup, shown as "/".
    assert r.stdout.startswith(by(box, "python-sb.", "\n")), r
    assert "limit-memory=300000000B exceeded" in r.stderr or r.returncode != 0, r
