# SPDX-License-Identifier: MIT
"""Adversarial programs that drive the runtime itself (issue #12, the guard's
side): the import machinery and the standard library called directly with the
program's own arguments (every door, the module code of the standard library
run in a namespace of the program's, its code generators fed the program's
text), code objects laundered into the standard library's file names, the
guard's objects and frames without the introspection grant, ctypes without
the native grant, the calls that name another
process, changes through a held descriptor, SQLite opening files from SQL,
named semaphores, the name-service files, and the rule files themselves.

The profile is the strict code-runner's shape: a few standard modules
(`sys` and `os` among them, so `sys.modules` is in reach), a read-only data
directory, a read-write work directory, no python-api grant unless the attack
needs one to *start*. Every attack runs as the caller (root in CI) and as
`nobody`, under `landlock` and `subprocess`, and as the caller under `none`,
where the guard alone holds.

After every run the test checks from the outside that none of the forbidden
effects happened (the secret's content is not in the output, nothing outside
the grants or under the read-only grant changed, no semaphore in /dev/shm,
the victim process untouched, the profile untouched, no refused module in
sys.modules), and that the refusal came from the guard as the attack
expected.
"""

import os
import stat
import subprocess
import textwrap
import uuid

import pytest

from conftest import LANDLOCK_ABI, SANITIZER_ENV

FILE = "RuleFileNotFoundError"
PERM = "RulePermissionError"
API = "RuleApiPermissionError"
MOD = "RuleModuleNotFoundError"
SQL = "DatabaseError"
KEY = "KeyError"
SILENT = None  # refused without an exception reaching the program

IMPORTS = "sys, os, json, math, collections, functools, itertools, re, statistics, decimal"

PRELUDE = """\
import sys
SECRET = {secret!r}
OUT = {out!r}
RO = {ro!r}
RO_OK = {ro_ok!r}
RW = {rw!r}
ROOT = {root!r}
SEM = {sem!r}
VICTIM = {victim}
STDLIB = {stdlib!r}
FORBIDDEN = {forbidden!r}
B = sys.modules['_frozen_importlib']
BX = sys.modules['_frozen_importlib_external']
IMP = sys.modules['_imp']
ALREADY = {{m for m in FORBIDDEN if m in sys.modules}}

def show(value):
    print('VALUE', repr(value)[:400], flush=True)

def attack():
{body}

try:
    attack()
except BaseException as e:
    print('OUTCOME', type(e).__name__ + ':', str(e)[:300].replace('\\n', ' '), flush=True)
else:
    print('OUTCOME completed', flush=True)
finally:
    for m in FORBIDDEN:
        if m in sys.modules and m not in ALREADY:
            print('LEAKED', m, flush=True)
"""


