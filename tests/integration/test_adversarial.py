# SPDX-License-Identifier: MIT
"""Adversarial programs against the Python guard (issue #3).

Every program runs with `os-sandbox=none`: no Landlock, no seccomp, so the C
guard is the only thing between the program and the effect it is after. Each
profile grants what the attack needs to *start* (`python-import=*`, threads
for the race...) and nothing that would make the attack legitimate.

After every run the test checks, from the outside, that *none* of the
forbidden effects happened, whatever the attack was aiming at:

- the secret file's content is not in the program's output;
- no process was created (the marker file a child would touch is absent, no
  child printed);
- the read-only grant and the outside directory are byte-for-byte unchanged
  (names, content, modes), no node in /dev/shm was created, nothing under the
  read-write grant leads outside the grants;
- the loopback TCP/UDP/Unix/abstract listeners owned by the test received
  nothing;
- the module outside python-import= did not run, code built from a string did
  not run, no frame object reached the program, a hidden variable is absent;

and that the refusal came from the guard (the `pysandboxes` exception class
named by the attack).

Attacks that get through are marked `xfail(strict=True)` with the reason:
they document real gaps of the guard and will fail loudly once closed.
"""

import os
import socket
import stat
import subprocess
import textwrap
import uuid
import zipfile

import pytest

from conftest import needs_landlock, needs_userns

# Markers the programs print when an attack got what it wanted. The programs
# build them by concatenation, so that a traceback quoting the source line
# never contains them.
PROC_RAN = "PROC-RAN"
DYN_RAN = "DYN-RAN"
MOD_RAN = "SECRETMOD-RAN"
GOT_FRAME = "GOT-FRAME"
ALL_MARKERS = (PROC_RAN, DYN_RAN, MOD_RAN, GOT_FRAME)

FILE = "RuleFileNotFoundError"
PERM = "RulePermissionError"
API = "RuleApiPermissionError"
NET = "RuleSocketConnectionRefusedError"
MOD = "RuleModuleNotFoundError"
SILENT = None  # refused without an exception reaching the program

# Runs before every attack: the arena's paths and two helpers. The attack is
# the body of attack(); its outcome is one line "OUTCOME <exception> <denials>".
PRELUDE = """\
import pysandboxes
SECRET = {secret!r}
OUT = {out!r}
RO = {ro!r}
RO_OK = {ro_ok!r}
RW = {rw!r}
ROOT = {root!r}
MARK = {mark!r}
SH = 'touch ' + MARK + '; echo PROC-''RAN'
CMD = ['/bin/sh', '-c', SH]
PORT = {port}
UPORT = {uport}
USOCK = {usock!r}
ABSTRACT = {abstract!r}
SHM = {shm!r}
VICTIM = {victim}

def show(value):
    print('VALUE', repr(value)[:400], flush=True)

def frame_got(obj):
    if type(obj).__name__ == 'frame':
        print('GOT' + '-FRAME', flush=True)

def attack():
{body}

try:
    attack()
except BaseException as e:
    print('OUTCOME', type(e).__name__, pysandboxes.sandbox_denials(e), flush=True)
else:
    print('OUTCOME completed', flush=True)
"""

SECRETMOD = "print('SECRETMOD' + '-RAN', flush=True)\n"


