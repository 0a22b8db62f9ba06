# SPDX-License-Identifier: MIT
"""A program the profile lets the program run, outside the provider's view
of the files (issue 17, item 7): os.system with /usr/bin not exposed gave
status 32512 (the shell's 127) and nothing else. The guard checks the
program (os.system's shell, subprocess's executable, os.exec's path)
against the kernel's grants first and refuses with the rule to add."""

import shutil

import pytest

HAVE = {w: shutil.which(w) is not None for w in ("bwrap", "firejail")}


def provider_param(name):
    if name in HAVE:
        return pytest.param(name, marks=pytest.mark.skipif(
            not HAVE[name], reason=f"{name} is not installed"))
    return name


CONFINING = [provider_param(p) for p in ("landlock", "bwrap", "firejail")]
NOBODY = [provider_param(p) for p in ("landlock", "bwrap")]

SYSTEM = """\
import os, pysandboxes
try:
    print('STATUS', os.system('echo hi'))
except OSError as e:
    print('REFUSED', type(e).__name__)
    print('\\n'.join(pysandboxes.sandbox_denials(e)))
"""

POPEN = """\
import subprocess, pysandboxes
try:
    print('STATUS', subprocess.run(['/usr/bin/true']).returncode)
except OSError as e:
    print('REFUSED', type(e).__name__)
    print('\\n'.join(pysandboxes.sandbox_denials(e)))
"""


def profile(provider, extra=""):
    return (f"os-sandbox={provider}\npython-import=os, subprocess, pysandboxes\n"
            f"python-api=ALLOW:process-exec\n{extra}")


def check_refused(sb, provider, code):
    sb.profile(profile(provider))
    r = sb.run(sb.script(code))
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].startswith("REFUSED Rule"), r
    assert "Add 'expose-ro=/usr/bin' to" in lines[1], r
    assert "STATUS" not in r.stdout and "hi" not in lines, r


def check_runs_with_the_rule(sb, provider, code, expected):
    sb.profile(profile(provider, "expose-ro=/usr/bin\n"))
    r = sb.run(sb.script(code))
    assert (r.returncode, r.stdout) == (0, expected), r


@pytest.mark.parametrize("provider", CONFINING)
def test_os_system_without_the_shell_is_refused_with_the_rule(sb, provider):
    check_refused(sb, provider, SYSTEM)
    check_runs_with_the_rule(sb, provider, SYSTEM, "hi\nSTATUS 0\n")


@pytest.mark.parametrize("provider", NOBODY)
def test_os_system_without_the_shell_as_nobody(sb_nobody, provider):
    check_refused(sb_nobody, provider, SYSTEM)
    check_runs_with_the_rule(sb_nobody, provider, SYSTEM, "hi\nSTATUS 0\n")


@pytest.mark.parametrize("provider", CONFINING)
def test_subprocess_outside_the_grants_is_refused_with_the_rule(sb, provider):
    check_refused(sb, provider, POPEN)
    check_runs_with_the_rule(sb, provider, POPEN, "STATUS 0\n")


@pytest.mark.parametrize("provider", ["subprocess", "unshare"])
def test_providers_that_show_usr_bin_run_the_shell(sb, provider):
    """subprocess confines no file; unshare's new root has /usr whole."""
    sb.profile(profile(provider))
    r = sb.run(sb.script(SYSTEM))
    assert (r.returncode, r.stdout) == (0, "hi\nSTATUS 0\n"), r
