# SPDX-License-Identifier: MIT
"""expose-ro / expose-rw / ignore, enforced by the files part of the C guard.

Every run uses os-sandbox=subprocess: the guard alone (Landlock would refuse
too and hide a guard bug).  Layout, under the test's tmp dir:

    work/            the script's directory (readable: it is sys.path[0])
    work/ro/f        expose-ro=ro
    work/rw/         expose-rw=rw
    outside/secret   no rule

Each probe prints one JSON line: ["OK", repr] or [class, is FileNotFoundError,
is PermissionError, errno, message] for a refusal, ["OSError:<cls>", errno,
message] for an ordinary failure.  The tests also check on disk that the
refused effect did not happen.
"""

import json
import os
import stat
import textwrap

import pytest

from conftest import LANDLOCK_ABI

PRELUDE = """\
import os, sys, io, json, pathlib, shutil, tempfile, pysandboxes
RO, RW, OUT, WORK = {ro!r}, {rw!r}, {out!r}, {work!r}
SECRET = os.path.join(OUT, 'secret')
def probe(f):
    try:
        r = f()
    except pysandboxes.SandBoxError as e:
        return [type(e).__name__, isinstance(e, FileNotFoundError),
                isinstance(e, PermissionError), getattr(e, 'errno', None), str(e)]
    except OSError as e:
        return ['OSError:' + type(e).__name__, e.errno, str(e)]
    return ['OK', repr(r)]
def P(f):
    print(json.dumps(probe(f)))
"""


class Files:
    def __init__(self, sb):
        self.sb = sb
        self.work = sb.root
        self.ro = sb.mkdir("ro")
        self.rw = sb.mkdir("rw")
        self.out = sb.root.parent / "outside"
        self.out.mkdir(exist_ok=True)
        (self.out / "secret").write_text("TOP-SECRET\n")
        sb.write("ro/f", "read-only data\n")
        if sb.owner:
            os.chown(self.out, *sb.owner)
            os.chown(self.out / "secret", *sb.owner)
            os.chmod(self.out.parent, 0o755)

    def run(self, code, extra="", imports="*", env=None):
        self.sb.profile("os-sandbox=subprocess\n"
                        f"python-import={imports}\n"
                        "expose-ro=ro\n"
                        "expose-rw=rw\n" + textwrap.dedent(extra))
        body = PRELUDE.format(ro=str(self.ro), rw=str(self.rw), out=str(self.out),
                              work=str(self.work)) + textwrap.dedent(code)
        s = self.sb.write("s.py", body, dedent=False)
        r = self.sb.run(s, env=env)
        assert r.returncode == 0, r
        return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("[")]

    def one(self, code, **kw):
        res = self.run(code, **kw)
        assert len(res) == 1, res
        return res[0]


@pytest.fixture
def fx(sb):
    return Files(sb)


def not_found(res):
    assert res[0] == "RuleFileNotFoundError", res
    assert res[1] is True and res[3] == 2, res
    return res[4]


def read_only(res):
    assert res[0] == "RulePermissionError", res
    assert res[2] is True and res[3] == 13, res
    return res[4]


def ok(res):
    assert res[0] == "OK", res
    return res[1]


# --- §10.23: writing under expose-rw and expose-ro -------------------------------

def test_spec_23_write_under_rw(fx):
    ok(fx.one("P(lambda: open(os.path.join(RW, 'x'), 'w').write('data'))"))
    assert (fx.rw / "x").read_text() == "data"


def test_spec_23_write_under_ro_names_the_rule(fx):
    fx.sb.profile("os-sandbox=subprocess\npython-import=*\nexpose-ro=.\n")
    fx.sb.write("s.py", PRELUDE.format(ro="", rw="", out="", work="") +
                "P(lambda: open('hack.py', 'w'))\n", dedent=False)
    r = fx.sb.run(fx.sb.path("s.py"))
    res = json.loads(r.stdout)
    msg = read_only(res)
    prof = fx.sb.path(".py-sandboxes")
    assert f"Cannot write to '{fx.work}/'. Rule 'expose-ro=.' from {prof}:3" in msg
    assert "expose-rw=" in msg
    assert not fx.sb.path("hack.py").exists()


# --- §10.24: reading outside, ignore= ------------------------------------------

def test_spec_24_read_outside(fx):
    msg = not_found(fx.one("P(lambda: open(SECRET).read())"))
    assert f"Access to '{fx.out}/secret' must be accepted by a rule." in msg
    assert f"Add 'expose-ro={fx.out}' to '{fx.sb.path('.py-sandboxes')}'" in msg
    assert "TOP-SECRET" not in msg


def test_refusal_of_a_path_that_is_not_utf8_is_a_refusal(fx):
    """A bytes path need not be UTF-8: the refusal's message names it as
    os.fsdecode() would, and the program gets the refusal, not a
    UnicodeDecodeError from building it."""
    (fx.out / os.fsdecode(b"\xff\xfe\nf")).write_text("TOP-SECRET\n")
    res = fx.run("""
        P(lambda: open(os.fsencode(OUT) + b'/\\xff\\xfe\\nf').read())
        P(lambda: open(os.fsencode(RO) + b'/\\xff\\xfe', 'w'))
        """)
    assert len(res) == 2, res
    msg = not_found(res[0])
    assert f"Access to '{fx.out}/\udcff\udcfe\nf' must be accepted by a rule." in msg
    assert f"Add 'expose-ro={fx.out}'" in msg
    assert "TOP-SECRET" not in msg
    msg = read_only(res[1])
    assert f"Rule 'expose-ro=ro' from " in msg
    assert not (fx.ro / os.fsdecode(b"\xff\xfe")).exists()


def test_spec_24_ignore_hides_file(fx):
    fx.sb.write("rw/.env", "PASSWORD=x\n")
    msg = not_found(fx.one("P(lambda: open(os.path.join(RW, '.env')).read())",
                           extra="ignore=.env\n"))
    assert f"Access to '{fx.rw}/.env' is ignored by rule 'ignore=.env' from " \
           f"{fx.sb.path('.py-sandboxes')}:5" in msg


def test_ignore_in_script_directory(fx):
    fx.sb.write(".env", "PASSWORD=x\n")
    msg = not_found(fx.one("P(lambda: open('.env').read())", extra="ignore=.env\n"))
    assert "Access to '.env' is ignored by rule 'ignore=.env'" in msg


