# SPDX-License-Identifier: MIT
"""Which rule file is used: --pysandboxes-config, next to the script, the -m
module's directory, else ./.py-sandboxes.  Each test checks the choice both by
its effect (which import is allowed) and, where useful, with --explain."""

import os

import pytest

from conftest import EXIT_CONFIG


ALLOWS = "os-sandbox=none\npython-import=colorsys\n"   # the profile we expect
DENIES = "os-sandbox=none\npython-import=json\n"       # a decoy
PROBE = "import colorsys\nprint('CHOSEN')\n"


def rule_file(r):
    for line in r.stdout.splitlines():
        if line.startswith("# rule file: "):
            return line[len("# rule file: "):]
    raise AssertionError(f"no '# rule file:' line in {r!r}")


def test_profile_next_to_script_beats_cwd(sb):
    sb.profile(DENIES)                       # ./.py-sandboxes (cwd)
    sb.profile(ALLOWS, rel="app/.py-sandboxes")
    s = sb.script(PROBE, rel="app/main.py")
    r = sb.run(s)
    assert (r.returncode, r.stdout) == (0, "CHOSEN\n"), r
    assert rule_file(sb.run("--explain", s)) == str(sb.path("app/.py-sandboxes"))


def test_relative_script_path_uses_its_directory(sb):
    sb.profile(DENIES)
    sb.profile(ALLOWS, rel="app/.py-sandboxes")
    sb.script(PROBE, rel="app/main.py")
    r = sb.run("app/main.py")
    assert (r.returncode, r.stdout) == (0, "CHOSEN\n"), r


def test_cwd_profile_when_script_dir_has_none(sb):
    sb.profile(ALLOWS)
    s = sb.script(PROBE, rel="other/main.py")
    r = sb.run(s)
    assert (r.returncode, r.stdout) == (0, "CHOSEN\n"), r


def test_cwd_profile_for_c(sb):
    sb.profile(ALLOWS)
    r = sb.run("-c", PROBE)
    assert (r.returncode, r.stdout) == (0, "CHOSEN\n"), r
    assert rule_file(sb.run("--explain", "-c", "pass")) == str(sb.path(".py-sandboxes"))


@pytest.mark.parametrize("form", ["separate", "equals"])
def test_pysandboxes_config_beats_script_dir(sb, form):
    sb.profile(DENIES, rel="app/.py-sandboxes")
    p = sb.profile(ALLOWS, rel="conf/rules")
    s = sb.script(PROBE, rel="app/main.py")
    args = ["--pysandboxes-config", p] if form == "separate" else [f"--pysandboxes-config={p}"]
    r = sb.run(*args, s)
    assert (r.returncode, r.stdout) == (0, "CHOSEN\n"), r


def test_m_package_directory_profile(sb):
    sb.profile(DENIES)
    sb.profile(ALLOWS, rel="pkg/.py-sandboxes")
    sb.write("pkg/__init__.py", "")
    sb.write("pkg/__main__.py", PROBE)
    r = sb.run("-m", "pkg")
    assert (r.returncode, r.stdout) == (0, "CHOSEN\n"), r
    assert rule_file(sb.run("--explain", "-m", "pkg")) == str(sb.path("pkg/.py-sandboxes"))


def test_m_submodule_uses_its_package_directory(sb):
    sb.profile(DENIES)
    sb.profile(ALLOWS, rel="pkg/sub/.py-sandboxes")
    sb.write("pkg/__init__.py", "")
    sb.write("pkg/sub/__init__.py", "")
    sb.write("pkg/sub/tool.py", PROBE)
    r = sb.run("-m", "pkg.sub.tool")
    assert (r.returncode, r.stdout) == (0, "CHOSEN\n"), r


def test_m_namespace_package(sb):
    sb.profile(DENIES)
    sb.profile(ALLOWS, rel="nsp/inner/.py-sandboxes")   # no __init__.py anywhere
    sb.write("nsp/inner/__main__.py", PROBE)
    r = sb.run("-m", "nsp.inner")
    assert (r.returncode, r.stdout) == (0, "CHOSEN\n"), r