class Arena:
    """The files, the victim and the profile one attack runs against."""

    def __init__(self, sb, user):
        self.sb = sb
        self.user = user
        self.tok = uuid.uuid4().hex[:12]
        self.secret_text = f"S3CR3T-{self.tok}"
        # Beside the sandbox root, in a parent any user can search: only the
        # sandbox can refuse it, not the file modes.
        self.out = sb.root.parent / f"outside-{self.tok}"
        self.out.mkdir()
        os.chmod(self.out, 0o755)
        self.secret = self.out / "secret.txt"
        self.secret.write_text(self.secret_text + "\n")
        os.chmod(self.secret, 0o644)
        self.ro = sb.mkdir("ro")
        self.ro_ok = sb.write("ro/ok.txt", "read-only content\n")
        self.rw = sb.mkdir("rw")
        self.sem = f"/pysb-adv-{self.tok}"
        self.victim = None
        self.profile_path = None
        self.profile_text = None

    def start_victim(self):
        self.victim = subprocess.Popen(["sleep", "60"])
        self.victim_affinity = os.sched_getaffinity(self.victim.pid)
        return self.victim.pid

    def close(self):
        if self.victim and self.victim.poll() is None:
            self.victim.kill()
            self.victim.wait()
        for p in ("/dev/shm/sem." + self.sem[1:], "/dev/shm" + self.sem):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass

    @staticmethod
    def _tree(top):
        seen = {}
        for dirpath, dirnames, filenames in os.walk(top):
            for name in dirnames + filenames:
                p = os.path.join(dirpath, name)
                st = os.lstat(p)
                content = None
                if stat.S_ISREG(st.st_mode):
                    with open(p, "rb") as f:
                        content = f.read()
                seen[os.path.relpath(p, top)] = (st.st_mode, st.st_uid, st.st_mtime_ns,
                                                 content)
        return seen

    def snapshot(self):
        return {"ro": self._tree(self.ro), "out": self._tree(self.out)}

    def program(self, body):
        import sysconfig
        return PRELUDE.format(
            secret=str(self.secret), out=str(self.out), ro=str(self.ro),
            ro_ok=str(self.ro_ok), rw=str(self.rw), root=str(self.sb.root), sem=self.sem,
            victim=self.victim.pid if self.victim else None,
            stdlib=sysconfig.get_paths()["stdlib"],
            forbidden=["_ctypes", "ctypes", "csv", "_csv", "__hello__",
                       "zipimport_copy"],
            body=textwrap.indent(textwrap.dedent(body).strip("\n"), "    "))

    def run(self, body, provider, api=(), imports=IMPORTS, profile_in_rw=False, stdin=None):
        lines = [f"os-sandbox={provider}", "py-sandbox=true", f"python-import={imports}",
                 f"expose-ro={self.ro}", f"expose-rw={self.rw}"]
        lines += [f"python-api={a}" for a in api]
        text = "\n".join(lines) + "\n"
        rel = "rw/.py-sandboxes" if profile_in_rw else ".py-sandboxes"
        self.profile_path = self.sb.profile(text, rel=rel)
        self.profile_text = self.profile_path.read_bytes()
        script = self.sb.script(self.program(body))
        self.before = self.snapshot()
        args = ["--pysandboxes-config", str(self.profile_path)] if profile_in_rw else []
        if stdin is None:
            return self.sb.run(*args, script, timeout=30)
        with open(stdin) as f:
            cmd = self.sb.prefix + [self.sb.binary] + [str(a) for a in args] + [str(script)]
            return subprocess.run(cmd, cwd=str(self.sb.root), capture_output=True, text=True,
                                  stdin=f, timeout=30, env={**self.sb.env(), **SANITIZER_ENV})

    def effects(self, r):
        found = []
        out = r.stdout + r.stderr
        if self.secret_text in out:
            found.append("the secret file was read")
        if "INJECTED" in r.stdout.replace("'INJECTED'", ""):
            found.append("a generator ran the program's text")
        for line in r.stdout.splitlines():
            if line.startswith("LEAKED "):
                found.append(f"a refused module ended up in sys.modules: {line[7:]}")
        after = self.snapshot()
        for key in after:
            if after[key] != self.before[key]:
                found.append(f"the {key} tree changed: {self.before[key]} -> {after[key]}")
        for p in ("/dev/shm/sem." + self.sem[1:], "/dev/shm" + self.sem):
            if os.path.exists(p):
                found.append(f"{p} was created")
        if self.victim is not None:
            if self.victim.poll() is not None:
                found.append("the victim process was signalled")
            elif os.sched_getaffinity(self.victim.pid) != self.victim_affinity:
                found.append("the victim's CPU affinity changed")
        if self.profile_path.read_bytes() != self.profile_text:
            found.append("the profile changed")
        for name in os.listdir(self.rw):
            if name != ".py-sandboxes" and ".py-sandboxes" in name:
                found.append(f"a rule file was made: {name}")
        for dirpath, _, filenames in os.walk(self.rw):
            if ".py-sandboxes" in filenames and dirpath != str(self.rw):
                found.append(f"a rule file was made in {dirpath}")
        return found