def test_ignore_hides_entries_from_listings(fx):
    fx.sb.write("rw/.env", "x")
    fx.sb.write("rw/keep", "x")
    res = fx.run("""
        P(lambda: sorted(os.listdir(RW)))
        P(lambda: sorted(e.name for e in os.scandir(RW)))
        P(lambda: sorted(p.name for p in pathlib.Path(RW).iterdir()))
        P(lambda: sorted(os.path.basename(p) for p in __import__('glob').glob(RW + '/.*')))
        P(lambda: sorted(f for _, _, fs in os.walk(RW) for f in fs))
        with os.scandir(RW) as it:
            P(lambda: sorted(e.name for e in it))
    """, extra="ignore=.env\n")
    for r in res:
        assert r[0] == "OK" and ".env" not in r[1], res
    assert "keep" in res[0][1]


def test_ignore_directory_hides_everything_under_it(fx):
    fx.sb.write("ro/.git/config", "[core]\n")
    res = fx.run("""
        P(lambda: open(os.path.join(RO, '.git', 'config')).read())
        P(lambda: os.listdir(os.path.join(RO, '.git')))
    """, extra="ignore=.git\n")
    for r in res:
        assert "ignored by rule 'ignore=.git'" in not_found(r)


def test_ignore_never_hides_an_exposed_root(fx):
    d = fx.sb.mkdir(".venv-data")
    (d / "x").write_text("ok")
    res = fx.one("P(lambda: open(os.path.join(WORK, '.venv-data', 'x')).read())",
                 extra="expose-ro=.venv-data\nignore=.*\n")
    assert ok(res) == "'ok'"


def test_ignore_glob_and_absolute_pattern(fx):
    fx.sb.write("rw/a.key", "k")
    fx.sb.write("rw/priv/inner", "p")
    res = fx.run("""
        P(lambda: open(os.path.join(RW, 'a.key')).read())
        P(lambda: open(os.path.join(RW, 'priv', 'inner')).read())
    """, extra=f"ignore=*.key\nignore={fx.rw}/priv\n")
    assert "ignore=*.key" in not_found(res[0])
    assert f"ignore={fx.rw}/priv" in not_found(res[1])


def test_ignore_through_a_symlink_name(fx):
    fx.sb.write("rw/.env", "x")
    os.symlink(".env", fx.rw / "innocent")
    not_found(fx.one("P(lambda: open(os.path.join(RW, 'innocent')).read())",
                     extra="ignore=.env\n"))


# --- §10.25: symbolic links ----------------------------------------------------

@pytest.mark.parametrize("relative", [False, True])
def test_spec_25_symlink_inside_pointing_outside(fx, relative):
    target = os.path.relpath(fx.out / "secret", fx.rw) if relative else str(fx.out / "secret")
    os.symlink(target, fx.rw / "link")
    msg = not_found(fx.one("P(lambda: open(os.path.join(RW, 'link')).read())"))
    assert "symbolic link" in msg
    assert "TOP-SECRET" not in msg


def test_spec_25_readlink_outside_refused(fx):
    os.symlink(fx.out / "secret", fx.rw / "link")
    os.symlink("../ro/f", fx.rw / "inside")
    res = fx.run("""
        P(lambda: os.readlink(os.path.join(RW, 'link')))
        P(lambda: os.readlink(os.path.join(RW, 'inside')))
        P(lambda: os.path.realpath(os.path.join(RW, 'link')))
    """)
    msg = not_found(res[0])
    assert str(fx.out) not in msg
    assert ok(res[1]) == "'../ro/f'"
    assert res[2][0] == "RuleFileNotFoundError" or str(fx.out) not in res[2][1], res


@pytest.mark.parametrize("target", ["abs", "rel"])
def test_spec_25_symlink_creation_to_outside_refused(fx, target):
    t = str(fx.out / "secret") if target == "abs" else "../../outside/secret"
    not_found(fx.one(f"P(lambda: os.symlink({t!r}, os.path.join(RW, 'l')))"))
    assert not os.path.lexists(fx.rw / "l")


def test_symlink_creation_inside_allowed(fx):
    ok(fx.one("P(lambda: os.symlink('../ro/f', os.path.join(RW, 'l')))"))
    assert os.readlink(fx.rw / "l") == "../ro/f"


def test_symlink_in_ro_dir_refused(fx):
    read_only(fx.one("P(lambda: os.symlink('f', os.path.join(RO, 'l')))"))
    assert not os.path.lexists(fx.ro / "l")


def test_dangling_link_cannot_create_outside(fx):
    os.symlink(fx.out / "created", fx.rw / "dangling")
    not_found(fx.one("P(lambda: open(os.path.join(RW, 'dangling'), 'w').write('x'))"))
    assert not (fx.out / "created").exists()


def test_symlinked_directory_in_rw_to_outside(fx):
    os.symlink(fx.out, fx.rw / "dir")
    res = fx.run("""
        P(lambda: open(os.path.join(RW, 'dir', 'new'), 'w'))
        P(lambda: os.listdir(os.path.join(RW, 'dir')))
    """)
    not_found(res[0])
    not_found(res[1])
    assert not (fx.out / "new").exists()


# --- hard links -----------------------------------------------------------------

def test_hard_link_to_ro_file_refused(fx):
    read_only(fx.one("P(lambda: os.link(os.path.join(RO, 'f'), os.path.join(RW, 'h')))"))
    assert not (fx.rw / "h").exists()


def test_hard_link_to_outside_refused(fx):
    not_found(fx.one("P(lambda: os.link(SECRET, os.path.join(RW, 'h')))"))
    assert not (fx.rw / "h").exists()


def test_hard_link_within_rw_allowed(fx):
    fx.sb.write("rw/a", "a")
    ok(fx.one("P(lambda: os.link(os.path.join(RW, 'a'), os.path.join(RW, 'b')))"))
    assert (fx.rw / "b").read_text() == "a"


# --- §10.26: grants resolve at start ------------------------------------------------

def test_spec_26_grant_through_symlinked_directory(fx):
    real = fx.sb.mkdir("real")
    (real / "d").write_text("through")
    os.symlink("real", fx.work / "alias")
    res = fx.run("""
        P(lambda: open(os.path.join(WORK, 'alias', 'd')).read())
        P(lambda: open(os.path.join(WORK, 'real', 'd'), 'a').write('!'))
    """, extra="expose-rw=alias\n")
    assert ok(res[0]) == "'through'"
    ok(res[1])
    assert (real / "d").read_text() == "through!"


@pytest.mark.parametrize("rule,err", [
    ("expose-ro=/nonexistent-sb-dir", "must exist"),
    ("expose-ro=ro/f", "must be a directory"),
    ("expose-ro=a,b", "single path"),
    ("expose-rw=ro", "ro"),
])
def test_spec_26_profile_errors(fx, rule, err):
    fx.sb.profile(f"os-sandbox=subprocess\npython-import=*\nexpose-ro=ro\n{rule}\n")
    marker = fx.rw / "MARK"
    s = fx.sb.script(f"open({str(marker)!r}, 'w')\n")
    r = fx.sb.run(s)
    assert r.returncode == 255, r
    assert err in r.stderr
    assert not marker.exists()


