# SPDX-License-Identifier: MIT
"""Profile errors: every error is reported at once, sorted, as `  file:line: msg`
after the ConfigSyntaxError header; exit 255; the program does not run."""

import os

import pytest

from conftest import CONFIG_ERROR_HEADER, EXIT_CONFIG, sort_key

BASE = "os-sandbox=none\npython-import=*\n"


def refused(sb, profile, *args, env=None, files=None):
    """Write `profile` (plus `files`), run a script that would create MARK, and
    check the launch was refused.  Returns (result, errors with the profile's
    path replaced by 'P' and the work dir by 'W')."""
    p = sb.profile(profile)
    for rel, text in (files or {}).items():
        sb.write(rel, text)
    marker = sb.path("MARK")
    s = sb.script(f"open({str(marker)!r}, 'w')\n")
    r = sb.run(*args, s, env=env)
    assert r.returncode == EXIT_CONFIG, r
    assert CONFIG_ERROR_HEADER in r.stderr.splitlines(), r
    assert not marker.exists(), "the program ran although the profile is invalid"
    errors = [e.replace(str(p), "P").replace(str(sb.root), "W") for e in r.errors]
    return r, errors


def accepted(sb, profile, *args, env=None, files=None):
    sb.profile(profile)
    for rel, text in (files or {}).items():
        sb.write(rel, text)
    s = sb.script("print('RAN')\n")
    r = sb.run(*args, s, env=env)
    assert (r.returncode, r.stdout) == (0, "RAN\n"), r
    return r


# ---- lexical -------------------------------------------------------------

def test_invalid_rule(sb):
    _, errs = refused(sb, BASE + "this is not a rule\n")
    assert errs == ["P:3: Invalid rule 'this is not a rule'"]


def test_unknown_key_is_invalid_rule(sb):
    _, errs = refused(sb, BASE + "colour=blue\n")
    assert errs == ["P:3: Invalid rule 'colour=blue'"]


@pytest.mark.parametrize("line,closest", [
    ("expose_ro=/tmp", "expose-ro"),
    ("python-imports=json", "python-import"),
    ("os_sandbox=none", "os-sandbox"),
])
def test_unknown_key_names_the_closest_key(sb, line, closest):
    # Issue 17, item 7.
    key, value = line.split("=", 1)
    _, errs = refused(sb, BASE + line + "\n")
    assert errs == [f"P:3: Invalid rule '{line}': unknown key '{key}', closest known key is "
                    f"'{closest}'"]


def test_unknown_key_on_the_command_line_names_the_closest_key(sb):
    sb.profile(BASE)
    r = sb.run("--python-imports=json", "-c", "pass")
    assert r.errors == ["<command line>:1: Invalid rule '--python-imports=json': unknown key "
                        "'python-imports', closest known key is 'python-import'"], r


def test_comments_blank_and_template_lines_are_ignored(sb):
    accepted(sb, "# a comment\n\n   \n{{ template line }}\n" + BASE
             + "python-import=json # trailing comment\n")


def test_hash_inside_quotes_is_not_a_comment(sb):
    sb.profile(BASE + "env=Q=\"x#y\"\n")
    r = sb.run("-c", "import os; print(os.environ['Q'])")
    assert r.returncode == 0, r
    assert "x#y" in r.stdout


# ---- single-value keys ---------------------------------------------------

@pytest.mark.parametrize("key,v1,v2", [
    ("os-sandbox", "none", "subprocess"),
    ("py-sandbox", "true", "false"),
    ("port", "8000", "8001"),
    ("remote-result-mode", "data-only", "objects"),
    ("remote-result-guard", "true", "false"),
])
def test_multiple_scalar_across_includes(sb, key, v1, v2):
    profile = f"python-import=*\n{key}={v1}\ninclude \"inc.prof\"\n"
    _, errs = refused(sb, profile, files={"inc.prof": f"{key}={v2}\n"})
    # Issue 17, item 7: where the first one is.
    assert errs == [f"W/inc.prof:1: Multiple {key} parameters (first at P:2)"]


