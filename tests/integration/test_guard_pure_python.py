# SPDX-License-Identifier: MIT
"""Pure-Python attacks on the guard's arguments and on what no rule covers
(review of the Python guard, rev-pyguard):

- a number the guard reads and the original function parses again
  (`dir_fd=` and `mknod`'s `mode` through `__index__`): the check and the
  system call must see the same value;
- `mknod` of a character or block device in a writable grant: a node that
  opens any device, whatever the rules say of `/dev`;
- sockets no `net=` rule speaks of (netlink, packet, vsock, raw IP): seccomp
  refuses them in every provider but `none`, where the guard must.

Every attack runs as the caller (root here) and as `nobody`, with the guard
alone (`os-sandbox=none`) and with the default provider (`landlock`). The
arena is test_adversarial_runtime's: a secret outside every grant beside the
sandbox root, a read-only and a read-write grant, and a check from outside
that neither the outside directory nor the read-only grant changed.
"""

import os
import stat
import subprocess

import pytest

from conftest import LANDLOCK_ABI
from test_adversarial_runtime import Arena, outcome

PERM = "RulePermissionError"
NET = "RuleSocketConnectionRefusedError"

RUNS = [("caller", "none"), ("nobody", "none"), ("caller", "landlock"),
        ("nobody", "landlock")]


@pytest.fixture(params=RUNS, ids=[f"{u}-{p}" for u, p in RUNS])
def where(request):
    user, provider = request.param
    if provider == "landlock" and LANDLOCK_ABI < 1:
        pytest.skip("the kernel has no Landlock")
    sb = request.getfixturevalue("sb" if user == "caller" else "sb_nobody")
    arena = Arena(sb, user)
    yield arena, provider
    arena.close()


def run(arena, provider, body, imports="sys, os, stat, socket, struct"):
    r = arena.run(body, provider, imports=imports)
    assert arena.effects(r) == [], r.stdout + r.stderr
    return r


# The decision reads dir_fd once (an RW subdirectory, where the relative name
# lands inside the grant); the original parsed it again and got the read-only
# directory, from which the same name climbs out to the outside directory.
# A FIFO and a regular file (mknod) were made there: writes outside every
# grant with the guard alone, as root and as nobody.
FLIP = """
    import os
    name = os.path.basename(OUT)
    os.makedirs(RW + '/a/b')
    os.makedirs(RW + '/' + name)
    checked = os.open(RW + '/a/b', os.O_RDONLY | os.O_DIRECTORY)
    other = os.open(RO, os.O_RDONLY | os.O_DIRECTORY)
    class Flip:
        n = 0
        def __index__(self):
            Flip.n += 1
            return checked if Flip.n == 1 else other
    for call in (os.mkfifo, os.mknod):
        Flip.n = 0
        try:
            call('../../' + name + '/made-' + call.__name__, dir_fd=Flip())
        except OSError as e:
            print('REFUSED', call.__name__, type(e).__name__, flush=True)
    # The same decision made on the directory it named: the nodes are in
    # the read-write grant.
    show(sorted(os.listdir(RW + '/' + name)))
"""


def test_dir_fd_index_read_once(where):
    arena, provider = where
    r = run(arena, provider, FLIP)
    assert outcome(r) == "completed", r.stdout + r.stderr
    assert "VALUE ['made-mkfifo', 'made-mknod']" in r.stdout, r.stdout + r.stderr
    assert not any(n.startswith("made-") for n in os.listdir(arena.out))


# A character device (/dev/kmsg: 1, 11) made in the writable grant and read:
# with os-sandbox=none and root, the kernel's log, a file no rule grants.
DEVICE = """
    import os, stat
    for kind in (stat.S_IFCHR, stat.S_IFBLK):
        p = RW + ('/chr' if kind == stat.S_IFCHR else '/blk')
        try:
            os.mknod(p, kind | 0o600, os.makedev(1, 11))
        except OSError as e:
            print('REFUSED', type(e).__name__, str(e)[:200], flush=True)
            continue
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        show(os.read(fd, 100))
    # The mode is read once: a FIFO when the guard looks is a FIFO for the
    # system call, not a device.
    class Mode:
        n = 0
        def __index__(self):
            Mode.n += 1
            return stat.S_IFIFO | 0o600 if Mode.n == 1 else stat.S_IFCHR | 0o600
    os.mknod(RW + '/flip', Mode(), os.makedev(1, 11))
    print('FLIP', oct(stat.S_IFMT(os.lstat(RW + '/flip').st_mode)), flush=True)
"""


