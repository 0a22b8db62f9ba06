# SPDX-License-Identifier: MIT
"""Files and modules beside the script (issue 17, item 3): the guard and the
kernel agree on sys.path[0]. The modules python-import= allows there (a
module's files, a package's directory) are readable by both layers, the
directory itself is listable (the import machinery finds modules by listing
it), and nothing else in it is: reading a data file beside the script is the
guard's refusal, with the rule to add, under every provider, instead of a bare
PermissionError from Landlock. `python-sb -m pkg` for a package in the cwd
runs."""

import os
import re
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


LINKED = """\
import linked, lpkg
print('LINKED', linked.V, lpkg.W)
"""


def lay_out_links(sb):
    """Allowed modules reached through symbolic links (a listing's d_type
    says "link": only a stat() tells a module file from a package), and a
    plain file named like an allowed package, which is none."""
    sb.write("real/linked_impl.py", "V = 'LV'\n")
    sb.write("real/lpkg_impl/__init__.py", "W = 'PW'\n")
    os.symlink("real/linked_impl.py", sb.path("linked.py"))
    os.symlink("real/lpkg_impl", sb.path("lpkg"))
    sb.write("noext", "NOT A PACKAGE\n")
    sb.write("secret.txt", "TOP-SECRET\n")


LINK_PROFILE = "python-import=linked, lpkg, noext\n"


def check_imports(sb, provider, extra="", layout="plain"):
    if layout == "links":
        lay_out_links(sb)
        sb.profile(f"os-sandbox={provider}\n{LINK_PROFILE}{extra}")
        code, want = LINKED, "LINKED LV PW\n"
    else:
        lay_out(sb)
        sb.profile(profile(provider, extra))
        code, want = IMPORTS, "VALUES 5 SUB PKGDATA\n"
    r = sb.run(sb.script(code))
    assert (r.returncode, r.stdout) == (0, want), r
    # The bytecode cache the loader could not read or write is no refusal
    # of the program's: no summary line.
    assert "refused" not in r.stderr, r


@pytest.mark.parametrize("layout", ["plain", "links"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_allowed_modules_beside_the_script_import(sb, provider, layout):
    check_imports(sb, provider, layout=layout)


@pytest.mark.parametrize("layout", ["plain", "links"])
@pytest.mark.parametrize("provider", NOBODY_PROVIDERS)
def test_allowed_modules_beside_the_script_import_as_nobody(sb_nobody, provider, layout):
    check_imports(sb_nobody, provider, layout=layout)


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


# What native code may read of each layout: (path, readable).
NATIVE_READS = {
    "plain": [("helper.py", True), ("pkgx/data.txt", True), ("secret.txt", False),
              ("other.py", False)],
    "links": [("linked.py", True), ("lpkg/__init__.py", True), ("noext", False),
              ("secret.txt", False)],
}


@pytest.mark.parametrize("layout,who", [("plain", "root"), ("links", "root"),
                                        ("links", "nobody")])
@pytest.mark.parametrize("provider", ["landlock", provider_param("bwrap"), "unshare"])
def test_kernel_grants_only_the_allowed_modules(request, provider, layout, who):
    """Native code (py-sandbox=false) reads the allowed modules' files (also
    through links: a linked module's file, a linked package) and lists the
    directory, and cannot read a data file, a module the profile does not
    allow, or a plain file named like an allowed package."""
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    if layout == "links":
        lay_out_links(sb)
        rules = f"os-sandbox={provider}\n{LINK_PROFILE}py-sandbox=false\n"
    else:
        lay_out(sb)
        rules = profile(provider, "py-sandbox=false\n")
    checks = "".join(f"py({rel!r}, lambda: open(os.path.join(root, {rel!r})).read())\n"
                     for rel, _ in NATIVE_READS[layout])
    r, o = run_native(sb, rules, f"import os\nroot = {str(sb.root)!r}\n{checks}")
    for rel, readable in NATIVE_READS[layout]:
        assert (o[rel] == "OK") if readable else (o[rel] in ("EACCES", "ENOENT")), (rel, r)


MANY = 2000


@pytest.mark.parametrize("provider", ["landlock", provider_param("bwrap"), "unshare",
                                      "subprocess"])
def test_thousands_of_modules_beside_the_script(sb, provider):
    """python-import=* beside a directory of thousands of modules: each is
    granted once (the script, itself one of them, too), the first and the
    last import, and a data file among them stays out of reach."""
    for i in range(MANY):
        (sb.root / f"m{i}.py").write_text(f"V = {i}\n")
    sb.write("data.csv", "a,b\n")
    sb.profile(f"os-sandbox={provider}\npython-import=*\n")
    s = sb.script("import m0, m1999\nprint('SUM', m0.V + m1999.V)\n"
                  "try:\n    open('data.csv').read()\nexcept OSError as e:\n"
                  "    print('DATA REFUSED')\n")
    r = sb.run(s)
    assert (r.returncode, r.stdout) == (0, f"SUM {MANY - 1}\nDATA REFUSED\n"), r
    if provider == "subprocess":
        return
    r = sb.run("--explain", s)
    assert r.returncode == 0, r
    granted = [m.group(1) for m in re.finditer(r"^#\s+r[ow]\s+(\S+)", r.stdout, re.M)]
    for name in ("m0.py", "m1999.py", "s.py"):
        assert granted.count(str(sb.root / name)) == 1, (name, r.stdout[-3000:])
    assert str(sb.root / "data.csv") not in granted, r


@pytest.mark.parametrize("provider", [provider_param("bwrap"), provider_param("firejail")])
def test_too_many_modules_for_a_wrapper_is_refused_with_the_cause(sb, provider):
    """More modules beside the script than the tool takes on its command
    line (bwrap: 9000 arguments, firejail: 2048 whitelisted paths): the run
    stops before the program, naming the modules and what to change."""
    for i in range(3500):
        (sb.root / f"m{i}.py").write_text("")
    sb.profile(f"os-sandbox={provider}\npython-import=*\n")
    r = sb.run(sb.script("print('RAN')\n"))
    assert r.returncode == 255 and "RAN" not in r.stdout, r
    assert "the sandbox cannot be applied" in r.stderr, r
    assert "modules python-import= allows beside the script" in r.stderr, r
    assert "instead of python-import=*" in r.stderr, r


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


@pytest.mark.parametrize("provider", [provider_param("bwrap"), provider_param("firejail")])
def test_rule_file_named_by_a_relative_link(sb, provider):
    """--pysandboxes-config NAME, NAME a symbolic link in the working
    directory: the wrapper shows the link and its target to the inner
    python-sb, which reads the rules again."""
    sb.write("conf/rules.txt", f"os-sandbox={provider}\npython-import=helper\n")
    os.symlink("conf/rules.txt", sb.path("rules.link"))
    sb.write("helper.py", "VALUE = 'H'\n")
    s = sb.script("import helper\nprint(helper.VALUE)\n")
    r = sb.run("--pysandboxes-config", "rules.link", s.name)
    assert (r.returncode, r.stdout) == (0, "H\n"), r