# --- §10.27: dir_fd --------------------------------------------------------------

def test_spec_27_dir_fd_of_ro_dir(fx):
    fx.sb.write("ro/g", "g")
    res = fx.run("""
        fd = os.open(RO, os.O_RDONLY)
        P(lambda: os.unlink('g', dir_fd=fd))
        P(lambda: os.rename('g', 'h', src_dir_fd=fd, dst_dir_fd=fd))
        P(lambda: os.open('new', os.O_WRONLY | os.O_CREAT, dir_fd=fd))
        P(lambda: os.open('g', os.O_WRONLY, dir_fd=fd))
        P(lambda: os.mkdir('d', dir_fd=fd))
        P(lambda: os.rmdir('d', dir_fd=fd))
        P(lambda: os.chmod('g', 0o777, dir_fd=fd))
        P(lambda: os.symlink('g', 's', dir_fd=fd))
        P(lambda: os.mkfifo('fifo', dir_fd=fd))
        P(lambda: os.utime('g', dir_fd=fd))
        P(lambda: os.open('g', os.O_RDONLY, dir_fd=fd) >= 0)
        P(lambda: os.stat('g', dir_fd=fd).st_size)
    """)
    for r in res[:6]:
        assert r[0] in ("RulePermissionError",), res
    for r in res[6:10]:
        read_only(r)
    assert ok(res[10]) == "True"
    assert ok(res[11]) == "1"
    assert sorted(os.listdir(fx.ro)) == ["f", "g"]
    assert stat.S_IMODE(os.stat(fx.ro / "g").st_mode) != 0o777


def test_spec_27_dir_fd_escaping_to_outside(fx):
    res = fx.run("""
        fd = os.open(RO, os.O_RDONLY)
        P(lambda: os.open('../../outside/secret', os.O_RDONLY, dir_fd=fd))
        P(lambda: os.stat('../../outside/secret', dir_fd=fd))
        P(lambda: os.access('../../outside/secret', os.R_OK, dir_fd=fd))
        P(lambda: os.readlink('../../outside/secret', dir_fd=fd))
    """)
    for r in res:
        not_found(r)


def test_spec_27_unresolvable_dir_fd_refused(fx):
    fx.sb.write("rw/file", "x")
    fx.sb.mkdir("rw/gone")
    res = fx.run("""
        ffd = os.open(os.path.join(RW, 'file'), os.O_RDONLY)
        P(lambda: os.open('x', os.O_WRONLY | os.O_CREAT, dir_fd=ffd))
        P(lambda: os.unlink('x', dir_fd=ffd))
        gfd = os.open(os.path.join(RW, 'gone'), os.O_RDONLY)
        os.rmdir(os.path.join(RW, 'gone'))
        P(lambda: os.stat('x', dir_fd=gfd))
        P(lambda: os.mkdir('y', dir_fd=gfd))
        P(lambda: os.unlink('x', dir_fd=12345))
    """)
    for r in res:
        msg = not_found(r)
        assert "dir_fd" in msg


def test_dir_fd_of_rw_dir_allowed(fx):
    fx.sb.write("rw/g", "g")
    res = fx.run("""
        fd = os.open(RW, os.O_RDONLY)
        P(lambda: os.rename('g', 'h', src_dir_fd=fd, dst_dir_fd=fd))
        P(lambda: os.close(os.open('new', os.O_WRONLY | os.O_CREAT, dir_fd=fd)))
        P(lambda: os.unlink('h', dir_fd=fd))
    """)
    for r in res:
        ok(r)
    assert sorted(os.listdir(fx.rw)) == ["new"]


def test_fwalk_and_rmtree_use_dir_fd(fx):
    fx.sb.write("rw/t/a/b", "x")
    res = fx.run("""
        P(lambda: sorted(f for _, _, fs, _ in os.fwalk(RW) for f in fs))
        P(lambda: shutil.rmtree(os.path.join(RW, 't')))
    """)
    assert ok(res[0]) == "['b']"
    ok(res[1])
    assert not (fx.rw / "t").exists()


# --- open in every form ----------------------------------------------------------

OPEN_READS = [
    "open(SECRET).read()",
    "io.open(SECRET).read()",
    "os.read(os.open(SECRET, os.O_RDONLY), 10)",
    "io.FileIO(SECRET).read()",
    "io.open_code(SECRET).read()",
    "pathlib.Path(SECRET).read_text()",
    "pathlib.Path(SECRET).read_bytes()",
    "pathlib.Path(SECRET).open().read()",
    "open(SECRET.encode()).read()",
    "__import__('fileinput').input(SECRET).readline()",
    "__import__('gzip').open(SECRET).read()",
    "__import__('linecache').getline(SECRET, 1) or (_ for _ in ()).throw(FileNotFoundError)",
]


@pytest.mark.parametrize("expr", OPEN_READS)
def test_open_forms_outside_refused(fx, expr):
    res = fx.one(f"P(lambda: {expr})")
    assert res[0] in ("RuleFileNotFoundError", "OSError:FileNotFoundError"), res
    assert "TOP-SECRET" not in json.dumps(res)


OPEN_WRITES = [
    "open(os.path.join(RO, 'n'), 'w')",
    "open(os.path.join(RO, 'f'), 'a')",
    "open(os.path.join(RO, 'f'), 'r+')",
    "open(os.path.join(RO, 'n'), 'x')",
    "os.open(os.path.join(RO, 'n'), os.O_WRONLY | os.O_CREAT)",
    "os.open(os.path.join(RO, 'f'), os.O_RDONLY | os.O_TRUNC)",
    "io.FileIO(os.path.join(RO, 'n'), 'w')",
    "pathlib.Path(RO, 'n').write_text('x')",
    "pathlib.Path(RO, 'n').touch()",
    "pathlib.Path(RO, 'n').open('wb')",
]


@pytest.mark.parametrize("expr", OPEN_WRITES)
def test_open_forms_write_under_ro_refused(fx, expr):
    read_only(fx.one(f"P(lambda: {expr})"))
    assert sorted(os.listdir(fx.ro)) == ["f"]
    assert (fx.ro / "f").read_text() == "read-only data\n"


def test_open_forms_allowed(fx):
    res = fx.run("""
        P(lambda: open(os.path.join(RO, 'f')).read())
        P(lambda: io.FileIO(os.path.join(RO, 'f')).read())
        P(lambda: pathlib.Path(RW, 'p').write_text('w'))
        P(lambda: pathlib.Path(RW, 'p').read_text())
        P(lambda: os.close(os.open(os.path.join(RW, 'q'), os.O_WRONLY | os.O_CREAT)))
        P(lambda: open('/dev/null', 'w').write('x'))
    """)
    for r in res:
        ok(r)
    assert res[3][1] == "'w'"


