# SPDX-License-Identifier: MIT
"""Environment filtering: the program sees exactly the env= rules plus TERM."""

import json

BASE = "os-sandbox=none\npython-import=os,json\n"
DUMP = "import os, json\nprint(json.dumps(dict(os.environ), sort_keys=True))\n"

HOST = {"USER": "alice", "SECRET_TOKEN": "s3cr3t", "LOGNAME": "alice",
        "PYTHONPATH": "/evil", "PYTHONSTARTUP": "/evil/startup.py", "LD_PRELOAD": "/evil.so"}


def seen_env(sb, rules, env=None, term=None, args=()):
    r = sb.run_code(BASE + rules, DUMP, *args, env=env, term=term)
    assert r.returncode == 0, r
    return json.loads(r.stdout)


def test_spec_10_34_only_rules_and_term(sb):
    env = seen_env(sb, "env=My_ENV=x\n", env=HOST, term="xterm-256color")
    assert env == {"My_ENV": "x", "TERM": "xterm-256color"}


def test_nothing_without_rules_and_term(sb):
    assert seen_env(sb, "", env=HOST) == {}


def test_forwarded_variable(sb):
    assert seen_env(sb, "env=USER=${USER}\n", env=HOST) == {"USER": "alice"}


def test_forwarded_unset_variable_is_absent(sb):
    assert seen_env(sb, "env=X=${UNSET_SB_VAR}\n", env=HOST) == {}


def test_default_when_unset_and_nested_defaults(sb):
    env = seen_env(sb, "env=D=${UNSET_SB_VAR:-dflt}\nenv=N=${U1:-${U2:-deep}}\n"
                   "env=H=${USER:-nobody}\n", env=HOST)
    assert env == {"D": "dflt", "N": "deep", "H": "alice"}


def test_renamed_forward(sb):
    assert seen_env(sb, "env=WHO=${USER}\n", env=HOST) == {"WHO": "alice"}


def test_literal_always_set(sb):
    assert seen_env(sb, "env=LIT=value with spaces\n") == {"LIT": "value with spaces"}


def test_wildcard_forwards_matching_non_empty(sb):
    env = seen_env(sb, "env=APP_*=${APP_*}\n",
                   env={"APP_A": "1", "APP_B": "2", "APP_EMPTY": "", "OTHER": "3"})
    assert env == {"APP_A": "1", "APP_B": "2"}


def test_wildcard_with_literal(sb):
    env = seen_env(sb, "env=APP_*=fixed\n", env={"APP_A": "1", "APP_B": "2", "OTHER": "3"})
    assert env == {"APP_A": "fixed", "APP_B": "fixed"}


def test_exact_beats_wildcard_whatever_the_order(sb):
    before = seen_env(sb, "env=APP_B=exact\nenv=APP_*=${APP_*}\n",
                      env={"APP_A": "1", "APP_B": "2"})
    after = seen_env(sb, "env=APP_*=${APP_*}\nenv=APP_B=exact\n",
                     env={"APP_A": "1", "APP_B": "2"})
    assert before == after == {"APP_A": "1", "APP_B": "exact"}


def test_unenv_removes_wherever_it_sits(sb):
    env = seen_env(sb, "unenv=DROP\nenv=DROP=x\nenv=KEEP=y\n")
    assert env == {"KEEP": "y"}


def test_unenv_pattern(sb):
    env = seen_env(sb, "env=APP_*=${APP_*}\nunenv=APP_S*\n",
                   env={"APP_A": "1", "APP_SECRET": "2", "APP_SALT": "3"})
    assert env == {"APP_A": "1"}


def test_unenv_term(sb):
    assert seen_env(sb, "unenv=TERM\n", term="xterm") == {}


def test_getenv_default_for_unlisted(sb):
    r = sb.run_code(BASE, "import os\nprint(os.getenv('SECRET_TOKEN', 'd'))\n", env=HOST)
    assert (r.returncode, r.stdout) == (0, "d\n"), r


def test_host_pythonpath_does_not_reach_interpreter(sb):
    # A PYTHONPATH the profile does not pass must not change sys.path.
    sb.write("evil/colorsys.py", "raise SystemExit('EVIL IMPORTED')\n")
    r = sb.run_code("os-sandbox=none\npython-import=sys,colorsys\n",
                    "import sys, colorsys\nprint(any('evil' in p for p in sys.path))\n",
                    env={"PYTHONPATH": str(sb.path("evil"))})
    assert (r.returncode, r.stdout) == (0, "False\n"), r


def test_subprocess_provider_filters_too(sb):
    r = sb.run_code("os-sandbox=subprocess\npython-import=os,json\nenv=ONLY=1\n", DUMP,
                    env=HOST)
    assert r.returncode == 0, r
    assert json.loads(r.stdout) == {"ONLY": "1"}
