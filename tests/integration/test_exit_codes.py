# SPDX-License-Identifier: MIT
"""Exit status: the program's own, signals, sys.exit(msg), missing script."""

import signal

import pytest

from conftest import EXIT_USAGE

PROFILE = "os-sandbox=none\npython-import=sys,os,signal\n"


def test_normal_end_is_0(sb):
    r = sb.run_code(PROFILE, "print('DONE')\n")
    assert (r.returncode, r.stdout, r.stderr) == (0, "DONE\n", ""), r


@pytest.mark.parametrize("code", [3, 7, 120])
def test_script_exit_code_is_returned(sb, code):
    r = sb.run_code(PROFILE, f"import sys\nsys.exit({code})\n")
    assert r.returncode == code, r
    assert r.stderr == ""


def test_sys_exit_with_message_prints_it_and_exits_1(sb):
    r = sb.run_code(PROFILE, "import sys\nsys.exit('fatal: bad input')\n")
    assert r.returncode == 1, r
    assert r.stderr == "fatal: bad input\n"
    assert r.stdout == ""


def test_uncaught_exception_exits_1_with_traceback(sb):
    r = sb.run_code(PROFILE, "print('OUT-MARK')\nraise RuntimeError('X-MARK')\n")
    assert r.returncode == 1, r
    assert "RuntimeError: X-MARK" in r.stderr
    assert "Traceback (most recent call last):" in r.stderr
    # spec 10.7: the streams never cross.
    assert r.stdout == "OUT-MARK\n"
    assert "OUT-MARK" not in r.stderr


def test_traceback_names_the_real_script_path(sb):
    r = sb.run_code(PROFILE, "\n\nraise ValueError('where')\n")
    assert r.returncode == 1, r
    assert f'File "{sb.path("s.py")}", line 3, in <module>' in r.stderr


def test_stderr_and_stdout_markers_stay_on_their_stream(sb):
    r = sb.run_code(PROFILE, "import sys\nprint('TO-OUT')\n"
                             "print('TO-ERR', file=sys.stderr)\n")
    assert (r.returncode, r.stdout, r.stderr) == (0, "TO-OUT\n", "TO-ERR\n"), r


@pytest.mark.parametrize("provider", ["none", "subprocess"])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_death_by_signal_is_propagated(sb, provider, sig):
    marker = sb.path("AFTER")
    # os.kill is in python-api's process-control category, denied by default.
    r = sb.run_code(f"os-sandbox={provider}\npython-import=os,signal\n"
                    "python-api=ALLOW:os.kill\n",
                    f"import os, signal\nos.kill(os.getpid(), {int(sig)})\n"
                    f"open({str(marker)!r}, 'w')\n")
    # As with python: subprocess sees the same signal, not an exit status.
    assert r.returncode == -int(sig), r
    assert not marker.exists()


def test_missing_script_exits_2(sb):
    sb.profile(PROFILE)
    missing = sb.path("nope.py")
    r = sb.run(missing)
    assert r.returncode == EXIT_USAGE, r
    assert f"can't open file '{missing}': [Errno 2] No such file or directory" in r.stderr


def test_missing_script_args_are_not_run_as_code(sb):
    sb.profile(PROFILE)
    r = sb.run("nope.py", "-c", "print('NO')")
    assert r.returncode == EXIT_USAGE, r
    assert "can't open file" in r.stderr
    assert "NO" not in r.stdout


def test_c_command_exit_code(sb):
    sb.profile(PROFILE)
    r = sb.run("-c", "raise SystemExit(42)")
    assert (r.returncode, r.stderr) == (42, ""), r