# --- stat-like calls: refused and not revealed --------------------------------------

STAT_FORMS = [
    ("os.stat(SECRET)", "refused"),
    ("os.lstat(SECRET)", "refused"),
    ("os.access(SECRET, os.F_OK)", "refused"),
    ("os.statvfs(SECRET)", "refused"),
    ("os.pathconf(SECRET, 'PC_NAME_MAX')", "refused"),
    ("os.stat(OUT)", "refused"),
    ("pathlib.Path(SECRET).stat()", "refused"),
    ("os.path.getsize(SECRET)", "refused"),
    ("os.path.exists(SECRET)", "False"),
    ("os.path.isfile(SECRET)", "False"),
    ("os.path.isdir(OUT)", "False"),
    ("os.path.lexists(SECRET)", "False"),
    ("pathlib.Path(SECRET).exists()", "False"),
    ("os.listdir(OUT)", "refused"),
    ("list(os.scandir(OUT))", "refused"),
    ("list(os.walk(OUT))", "[]"),
    ("__import__('glob').glob(OUT + '/*')", "[]"),
    ("list(pathlib.Path(OUT).iterdir())", "refused"),
    ("list(pathlib.Path(OUT).glob('*'))", "[]"),
    ("os.chdir(OUT)", "refused"),
    ("shutil.disk_usage(OUT)", "refused"),
]


@pytest.mark.parametrize("expr,want", STAT_FORMS)
def test_stat_like_outside(fx, expr, want):
    res = fx.one(f"P(lambda: {expr})")
    if want == "refused":
        not_found(res)
    else:
        assert ok(res) == want


def test_posix_spelling_and_no_reference_to_original(fx):
    res = fx.run("""
        import posix, gc
        P(lambda: posix.stat(SECRET))
        P(lambda: posix.open(SECRET, posix.O_RDONLY))
        P(lambda: [type(r).__name__ for r in gc.get_referents(os.stat)])
        P(lambda: os.stat is posix.stat and os.lstat.__name__)
        P(lambda: str(__import__('inspect').signature(os.stat)))
    """, extra="python-api=ALLOW:gc.get_referents\n")
    not_found(res[0])
    not_found(res[1])
    assert "builtin_function_or_method" not in res[2][1], res
    assert ok(res[3]) == "'lstat'"
    assert ok(res[4]) == "'(path, *, dir_fd=None, follow_symlinks=True)'"


# --- shutil ------------------------------------------------------------------

def test_shutil_copy(fx):
    res = fx.run("""
        P(lambda: shutil.copy(os.path.join(RO, 'f'), os.path.join(RW, 'c')))
        P(lambda: shutil.copy(SECRET, os.path.join(RW, 's')))
        P(lambda: shutil.copy(os.path.join(RO, 'f'), os.path.join(RO, 'c')))
        P(lambda: shutil.copyfile(os.path.join(RO, 'f'), os.path.join(OUT, 'c')))
    """)
    ok(res[0])
    not_found(res[1])
    read_only(res[2])
    not_found(res[3])
    assert sorted(os.listdir(fx.rw)) == ["c"]
    assert sorted(os.listdir(fx.ro)) == ["f"]
    assert sorted(os.listdir(fx.out)) == ["secret"]


def test_shutil_copytree_rmtree_move(fx):
    fx.sb.write("ro/tree/x", "x")
    fx.sb.write("rw/mine/y", "y")
    res = fx.run("""
        P(lambda: shutil.copytree(os.path.join(RO, 'tree'), os.path.join(RW, 'copy')))
        P(lambda: shutil.copytree(os.path.join(RO, 'tree'), os.path.join(RO, 'copy')))
        P(lambda: shutil.copytree(OUT, os.path.join(RW, 'stolen')))
        P(lambda: shutil.rmtree(os.path.join(RO, 'tree')))
        P(lambda: shutil.move(os.path.join(RO, 'f'), os.path.join(RW, 'f')))
        P(lambda: shutil.move(os.path.join(RW, 'mine'), OUT))
        P(lambda: shutil.rmtree(os.path.join(RW, 'mine')))
    """)
    ok(res[0])
    read_only(res[1])
    not_found(res[2])
    read_only(res[3])
    read_only(res[4])
    not_found(res[5])
    ok(res[6])
    assert (fx.rw / "copy" / "x").read_text() == "x"
    assert (fx.ro / "tree" / "x").exists() and (fx.ro / "f").exists()
    assert not (fx.ro / "copy").exists() and not (fx.rw / "stolen").exists()
    assert sorted(os.listdir(fx.out)) == ["secret"]
    assert not (fx.rw / "mine").exists()


# --- tempfile ----------------------------------------------------------------

def test_tempfile_under_rw_tmpdir(fx):
    tmp = fx.sb.mkdir("rw/tmp")
    res = fx.run("""
        P(lambda: os.close(tempfile.mkstemp()[0]))
        P(lambda: os.path.dirname(tempfile.mkdtemp()))
        P(lambda: tempfile.mkstemp(dir=OUT))
        P(lambda: tempfile.mkdtemp(dir=RO))
    """, extra=f"env=TMPDIR={tmp}\n")
    ok(res[0])
    assert ok(res[1]) == repr(str(tmp))
    not_found(res[2])
    read_only(res[3])
    assert len(os.listdir(tmp)) == 2
    assert sorted(os.listdir(fx.out)) == ["secret"]
    assert sorted(os.listdir(fx.ro)) == ["f"]


def test_tempfile_without_rw_tmpdir(fx):
    res = fx.one("P(lambda: tempfile.mkstemp())", extra="env=TMPDIR=/tmp\n")
    assert res[0] in ("OSError:FileNotFoundError", "RuleFileNotFoundError"), res


# --- metadata changes across ro/rw -------------------------------------------------

CHANGES = [
    "os.chmod({d}/'f', 0o600)",
    "os.chown({d}/'f', -1, -1)",
    "os.utime({d}/'f', (0, 0))",
    "os.truncate({d}/'f', 0)",
    "os.mkdir({d}/'newdir')",
    "os.remove({d}/'f')",
    "os.rename({d}/'f', {d}/'g')",
    "os.replace({d}/'f', {d}/'g')",
    "os.mkfifo({d}/'fifo')",
    "os.setxattr({d}/'f', 'user.sb', b'1')",
    "pathlib.Path({d}, 'f').unlink()",
    "pathlib.Path({d}, 'f').rename(pathlib.Path({d}, 'g'))",
]