class Arena:
    """The files, listeners and victims one attack runs against."""

    def __init__(self, sb, tmp_path):
        self.sb = sb
        self.tok = uuid.uuid4().hex[:12]
        self.secret_text = f"S3CR3T-{self.tok}"
        self.hidden_env = f"HIDDEN-{self.tok}"
        self.out = tmp_path / "outside"           # outside every grant
        self.out.mkdir()
        self.secret = self.out / "secret.txt"
        self.secret.write_text(self.secret_text + "\n")
        self.mark = self.out / "PROC_MARKER"
        with zipfile.ZipFile(self.out / "s.zip", "w") as z:
            z.writestr("secret.txt", self.secret_text)
            z.writestr("zipped_mod.py", SECRETMOD)
        self.ro = sb.mkdir("ro")                   # expose-ro
        self.ro_ok = self.ro / "ok.txt"
        self.ro_ok.write_text("read-only content\n")
        os.symlink(self.secret, self.ro / "to_secret")
        self.rw = sb.mkdir("rw")                   # expose-rw
        sb.write("secretmod.py", SECRETMOD)       # importable, not in python-import=
        self.shm = f"/pysb-adv-{self.tok}"
        self.listeners = []
        self.tcp = self._listen(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0))
        self.port = self.tcp.getsockname()[1]
        self.udp = self._listen(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0))
        self.uport = self.udp.getsockname()[1]
        self.usock = str(self.out / "app.sock")
        self._listen(socket.AF_UNIX, socket.SOCK_STREAM, self.usock)
        self.abstract = f"\0pysb-adv-{self.tok}"
        self._listen(socket.AF_UNIX, socket.SOCK_STREAM, self.abstract)
        self.victim = None
        self.before = self.snapshot()

    def _listen(self, family, kind, addr):
        s = socket.socket(family, kind)
        s.bind(addr)
        if kind == socket.SOCK_STREAM:
            s.listen(8)
        s.setblocking(False)
        self.listeners.append(s)
        return s

    def start_victim(self):
        self.victim = subprocess.Popen(["sleep", "60"])
        return self.victim.pid

    def close(self):
        for s in self.listeners:
            s.close()
        if self.victim and self.victim.poll() is None:
            self.victim.kill()
            self.victim.wait()
        try:
            os.unlink("/dev/shm" + self.shm)
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
                elif stat.S_ISLNK(st.st_mode):
                    content = os.readlink(p)
                seen[os.path.relpath(p, top)] = (st.st_mode, st.st_nlink, content)
        return seen

    def snapshot(self):
        return {"ro": self._tree(self.ro), "out": self._tree(self.out)}

    def program(self, body):
        return PRELUDE.format(
            secret=str(self.secret), out=str(self.out), ro=str(self.ro),
            ro_ok=str(self.ro_ok), rw=str(self.rw), root=str(self.sb.root),
            mark=str(self.mark), port=self.port, uport=self.uport, usock=self.usock,
            abstract=self.abstract, shm=self.shm,
            victim=self.victim.pid if self.victim else None,
            body=textwrap.indent(textwrap.dedent(body).strip("\n"), "    "))

    def run(self, body, api=(), imports="*", provider="none"):
        lines = [f"os-sandbox={provider}", "py-sandbox=true", f"python-import={imports}",
                 f"expose-ro={self.ro}", f"expose-rw={self.rw}"]
        lines += [f"python-api={a}" for a in api]
        self.sb.profile("\n".join(lines) + "\n")
        script = self.sb.script(self.program(body))
        return self.sb.run(script, env={"PYSB_HIDDEN": self.hidden_env}, timeout=20)

    # --- the forbidden effects, checked from outside -------------------------

    def received(self):
        got = []
        for s in self.listeners:
            try:
                if s.type == socket.SOCK_STREAM:
                    conn, _ = s.accept()
                    conn.close()
                else:
                    s.recvfrom(4096)
                got.append(s.getsockname())
            except (BlockingIOError, OSError):
                pass
        return got

    def effects(self, r):
        """Every forbidden effect that happened, as readable strings."""
        found = []
        out = r.stdout + r.stderr
        if self.secret_text in out:
            found.append("the secret file was read")
        if self.hidden_env in out:
            found.append("a hidden environment variable was read")
        if self.mark.exists():
            found.append("a process was created (marker file)")
        for m in ALL_MARKERS:
            if m in r.stdout:
                found.append(f"{m} printed")
        after = self.snapshot()
        for key in after:
            if after[key] != self.before[key]:
                found.append(f"the {key} tree changed: {self.before[key]} -> {after[key]}")
        if os.path.exists("/dev/shm" + self.shm):
            found.append("a node was created in /dev/shm")
        for dirpath, dirnames, filenames in os.walk(self.rw):
            for name in dirnames + filenames:
                p = os.path.join(dirpath, name)
                real = os.path.realpath(p)
                if not real.startswith(str(self.rw) + os.sep) and \
                        not real.startswith(str(self.ro) + os.sep):
                    found.append(f"{p} leads outside the grants ({real})")
                elif os.path.exists(p) and os.path.samefile(p, self.secret):
                    found.append(f"{p} is a link to the secret")
        if self.victim is not None and self.victim.poll() is not None:
            found.append("the victim process was signalled")
        for addr in self.received():
            found.append(f"the listener {addr!r} received something")
        return found


@pytest.fixture
def arena(sb, tmp_path):
    a = Arena(sb, tmp_path)
    yield a
    a.close()


def outcome(r):
    for line in r.stdout.splitlines():
        if line.startswith("OUTCOME "):
            return line[len("OUTCOME "):]
    return None


def check(arena, r, expect):
    """No forbidden effect, and the refusal came from the guard as `expect`."""
    assert arena.effects(r) == [], r
    if expect is SILENT:
        assert outcome(r) == "completed", r
        return
    text = (outcome(r) or "") + r.stderr
    assert expect in text, f"expected a {expect} from the guard: {r!r}"


def bypass(reason):
    return pytest.mark.xfail(strict=True, reason="known bypass: " + reason)


# =============================================================================
# The attacks: (id, expected refusal, body of attack(), python-api grants,
# python-import value, marks)
# =============================================================================