def test_m_module_found_through_pythonpath(sb):
    sb.profile(DENIES)
    sb.profile(ALLOWS + "env=PYTHONPATH=${PYTHONPATH}\n", rel="lib/tools/.py-sandboxes")
    sb.write("lib/tools/__init__.py", "")
    sb.write("lib/tools/__main__.py", PROBE)
    r = sb.run("-m", "tools", env={"PYTHONPATH": str(sb.path("lib"))})
    assert (r.returncode, r.stdout) == (0, "CHOSEN\n"), r


def test_m_pythonpath_ignored_under_E(sb):
    sb.profile(ALLOWS)
    sb.profile(DENIES, rel="lib/tools/.py-sandboxes")
    sb.write("lib/tools/__init__.py", "")
    r = sb.run("-E", "--explain", "-m", "tools", env={"PYTHONPATH": str(sb.path("lib"))})
    assert r.returncode == 0, r
    assert rule_file(r) == str(sb.path(".py-sandboxes"))


def test_m_unknown_module_falls_back_to_cwd(sb):
    sb.profile(ALLOWS)
    r = sb.run("--explain", "-m", "no_such_module_xyz")
    assert r.returncode == 0, r
    assert rule_file(r) == str(sb.path(".py-sandboxes"))


def test_missing_explicit_config_learns_into_it(sb):
    # A missing rule file starts learning mode (spec §3.2, §6), into that file.
    marker = sb.path("MARK")
    r = sb.run("--pysandboxes-config", sb.path("absent"), "-c", f"open({str(marker)!r}, 'w')")
    assert r.returncode == 0, r
    assert "LEARNING MODE" in r.stderr
    assert marker.exists()
    assert "expose-rw=." in sb.path("absent").read_text()


@pytest.mark.parametrize("where", ["beside", "explicit"])
def test_rule_file_linked_to_nothing_is_an_error_not_learning(sb, where):
    """A .py-sandboxes that is a link to nothing (a profile on a share that
    is not mounted) is not an absent profile: learning mode would run the
    program unconfined. The run stops; nothing is written."""
    marker = sb.path("MARK")
    s = sb.script(f"open({str(marker)!r}, 'w')\n", rel="app/main.py")
    link = sb.path("app/.py-sandboxes")
    os.symlink("/nonexistent/share/app.py-sandboxes", link)
    args = ["--pysandboxes-config", str(link)] if where == "explicit" else []
    r = sb.run(*args, s)
    assert r.returncode == EXIT_CONFIG, r
    assert "symbolic link to a file that does not exist" in r.stderr, r
    assert "LEARNING MODE" not in r.stderr
    assert not marker.exists()
    assert os.path.islink(link) and not os.path.exists(link)


def test_no_learn_option_refuses_a_missing_rule_file(sb):
    """python-sb serve's runs start with --pysandboxes-no-learn: a rule file
    gone between the service's check and the start is an error, never
    learning mode (no confinement)."""
    marker = sb.path("MARK")
    r = sb.run("--pysandboxes-config", sb.path("absent"), "--pysandboxes-no-learn", "-c",
               f"open({str(marker)!r}, 'w')")
    assert r.returncode == EXIT_CONFIG, r
    assert "this run cannot learn: its rule file does not exist" in r.stderr, r
    assert "LEARNING MODE" not in r.stderr
    assert not marker.exists() and not sb.path("absent").exists()


def test_no_rule_file_anywhere_learns_into_cwd(sb):
    marker = sb.path("MARK")
    s = sb.script(f"open({str(marker)!r}, 'w')\n", rel="app/main.py")
    r = sb.run(s)
    assert r.returncode == 0, r
    assert f"Write all learning rules in '{sb.path('.py-sandboxes')}'" in r.stderr
    assert not sb.path("app/.py-sandboxes").exists()


def test_no_rule_file_but_py_sandbox_false_runs(sb):
    r = sb.run("--py-sandbox=false", "-c", "import os; print('UNGUARDED')")
    assert (r.returncode, r.stdout) == (0, "UNGUARDED\n"), r
