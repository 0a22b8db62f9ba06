# SPDX-License-Identifier: MIT
"""A representative subset run by an unprivileged user (nobody when the suite
runs as root): env filtering, import denial, profile errors, exit codes."""

import json
import os
import signal

from conftest import CONFIG_ERROR_HEADER, EXIT_CONFIG, EXIT_USAGE


def test_runs_unprivileged(sb_nobody):
    r = sb_nobody.run_code("os-sandbox=none\npython-import=os\n",
                           "import os\nprint(os.getuid() != 0, os.geteuid() != 0)\n")
    assert (r.returncode, r.stdout) == (0, "True True\n"), r


def test_env_filtering(sb_nobody):
    r = sb_nobody.run_code("os-sandbox=subprocess\npython-import=os,json\nenv=My_ENV=x\n"
                           "env=FWD=${FWD}\nenv=GONE=${UNSET_SB}\n",
                           "import os, json\nprint(json.dumps(dict(os.environ)))\n",
                           env={"USER": "nobody", "SECRET": "s", "FWD": "f"}, term="dumb")
    assert r.returncode == 0, r
    assert json.loads(r.stdout) == {"My_ENV": "x", "FWD": "f", "TERM": "dumb"}


def test_import_denial(sb_nobody):
    r = sb_nobody.run_code("os-sandbox=none\npython-import=json\n",
                           "import json\nprint('BEFORE')\nimport os\n")
    assert r.returncode == 1, r
    assert r.stdout == "BEFORE\n"
    assert (f"Module named 'os' is not allowed by a rule. Add 'python-import=os' to "
            f"'{sb_nobody.path('.py-sandboxes')}'") in r.stderr


def test_config_errors_sorted_and_program_not_run(sb_nobody):
    sb = sb_nobody
    p = sb.profile("os-sandbox=none\nbogus\ninclude \"inc.prof\"\nnet=ALLOW|tcp|*|80\n")
    sb.write("inc.prof", "os-sandbox=subprocess\n")
    marker = sb.path("MARK")
    s = sb.script(f"open({str(marker)!r}, 'w')\n")
    r = sb.run(s)
    assert r.returncode == EXIT_CONFIG, r
    errs = r.errors
    assert len(errs) == 3, errs
    assert errs[0] == f"{p}:2: Invalid rule 'bogus'"
    assert errs[1].startswith(f"{p}:4: Invalid net rule")
    assert errs[2] == f"{sb.path('inc.prof')}:1: Multiple os-sandbox parameters (first at {p}:1)"
    assert not marker.exists()


def test_unreadable_rule_file(sb_nobody):
    sb = sb_nobody
    p = sb.profile("os-sandbox=none\npython-import=*\n")
    os.chown(p, 0, 0)
    os.chmod(p, 0)
    marker = sb.path("MARK")
    s = sb.script(f"open({str(marker)!r}, 'w')\n")
    r = sb.run(s)
    if os.geteuid() != 0 and os.access(p, os.R_OK):
        raise AssertionError("test setup: the rule file is still readable")
    assert r.returncode == EXIT_CONFIG, r
    assert CONFIG_ERROR_HEADER in r.stderr
    assert "cannot read rule file: Permission denied" in r.stderr
    assert not marker.exists()


def test_unreadable_include(sb_nobody):
    sb = sb_nobody
    p = sb.profile("os-sandbox=none\npython-import=*\ninclude \"secret.prof\"\n")
    inc = sb.write("secret.prof", "python-import=json\n")
    os.chown(inc, 0, 0)
    os.chmod(inc, 0)
    marker = sb.path("MARK")
    s = sb.script(f"open({str(marker)!r}, 'w')\n")
    r = sb.run(s)
    assert r.returncode == EXIT_CONFIG, r
    assert r.errors == [f"{p}:3: cannot read include '{inc}': Permission denied"]
    assert not marker.exists()


def test_exit_codes(sb_nobody):
    r = sb_nobody.run_code("os-sandbox=none\npython-import=sys\n", "import sys\nsys.exit(9)\n")
    assert r.returncode == 9, r
    r = sb_nobody.run_code("os-sandbox=none\npython-import=sys\n",
                           "import sys\nsys.exit('bye')\n")
    assert (r.returncode, r.stderr) == (1, "bye\n"), r


def test_death_by_signal(sb_nobody):
    r = sb_nobody.run_code("os-sandbox=subprocess\npython-import=os\npython-api=ALLOW:os.kill\n",
                           f"import os\nos.kill(os.getpid(), {int(signal.SIGKILL)})\n")
    assert r.returncode == -signal.SIGKILL, r


def test_missing_script(sb_nobody):
    sb_nobody.profile("os-sandbox=none\n")
    r = sb_nobody.run(sb_nobody.path("absent.py"))
    assert r.returncode == EXIT_USAGE, r
    assert "can't open file" in r.stderr


def test_named_provider_fails_closed(sb_nobody):
    marker = sb_nobody.path("MARK")
    r = sb_nobody.run_code("os-sandbox=qemu\npython-import=*\n",
                           f"open({str(marker)!r}, 'w')\n",
                           env={"PYSANDBOXES_QEMU_KERNEL": "/nonexistent/vmlinuz-0"})
    assert r.returncode == EXIT_CONFIG, r
    assert "os-sandbox=qemu cannot be applied" in r.stderr
    assert not marker.exists()
