# SPDX-License-Identifier: MIT
"""The other names of python-sb (spec section 2, issue 17 item 8): ipython-sb
and ipython3-sb (IPython as the program, in a private IPython directory), and
`python -m pysandboxes.python_sb`."""

import os
import subprocess

import pytest

from conftest import LANDLOCK_ABI, SANITIZER_ENV, TIMEOUT

PROVIDER = "landlock" if LANDLOCK_ABI >= 1 else "subprocess"
# IPython writes /dev/null at import and starts threads.
IPYTHON_PROFILE = f"os-sandbox={PROVIDER}\npython-import=*\npython-api=ALLOW:*\nexpose-rw=/dev\n"
SESSION = ("x = 40 + 2\nprint('answer', x)\nimport os\n"
           "print('dir', os.environ['IPYTHONDIR'], os.environ['HOME'])\n")


def _has_ipython():
    return subprocess.run(["/usr/bin/python3", "-c", "import IPython"],
                          capture_output=True).returncode == 0


needs_ipython = pytest.mark.skipif(not _has_ipython(), reason="IPython is not installed "
                                   "(scripts/deps.sh test installs python3-ipython)")


def _run_as(sb, name, args, input):
    link = sb.path(name)
    if not link.exists():
        link.symlink_to(sb.binary)
    env = sb.env()
    env.update(SANITIZER_ENV)
    return subprocess.run(sb.prefix + [str(link)] + args, cwd=str(sb.root), capture_output=True,
                          text=True, timeout=180, env=env, input=input)


def _check_session(sb, name):
    startup = sb.mkdir(".ipython/profile_default/startup")
    sb.write(str((startup / "00-home.py").relative_to(sb.root)), "print('STARTUP-RAN')\n")
    sb.profile(IPYTHON_PROFILE)
    p = _run_as(sb, name, ["--", "--no-banner"], SESSION)
    assert p.returncode == 0, p.stderr
    assert "answer 42" in p.stdout
    line = next(x for x in p.stdout.splitlines() if "dir " in x)
    ipdir, home = line.split("dir ", 1)[1].split()
    assert ipdir == home and os.path.basename(ipdir).startswith("ipython-sb.")
    # The user's ~/.ipython (HOME is the sandbox root here) is never read.
    assert "STARTUP-RAN" not in p.stdout
    # The private directory is gone with the session.
    assert not os.path.exists(ipdir)


@needs_ipython
@pytest.mark.parametrize("name", ["ipython-sb", "ipython3-sb"])
def test_ipython_sb(sb, name):
    _check_session(sb, name)


@needs_ipython
def test_ipython_sb_as_nobody(sb_nobody):
    _check_session(sb_nobody, "ipython-sb")


@needs_ipython
def test_ipython_sb_keeps_the_rules(sb):
    """The sandbox options before `--` are rules, with priority over the
    file's."""
    sb.profile(IPYTHON_PROFILE)
    p = _run_as(sb, "ipython-sb", ["--python-api=DENY:os.system", "--", "--no-banner"],
                "import os\nos.system('true')\n")
    assert "RuleApiPermissionError" in p.stdout + p.stderr
    assert "os.system" in p.stdout + p.stderr


def test_python_m_pysandboxes_python_sb(sb, pysandboxes_dir):
    sb.profile("os-sandbox=subprocess\npython-import=json\n")
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "PYTHONPATH": pysandboxes_dir,
           "PYSANDBOXES_PYTHON_SB": sb.binary, **SANITIZER_ENV}
    p = subprocess.run(["/usr/bin/python3", "-m", "pysandboxes.python_sb", "-c",
                        "import json, pysandboxes; print(json.dumps(1), "
                        "pysandboxes.is_in_sandbox())"],
                       cwd=str(sb.root), capture_output=True, text=True, timeout=TIMEOUT,
                       env=env, stdin=subprocess.DEVNULL)
    assert (p.returncode, p.stdout) == (0, "1 True\n"), p.stderr
    p = subprocess.run(["/usr/bin/python3", "-m", "pysandboxes.python_sb", "-c", "import csv"],
                       cwd=str(sb.root), capture_output=True, text=True, timeout=TIMEOUT,
                       env=env, stdin=subprocess.DEVNULL)
    assert p.returncode == 1
    assert "Module named 'csv' is not allowed by a rule" in p.stderr