def test_multiple_learn_across_includes(sb):
    _, errs = refused(sb, BASE + "learn=a.txt\ninclude \"inc.prof\"\n",
                      files={"inc.prof": "learn=b.txt\n"})
    assert errs == ["W/inc.prof:1: Multiple learn parameters (first at P:3)"]


def test_command_line_scalar_overrides_file_without_error(sb):
    sb.profile("python-import=*\nos-sandbox=firejail\n")
    r = sb.run("--os-sandbox=none", "-c", "print('OVERRIDDEN')")
    assert (r.returncode, r.stdout) == (0, "OVERRIDDEN\n"), r


# ---- variable expansion --------------------------------------------------

@pytest.mark.parametrize("form", ["${A:B}", "${A:=x}"])
def test_bad_expansion_form(sb, form):
    _, errs = refused(sb, BASE + f"env=X={form}\n")
    assert errs == [f"P:3: invalid variable expansion '{form}'"]


def test_bad_expansion_in_non_env_rule(sb):
    _, errs = refused(sb, BASE + "expose-ro=${HOME:x}\n")
    assert errs == ["P:3: invalid variable expansion '${HOME:x}'"]


def test_unterminated_expansion(sb):
    _, errs = refused(sb, BASE + "env=X=${B\n")
    assert errs == ["P:3: unterminated variable expansion '${B'"]


def test_substituted_value_is_not_expanded_again(sb):
    # The host value looks like a bad expansion: were it expanded again it
    # would be a ConfigSyntaxError; it must arrive verbatim instead.
    sb.profile(BASE + "env=X=${Y}\n")
    r = sb.run("-c", "import os; print(os.environ['X'])", env={"Y": "${A:B}${HOME}"})
    assert (r.returncode, r.stdout) == (0, "${A:B}${HOME}\n"), r


def test_expansion_selects_os_sandbox(sb):
    sb.profile("python-import=*\nos-sandbox=${OSB:-none}\n")
    r = sb.run("-c", "print('DEFAULTED')")
    assert (r.returncode, r.stdout) == (0, "DEFAULTED\n"), r
    _, errs = refused(sb, "python-import=*\nos-sandbox=${OSB:-none}\n", env={"OSB": "foo"})
    assert len(errs) == 1 and errs[0].startswith("P:2: Invalid os-sandbox 'foo'")


# ---- includes ------------------------------------------------------------

def test_missing_include_is_skipped(sb):
    accepted(sb, BASE + "include \"does-not-exist.prof\"\n"
             "include \"/nonexistent/dir/x.prof\"\n")


def test_include_bare_name_is_next_to_including_file(sb):
    sb.profile("os-sandbox=none\ninclude \"inner.prof\"\n", rel="conf/a/main.prof")
    sb.write("conf/a/inner.prof", "python-import=colorsys\n")
    sb.write("inner.prof", "python-import=json\n")  # the cwd decoy
    r = sb.run("--pysandboxes-config", sb.path("conf/a/main.prof"), "-c",
               "import colorsys; print('NEXT-TO')")
    assert (r.returncode, r.stdout) == (0, "NEXT-TO\n"), r


def test_include_dot_slash_is_from_cwd(sb):
    sb.profile("os-sandbox=none\ninclude \"./local.prof\"\n", rel="conf/main.prof")
    sb.write("local.prof", "python-import=colorsys\n")
    r = sb.run("--pysandboxes-config", sb.path("conf/main.prof"), "-c",
               "import colorsys; print('CWD')")
    assert (r.returncode, r.stdout) == (0, "CWD\n"), r


def test_include_tilde_is_home(sb):
    sb.profile("os-sandbox=none\ninclude \"~/.config/py-sandboxes/user.profile\"\n")
    sb.write(".config/py-sandboxes/user.profile", "python-import=colorsys\n")
    r = sb.run("-c", "import colorsys; print('HOME')", env={"HOME": str(sb.root)})
    assert (r.returncode, r.stdout) == (0, "HOME\n"), r


def test_include_self_loop_loaded_once(sb):
    # Loaded twice, os-sandbox= would be a "Multiple" error.
    accepted(sb, BASE + "include \".py-sandboxes\"\n")


