# SPDX-License-Identifier: MIT
"""Code objects may carry a file name the guard exempts -- the standard
library's, or a site-packages (dist-packages) directory's -- only when they
came from that very file (src/guard/guard-code.h).

Site-packages code is exempt from the dynamic-code and frame rules as a path
(docs/python-sb.md): code the program made under such a name -- a sourceless
.pyc beside the script or in a zip on sys.path, code.replace(co_filename=),
compile(filename=), marshal.loads(), _imp._fix_co_filename(), a sys.path
entry that starts like a site directory and leads out of it with ".." --
would get the exemption. Each attack below is refused; the same probes from
a real module of a site-packages directory still pass, sourceless .pyc-only
modules and packages and caches compiled elsewhere (a moved tree) included.
Everything runs as root and as nobody."""

import importlib.util
import marshal
import os
import py_compile
import re
import zipfile

import pytest

API = "RuleApiPermissionError"

# Three things the program's own code may not do under this profile, and
# that site-packages code may: exec of a statement under eval-syntax=arith,
# a frame read, a code object built.
PROBES = """\
import sys
def probe(name, fn):
    try:
        fn()
    except BaseException as e:
        print('PROBE', name, 'REFUSED', type(e).__name__, flush=True)
    else:
        print('PROBE', name, 'ALLOWED', flush=True)
def run():
    probe('exec', lambda: exec("y = 1\\nfor i in range(2): y += i"))
    probe('getframe', lambda: sys._getframe(1).f_globals['__name__'])
    probe('replace', lambda: run.__code__.replace(co_name='z'))
    print('FILE', run.__code__.co_filename, flush=True)
run()
"""

PROBE_NAMES = ("exec", "getframe", "replace")

EVAL_PROFILE = "python-import=sys, os, {mods}\neval-syntax=arith\n"


def _probes(stdout):
    return dict(re.findall(r"^PROBE (\w+) (ALLOWED|REFUSED)", stdout, re.M))


def _pyc(source, co_filename):
    """A sourceless .pyc whose code carries co_filename: a valid header (no
    source to check it against), the code marshalled."""
    code = compile(source, co_filename, "exec")
    return importlib.util.MAGIC_NUMBER + b"\0" * 12 + marshal.dumps(code)


def _write_bytes(sb, rel, data):
    p = sb.path(rel)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    sb._chown(p)
    return p


@pytest.fixture(params=["root", "nobody"])
def box(request):
    return request.getfixturevalue("sb" if request.param == "root" else "sb_nobody")


@pytest.fixture(scope="module")
def site_dir(sb_bin, tmp_path_factory):
    """A site-packages or dist-packages directory on python-sb's own
    sys.path (what the forged names name)."""
    root = tmp_path_factory.mktemp("sitedir")
    (root / ".py-sandboxes").write_text("python-import=sys\n")
    (root / "s.py").write_text("import sys\nfor p in sys.path: print(p)\n")
    from conftest import Sandbox
    r = Sandbox(sb_bin, root).run(root / "s.py")
    assert r.returncode == 0, r
    for p in r.stdout.splitlines():
        if os.path.basename(p.rstrip("/")) in ("site-packages", "dist-packages"):
            return p.rstrip("/")
    pytest.skip("python-sb's sys.path has no site-packages or dist-packages directory")


def _assert_refused(r, what):
    assert f"{API}" in r.stdout + r.stderr, r
    assert f"{what} under the site-packages file name" in r.stdout + r.stderr, r
    assert "ALLOWED" not in r.stdout, r


# ---- forged names ------------------------------------------------------------

def test_sourceless_pyc_beside_the_script(box, site_dir):
    _write_bytes(box, "evil.pyc", _pyc(PROBES, site_dir + "/anything.py"))
    r = box.run_code(EVAL_PROFILE.format(mods="evil"),
                     "try:\n    import evil\n"
                     "except BaseException as e:\n"
                     "    print('IMPORT', type(e).__name__, e)\n")
    assert "IMPORT RuleApiPermissionError" in r.stdout, r
    _assert_refused(r, "unmarshalling code")
    assert "evil" not in r.stdout.split("IMPORT", 1)[0], r