A = []


def attack(id, expect, body, api=(), imports="*", marks=()):
    A.append(pytest.param(expect, body, api, imports, id=id, marks=marks))


# --- process creation ---------------------------------------------------------

attack("subclasses-walk-to-Popen", API, """
    import subprocess
    def walk(c, seen):
        for s in type.__subclasses__(c):
            if s not in seen:
                seen.add(s)
                yield s
                yield from walk(s, seen)
    Popen = next(c for c in walk(object, set()) if c.__name__ == 'Popen')
    Popen(CMD).wait()
""")

attack("posixsubprocess-fork_exec-direct", API, """
    import _posixsubprocess, os
    r, w = os.pipe()
    _posixsubprocess.fork_exec(
        [b'/bin/sh', b'-c', SH.encode()], [b'/bin/sh'], True, (w,), None, None,
        -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None, -1, None, False)
""")

attack("fork_exec-through-Popen-globals", API, """
    import subprocess, os
    fx = subprocess.Popen._execute_child.__globals__['_fork_exec']
    r, w = os.pipe()
    fx([b'/bin/sh', b'-c', SH.encode()], [b'/bin/sh'], True, (w,), None, None,
       -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None, -1, None, False)
""")

attack("os-posix_spawn", API, """
    import os
    os.waitpid(os.posix_spawn('/bin/sh', CMD, {}), 0)
""")

attack("posix-posix_spawnp", API, """
    import posix
    posix.posix_spawnp('sh', CMD, {'PATH': '/usr/bin:/bin'})
""")

attack("os-spawnv", API, """
    import os
    os.spawnv(os.P_WAIT, '/bin/sh', CMD)
""")

attack("os-execv", API, """
    import os
    os.execv('/bin/sh', CMD)
""")

attack("os-system-and-popen", API, """
    import os
    try:
        os.system(SH)
    finally:
        os.popen(SH).read()
""")

attack("os-fork", API, """
    import os
    pid = os.fork()
    if pid == 0:
        print('PROC-' 'RAN', flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
""")

attack("pty-fork", API, """
    import pty, os
    pid, fd = pty.fork()
    if pid == 0:
        print('PROC-' 'RAN', flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
""")

attack("multiprocessing-fork-context", API, """
    import multiprocessing
    def child():
        print('PROC-' 'RAN', flush=True)
    p = multiprocessing.get_context('fork').Process(target=child)
    p.start()
    p.join()
""")

attack("asyncio-subprocess", API, """
    import asyncio
    async def main():
        p = await asyncio.create_subprocess_exec(*CMD)
        await p.wait()
    asyncio.run(main())
""")

attack("pickle-reduce-gadget", API, """
    import pickle, os
    class Gadget:
        def __reduce__(self):
            return (os.system, (SH,))
    pickle.loads(pickle.dumps(Gadget()))
""")

attack("pickle-Unpickler-protocol0-gadget", API, """
    import pickle, io
    payload = b'cposix\\nsystem\\n(V' + SH.encode() + b'\\ntR.'
    pickle.Unpickler(io.BytesIO(payload)).load()
""")

attack("Unpickler-find_class-override", API, """
    import pickle, io, os
    class U(pickle.Unpickler):
        def find_class(self, module, name):
            return os.system
    U(io.BytesIO(b'cx\\ny\\n(V' + SH.encode() + b'\\ntR.')).load()
""")

attack("ctypes-CDLL-None-system", API, """
    import ctypes
    ctypes.CDLL(None).system(SH.encode())
""")

attack("ctypes-pythonapi-system", API, """
    import ctypes
    ctypes.pythonapi.system(SH.encode())
""")

attack("del-sys-modules-posix-reimport", API, """
    import sys
    del sys.modules['posix']
    import posix
    posix.system(SH)
""")

attack("imp-create_builtin-posix", API, """
    import _imp, importlib.machinery
    posix = _imp.create_builtin(importlib.machinery.ModuleSpec('posix', None))
    posix.system(SH)
""")

attack("importlib-reload-os", API, """
    import importlib, os
    importlib.reload(os)
    os.system(SH)
""")

attack("wrapper-self-wrapped-closure", API, """
    import os
    found = []
    for attr in ('__self__', '__wrapped__', '__closure__', '__func__', '__globals__'):
        v = getattr(os.system, attr, None)
        if v is not None and v is not os:
            found.append(v)
    for v in found:
        cand = getattr(v, 'system', None) or (v if callable(v) else None)
        if cand is not None and cand is not os.system:
            cand(SH)
    os.system(SH)
""")

attack("gc-get_referents-of-wrapper", API, """
    import gc, os
    for o in gc.get_referents(os.system):
        if callable(o):
            o(SH)
""")