def test_include_mutual_loop_loaded_once(sb):
    accepted(sb, BASE + "include \"b.prof\"\n",
             files={"b.prof": "port=9000\ninclude \"c.prof\"\n",
                    "c.prof": "include \"b.prof\"\ninclude \"../work/.py-sandboxes\"\n"})


def test_include_directory_is_error(sb):
    sb.mkdir("adir")
    _, errs = refused(sb, BASE + "include \"adir\"\n")
    assert errs == [f"P:3: '{sb.path('adir')}' is a directory, not a rule file"
                    .replace(str(sb.root), "W")]


def test_malformed_include(sb):
    _, errs = refused(sb, BASE + "include \"unterminated\n")
    assert errs == ["P:3: Invalid include: expected include \"path\""]


def test_unreadable_include_is_error(sb_nobody):
    sb = sb_nobody
    inc = sb.write("secret.prof", "python-import=json\n")
    os.chown(inc, 0, 0)
    os.chmod(inc, 0)
    _, errs = refused(sb, BASE + "include \"secret.prof\"\n")
    assert errs == ["P:3: cannot read include 'W/secret.prof': Permission denied"]


# ---- net= ----------------------------------------------------------------

def test_net_four_fields(sb):
    _, errs = refused(sb, BASE + "net=ALLOW|tcp|*|80\n")
    assert len(errs) == 1 and errs[0].startswith("P:3: Invalid net rule 'ALLOW|tcp|*|80'")
    assert "incorrect number of parts" in errs[0] and "Expected 5" in errs[0]


@pytest.mark.parametrize("ports,why", [("70000", "out of the range 0..65535"),
                                       ("90-80", "inverted")])
def test_net_bad_port_list(sb, ports, why):
    _, errs = refused(sb, BASE + f"net=ALLOW|tcp|*|{ports}|OUT\n")
    assert len(errs) == 1 and errs[0].startswith(f"P:3: Invalid net rule 'ALLOW|tcp|*|{ports}|OUT'")
    assert f"invalid port list '{ports}'" in errs[0] and why in errs[0]


def test_net_valid_port_forms_accepted(sb):
    accepted(sb, BASE + "net=ALLOW|tcp|127.0.0.1|80,8000-8002,443|OUT\n"
             "net=ALLOW|udp|::1|8000-|IN\nnet=DENY|*|10.0.0.0/8|*|*\n"
             "net=ALLOW|tcp|127.0.0.1||OUT\n")


# ---- python-api= ---------------------------------------------------------

@pytest.mark.parametrize("rule,fragment", [
    ("ALLOW:threadz", "unknown category 'threadz', closest known name is 'threads'"),
    ("ALLOW:os.systemm", "'os.systemm', closest known name is 'os.system'"),
    ("threads", "missing action"),
    ("PERMIT:threads", "unknown action 'PERMIT'"),
    ("ALLOW:threads,DENY:os.system", "do not mix ALLOW and DENY"),
    ("ALLOW:", "empty target"),
    ("ALLOW:threads,", "empty target"),
    ("", "empty 'python-api=' value"),
])
def test_python_api_errors(sb, rule, fragment):
    _, errs = refused(sb, BASE + f"python-api={rule}\n")
    assert len(errs) == 1, errs
    assert errs[0].startswith(f"P:3: Invalid python-api '{rule}'"), errs
    assert fragment in errs[0]


# ---- eval-* --------------------------------------------------------------

def test_eval_syntax_typo_suggests(sb):
    _, errs = refused(sb, BASE + "eval-syntax=lop\n")
    assert errs == ["P:3: In 'eval-syntax=lop': unknown syntax token 'lop', "
                    "closest known token is 'loop'"]


def test_eval_timeout_with_size_unit(sb):
    _, errs = refused(sb, BASE + "eval-timeout=10MB\n")
    assert len(errs) == 1 and errs[0].startswith("P:3: In 'eval-timeout=10MB':"), errs
    assert "duration" in errs[0]


def test_eval_namespace_lists_modes(sb):
    _, errs = refused(sb, BASE + "eval-namespace=open\n")
    assert len(errs) == 1 and errs[0].startswith("P:3: In 'eval-namespace=open'"), errs
    assert all(m in errs[0] for m in ("adaptive", "closed", "caller"))