@pytest.mark.parametrize("expr", CHANGES)
def test_changes_under_ro_refused(fx, expr):
    before = os.stat(fx.ro / "f")
    read_only(fx.one("d = pathlib.Path(RO)\nP(lambda: " + expr.format(d="d") + ")"))
    after = os.stat(fx.ro / "f")
    assert sorted(os.listdir(fx.ro)) == ["f"]
    assert (before.st_mode, before.st_mtime_ns, before.st_size) == \
        (after.st_mode, after.st_mtime_ns, after.st_size)


@pytest.mark.parametrize("expr", CHANGES)
def test_changes_under_rw_allowed(fx, expr):
    fx.sb.write("rw/f", "data\n")
    res = fx.one("d = pathlib.Path(RW)\nP(lambda: " + expr.format(d="d") + ")")
    if "xattr" in expr and res[0].startswith("OSError"):
        pytest.skip("no user xattrs on this file system")
    ok(res)


def test_rmdir_and_rename_across_grants(fx):
    fx.sb.mkdir("ro/sub")
    fx.sb.write("rw/mine", "m")
    res = fx.run("""
        P(lambda: os.rmdir(os.path.join(RO, 'sub')))
        P(lambda: os.rename(os.path.join(RW, 'mine'), os.path.join(RO, 'mine')))
        P(lambda: os.rename(os.path.join(RO, 'f'), os.path.join(RW, 'f')))
        P(lambda: os.rename(os.path.join(RW, 'mine'), os.path.join(OUT, 'mine')))
        P(lambda: os.removedirs(os.path.join(RO, 'sub')))
    """)
    read_only(res[0])
    read_only(res[1])
    read_only(res[2])
    not_found(res[3])
    read_only(res[4])
    assert (fx.ro / "sub").is_dir() and (fx.rw / "mine").exists() and (fx.ro / "f").exists()


# --- path objects that could change between check and use ---------------------------

def test_fspath_that_changes_answer(fx):
    res = fx.run("""
        class Evil:
            n = 0
            def __fspath__(self):
                Evil.n += 1
                return SECRET if Evil.n == 1 else os.path.join(RO, 'f')
        P(lambda: open(Evil()).read())
        Evil.n = 0
        P(lambda: os.stat(Evil()))
        Evil.n = 0
        P(lambda: pathlib.Path(Evil()).read_text())
    """)
    for r in res:
        not_found(r)
        assert "TOP-SECRET" not in json.dumps(r)


def test_bytearray_path_changed_by_warning_filter(fx):
    res = fx.one("""
        import warnings
        p = bytearray(SECRET.encode())
        def show(*a, **k):
            p[:] = os.path.join(RO, 'f').encode()
        warnings.showwarning = show
        warnings.simplefilter('always')
        P(lambda: os.stat(p))
    """)
    not_found(res)


# --- held fds, implicit grants, the runtime ---------------------------------------------

def test_held_fd_is_a_capability(fx):
    res = fx.run("""
        fd = os.open(RO, os.O_RDONLY)
        P(lambda: sorted(os.listdir(fd)))
        P(lambda: os.fstat(fd).st_mode > 0)
        P(lambda: [e.name for e in os.scandir(fd)])
    """)
    assert ok(res[0]) == "['f']"
    ok(res[1])
    ok(res[2])


def test_implicit_grants(fx):
    res = fx.run("""
        P(lambda: len(open(os.__file__).read()) > 0)
        P(lambda: open(os.__file__, 'a'))
        P(lambda: os.path.isdir('/etc/ssl') == os.path.isdir('/etc/ssl'))
        P(lambda: open('/etc/passwd').read())
        P(lambda: open(__file__).read(3))
    """)
    assert ok(res[0]) == "True"
    msg = read_only(res[1])
    # The interpreter's tree is a system directory: no grant is offered.
    assert "it is exposed read-only without a rule (the interpreter's files), and no rule " \
        "should grant writing in the system directory" in msg, msg
    assert "expose-rw=" not in msg
    ok(res[2])
    not_found(res[3])
    ok(res[4])


def test_runtime_tracebacks_and_imports_keep_working(fx):
    fx.sb.write("helper.py", "def boom():\n    raise ValueError('marker-line')\n")
    fx.sb.profile("os-sandbox=subprocess\npython-import=*\n")
    s = fx.sb.script("import json, helper\nprint(json.dumps([1]))\nhelper.boom()\n")
    r = fx.sb.run(s)
    assert r.returncode == 1, r
    assert r.stdout == "[1]\n"
    assert "raise ValueError('marker-line')" in r.stderr  # source line via linecache
    assert "helper.boom()" in r.stderr


def test_sys_path_added_later_is_not_a_grant(fx):
    (fx.out / "stolenmod.py").write_text("X = 1\n")
    fx.run("""
        sys.path.insert(0, OUT)
        try:
            import stolenmod
            print('IMPORTED', stolenmod.X)
        except ImportError as e:
            print('REFUSED', type(e).__name__)
    """)
    r = fx.sb.run(fx.sb.path("s.py"))
    assert r.stdout == "REFUSED ModuleNotFoundError\n", r


def test_sqlite_paths(fx):
    res = fx.run("""
        import sqlite3
        P(lambda: sqlite3.connect(':memory:').close())
        P(lambda: sqlite3.connect(os.path.join(RW, 'db')).close())
        P(lambda: sqlite3.connect(os.path.join(OUT, 'db')))
        P(lambda: sqlite3.connect('file:' + os.path.join(OUT, 'db2'), uri=True))
    """)
    ok(res[0])
    ok(res[1])
    not_found(res[2])
    not_found(res[3])
    assert sorted(os.listdir(fx.out)) == ["secret"]


# --- the resolution cache, stat() answered by lstat() (bench/README.md, "Guard overhead") ---

def test_stat_decides_on_where_links_lead(fx):
    os.symlink(fx.out / "secret", fx.rw / "link")
    os.symlink("../ro/f", fx.rw / "inside")
    res = fx.run("""
        import stat
        P(lambda: os.stat(os.path.join(RW, 'link')).st_size)
        P(lambda: stat.S_ISLNK(os.lstat(os.path.join(RW, 'link')).st_mode))
        P(lambda: os.stat(os.path.join(RW, 'inside')).st_size)
        P(lambda: os.path.exists(os.path.join(RW, 'link')))
        P(lambda: os.stat(os.path.join(RW, 'nothing')))
        P(lambda: os.stat(os.path.join(RW, 'no', 'such', 'dir')))
        P(lambda: os.stat(os.path.join(OUT, 'nothing')))
        P(lambda: os.stat(os.path.join(RW, 'link')).st_size)
    """)
    not_found(res[0])
    assert ok(res[1]) == "True"
    assert ok(res[2]) == str(len("read-only data\n"))  # the target's, not the link's
    assert ok(res[3]) == "False"
    assert res[4][:2] == ["OSError:FileNotFoundError", 2], res[4]
    assert res[5][:2] == ["OSError:FileNotFoundError", 2], res[5]
    not_found(res[6])
    not_found(res[7])  # asked again: still refused