attack("gc-get_objects-find-original-system", API, """
    import gc, os
    for o in gc.get_objects():
        if getattr(o, '__name__', None) == 'system' and o is not os.system:
            o(SH)
""")

attack("os-kill-victim", API, """
    import os, signal
    os.kill(VICTIM, signal.SIGKILL)
""")


# --- reading a file outside every grant ---------------------------------------

attack("open-secret", FILE, """
    show(open(SECRET).read())
""")

attack("io-FileIO", FILE, """
    import io
    show(io.FileIO(SECRET).read())
""")

attack("io-open_code", FILE, """
    import io
    show(io.open_code(SECRET).read())
""")

attack("os-open-read", FILE, """
    import os
    show(os.read(os.open(SECRET, os.O_RDONLY), 200))
""")

attack("os-open-dir_fd-escape", FILE, """
    import os
    d = os.open(RO, os.O_RDONLY | os.O_DIRECTORY)
    rel = os.path.relpath(SECRET, RO)
    fd = os.open(rel, os.O_RDONLY, dir_fd=d)
    show(os.read(fd, 200))
""")

attack("FileIO-opener-dir_fd", FILE, """
    import io, os
    d = os.open(RO, os.O_RDONLY | os.O_DIRECTORY)
    rel = os.path.relpath(SECRET, RO)
    f = io.FileIO(rel, opener=lambda p, fl: os.open(p, fl, dir_fd=d))
    show(f.read())
""")

attack("proc-self-root", FILE, """
    show(open('/proc/self/root' + SECRET).read())
""")

attack("proc-self-fd-of-granted-dir", FILE, """
    import os
    d = os.open(RO, os.O_RDONLY | os.O_DIRECTORY)
    show(open(f'/proc/self/fd/{d}/' + os.path.relpath(SECRET, RO)).read())
""")

attack("dotdot-walk-from-grant", FILE, """
    import os
    show(open(RO + '/' + os.path.relpath(SECRET, RO)).read())
""")

attack("chdir-then-relative", FILE, """
    import os
    os.chdir(RO)
    show(open(os.path.relpath(SECRET, RO)).read())
""")

attack("bytes-path", FILE, """
    import os
    show(os.read(os.open(SECRET.encode(), os.O_RDONLY), 200))
""")

attack("pathlike-fspath-flip", FILE, """
    class Flip:
        n = 0
        def __fspath__(self):
            Flip.n += 1
            return RO_OK if Flip.n == 1 else SECRET
    for _ in range(3):
        show(open(Flip()).read())    # the path is read once: this is RO_OK
        Flip.n = 0
    Flip.n = 1
    show(open(Flip()).read())        # and when that one read is SECRET: refused
""")

attack("pre-existing-symlink-in-ro", FILE, """
    import os
    show(open(os.path.join(RO, 'to_secret')).read())
""")

attack("symlink-out-of-rw", FILE, """
    import os
    link = os.path.join(RW, 'ln')
    try:
        os.symlink(SECRET, link)
    finally:
        show(open(link).read())
""")

attack("hardlink-secret-into-rw", FILE, """
    import os
    os.link(SECRET, os.path.join(RW, 'hl'))
    show(open(os.path.join(RW, 'hl')).read())
""")

attack("rename-secret-into-rw", FILE, """
    import os
    os.rename(SECRET, os.path.join(RW, 'moved'))
    show(open(os.path.join(RW, 'moved')).read())
""")

attack("shutil-copy-secret", FILE, """
    import os, shutil
    shutil.copy(SECRET, os.path.join(RW, 'copy'))
    show(open(os.path.join(RW, 'copy')).read())
""")

attack("linecache-getlines", FILE, """
    import linecache
    lines = linecache.getlines(SECRET)
    show(lines)
    if not lines:
        open(SECRET)
""")

attack("zipfile-outside", FILE, """
    import os, zipfile
    show(zipfile.ZipFile(os.path.join(OUT, 's.zip')).read('secret.txt'))
""")

# zipimporter() stats the archive itself: the program's own stat, refused,
# which zipimport turns into "not a Zip file".
attack("zipimport-outside", "ZipImportError", """
    import os, zipimport
    show(zipimport.zipimporter(os.path.join(OUT, 's.zip')).load_module('zipped_mod'))
""")

attack("sys-path-insert-outside", FILE, """
    import sys
    sys.path.insert(0, OUT)
    show(open(SECRET).read())
""")

attack("mmap-write-ro-file", PERM, """
    import mmap, os
    fd = os.open(RO_OK, os.O_RDWR)
    m = mmap.mmap(fd, 0)
    m[:5] = b'PWNED'
    m.flush()
""")