def test_sourceless_pyc_in_a_zip_on_sys_path(box, site_dir):
    z = box.path("evil.zip")
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("zevil.pyc", _pyc(PROBES, site_dir + "/anything.py"))
    box._chown(z)
    # The zip is readable (a file beside the script is not, unless a rule
    # grants it): the import must fail on the code, not on the file.
    r = box.run_code(EVAL_PROFILE.format(mods="zevil") + f"expose-ro={box.root}\n",
                     f"import sys\nsys.path.insert(0, {str(z)!r})\n"
                     "try:\n    import zevil\n"
                     "except BaseException as e:\n"
                     "    print('IMPORT', type(e).__name__, e)\n")
    assert "IMPORT RuleApiPermissionError" in r.stdout, r
    _assert_refused(r, "unmarshalling code")


FRAME_FROM = """\
import sys
SITE = {site!r}
def f():
    return sys._getframe(1).f_globals['__name__']
try:
{body}
    print('FRAME ALLOWED', f())
except BaseException as e:
    print('OUTCOME', type(e).__name__, e)
"""


def _frame_from(box, site_dir, body, api=()):
    profile = "python-import=sys, marshal\n" + "".join(f"python-api={a}\n" for a in api)
    body = "\n".join("    " + line for line in body.strip().splitlines())
    return box.run_code(profile, FRAME_FROM.format(site=site_dir, body=body))


def test_code_replace_with_a_site_packages_name(box, site_dir):
    r = _frame_from(box, site_dir, """
f.__code__ = f.__code__.replace(co_filename=SITE + '/anything.py')
""", api=("ALLOW:dynamic-code",))
    assert "OUTCOME RuleApiPermissionError" in r.stdout, r
    _assert_refused(r, "making a code object")


def test_compile_under_a_site_packages_name(box, site_dir):
    r = _frame_from(box, site_dir, """
exec(compile("def f():\\n    return sys._getframe(1).f_globals['__name__']\\n",
             SITE + '/anything.py', 'exec'))
""", api=("ALLOW:dynamic-code",))
    assert "OUTCOME RuleApiPermissionError" in r.stdout, r
    _assert_refused(r, "compiling source")


def test_marshal_loads_of_a_site_packages_name(box, site_dir):
    r = _frame_from(box, site_dir, """
import marshal
name = SITE + '/anything.py'
fake = 'X' * len(name)
src = "def f():\\n    return sys._getframe(1).f_globals['__name__']\\n"
data = marshal.dumps(compile(src, fake, 'exec'))
exec(marshal.loads(data.replace(fake.encode(), name.encode())))
""", api=("ALLOW:dynamic-code", "ALLOW:deserialization"))
    assert "OUTCOME RuleApiPermissionError" in r.stdout, r
    _assert_refused(r, "unmarshalling code")


def test_fix_co_filename_to_a_site_packages_name(box, site_dir):
    r = _frame_from(box, site_dir, """
sys.modules['_imp']._fix_co_filename(f.__code__, SITE + '/anything.py')
""")
    assert "OUTCOME RuleApiPermissionError" in r.stdout, r
    _assert_refused(r, "_imp._fix_co_filename()")


def test_sys_path_detour_through_a_site_directory(box, site_dir):
    # importlib joins the entry as it is: the module, read from the script's
    # directory, is compiled under a name that starts with the site
    # directory's.
    box.write("dmod.py", PROBES, dedent=False)
    detour = site_dir + "/.." * site_dir.count("/") + str(box.root)
    r = box.run_code(EVAL_PROFILE.format(mods="dmod"),
                     f"import sys\nsys.path.insert(0, {detour!r})\nimport dmod\n")
    assert f"FILE {detour}/dmod.py" in r.stdout, r
    assert _probes(r.stdout) == dict.fromkeys(PROBE_NAMES, "REFUSED"), r