def test_listed_directory_still_sees_its_links(fx):
    # Enough names for the guard to list the directory's links once.
    for i in range(5):
        fx.sb.write(f"rw/f{i}", str(i))
    os.symlink(fx.out / "secret", fx.rw / "link")
    os.symlink("../ro/f", fx.rw / "inside")
    res = fx.run("""
        for i in range(5):
            P(lambda: open(os.path.join(RW, 'f%d' % i)).read())
        P(lambda: open(os.path.join(RW, 'link')).read())
        P(lambda: open(os.path.join(RW, 'inside')).read())
        P(lambda: os.stat(os.path.join(RW, 'link')))
    """)
    assert [ok(r) for r in res[:5]] == [repr(str(i)) for i in range(5)]
    not_found(res[5])
    assert ok(res[6]) == repr("read-only data\n")
    not_found(res[7])
    assert "TOP-SECRET" not in json.dumps(res)


def test_cache_forgets_when_a_link_is_renamed_over_a_file(fx):
    fx.sb.write("rw/x", "plain")
    os.symlink(fx.out / "secret", fx.rw / "evil")
    res = fx.run("""
        P(lambda: os.stat(os.path.join(RW, 'x')).st_size)
        P(lambda: open(os.path.join(RW, 'x')).read())
        P(lambda: os.rename(os.path.join(RW, 'evil'), os.path.join(RW, 'x')))
        P(lambda: os.stat(os.path.join(RW, 'x')).st_size)
        P(lambda: open(os.path.join(RW, 'x')).read())
    """)
    assert ok(res[0]) == "5"
    assert ok(res[1]) == "'plain'"
    ok(res[2])
    not_found(res[3])
    not_found(res[4])
    assert os.path.islink(fx.rw / "x")
    assert "TOP-SECRET" not in json.dumps(res)


def test_cache_forgets_when_a_link_is_made_in_a_listed_directory(fx):
    for i in range(3):
        fx.sb.write(f"rw/f{i}", str(i))
    fx.sb.write("ro/g", "g-data")
    res = fx.run("""
        for i in range(3):
            P(lambda: open(os.path.join(RW, 'f%d' % i)).read())
        P(lambda: os.stat(os.path.join(RW, 'later')))
        P(lambda: os.symlink('../ro/g', os.path.join(RW, 'later')))
        P(lambda: open(os.path.join(RW, 'later')).read())
        P(lambda: os.stat(os.path.join(RW, 'later')).st_size)
    """)
    assert res[3][:2] == ["OSError:FileNotFoundError", 2], res[3]
    ok(res[4])
    assert ok(res[5]) == "'g-data'"
    assert ok(res[6]) == "6"


def test_trailing_slash_or_dot_follows_the_link_even_for_lstat(fx):
    # lstat("link/.") and lstat("link/") are about the link's target: the
    # decision must be too.
    os.symlink(fx.out, fx.rw / "dirlink")
    res = fx.run("""
        import stat
        P(lambda: os.lstat(os.path.join(RW, 'dirlink') + '/.').st_ino)
        P(lambda: os.lstat(os.path.join(RW, 'dirlink') + '/').st_ino)
        P(lambda: os.stat(os.path.join(RW, 'dirlink') + '/.').st_ino)
        P(lambda: os.stat(os.path.join(RW, 'dirlink')).st_ino)
        P(lambda: stat.S_ISLNK(os.lstat(os.path.join(RW, 'dirlink')).st_mode))
    """)
    for r in res[:4]:
        not_found(r)
    assert ok(res[4]) == "True"


def test_follow_symlinks_is_asked_once(fx):
    # A __bool__ that answers False to the guard and True to os.stat would
    # have the guard decide on the link and os.stat follow it outside.
    os.symlink(fx.out / "secret", fx.rw / "link")
    res = fx.run("""
        import stat
        class Flip:
            calls = 0
            def __bool__(self):
                Flip.calls += 1
                return Flip.calls > 1
        P(lambda: stat.S_ISLNK(os.stat(os.path.join(RW, 'link'),
                                       follow_symlinks=Flip()).st_mode))
        P(lambda: Flip.calls)
        Flip.calls = 0
        P(lambda: os.access(os.path.join(RW, 'link'), os.R_OK, follow_symlinks=Flip()))
        P(lambda: Flip.calls)
    """)
    assert ok(res[0]) == "True"  # the link itself, as decided
    assert ok(res[1]) == "1"
    ok(res[2])  # about the link too (it exists: True)
    assert ok(res[3]) == "1"


def test_proc_self_is_not_remembered(fx):
    # /proc/self/cwd and /proc/self/fd/N lead elsewhere after an fchdir() or
    # once fd N is another directory, which writes nothing: a remembered
    # resolution would decide on the old directory's file and open the new
    # one's (here one that ignore= hides).
    hidden = fx.sb.mkdir("hidden")
    (hidden / "f").write_text("hidden data")
    if fx.sb.owner:
        os.chown(hidden / "f", *fx.sb.owner)
    res = fx.run(f"""
        HIDDEN = {str(hidden)!r}
        fd = os.open(RO, os.O_RDONLY)
        P(lambda: open('/proc/self/fd/%d/f' % fd).read())
        os.close(fd)
        fd2 = os.open(HIDDEN, os.O_RDONLY)
        P(lambda: fd2 == fd)
        P(lambda: open('/proc/self/fd/%d/f' % fd2).read())
        os.close(fd2)
        os.chdir(RO)
        P(lambda: open('/proc/self/cwd/f').read())
        fd3 = os.open(HIDDEN, os.O_RDONLY)
        os.fchdir(fd3)
        P(lambda: open('/proc/self/cwd/f').read())
        P(lambda: open('f').read())
    """, extra=f"expose-ro=/proc\nignore={hidden}/f\n")
    assert ok(res[0]) == repr("read-only data\n")
    assert ok(res[1]) == "True"
    assert "ignore=" in not_found(res[2])
    assert ok(res[3]) == repr("read-only data\n")
    assert "ignore=" in not_found(res[4])
    assert "ignore=" in not_found(res[5])
    assert "hidden data" not in json.dumps(res), res