def test_mknod_device_refused(where):
    arena, provider = where
    r = run(arena, provider, DEVICE)
    assert r.stdout.count(f"REFUSED {PERM}") == 2, r.stdout + r.stderr
    assert "of a device is refused by the file guard" in r.stdout
    assert "VALUE" not in r.stdout
    assert not os.path.lexists(arena.rw / "chr") and not os.path.lexists(arena.rw / "blk")
    assert f"FLIP {oct(stat.S_IFIFO)}" in r.stdout, r.stdout + r.stderr
    assert stat.S_ISFIFO((arena.rw / "flip").lstat().st_mode)


# Sockets of families no net= rule speaks of. Netlink (NETLINK_ROUTE, no
# address needed: the kernel is the default peer) answered a dump of the
# host's addresses, and as root changed them; SOCK_RAW and packet sockets
# read and forge traffic as root; vsock reaches the hypervisor.
SOCKETS = """
    import socket, struct
    kinds = [('netlink', socket.AF_NETLINK, socket.SOCK_RAW, 0),
             ('packet', socket.AF_PACKET, socket.SOCK_RAW, 0),
             ('vsock', socket.AF_VSOCK, socket.SOCK_STREAM, 0),
             ('raw', socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW),
             ('raw6', socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6),
             ('sctp', socket.AF_INET, socket.SOCK_STREAM, 132)]
    for name, family, kind, proto in kinds:
        try:
            s = socket.socket(family, kind, proto)
        except OSError as e:
            print('REFUSED', name, type(e).__name__, flush=True)
            continue
        print('MADE', name, flush=True)
        if name == 'netlink':
            # RTM_GETADDR dump: answered by the kernel without any address.
            s.send(struct.pack('IHHII', 20, 22, 0x301, 1, 0) + bytes([0, 0, 0, 0]))
            show(len(s.recv(65536)))
"""


def test_uncovered_socket_families_refused(where):
    arena, provider = where
    r = run(arena, provider, SOCKETS)
    for name in ("netlink", "packet", "vsock", "raw", "raw6", "sctp"):
        assert f"REFUSED {name} {NET}" in r.stdout, r.stdout + r.stderr
    assert "MADE" not in r.stdout and "VALUE" not in r.stdout, r.stdout + r.stderr


# What a program legitimately makes still works: TCP and UDP sockets (no
# connection without a rule), socket pairs, and nodes that are no device.
LEGIT = """
    import os, socket, stat
    socket.socketpair()[0].close()
    socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).close()
    os.mknod(RW + '/fifo', stat.S_IFIFO | 0o600)
    os.mknod(RW + '/file')
    os.mkfifo('fifo2', dir_fd=os.open(RW, os.O_RDONLY | os.O_DIRECTORY))
    show(sorted(os.listdir(RW)))
"""


def test_ordinary_sockets_and_nodes_still_work(where):
    arena, provider = where
    r = run(arena, provider, LEGIT)
    assert outcome(r) == "completed", r.stdout + r.stderr
    assert "VALUE ['fifo', 'fifo2', 'file']" in r.stdout, r.stdout + r.stderr


# ignore= under a writable grant: a rule naming a path hid the file, but
# moving a directory above it gave it a name the rule does not match (with
# the guard alone, and under Landlock, where ignore= is the guard's alone).
# Patterns that match names ("*.pem") still let directories move.
IGNORED_MOVE = """
    import os
    def attempt(name, fn):
        try:
            fn()
            print('DONE', name, flush=True)
        except OSError as e:
            print('REFUSED', name, type(e).__name__, flush=True)
    attempt('move-parent', lambda: os.rename(RW + '/private', RW + '/public'))
    attempt('move-grandparent', lambda: os.replace(RW + '/top', RW + '/top2'))
    attempt('read', lambda: print('VALUE', open(RW + '/public/key.txt').read(), flush=True))
    attempt('read2', lambda: print('VALUE', open(RW + '/top2/mid/key.txt').read(), flush=True))
    attempt('move-other', lambda: os.rename(RW + '/other', RW + '/other2'))
    attempt('read-pem', lambda: print('VALUE', open(RW + '/other2/c.pem').read(), flush=True))
"""