def outcome(r):
    for line in r.stdout.splitlines():
        if line.startswith("OUTCOME "):
            return line[len("OUTCOME "):]
    return None


A = []


def attack(id, expect, body, api=(), imports=IMPORTS, **kw):
    A.append(pytest.param(expect, body, api, imports, kw, id=id))


# --- the import machinery called by the program (finding 1) -------------------
# A loader the program drives reads a module's bytecode cache as the
# program's unmarshalling: granted here, so that what is refused is the
# module itself.
LOADER = ("ALLOW:deserialization",)

attack("loader-create_module-_ctypes", MOD, """
    import os
    path = next(os.path.join(d, f) for d in sys.path if os.path.isdir(d) and 'dynload' in d
                for f in os.listdir(d) if f.startswith('_ctypes.'))
    loader = BX.ExtensionFileLoader('_ctypes', path)
    spec = B.spec_from_loader('_ctypes', loader)
    loader.exec_module(loader.create_module(spec))
""")

attack("imp-create_dynamic-_ctypes", MOD, """
    import os
    path = next(os.path.join(d, f) for d in sys.path if os.path.isdir(d) and 'dynload' in d
                for f in os.listdir(d) if f.startswith('_ctypes.'))
    IMP.create_dynamic(B.ModuleSpec('_ctypes', None, origin=path))
""")

attack("imp-create_builtin-_socket", MOD, """
    if '_socket' in sys.builtin_module_names:
        IMP.create_builtin(B.ModuleSpec('_socket', None))
    else:
        raise ModuleNotFoundError('RuleModuleNotFoundError (not built in here)')
""")

attack("imp-init_frozen", MOD, """
    IMP.init_frozen('__hello__')
""")

attack("source-loader-load_module-csv", MOD, """
    BX.SourceFileLoader('csv', STDLIB + '/csv.py').load_module('csv')
""", api=LOADER)

attack("exec_module-ctypes-source", MOD, """
    loader = BX.SourceFileLoader('ctypes', STDLIB + '/ctypes/__init__.py')
    spec = B.spec_from_loader('ctypes', loader)
    loader.exec_module(B.module_from_spec(spec))
""", api=LOADER)

# ctypes' code under the name of a module the profile allows.
attack("exec_module-ctypes-as-json", MOD, """
    loader = BX.SourceFileLoader('json', STDLIB + '/ctypes/__init__.py')
    spec = B.spec_from_loader('json', loader)
    loader.exec_module(B.module_from_spec(spec))
""", api=LOADER)

attack("bootstrap-_load", MOD, """
    B._load(B.spec_from_loader('csv', BX.SourceFileLoader('csv', STDLIB + '/csv.py')))
""", api=LOADER)

attack("bootstrap-_find_and_load", MOD, """
    B._find_and_load('ctypes', B._gcd_import)
""", api=LOADER)

attack("call_with_frames_removed-__import__", MOD, """
    B._call_with_frames_removed(__import__, 'ctypes')
""")

# A relative import written in the standard library's code, resolved against
# a package the program wrote into the module's namespace.
attack("relative-import-planted-__package__", MOD, """
    import concurrent.futures as cf
    cf.__dict__['__package__'] = 'ctypes'
    cf.ProcessPoolExecutor
""", imports=IMPORTS + ", concurrent")

attack("relative-import-planted-__spec__", MOD, """
    import concurrent.futures as cf
    cf.__dict__['__package__'] = None
    cf.__dict__['__spec__'] = B.ModuleSpec('ctypes.futures', None, is_package=False)
    cf.ProcessPoolExecutor
""", imports=IMPORTS + ", concurrent")

# The machinery serving an allowed request, led by the program's own state
# (a package's __path__, a finder on sys.meta_path) to a module of the
# standard library under another name.
attack("planted-__path__-stdlib-module", MOD, """
    import json
    json.__path__.insert(0, STDLIB)
    import json.csv
""")

