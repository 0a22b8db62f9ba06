# SPDX-License-Identifier: MIT
"""python-sb --report=FILE (docs/report.md): every field, measured where the
docs say, exact where it can be exact, and there even when the program dies."""

import json
import os
import subprocess

import pytest

from conftest import (EXIT_CONFIG, EXIT_TIMEOUT, IS_ASAN, LANDLOCK_ABI, SANITIZER_ENV,
                      needs_landlock)

PROFILE = "os-sandbox=landlock\npython-import=sys, os, json\n"


def report_of(sb, code, *args, profile=PROFILE, **kw):
    sb.profile(profile)
    script = sb.script(code)
    path = sb.path("report.json")
    if path.exists():
        path.unlink()
    r = sb.run(f"--report={path}", script, *args, **kw)
    assert path.exists(), r
    return r, json.loads(path.read_text())


@needs_landlock
def test_every_field(sb):
    r, rep = report_of(sb, "import sys\nprint('hello')\nprint('e', file=sys.stderr)\n")
    assert r.returncode == 0 and r.stdout == "hello\n" and r.stderr == "e\n"
    assert rep["version"] == 1
    assert rep["exit_code"] == 0 and rep["signal"] is None and rep["signal_name"] is None
    assert rep["timed_out"] is False and rep["limit_exceeded"] is None
    assert set(rep["time"]) == {"wall_ms", "cpu_user_ms", "cpu_sys_ms"}
    assert rep["time"]["wall_ms"] >= rep["time"]["cpu_user_ms"] * 0  # present, numbers
    assert rep["memory"]["peak_rss_kb"] > 1000
    assert rep["memory"]["peak_python_alloc_bytes"] > 0
    assert rep["output"] == {"stdout_bytes": 6, "stderr_bytes": 2, "truncated": False}
    assert rep["denials"] == [] and rep["denials_total"] == 0
    prof = rep["profile"]
    assert set(prof) == {"functions", "functions_total", "file", "lines", "calls_total",
                         "exceptions_raised", "notes"}
    assert prof["file"] == str(sb.path("s.py"))
    assert prof["lines"] == {"1": 1, "2": 1, "3": 1}
    for f in prof["functions"]:
        assert set(f) == {"name", "file", "line", "calls", "own_ms", "cum_ms"}
    own = [f["own_ms"] for f in prof["functions"]]
    assert own == sorted(own, reverse=True)
    assert rep["python"].startswith("3.")
    assert rep["provider"] == "landlock"
    assert "exit_code" in rep["measured"]["outside"] and "profile" in rep["measured"]["inside"]


@needs_landlock
def test_exact_counts(sb):
    code = ("def fib(n):\n"
            "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
            "total = 0\n"
            "for i in range(7):\n"
            "    total += i\n"
            "for i in range(5):\n"
            "    try:\n"
            "        raise ValueError(i)\n"
            "    except ValueError:\n"
            "        pass\n"
            "print(fib(10), total)\n")
    r, rep = report_of(sb, code)
    assert r.stdout == "55 21\n"
    prof = rep["profile"]
    fib = [f for f in prof["functions"] if f["name"] == "fib"]
    assert len(fib) == 1
    assert fib[0]["calls"] == 177 and fib[0]["line"] == 1
    assert fib[0]["file"] == str(sb.path("s.py"))
    assert fib[0]["cum_ms"] >= fib[0]["own_ms"] > 0
    lines = prof["lines"]
    assert lines["2"] == 177           # fib's body, once per call
    assert lines["5"] == 7             # the loop body
    assert lines["4"] == 8             # the loop header: 7 times and the exit
    assert lines["8"] == 5 and lines["10"] == 5
    assert prof["exceptions_raised"] >= 5
    assert prof["calls_total"] >= 177


@needs_landlock
def test_denials_with_their_rules(sb):
    code = ("import os\n"
            "for f in (lambda: open('/etc/passwd'), lambda: __import__('socket'),\n"
            "          lambda: os.kill(1, 0), lambda: open('new.txt', 'w')):\n"
            "    try:\n"
            "        f()\n"
            "    except OSError:\n"
            "        pass\n"
            "    except ImportError:\n"
            "        pass\n")
    r, rep = report_of(sb, code, profile=PROFILE + f"expose-ro={sb.root}\n")
    assert r.returncode == 0, r
    got = [(d["kind"], d["subject"], d["rule_to_add"]) for d in rep["denials"]]
    assert got == [("file", "/etc/passwd", "expose-ro=/etc"),
                   ("import", "socket", "python-import=socket"),
                   ("api", "os.kill", "python-api=ALLOW:os.kill"),
                   ("file", "new.txt", f"expose-rw={sb.root}")]
    assert rep["denials_total"] == 4
    assert all(d["message"] for d in rep["denials"])


@needs_landlock
def test_uncaught_refusal_is_one_denial(sb):
    """CPython's display of the uncaught exception compiles the source line
    for its carets, which the guard refuses: that is the runtime's, not the
    program's, and is not listed."""
    r, rep = report_of(sb, "open('/etc/passwd')\n")
    assert r.returncode == 1
    assert [d["kind"] for d in rep["denials"]] == ["file"]