@pytest.mark.parametrize("user,provider", RUNS, ids=[f"{u}-{p}" for u, p in RUNS])
def test_moving_a_directory_does_not_unhide_ignored_paths(request, user, provider):
    if provider == "landlock" and LANDLOCK_ABI < 1:
        pytest.skip("the kernel has no Landlock")
    sb = request.getfixturevalue("sb" if user == "caller" else "sb_nobody")
    rw = sb.mkdir("rw")
    for rel, text in (("private/key.txt", "HIDDEN-ONE"), ("top/mid/key.txt", "HIDDEN-TWO"),
                      ("other/c.pem", "HIDDEN-PEM"), ("other/ok.txt", "fine")):
        sb.write(f"rw/{rel}", text)
    sb.profile(f"os-sandbox={provider}\npython-import=os\nexpose-rw={rw}\n"
               f"ignore={rw}/private/key.txt\nignore={rw}/top/*/key.txt\nignore=*.pem\n")
    r = sb.run(sb.script(f"RW = {str(rw)!r}\n" + IGNORED_MOVE.replace("\n    ", "\n")))
    out = r.stdout + r.stderr
    assert "HIDDEN" not in out, out
    assert "REFUSED move-parent RulePermissionError" in r.stdout, out
    assert "REFUSED move-grandparent RulePermissionError" in r.stdout, out
    assert "DONE move-other" in r.stdout, out
    assert "REFUSED read-pem RuleFileNotFoundError" in r.stdout, out
    assert (rw / "private" / "key.txt").exists() and (rw / "top" / "mid" / "key.txt").exists()


# os.symlink() refuses a link that would lead outside the grants, decided
# from the link's directory; renaming a relative link (or a directory holding
# one) to a shallower place made it lead outside: rw/a/b/l -> ../../<out>
# leads to rw/<out> where it is made, beside the sandbox root once renamed to
# rw/l. Nothing reads through it in the run (every use is resolved again),
# but the caller finds it in the writable grant afterwards.
MOVED_LINKS = """
    import os, shutil
    name = os.path.basename(OUT)
    def attempt(what, fn):
        try:
            fn()
            print('DONE', what, flush=True)
        except OSError as e:
            print('REFUSED', what, type(e).__name__, flush=True)
    for d in ('a/b', 'm/n', 'c/d'):
        os.makedirs(RW + '/' + d)
    os.symlink('../../' + name + '/secret.txt', RW + '/a/b/l')
    os.symlink('../../' + name + '/secret.txt', RW + '/m/n/l')
    attempt('link-up', lambda: os.rename(RW + '/a/b/l', RW + '/l'))
    attempt('dir-up', lambda: os.rename(RW + '/m/n', RW + '/n'))
    attempt('shutil-move', lambda: shutil.move(RW + '/m/n', RW + '/n2'))
    # link() does not follow: a hard link to the symbolic link, elsewhere.
    attempt('hardlink-up', lambda: os.link(RW + '/a/b/l', RW + '/hl'))
    attempt('hardlink-up-nofollow',
            lambda: os.link(RW + '/a/b/l', RW + '/hl2', follow_symlinks=False))
    # What keeps its meaning still moves: the same directory, deeper down.
    attempt('link-same-dir', lambda: os.rename(RW + '/a/b/l', RW + '/a/b/l2'))
    attempt('link-deeper', lambda: os.rename(RW + '/a/b/l2', RW + '/c/d/l3'))
    attempt('dir-renamed-in-place', lambda: os.rename(RW + '/m', RW + '/m2'))
"""


def links_outside(rw, *grants):
    found = []
    for dirpath, dirnames, filenames in os.walk(rw):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                real = os.path.realpath(p)
                if not any(real.startswith(str(g) + os.sep) for g in grants):
                    found.append(f"{p} -> {real}")
    return found


def test_moved_links_still_lead_within_the_grants(where):
    arena, provider = where
    r = run(arena, provider, MOVED_LINKS, imports="sys, os, shutil")
    out = r.stdout + r.stderr
    assert links_outside(arena.rw, arena.rw, arena.ro) == [], out
    if provider == "none" or "REFUSED link-up RulePermissionError" in r.stdout:
        # Landlock may refuse nothing here: the guard does, first.
        assert "REFUSED link-up RulePermissionError" in r.stdout, out
        assert "REFUSED dir-up RulePermissionError" in r.stdout, out
        assert "REFUSED hardlink-up RulePermissionError" in r.stdout, out
        assert "REFUSED hardlink-up-nofollow RulePermissionError" in r.stdout, out
    for what in ("link-same-dir", "link-deeper", "dir-renamed-in-place"):
        assert f"DONE {what}" in r.stdout, out