attack("meta_path-finder-stdlib-file", MOD, """
    class Finder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name == 'json.x':
                return BX.spec_from_file_location('json.x', STDLIB + '/csv.py')
    sys.meta_path.insert(0, Finder)
    import json.x
""")

# A standard-library function importing a name it computes from its argument.
attack("logging-config-_resolve", MOD, """
    import logging.config
    logging.config._resolve('ctypes.ArgumentError')
""", imports=IMPORTS + ", logging")

# A C callback planted where the runtime's own imports run (a gc callback):
# whatever the runtime was importing, ctypes is not its import.
attack("gc-callback-import-during-imports", SILENT, """
    import functools, gc
    gc.callbacks.append(functools.partial(__import__, 'ctypes'))
    gc.set_threshold(1, 1, 1)
    import fractions, decimal, statistics, random
    gc.set_threshold(700, 10, 10)
    del gc.callbacks[:]
""", imports=IMPORTS + ", gc, fractions, random")

attack("bootstrap-path_stat-secret", FILE, """
    show(BX._path_stat(SECRET))
""")


# --- code objects laundered into the standard library's names ----------------

attack("imp-_fix_co_filename", API, """
    def f():
        return sys._getframe()
    IMP._fix_co_filename(f.__code__, STDLIB + '/logging/__init__.py')
    show(f())
""")

attack("compile-frozen-name-granted", API, """
    exec(compile('import ctypes', '<frozen runpy>', 'exec'))
""", api=("ALLOW:dynamic-code",))

attack("marshal-stdlib-name-granted", API, """
    import marshal
    name = STDLIB + '/csv.py'
    fake = 'X' * len(name)
    data = marshal.dumps(compile('import ctypes', fake, 'exec'))
    exec(marshal.loads(data.replace(fake.encode(), name.encode())))
""", api=("ALLOW:dynamic-code", "ALLOW:deserialization"), imports=IMPORTS + ", marshal")

# The guard serves io.open_code() of a standard-library cache and admits
# the very bytes it read without a second read (guard-open-code.h): the same
# bytes edited, or the program's reader put where io.BytesIO was before a
# cache is served, must not pass.
attack("marshal-served-cache-edited", API, """
    import io, marshal
    data = bytearray(io.open_code(STDLIB + '/__pycache__/csv.cpython-311.pyc').read())
    i = data.index(b'QUOTE_MINIMAL')
    data[i:i + 13] = b'QUOTE_MAXIMAL'
    exec(marshal.loads(memoryview(bytes(data))[16:]))
""", api=("ALLOW:dynamic-code", "ALLOW:deserialization"), imports=IMPORTS + ", marshal, io")

attack("marshal-served-cache-reader-replaced", API, """
    import _io, io, marshal
    path = STDLIB + '/__pycache__/csv.cpython-311.pyc'
    forged = io.open_code(path).read().replace(b'QUOTE_MINIMAL', b'QUOTE_MAXIMAL')
    class Reader(_io.BytesIO):
        def read(self, *args):
            return forged
    _io.BytesIO = io.BytesIO = Reader
    marshal.loads(memoryview(io.open_code(path).read())[16:])
    exec(marshal.loads(memoryview(forged)[16:]))
""", api=("ALLOW:dynamic-code", "ALLOW:deserialization"), imports=IMPORTS + ", marshal, io, _io")

attack("code-replace-stdlib-name-granted", API, """
    def f():
        import ctypes
    f.__code__ = f.__code__.replace(co_filename=STDLIB + '/os.py')
    f()
""", api=("ALLOW:dynamic-code",))

attack("loader-source_to_code-stdlib-name", API, """
    code = BX.SourceFileLoader('csv', STDLIB + '/csv.py').source_to_code(
        b'import ctypes', STDLIB + '/csv.py')
    exec(code)
""")