def test_the_same_probes_from_the_program_are_refused(box):
    # The baseline the attacks aim past.
    box.write("plain.py", PROBES, dedent=False)
    r = box.run_code(EVAL_PROFILE.format(mods="plain"), "import plain\n")
    assert _probes(r.stdout) == dict.fromkeys(PROBE_NAMES, "REFUSED"), r


# ---- real site-packages code keeps its exemption ------------------------------

def _site(box):
    """A site-packages directory of the box's own, put on sys.path by
    PYTHONPATH (the profile passes it): the guard exempts it as it does the
    system's."""
    return box.mkdir("lib/site-packages")


def _run_site(box, mods, script):
    site = _site(box)
    profile = EVAL_PROFILE.format(mods=mods) + "env=PYTHONPATH=${PYTHONPATH}\n"
    return box.run_code(profile, script, env={"PYTHONPATH": str(site)})


@pytest.mark.parametrize("layout", ["source", "cached", "sourceless", "sourceless-package",
                                    "moved-cache"])
def test_real_site_packages_code_keeps_its_exemption(box, layout):
    site = _site(box)
    src = box.write(f"lib/site-packages/sb_{layout.replace('-', '_')}.py", PROBES, dedent=False)
    name = src.stem
    if layout == "cached":
        py_compile.compile(str(src), cfile=importlib.util.cache_from_source(str(src)),
                           doraise=True)
    elif layout == "sourceless":
        py_compile.compile(str(src), cfile=str(src) + "c", doraise=True)
        src.unlink()
    elif layout == "sourceless-package":
        pkg = site / name
        pkg.mkdir()
        py_compile.compile(str(src), cfile=str(pkg / "__init__.pyc"),
                           dfile=str(pkg / "__init__.py"), doraise=True)
        src.unlink()
    elif layout == "moved-cache":
        # Compiled where the tree was before it moved: importlib renames the
        # code after its file (_imp._fix_co_filename), as CPython does.
        py_compile.compile(str(src), cfile=importlib.util.cache_from_source(str(src)),
                           dfile="/elsewhere/site-packages/" + src.name, doraise=True)
    for p in site.rglob("*"):
        box._chown(p)
    r = _run_site(box, name, f"import {name}\n")
    assert r.returncode == 0, r
    assert _probes(r.stdout) == dict.fromkeys(PROBE_NAMES, "ALLOWED"), r
    assert f"FILE {site}/" in r.stdout, r


def test_a_site_packages_cache_is_read_once(box):
    # Served like a standard-library cache (guard-open-code.h): the proof
    # that the code came from it is the buffer the guard read, no second
    # read.
    import ctypes
    import struct
    site = _site(box)
    src = box.write("lib/site-packages/sb_once.py", PROBES, dedent=False)
    cache = importlib.util.cache_from_source(str(src))
    py_compile.compile(str(src), cfile=cache, doraise=True)
    for p in site.rglob("*"):
        box._chown(p)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    # IN_OPEN, and IN_CLOSE_NOWRITE: the kernel folds an event into an
    # identical one still unread, two opens in a row would count as one.
    if fd < 0 or libc.inotify_add_watch(fd, os.path.dirname(cache).encode(), 0x30) < 0:
        pytest.skip(f"inotify: {os.strerror(ctypes.get_errno())}")
    try:
        r = _run_site(box, "sb_once", "import sb_once\nprint('CACHED', sb_once.__cached__)\n")
        opens = 0
        while True:
            try:
                buf = os.read(fd, 65536)
            except BlockingIOError:
                break
            pos = 0
            while pos < len(buf):
                _, mask, _, length = struct.unpack_from("iIII", buf, pos)
                name = buf[pos + 16:pos + 16 + length].rstrip(b"\0").decode()
                opens += bool(mask & 0x20) and name == os.path.basename(cache)
                pos += 16 + length
    finally:
        os.close(fd)
    assert r.returncode == 0, r
    assert f"CACHED {cache}" in r.stdout, r
    assert _probes(r.stdout) == dict.fromkeys(PROBE_NAMES, "ALLOWED"), r
    assert opens == 1, (opens, r)