# fcntl(F_SETOWN) with O_ASYNC makes the kernel signal the owner at the next
# I/O on the descriptor, F_SETSIG chooses the signal (SIGKILL here): a kill of
# another process past os.kill's python-api rule (seccomp refuses both in the
# other providers). The victim is the same user as the program.
SIGIO_KILL = """
    import fcntl, os, socket, time
    a, b = socket.socketpair()
    def attempt(what, fn):
        try:
            fn()
            print('DONE', what, flush=True)
        except OSError as e:
            print('REFUSED', what, type(e).__name__, flush=True)
    attempt('setown', lambda: fcntl.fcntl(a.fileno(), fcntl.F_SETOWN, VICTIM))
    attempt('setsig', lambda: fcntl.fcntl(a.fileno(), 10, 9))  # F_SETSIG, SIGKILL
    attempt('lease', lambda: fcntl.fcntl(os.open(RO_OK, os.O_RDONLY), fcntl.F_SETLEASE,
                                         fcntl.F_RDLCK))
    flags = fcntl.fcntl(a.fileno(), fcntl.F_GETFL)
    fcntl.fcntl(a.fileno(), fcntl.F_SETFL, flags | os.O_ASYNC)
    b.send(b'x')
    time.sleep(0.3)
"""


def test_fcntl_cannot_signal_other_processes(where):
    arena, provider = where
    victim = subprocess.Popen(arena.sb.prefix + ["sleep", "60"])
    try:
        arena.victim = None
        body = SIGIO_KILL.replace("VICTIM", str(victim.pid))
        r = run(arena, provider, body, imports="sys, os, fcntl, socket, time")
        out = r.stdout + r.stderr
        assert victim.poll() is None, "the victim was signalled: " + out
        for what in ("setown", "setsig", "lease"):
            if provider == "none":
                assert f"REFUSED {what} {PERM}" in r.stdout, out
            else:
                assert f"REFUSED {what}" in r.stdout, out
        assert outcome(r) == "completed", out
    finally:
        victim.kill()
        victim.wait()


# CPython's C-API test modules, installed with Debian's interpreter, are
# native code no audit event covers: _testcapi made a frame object
# (frame_new) and ran a Python callable on a C thread the threads rule never
# saw (call_in_temporary_c_thread). They load with the native grant only,
# as _ctypes does.
TESTCAPI = """
    import sys
    for name in ('_testcapi', '_testinternalcapi', '_testbuffer', '_ctypes_test'):
        try:
            __import__(name)
            print('LOADED', name, flush=True)
        except ImportError:
            print('ABSENT', name, flush=True)
        except OSError as e:
            print('REFUSED', name, type(e).__name__, flush=True)
        if name in sys.modules:
            print('LEAKED', name, flush=True)
    if '_testcapi' in sys.modules:
        t = sys.modules['_testcapi']
        def f():
            pass
        print('GOT', type(t.frame_new(f.__code__, {}, None)).__name__, flush=True)
        t.call_in_temporary_c_thread(lambda: print('C-THREAD', flush=True))
"""


def test_c_api_test_modules_need_the_native_grant(where):
    pytest.importorskip("_testcapi")
    arena, provider = where
    r = arena.run(TESTCAPI, provider, imports="*")
    out = r.stdout + r.stderr
    assert "GOT frame" not in r.stdout and "C-THREAD" not in r.stdout, out
    assert "REFUSED _testcapi RuleApiPermissionError" in r.stdout, out
    assert "LOADED" not in r.stdout, out
    r = arena.run(TESTCAPI, provider, imports="*", api=("ALLOW:native",))
    assert "LOADED _testcapi" in r.stdout, r.stdout + r.stderr