attack("call_with_frames_removed-exec", API, """
    B._call_with_frames_removed(exec, "import ctypes")
""")

attack("dataclasses-_create_fn-direct", API, """
    import dataclasses
    dataclasses._create_fn('f', [], ['import ctypes'], globals={})
""", imports=IMPORTS + ", dataclasses")

attack("inspect-getinnerframes", API, """
    import inspect
    try:
        1 / 0
    except ZeroDivisionError as e:
        show(inspect.getinnerframes(e.__traceback__))
""", imports=IMPORTS + ", inspect")


# More doors and machinery of the same class: every way into the import
# system the program can reach, and the standard library's module code run
# in a namespace of the program's.
attack("bootstrap-_gcd_import", MOD, """
    B._gcd_import('csv')
""")

attack("bootstrap-__import__", MOD, """
    B.__import__('ctypes')
""")

attack("bootstrap-_builtin_from_name", MOD, """
    B._builtin_from_name('_socket' if '_socket' in sys.builtin_module_names else '_csv')
""")

attack("frozen-importer-exec_module", MOD, """
    spec = B.FrozenImporter.find_spec('__hello__')
    B.FrozenImporter.exec_module(B.module_from_spec(spec))
""")

attack("bootstrap-_exec-into-new-module", MOD, """
    import types
    spec = BX.PathFinder.find_spec('csv')
    module = types.ModuleType('csv')
    sys.modules['csv'] = module
    try:
        B._exec(spec, module)
    finally:
        sys.modules.pop('csv', None)
""", api=LOADER, imports=IMPORTS + ", types, _io")

attack("lazy-loader", MOD, """
    import importlib.util
    spec = BX.PathFinder.find_spec('csv')
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.reader
""", api=LOADER, imports=IMPORTS + ", importlib, _io")

# The module's own code, run by the program in a namespace of its own: its
# import statements are not the standard library importing for itself.
attack("get_code-exec-csv", MOD, """
    exec(BX.SourceFileLoader('csv', STDLIB + '/csv.py').get_code('csv'), {'__name__': 'csv'})
""", api=("ALLOW:dynamic-code", "ALLOW:deserialization"), imports=IMPORTS + ", _io")

attack("moduletype-exec-genuine-source", MOD, """
    import types
    module = types.ModuleType('ctypes')
    path = STDLIB + '/ctypes/__init__.py'
    with open(path) as f:
        exec(compile(f.read(), path, 'exec'), module.__dict__)
""", api=("ALLOW:dynamic-code",), imports=IMPORTS + ", types")

attack("get_frozen_object-exec", MOD, """
    exec(IMP.get_frozen_object('__hello__'), {'__name__': '__hello__'})
""", api=("ALLOW:dynamic-code",))


# --- the standard library's code generators fed the program's text -----------
# Exempt only for their own templates: the names they write into them must
# be identifiers, a forward reference a type expression. Each payload would
# print INJECTED if it ran.

attack("dataclass-field-name-injection", API, """
    import dataclasses
    class C:
        pass
    name = "x=print('INJECTED'),*_a"
    C.__annotations__ = {name: int}
    setattr(C, name, dataclasses.field(init=False, repr=False, compare=False))
    dataclasses.dataclass(C)
""", imports=IMPORTS + ", dataclasses")

attack("dataclass-base-fields-injection", API, """
    import dataclasses
    @dataclasses.dataclass
    class Base:
        x: int = 0
    f = Base.__dataclass_fields__.pop('x')
    f.name = "x=print('INJECTED'),*_a"
    f.init = f.repr = f.compare = False
    Base.__dataclass_fields__[f.name] = f
    @dataclasses.dataclass
    class D(Base):
        y: int = 1
""", imports=IMPORTS + ", dataclasses")

attack("forward-reference-call", API, """
    import typing
    def f(a: "print('INJECTED') or int"):
        pass
    typing.get_type_hints(f)
""", imports=IMPORTS + ", typing")

