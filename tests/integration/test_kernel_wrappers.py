# SPDX-License-Identifier: MIT
"""The kernel boundary under the wrapper providers, os-sandbox=bwrap and
os-sandbox=firejail: python-sb runs itself again under the tool, and that
inner python-sb loads the seccomp filter and the limits and runs the guard.

The adversarial part mirrors test_kernel_landlock.py with py-sandbox=false,
so that whatever is refused is refused by the kernel (the tool's mount, PID
and network namespaces, the seccomp filter, the limits), against native code:
ctypes calling libc, raw syscalls. Each refusal is checked by the errno the
program saw *and* by the missing effect (no secret in the output, no file
created or changed, a listener of the test's that received nothing, a victim
process alive). The errnos differ from Landlock's where the tools hide rather
than refuse: a path outside the grants does not exist in the sandbox
(ENOENT), a read-only grant is a read-only mount (EROFS).

Users: each test runs as the caller (root in CI) and unprivileged. bwrap runs
as `nobody` (user namespaces). firejail never lets the user `nobody` start a
sandbox (firejail-users(5)): test_firejail_refuses_nobody checks that python-sb
stops with that reason, and the unprivileged runs under firejail use an
ordinary account of this machine (uid 1000-59999 with a home), skipped where
there is none."""

import errno
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from conftest import (EXIT_CONFIG, EXIT_TIMEOUT, IS_ASAN, NATIVE_PRELUDE, SANITIZER_ENV,
                      TIMEOUT, Sandbox, not_under_asan, outcomes, run_native)
from test_kernel_landlock import (accepted, free_port, tcp, tracer_pid,  # noqa: F401
                                  unix_listener, victim)
from test_kernel_unshare import (HostListener, check_data_sent_before_the_exit_arrives,
                                 check_inherited_files_not_reopened, tools_missing,
                                 tun_usable_by)

SECRET = "TOP-SECRET-5f3a9c"
ORIGINAL = "ORIGINAL-ro-content\n"

HAVE = {w: shutil.which(w) is not None for w in ("bwrap", "firejail")}


def wrapper_param(name):
    return pytest.param(name, marks=pytest.mark.skipif(
        not HAVE[name], reason=f"{name} is not installed (scripts/deps.sh test installs it)"))


WRAPPERS = [wrapper_param("bwrap"), wrapper_param("firejail")]


def regular_user():
    """An ordinary account (not nobody) with an existing home, for firejail's
    unprivileged runs, or None."""
    for pw in sorted(pwd.getpwall(), key=lambda p: p.pw_uid):
        if 1000 <= pw.pw_uid < 60000 and os.path.isdir(pw.pw_dir):
            return pw
    return None


