# SPDX-License-Identifier: MIT
"""Command-line splitting, help/version, usage errors and CPython pass-through."""

import re

import pytest

from conftest import EXIT_CONFIG, EXIT_USAGE

ALLOW_SYS = "os-sandbox=none\npython-import=sys,json\n"


@pytest.mark.parametrize("flag", ["-h", "-?", "--help"])
def test_help_prints_usage_and_exits_0(sb, flag):
    sb.profile(ALLOW_SYS)
    marker = sb.path("MARK")
    r = sb.run(flag, "-c", f"open({str(marker)!r}, 'w')")
    assert r.returncode == 0, r
    assert r.stdout.startswith("usage: python-sb"), r
    assert "--pysandboxes-config" in r.stdout
    assert "Py-sandboxes parameters, they have priority" in r.stdout
    assert "-c cmd" in r.stdout and "-m mod" in r.stdout
    assert not marker.exists()


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(sb, flag):
    r = sb.run(flag)
    assert r.returncode == 0, r
    assert re.fullmatch(r"Python 3\.11\.\d+ \(python-sb 0\.1\.0\)\n", r.stdout), r


def test_version_twice_is_verbose(sb):
    r = sb.run("-VV")
    assert r.returncode == 0, r
    assert re.match(r"Python 3\.11\.\d+ .*\(python-sb 0\.1\.0\)$", r.stdout.strip()), r
    assert "[" in r.stdout  # the compiler / build line of Py_GetVersion()


@pytest.mark.parametrize("opt", ["-c", "-m", "-W", "-X"])
def test_option_without_argument_is_usage_error(sb, opt):
    sb.profile(ALLOW_SYS)
    r = sb.run(opt)
    assert r.returncode == EXIT_USAGE, r
    assert f"Argument expected for the {opt} option" in r.stderr
    assert "usage: python-sb" in r.stderr


def test_unknown_short_option_is_usage_error(sb):
    sb.profile(ALLOW_SYS)
    r = sb.run("-Z", "-c", "pass")
    assert r.returncode == EXIT_USAGE, r
    assert "Unknown option: -Z" in r.stderr


@pytest.mark.parametrize("form", [["--pysandboxes-config"], ["--pysandboxes-config="]])
def test_pysandboxes_config_without_value_is_usage_error(sb, form):
    sb.profile(ALLOW_SYS)
    r = sb.run(*form)
    assert r.returncode == EXIT_USAGE, r
    assert "--pysandboxes-config requires a file name" in r.stderr


def test_glued_c_argument(sb):
    sb.profile(ALLOW_SYS)
    r = sb.run("-cprint(6*7)")
    assert (r.returncode, r.stdout) == (0, "42\n"), r


def test_glued_m_argument_runs_module(sb):
    sb.profile(ALLOW_SYS)
    r = sb.run("-mjson.tool", input='{"b": [1]}')
    assert r.returncode == 0, r
    assert r.stdout == '{\n    "b": [\n        1\n    ]\n}\n'


def test_flags_grouped_before_m(sb):
    sb.profile(ALLOW_SYS)
    r = sb.run("-Im", "json.tool", "--help")
    assert r.returncode == 0, r
    assert "usage: python -m json.tool" in r.stdout


def test_script_without_py_suffix(sb):
    sb.profile(ALLOW_SYS)
    s = sb.script("import sys\nprint('NOEXT', sys.argv[1:])\n", rel="tool")
    r = sb.run(s, "x")
    assert (r.returncode, r.stdout) == (0, "NOEXT ['x']\n"), r


def test_arguments_after_script_belong_to_the_script(sb):
    sb.profile(ALLOW_SYS)
    s = sb.script("import sys\nprint(sys.argv[1:])\n")
    r = sb.run(s, "--help", "--os-sandbox=foo", "--explain", "-c")
    assert r.returncode == 0, r
    assert r.stdout == "['--help', '--os-sandbox=foo', '--explain', '-c']\n"


def test_spec_10_8_config_then_script_help(sb):
    p = sb.profile(ALLOW_SYS, rel="p")
    s = sb.script("import sys\nprint(sys.argv[1:])\n")
    r = sb.run(f"--pysandboxes-config={p}", s, "--help")
    assert (r.returncode, r.stdout) == (0, "['--help']\n"), r


def test_arguments_after_c_belong_to_the_command(sb):
    sb.profile(ALLOW_SYS)
    r = sb.run("-c", "import sys; print(sys.argv)", "a", "--explain")
    assert (r.returncode, r.stdout) == (0, "['-c', 'a', '--explain']\n"), r