@needs_landlock
def test_killed_by_timeout_still_has_its_profile(sb):
    r, rep = report_of(sb, "i = 0\nwhile True:\n    i += 1\n",
                       profile=PROFILE + "timeout=700ms\n")
    assert r.returncode == EXIT_TIMEOUT
    assert rep["timed_out"] is True and rep["limit_exceeded"] == "timeout"
    assert rep["exit_code"] is None and rep["signal_name"] == "SIGKILL"
    assert rep["time"]["wall_ms"] >= 700
    assert rep["profile"]["lines"]["3"] > 1000
    assert rep["profile"]["lines"]["2"] == rep["profile"]["lines"]["3"] or \
        rep["profile"]["lines"]["2"] == rep["profile"]["lines"]["3"] + 1


@needs_landlock
def test_os_exit_and_signals_are_measured_outside(sb):
    r, rep = report_of(sb, "import os\nos._exit(7)\n")
    assert r.returncode == 7 and rep["exit_code"] == 7 and rep["profile"]["lines"]
    r, rep = report_of(sb, "import os\nos.kill(os.getpid(), 9)\n",
                       profile=PROFILE + "python-api=ALLOW:os.kill\n")
    assert r.returncode == -9
    assert rep["exit_code"] is None and rep["signal"] == 9 and rep["signal_name"] == "SIGKILL"
    assert rep["limit_exceeded"] is None


@needs_landlock
@pytest.mark.skipif(IS_ASAN, reason="an ASan build cannot bound its address space")
def test_limits_named(sb):
    r, rep = report_of(sb, "while True:\n    pass\n", profile=PROFILE + "limit-cpu=1s\n")
    assert rep["limit_exceeded"] == "cpu" and rep["signal_name"] == "SIGKILL"
    r, rep = report_of(sb, "x = bytearray(10**10)\n", profile=PROFILE + "limit-memory=300MB\n")
    assert rep["limit_exceeded"] == "memory" and rep["exit_code"] == 1


@needs_landlock
def test_peak_python_allocation(sb):
    r, small = report_of(sb, "x = 1\n")
    r, big = report_of(sb, "x = [bytes(1000) for _ in range(50_000)]\ndel x\n")
    assert big["memory"]["peak_python_alloc_bytes"] >= 50_000_000
    assert small["memory"]["peak_python_alloc_bytes"] < 5_000_000


@needs_landlock
def test_the_hooks_are_unreachable_and_absent_without_a_report(sb):
    code = ("import sys\n"
            "print(sys.gettrace(), sys.getprofile())\n"
            "print(any('python-sb-report' in l for l in open('/proc/self/maps')))\n")
    profile = PROFILE + "expose-ro=/proc\n"
    r, rep = report_of(sb, code, profile=profile)
    assert r.stdout == "None None\nTrue\n", r
    sb.profile(profile)
    r = sb.run(sb.script(code))
    assert r.stdout == "None None\nFalse\n", r


@needs_landlock
def test_the_program_cannot_touch_the_report_file(sb):
    r, rep = report_of(sb, f"open({str(sb.path('report.json'))!r}, 'w').write('{{}}')\n")
    assert r.returncode == 1
    assert rep["exit_code"] == 1 and rep["denials"][0]["kind"] == "file"


def test_report_fd(sb):
    sb.profile(PROFILE)
    script = sb.script("print('x')\n")
    out = sb.path("fd.json")
    fd = os.open(out, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        env = sb.env()
        env.update(SANITIZER_ENV)
        proc = subprocess.run([sb.binary, f"--report-fd={fd}", str(script)], pass_fds=[fd],
                              capture_output=True, text=True, cwd=sb.root, timeout=60, env=env)
    finally:
        os.close(fd)
    assert proc.returncode == 0 and proc.stdout == "x\n"
    assert json.loads(out.read_text())["output"]["stdout_bytes"] == 2


def test_report_errors_stop_before_the_program(sb):
    sb.profile(PROFILE)
    marker = sb.path("ran")
    script = sb.script(f"open({str(marker)!r}, 'w')\n")
    r = sb.run("--report=/nonexistent/dir/r.json", script)
    assert r.returncode == EXIT_CONFIG
    assert "--report=/nonexistent/dir/r.json: No such file or directory" in r.stderr
    assert not marker.exists()
    r = sb.run("--report-fd=1", script)
    assert r.returncode == EXIT_CONFIG and "above 2" in r.stderr
    r = sb.run("--report-fd=99", script)
    assert r.returncode == EXIT_CONFIG and "--report-fd=99" in r.stderr
    r = sb.run("--report")
    assert r.returncode == 2 and "--report requires a file name" in r.stderr


@needs_landlock
def test_nobody(sb_nobody):
    r, rep = report_of(sb_nobody, "print(1)\n")
    assert r.returncode == 0 and rep["exit_code"] == 0 and rep["output"]["stdout_bytes"] == 2


@pytest.mark.parametrize("profile", ["os-sandbox=none\npython-import=sys\n",
                                     "os-sandbox=landlock\npy-sandbox=false\n"],
                         ids=["guard alone", "kernel alone"])
def test_each_layer_alone(sb, profile):
    if "landlock" in profile and not LANDLOCK_ABI:
        pytest.skip("the kernel has no Landlock")
    r, rep = report_of(sb, "import sys\nfor i in range(3):\n    pass\nsys.exit(4)\n",
                       profile=profile)
    assert r.returncode == 4 and rep["exit_code"] == 4
    assert rep["profile"]["lines"] == {"1": 1, "2": 4, "3": 3, "4": 1}
    assert rep["provider"] == ("none" if "none" in profile else "landlock")
    assert rep["denials"] == []