def test_eval_same_scalar_twice(sb):
    _, errs = refused(sb, BASE + "eval-timeout=1s\neval-timeout=2s\n")
    assert len(errs) == 1 and errs[0].startswith("P:4: Multiple eval-timeout parameters"), errs


def test_eval_syntax_pattern_refused(sb):
    _, errs = refused(sb, BASE + "eval-syntax=Bin*\n")
    assert len(errs) == 1 and errs[0].startswith("P:3: In 'eval-syntax=Bin*'"), errs


def test_eval_unknown_key_suggests(sb):
    _, errs = refused(sb, BASE + "eval-sintax=arith\n")
    assert errs == ["P:3: unknown key 'eval-sintax', closest known key is 'eval-syntax'"]


# ---- expose-* ------------------------------------------------------------

def test_expose_ro_nonexistent(sb):
    _, errs = refused(sb, BASE + "expose-ro=/nonexistent-sb-dir\n")
    assert len(errs) == 1, errs
    assert errs[0].startswith("P:3: expose-ro='/nonexistent-sb-dir': the directory must exist")


def test_expose_ro_file(sb):
    f = sb.write("plain.txt", "x")
    _, errs = refused(sb, BASE + f"expose-ro={f}\n")
    assert errs == ["P:3: expose-ro='W/plain.txt': must be a directory"]


def test_expose_ro_two_paths(sb):
    _, errs = refused(sb, BASE + "expose-ro=/usr,/etc\n")
    assert len(errs) == 1 and errs[0].startswith("P:3: Invalid expose-ro '/usr,/etc'"), errs
    assert "single path" in errs[0]


def test_expose_ro_and_rw_same_dir(sb):
    sb.mkdir("data")
    _, errs = refused(sb, BASE + f"expose-ro={sb.path('data')}\nexpose-rw={sb.path('data')}\n")
    assert errs == ["P:4: 'W/data' is exposed both read-only and read-write (see P:3)"]


def test_expose_relative_resolved_from_cwd(sb):
    sb.mkdir("data")
    accepted(sb, BASE + "expose-ro=data\nexpose-rw=.\n")


# ---- learning ------------------------------------------------------------

@pytest.mark.parametrize("value", ["true", "1", "0"])
def test_learn_boolean_refused(sb, value):
    _, errs = refused(sb, BASE + f"learn={value}\n")
    assert errs == [f"P:3: Invalid learn '{value}'. Use the filename instead (learn=<file>)"]


def test_learn_false_lock_refuses_cli_learn(sb):
    _, errs = refused(sb, BASE + "learn=false\n", "--learn")
    assert errs == ["P:3: learning mode is forbidden, but requested by --learn on the "
                    "command line"]


def test_learn_false_lock_refuses_any_cli_rule(sb):
    _, errs = refused(sb, BASE + "learn=false\n", "--expose-ro=/etc")
    assert len(errs) == 1 and errs[0].startswith(
        "P:3: learning mode is forbidden, but requested by rules on the command line"), errs


def test_learn_false_lock_alone_runs(sb):
    accepted(sb, BASE + "learn=false\n")


def test_learn_false_only_in_a_file(sb):
    sb.profile(BASE)
    r = sb.run("--learn=false", "-c", "print('NO')")
    assert r.returncode == EXIT_CONFIG, r
    assert r.errors == ["<command line>:1: learn=false is a lock that only a rule file can set"]


def test_learn_file_runs_learning(sb):
    # More in test_learning.py.
    sb.profile(BASE + f"learn={sb.path('learned.prof')}\n")
    marker = sb.path("MARK")
    r = sb.run("-c", f"open({str(marker)!r}, 'w')")
    assert r.returncode == 0, r
    assert "LEARNING MODE" in r.stderr
    assert marker.exists()
    assert "expose-rw=." in sb.path("learned.prof").read_text()


def test_cli_learn_runs_learning(sb):
    sb.profile(BASE)
    marker = sb.path("MARK")
    r = sb.run("--learn", "-c", f"open({str(marker)!r}, 'w')")
    assert r.returncode == 0, r
    assert "LEARNING MODE" in r.stderr
    assert marker.exists()