attack("forward-reference-f-string", API, """
    import typing
    def f(a: "f'{print(chr(73) + chr(78) + chr(74) + chr(69) + chr(67) + chr(84) + chr(69) + chr(68))}'"):
        pass
    typing.get_type_hints(f)
""", imports=IMPORTS + ", typing")

attack("proxy-method-name-injection", API, """
    from multiprocessing import managers
    managers.MakeProxyType('P', ["x(self): pass\\nprint('INJECTED')\\ndef y"])
""", imports=IMPORTS + ", multiprocessing")


# --- frames and the guard's own objects without the introspection grant ----

attack("gc-get_objects-originals", API, """
    import gc
    show([o for o in gc.get_objects() if getattr(o, '__name__', '') == 'fork_exec'])
""", imports=IMPORTS + ", gc")

attack("settrace-stdlib-frames", API, """
    sys.settrace(lambda frame, event, arg: show(frame.f_locals))
    import json
    json.dumps([1])
""")

attack("fresh-posix-copy", API, """
    module = IMP.create_builtin(B.ModuleSpec('posix', None))
    module.sched_setaffinity(0, {0})
""", imports="*")


# --- files through the import machinery and held directories ---------------

attack("file-loader-get_data-secret", FILE, """
    show(BX.FileLoader('x', SECRET).get_data(SECRET))
""")

attack("io-open_code-secret", FILE, """
    import io
    show(io.open_code(SECRET).read())
""", imports=IMPORTS + ", io, _io")  # open_code() imports _io from C

attack("dir_fd-parent-listing", FILE, """
    import os
    fd = os.open(RO, os.O_RDONLY)
    show(os.listdir(os.open('../..', os.O_RDONLY, dir_fd=fd)))
""")

# chroot() into a writable grant: every name the guard decides on would
# then mean something else than what it resolved and cached.
attack("chroot-into-writable-grant", PERM, """
    import os
    os.chroot(RW)
    show(os.listdir('/'))
""")

attack("fwalk-dir_fd-parent", FILE, """
    import os
    fd = os.open(RO, os.O_RDONLY)
    show(list(os.fwalk('../..', dir_fd=fd)))
""")


# --- ctypes without the native grant (finding 2) ------------------------------

attack("import-_ctypes-no-native-grant", API, """
    import _ctypes
    show(_ctypes.call_function(_ctypes._memset_addr, (0, 0, 0)))
""", imports="*")


# --- calls that name another process, changes through a descriptor,
# --- SQLite, semaphores, the name service (finding 6) -------------------------

attack("sched_setaffinity-victim", API, """
    import os
    os.sched_setaffinity(VICTIM, {0})
""", victim=True)

attack("pidfd_send_signal-victim", API, """
    import os, signal
    signal.pidfd_send_signal(os.pidfd_open(VICTIM), signal.SIGKILL)
""", imports=IMPORTS + ", signal", victim=True)

attack("fchmod-read-only-file", PERM, """
    import os
    fd = os.open(RO_OK, os.O_RDONLY)
    os.fchmod(fd, 0o777)
""")

attack("fchmod-stdin-outside", FILE, """
    import os
    os.chmod(0, 0o777)
""", stdin="secret")

attack("futime-read-only-file", PERM, """
    import os
    os.utime(os.open(RO_OK, os.O_RDONLY), (0, 0))
""")

attack("sqlite-attach-outside", SQL, """
    import os, sqlite3
    sqlite3.connect(':memory:').execute(f"attach database '{OUT}/new.db' as x")
""", imports=IMPORTS + ", sqlite3")

attack("sqlite-vacuum-into-outside", SQL, """
    import sqlite3
    c = sqlite3.connect(':memory:')
    c.set_authorizer(None)
    c.execute('create table t (x)')
    c.execute(f"vacuum into '{OUT}/copy.db'")
""", imports=IMPORTS + ", sqlite3")

