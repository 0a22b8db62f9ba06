# SPDX-License-Identifier: MIT
"""python-import= whitelist, enforced by the C audit hook."""

import pytest

from conftest import LANDLOCK_ABI


def denial(name, profile):
    return (f"ModuleNotFoundError: Module named '{name}' is not allowed by a rule. "
            f"Add 'python-import={name}' to '{profile}'")


def run(sb, imports, code, extra=""):
    return sb.run_code(f"os-sandbox=none\npython-import={imports}\n{extra}", code)


def test_spec_10_5_denied(sb):
    r = run(sb, "json", "import colorsys\nprint('NO')\n")
    assert r.returncode == 1, r
    assert "'colorsys' is not allowed by a rule" in r.stderr
    assert denial("colorsys", sb.path(".py-sandboxes")) in r.stderr
    assert r.stdout == ""


def test_spec_10_5_allowed(sb):
    r = run(sb, "json,colorsys", "import colorsys\nprint(colorsys.rgb_to_hsv(1.0, 0.0, 0.0))\n")
    assert (r.returncode, r.stdout) == (0, "(0.0, 1.0, 1.0)\n"), r


def test_spec_10_6_framework_imports_not_charged(sb):
    r = run(sb, "json", "print('STARTED')\n")
    assert (r.returncode, r.stdout, r.stderr) == (0, "STARTED\n", ""), r


def test_stdlib_internal_imports_not_charged(sb):
    # json imports re, codecs, ...: only the user's `import json` is checked.
    r = run(sb, "json", "import json\nprint(json.dumps({'a': [1]}))\n")
    assert (r.returncode, r.stdout) == (0, '{"a": [1]}\n'), r


@pytest.mark.parametrize("name", ["os", "sys", "builtins", "re"])
def test_already_loaded_module_denied(sb, name):
    r = run(sb, "json", f"import {name}\nprint('NO')\n")
    assert r.returncode == 1, r
    assert denial(name, sb.path(".py-sandboxes")) in r.stderr


def test_re_still_denied_after_json_loaded_it(sb):
    r = run(sb, "json", "import json\nimport re\n")
    assert r.returncode == 1, r
    assert "Module named 're' is not allowed by a rule" in r.stderr


def test_from_import_denied(sb):
    r = run(sb, "json", "from os import path\n")
    assert r.returncode == 1, r
    assert "Module named 'os' is not allowed by a rule" in r.stderr


def test_submodules_of_allowed_top_level(sb):
    r = run(sb, "json,xml", "import json.decoder\nfrom xml.dom import minidom\n"
                            "import xml.etree.ElementTree as ET\nprint('SUBS')\n")
    assert (r.returncode, r.stdout) == (0, "SUBS\n"), r


def test_dotted_rule_never_matches(sb):
    r = run(sb, "xml.dom", "import xml.dom\n")
    assert r.returncode == 1, r
    assert "Module named 'xml' is not allowed by a rule" in r.stderr
    assert "never matches" in r.stderr  # the profile warning


def test_dunder_import_checked(sb):
    r = run(sb, "json", "m = __import__('colorsys')\n")
    assert r.returncode == 1, r
    assert "Module named 'colorsys' is not allowed by a rule" in r.stderr


def test_dunder_import_allowed(sb):
    r = run(sb, "colorsys", "m = __import__('colorsys')\nprint(m.__name__)\n")
    assert (r.returncode, r.stdout) == (0, "colorsys\n"), r


def test_denial_is_catchable_import_error(sb):
    r = run(sb, "json, pysandboxes",
            "import pysandboxes\n"
            "try:\n    import colorsys\nexcept ImportError as e:\n"
            "    print(type(e).__name__, isinstance(e, ModuleNotFoundError),\n"
            "          isinstance(e, pysandboxes.SandBoxError), isinstance(e, RuntimeError),\n"
            "          e.name, pysandboxes.sandbox_denials(e) != [])\n")
    assert (r.returncode, r.stdout) == (
        0, "RuleModuleNotFoundError True True True colorsys True\n"), r


def test_import_inside_function_checked(sb):
    r = run(sb, "json", "def f():\n    import colorsys\nprint('BEFORE')\nf()\n")
    assert r.returncode == 1, r
    assert r.stdout == "BEFORE\n"
    assert "Module named 'colorsys' is not allowed by a rule" in r.stderr


def test_star_allows_everything(sb):
    r = run(sb, "*", "import os, sys, colorsys, re\nprint('ALL')\n")
    assert (r.returncode, r.stdout) == (0, "ALL\n"), r


