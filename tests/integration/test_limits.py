# SPDX-License-Identifier: MIT
"""limit-* (hard rlimits set before the interpreter starts) and timeout (a
supervisor that kills the whole process tree and exits 124), run under
os-sandbox=landlock and os-sandbox=unshare with py-sandbox=false so that only
the kernel acts."""

import errno
import os
import signal
import time

import pytest

from conftest import EXIT_CONFIG, EXIT_TIMEOUT, needs_landlock, needs_userns, not_under_asan

PROVIDERS = [pytest.param("landlock", marks=needs_landlock),
             pytest.param("unshare", marks=needs_userns)]


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
    if os.geteuid() != 0 or box.kernel == "unshare":
        # Root keeps CAP_SYS_RESOURCE (documented: no limit binds root),
        # except under unshare, where the program has no capability.
        assert r.stdout.splitlines()[1] == "raise refused", r


def test_cpu_limit_kills_a_busy_loop(box):
    """soft = hard, so the kernel sends SIGKILL at the limit (SIGXCPU only
    comes while the soft limit is below the hard one): python-sb, which is
    the program's process, dies of SIGKILL."""
    t0 = time.monotonic()
    r = run(box, "limit-cpu=1s\n", '''
        import resource
        print(resource.getrlimit(resource.RLIMIT_CPU), flush=True)
        while True:
            pass
        ''')
    elapsed = time.monotonic() - t0
    assert r.returncode == -signal.SIGKILL, r
    assert r.stdout == "(1, 1)\n", r
    assert 0.8 < elapsed < 5, elapsed


def test_cpu_limit_rounds_milliseconds_up(box):
    r = run(box, "limit-cpu=1500ms\n", '''
        import resource
        print(resource.getrlimit(resource.RLIMIT_CPU))
        ''')
    assert (r.returncode, r.stdout) == (0, "(2, 2)\n"), r


def test_cpu_limit_kill_is_mirrored_through_the_timeout_supervisor(box):
    """With a timeout the program runs in the supervisor's child: its death by
    SIGKILL is reported the same way, not as a timeout."""
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
    assert ("python-sb: timeout=1000ms expired: the program and every process it started "
            "were killed") in r.stderr
    assert 0.9 < elapsed < 5, elapsed


def test_timeout_kills_a_sleeping_program(box):
    t0 = time.monotonic()
    r = run(box, "timeout=500ms\n", "import time\ntime.sleep(30)\n")
    assert r.returncode == EXIT_TIMEOUT, r
    assert "timeout=500ms expired" in r.stderr
    assert time.monotonic() - t0 < 5


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
    assert time.monotonic() - t0 < 5


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
