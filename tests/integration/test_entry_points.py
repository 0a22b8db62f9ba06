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


# ---- where IPython cannot run: the plain REPL (spec section 2) ---------------
# These need no IPython: each rule that keeps IPython out is checked before
# IPython would be looked for, so the fallback runs whether it is installed
# or not.

PLAIN_SESSION = "import json\nprint('answer', json.dumps(40 + 2))\n"


def _plain(sb, profile, reason):
    sb.profile(profile)
    p = _run_as(sb, "ipython-sb", ["--", "--no-banner"], PLAIN_SESSION)
    assert p.returncode == 0, p.stderr
    assert "answer 42" in p.stdout, p.stdout + p.stderr
    note = [line for line in p.stderr.splitlines() if "IPython is not used" in line]
    assert note == [f"python-sb: IPython is not used: {reason}; the plain REPL runs "
                    "(IPython's options are ignored)"], p.stderr
    # No private directory was made for a session that does not use it.
    assert "IPYTHONDIR" not in p.stdout


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_ipython_sb_without_the_import_runs_the_plain_repl(request, who):
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    _plain(sb, f"os-sandbox={PROVIDER}\npython-import=json\npython-api=ALLOW:threads\n",
           "python-import= does not allow IPython")


def test_ipython_sb_without_threads_runs_the_plain_repl(sb):
    _plain(sb, f"os-sandbox={PROVIDER}\npython-import=IPython, json\n",
           "python-api= does not allow threads, which IPython needs "
           "(python-api=ALLOW:threads)")


@pytest.mark.parametrize("layer", ["py-sandbox=false", "os-sandbox=none"])
def test_ipython_sb_fallback_with_one_layer(sb, layer):
    """The decision is the rules', whichever layer enforces them."""
    os_sandbox = "none" if layer == "os-sandbox=none" else PROVIDER
    extra = "py-sandbox=false\n" if layer == "py-sandbox=false" else ""
    _plain(sb, f"os-sandbox={os_sandbox}\n{extra}python-import=json\npython-api=ALLOW:threads\n",
           "python-import= does not allow IPython")


def test_ipython_sb_under_learn_false_runs_the_plain_repl(sb):
    """learn=false refuses command-line rules: the private directory's
    grants cannot be added, so no IPython (and no refusal to start)."""
    _plain(sb, IPYTHON_PROFILE + "learn=false\n",
           "learn=false refuses the command-line grants of IPython's private directory "
           "(declare env=IPYTHONDIR=<dir> and expose-rw=<dir> in the profile to use IPython)")


@needs_ipython
def test_ipython_sb_under_learn_false_uses_the_declared_directory(sb):
    ipdir = sb.mkdir("ipdir")
    sb.profile(IPYTHON_PROFILE + f"learn=false\nexpose-rw={ipdir}\nenv=IPYTHONDIR={ipdir}\n"
               f"env=HOME={ipdir}\n")
    p = _run_as(sb, "ipython-sb", ["--", "--no-banner"], SESSION)
    assert p.returncode == 0, p.stderr
    assert "answer 42" in p.stdout
    assert f"dir {ipdir} {ipdir}" in p.stdout, p.stdout
    assert "IPython is not used" not in p.stderr


# ---- IPython stopped by a refusal: the plain REPL (spec section 2) ----------
# A stand-in IPython package in the cwd (sys.path[0], which python-import=
# grants to both layers): the choice and the fallback run whether the real
# IPython is installed or not.

FAKE_MAIN = "import sys, os\nprint('FAKE-IPYTHON', sys.argv[1:], os.environ['IPYTHONDIR'] != '')\n"


def _fake_ipython(sb, init):
    sb.write("IPython/__init__.py", init)
    sb.write("IPython/__main__.py", FAKE_MAIN)


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_ipython_sb_runs_ipython_with_its_options(request, who):
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    _fake_ipython(sb, "")
    sb.profile(f"os-sandbox={PROVIDER}\npython-import=IPython, sys, os\n"
               "python-api=ALLOW:threads\n")
    p = _run_as(sb, "ipython-sb", ["--", "--no-banner", "x"], "")
    assert (p.returncode, p.stdout) == (0, "FAKE-IPYTHON ['--no-banner', 'x'] True\n"), p.stderr


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_ipython_sb_refused_at_start_runs_the_plain_repl(request, who):
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    _fake_ipython(sb, "import colorsys\n")
    sb.profile(f"os-sandbox={PROVIDER}\npython-import=IPython, json\n"
               "python-api=ALLOW:threads\n")
    p = _run_as(sb, "ipython-sb", ["--", "--no-banner"], PLAIN_SESSION)
    assert p.returncode == 0, p.stderr
    assert "answer 42" in p.stdout, p.stdout + p.stderr
    assert "python-sb: IPython stopped: RuleModuleNotFoundError: Module named 'colorsys' is " \
        "not allowed by a rule. Add 'python-import=colorsys'" in p.stderr, p.stderr
    assert "; the plain REPL runs" in p.stderr
    assert "FAKE-IPYTHON" not in p.stdout


def test_ipython_sb_other_errors_end_the_session(sb):
    """Only a refusal of the sandbox falls back: IPython's own error ends the
    session as under ipython."""
    _fake_ipython(sb, "raise ValueError('broken install')\n")
    sb.profile(f"os-sandbox={PROVIDER}\npython-import=IPython, json\n"
               "python-api=ALLOW:threads\n")
    p = _run_as(sb, "ipython-sb", [], PLAIN_SESSION)
    assert p.returncode == 1, p.stderr
    assert "ValueError: broken install" in p.stderr
    assert "answer 42" not in p.stdout