def test_no_rule_allows_nothing(sb):
    r = sb.run_code("os-sandbox=none\n", "import json\n")
    assert r.returncode == 1, r
    assert "Module named 'json' is not allowed by a rule" in r.stderr


def test_comma_list_and_repeated_rules(sb):
    r = sb.run_code("os-sandbox=none\npython-import=json, colorsys\npython-import=string\n",
                    "import json, colorsys, string\nprint('LIST')\n")
    assert (r.returncode, r.stdout) == (0, "LIST\n"), r


def test_command_line_rule_adds_to_file(sb):
    sb.profile("os-sandbox=none\npython-import=json\n")
    s = sb.script("import json, colorsys\nprint('ADDED')\n")
    r = sb.run("--python-import=colorsys", s)
    assert (r.returncode, r.stdout) == (0, "ADDED\n"), r


def test_py_sandbox_false_disables_guard(sb):
    r = run(sb, "json", "import os, sys, colorsys\nprint('FREE')\n", extra="py-sandbox=false\n")
    assert (r.returncode, r.stdout) == (0, "FREE\n"), r


def test_users_own_module_is_charged(sb):
    sb.write("helper.py", "VALUE = 5\n")
    r = run(sb, "json", "import helper\n")
    assert r.returncode == 1, r
    assert "Module named 'helper' is not allowed by a rule" in r.stderr
    r = run(sb, "helper", "import helper\nprint(helper.VALUE)\n")
    assert (r.returncode, r.stdout) == (0, "5\n"), r


def test_package_relative_imports_allowed_with_package(sb):
    sb.write("pkg/__init__.py", "from . import sub\nfrom .sub import X\n")
    sb.write("pkg/sub.py", "import json\nX = 'REL'\n")
    r = run(sb, "pkg,json", "import pkg\nprint(pkg.X)\n")
    assert (r.returncode, r.stdout) == (0, "REL\n"), r


def test_relative_import_checked_against_package_top_level(sb):
    sb.write("pkg/__init__.py", "")
    sb.write("pkg/sub.py", "X = 1\n")
    r = run(sb, "json", "__package__ = 'pkg'\nfrom . import sub\nprint('NO')\n")
    assert r.returncode == 1, r
    assert "Module named 'pkg' is not allowed by a rule" in r.stderr


def test_module_run_with_m_is_guarded_inside(sb):
    sb.profile("os-sandbox=none\npython-import=json\n")
    sb.write("tool.py", "import colorsys\n")
    r = sb.run("-m", "tool")
    assert r.returncode == 1, r
    assert "Module named 'colorsys' is not allowed by a rule" in r.stderr


def test_c_and_stdin_programs_are_guarded(sb):
    p = sb.profile("os-sandbox=none\npython-import=json\n")
    r = sb.run("-c", "import colorsys")
    assert r.returncode == 1 and denial("colorsys", p) in r.stderr, r
    r = sb.run("-", input="import colorsys\n")
    assert r.returncode == 1 and denial("colorsys", p) in r.stderr, r


def test_subprocess_provider_guards_too(sb):
    r = sb.run_code("os-sandbox=subprocess\npython-import=json\n", "import colorsys\n")
    assert r.returncode == 1, r
    assert "Module named 'colorsys' is not allowed by a rule" in r.stderr


def test_delegators_own_imports_and_their_modules_imports_are_not_charged(sb):
    # pkgutil.resolve_name imports the name it is given for the program (a
    # refused name is refused, see test_adversarial.py), but its own `import
    # re` and what the module it loads imports stay the runtime's.
    r = run(sb, "pkgutil,json,sys", """\
import sys
for m in ('re', 'json', 'json.decoder', 'json.scanner', 'json.encoder'):
    sys.modules.pop(m, None)
import pkgutil
print(pkgutil.resolve_name('json:dumps')([1]))
try:
    pkgutil.resolve_name('colorsys')
except ModuleNotFoundError as e:
    print('refused', e.name)
""")
    assert (r.returncode, r.stdout) == (0, "[1]\nrefused colorsys\n"), r