def user_sandbox(sb_bin, pw):
    """Like conftest's sb_nobody, for another account (root only)."""
    setpriv = shutil.which("setpriv")
    if not setpriv:
        pytest.skip("setpriv is needed to run as another user")
    prefix = [setpriv, f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups", "--"]
    if subprocess.run(prefix + ["test", "-x", sb_bin], timeout=TIMEOUT).returncode != 0:
        pytest.skip(f"user {pw.pw_name} cannot execute {sb_bin}")
    base = Path(tempfile.mkdtemp(prefix="python-sb-user-", dir="/tmp"))
    os.chmod(base, 0o755)
    root = base / "sb"
    root.mkdir()
    os.chown(root, pw.pw_uid, pw.pw_gid)
    return base, Sandbox(sb_bin, root, prefix=prefix, owner=(pw.pw_uid, pw.pw_gid))


@pytest.fixture(params=WRAPPERS)
def wrapper(request):
    return request.param


@pytest.fixture(params=["caller", "unprivileged"])
def anyuser(request, wrapper, sb_bin):
    """(wrapper, sandbox) for the caller and for an unprivileged user, with
    ./ro (expose-ro, holding existing.txt), ./rw (expose-rw) and a secret
    file beside them, readable by anyone: only the sandbox can refuse it."""
    base = None
    if request.param == "caller" or os.geteuid() != 0:
        if request.param == "unprivileged" and os.geteuid() != 0:
            sb = request.getfixturevalue("sb_nobody")
        else:
            sb = request.getfixturevalue("sb")
    elif wrapper == "firejail":
        pw = regular_user()
        if pw is None:
            pytest.skip("firejail refuses the user nobody and this machine has no ordinary "
                        "account to run it as")
        base, sb = user_sandbox(sb_bin, pw)
    else:
        sb = request.getfixturevalue("sb_nobody")
    sb.write("ro/existing.txt", ORIGINAL)
    sb.mkdir("rw")
    secret = sb.write("secret.txt", SECRET + "\n")
    os.chmod(secret, 0o644)
    yield wrapper, sb
    if base:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def box(wrapper, sb):
    """The same, as the caller only."""
    sb.write("ro/existing.txt", ORIGINAL)
    sb.mkdir("rw")
    secret = sb.write("secret.txt", SECRET + "\n")
    os.chmod(secret, 0o644)
    return wrapper, sb


def base(w, py_sandbox=False):
    return f"os-sandbox={w}\npy-sandbox={'true' if py_sandbox else 'false'}\n"


def profile(w, extra=""):
    return base(w) + "expose-ro=./ro\nexpose-rw=./rw\n" + extra


def unprivileged(sb):
    return bool(sb.prefix) or os.geteuid() != 0


# --------------------------------------------------------------------------
# Reading outside the grants


def test_libc_open_outside_grants_refused(anyuser):
    w, sb = anyuser
    secret = str(sb.path("secret.txt")).encode()
    r, o = run_native(sb, profile(w), f'''
        AT_FDCWD = -100
        for name, fd in [
            ("open", attempt("open", libc.open, {secret!r}, os.O_RDONLY)),
            ("SYS_openat", attempt("SYS_openat", libc.syscall, 257, AT_FDCWD, {secret!r},
                                   os.O_RDONLY, 0)),
            ("SYS_openat2", attempt("SYS_openat2", libc.syscall, 437, AT_FDCWD, {secret!r},
                                    (ctypes.c_uint64 * 3)(os.O_RDONLY, 0, 0), 24)),
        ]:
            if fd >= 0:
                print(os.read(fd, 100))
        py("python open", lambda: open({secret.decode()!r}).read())
        py("listdir beside", lambda: print("beside:", sorted(os.listdir("."))))
        ''')
    assert r.returncode == 0, r
    # Not in the sandbox at all: the directory holds the grants only.
    assert o["open"] == o["SYS_openat"] == o["SYS_openat2"] == o["python open"] == "ENOENT", r
    assert "secret.txt" not in r.stdout.split("beside:")[-1], r
    assert SECRET not in r.stdout + r.stderr


def test_paths_that_lead_outside_refused(box):
    w, sb = box
    secret = sb.path("secret.txt")
    os.symlink(secret, sb.path("ro/link"))
    r, o = run_native(sb, profile(w), f'''
        for name, path in [("symlink", "ro/link"),
                           ("proc root", "/proc/self/root" + {str(secret)!r}),
                           ("dotdot", "ro/../secret.txt")]:
            fd = attempt(name, libc.open, path.encode(), os.O_RDONLY)
            if fd >= 0:
                print(os.read(fd, 100))
        ''')
    assert r.returncode == 0, r
    assert o == {"symlink": "ENOENT", "proc root": "ENOENT", "dotdot": "ENOENT"}, r
    assert SECRET not in r.stdout + r.stderr


def test_host_files_hidden_even_from_root(anyuser):
    """/etc holds a handful of entries, never passwd or shadow; the host's
    home directories and /run's sockets are out of reach."""
    w, sb = anyuser
    r, o = run_native(sb, profile(w), '''
        attempt("passwd", libc.open, b"/etc/passwd", os.O_RDONLY)
        attempt("shadow", libc.open, b"/etc/shadow", os.O_RDONLY)
        print("etc:", sorted(os.listdir("/etc")))
        for d in ("/root", "/home", "/var", "/run/dbus"):
            try:
                print(d, "holds", os.listdir(d))
            except OSError as e:
                print(d, "refused", errno.errorcode[e.errno])
        ''')
    assert r.returncode == 0, r
    assert o["passwd"] == o["shadow"] == "ENOENT", r
    etc = r.stdout.split("etc: ")[1].splitlines()[0]
    assert "passwd" not in etc and "shadow" not in etc and "ssl" in etc, r
    for d in ("/root", "/home", "/var", "/run/dbus"):
        line = next(x for x in r.stdout.splitlines() if x.startswith(d + " "))
        # bwrap: not in the new root. firejail: blacklisted, an empty
        # directory root may list, EACCES for anyone else.
        assert line in (f"{d} refused ENOENT", f"{d} refused EACCES", f"{d} holds []"), r
    assert "root:" not in r.stdout


def test_host_processes_are_not_in_the_sandbox(anyuser, victim):
    w, sb = anyuser
    v = victim(sb)
    r, o = run_native(sb, profile(w), f'''
        attempt("victim status", libc.open, b"/proc/{v.pid}/status", os.O_RDONLY)
        attempt("victim mem", libc.open, b"/proc/{v.pid}/mem", os.O_RDWR)
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
        print("processes:", len(pids))
        ''')
    assert r.returncode == 0, r
    assert o["victim status"] == o["victim mem"] == "ENOENT", r
    # A PID namespace of its own: the tool's processes and python-sb's.
    assert int(o["processes"]) <= 6, r


# --------------------------------------------------------------------------
# Writing


@pytest.mark.parametrize("wrapper", [wrapper_param("bwrap")], indirect=True)
def test_bwrap_inherited_files_cannot_be_reopened_through_proc(anyuser):
    """As under unshare: bubblewrap's new root does not hold a file the
    program inherited a descriptor of, and Landlock keeps /proc/self/fd/N
    from reopening it by its host path. (firejail's root is the host's:
    docs/python-sb.md says this stays open there.)"""
    w, sb = anyuser
    check_inherited_files_not_reopened(sb, profile(w))


def test_create_under_expose_ro_refused(anyuser):
    w, sb = anyuser
    r, o = run_native(sb, profile(w), '''
        attempt("creat", libc.open, b"ro/new.txt", os.O_WRONLY | os.O_CREAT, 0o644)
        attempt("mkdir", libc.mkdir, b"ro/newdir", 0o755)
        attempt("mknod fifo", libc.mkfifo, b"ro/fifo", 0o644)
        attempt("symlink", libc.symlink, b"/etc/passwd", b"ro/sym")
        ''')
    assert r.returncode == 0, r
    assert o == {"creat": "EROFS", "mkdir": "EROFS", "mknod fifo": "EROFS",
                 "symlink": "EROFS"}, r
    assert sorted(os.listdir(sb.path("ro"))) == ["existing.txt"]


def test_modify_under_expose_ro_refused(box):
    w, sb = box
    existing = sb.path("ro/existing.txt")
    before = os.stat(existing)
    r, o = run_native(sb, profile(w), '''
        attempt("open wronly", libc.open, b"ro/existing.txt", os.O_WRONLY)
        attempt("open trunc", libc.open, b"ro/existing.txt", os.O_RDWR | os.O_TRUNC)
        attempt("truncate", libc.truncate, b"ro/existing.txt", ctypes.c_long(0))
        attempt("unlink", libc.unlink, b"ro/existing.txt")
        attempt("rename", libc.rename, b"ro/existing.txt", b"ro/renamed.txt")
        attempt("rename to rw", libc.rename, b"ro/existing.txt", b"rw/stolen.txt")
        ''')
    assert r.returncode == 0, r
    assert o["open wronly"] == o["open trunc"] == o["truncate"] == "EROFS", r
    assert o["unlink"] == o["rename"] == "EROFS", r
    assert o["rename to rw"] in ("EROFS", "EXDEV"), r
    assert existing.read_text() == ORIGINAL
    after = os.stat(existing)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == \
        (before.st_ino, before.st_size, before.st_mtime_ns)
    assert os.listdir(sb.path("rw")) == []


def test_nothing_but_expose_rw_is_writable(anyuser):
    """The wrapper's own tree (the new root, /tmp, /dev) takes no file that
    reaches the host, and a writable grant is no bridge out."""
    w, sb = anyuser
    sb.write("rw/mine.txt", "mine\n")
    secret = str(sb.path("secret.txt")).encode()
    outside = str(sb.path("moved.txt")).encode()
    r, o = run_native(sb, profile(w), f'''
        attempt("rename out", libc.rename, b"rw/mine.txt", {outside!r})
        attempt("link in", libc.link, {secret!r}, b"rw/leak.txt")
        attempt("create beside", libc.open, b"beside.txt", os.O_WRONLY | os.O_CREAT, 0o644)
        attempt("symlink in", libc.symlink, {secret!r}, b"rw/sym.txt")
        py("read through symlink", lambda: print(open("rw/sym.txt").read()))
        attempt("dev/shm", libc.open, b"/dev/shm/python-sb-test", os.O_WRONLY | os.O_CREAT, 0o644)
        ''')
    assert r.returncode == 0, r
    assert o["rename out"] in ("EXDEV", "EROFS"), r
    assert o["link in"] == "ENOENT", r
    assert o["symlink in"] == "OK" and o["read through symlink"] == "ENOENT", r
    assert SECRET not in r.stdout
    assert not sb.path("moved.txt").exists() and not sb.path("beside.txt").exists()
    assert not sb.path("rw/leak.txt").exists()
    assert sb.path("rw/mine.txt").read_text() == "mine\n"
    assert not os.path.exists("/dev/shm/python-sb-test")


TREE_OUTSIDE_THE_GRANTS = ("/", "/run", "/tmp", "/dev", "/dev/shm", "/etc", "/usr/local", "/var/tmp")


def test_the_tree_outside_the_grants_takes_no_file(anyuser):
    """Not the host's directories the tool leaves in place (firejail kept
    the host's / and /run writable for root: a file created there stayed on
    the host) nor the tool's own tmpfs mounts (memory outside limit-memory):
    with no expose-rw rule for them, creating a file anywhere fails."""
    w, sb = anyuser
    name = f"python-sb-test-{os.getpid()}"
    targets = [os.path.join(d, name) for d in TREE_OUTSIDE_THE_GRANTS]
    r, o = run_native(sb, profile(w), "\n".join(
        f"attempt({t!r}, libc.open, {t.encode()!r}, os.O_WRONLY | os.O_CREAT, 0o644)"
        for t in targets))
    assert r.returncode == 0, r
    assert set(o) == set(targets), r
    assert not [t for t in targets if o[t] == "OK"], r
    try:
        assert not [t for t in targets if os.path.exists(t)]
    finally:
        for t in targets:
            if os.path.isfile(t):
                os.unlink(t)


def test_allowed_file_operations_work(anyuser):
    w, sb = anyuser
    r, o = run_native(sb, profile(w), '''
        print("ro content:", open("ro/existing.txt").read().strip())
        print("ro listing:", sorted(os.listdir("ro")))
        with open("rw/out.txt", "w") as f:
            f.write("written by the sandbox\\n")
        os.mkdir("rw/sub")
        os.rename("rw/out.txt", "rw/sub/out.txt")
        with open("rw/tmp.txt", "w") as f:
            f.write("x")
        os.unlink("rw/tmp.txt")
        print("cwd:", os.getcwd())
        ''')
    assert r.returncode == 0, r
    assert "ro content: ORIGINAL-ro-content" in r.stdout
    assert "ro listing: ['existing.txt']" in r.stdout
    assert f"cwd: {sb.root}" in r.stdout
    assert sb.path("rw/sub/out.txt").read_text() == "written by the sandbox\n"
    assert sorted(os.listdir(sb.path("rw"))) == ["sub"]


def test_expose_rw_inside_expose_ro_is_writable(anyuser):
    """A writable grant nested in a read-only one (the script's directory
    exposed read-only, a results directory inside it): the inner one is
    writable, the rest of the outer one is not."""
    w, sb = anyuser
    sb.mkdir("ro/out")
    r, o = run_native(sb, base(w) + "expose-ro=./ro\nexpose-rw=./ro/out\n", '''
        py("write inner", lambda: open("ro/out/result.txt", "w").write("ok"))
        py("write outer", lambda: open("ro/new.txt", "w"))
        ''')
    assert r.returncode == 0, r
    assert o["write inner"] == "OK", r
    assert o["write outer"] == "EROFS", r
    assert sb.path("ro/out/result.txt").read_text() == "ok"
    assert not sb.path("ro/new.txt").exists()


# --------------------------------------------------------------------------
# Sockets and network


def test_no_net_rule_no_inet_socket(anyuser, tcp):
    w, sb = anyuser
    listener = tcp()
    r, o = run_native(sb, profile(w), f'''
        attempt("socket inet", libc.socket, socket.AF_INET, socket.SOCK_STREAM, 0)
        attempt("socket inet6", libc.socket, socket.AF_INET6, socket.SOCK_STREAM, 0)
        attempt("SYS_socket", libc.syscall, 41, socket.AF_INET, socket.SOCK_STREAM, 0)
        attempt("socket unix", libc.socket, socket.AF_UNIX, socket.SOCK_STREAM, 0)
        def connect():
            c = socket.create_connection(("127.0.0.1", {listener.port}), timeout=2)
            c.sendall(b"LEAK")
        py("python connect", connect)
        ''')
    assert r.returncode == 0, r
    assert o == {"socket inet": "EPERM", "socket inet6": "EPERM", "SYS_socket": "EPERM",
                 "socket unix": "EPERM", "python connect": "EPERM"}, r
    assert listener.received() is None


# net= ALLOW rules under bwrap (and firejail as root): the tool's network
# namespace gets slirp4netns and the nftables filter of os-sandbox=unshare,
# set up from outside (wrap-net.h). The sandbox reaches the host's loopback as
# 10.0.2.2, only where a rule names that address.


def net_wrapper_user(request, w, user):
    """The sandbox for a filtered network under w as user; firejail only as
    root (unprivileged its run stops: test_firejail_net_rules_stop_unprivileged)."""
    if not HAVE[w]:
        pytest.skip(f"{w} is not installed")
    if w == "firejail" and (user != "caller" or os.geteuid() != 0):
        pytest.skip("firejail gets a filtered network as root only")
    if tools_missing():
        pytest.skip(f"not installed: {tools_missing()} (scripts/deps.sh test installs them)")
    sb = request.getfixturevalue("sb" if user == "caller" else "sb_nobody")
    if not tun_usable_by(sb):
        pytest.skip("/dev/net/tun is not readable and writable by the sandbox's user here "
                    "(mode 0600; Debian's udev makes it 0666)")
    return sb


NET_CASES = [("bwrap", "caller"), ("bwrap", "nobody"), ("firejail", "caller")]


@pytest.mark.parametrize("w,user", NET_CASES)
def test_net_reaches_the_host_only_where_a_rule_allows(request, w, user):
    sb = net_wrapper_user(request, w, user)
    allowed, other = HostListener(), HostListener()
    try:
        r, o = run_native(sb, base(w) + f"net=ALLOW|tcp|10.0.2.2|{allowed.port}|OUT\n", f'''
            def connect(host, port):
                def go():
                    c = socket.create_connection((host, port), timeout=3)
                    c.sendall(b"HELLO-" + str(port).encode())
                    c.close()
                return go
            py("allowed", connect("10.0.2.2", {allowed.port}))
            py("other port", connect("10.0.2.2", {other.port}))
            py("own loopback", connect("127.0.0.1", {allowed.port}))
            attempt("udp", libc.socket, socket.AF_INET, socket.SOCK_DGRAM, 0)
            def udp():
                u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                u.sendto(b"LEAK", ("10.0.2.3", 53))
                u.settimeout(1)
                u.recv(10)
            py("udp to the dns forwarder", udp)
            print("interfaces:", sorted(l.split(":")[0].strip()
                                        for l in open("/proc/self/net/dev").readlines()[2:]))
            # The network's word (a socket) is read and closed before the
            # program runs; what is left past stdio is the status pipe.
            def target(fd):
                try:
                    return os.readlink(f"/proc/self/fd/{{fd}}")
                except OSError:  # listdir's own, closed
                    return ""
            print("sockets:", [fd for fd in os.listdir("/proc/self/fd")
                               if target(fd).startswith("socket:")])
            ''')
        assert r.returncode == 0, r
        assert o["sockets"] == "[]", r
        assert o["allowed"] == "OK", r
        # nftables refuses at once (a reset); 127.0.0.1 is the sandbox's own
        # loopback, where nothing listens.
        assert o["other port"] == o["own loopback"] == "ECONNREFUSED", r
        # A tcp-only rule: seccomp refuses UDP sockets.
        assert o["udp"] == "EPERM", r
        assert o["interfaces"] == "['lo', 'tap0']", r
        assert allowed.received() == f"HELLO-{allowed.port}".encode()
        assert other.received() is None
    finally:
        allowed.close()
        other.close()


@pytest.mark.parametrize("w,user", NET_CASES)
def test_net_data_sent_before_the_exit_arrives(request, w, user):
    """As under os-sandbox=unshare: slirp4netns stops once the tool has
    ended, after the connections' last bytes reached it."""
    check_data_sent_before_the_exit_arrives(net_wrapper_user(request, w, user), base(w))


@pytest.mark.parametrize("w", ["bwrap", "firejail"])
def test_net_udp_only_where_a_rule_allows(request, w):
    """A udp rule for one port of the host's loopback: seccomp lets UDP
    sockets be made, the datagram to that port arrives, the filter refuses
    every other destination at once (EPERM from the output chain)."""
    sb = net_wrapper_user(request, w, "caller")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.settimeout(3)
        port = listener.getsockname()[1]
        r, o = run_native(sb, base(w) + f"net=ALLOW|udp|10.0.2.2|{port}|OUT\n", f'''
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            print("socket: OK")
            def send(host, port):
                return lambda: u.sendto(b"DATAGRAM", (host, port))
            py("allowed", send("10.0.2.2", {port}))
            py("dns forwarder", send("10.0.2.3", 53))
            py("elsewhere", send("192.0.2.1", 53))
            py("other port", send("10.0.2.2", {port} + 1))
            ''')
        assert r.returncode == 0, r
        assert o == {"socket": "OK", "allowed": "OK", "dns forwarder": "EPERM",
                     "elsewhere": "EPERM", "other port": "EPERM"}, r
        assert listener.recv(100) == b"DATAGRAM"


def test_bwrap_net_wildcard_rule_does_not_open_the_hosts_loopback(sb):
    if not HAVE["bwrap"] or tools_missing():
        pytest.skip("bwrap, slirp4netns or nft is not installed")
    listener = HostListener()
    try:
        r, o = run_native(sb, base("bwrap") + "net=ALLOW|tcp|*|*|OUT\n", f'''
            def go():
                socket.create_connection(("10.0.2.2", {listener.port}), timeout=3).close()
            py("host loopback", go)
            ''')
        assert r.returncode == 0, r
        assert o["host loopback"] == "ECONNREFUSED", r
        assert listener.received() is None
    finally:
        listener.close()


def in_private_mounts(sb, script, *args):
    """Runs python-sb (as the sandbox's user) after script, as root in a mount
    namespace of the test's own."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1)")
    cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c",
           script + '; exec "$@"', "sh"] + sb.prefix + [sb.binary] + [str(a) for a in args]
    return subprocess.run(cmd, cwd=str(sb.root), capture_output=True, text=True,
                          env=dict(sb.env(), **SANITIZER_ENV), timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("py_sandbox", [False, True])
@pytest.mark.parametrize("w,user", NET_CASES)
def test_net_pinned_names(tmp_path, request, w, user, py_sandbox):
    """A host name of a rule is pinned outside (the host's /etc/hosts, here
    one of the test's mapping it to the host's loopback as the sandbox sees
    it) and listed in the sandbox's /etc/hosts, where both the program's
    resolver and the guard find it; a name no rule pins is not there."""
    sb = net_wrapper_user(request, w, user)
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n10.0.2.2 gateway.sb-test\n10.0.2.2 other.sb-test\n")
    hosts.chmod(0o644)
    listener = HostListener()
    try:
        profile = (base(w, py_sandbox) + f"net=ALLOW|tcp|gateway.sb-test|{listener.port}|OUT\n"
                   + ("python-import=*\npython-api=ALLOW:native\n" if py_sandbox else ""))
        sb.profile(profile)
        # The guard refuses reading /etc/hosts itself (no expose rule).
        s = sb.write("s.py", NATIVE_PRELUDE + textwrap.dedent(f'''
            if not {py_sandbox}:
                print("hosts:", open("/etc/hosts").read().replace("\\n", "|"))
            def go():
                c = socket.create_connection(("gateway.sb-test", {listener.port}), timeout=3)
                c.sendall(b"PINNED")
                c.close()
            py("pinned", go)
            try:
                socket.getaddrinfo("other.sb-test", {listener.port})
                print("other: resolved")
            except socket.gaierror as e:
                print("other: gaierror")
            except OSError as e:
                print("other:", errno.errorcode.get(e.errno, e.errno))
            '''), dedent=False)
        p = in_private_mounts(sb, f"mount --bind {hosts} /etc/hosts", s)
        o = outcomes(p)
        assert p.returncode == 0, p
        if not py_sandbox:
            assert ("10.0.2.2\tgateway.sb-test" in o["hosts"]
                    and "other.sb-test" not in o["hosts"]), p
        assert o["pinned"] == "OK", p
        # Not in the sandbox's /etc/hosts; with the guard, refused before
        # any query (no rule can allow it).
        assert o["other"] == ("ECONNREFUSED" if py_sandbox else "gaierror"), p
        assert listener.received() == b"PINNED"
    finally:
        listener.close()


@pytest.mark.parametrize("w", ["bwrap", "firejail"])
def test_net_that_cannot_be_set_up_never_runs_the_program(request, w):
    """slirp4netns cannot open /dev/net/tun (here /dev/null over it): the
    launching side kills the tool, the program never runs."""
    sb = net_wrapper_user(request, w, "caller")
    marker = sb.path("RAN")
    sb.profile(base(w) + "net=ALLOW|tcp|10.0.2.2|80|OUT\n")
    s = sb.script(f"open({str(marker)!r}, 'w')\n")
    p = in_private_mounts(sb, "mount --bind /dev/null /dev/net/tun", s)
    assert p.returncode == EXIT_CONFIG, p
    assert "slirp4netns could not give the sandbox a network" in p.stderr, p
    assert not marker.exists()


def test_bwrap_net_tools_missing_name_their_package(sb):
    if not HAVE["bwrap"] or tools_missing():
        pytest.skip("bwrap, slirp4netns or nft is not installed")
    marker = sb.path("RAN")
    sb.profile(base("bwrap") + "net=ALLOW|tcp|10.0.2.2|80|OUT\n")
    s = sb.script(f"open({str(marker)!r}, 'w')\n")
    script = "; ".join(f"[ -e {d}/nft ] && mount --bind /dev/null {d}/nft"
                       for d in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin",
                                 "/sbin", "/bin")) + "; true"
    p = in_private_mounts(sb, script, s)
    assert p.returncode == EXIT_CONFIG, p
    assert "nft is not installed (Debian package nftables)" in p.stderr, p
    assert not marker.exists()


@pytest.mark.parametrize("share", ["bwrap.share-net=yes", "bwrap.unshare-net=no"])
def test_bwrap_share_net_gives_the_host_network(sb, tcp, share):
    """The host's network: the allowed port is reached; the kernel filters no
    port (py-sandbox=false), the guard does (py-sandbox=true)."""
    if not HAVE["bwrap"]:
        pytest.skip("bwrap is not installed")
    allowed, other = tcp(), tcp()
    code = f'''
        def connect(port):
            def go():
                c = socket.create_connection(("127.0.0.1", port), timeout=2)
                c.sendall(b"HELLO")
                c.close()
            return go
        py("allowed", connect({allowed.port}))
        py("other", connect({other.port}))
        '''
    rule = f"net=ALLOW|tcp|127.0.0.1|{allowed.port}|OUT\n{share}\n"
    r, o = run_native(sb, base("bwrap") + rule, code)
    assert o == {"allowed": "OK", "other": "OK"}, r
    assert allowed.received() == b"HELLO" and other.received() == b"HELLO"
    r, o = run_native(sb, base("bwrap", True) + rule + "python-import=*\n"
                      "python-api=ALLOW:native\n", code)
    assert o == {"allowed": "OK", "other": "ECONNREFUSED"}, r
    assert allowed.received() == b"HELLO" and other.received() is None


def test_firejail_net_rules_stop_unprivileged(sb_bin, sb, tcp):
    """Unprivileged, firejail's network namespace belongs to root: no filter
    can be loaded, the run stops (as a regular account: firejail refuses
    nobody anyway)."""
    if not HAVE["firejail"]:
        pytest.skip("firejail is not installed")
    base_dir = None
    if os.geteuid() == 0:
        pw = regular_user()
        if pw is None:
            pytest.skip("no ordinary account to run firejail as")
        base_dir, sb = user_sandbox(sb_bin, pw)
    try:
        listener = tcp()
        marker = sb.path("RAN")
        r = sb.run_code(base("firejail") + f"net=ALLOW|tcp|127.0.0.1|{listener.port}|OUT\n",
                        f"open({str(marker)!r}, 'w')\n")
        assert r.returncode == EXIT_CONFIG, r
        assert "python-sb will not run the program on an unfiltered network" in r.stderr, r
        assert "only as root" in r.stderr, r
        assert not marker.exists()
        assert listener.received() is None
    finally:
        if base_dir:
            shutil.rmtree(base_dir, ignore_errors=True)


def test_firejail_bridge_is_refused(sb, tcp):
    """firejail.net=<bridge> (firejail's own bridge and netfilter) is not
    what python-sb does: the run stops, whoever runs it."""
    if not HAVE["firejail"]:
        pytest.skip("firejail is not installed")
    listener = tcp()
    marker = sb.path("RAN")
    r = sb.run_code(base("firejail") + f"net=ALLOW|tcp|127.0.0.1|{listener.port}|OUT\n"
                    "firejail.net=br0\n", f"open({str(marker)!r}, 'w')\n")
    assert r.returncode == EXIT_CONFIG, r
    assert "firejail.net=br0" in r.stderr and "unfiltered network" in r.stderr, r
    assert not marker.exists()


def test_host_unix_sockets_out_of_reach(box, tmp_path):
    """With AF_UNIX sockets allowed (an expose-rw rule and the guard), a named
    socket outside the grants does not exist for native code."""
    w, sb = box
    path = str(tmp_path / "host.sock")
    listener = unix_listener(path)
    try:
        r, o = run_native(sb, profile(w).replace("py-sandbox=false", "py-sandbox=true")
                          + "python-import=*\npython-api=ALLOW:native\n", f'''
            class sockaddr_un(ctypes.Structure):
                _fields_ = [("family", ctypes.c_ushort), ("path", ctypes.c_char * 108)]
            s = socket.socket(socket.AF_UNIX)
            for name, p in [("host socket", {path.encode()!r}),
                            ("dbus", b"/run/dbus/system_bus_socket")]:
                a = sockaddr_un(socket.AF_UNIX, p)
                attempt(name, libc.connect, s.fileno(), ctypes.byref(a), ctypes.sizeof(a))
            ''')
        assert r.returncode == 0, r
        assert o["host socket"] == "ENOENT", r
        assert o["dbus"] in ("ENOENT", "EACCES", "ECONNREFUSED"), r
        assert not accepted(listener)
    finally:
        listener.close()


# --------------------------------------------------------------------------
# Processes, other processes, signals


def test_fork_and_exec_refused(anyuser):
    w, sb = anyuser
    marker = sb.path("rw/CHILD-RAN")
    r, o = run_native(sb, profile(w, "expose-ro=/usr/bin\n"), f'''
        def child_marks(pid):
            if pid == 0:
                open({str(marker)!r}, "w").write("child")
                os._exit(0)
        child_marks(attempt("fork", libc.fork))
        child_marks(attempt("SYS_clone", libc.syscall, 56, 17, 0, 0, 0, 0))
        argv = (ctypes.c_char_p * 4)(b"sh", b"-c", b"echo x > {marker}", None)
        attempt("execve", libc.execve, b"/bin/sh", argv, (ctypes.c_char_p * 1)(None))
        print("PARENT-DONE")
        ''')
    assert r.returncode == 0, r
    assert o == {"fork": "EPERM", "SYS_clone": "EPERM", "execve": "EPERM"}, r
    assert r.stdout.count("PARENT-DONE") == 1
    time.sleep(0.2)
    assert not marker.exists()


def test_process_exec_grant_and_exposed_binary(box):
    """python-api=ALLOW:process-exec lifts seccomp's refusal; the binary
    must still be in the sandbox (expose-ro=/usr/bin), and the child is as
    confined as its parent."""
    w, sb = box
    secret = sb.path("secret.txt")
    marker = sb.path("rw/CHILD-RAN")
    r, o = run_native(sb, profile(w, "python-api=ALLOW:process-exec\n"), f'''
        import subprocess
        py("run sh unexposed", lambda: subprocess.run(["/bin/sh", "-c", "echo x > {marker}"]))
        ''')
    assert r.returncode == 0, r
    assert o["run sh unexposed"] in ("ENOENT", "EACCES"), r
    assert not marker.exists()
    r, o = run_native(sb, profile(w, "python-api=ALLOW:process-exec\nexpose-ro=/usr/bin\n"), f'''
        import subprocess
        print("true:", subprocess.run(["/bin/true"]).returncode)
        subprocess.run(["/bin/sh", "-c", "echo child > {marker}"], check=True)
        p = subprocess.run(["/bin/cat", {str(secret)!r}], capture_output=True, text=True)
        print("cat rc:", p.returncode)
        ''')
    assert r.returncode == 0, r
    assert "true: 0" in r.stdout and "cat rc: 1" in r.stdout, r
    assert marker.read_text() == "child\n"
    assert SECRET not in r.stdout


def test_ptrace_and_signals_do_not_reach_outside(anyuser, victim):
    w, sb = anyuser
    v = victim(sb)
    r, o = run_native(sb, profile(w), f'''
        v = {v.pid}
        attempt("ptrace attach", libc.ptrace, 16, v, None, None)
        attempt("kill victim", libc.kill, v, 9)
        attempt("tgkill victim", libc.syscall, 234, v, v, 9)
        attempt("pidfd_open victim", libc.syscall, 434, v, 0)
        attempt("kill own", libc.kill, os.getpid(), 0)
        ''')
    assert r.returncode == 0, r
    assert o["ptrace attach"] == "EPERM", r
    # seccomp: pid-taking calls on this process only.
    assert o["kill victim"] == o["tgkill victim"] == o["pidfd_open victim"] == "EPERM", r
    assert o["kill own"] == "OK", r
    # With process grants seccomp lets signals to other pids through: the
    # victim's PID does not exist in the sandbox's PID namespace.
    r, o = run_native(sb, profile(w, "python-api=ALLOW:process-exec\n"), f'''
        v = {v.pid}
        attempt("ptrace attach", libc.ptrace, 16, v, None, None)
        attempt("kill victim", libc.kill, v, 9)
        attempt("tgkill victim", libc.syscall, 234, v, v, 9)
        attempt("pidfd_open victim", libc.syscall, 434, v, 0)
        ''')
    assert r.returncode == 0, r
    assert o["ptrace attach"] == "EPERM", r
    assert o["kill victim"] == o["tgkill victim"] == o["pidfd_open victim"] == "ESRCH", r
    time.sleep(0.1)
    assert v.poll() is None, "the victim was killed from inside the sandbox"
    assert tracer_pid(v.pid) == 0


def test_kernel_attack_surface_refused(box):
    """Refused by python-sb's own filter whatever the tool (firejail's filter
    sits under it)."""
    w, sb = box
    calls = {"io_uring_setup": 425, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
             "keyctl": 250, "mount": 165, "umount2": 166, "unshare": 272, "setns": 308,
             "chroot": 161, "pivot_root": 155, "fsopen": 430, "open_tree": 428, "shmget": 29,
             "msgget": 68, "semget": 64, "mq_open": 240, "init_module": 175, "syslog": 103}
    body = "".join(f'attempt({n!r}, libc.syscall, {nr}, 0, 0, 0, 0, 0)\n'
                   for n, nr in calls.items())
    body += textwrap.dedent('''
        attempt("newuser", libc.syscall, 56, 0x10000000 | 17, 0, 0, 0, 0)
        c = ctypes.c_char(b"x")
        attempt("TIOCSTI", libc.ioctl, 0, 0x5412, ctypes.byref(c))
        print("filters:", [l.split()[1] for l in open("/proc/self/status")
                           if l.startswith("Seccomp_filters:")][0])
        ''')
    r, o = run_native(sb, profile(w, "python-api=ALLOW:process-exec\n"), body, input="")
    assert r.returncode == 0, r
    assert {n: o[n] for n in calls} == {n: "EPERM" for n in calls}, r
    assert o["newuser"] == o["TIOCSTI"] == "EPERM", r
    # python-sb's filter, on top of firejail's own.
    assert int(o["filters"]) >= (2 if w == "firejail" else 1), r


# --------------------------------------------------------------------------
# Environment and limits


def test_host_environment_never_reaches_the_program(anyuser):
    """Neither os.environ nor /proc/self/environ (the tool is started with no
    environment; the inner python-sb reads it from the sealed record)."""
    w, sb = anyuser
    r, o = run_native(sb, profile(w, "env=KEPT=${KEPT}\n"), '''
        print("environ:", dict(os.environ))
        print("proc:", open("/proc/self/environ", "rb").read())
        ''', env={"PYSB_HIDDEN": "HIDDEN-VALUE-77", "KEPT": "kept-value"})
    assert r.returncode == 0, r
    assert "HIDDEN-VALUE-77" not in r.stdout + r.stderr, r
    assert "'KEPT': 'kept-value'" in r.stdout, r


def test_limits_apply_inside(box):
    w, sb = box
    r = sb.run_code(profile(w, "limit-open-files=40\n"), '''
        import errno, os, resource
        print(resource.getrlimit(resource.RLIMIT_NOFILE))
        fds = []
        try:
            while True:
                fds.append(os.open("ro/existing.txt", os.O_RDONLY))
        except OSError as e:
            print("stopped", errno.errorcode[e.errno], len(fds) < 40)
        ''')
    assert r.returncode == 0, r
    assert "(40, 40)" in r.stdout and "stopped EMFILE True" in r.stdout, r


def test_timeout_kills_the_program(anyuser):
    w, sb = anyuser
    t0 = time.monotonic()
    r, _ = run_native(sb, profile(w, "timeout=1s\n"), "while True: pass\n")
    elapsed = time.monotonic() - t0
    assert r.returncode == EXIT_TIMEOUT, r
    assert "python-sb: timeout=1s expired" in r.stderr
    assert elapsed < 8, elapsed


@not_under_asan
def test_firejail_template_limits_and_their_override(sb):
    """The template's rlimits apply (spec section 8), and a profile overrides
    one by name or by its limit-* key."""
    if not HAVE["firejail"]:
        pytest.skip("firejail is not installed")
    code = 'import resource\nprint(resource.getrlimit(resource.RLIMIT_AS)[0])\n'
    r = sb.run_code(base("firejail"), code)
    assert (r.returncode, r.stdout) == (0, f"{300 << 20}\n"), r
    r = sb.run_code(base("firejail") + "firejail.rlimit-as=600m\n", code)
    assert (r.returncode, r.stdout) == (0, f"{600 << 20}\n"), r
    # The profile's limit-memory is the template's rlimit-as too (not cut to
    # 300m); a firejail.rlimit-as line still wins.
    r = sb.run_code(base("firejail") + "limit-memory=1GB\n", code)
    assert (r.returncode, r.stdout) == (0, "1000000000\n"), r
    r = sb.run_code(base("firejail") + "limit-memory=1GB\nfirejail.rlimit-as=200m\n", code)
    assert (r.returncode, r.stdout) == (0, f"{200 << 20}\n"), r


# --------------------------------------------------------------------------
# ignore= (spec section 8): bwrap masks, firejail makes the path vanish


def ignore_tree(sb):
    sb.write("ro/a.key", SECRET)
    sb.write("ro/sub/b.key", SECRET)
    sb.write("ro/keys.d/c.txt", SECRET)
    sb.write("ro/plain.txt", "plain")
    sb.write("rw/d.key", SECRET)


IGNORE_CODE = '''
for p in ["ro/a.key", "ro/sub/b.key", "ro/keys.d/c.txt", "rw/d.key", "ro/plain.txt"]:
    try:
        print(f"{p} read: {open(p).read()!r}")
    except OSError as e:
        print(f"{p} refused: {errno.errorcode[e.errno]}")
for d in ["ro", "ro/sub", "ro/keys.d", "rw"]:
    try:
        print(f"{d} lists: {sorted(os.listdir(d))}")
    except OSError as e:
        print(f"{d} refused: {errno.errorcode[e.errno]}")
'''


@pytest.mark.parametrize("wrapper", [wrapper_param("bwrap")], indirect=True)
def test_bwrap_ignore_masks(anyuser):
    w, sb = anyuser
    ignore_tree(sb)
    r, o = run_native(sb, profile(w, "ignore=*.key\nignore=keys.d\n"), IGNORE_CODE)
    assert r.returncode == 0, r
    # Reads succeed and return nothing; the names stay.
    assert o["ro/a.key read"] == o["ro/sub/b.key read"] == o["rw/d.key read"] == "''", r
    assert o["ro/keys.d/c.txt refused"] == "ENOENT", r
    assert o["ro/keys.d lists"] == "[]", r
    assert o["ro/plain.txt read"] == "'plain'", r
    assert SECRET not in r.stdout
    # The files themselves are untouched.
    assert sb.path("rw/d.key").read_text() == SECRET


@pytest.mark.parametrize("wrapper", [wrapper_param("firejail")], indirect=True)
def test_firejail_ignore_vanishes(anyuser):
    w, sb = anyuser
    ignore_tree(sb)
    r, o = run_native(sb, profile(w, "ignore=*.key\nignore=keys.d\n"), IGNORE_CODE)
    assert r.returncode == 0, r
    # Under expose-ro: gone, names and all. A directory that held hidden
    # entries only is gone too (its rebuilt copy would have nothing in it
    # for firejail to whitelist).
    assert o["ro/a.key refused"] == o["ro/sub/b.key refused"] == "ENOENT", r
    assert o["ro/keys.d/c.txt refused"] == "ENOENT", r
    assert o["ro lists"] == "['existing.txt', 'plain.txt']", r
    assert o["ro/sub refused"] == "ENOENT", r
    assert o["ro/plain.txt read"] == "'plain'", r
    # Under expose-rw: firejail's blacklist (rebuilding a writable directory
    # would lose what the program writes there).
    if unprivileged(sb):
        assert o["rw/d.key refused"] == "EACCES", r
    else:
        assert o.get("rw/d.key read") == "''" or o.get("rw/d.key refused") == "EACCES", r
    assert SECRET not in r.stdout
    assert sb.path("rw/d.key").read_text() == SECRET


def test_ignore_with_the_guard_is_the_guards_refusal(box):
    w, sb = box
    ignore_tree(sb)
    r = sb.run_code(profile(w).replace("py-sandbox=false", "py-sandbox=true")
                    + "ignore=*.key\npython-import=*\n", '''
        try:
            open("ro/a.key").read()
        except OSError as e:
            print(type(e).__name__)
        ''')
    assert (r.returncode, r.stdout) == (0, "RuleFileNotFoundError\n"), r


# --------------------------------------------------------------------------
# <provider>.<key>: pass-through and its errors


@pytest.mark.parametrize("w,key", [("bwrap", "bwrap.hostname=sbhost"),
                                   ("firejail", "firejail.hostname=sbhost")])
def test_pass_through_reaches_the_tool(sb, w, key):
    """bwrap: --hostname sbhost (bwrap takes the value as its own word);
    firejail: the template's --hostname replaced."""
    if not HAVE[w]:
        pytest.skip(f"{w} is not installed")
    r = sb.run_code(base(w) + key + "\n", "import socket\nprint(socket.gethostname())\n")
    assert (r.returncode, r.stdout) == (0, "sbhost\n"), r
    line = command_line(sb.run("--explain", sb.path("s.py")))
    if w == "bwrap":
        assert " --hostname sbhost " in line, line
    else:
        assert " --hostname=sbhost " in line and "firejail-sandbox" not in line, line


def test_firejail_unknown_key_is_passed_as_an_option(sb):
    if not HAVE["firejail"]:
        pytest.skip("firejail is not installed")
    r = sb.run_code(base("firejail") + "firejail.nodbus=\nfirejail.nice=2\n", "print('RAN')\n")
    assert (r.returncode, r.stdout) == (0, "RAN\n"), r
    line = command_line(sb.run("--explain", sb.path("s.py")))
    assert " --nodbus " in line and " --nice=2 " in line and "--nice=5" not in line, line


@pytest.mark.parametrize("w", WRAPPERS)
def test_option_the_tool_refuses_fails_closed(sb, w):
    marker = sb.path("RAN")
    r = sb.run_code(base(w) + f"{w}.no-such-option-sb=1\n", f"open({str(marker)!r}, 'w')\n")
    assert r.returncode == EXIT_CONFIG, r
    assert f"python-sb: the sandbox cannot be applied: {w} could not start the program" \
        in r.stderr, r
    assert not marker.exists()


@pytest.mark.parametrize("w", ["bwrap", "firejail"])
def test_bad_parameter_names_are_profile_errors(sb, w):
    r = sb.run_code(base(w) + f"{w}.--x=1\n", "print('RAN')\n")
    assert r.returncode == EXIT_CONFIG, r
    assert any(f"Invalid {w} parameter '--x'" in e for e in r.errors), r
    assert "RAN" not in r.stdout


# --------------------------------------------------------------------------
# --explain, exit statuses, signals, the inner option


def command_line(r):
    lines = r.stdout.splitlines()
    i = lines.index("#   command line (descriptors as they would be now):")
    return lines[i + 1]


def test_explain_shows_the_command_line(box):
    w, sb = box
    sb.profile(profile(w, "ignore=*.key\n"))
    sb.write("ro/a.key", SECRET)
    r = sb.run("--explain", "-c", "pass")
    assert r.returncode == 0, r
    line = command_line(r)
    assert line.startswith(f"#     {shutil.which(w)} "), line
    assert f"{sb.binary} --pysandboxes-inside=" in line and line.endswith(" -c pass"), line
    assert "--explain" not in line
    ro, rw, key = sb.path("ro"), sb.path("rw"), sb.path("ro/a.key")
    if w == "bwrap":
        assert f"--ro-bind {ro} {ro}" in line and f"--bind {rw} {rw}" in line, line
        assert f"--dev-bind /dev/null {key}" in line and " --unshare-net " in line, line
    else:
        assert f"--read-only={ro}" in line and f"--whitelist={rw}" in line, line
        assert f"--whitelist={ro}/existing.txt" in line and str(key) not in line, line
        assert "--net=none" in line and "--keep-fd=" in line, line
    assert "# Kernel boundary" in r.stdout and "seccomp:" in r.stdout


@pytest.mark.parametrize("w", WRAPPERS)
def test_exit_statuses_are_pythons(sb, w):
    sb.profile(base(w) + "python-import=os,sys\npython-api=ALLOW:os.kill,posix.kill\n")
    for code, want in [("import sys; sys.exit(137)", 137), ("import sys; sys.exit(3)", 3),
                       ("import os; os.kill(os.getpid(), 9)", -9),
                       ("import os; os.kill(os.getpid(), 15)", -15),
                       ("raise SystemExit('bye')", 1)]:
        r = sb.run("-c", code)
        assert r.returncode == want, (code, r)


@pytest.mark.parametrize("w", WRAPPERS)
def test_ctrl_c_reaches_the_program(sb, w):
    """A terminal's SIGINT goes to the whole process group: the launching
    python-sb and the tool leave it to the program (KeyboardInterrupt)."""
    sb.profile(base(w) + "python-import=*\n")
    s = sb.script('''
        import sys, time
        print("READY", flush=True)
        try:
            time.sleep(20)
        except KeyboardInterrupt:
            print("CAUGHT", flush=True)
            sys.exit(5)
        ''')
    proc = subprocess.Popen([sb.binary, str(s)], cwd=str(sb.root), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=dict(sb.env(), **SANITIZER_ENV), stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout.readline() == "READY\n"
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert (proc.returncode, out) == (5, "CAUGHT\n"), err


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
@pytest.mark.parametrize("w", WRAPPERS)
def test_launching_side_killed_ends_the_sandbox(sb, w, sig):
    """SIGTERM is passed to the tool, which ends the sandbox, and python-sb
    dies of it as python would. SIGKILL leaves python-sb no chance to stop
    the tool: the sandbox ends anyway (bwrap --die-with-parent; for firejail,
    the inner python-sb's lifeline, wrap.c)."""
    marker = sb.path("rw/LATE")
    sb.mkdir("rw")
    sb.profile(base(w) + "expose-rw=./rw\n")
    s = sb.script(f'''
        import time
        print("READY", flush=True)
        time.sleep(2)
        open({str(marker)!r}, "w")
        ''')
    proc = subprocess.Popen([sb.binary, str(s)], cwd=str(sb.root), stdout=subprocess.PIPE,
                            text=True, env=dict(sb.env(), **SANITIZER_ENV),
                            stdin=subprocess.DEVNULL)
    assert proc.stdout.readline() == "READY\n"
    proc.send_signal(sig)
    assert proc.wait(timeout=TIMEOUT) == -sig
    time.sleep(2.5)
    assert not marker.exists(), "the program outlived python-sb"


def test_inside_option_needs_the_record(sb):
    sb.profile("os-sandbox=none\n")
    for fd in ("0", "99", "x"):
        r = sb.run(f"--pysandboxes-inside={fd}", "-c", "print('RAN')")
        assert r.returncode == EXIT_CONFIG, r
        assert "RAN" not in r.stdout
        assert "python-sb: cannot start inside the sandbox" in r.stderr, r


@pytest.mark.parametrize("w", WRAPPERS)
def test_rule_files_and_includes_are_read_again_inside(sb, tmp_path, w):
    """The inner python-sb reads the same rules: an include from another
    directory (bound for it) still applies."""
    inc = tmp_path / "elsewhere" / "inc.profile"
    inc.parent.mkdir()
    inc.write_text("python-import=json,os\nenv=FROM_INCLUDE=yes\n")
    sb.profile(base(w, True) + f'include "{inc}"\n')
    r = sb.run("-c", "import os, json\nprint(os.environ.get('FROM_INCLUDE'))\n"
                     "import colorsys\n")
    assert r.returncode == 1, r
    assert r.stdout == "yes\n", r
    assert "'colorsys' is not allowed by a rule" in r.stderr, r


@pytest.mark.parametrize("w", WRAPPERS)
def test_learning_runs_under_subprocess(sb, w):
    learned = sb.path("learned.py-sandboxes")
    sb.profile(f"os-sandbox={w}\n")
    r = sb.run(f"--learn={learned}", "-c", "import json")
    assert r.returncode == 0, r
    assert "os-sandbox=subprocess is forced" in r.stderr, r
    assert f"os-sandbox={w} does not apply while learning" in r.stderr, r


def test_firejail_refuses_nobody(sb_nobody):
    """firejail never lets the user nobody start a sandbox (firejail-users(5)):
    python-sb says so and runs nothing."""
    if not HAVE["firejail"]:
        pytest.skip("firejail is not installed")
    if os.geteuid() != 0:
        pytest.skip("runs as nobody only when the suite runs as root")
    marker = sb_nobody.path("RAN")
    r = sb_nobody.run_code("os-sandbox=firejail\npython-import=*\n",
                           f"open({str(marker)!r}, 'w')\n")
    assert r.returncode == EXIT_CONFIG, r
    assert "firejail never lets the user nobody start a sandbox" in r.stderr, r
    assert "will not fall back" in r.stderr
    assert not marker.exists()


@pytest.mark.parametrize("w", WRAPPERS)
def test_repl_banner_names_the_provider(sb, w):
    if not shutil.which("script"):
        pytest.skip("script(1) is needed for a terminal")
    rules = sb.profile(base(w, True))
    proc = subprocess.run(["script", "-qec", sb.binary, "/dev/null"], cwd=sb.root,
                          env=dict(sb.env(), **SANITIZER_ENV), input="print(6*7)\nexit()\n",
                          capture_output=True, text=True, timeout=TIMEOUT)
    out = proc.stdout.replace("\r\n", "\n")
    assert (f"APIs are LIMITED according to the rules in '{rules}' and by the "
            f"os-sandbox={w}\n") in out, proc
    assert "42" in out


def test_partial_mode_worker_under_the_tool(anyuser, pysandboxes_dir):
    """An @sandbox function runs in a worker started under the tool, as the
    caller and unprivileged: its guard refuses, and its kernel hides the
    host's files from native code too."""
    from test_partial import MODULE, Partial, main
    w, sb = anyuser
    partial = Partial(sb, pysandboxes_dir)
    partial.write("mod.py", MODULE + textwrap.dedent('''
        @sandbox
        def native_read(path):
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            return libc.open(path.encode(), 0), ctypes.get_errno()
        '''))
    r = partial.run(main('''
        print("uid", os.getuid() == 0, "result", inc(41))
        try:
            read("/etc/hostname")
        except FileNotFoundError as e:
            print("denied", bool(sandbox_denials(e)))
        print("native", native_read("/etc/hostname"))
        ''', w), profile="python-import=*\npython-api=ALLOW:native\n")
    assert r.returncode == 0, r.stderr
    assert "result 42" in r.stdout and "denied True" in r.stdout, r.stdout
    assert f"uid {not unprivileged(sb)}" in r.stdout, r.stdout
    assert f"native (-1, {errno.ENOENT})" in r.stdout, r.stdout


def test_firejail_never_reads_the_users_config(box):
    """firejail's lists start with `include <name>.local`, which firejail
    looks up in the caller's ~/.config/firejail first: a whitelist or
    read-write line there (the user's, or planted by a program that could
    write to $HOME on an earlier run) would weaken the sandbox. python-sb
    hands firejail the lists without those lines."""
    w, sb = box
    if w != "firejail":
        pytest.skip("firejail only")
    config = Path(pwd.getpwuid(os.geteuid()).pw_dir) / ".config" / "firejail"
    local = config / "disable-common.local"
    if local.exists():
        pytest.skip(f"{local} exists: not overwriting the user's own")
    secret = sb.path("secret.txt")
    created = [p for p in (config.parent, config) if not p.exists()]
    config.mkdir(parents=True, exist_ok=True)
    local.write_text(f"whitelist {secret}\nnoblacklist {secret}\n"
                     f"read-write {sb.path('ro')}\n")
    try:
        # Control: firejail by hand with the same list reads the file.
        proc = subprocess.run(["firejail", "--noprofile",
                               "--include=/etc/firejail/disable-common.inc", "--", "true"],
                              capture_output=True, text=True, timeout=TIMEOUT)
        assert f"Reading profile {local}" in proc.stdout + proc.stderr, proc
        r, o = run_native(sb, profile(w), f'''
            attempt("read secret", libc.open, {str(secret).encode()!r}, os.O_RDONLY)
            attempt("write ro", libc.open, {str(sb.path("ro/existing.txt")).encode()!r},
                    os.O_WRONLY)
            ''')
    finally:
        local.unlink()
        for p in reversed(created):
            p.rmdir()
    assert r.returncode == 0, r
    assert o["read secret"] == "ENOENT", r
    assert o["write ro"] in ("EROFS", "EACCES"), r
    assert sb.path("ro/existing.txt").read_text() == ORIGINAL


def test_a_relative_rule_file_is_in_the_sandbox(box):
    """--pysandboxes-config FILE, relative to the working directory: the
    inner python-sb reads the same file."""
    w, sb = box
    sb.write("rules.conf", base(w, True) + "python-import=os\n")
    r = sb.run("--pysandboxes-config", "rules.conf", "-c", "import os; print('inside')")
    assert (r.returncode, r.stdout) == (0, "inside\n"), r


def test_report_under_the_tool(box):
    """--report=FILE in a directory the sandbox does not show: the launching
    python-sb opens it, the inner one writes it."""
    import json
    w, sb = box
    report = sb.path("report.json")
    sb.profile(base(w, True) + "python-import=sys\n")
    s = sb.write("s.py", "import sys\nprint('out')\nsys.exit(3)\n")
    r = sb.run(f"--report={report}", s)
    assert (r.returncode, r.stdout) == (3, "out\n"), r
    rep = json.loads(report.read_text())
    assert rep["exit_code"] == 3 and rep["provider"] == w, rep
    assert rep["output"]["stdout_bytes"] == 4, rep


def test_the_program_cannot_report_its_status(box):
    """Under a supervisor (timeout=) the program's process does not hold the
    pipe on which the inner python-sb reports the exit status: writing
    "exit=0" on every descriptor does not turn a timeout into a success."""
    w, sb = box
    r, o = run_native(sb, profile(w, "timeout=2s\n"), '''
        written = []
        for fd in range(3, 256):
            try:
                os.write(fd, b"exit=0\\n")
                written.append(fd)
            except OSError:
                pass
        print("written:", written, flush=True)
        import time
        time.sleep(60)
        ''')
    assert r.returncode == EXIT_TIMEOUT, r
    assert "timeout=2s expired" in r.stderr, r


def test_rule_files_in_a_writable_grant(box):
    """The tools mount each existing rule file read-only over the writable
    grant: the program cannot change it. A rule file python-sb would read
    once it exists (a missing include, the .py-sandboxes the lookup would
    prefer) cannot be mounted over: refused before anything runs, as under
    Landlock."""
    w, sb = box
    p = sb.profile(base(w) + "expose-rw=.\n")
    before = p.read_text()
    r, o = run_native(sb, before, '''
        attempt("append", libc.open, b".py-sandboxes", os.O_WRONLY | os.O_APPEND)
        attempt("rename", libc.rename, b".py-sandboxes", b"moved")
        attempt("unlink", libc.unlink, b".py-sandboxes")
        attempt("create", libc.open, b"made.txt", os.O_WRONLY | os.O_CREAT, 0o644)
        ''')
    assert r.returncode == 0, r
    assert o["append"] in ("EROFS", "EACCES", "EPERM"), r
    assert o["rename"] in ("EBUSY", "EROFS", "EACCES", "EPERM"), r
    assert o["unlink"] in ("EBUSY", "EROFS", "EACCES", "EPERM"), r
    assert o["create"] == "OK", r
    assert p.read_text() == before
    sb.mkdir("app")
    sb.write("app/s.py", "print('PROGRAM-RAN')\n")
    sb.profile(base(w) + "expose-rw=./app\n")
    r = sb.run("app/s.py")
    assert r.returncode == EXIT_CONFIG and "PROGRAM-RAN" not in r.stdout, r
    assert (f"lets the program create the rule file {os.path.realpath(sb.path('app'))}"
            "/.py-sandboxes" in r.stderr), r
    assert "a missing file cannot be mounted over read-only" in r.stderr, r
    sb.profile(base(w) + 'expose-rw=./app\ninclude "./app/later.inc"\n')
    r = sb.run("-c", "print('PROGRAM-RAN')")
    assert r.returncode == EXIT_CONFIG and "PROGRAM-RAN" not in r.stdout, r
    assert "later.inc" in r.stderr, r


def test_tool_planted_on_path_by_the_program_never_runs(anyuser):
    """The caller's PATH holds a directory the profile exposes read-write (a
    ~/bin in an exposed home): the program puts a `bwrap` or `firejail` there
    on one run, which the next run would execute outside the sandbox, as the
    caller, before any boundary. python-sb refuses a tool found inside an
    expose-rw tree instead, naming the rule, and the planted one never runs."""
    w, sb = anyuser
    bindir = sb.mkdir("rw/bin")
    marker = sb.path("ESCAPED")
    plant = sb.write("plant.py", f'''
        import os
        p = "{bindir}/{w}"
        with open(p, "w") as f:
            f.write("#!/bin/sh\\necho ran > {marker}\\nexec /usr/bin/{w} \\"$@\\"\\n")
        os.chmod(p, 0o755)
        print("planted")
        ''')
    sb.profile(profile(w) + "python-import=os\n")
    path = f"{bindir}:/usr/bin:/bin"
    r = sb.run(plant, env={"PATH": path})
    assert r.returncode == 0 and "planted" in r.stdout, r
    assert os.access(bindir / w, os.X_OK)
    r = sb.run("-c", "print('RAN')", env={"PATH": path})
    assert r.returncode == EXIT_CONFIG, r
    assert f"{w} was found on PATH at {bindir}/{w}, inside expose-rw=./rw" in r.stderr, r
    assert "RAN" not in r.stdout
    assert not marker.exists()


@pytest.mark.skipif(not HAVE["firejail"], reason="firejail is not installed")
def test_firejail_runs_a_profile_of_many_grants(sb):
    """firejail refuses a command line of 128 words or more ("too many
    arguments"), which its file system options alone passed with a few dozen
    grants (each expose-ro a whitelist and a read-only option, each entry of
    / and /usr without one a blacklist): such a profile never ran. The options
    reach it as lines of its --include file, and they are still enforced."""
    rules = []
    for i in range(40):
        sb.write(f"d{i}/f.txt", f"content {i}\n")
        rules.append(f"expose-ro=./d{i}")
    sb.mkdir("rw")
    sb.write("secret.txt", SECRET + "\n")
    r = sb.run_code(base("firejail") + "\n".join(rules) + "\nexpose-rw=./rw\npython-import=*\n", '''
        import errno, os
        print("read", open("d39/f.txt").read().strip())
        open("rw/out.txt", "w").write("ok")
        for name, fn in [("write ro", lambda: open("d0/new.txt", "w")),
                         ("secret", lambda: open("secret.txt"))]:
            try:
                fn()
                print(name, "OK")
            except OSError as e:
                print(name, errno.errorcode[e.errno])
        ''')
    assert r.returncode == 0, r
    assert "read content 39" in r.stdout, r
    assert "write ro EROFS" in r.stdout, r
    assert "secret ENOENT" in r.stdout, r
    assert SECRET not in r.stdout
    assert sb.path("rw/out.txt").read_text() == "ok"
    assert not sb.path("d0/new.txt").exists()


def test_kernel_settings_out_of_reach(anyuser):
    """/proc/sys holds the kernel's settings, global whatever the namespaces,
    and uid 0 writes one with no capability (kernel.core_pattern names a
    program the host's kernel runs as root on the next crash). bwrap 0.8
    started by root left /proc/sys writable: a program of a root-started
    sandbox changed vm.swappiness on the host. Read-only in the sandbox now
    (EROFS), and nobody's is refused anyway."""
    w, sb = anyuser
    knob = "/proc/sys/vm/swappiness"
    before = Path(knob).read_text()
    other = str((int(before) + 1) % 100).encode()
    r, o = run_native(sb, profile(w), f'''
        fd = attempt("open sysctl", libc.open, {knob.encode()!r}, os.O_WRONLY)
        if fd >= 0:
            print("wrote", os.write(fd, {other!r}))
        attempt("open core_pattern", libc.open, b"/proc/sys/kernel/core_pattern", os.O_WRONLY)
        ''')
    after = Path(knob).read_text()
    if after != before:
        Path(knob).write_text(before)
    assert r.returncode == 0, r
    assert after == before, r
    assert o["open sysctl"] in ("EROFS", "EACCES", "ENOENT"), r
    assert o["open core_pattern"] in ("EROFS", "EACCES", "ENOENT"), r
    if not unprivileged(sb):
        assert o["open sysctl"] == "EROFS", r


@pytest.mark.skipif(not HAVE["firejail"], reason="firejail is not installed")
def test_firejail_state_of_the_host_out_of_reach(sb):
    """/run/firejail holds the lock every firejail start on the host takes,
    and the other sandboxes' files. A program of a root-started sandbox
    locked it: no firejail sandbox could start on the host while it ran
    (a python-sb run there waited for it). Only the sandbox's own mnt and
    firejail's helpers stay; the lock's name leads to firejail's empty
    placeholder, which nobody else locks."""
    lock = "/run/firejail/firejail-run.lock"
    r = sb.run_code(base("firejail") + "python-import=*\n", f'''
        import errno, fcntl, os
        try:
            fd = os.open({lock!r}, os.O_RDONLY)
            st = os.fstat(fd)
            print("opened", st.st_dev, st.st_ino)
        except OSError as e:
            print("refused", errno.errorcode[e.errno])
        for d in ("profile", "sandbox", "name"):
            try:
                print(d, os.listdir("/run/firejail/" + d))
            except OSError as e:
                print(d, errno.errorcode[e.errno])
        ''')
    assert r.returncode == 0, r
    if os.path.exists(lock):
        host = os.stat(lock)
        assert f"opened {host.st_dev} {host.st_ino}" not in r.stdout, r
    for d in ("profile", "sandbox", "name"):
        assert re.search(rf"^{d} (\[\]|EACCES|ENOENT)$", r.stdout, re.M), r