def test_same_path_object_is_decided_again_after_a_write(fx):
    # The guard remembers the last path object a read was allowed for (one
    # str handed to os.stat, os.path.exists and open in a row): a write in
    # between (a link renamed over the file) must end that, for str and bytes.
    fx.sb.write("rw/x", "plain")
    fx.sb.write("rw/y", "plain")
    os.symlink(fx.out / "secret", fx.rw / "evil")
    os.symlink(fx.out / "secret", fx.rw / "evil2")
    res = fx.run("""
        x, evil = os.path.join(RW, 'x'), os.path.join(RW, 'evil')
        y, evil2 = os.fsencode(os.path.join(RW, 'y')), os.path.join(RW, 'evil2')
        for p, e in ((x, evil), (y, evil2)):
            P(lambda: os.stat(p).st_size)
            P(lambda: os.path.exists(p))
            P(lambda: open(p).read())
            P(lambda: os.rename(e, p))
            P(lambda: os.stat(p).st_size)
            P(lambda: os.path.exists(p))
            P(lambda: open(p).read())
    """)
    for k in (0, 7):
        assert ok(res[k]) == "5"
        assert ok(res[k + 1]) == "True"
        assert ok(res[k + 2]) == "'plain'"
        ok(res[k + 3])
        not_found(res[k + 4])
        assert ok(res[k + 5]) == "False"
        not_found(res[k + 6])
    assert os.path.islink(fx.rw / "x") and os.path.islink(fx.rw / "y")
    assert "TOP-SECRET" not in json.dumps(res)


def test_remembered_path_object_keeps_its_follow_symlinks(fx):
    # lstat() of a link in an exposed directory is allowed (the link
    # itself); stat() and open() of the same str object follow it outside.
    os.symlink(fx.out / "secret", fx.rw / "link")
    res = fx.run("""
        import stat
        link = os.path.join(RW, 'link')
        P(lambda: stat.S_ISLNK(os.lstat(link).st_mode))
        P(lambda: stat.S_ISLNK(os.lstat(link).st_mode))
        P(lambda: os.stat(link))
        P(lambda: open(link).read())
        P(lambda: stat.S_ISLNK(os.stat(link, follow_symlinks=False).st_mode))
    """)
    assert ok(res[0]) == "True" and ok(res[1]) == "True"
    not_found(res[2])
    not_found(res[3])
    assert ok(res[4]) == "True"
    assert "TOP-SECRET" not in json.dumps(res)


def test_cache_forgets_a_missing_name_made_a_link(fx):
    # Missing names are remembered as missing (gettext and configuration
    # probes ask again and again): making one a link is a write decision that
    # forgets it, and the next read through it is decided where the link
    # leads, here a file ignore= hides.
    hidden = fx.sb.mkdir("hidden")
    (hidden / "f").write_text("hidden data")
    if fx.sb.owner:
        os.chown(hidden / "f", *fx.sb.owner)
    res = fx.run(f"""
        HIDDEN = {str(hidden)!r}
        gone = os.path.join(RW, 'gone')
        for _ in range(2):
            P(lambda: os.stat(os.path.join(gone, 'f')))
            P(lambda: open(os.path.join(gone, 'f')).read())
            P(lambda: os.stat(gone))
        P(lambda: os.symlink(HIDDEN, gone))
        P(lambda: open(os.path.join(gone, 'f')).read())
        P(lambda: os.stat(os.path.join(gone, 'f')).st_size)
    """, extra=f"expose-ro={hidden}\nignore={hidden}/f\n")
    for r in res[:6]:
        assert r[:2] == ["OSError:FileNotFoundError", 2], r
    ok(res[6])
    assert "ignore=" in not_found(res[7])
    assert "ignore=" in not_found(res[8])
    assert "hidden data" not in json.dumps(res), res


def test_missing_path_outside_names_its_directory(fx):
    # The refusal of a missing path (remembered as missing: no stat to tell
    # whether it is a directory) names its parent as the rule to add.
    res = fx.run("""
        miss = os.path.join(OUT, 'nothing', 'here')
        P(lambda: os.stat(miss))
        P(lambda: os.stat(miss))
        P(lambda: open(miss).read())
    """)
    for r in res:
        msg = not_found(r)
        assert "expose-ro=" + str(fx.out / "nothing") + "'" in msg, msg


# --- unprivileged ---------------------------------------------------------------

@pytest.fixture
def fxn(sb_nobody):
    return Files(sb_nobody)


def test_nobody_read_outside_refused(fxn):
    not_found(fxn.one("P(lambda: open(SECRET).read())"))


def test_nobody_write_rw_allowed_ro_refused(fxn):
    res = fxn.run("""
        P(lambda: open(os.path.join(RW, 'x'), 'w').write('n'))
        P(lambda: open(os.path.join(RO, 'x'), 'w'))
    """)
    ok(res[0])
    read_only(res[1])
    assert (fxn.rw / "x").read_text() == "n"
    assert not (fxn.ro / "x").exists()


def test_nobody_symlink_escape_refused(fxn):
    res = fxn.run("""
        P(lambda: os.symlink(SECRET, os.path.join(RW, 'l')))
        P(lambda: os.link(os.path.join(RO, 'f'), os.path.join(RW, 'h')))
    """)
    not_found(res[0])
    read_only(res[1])
    assert sorted(os.listdir(fxn.rw)) == []


# ---- broad read grants (issue 17, item 2) ------------------------------------

DEVNULL = """\
import os, sys
with open('/dev/null', 'w') as f:
    f.write('x')
fd = os.open('/dev/null', os.O_WRONLY)
os.write(fd, b'x')
os.close(fd)
print('WROTE')
try:
    open(sys.argv[1], 'w')
except PermissionError as e:
    print('REFUSED', e)
"""


@pytest.mark.parametrize("who", ["root", "nobody"])
# Not os-sandbox=subprocess: without Landlock, seccomp cannot tell /dev/null
# from other paths and refuses every write open without an expose-rw rule.
@pytest.mark.parametrize("provider", ["none", "landlock"])
@pytest.mark.parametrize("grant", ["/", "/dev"])
def test_dev_null_stays_writable_under_a_broad_read_grant(request, who, provider, grant):
    from conftest import LANDLOCK_ABI
    if provider == "landlock" and LANDLOCK_ABI < 1:
        pytest.skip("the kernel has no Landlock")
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    sb.profile(f"os-sandbox={provider}\nexpose-ro={grant}\npython-import=os, sys\n")
    s = sb.script(DEVNULL)
    target = "/etc/sb-never-written" if grant == "/" else "/dev/sb-never-written"
    r = sb.run(s, target)
    assert r.returncode == 0, r
    assert "WROTE" in r.stdout, r
    # The refusal of another write under the grant names no read-write grant
    # of '/' or of a system directory.
    line = next(x for x in r.stdout.splitlines() if x.startswith("REFUSED"))
    assert f"rule 'expose-ro={grant}' from" in line, line
    assert "system directory" in line, line
    assert "expose-rw=/" not in line, line
    assert not os.path.exists(target)