# C functions that import a module when they are called (guard-imports.c,
# call_imports): the import runs under the caller's frame, the program's;
# the module holding the function allowed, what it imports comes with it.
C_CALLS = [
    ("datetime", "import datetime\nprint(datetime.date(2020, 1, 2).strftime('%Y'))\n", "2020\n"),
    ("datetime", "import datetime\nprint(datetime.date(2020, 1, 2).timetuple().tm_yday)\n", "2\n"),
    ("datetime", "import datetime\nprint(format(datetime.date(2020, 1, 2), '%d'))\n", "02\n"),
    ("datetime", "import datetime\nprint(datetime.datetime.strptime('2024-03', '%Y-%m').month)\n",
     "3\n"),
    ("time", "import time\nprint(time.strptime('2024', '%Y').tm_year)\n", "2024\n"),
    ("operator,copy", "import copy, operator\n"
     "print(copy.copy(operator.methodcaller('upper', x=1)) is not None)\n", "True\n"),
    ("os\npython-api=ALLOW:process-exec", "import os\npid = os.fork()\nif pid == 0:\n"
     "    os._exit(3)\n_, status, usage = os.wait4(pid, 0)\n"
     "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss > 0)\n", "3 True\n"),
    ("zoneinfo", "import zoneinfo\nprint(len(zoneinfo.available_timezones()) > 100)\n",
     "True\n"),
    ("zoneinfo\nexpose-ro=/usr/share/zoneinfo", "import zoneinfo\n"
     "with open('/usr/share/zoneinfo/UTC', 'rb') as f:\n    z = zoneinfo.ZoneInfo.from_file(f)\n"
     "try:\n    z.__reduce__()\nexcept Exception as e:\n    print(type(e).__name__)\n",
     "PicklingError\n"),
]


@pytest.mark.parametrize("imports,code,out", C_CALLS)
def test_c_functions_bring_what_they_import(sb, imports, code, out):
    r = run(sb, imports, code)
    assert (r.returncode, r.stdout) == (0, out), r
    assert "python-import=" not in r.stderr, r


# The standard library's own import statement of a module neither its own nor
# allowed is a probe (copy and pickle try Jython's org.python.core): refused as
# a module that does not exist, with no rule suggested; the program's own ask
# for the same name gets the rule.
def test_stdlib_probe_of_an_absent_module_suggests_no_rule(sb):
    r = run(sb, "copy,pickle", "import copy, pickle\nprint(len(pickle.dumps(copy.copy([1]))))\n")
    assert (r.returncode, r.stdout, r.stderr) == (0, "17\n", ""), r


def test_programs_own_ask_for_the_probed_name_gets_the_rule(sb):
    r = run(sb, "copy", "import copy\nimport org\n")
    assert r.returncode == 1, r
    assert denial("org", sb.path(".py-sandboxes")) in r.stderr, r


@pytest.mark.parametrize("provider", ["landlock", "subprocess"])
@pytest.mark.parametrize("who", ["root", "nobody"])
def test_c_functions_bring_what_they_import_under_the_kernel_layer(request, provider, who):
    if provider == "landlock" and LANDLOCK_ABI < 1:
        pytest.skip("the kernel has no Landlock")
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    imports, code, out = C_CALLS[3]
    r = sb.run_code(f"os-sandbox={provider}\npython-import={imports}\n", code)
    assert (r.returncode, r.stdout, r.stderr) == (0, out, ""), r


# An import statement naming such a module stays the program's own ask, and
# without the module that holds the function nothing comes.
@pytest.mark.parametrize("imports,code,name", [
    ("datetime", "import time\n", "time"),
    ("datetime", "from time import sleep\n", "time"),
    ("datetime", "def f():\n    import _strptime\nf()\n", "_strptime"),
    ("time", "import _strptime\n", "_strptime"),
    ("json", "__import__('_strptime')\n", "_strptime"),
    ("json", "import importlib\nimportlib.import_module('_strptime')\n", "_strptime"),
])
def test_what_c_functions_import_is_not_the_programs(sb, imports, code, name):
    r = run(sb, imports + (",importlib" if "importlib" in code else ""), code)
    assert r.returncode == 1, r
    assert denial(name, sb.path(".py-sandboxes")) in r.stderr, r


# An extension module may call itself another name than its spec's: _decimal's
# module says "decimal". Its execution is judged on the name it was made under,
# so the runtime's import of _decimal (decimal.py, for fractions) passes and
# decimal does not fall back to _pydecimal.
@pytest.mark.parametrize("imports", ["fractions,sys", "statistics,sys"])
def test_extension_module_judged_on_its_spec_name(sb, imports):
    r = run(sb, imports, f"import {imports}\nprint('_pydecimal' in sys.modules, "
                         "type(sys.modules['decimal'].Decimal(1)).__module__)\n")
    assert (r.returncode, r.stdout, r.stderr) == (0, "False decimal\n", ""), r