attack("readline-read_history_file", FILE, """
    import readline
    readline.read_history_file(SECRET)
    show([readline.get_history_item(i + 1)
          for i in range(readline.get_current_history_length())])
""")

attack("readline-write_history_file", FILE, """
    import os, readline
    readline.add_history('x')
    readline.write_history_file(os.path.join(OUT, 'history'))
""")

attack("posixshmem-shm_open", FILE, """
    import _posixshmem, os
    _posixshmem.shm_open(SHM, os.O_CREAT | os.O_RDWR, 0o600)
""")

attack("dbm-ndbm-create-outside", FILE, """
    import _dbm, os
    _dbm.open(os.path.join(OUT, 'db'), 'c')
""")

attack("sqlite3-create-outside", FILE, """
    import os, sqlite3
    c = sqlite3.connect(os.path.join(OUT, 'new.db'))
    c.execute('create table t (x)')
    c.commit()
""")

attack("tempfile-outside", FILE, """
    import tempfile
    tempfile.mkstemp(dir=OUT)
""")


# --- writing under the read-only grant ----------------------------------------

attack("open-ro-for-write", PERM, """
    open(RO_OK, 'w').write('PWNED')
""")

attack("os-open-create-dir_fd-ro", PERM, """
    import os
    d = os.open(RO, os.O_RDONLY | os.O_DIRECTORY)
    os.write(os.open('new.txt', os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=d), b'x')
""")

attack("unlink-dir_fd-ro", PERM, """
    import os
    d = os.open(RO, os.O_RDONLY | os.O_DIRECTORY)
    os.unlink('ok.txt', dir_fd=d)
""")

attack("truncate-ro", PERM, """
    import os
    os.truncate(RO_OK, 0)
""")

attack("rename-out-of-ro", PERM, """
    import os
    os.rename(RO_OK, os.path.join(RW, 'stolen'))
""")

attack("replace-onto-ro", PERM, """
    import os
    p = os.path.join(RW, 'x')
    open(p, 'w').write('PWNED')
    os.replace(p, RO_OK)
""")

attack("hardlink-ro-then-write", PERM, """
    import os
    h = os.path.join(RW, 'hl')
    os.link(RO_OK, h)
    open(h, 'w').write('PWNED')
""")

attack("symlink-to-ro-then-write", PERM, """
    import os
    s = os.path.join(RW, 'sl')
    os.symlink(RO_OK, s)
    open(s, 'w').write('PWNED')
""")

attack("mkfifo-in-ro", PERM, """
    import os
    os.mkfifo(os.path.join(RO, 'fifo'))
""")

attack("chmod-ro", PERM, """
    import os
    os.chmod(RO_OK, 0o777)
""")


# --- the thread racing the path check -----------------------------------------
# rw/cur -> "a/../../../outside/secret.txt". While rw/a is a symlink to x/y/z
# (inside rw) that resolves to rw/outside/secret.txt, a decoy; while rw/a is a
# real directory it resolves to the real secret. Every link points inside the
# grants when it is made: only the race can lead outside.

RACE_SYMLINK = """
    import os, threading, time
    os.makedirs(os.path.join(RW, 'x/y/z'))
    os.makedirs(os.path.join(RW, 'a_dir'))
    os.makedirs(os.path.join(RW, 'outside'))
    open(os.path.join(RW, 'outside/secret.txt'), 'w').write('decoy\\n')
    os.symlink('x/y/z', os.path.join(RW, 'a'))
    os.symlink('a/../../../outside/secret.txt', os.path.join(RW, 'cur'))
    assert os.path.basename(OUT) == 'outside'
    import sys
    sys.setswitchinterval(1e-6)       # switch threads as often as possible
    stop = False
    def flip():
        a, alink, adir = (os.path.join(RW, n) for n in ('a', 'a_link', 'a_dir'))
        while not stop:
            os.rename(a, alink)
            os.rename(adir, a)
            os.rename(a, adir)
            os.rename(alink, a)
    t = threading.Thread(target=flip, daemon=True)
    t.start()
    denied = None
    end = time.monotonic() + 8.0       # won in well under a second, in practice
    while time.monotonic() < end:
        try:
            data = open(os.path.join(RW, 'cur')).read()
        except pysandboxes.SandBoxError as e:
            denied = e
        except OSError:
            continue
        else:
            if 'decoy' not in data:
                show(data)
                break
    stop = True
    t.join()
    if denied:
        raise denied
"""



# --- network ------------------------------------------------------------------

attack("tcp-create_connection", NET, """
    import socket
    socket.create_connection(('127.0.0.1', PORT), timeout=2)
""")

attack("tcp-decimal-ip", NET, """
    import socket
    socket.socket().connect(('2130706433', PORT))
""")

