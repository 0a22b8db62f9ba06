# SPDX-License-Identifier: MIT
"""A program run in learning mode chooses the names the learned profile is
written from (file names, module names, host names, classes): none of them
may make the profile grant more than the program used. Each test runs as
root and as nobody."""

import pytest

from test_learning import block, rules

WHO = ["root", "nobody"]


def _sb(request, who):
    return request.getfixturevalue("sb" if who == "root" else "sb_nobody")


def _learned_rules(sb):
    """The rule lines of the learned profile, whatever block holds them."""
    return rules(sb.path(".py-sandboxes"))


def _no_control_characters(text):
    return not any(ord(c) < 0x20 and c != "\n" for c in text) and "\x7f" not in text


# ---- a newline in a name starts no rule -------------------------------------

NEWLINE_DIR = '''\
import os
d = os.path.join(os.getcwd(), "x\\npython-api=ALLOW:* #")
os.makedirs(d, exist_ok=True)
open(os.path.join(d, "f"), "w").write("x")
print("DONE")
'''


@pytest.mark.parametrize("who", WHO)
def test_newline_in_a_directory_name_writes_no_rule(request, who):
    sb = _sb(request, who)
    s = sb.script(NEWLINE_DIR)
    r = sb.run("--learn", s)
    assert r.returncode == 0 and "DONE" in r.stdout, r
    learned = _learned_rules(sb)
    assert not any("ALLOW:*" in line for line in learned), learned
    files = block(sb.path(".py-sandboxes"), "learning_guard_files")
    assert (f"# '{sb.path()}/x\\x0apython-api=ALLOW:* #' was used, but its name cannot be "
            "written in a rule") in files, files
    # The learned profile is what it says: it loads, without that grant.
    r = sb.run("--explain", s)
    assert r.returncode == 0 and "ALLOW:*" not in r.stdout, r


@pytest.mark.parametrize("who", WHO)
def test_trailing_space_directory_is_not_learned_as_its_neighbour(request, who):
    sb = _sb(request, who)
    sb.mkdir("data")
    sb.write("data/secret", "s")
    s = sb.script('''\
        import os
        os.makedirs("data ", exist_ok=True)
        open("data /f", "w").write("x")
        print("DONE")
        ''')
    r = sb.run("--learn", s)
    assert r.returncode == 0 and "DONE" in r.stdout, r
    learned = _learned_rules(sb)
    # 'expose-rw=./data ' would be read back as ./data, which it never used.
    assert not any(line.rstrip().endswith("/data") for line in learned), learned
    assert f"# '{sb.path()}/data ' was used, but its name cannot be written in a rule" in \
        block(sb.path(".py-sandboxes"), "learning_guard_files")


# ---- module names --------------------------------------------------------------

IMPORTS = '''\
for n in ["*", "m1, m2", "a\\nexpose-rw=~ #"]:
    try:
        __import__(n)
    except ImportError as e:
        print(type(e).__name__, str(e).splitlines()[0][:60])
print("DONE")
'''


@pytest.mark.parametrize("who", WHO)
def test_names_no_import_spells_are_refused_not_learned(request, who):
    sb = _sb(request, who)
    s = sb.script(IMPORTS)
    r = sb.run("--learn", s)
    assert r.returncode == 0 and "DONE" in r.stdout, r
    # Refused while learning, as on the next run; no rule is offered for them.
    assert r.stdout.count("RuleModuleNotFoundError Module named") == 3, r
    assert "Add 'python-import=*'" not in r.stderr, r
    learned = _learned_rules(sb)
    assert not any(line.startswith("python-import=") for line in learned), learned
    assert not any(line.startswith("expose-rw=~") for line in learned), learned


def test_refusal_of_a_name_no_import_spells_suggests_no_rule(sb):
    sb.profile("os-sandbox=subprocess\n")
    s = sb.script("__import__('*')\n")
    r = sb.run(s)
    assert r.returncode == 1, r
    assert "Module named '*' is not allowed: it is not a module name, and no rule allows it" \
        in r.stderr, r
    assert "python-import=*" not in r.stderr, r


# ---- host names ----------------------------------------------------------------

@pytest.mark.parametrize("who", WHO)
def test_a_host_named_star_is_learned_as_its_address(request, who):
    sb = _sb(request, who)
    # glibc resolves '*' (to the loopback); 'net=...|*|...' is every host.
    s = sb.script('''\
        import socket
        try:
            socket.create_connection(("*", 9), timeout=2)
        except OSError as e:
            print(type(e).__name__)
        print("DONE")
        ''')
    r = sb.run("--learn", s)
    assert r.returncode == 0 and "DONE" in r.stdout, r
    nets = [line for line in _learned_rules(sb) if line.startswith("net=")]
    assert nets, r
    for line in nets:
        host = line.split("|")[2]
        assert host in ("127.0.0.1", "::1"), nets


# ---- system directories --------------------------------------------------------

@pytest.mark.parametrize("who", WHO)
def test_a_write_in_a_top_level_directory_is_not_learned(request, who):
    sb = _sb(request, who)
    # A file written straight in /tmp and removed: the rule would be
    # expose-rw=/tmp (or ${TMPDIR:-/tmp}), every user's temporary files.
    s = sb.script('''\
        import os
        p = "/tmp/sb-learn-top-%d" % os.getpid()
        open(p, "w").write("x")
        os.unlink(p)
        print("DONE")
        ''')
    r = sb.run("--learn", s, env={"TMPDIR": "/tmp"})
    assert r.returncode == 0 and "DONE" in r.stdout, r
    learned = _learned_rules(sb)
    assert not any(line in ("expose-rw=/tmp", "expose-rw=${TMPDIR:-/tmp}") for line in learned), \
        learned
    assert ("# '/tmp' was written to: no rule should grant writing in a system or top-level "
            "directory, write elsewhere") in block(sb.path(".py-sandboxes"),
                                                   "learning_guard_files")
    assert ("python-sb: warning: '/tmp' was written to: no rule should grant writing in a "
            "system or top-level directory, write elsewhere (not learned)") in r.stderr, r


# ---- what python-sb prints -----------------------------------------------------

@pytest.mark.parametrize("who", WHO)
def test_denials_are_printed_one_line_each_without_control_characters(request, who):
    sb = _sb(request, who)
    sb.profile("os-sandbox=subprocess\npython-import=os\n")
    outside = sb.root.parent / "outside"
    s = sb.script(f'''\
        import os
        for name in ["a\\x1b]0;owned\\x07", "b\\npython-sb: refused: nothing"]:
            try:
                open(os.path.join({str(outside)!r}, name))
            except OSError:
                pass
        ''')
    r = sb.run("--denials", s)
    assert r.returncode == 0, r
    assert _no_control_characters(r.stderr), repr(r.stderr)
    refused = [line for line in r.stderr.splitlines() if line.startswith("python-sb: refused: ")]
    assert len(refused) == 2, r.stderr
    assert "a\\x1b]0;owned\\x07" in refused[0], refused
    assert "b\\x0apython-sb: refused: nothing" in refused[1], refused