attack("sqlite-attach-uri-escape", SQL, """
    import sqlite3
    path = (OUT + '/uri.db').replace('/', '%2F')
    sqlite3.connect('file::memory:', uri=True).execute(
        f"attach database 'file:{path}' as x")
""", imports=IMPORTS + ", sqlite3")

attack("semlock-named", FILE, """
    import _multiprocessing
    _multiprocessing.SemLock(1, 1, 1, SEM, False)
""", imports=IMPORTS + ", _multiprocessing")

attack("pwd-getpwall", FILE, """
    import pwd
    show(pwd.getpwall())
""", imports=IMPORTS + ", pwd")

attack("pwd-getpwnam-other", KEY, """
    import os, pwd
    show(pwd.getpwnam('root' if os.getuid() else 'nobody'))
""", imports=IMPORTS + ", pwd")


# --- the rules themselves (finding 8) -----------------------------------------
# With the profile inside the expose-rw directory: the guard refuses every
# change under subprocess and none; under landlock the layout itself is refused
# at start (the kernel side of finding 8).

attack("profile-append", PERM, """
    with open(RW + '/.py-sandboxes', 'a') as f:
        f.write('python-api=ALLOW:*\\n')
""", profile_in_rw=True)

attack("profile-rename-and-replace", PERM, """
    import os
    p = RW + '/.py-sandboxes'
    try:
        os.rename(p, RW + '/old')
    finally:
        with open(RW + '/new', 'w') as f:
            f.write('python-api=ALLOW:*\\n')
        os.replace(RW + '/new', p)
""", profile_in_rw=True)

attack("profile-unlink", PERM, """
    import os
    os.unlink(RW + '/.py-sandboxes')
""", profile_in_rw=True)

attack("rule-file-in-a-subdirectory", PERM, """
    import os
    os.mkdir(RW + '/sub')
    with open(RW + '/sub/.py-sandboxes', 'w') as f:
        f.write('python-api=ALLOW:*\\n')
""")


ATTACKS = A

# (user, provider): every attack as the caller and as nobody under the
# providers with a kernel layer, and as the caller with the guard alone.
RUNS = [("caller", "landlock"), ("nobody", "landlock"), ("caller", "subprocess"),
        ("nobody", "subprocess"), ("caller", "none")]


@pytest.fixture(params=RUNS, ids=[f"{u}-{p}" for u, p in RUNS])
def where(request):
    user, provider = request.param
    if provider == "landlock" and LANDLOCK_ABI < 1:
        pytest.skip("the kernel has no Landlock")
    sb = request.getfixturevalue("sb" if user == "caller" else "sb_nobody")
    arena = Arena(sb, user)
    yield arena, provider
    arena.close()


@pytest.mark.parametrize("expect,body,api,imports,kw", ATTACKS)
def test_attack(where, expect, body, api, imports, kw):
    arena, provider = where
    if kw.get("victim"):
        arena.start_victim()
    stdin = arena.secret if kw.get("stdin") == "secret" else None
    r = arena.run(body, provider, api=api, imports=imports,
                  profile_in_rw=kw.get("profile_in_rw", False), stdin=stdin)
    assert arena.effects(r) == [], r.stdout + r.stderr
    if kw.get("profile_in_rw") and provider == "landlock":
        # Landlock cannot take the profile out of its writable directory:
        # the kernel side refuses the layout before anything runs.
        assert r.returncode != 0 and "OUTCOME" not in r.stdout, r.stdout + r.stderr
        assert "the rule file" in r.stderr, r.stderr
        return
    if expect is SILENT:
        assert outcome(r) == "completed", r.stdout + r.stderr
        return
    text = (outcome(r) or "") + r.stderr
    assert expect in text, f"expected {expect}: {r.stdout}{r.stderr}"


def test_at_least_thirty_attacks():
    assert len(ATTACKS) >= 30