attack("tcp-short-and-hex-ip", NET, """
    import socket
    for host in ('127.1', '0x7f.1', '0177.0.0.1'):
        try:
            socket.socket().connect((host, PORT))
        except pysandboxes.SandBoxError:
            continue
    socket.socket().connect(('0x7f000001', PORT))
""")

attack("tcp-ipv4-mapped-ipv6", NET, """
    import socket
    socket.socket(socket.AF_INET6).connect(('::ffff:127.0.0.1', PORT))
""")

attack("tcp-_socket-direct", NET, """
    import _socket
    _socket.socket().connect(('127.0.0.1', PORT))
""")

attack("tcp-fromfd-dup", NET, """
    import socket
    s = socket.socket()
    socket.fromfd(s.fileno(), socket.AF_INET, socket.SOCK_STREAM).connect(('127.0.0.1', PORT))
""")

attack("tcp-socket-from-fileno", NET, """
    import socket, os
    s = socket.socket()
    socket.socket(fileno=os.dup(s.fileno())).connect_ex(('127.0.0.1', PORT))
    s.connect(('127.0.0.1', PORT))
""")

attack("udp-sendto", NET, """
    import socket
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', UPORT))
""")

attack("udp-sendmsg", NET, """
    import socket
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendmsg([b'x'], [], 0,
                                                            ('127.0.0.1', UPORT))
""")

attack("unix-socket-outside", NET, """
    import socket
    socket.socket(socket.AF_UNIX).connect(USOCK)
""")

attack("abstract-unix-socket", NET, """
    import socket
    socket.socket(socket.AF_UNIX).connect(ABSTRACT)
""")

attack("asyncio-open_connection", NET, """
    import asyncio
    asyncio.run(asyncio.open_connection('127.0.0.1', PORT))
""")

attack("urllib-urlopen", NET, """
    import urllib.request
    urllib.request.urlopen(f'http://127.0.0.1:{PORT}/', timeout=2)
""")


# --- imports ------------------------------------------------------------------
# secretmod.py sits next to the script (importable, readable), but
# python-import= does not list it.

IMPORTS = "sys, os, builtins, importlib, runpy, pkgutil, atexit, _imp"

attack("import-statement", MOD, """
    import secretmod
""", imports=IMPORTS)

attack("dunder-import", MOD, """
    __import__('secretmod')
""", imports=IMPORTS)

attack("importlib-import_module", MOD, """
    import importlib
    importlib.import_module('secretmod')
""", imports=IMPORTS)

attack("importlib-dunder-import", MOD, """
    import importlib
    importlib.__import__('secretmod')
""", imports=IMPORTS)

attack("bootstrap-gcd_import", MOD, """
    import importlib._bootstrap
    importlib._bootstrap._gcd_import('secretmod')
""", imports=IMPORTS)

# The loader reads secretmod.py itself: the file is not granted (sys.path[0]
# grants only the modules python-import= allows), so that read is what is
# refused. (Until io.open_code() stopped importing _io for the program, the
# refusal the program saw was that import's, after the file's.)
attack("spec-exec_module", FILE, """
    import importlib.util, os
    spec = importlib.util.spec_from_file_location('secretmod', os.path.join(ROOT, 'secretmod.py'))
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
""", imports=IMPORTS)

# secretmod is not allowed by python-import=, so neither layer grants its file
# (issue 17 item 3; before, runpy's compile() of its source was refused): runpy
# finds no such module, and nothing of it runs.
attack("runpy-run_module", "ImportError", """
    import runpy
    runpy.run_module('secretmod')
""", imports=IMPORTS)

attack("pkgutil-resolve_name", MOD, """
    import pkgutil
    pkgutil.resolve_name('secretmod')
""", imports=IMPORTS)

# The standard library may import the standard library, but not for the
# program: a function that imports the name it is given acts for the caller.
attack("pkgutil-resolve_name-stdlib", MOD, """
    import pkgutil
    pkgutil.resolve_name('ctypes')
    print('SECRETMOD' + '-RAN', flush=True)
""", imports=IMPORTS)

# pydoc.locate() turns an ImportError into None: that None only proves the
# refusal if locate() finds an allowed module in the same run.
attack("pydoc-locate-stdlib", MOD, """
    import pydoc, sys
    if pydoc.locate('json.decoder') is None:
        raise RuntimeError('locate() finds nothing, even an allowed module')
    if pydoc.locate('ctypes') is not None or 'ctypes' in sys.modules:
        print('SECRETMOD' + '-RAN', flush=True)
    raise pysandboxes.RuleModuleNotFoundError('locate() swallowed the refusal')
""", imports=IMPORTS + ", pydoc, json")

