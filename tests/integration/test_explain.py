# SPDX-License-Identifier: MIT
"""--explain: the effective policy, each rule with file:line and its layer; exit 0
without running the program."""

import re

from conftest import EXIT_CONFIG, LANDLOCK_ABI

GUARD = "[Python guard (C audit hook)]"
LAUNCHER = "[launcher: environment built before the interpreter starts]"
PENDING = "[parsed and validated; NOT enforced by this version]"
EVAL_GUARD = "[eval guard: checked and rewritten in C, budgets at run time]"


def explain(sb, *args, env=None, term=None, stderr=""):
    marker = sb.path("MARK")
    s = sb.script(f"open({str(marker)!r}, 'w')\n")
    r = sb.run("--explain", *args, s, env=env, term=term)
    assert r.returncode == 0, r
    assert r.stderr == stderr, r
    assert not marker.exists(), "--explain ran the program"
    assert r.stdout.startswith("# Effective python-sb policy\n")
    return r.stdout


def rule(out, text):
    """The explain line for rule `text`: (origin, layer)."""
    for line in out.splitlines():
        m = re.fullmatch(r"(\S+)\s+# (.+?)  \[(.*)\]", line)
        if m and m.group(1) == text:
            return m.group(2), "[" + m.group(3) + "]"
    raise AssertionError(f"no explain line for {text!r} in:\n{out}")


def test_rules_with_origin_and_layer(sb):
    p = sb.profile("os-sandbox=none\npython-import=json\nenv=FOO=bar\n"
                   "net=ALLOW|tcp|127.0.0.1|80|OUT\npython-api=ALLOW:threads\n")
    out = explain(sb)
    assert f"# rule file: {p}\n" in out
    assert rule(out, "os-sandbox=none") == (f"{p}:1", "[none: plain Python in this process]")
    assert rule(out, "python-import=json") == (f"{p}:2", GUARD)
    assert rule(out, "env=FOO=bar") == (f"{p}:3", LAUNCHER)
    assert rule(out, "net=ALLOW|tcp|127.0.0.1|80|OUT") == (f"{p}:4", GUARD)
    assert rule(out, "python-api=ALLOW:threads") == (f"{p}:5", GUARD)


def test_defaults_are_marked(sb):
    sb.profile("python-import=json\n")
    out = explain(sb)
    assert rule(out, "py-sandbox=true") == ("default", "[launcher]")
    assert rule(out, "os-sandbox=auto")[0] == "default"
    expected = "landlock" if LANDLOCK_ABI >= 1 else "subprocess"
    assert f"#   provider in use: {expected}\n" in out


def test_command_line_rules_have_priority_and_origin(sb):
    sb.profile("os-sandbox=subprocess\npython-import=json\n")
    out = explain(sb, "--python-import=colorsys", "--os-sandbox=none")
    assert rule(out, "python-import=colorsys") == ("<command line>:1", GUARD)
    assert rule(out, "os-sandbox=none")[0] == "<command line>:2"
    assert "#   provider in use: none\n" in out
    assert "os-sandbox=subprocess" not in out


def test_includes_are_listed_and_cited(sb):
    p = sb.profile("os-sandbox=none\ninclude \"more.prof\"\n")
    inc = sb.write("more.prof", "\npython-import=colorsys\n")
    out = explain(sb)
    assert f"# read: {p}\n" in out and f"# read: {inc}\n" in out
    assert rule(out, "python-import=colorsys") == (f"{inc}:2", GUARD)


def test_resulting_environment_names(sb):
    sb.profile("os-sandbox=none\nenv=FOO=bar\nenv=USER=${USER}\nenv=GONE=${UNSET_SB}\n")
    out = explain(sb, env={"USER": "alice", "SECRET": "x"}, term="xterm")
    names = re.search(r"^#   resulting names:(.*)$", out, re.M).group(1).split()
    assert sorted(names) == ["FOO", "TERM", "USER"]


def test_no_import_rule_is_spelled_out(sb):
    sb.profile("os-sandbox=none\n")
    out = explain(sb)
    assert "#   no python-import rule: the program may import nothing\n" in out


def test_import_star_and_dotted(sb):
    p = sb.profile("os-sandbox=none\npython-import=*\npython-import=xml.dom\n")
    out = explain(sb, stderr=f"python-sb: warning: {p}:3: python-import takes top-level "
                  "names: 'xml.dom' never matches, write 'xml'\n")
    assert rule(out, "python-import=*") == (f"{p}:2", GUARD)
    assert rule(out, "python-import=xml.dom") == (f"{p}:3", "[never matches: dotted name]")


