# SPDX-License-Identifier: MIT
"""Files and modules beside the script (issue 17, item 3): the guard and the
kernel agree on sys.path[0]. The modules python-import= allows there (a
module's files, a package's directory) are readable by both layers, the
directory itself is listable (the import machinery finds modules by listing
it), and nothing else in it is: reading a data file beside the script is the
guard's refusal, with the rule to add, under every provider, instead of a bare
PermissionError from Landlock. `python-sb -m pkg` for a package in the cwd
runs."""

import shutil

import pytest

from conftest import run_native

HAVE = {w: shutil.which(w) is not None for w in ("bwrap", "firejail")}


def provider_param(name):
    if name in HAVE:
        return pytest.param(name, marks=pytest.mark.skipif(
            not HAVE[name], reason=f"{name} is not installed"))
    return name


# Every provider that confines files, and subprocess (the guard alone).
PROVIDERS = [provider_param(p) for p in ("landlock", "unshare", "bwrap", "firejail",
                                         "subprocess")]
# firejail never lets the user nobody start a sandbox (test_kernel_wrappers).
NOBODY_PROVIDERS = [provider_param(p) for p in ("landlock", "unshare", "bwrap", "subprocess")]

IMPORTS = """\
import helper, pkgx.sub
print('VALUES', helper.VALUE, pkgx.sub.X, pkgx.DATA)
"""


def lay_out(sb):
    sb.write("helper.py", "VALUE = 5\n")
    sb.write("pkgx/__init__.py",
             "import os\nDATA = open(os.path.join(os.path.dirname(__file__), 'data.txt'))"
             ".read().strip()\n")
    sb.write("pkgx/sub.py", "X = 'SUB'\n")
    sb.write("pkgx/data.txt", "PKGDATA\n")
    sb.write("secret.txt", "TOP-SECRET\n")
    sb.write("other.py", "Y = 1\n")


def profile(provider, extra=""):
    # The package reads its own data file through open(): 'os' and 'io'
    # come with the standard library's start-up.
    return f"os-sandbox={provider}\npython-import=helper, pkgx, os\n{extra}"


def check_imports(sb, provider, extra=""):
    lay_out(sb)
    sb.profile(profile(provider, extra))
    r = sb.run(sb.script(IMPORTS))
    assert (r.returncode, r.stdout) == (0, "VALUES 5 SUB PKGDATA\n"), r
    # The bytecode cache the loader could not read or write is no refusal
    # of the program's: no summary line.
    assert "refused" not in r.stderr, r


@pytest.mark.parametrize("provider", PROVIDERS)
def test_allowed_modules_beside_the_script_import(sb, provider):
    check_imports(sb, provider)


@pytest.mark.parametrize("provider", NOBODY_PROVIDERS)
def test_allowed_modules_beside_the_script_import_as_nobody(sb_nobody, provider):
    check_imports(sb_nobody, provider)


@pytest.mark.parametrize("provider", ["landlock", provider_param("bwrap")])
def test_allowed_modules_import_with_the_kernel_alone(sb, provider):
    """py-sandbox=false: the kernel's grants alone let the allowed modules
    be found and read."""
    check_imports(sb, provider, "py-sandbox=false\n")


READ_SECRET = """\
import pysandboxes
try:
    open('secret.txt').read()
except OSError as e:
    print('REFUSED', type(e).__name__)
    print('\\n'.join(pysandboxes.sandbox_denials(e)))
else:
    print('READ')
"""


def check_refused_with_rule(sb, provider):
    lay_out(sb)
    sb.profile(profile(provider) + "python-import=pysandboxes\n")
    r = sb.run(sb.script(READ_SECRET))
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].startswith("REFUSED "), r
    assert lines[0] != "REFUSED PermissionError" or len(lines) > 1, r
    assert len(lines) == 2, r
    assert f"Add 'expose-ro={sb.root}' to '{sb.path('.py-sandboxes')}'" in lines[1], r


@pytest.mark.parametrize("provider", PROVIDERS)
def test_file_beside_the_script_is_refused_with_its_rule(sb, provider):
    check_refused_with_rule(sb, provider)


@pytest.mark.parametrize("provider", NOBODY_PROVIDERS)
def test_file_beside_the_script_is_refused_with_its_rule_as_nobody(sb_nobody, provider):
    check_refused_with_rule(sb_nobody, provider)


@pytest.mark.parametrize("provider", ["landlock", provider_param("bwrap"), "unshare"])
def test_kernel_grants_only_the_allowed_modules(sb, provider):
    """Native code (py-sandbox=false) reads the allowed module's file and
    lists the directory, and cannot read a data file or a module the
    profile does not allow."""
    lay_out(sb)
    r, o = run_native(sb, profile(provider, "py-sandbox=false\n"), f'''
        import os
        root = {str(sb.root)!r}
        py('helper', lambda: open(os.path.join(root, 'helper.py')).read())
        py('pkgdata', lambda: open(os.path.join(root, 'pkgx', 'data.txt')).read())
        py('secret', lambda: open(os.path.join(root, 'secret.txt')).read())
        py('other', lambda: open(os.path.join(root, 'other.py')).read())
    ''')
    assert o["helper"] == "OK", r
    assert o["pkgdata"] == "OK", r
    assert o["secret"] in ("EACCES", "ENOENT"), r
    assert o["other"] in ("EACCES", "ENOENT"), r


def check_dash_m(sb, provider):
    sb.write("apppkg/__init__.py", "")
    sb.write("apppkg/__main__.py", "from . import util\nprint('MAIN', util.Z)\n")
    sb.write("apppkg/util.py", "Z = 'UTIL'\n")
    sb.profile(f"os-sandbox={provider}\npython-import=json\n")
    r = sb.run("-m", "apppkg")
    assert (r.returncode, r.stdout) == (0, "MAIN UTIL\n"), r


@pytest.mark.parametrize("provider", PROVIDERS)
def test_dash_m_package_in_the_cwd(sb, provider):
    check_dash_m(sb, provider)


@pytest.mark.parametrize("provider", NOBODY_PROVIDERS)
def test_dash_m_package_in_the_cwd_as_nobody(sb_nobody, provider):
    check_dash_m(sb_nobody, provider)


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_no_allowed_module_no_listing(request, who):
    """Where sys.path[0] holds no module the profile allows, neither layer
    grants even its listing (Landlock's would reach every directory below):
    the import machinery's look there is no refusal of the program's, the
    program's own listing is refused with its rule, native code's by the
    kernel."""
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    lay_out(sb)
    sb.profile("os-sandbox=landlock\npython-import=json, os, pysandboxes\n")
    r = sb.run("-c", "import json, os, pysandboxes\nprint(json.dumps(1))\n"
               "try:\n    os.listdir('.')\nexcept OSError as e:\n"
               "    print('\\n'.join(pysandboxes.sandbox_denials(e)))\n")
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0] == "1" and len(lines) == 2, r
    assert f"Add 'expose-ro={sb.root}'" in lines[1], r
    assert "python-sb: 1 operation was refused" in r.stderr, r
    r, o = run_native(sb, "os-sandbox=landlock\npy-sandbox=false\n", f'''
        import os
        py('list', lambda: os.listdir({str(sb.root)!r}))
    ''')
    assert o["list"] == "EACCES", r