attack("runpy-run_module-stdlib", MOD, """
    import runpy
    runpy.run_module('ctypes')
    print('SECRETMOD' + '-RAN', flush=True)
""", imports=IMPORTS)

attack("atexit-dunder-import", MOD, """
    import atexit
    atexit.register(__import__, 'secretmod')
""", imports=IMPORTS)

attack("builtins-import-swap", MOD, """
    import builtins, importlib
    builtins.__import__ = importlib.__import__
    import secretmod
""", imports=IMPORTS)

attack("thread-target-dunder-import", MOD, """
    import threading
    t = threading.Thread(target=__import__, args=('secretmod',))
    t.start()
    t.join()
""", api=("ALLOW:threads",), imports=IMPORTS + ", threading")

attack("sys-modules-poison-then-import", MOD, """
    import sys
    sys.modules['os'] = type(sys)('secretmod')
    sys.modules['secretmod'] = None
    del sys.modules['secretmod']
    import secretmod
""", imports=IMPORTS)

attack("exec-import-string", API, """
    exec('import secretmod')
""", imports=IMPORTS)


# --- code built at run time ---------------------------------------------------

attack("exec-string", API, """
    exec("print('DYN' + '-RAN')")
""")

attack("compile-then-eval", API, """
    eval(compile("print('DYN' + '-RAN')", 'x', 'eval'))
""")

attack("FunctionType-from-code", API, """
    import types
    def g():
        print('DYN' + '-RAN')
    types.FunctionType(g.__code__, {'print': print})()
""")

attack("code-replace-consts", API, """
    def g():
        print('nothing')
    c = g.__code__.replace(co_consts=tuple('DYN-' 'RAN' if x == 'nothing' else x
                                           for x in g.__code__.co_consts))
    g.__code__ = c
    g()
""")

attack("marshal-loads-code", API, """
    import marshal
    def g():
        print('DYN' + '-RAN')
    g.__code__ = marshal.loads(marshal.dumps(g.__code__))
    g()
""")

attack("atexit-exec", API, """
    import atexit
    atexit.register(exec, "print('DYN' + '-RAN')", {'print': print})
""")

attack("atexit-os-system", API, """
    import atexit, os
    atexit.register(os.system, SH)
""")

attack("code-InteractiveInterpreter", API, """
    import code
    code.InteractiveInterpreter().runsource("print('DYN' + '-RAN')")
""")

attack("timeit-runs-source", API, """
    import timeit
    timeit.timeit("print('DYN' + '-RAN')", number=1)
""")

attack("configparser-converter-eval", API, """
    import configparser
    cp = configparser.ConfigParser(converters={'code': eval})
    cp.read_string("[s]\\nk = print('DYN' + '-RAN')\\n")
    cp.getcode('s', 'k')
""")


# Chained: code compiled under a standard-library file name would be the
# runtime's for every frame-based exemption, and the program's own import would
# pass. code.InteractiveInterpreter compiles what the program hands it, so the
# program's python-api rules decide (dynamic-code is not granted here)...
attack("stdlib-co_filename-laundering", API, """
    import code, os
    code.InteractiveInterpreter().runsource(
        "import secretmod", os.path.join(os.path.dirname(os.__file__), 'os.py'), 'exec')
    import secretmod
""", imports=IMPORTS + ", code")

# ... and even with dynamic code granted, compiling under a standard-library
# file name is refused: that grant is not a grant of the runtime's exemptions.
attack("stdlib-co_filename-laundering-granted", API, """
    import os
    exec(compile("import secretmod", os.path.join(os.path.dirname(os.__file__), 'os.py'),
                 'exec'))
    import secretmod
""", api=("ALLOW:dynamic-code",), imports=IMPORTS)


# --- frames, tracing, hooks ---------------------------------------------------

attack("sys-_getframe", API, """
    import sys
    frame_got(sys._getframe())
""")

attack("generator-gi_frame", API, """
    def gen():
        yield 1
    frame_got(gen().gi_frame)
""")

attack("traceback-tb_frame", API, """
    try:
        1 / 0
    except ZeroDivisionError as e:
        frame_got(e.__traceback__.tb_frame)
""")

attack("traceback-walk_tb", API, """
    import traceback
    try:
        1 / 0
    except ZeroDivisionError as e:
        for f, _ in traceback.walk_tb(e.__traceback__):
            frame_got(f)
    import sys
    sys._getframe()
""")

attack("logging-currentframe", API, """
    import logging
    frame_got(logging.currentframe())
    import sys
    sys._getframe()
""")

attack("sys-settrace", API, """
    import sys
    def tracer(*a):
        frame_got(a[0])
        return tracer
    sys.settrace(tracer)
    (lambda: 1)()
""")

