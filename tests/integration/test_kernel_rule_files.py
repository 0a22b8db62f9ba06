# SPDX-License-Identifier: MIT
"""The files python-sb takes rules from stay out of the program's reach
(issue 12, finding 8, kernel half). Landlock cannot take one file out of a
granted directory, so a layout where an expose-rw directory holds a rule
file, an include, a missing include, or the .py-sandboxes the lookup would
try first, is refused before anything runs; the program never gets to
rewrite the next run's rules."""

import os

import pytest

from conftest import EXIT_CONFIG, needs_landlock

pytestmark = needs_landlock

MARK = "PROGRAM-RAN"


def refused(r, grant, what, path, missing=False):
    assert r.returncode == EXIT_CONFIG, r
    assert MARK not in r.stdout, r
    want = (f"python-sb: the sandbox cannot be applied: expose-rw={grant} at ")
    assert want in r.stderr, r
    assert (f"lets the program {'create' if missing else 'change'} the rule file {path}"
            in r.stderr), r
    assert "Landlock cannot take one file out of a granted directory" in r.stderr, r


@pytest.mark.parametrize("who", ["caller", "nobody"])
def test_rule_file_inside_a_writable_grant_is_refused(sb, sb_nobody, who):
    box = sb if who == "caller" else sb_nobody
    p = box.profile("os-sandbox=landlock\npy-sandbox=false\nexpose-rw=.\n")
    r = box.run_code(p.read_text(), f"print({MARK!r})")
    refused(r, ".", "rule file", os.path.realpath(p))
    # The profile is untouched: nothing ran.
    assert p.read_text() == "os-sandbox=landlock\npy-sandbox=false\nexpose-rw=.\n"


def test_an_include_inside_a_writable_grant_is_refused(sb):
    sb.mkdir("out")
    sb.write("out/extra.inc", "python-import=json\n")
    sb.profile('os-sandbox=landlock\nexpose-rw=./out\ninclude "./out/extra.inc"\n')
    r = sb.run("-c", f"print({MARK!r})")
    refused(r, "./out", "include", os.path.realpath(sb.path("out/extra.inc")))


def test_a_missing_include_inside_a_writable_grant_is_refused(sb):
    """The program could create it, and the next run would read it."""
    sb.mkdir("out")
    sb.profile('os-sandbox=landlock\nexpose-rw=./out\ninclude "./out/later.inc"\n')
    r = sb.run("-c", f"print({MARK!r})")
    refused(r, "./out", "include", os.path.realpath(sb.path("out")) + "/later.inc",
            missing=True)


def test_a_profile_the_lookup_would_prefer_is_refused(sb):
    """The script lives in the writable directory, the profile in the cwd:
    a .py-sandboxes next to the script would win the next lookup."""
    sb.mkdir("app")
    sb.write("app/s.py", f"print({MARK!r})\n")
    sb.profile("os-sandbox=landlock\nexpose-rw=./app\n")
    r = sb.run("app/s.py")
    refused(r, "./app", "lookup", os.path.realpath(sb.path("app")) + "/.py-sandboxes",
            missing=True)
    out = sb.run("--explain", "app/s.py").stdout
    assert "#   REFUSED, the program will not run: expose-rw=./app at" in out, out


@pytest.mark.parametrize("who", ["caller", "nobody"])
def test_control_rule_files_outside_the_grants_run(sb, sb_nobody, who):
    """The same program with the writable directory beside the rule files:
    it runs, and cannot touch the profile (Landlock: EACCES)."""
    box = sb if who == "caller" else sb_nobody
    box.mkdir("out")
    p = box.profile("os-sandbox=landlock\npy-sandbox=false\nexpose-rw=./out\n")
    before = p.read_text()
    r = box.run_code(before, f'''
        import os
        open("out/result.txt", "w").write("ok")
        for what, fn in (("append", lambda: open(".py-sandboxes", "a")),
                         ("rename", lambda: os.rename(".py-sandboxes", "out/x")),
                         ("unlink", lambda: os.unlink(".py-sandboxes"))):
            try:
                fn()
                print(what, "OK")
            except OSError as e:
                print(what, e.errno)
        print({MARK!r})
        ''')
    assert r.returncode == 0, r
    assert r.stdout.splitlines() == ["append 13", "rename 13", "unlink 13", MARK], r
    assert p.read_text() == before
    assert box.path("out/result.txt").read_text() == "ok"