# A fresh posix module (a re-import after del sys.modules['posix'], or
# _imp.create_builtin()) had none of the file wrappers the first one got:
# its mkfifo() made a FIFO outside every grant, its stat() answered for any
# path (and as root its chroot() and mknod() were the kernel's alone).
FRESH_POSIX = """
    import sys, _imp, importlib.machinery
    name = OUT + '/fifo-'
    def attempt(what, fn):
        try:
            fn()
            print('DONE', what, flush=True)
        except OSError as e:
            print('REFUSED', what, type(e).__name__, flush=True)
    del sys.modules['posix']
    import posix as again
    fresh = _imp.create_builtin(importlib.machinery.ModuleSpec('posix', None))
    _imp.exec_builtin(fresh)
    for label, m in (('reimport', again), ('create_builtin', fresh)):
        attempt(label + '-mkfifo', lambda: m.mkfifo(name + label))
        attempt(label + '-stat', lambda: print('VALUE', m.stat(SECRET).st_size, flush=True))
"""


def test_fresh_posix_modules_get_the_file_wrappers(where):
    arena, provider = where
    r = run(arena, provider, FRESH_POSIX, imports="sys, os, posix, _imp, importlib")
    out = r.stdout + r.stderr
    assert not [n for n in os.listdir(arena.out) if n.startswith("fifo-")], out
    assert "VALUE" not in r.stdout, out
    for label in ("reimport", "create_builtin"):
        for what in ("mkfifo", "stat"):
            assert f"REFUSED {label}-{what} RuleFileNotFoundError" in r.stdout, out


# A spec whose name is a property answered "_json" to the guard and the name
# of a module that needs the native grant to _imp, which reads it again and
# loaded it: the loading is judged on the name _imp really loads.
SPEC_FLIP = """
    import sys, _imp, importlib.util
    for target in ('_ctypes', '_testcapi'):
        real = importlib.util.find_spec(target)
        if real is None:
            continue
        class Spec:
            n = 0
            origin = real.origin
            loader_state = None
            submodule_search_locations = None
            @property
            def name(self):
                Spec.n += 1
                return '_json' if Spec.n == 1 else target
        try:
            _imp.create_dynamic(Spec())
            print('LOADED', target, flush=True)
        except OSError as e:
            print('REFUSED', target, type(e).__name__, flush=True)
        if target in sys.modules:
            print('IN-SYS-MODULES', target, flush=True)
"""


def test_native_modules_judged_on_the_name_imp_loads(where):
    arena, provider = where
    r = arena.run(SPEC_FLIP, provider, imports="*")
    out = r.stdout + r.stderr
    assert "LOADED" not in r.stdout and "IN-SYS-MODULES" not in r.stdout, out
    assert "REFUSED _ctypes RuleApiPermissionError" in r.stdout, out


# Started by root without user=, the program could leave a set-user-ID root
# executable in the writable grant (chmod, os.open(O_CREAT) or mknod with
# the bit), for anyone who reaches the directory after the run: refused
# whatever the grants; on a directory too (seccomp cannot tell one from a
# file and refuses the bits to native code alike: one answer).
SET_ID = """
    import os, stat
    def attempt(what, fn):
        try:
            fn()
            print('DONE', what, flush=True)
        except OSError as e:
            print('REFUSED', what, type(e).__name__, flush=True)
    p = RW + '/tool'
    with open(p, 'w') as f:
        f.write('#!/bin/sh\\nid\\n')
    attempt('chmod', lambda: os.chmod(p, 0o4755))
    attempt('chmod-fd', lambda: os.chmod(os.open(p, os.O_RDONLY), 0o2755))
    attempt('open', lambda: os.open(RW + '/made', os.O_CREAT | os.O_WRONLY, 0o6755))
    attempt('mknod', lambda: os.mknod(RW + '/node', stat.S_IFREG | 0o4755))
    os.mkdir(RW + '/shared')
    attempt('setgid-dir', lambda: os.chmod(RW + '/shared', 0o2775))
    attempt('plain-chmod', lambda: os.chmod(p, 0o755))
"""


def test_no_set_id_files(where):
    arena, provider = where
    r = run(arena, provider, SET_ID)
    out = r.stdout + r.stderr
    for what in ("chmod", "chmod-fd", "open", "mknod", "setgid-dir"):
        assert f"REFUSED {what} {PERM}" in r.stdout, out
    assert "DONE plain-chmod" in r.stdout, out
    assert not os.stat(os.path.join(arena.rw, "shared")).st_mode & stat.S_ISGID, out
    for dirpath, dirnames, filenames in os.walk(arena.rw):
        for name in filenames:
            mode = os.lstat(os.path.join(dirpath, name)).st_mode
            assert not mode & (stat.S_ISUID | stat.S_ISGID), (name, oct(mode), out)