# Running a guarded module's code again (the loader it was imported with, or
# runpy) would make fresh functions that no wrapper covers, whose frames pass
# for the standard library's own: refused outside the module's import.

attack("reexec-module-in-place", API, """
    import inspect
    inspect.__spec__.loader.exec_module(inspect)
    frame_got(inspect.currentframe())
""")

attack("reexec-module-copy", API, """
    import importlib.util, inspect
    copy = importlib.util.module_from_spec(inspect.__spec__)
    inspect.__spec__.loader.exec_module(copy)
    frame_got(copy.currentframe())
""")

# With exec() granted, the module's code object run straight into a dict.
attack("reexec-code-object-with-exec-granted", API, """
    import inspect
    code = inspect.__spec__.loader.get_code('inspect')
    ns = {'__name__': 'inspect_copy'}
    exec(code, ns)
    frame_got(ns['currentframe']())
""", api=("ALLOW:builtins.exec",))

attack("runpy-run-module-copy", API, """
    import runpy
    g = runpy.run_module('inspect', run_name='inspect_copy')
    frame_got(g['currentframe']())
""")

# CPython swallows a RuntimeError raised by an existing hook at
# sys.addaudithook() and silently does not add the new hook: the guard's
# refusal (a SandBoxError, so a RuntimeError) is invisible; the hook must
# simply never run.
attack("sys-addaudithook", SILENT, """
    import sys
    sys.addaudithook(lambda ev, args: print('DYN' + '-RAN', flush=True))
    open(RO_OK).close()
""")


# --- the environment ----------------------------------------------------------

attack("hidden-env-proc-self-environ", FILE, """
    import os
    show(os.environ.get('PYSB_HIDDEN'))
    show(os.environb.get(b'PYSB_HIDDEN'))
    import posix
    show(posix.environ.get(b'PYSB_HIDDEN'))
    show(open('/proc/self/environ', 'rb').read())
""")


ATTACKS = A


@pytest.mark.parametrize("expect,body,api,imports", ATTACKS)
def test_attack(arena, expect, body, api, imports):
    if "VICTIM" in body:
        arena.start_victim()
    r = arena.run(body, api=api, imports=imports)
    check(arena, r, expect)


# The attacks that reach for the kernel's side (processes, files, writes,
# sockets, signals, the environment), run again under os-sandbox=unshare: the
# guard and the namespaces together leave no forbidden effect, whichever of
# the two refuses first (the kernel may: seccomp refuses an Internet socket
# without a net= rule, a path outside the new root does not exist).
UNSHARE_ATTACKS = {
    "os-posix_spawn", "os-system-and-popen", "os-fork", "ctypes-CDLL-None-system",
    "os-kill-victim", "open-secret", "os-open-read", "proc-self-root", "dotdot-walk-from-grant",
    "pre-existing-symlink-in-ro", "symlink-out-of-rw", "hardlink-secret-into-rw",
    "rename-secret-into-rw", "posixshmem-shm_open", "open-ro-for-write", "truncate-ro",
    "rename-out-of-ro", "mkfifo-in-ro", "chmod-ro", "tcp-create_connection", "udp-sendto",
    "unix-socket-outside", "abstract-unix-socket", "hidden-env-proc-self-environ",
}


@needs_userns
@pytest.mark.parametrize("expect,body,api,imports",
                         [a for a in ATTACKS if a.id in UNSHARE_ATTACKS])
def test_attack_under_unshare(arena, expect, body, api, imports):
    if "VICTIM" in body:
        arena.start_victim()
    r = arena.run(body, api=api, imports=imports, provider="unshare")
    assert arena.effects(r) == [], r
    if expect is not SILENT:
        assert outcome(r) not in (None, "completed"), r


def test_unshare_attack_list_is_current():
    assert {a.id for a in ATTACKS} >= UNSHARE_ATTACKS


@pytest.mark.parametrize("provider", [pytest.param("landlock", marks=needs_landlock),
                                      pytest.param("unshare", marks=needs_userns)])
def test_symlink_race_is_closed_by_the_kernel(arena, provider):
    """A thread swapping a directory for a symlink between the guard's check
    and the open() can beat the guard alone (check-then-use, listed in
    docs/python-sb.md "Known gaps"; how often it wins varies from run to run,
    so it is not a strict xfail here). Landlock decides at the open itself,
    and under unshare the secret is not in the new root: the secret outside
    every grant is never read."""
    r = arena.run(RACE_SYMLINK, api=("ALLOW:threads",), provider=provider)
    assert arena.secret_text not in r.stdout + r.stderr, r
    assert "OUTCOME" in r.stdout, r


def test_at_least_forty_attacks():
    assert len(ATTACKS) >= 40