def test_learn_with_py_sandbox_false_runs(sb):
    accepted(sb, BASE + f"learn={sb.path('learned.prof')}\npy-sandbox=false\n")


def test_learn_parent_dir_must_exist(sb):
    _, errs = refused(sb, BASE + "learn=/nonexistent-sb-dir/l.prof\n")
    assert errs == ["P:3: learn='/nonexistent-sb-dir/l.prof': the directory "
                    "'/nonexistent-sb-dir' must exist"]


# ---- other keys ----------------------------------------------------------

def test_os_sandbox_unknown(sb):
    _, errs = refused(sb, "python-import=*\nos-sandbox=foo\n")
    assert len(errs) == 1 and errs[0].startswith("P:2: Invalid os-sandbox 'foo'"), errs


@pytest.mark.parametrize("rule,msg", [
    ("py-sandbox=maybe", "Invalid py-sandbox 'maybe'"),
    ("port=70000", "Invalid port '70000'"),
    ("remote-result-mode=xx", "Invalid remote-result-mode 'xx'"),
    ("env=1BAD=x", "Invalid environment variable name '1BAD'"),
    ("python-import=", "python-import= needs module names or '*'"),
])
def test_other_invalid_values(sb, rule, msg):
    _, errs = refused(sb, BASE + rule + "\n")
    assert len(errs) == 1 and errs[0].startswith(f"P:3: {msg}"), errs


def test_dotted_python_import_is_a_warning(sb):
    r = accepted(sb, BASE + "python-import=xml.dom\n")
    assert (f"python-sb: warning: {sb.path('.py-sandboxes')}:3: python-import takes "
            "top-level names: 'xml.dom' never matches, write 'xml'") in r.stderr


def test_command_line_errors_use_command_line_origin(sb):
    sb.profile(BASE)
    r = sb.run("--bad=1", "--port=70000", "--os-sandbox=foo", "-c", "pass")
    assert r.returncode == EXIT_CONFIG, r
    errs = r.errors
    assert errs[0] == "<command line>:1: Invalid rule '--bad=1'"
    assert errs[1].startswith("<command line>:2: Invalid port '70000'")
    assert errs[2].startswith("<command line>:3: Invalid os-sandbox 'foo'")
    assert len(errs) == 3


# ---- all together --------------------------------------------------------

def test_all_syntax_errors_reported_together_sorted(sb):
    profile = ("os-sandbox=none\n"
               "include \"z-inc.prof\"\n"
               "include \"a-inc.prof\"\n"
               "bogus line\n"
               "env=A=${A:B}\n"
               "net=ALLOW|tcp|*|80\n"
               "python-api=ALLOW:threadz\n"
               "eval-syntax=lop\n"
               "learn=true\n"
               "expose-ro=/usr,/etc\n")
    _, errs = refused(sb, profile, files={"z-inc.prof": "\n\nos-sandbox=subprocess\n",
                                          "a-inc.prof": "also bogus\n"})
    assert errs == sorted(errs, key=sort_key)
    assert len(errs) == 9, errs
    assert errs[-1] == "W/z-inc.prof:3: Multiple os-sandbox parameters (first at P:1)"
    assert "W/a-inc.prof:1: Invalid rule 'also bogus'" in errs
    assert [e.split(":")[1] for e in errs if e.startswith("P:")] == \
        ["4", "5", "6", "7", "8", "9", "10"]


def test_semantic_and_syntax_errors_reported_together(sb):
    # The directory checks (must exist / must be a directory / ro+rw) are
    # errors like the others: with a syntax error in the same file, all of them
    # must still be printed in the one sorted report.
    f = sb.write("plain.txt", "x")
    profile = (BASE + "expose-ro=/nonexistent-sb-dir\n"
               "bogus line\n"
               f"expose-ro={f}\n")
    _, errs = refused(sb, profile)
    assert len(errs) == 3, errs
    assert errs[0].startswith("P:3: expose-ro='/nonexistent-sb-dir': the directory must exist")
    assert errs[1] == "P:4: Invalid rule 'bogus line'"
    assert errs[2] == "P:5: expose-ro='W/plain.txt': must be a directory"