def test_py_sandbox_false_and_expose(sb):
    d = sb.mkdir("data")
    p = sb.profile(f"os-sandbox=none\npy-sandbox=false\nexpose-ro={d}\n")
    out = explain(sb)
    assert rule(out, "py-sandbox=false") == (f"{p}:2", "[launcher]")
    # Nothing enforces it: no guard, and no Landlock with os-sandbox=none.
    assert rule(out, f"expose-ro={d}") == (f"{p}:3", "[not enforced: py-sandbox=false]")


def test_eval_rules_are_shown_in_profile_syntax(sb):
    # Every explain line must read back as the rule it stands for: the
    # namespace mode by name, the timeout with a unit (a bare number is seconds).
    p = sb.profile("os-sandbox=none\neval-syntax=arith\neval-namespace=closed\n"
                   "eval-timeout=2s\n")
    out = explain(sb)
    assert rule(out, "eval-syntax=arith") == (f"{p}:2", EVAL_GUARD)
    assert rule(out, "eval-namespace=closed") == (f"{p}:3", EVAL_GUARD)
    assert any(rule_exists(out, f"eval-timeout={v}") for v in ("2s", "2000ms", "2")), out
    # The eval guard is a part of the Python guard.
    p = sb.profile("os-sandbox=none\npy-sandbox=false\neval-syntax=arith\n")
    out = explain(sb)
    assert rule(out, "eval-syntax=arith") == (f"{p}:3", "[not enforced: py-sandbox=false]")


def rule_exists(out, text):
    try:
        rule(out, text)
        return True
    except AssertionError:
        return False


def test_explain_refuses_invalid_profile(sb):
    sb.profile("os-sandbox=none\nbogus\n")
    r = sb.run("--explain", "-c", "pass")
    assert r.returncode == EXIT_CONFIG, r
    assert r.errors == [f"{sb.path('.py-sandboxes')}:2: Invalid rule 'bogus'"]
    assert "Effective python-sb policy" not in r.stdout


def test_partial_mode_keys_name_the_result_guard(sb):
    # remote-result-* are enforced by the caller's result guard since partial
    # mode exists: --explain must not call them pending any more.
    p = sb.profile("os-sandbox=none\nremote-result-mode=objects\nport=8000\n")
    out = explain(sb)
    assert rule(out, "remote-result-mode=objects") == (
        f"{p}:2", "[partial mode: the caller's result guard]")
    assert rule(out, "remote-result-guard=true") == (
        "default", "[partial mode: the caller's result guard]")
    origin, layer = rule(out, "port=8000")
    assert origin == f"{p}:3" and "socketpair" in layer and "NOT enforced" not in layer


def test_learning_shows_the_profiles_provider_and_the_one_in_use(sb):
    """Learning runs under subprocess; the profile's own os-sandbox line is shown
    as written (it used to read os-sandbox=subprocess, cited at a line that says
    landlock)."""
    p = sb.profile("os-sandbox=landlock\npython-import=json\n")
    marker = sb.path("MARK")
    s = sb.script(f"open({str(marker)!r}, 'w')\n")
    r = sb.run("--learn=learned.prof", "--explain", s)
    assert r.returncode == 0, r
    assert "LEARNING MODE" in r.stderr
    assert not marker.exists()
    out = r.stdout
    assert rule(out, "os-sandbox=landlock") == (
        f"{p}:1", "[none: the Python guard only (no kernel boundary)]")
    assert "#   os-sandbox=landlock does not apply while learning\n" in out
    assert "#   provider in use: subprocess\n" in out
    assert "#   no Landlock ruleset with this provider\n" in out


def test_provider_parameters_are_checked(sb):
    """Each provider checks its own parameters, whichever provider is in use."""
    sb.profile("os-sandbox=none\nqemu.memry=2048\n")
    r = sb.run("--explain", "-c", "pass")
    assert r.returncode == EXIT_CONFIG, r
    assert "Unknown qemu parameter 'memry', closest known parameter is 'memory'" in r.stderr

    sb.profile("os-sandbox=none\nbwrap.share_net=yes\nqemu.memory=4096\n")
    r = sb.run("--explain", "-c", "pass")
    assert r.returncode == 0, r
    assert "bwrap.share_net is passed to bwrap as it is: did you mean bwrap.share-net?" in r.stderr
    assert rule(r.stdout, "qemu.memory=4096")[1] == PENDING