def test_double_dash_ends_options(sb):
    sb.profile(ALLOW_SYS)
    s = sb.script("import sys\nprint('DD', sys.argv[1:])\n")
    r = sb.run("--", s, "z")
    assert (r.returncode, r.stdout) == (0, "DD ['z']\n"), r


def test_dash_reads_program_from_stdin(sb):
    sb.profile(ALLOW_SYS)
    r = sb.run("-", "a", "b", input="import sys\nprint('STDIN', sys.argv)\n")
    assert (r.returncode, r.stdout) == (0, "STDIN ['-', 'a', 'b']\n"), r


@pytest.mark.parametrize("flags,expr,expected", [
    (["-O"], "sys.flags.optimize", "1"),
    (["-OO"], "sys.flags.optimize", "2"),
    (["-B"], "sys.dont_write_bytecode", "True"),
    (["-I"], "(sys.flags.isolated, sys.flags.ignore_environment, sys.flags.no_user_site)",
     "(1, 1, 1)"),
    (["-E", "-s", "-P"], "(sys.flags.ignore_environment, sys.flags.no_user_site, "
     "sys.flags.safe_path)", "(1, 1, True)"),
    (["-S"], "'site' in sys.modules", "False"),
    (["-b"], "sys.flags.bytes_warning", "1"),
    (["-u", "-q"], "sys.flags.quiet", "1"),
    (["-W", "error::UserWarning"], "'error::UserWarning' in sys.warnoptions", "True"),
    (["-X", "utf8", "-X", "dev"], "(sys._xoptions.get('utf8'), sys.flags.dev_mode)",
     "(True, True)"),
])
def test_cpython_options_pass_through(sb, flags, expr, expected):
    sb.profile(ALLOW_SYS)
    r = sb.run(*flags, "-c", f"import sys; print({expr})")
    assert (r.returncode, r.stdout) == (0, expected + "\n"), r


def test_check_hash_based_pycs_passes_through(sb):
    sb.profile("os-sandbox=none\npython-import=_imp\n")
    r = sb.run("--check-hash-based-pycs", "always", "-c",
               "import _imp; print(_imp.check_hash_based_pycs)")
    assert (r.returncode, r.stdout) == (0, "always\n"), r


@pytest.mark.parametrize("opt,text", [("--help-env", "PYTHONSTARTUP"),
                                      ("--help-xoptions", "-X dev"),
                                      ("--help-all", "PYTHONSTARTUP")])
def test_cpython_help_options_pass_through(sb, opt, text):
    sb.profile(ALLOW_SYS)
    r = sb.run(opt)
    assert r.returncode == 0, r
    assert text in r.stdout


@pytest.mark.parametrize("opt", ["--help-env", "--help-xoptions", "--help-all"])
def test_cpython_help_options_need_no_rule_file(sb, opt):
    # Like -h and -V, CPython's informational options print and exit 0; they
    # run no program, so a missing rule file must not matter.
    r = sb.run(opt)
    assert r.returncode == 0, r
    assert r.stdout.strip(), r


@pytest.mark.parametrize("opt", ["-h", "-V"])
def test_help_and_version_need_no_rule_file(sb, opt):
    r = sb.run(opt)
    assert r.returncode == 0, r
    assert "python-sb" in r.stdout


def test_command_line_rules_accumulate(sb):
    sb.profile("os-sandbox=none\npython-import=sys\n")
    r = sb.run("--python-import=colorsys", "--python-import=this", "-c",
               "import colorsys, sys; sys.stdout = open('/dev/null', 'w'); import this; "
               "sys.stdout = sys.__stdout__; print('BOTH')")
    assert (r.returncode, r.stdout) == (0, "BOTH\n"), r


def test_long_option_without_value_is_an_empty_rule(sb):
    sb.profile(ALLOW_SYS)
    r = sb.run("--frobnicate", "-c", "pass")
    assert r.returncode == EXIT_CONFIG, r
    assert r.errors == ["<command line>:1: Invalid rule '--frobnicate='"]


def test_command_line_rule_overrides_scalar_in_file(sb):
    sb.profile("os-sandbox=none\npy-sandbox=true\n")
    r = sb.run("--py-sandbox=false", "-c", "import os; print('FREE')")
    assert (r.returncode, r.stdout) == (0, "FREE\n"), r
