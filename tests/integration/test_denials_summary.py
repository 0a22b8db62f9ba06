# SPDX-License-Identifier: MIT
"""The refusals of a run summed up on stderr at exit (issue 17, item 4): a
program that catches every refusal (Path.glob over a refused directory gives
nothing, exit 0) must not look like it ran unrestricted."""

import pytest

PROFILE = "os-sandbox=subprocess\npython-import=pathlib, os\n"

# Two refusals the program swallows: a glob over a refused directory, an
# open of a refused file.
SWALLOWS = """\
import os, pathlib
print(sorted(pathlib.Path({outside!r}).glob('*')))
try:
    open(os.path.join({outside!r}, 'f'))
except OSError:
    pass
print('END')
"""


def prepare(sb):
    outside = sb.root.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "f").write_text("secret")
    sb._chown(outside) if sb.owner else None
    sb.profile(PROFILE)
    return outside, sb.script(SWALLOWS.format(outside=str(outside)))


def summary_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("python-sb: ")]


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_summary_line_names_the_count_and_the_first_rule(request, who):
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    outside, s = prepare(sb)
    r = sb.run(s)
    assert r.returncode == 0, r
    assert "[]" in r.stdout and "END" in r.stdout, r
    prof = sb.path(".py-sandboxes")
    assert summary_lines(r.stderr) == [
        f"python-sb: 2 operations were refused; the first needs 'expose-ro={outside}' in "
        f"'{prof}' (--denials lists them all; --no-denials-summary or "
        "PYSANDBOXES_NO_DENIALS_SUMMARY=1 turns this line off)"
    ], r


def test_denials_lists_every_refusal(sb):
    outside, s = prepare(sb)
    r = sb.run("--denials", s)
    assert r.returncode == 0, r
    lines = summary_lines(r.stderr)
    assert lines[0].startswith("python-sb: 2 operations were refused"), r
    assert lines[1:] == [
        f"python-sb: refused: Access to '{outside}' must be accepted by a rule. Add "
        f"'expose-ro={outside}' to '{sb.path('.py-sandboxes')}'",
        f"python-sb: refused: Access to '{outside}/f' must be accepted by a rule. Add "
        f"'expose-ro={outside}' to '{sb.path('.py-sandboxes')}'",
    ], r


def test_summary_off_by_flag_and_by_environment(sb):
    _, s = prepare(sb)
    r = sb.run("--no-denials-summary", s)
    assert r.returncode == 0 and "END" in r.stdout, r
    assert summary_lines(r.stderr) == [], r
    r = sb.run(s, env={"PYSANDBOXES_NO_DENIALS_SUMMARY": "1"})
    assert r.returncode == 0 and "END" in r.stdout, r
    assert summary_lines(r.stderr) == [], r


def test_no_summary_without_refusals_nor_for_an_uncaught_refusal(sb):
    sb.profile(PROFILE)
    r = sb.run(sb.script("print('fine')\n"))
    assert r.returncode == 0 and r.stderr == "", r
    # An uncaught refusal already says everything in its traceback: one
    # refusal, the summary still counts it (and nothing the traceback's
    # printing does on its own).
    r = sb.run(sb.script("import json\n"))
    assert r.returncode == 1, r
    assert summary_lines(r.stderr) == [
        "python-sb: 1 operation was refused; the first needs 'python-import=json' in "
        f"'{sb.path('.py-sandboxes')}' (--denials lists them all; --no-denials-summary or "
        "PYSANDBOXES_NO_DENIALS_SUMMARY=1 turns this line off)"
    ], r


# linecache looks for a traceback's source under a relative name (a Cython
# extension's "yaml/_yaml.pyx") in the current directory and in every sys.path
# entry, and takes any OSError for "not there": no rule to suggest. An
# absolute name is still a refusal like any other.
LINECACHE = """\
import linecache
print(repr(linecache.getline('pkg/_mod.pyx', 3)))
print(repr(linecache.getline({outside!r} + '/f', 1)))
"""


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_linecache_source_search_by_relative_name_is_no_denial(request, who):
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    outside, _ = prepare(sb)
    sb.profile("os-sandbox=subprocess\npython-import=linecache\n")
    r = sb.run("--denials", sb.script(LINECACHE.format(outside=str(outside)), "lc.py"))
    assert r.returncode == 0, r
    assert r.stdout.splitlines() == ["''", "''"], r
    lines = summary_lines(r.stderr)
    assert lines[0].startswith("python-sb: 1 operation was refused"), r
    assert lines[1:] == [
        f"python-sb: refused: Access to '{outside}/f' must be accepted by a rule. Add "
        f"'expose-ro={outside}' to '{sb.path('.py-sandboxes')}'"
    ], r
    assert "pkg" not in r.stderr, r