@pytest.mark.parametrize("raw", ["/etc/sb-x", "/usr/sb-x", "/sb-x"])
def test_no_hint_offers_writing_a_system_directory(sb, raw):
    sb.profile("os-sandbox=subprocess\npython-import=sys\n")
    s = sb.script("import sys\nopen(sys.argv[1], 'w')\n")
    r = sb.run(s, raw)
    assert r.returncode == 1, r
    assert f"Access to '{raw}' must be accepted by a rule" in r.stderr, r
    assert "system directory" in r.stderr, r
    assert "expose-rw=" not in r.stderr, r


def test_write_under_a_broad_read_grant_names_the_file_directory(sb):
    sb.mkdir("rw2")
    sb.profile("os-sandbox=subprocess\nexpose-ro=/\npython-import=sys\n")
    s = sb.script("import sys\nopen(sys.argv[1], 'w')\n")
    target = sb.path("rw2/x")
    r = sb.run(s, target)
    assert r.returncode == 1, r
    prof = sb.path('.py-sandboxes')
    assert (f"Cannot write to '{target}': rule 'expose-ro=/' from {prof}:2 grants reading "
            f"only. Add 'expose-rw={sb.path('rw2')}' to '{prof}' to allow writing") \
        in r.stderr, r


# --- metadata of the directories on the way to a grant ---------------------------
# realpath() of a granted path lstat()s each directory above it: their metadata
# passes (they exist whatever the answer), their listing and other entries stay
# refused, and a stat() does not make them readable for what follows.

def test_directories_on_the_way_to_a_grant_can_be_stat_ed_not_read(fx):
    above = str(fx.work.parent)
    res = fx.run(f"""\
        P(lambda: os.path.isdir({above!r}))
        P(lambda: os.lstat('/').st_mode & 0o170000 == 0o040000)
        P(lambda: os.access({above!r}, os.X_OK))
        P(lambda: os.listdir({above!r}))
        P(lambda: os.open({above!r}, os.O_RDONLY))
        P(lambda: os.stat(OUT))
        P(lambda: os.stat(SECRET))
        P(lambda: os.listdir({above!r}))
        P(lambda: sorted(os.scandir({above!r})))
        """)
    assert [ok(r) for r in res[:3]] == ["True", "True", "True"], res
    for r in res[3:]:
        assert "must be accepted by a rule" in not_found(r), res


# The guard alone and with Landlock, as root and as nobody.
each_provider_and_user = pytest.mark.parametrize(
    "provider,who", [(p, w) for p in ("subprocess", "landlock") for w in ("root", "nobody")])


def sandbox_for(request, provider, who):
    if provider == "landlock" and LANDLOCK_ABI < 1:
        pytest.skip("the kernel has no Landlock")
    return request.getfixturevalue("sb" if who == "root" else "sb_nobody")


@each_provider_and_user
def test_realpath_of_a_granted_path_reports_no_refusal(request, provider, who):
    sb = sandbox_for(request, provider, who)
    sb.write("data/f", "x")
    sb.profile(f"os-sandbox={provider}\npython-import=os, pathlib\nexpose-ro=data\n")
    s = sb.script("import os, pathlib\n"
                  "print(os.path.realpath(__file__) == __file__)\n"
                  "print(pathlib.Path('data/f').resolve() == pathlib.Path(__file__).parent / 'data' / 'f')\n")
    r = sb.run(s)
    assert (r.returncode, r.stdout) == (0, "True\nTrue\n"), r
    assert "refused" not in r.stderr and "expose-ro" not in r.stderr, r


# The standard library's own probes of fixed paths (guard-files.c): sysconfig,
# imported by zoneinfo, asks whether the interpreter runs from CPython's source
# tree (Modules/Setup beside sys.executable); mimetypes looks for its
# knownfiles (/etc/mime.types...); zoneinfo searches the rest of its TZPATH
# (/etc/zoneinfo...). Refused as absent, not reported; the same
# path opened, or another one, is the program's refusal.
def test_stdlib_probes_of_fixed_paths_report_no_refusal(fx):
    res = fx.run("""\
        import sysconfig, zoneinfo, mimetypes
        exe_dir = os.path.dirname(os.path.realpath(sys.executable))
        P(lambda: sysconfig.is_python_build())
        P(lambda: zoneinfo.ZoneInfo('UTC').key)
        P(lambda: mimetypes.guess_type('a.json')[0])
        P(lambda: os.path.isfile('/etc/mime.types'))
        P(lambda: os.path.exists('/etc/zoneinfo/Europe/Paris'))
        P(lambda: os.stat(os.path.join(exe_dir, 'Modules', 'Setup')))
        P(lambda: os.stat(os.path.join(exe_dir, 'Modules', 'Other')))
        """, imports="os, sys, io, json, pathlib, shutil, tempfile, pysandboxes, sysconfig, "
                     "zoneinfo, mimetypes")
    assert [ok(r) for r in res[:5]] == ["False", "'UTC'", "'application/json'", "False",
                                        "False"], res
    assert res[5][0] == "OSError:FileNotFoundError", res
    assert "must be accepted by a rule" in not_found(res[6]), res
    # The program's own probe of Modules/Other is the one refusal reported.
    r = fx.sb.run(fx.sb.path("s.py"))
    assert "python-sb: 1 operation was refused; the first needs 'expose-ro=" in r.stderr, r


# The time zone database is readable without a rule, as the kernel layers
# grant it: zoneinfo reads it from Python.
@each_provider_and_user
def test_time_zones_readable_without_a_rule(request, provider, who):
    sb = sandbox_for(request, provider, who)
    if not os.path.exists("/usr/share/zoneinfo/Europe/Paris"):
        pytest.skip("no time zone database (Debian: tzdata)")
    sb.profile(f"os-sandbox={provider}\npython-import=zoneinfo, datetime\n")
    r = sb.run("-c", "import zoneinfo, datetime\n"
               "z = zoneinfo.ZoneInfo('Europe/Paris')\n"
               "print(datetime.datetime(2024, 7, 1, tzinfo=z).utcoffset())\n")
    assert (r.returncode, r.stdout) == (0, "2:00:00\n"), r
    assert "refused" not in r.stderr, r


def test_time_zones_are_read_only(fx):
    res = fx.one("P(lambda: open('/usr/share/zoneinfo/zz-python-sb-test', 'w'))")
    assert res[0] in ("RulePermissionError", "RuleFileNotFoundError"), res
    assert not os.path.exists("/usr/share/zoneinfo/zz-python-sb-test")
