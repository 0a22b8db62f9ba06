# SPDX-License-Identifier: MIT
"""The kernel boundary of the providers that confine files (os-sandbox=landlock
and os-sandbox=unshare), tested with py-sandbox=false: the Python guard is off,
so whatever is refused here is refused by the kernel (Landlock or the
namespaces and the new root, and seccomp), against native code (ctypes calling
libc, raw syscalls). Every test runs under each provider; where the kernel
answers differently (Landlock refuses a path with EACCES, under unshare a path
outside the new root does not exist, ENOENT, and an expose-ro tree is a
read-only mount, EROFS) the expectation says so per provider. Every refusal is
checked twice: the errno the program saw, and the absence of the effect (no
secret in the output, no file created or changed, no marker from a child, no
connection on a listener the test owns, a victim process still alive and
untraced)."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import (EXIT_CONFIG, EXIT_TIMEOUT, HANG_BOUND, needs_landlock, needs_userns, not_under_asan,
                      run_native)

SECRET = "TOP-SECRET-5f3a9c"
ORIGINAL = "ORIGINAL-ro-content\n"

PROVIDERS = [pytest.param("landlock", marks=needs_landlock),
             pytest.param("unshare", marks=needs_userns)]


def base(sb):
    return f"os-sandbox={sb.kernel}\npy-sandbox=false\n"


def profile(sb):
    """./ro exposed read-only, ./rw writable, under the sandbox's provider."""
    return base(sb) + "expose-ro=./ro\nexpose-rw=./rw\n"


def by(sb, landlock, unshare):
    """The provider's answer where the two kernels differ."""
    return landlock if sb.kernel == "landlock" else unshare


@pytest.fixture(params=PROVIDERS)
def provider(request):
    return request.param


@pytest.fixture
def box(sb, provider):
    """sb with ./ro (expose-ro, holding existing.txt), ./rw (expose-rw) and a
    secret file next to the script, outside every grant."""
    sb.kernel = provider
    sb.write("ro/existing.txt", ORIGINAL)
    sb.mkdir("rw")
    secret = sb.write("secret.txt", SECRET + "\n")
    os.chmod(secret, 0o644)
    return sb


@pytest.fixture(params=["caller", "nobody"])
def anyuser(request, provider):
    """The same test as the caller (root in CI) and as an unprivileged user:
    Landlock, the namespaces and seccomp do not exempt root."""
    sb = request.getfixturevalue("sb" if request.param == "caller" else "sb_nobody")
    sb.kernel = provider
    sb.write("ro/existing.txt", ORIGINAL)
    sb.mkdir("rw")
    secret = sb.write("secret.txt", SECRET + "\n")
    os.chmod(secret, 0o644)  # readable by anyone: only the sandbox can refuse
    return sb


class TcpListener:
    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.3)
        self.port = self.sock.getsockname()[1]

    def received(self):
        """The bytes of the first pending connection, or None without one."""
        try:
            conn, _ = self.sock.accept()
        except socket.timeout:
            return None
        with conn:
            conn.settimeout(1)
            try:
                return conn.recv(100)
            except socket.timeout:
                return b""

    def close(self):
        self.sock.close()


@pytest.fixture
def tcp():
    made = []

    def make():
        made.append(TcpListener())
        return made[-1]
    yield make
    for listener in made:
        listener.close()


def unix_listener(path_or_name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path_or_name)
    s.listen(8)
    s.settimeout(0.3)
    return s


def accepted(listener):
    try:
        conn, _ = listener.accept()
    except socket.timeout:
        return False
    conn.close()
    return True


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def victim(request):
    """A `sleep 30` of the test's own (as the same user as the sandbox when
    that is nobody): signals and ptrace aimed at it must fail."""
    procs = []

    def start(sb):
        p = subprocess.Popen(sb.prefix + ["sleep", "30"])
        procs.append(p)
        # Wait until setpriv has exec'd sleep (same uid as the sandbox).
        for _ in range(100):
            try:
                with open(f"/proc/{p.pid}/comm") as f:
                    if f.read().strip() == "sleep":
                        break
            except FileNotFoundError:
                pass
            time.sleep(0.01)
        return p
    yield start
    for p in procs:
        p.kill()
        p.wait()


def tracer_pid(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    raise AssertionError("no TracerPid")


# --------------------------------------------------------------------------
# Reading outside the grants


def test_libc_open_outside_grants_refused(anyuser):
    sb = anyuser
    secret = sb.path("secret.txt")
    r, o = run_native(sb, profile(sb), f'''
        fd = attempt("open", libc.open, {str(secret).encode()!r}, os.O_RDONLY)
        if fd >= 0:
            print(os.read(fd, 100))
        ''')
    assert r.returncode == 0, r
    # unshare: the path is not in the new root at all.
    assert o["open"] == by(sb, "EACCES", "ENOENT"), r
    assert SECRET not in r.stdout + r.stderr


def test_openat_and_raw_syscall_outside_grants_refused(box):
    secret = str(box.path("secret.txt")).encode()
    r, o = run_native(box, profile(box), f'''
        AT_FDCWD = -100
        for name, fd in [
            ("openat", attempt("openat", libc.openat, AT_FDCWD, {secret!r}, os.O_RDONLY)),
            ("SYS_openat", attempt("SYS_openat", libc.syscall, 257, AT_FDCWD, {secret!r},
                                   os.O_RDONLY, 0)),
            ("SYS_open", attempt("SYS_open", libc.syscall, 2, {secret!r}, os.O_RDONLY, 0)),
            ("SYS_openat2", attempt("SYS_openat2", libc.syscall, 437, AT_FDCWD, {secret!r},
                                    (ctypes.c_uint64 * 3)(os.O_RDONLY, 0, 0), 24)),
        ]:
            if fd >= 0:
                print(os.read(fd, 100))
        py("python open", lambda: open({secret.decode()!r}).read())
        ''')
    assert r.returncode == 0, r
    e = by(box, "EACCES", "ENOENT")
    assert o == {"openat": e, "SYS_openat": e, "SYS_open": e, "SYS_openat2": e,
                 "python open": e}, r
    assert SECRET not in r.stdout + r.stderr


def test_paths_that_lead_outside_refused(box):
    """A symlink inside a grant, /proc/self/root, .. from a granted directory:
    Landlock judges the file reached, not the path spelled; under unshare
    none of them reaches a file of the host that the root does not hold."""
    secret = box.path("secret.txt")
    os.symlink(secret, box.path("ro/link"))
    r, o = run_native(box, profile(box), f'''
        for name, path in [("symlink", "ro/link"),
                           ("proc root", "/proc/self/root" + {str(secret)!r}),
                           ("dotdot", "ro/../secret.txt")]:
            fd = attempt(name, libc.open, path.encode(), os.O_RDONLY)
            if fd >= 0:
                print(os.read(fd, 100))
        ''')
    assert r.returncode == 0, r
    e = by(box, "EACCES", "ENOENT")
    assert o == {"symlink": e, "proc root": e, "dotdot": e}, r
    assert SECRET not in r.stdout + r.stderr


def test_host_files_refused_even_to_root(box):
    """/etc as a whole, the root directory, another process's /proc entry.
    Under unshare they exist, but hold only what the new root was built
    from: no host user list, no host directory, /tmp private, PID 1 the
    sandbox's own init."""
    marker = f"host-tmp-{os.getpid()}-{time.monotonic_ns()}"
    with open(f"/tmp/{marker}", "w"):
        pass
    try:
        r, o = run_native(box, profile(box), '''
            fd = attempt("passwd", libc.open, b"/etc/passwd", os.O_RDONLY)
            if fd >= 0:
                print("passwd lines:", len(os.read(fd, 65536).splitlines()))
            py("listdir /etc", lambda: print("etc:", sorted(os.listdir("/etc"))))
            py("listdir /", lambda: print("root:", sorted(os.listdir("/"))))
            py("listdir /tmp", lambda: print("tmp:", sorted(os.listdir("/tmp"))))
            fd = attempt("proc 1", libc.open, b"/proc/1/status", os.O_RDONLY)
            if fd >= 0:
                print("pid 1:", os.read(fd, 200).split(b"\\n")[0].decode())
            attempt("proc self", libc.open, b"/proc/self/status", os.O_RDONLY)
            py("proc self fd", lambda: os.listdir("/proc/self/fd"))
            py("proc self maps", lambda: open("/proc/self/maps").read())
            # The namespace's sockets and the host's mounts: under Landlock
            # the host's (no network namespace).
            attempt("proc self net", libc.open, b"/proc/self/net/tcp", os.O_RDONLY)
            attempt("proc self net unix", libc.open, b"/proc/self/net/unix", os.O_RDONLY)
            attempt("proc self mountinfo", libc.open, b"/proc/self/mountinfo", os.O_RDONLY)
            py("shadow", lambda: open("/etc/shadow").read())
            ''')
    finally:
        os.unlink(f"/tmp/{marker}")
    assert r.returncode == 0, r
    assert o["proc self fd"] == o["proc self maps"] == "OK", r
    if box.kernel == "landlock":
        assert o == {"passwd": "EACCES", "listdir /etc": "EACCES", "listdir /": "EACCES",
                     "listdir /tmp": "EACCES", "proc 1": "EACCES", "proc self": "OK",
                     "proc self fd": "OK", "proc self maps": "OK", "proc self net": "EACCES",
                     "proc self net unix": "EACCES", "proc self mountinfo": "EACCES",
                     "shadow": "EACCES"}, r
        assert "root:" not in r.stdout
        return
    assert o["proc self"] == "OK" and o["shadow"] == "ENOENT", r
    # Its own user, and nobody: never the host's list.
    assert "passwd lines: 2" in r.stdout, r
    etc = eval(r.stdout.split("etc: ", 1)[1].splitlines()[0])
    assert set(etc) <= {"ld.so.cache", "nsswitch.conf", "localtime", "ssl", "pki",
                        "ca-certificates", "os-release", "hosts", "passwd", "group",
                        "python3.11", "python3.12", "python3.13"}, etc
    root = eval(r.stdout.split("root: ", 1)[1].splitlines()[0])
    assert not {"root", "home", "var", "opt", "srv", "mnt", "run", "boot"} & set(root), root
    assert marker not in r.stdout, "the host's /tmp is visible"
    assert "pid 1: Name:\tpython-sb-init" in r.stdout, r


# --------------------------------------------------------------------------
# Writing under expose-ro (and out of expose-rw)


def test_create_under_expose_ro_refused(box):
    r, o = run_native(box, profile(box), '''
        attempt("creat", libc.open, b"ro/new.txt", os.O_WRONLY | os.O_CREAT, 0o644)
        attempt("mkdir", libc.mkdir, b"ro/newdir", 0o755)
        attempt("mknod fifo", libc.mkfifo, b"ro/fifo", 0o644)
        attempt("symlink", libc.symlink, b"/etc/passwd", b"ro/sym")
        ''')
    assert r.returncode == 0, r
    e = by(box, "EACCES", "EROFS")
    assert o == {"creat": e, "mkdir": e, "mknod fifo": e, "symlink": e}, r
    assert sorted(os.listdir(box.path("ro"))) == ["existing.txt"]


def test_modify_under_expose_ro_refused(box):
    existing = box.path("ro/existing.txt")
    before = os.stat(existing)
    r, o = run_native(box, profile(box), '''
        attempt("open wronly", libc.open, b"ro/existing.txt", os.O_WRONLY)
        attempt("open trunc", libc.open, b"ro/existing.txt", os.O_RDWR | os.O_TRUNC)
        attempt("open append", libc.open, b"ro/existing.txt", os.O_WRONLY | os.O_APPEND)
        attempt("truncate", libc.truncate, b"ro/existing.txt", ctypes.c_long(0))
        attempt("unlink", libc.unlink, b"ro/existing.txt")
        attempt("rename", libc.rename, b"ro/existing.txt", b"ro/renamed.txt")
        attempt("rename to rw", libc.rename, b"ro/existing.txt", b"rw/stolen.txt")
        ''')
    assert r.returncode == 0, r
    e = by(box, "EACCES", "EROFS")
    assert o["open wronly"] == o["open trunc"] == o["open append"] == e, r
    assert o["truncate"] == o["unlink"] == o["rename"] == e, r
    # unshare: two mounts, no rename between them.
    assert o["rename to rw"] == by(box, "EACCES", "EXDEV"), r
    assert existing.read_text() == ORIGINAL
    after = os.stat(existing)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == \
        (before.st_ino, before.st_size, before.st_mtime_ns)
    assert sorted(os.listdir(box.path("ro"))) == ["existing.txt"]
    assert os.listdir(box.path("rw")) == []


def test_expose_rw_cannot_move_or_link_files_out_or_in(box):
    """A writable grant is no bridge: no rename out of it, no hard link of an
    outside file into it."""
    box.write("rw/mine.txt", "mine\n")
    secret = str(box.path("secret.txt")).encode()
    outside = str(box.path("moved.txt")).encode()
    r, o = run_native(box, profile(box), f'''
        attempt("rename out", libc.rename, b"rw/mine.txt", {outside!r})
        attempt("link in", libc.link, {secret!r}, b"rw/leak.txt")
        attempt("symlink in", libc.symlink, {secret!r}, b"rw/sym.txt")
        py("read through symlink", lambda: print(open("rw/sym.txt").read()))
        ''')
    assert r.returncode == 0, r
    # unshare: the working directory is not the host's (a directory of the
    # new root): rename() cannot cross from the rw mount into it.
    assert o["rename out"] == by(box, "EACCES", "EXDEV"), r
    # Landlock answers EXDEV: the link would give the file rights it lacks;
    # under unshare the outside file does not exist.
    assert o["link in"] == by(box, "EXDEV", "ENOENT"), r
    # Creating a symlink is a write inside the grant; following it is not a
    # read outside.
    assert o["symlink in"] == "OK", r
    assert o["read through symlink"] == by(box, "EACCES", "ENOENT"), r
    assert SECRET not in r.stdout
    assert not box.path("moved.txt").exists()
    assert not box.path("rw/leak.txt").exists()
    assert box.path("rw/mine.txt").read_text() == "mine\n"


def test_allowed_file_operations_work(anyuser):
    sb = anyuser
    r, o = run_native(sb, profile(sb), '''
        print("ro content:", open("ro/existing.txt").read().strip())
        print("ro listing:", sorted(os.listdir("ro")))
        fd = attempt("libc read ro", libc.open, b"ro/existing.txt", os.O_RDONLY)
        os.close(fd)
        with open("rw/out.txt", "w") as f:
            f.write("written by the sandbox\\n")
        os.mkdir("rw/sub")
        os.rename("rw/out.txt", "rw/sub/out.txt")
        with open("rw/tmp.txt", "w") as f:
            f.write("x")
        os.unlink("rw/tmp.txt")
        print("rw content:", open("rw/sub/out.txt").read().strip())
        ''')
    assert r.returncode == 0, r
    assert "ro content: ORIGINAL-ro-content" in r.stdout
    assert "ro listing: ['existing.txt']" in r.stdout
    assert o["libc read ro"] == "OK"
    assert "rw content: written by the sandbox" in r.stdout
    assert sb.path("rw/sub/out.txt").read_text() == "written by the sandbox\n"
    assert sorted(os.listdir(sb.path("rw"))) == ["sub"]


# --------------------------------------------------------------------------
# Sockets


def test_no_net_rule_no_inet_socket(anyuser, tcp):
    sb = anyuser
    listener = tcp()
    r, o = run_native(sb, profile(sb), f'''
        s = attempt("socket inet", libc.socket, socket.AF_INET, socket.SOCK_STREAM, 0)
        attempt("socket inet6", libc.socket, socket.AF_INET6, socket.SOCK_STREAM, 0)
        attempt("SYS_socket", libc.syscall, 41, socket.AF_INET, socket.SOCK_STREAM, 0)
        def connect():
            c = socket.create_connection(("127.0.0.1", {listener.port}), timeout=2)
            c.sendall(b"LEAK")
        py("python connect", connect)
        ''')
    assert r.returncode == 0, r
    assert o == {"socket inet": "EPERM", "socket inet6": "EPERM", "SYS_socket": "EPERM",
                 "python connect": "EPERM"}, r
    assert listener.received() is None


def test_connect_only_to_the_allowed_port(box, tcp):
    """Under unshare the host's loopback is 10.0.2.2 (slirp4netns), reachable
    only through a rule naming it, and nftables refuses the other ports with
    a reset (ECONNREFUSED at once)."""
    allowed, other = tcp(), tcp()
    host = by(box, "127.0.0.1", "10.0.2.2")
    r, o = run_native(box, profile(box) + f"net=ALLOW|tcp|{host}|{allowed.port}|OUT\n", f'''
        def connect(port):
            def go():
                c = socket.create_connection(({host!r}, port), timeout=2)
                c.sendall(b"HELLO-" + str(port).encode())
                c.close()
            return go
        py("allowed", connect({allowed.port}))
        py("other", connect({other.port}))
        ''')
    assert r.returncode == 0, r
    assert o == {"allowed": "OK", "other": by(box, "EACCES", "ECONNREFUSED")}, r
    assert allowed.received() == f"HELLO-{allowed.port}".encode()
    assert other.received() is None


def test_bind_only_on_an_in_rules_port(box):
    """Landlock refuses to bind another port. Under unshare the kernel does
    not (the Python guard does): a server binds in the sandbox's own network
    namespace, where only the sandbox can reach it
    (test_unshare_server_is_unreachable_from_the_host)."""
    port, other = free_port(), free_port()
    r, o = run_native(box, profile(box) + f"net=ALLOW|tcp|127.0.0.1|{port}|IN\n", f'''
        def bind(p):
            def go():
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                s.listen()
            return go
        py("in port", bind({port}))
        py("other port", bind({other}))
        py("any port", bind(0))
        def connect():
            socket.create_connection(("127.0.0.1", {port}), timeout=2)
        py("connect to the in port", connect)
        ''')
    assert r.returncode == 0, r
    e = by(box, "EACCES", "OK")
    # unshare: the listener is closed by then; nothing refused the connect.
    assert o == {"in port": "OK", "other port": e, "any port": e,
                 "connect to the in port": by(box, "EACCES", "ECONNREFUSED")}, r


def test_socket_types_beyond_the_rules_refused(box):
    """A tcp rule gives SOCK_STREAM only: no UDP without a udp rule, never raw
    sockets (root could craft packets), never netlink/packet sockets."""
    r, o = run_native(box, profile(box) + "net=ALLOW|tcp|127.0.0.1|80|OUT\n", '''
        attempt("stream", libc.socket, socket.AF_INET, socket.SOCK_STREAM, 0)
        attempt("stream6", libc.socket, socket.AF_INET6, socket.SOCK_STREAM, 0)
        attempt("dgram", libc.socket, socket.AF_INET, socket.SOCK_DGRAM, 0)
        attempt("raw", libc.socket, socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
        attempt("seqpacket", libc.socket, socket.AF_INET, socket.SOCK_SEQPACKET, 132)
        attempt("netlink", libc.socket, socket.AF_NETLINK, socket.SOCK_RAW, 0)
        attempt("packet", libc.socket, socket.AF_PACKET, socket.SOCK_RAW, 0)
        attempt("stream nonblock", libc.socket, socket.AF_INET,
                socket.SOCK_STREAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC, 0)
        # The filter compares all 64 bits of the domain: garbage above an
        # allowed family is refused, not truncated into it.
        attempt("domain high bits", libc.syscall, 41, ctypes.c_long((1 << 32) | socket.AF_INET),
                socket.SOCK_RAW, socket.IPPROTO_UDP)
        attempt("type high bits", libc.syscall, 41, socket.AF_INET,
                ctypes.c_long((1 << 32) | socket.SOCK_RAW), socket.IPPROTO_UDP)
        ''')
    assert r.returncode == 0, r
    assert o == {"stream": "OK", "stream6": "OK", "dgram": "EPERM", "raw": "EPERM",
                 "seqpacket": "EPERM", "netlink": "EPERM", "packet": "EPERM",
                 "stream nonblock": "OK", "domain high bits": "EPERM",
                 "type high bits": "EPERM"}, r


def test_udp_rule_allows_datagram_sockets(box):
    r, o = run_native(box, profile(box) + "net=ALLOW|udp|127.0.0.1|53|OUT\n", '''
        attempt("dgram", libc.socket, socket.AF_INET, socket.SOCK_DGRAM, 0)
        attempt("raw", libc.socket, socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
        ''')
    assert r.returncode == 0, r
    assert o == {"dgram": "OK", "raw": "EPERM"}, r


def test_unix_socket_refused_without_expose_rw(sb, tmp_path, provider):
    """The strict shape: no writable grant, so no AF_UNIX socket at all, and a
    named socket of the host (here: the test's) cannot be reached."""
    sb.kernel = provider
    sb.mkdir("ro")
    path = str(tmp_path / "host.sock")
    listener = unix_listener(path)
    try:
        r, o = run_native(sb, base(sb) + "expose-ro=./ro\n", f'''
            attempt("socket unix", libc.socket, socket.AF_UNIX, socket.SOCK_STREAM, 0)
            attempt("socket unix dgram", libc.socket, socket.AF_UNIX, socket.SOCK_DGRAM, 0)
            def connect():
                socket.socket(socket.AF_UNIX).connect({path!r})
            py("connect host socket", connect)
            fds = (ctypes.c_int * 2)()
            attempt("socketpair", libc.socketpair, socket.AF_UNIX, socket.SOCK_STREAM, 0, fds)
            ''')
        assert r.returncode == 0, r
        assert o == {"socket unix": "EPERM", "socket unix dgram": "EPERM",
                     "connect host socket": "EPERM", "socketpair": "OK"}, r
        assert not accepted(listener)
    finally:
        listener.close()


def test_socketpair_is_no_bridge_to_host_sockets(anyuser):
    """A datagram pair's socket can be pointed at any named socket with
    connect() or sendto() (the host's /dev/log, a daemon's control socket),
    which Landlock does not check; and an abstract name bound on any pair's
    socket squats the host's. Without a socket grant: stream and seqpacket
    pairs only, and no bind, connect, listen or accept."""
    sb = anyuser
    sb.mkdir("ro")
    host_dir = Path(tempfile.mkdtemp(prefix="python-sb-dgram-", dir="/tmp"))
    os.chmod(host_dir, 0o755)
    path = str(host_dir / "dg.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        listener.bind(path)
        os.chmod(path, 0o666)
        listener.settimeout(0.3)
        r, o = run_native(sb, base(sb) + "expose-ro=./ro\n", f'''
            class sockaddr_un(ctypes.Structure):
                _fields_ = [("family", ctypes.c_ushort), ("path", ctypes.c_char * 108)]
            def addr(name):
                return ctypes.byref(sockaddr_un(socket.AF_UNIX, name)), 2 + len(name) + 1
            host, squat = addr({path.encode()!r}), addr(b"\\0python-sb-squat")
            fds = (ctypes.c_int * 2)()
            attempt("dgram pair", libc.socketpair, socket.AF_UNIX, socket.SOCK_DGRAM, 0, fds)
            attempt("seqpacket pair", libc.socketpair, socket.AF_UNIX, socket.SOCK_SEQPACKET, 0,
                    fds)
            attempt("stream pair", libc.socketpair, socket.AF_UNIX, socket.SOCK_STREAM, 0, fds)
            attempt("connect", libc.connect, fds[0], *host)
            attempt("sendto", libc.sendto, fds[0], b"escaped", 7, 0, *host)
            attempt("bind abstract", libc.bind, fds[0], *squat)
            attempt("listen", libc.listen, fds[0], 1)
            ''')
        assert r.returncode == 0, r
        assert o == {"dgram pair": "EPERM", "seqpacket pair": "OK", "stream pair": "OK",
                     "connect": "EPERM", "sendto": "EISCONN", "bind abstract": "EPERM",
                     "listen": "EPERM"}, r
        with pytest.raises(socket.timeout):
            listener.recv(64)
    finally:
        listener.close()
        shutil.rmtree(host_dir, ignore_errors=True)


def test_unix_socket_in_expose_rw_dir_connects(box):
    """With py-sandbox=true (the guard checks socket paths) and an expose-rw
    grant, AF_UNIX sockets exist; Landlock still refuses to create a socket
    file under expose-ro."""
    path = str(box.path("rw/app.sock"))
    listener = unix_listener(path)
    try:
        r, o = run_native(box, profile(box).replace("py-sandbox=false", "py-sandbox=true")
                          + "python-import=*\npython-api=ALLOW:native\n", f'''
            def connect():
                socket.socket(socket.AF_UNIX).connect({path!r})
            py("connect rw socket", connect)
            def serve():
                s = socket.socket(socket.AF_UNIX)
                s.bind("rw/own.sock")
            py("bind in rw", serve)
            def serve_ro():
                socket.socket(socket.AF_UNIX).bind("ro/own.sock")
            py("bind in ro", serve_ro)
            ''')
        assert r.returncode == 0, r
        # bind under expose-ro: the guard refuses first (ECONNREFUSED), Landlock
        # would (EACCES, MAKE_SOCK); either way no socket file appears.
        assert o["connect rw socket"] == "OK" and o["bind in rw"] == "OK", r
        assert o["bind in ro"] in ("ECONNREFUSED", "EACCES"), r
        assert accepted(listener)
        assert not box.path("ro/own.sock").exists()
    finally:
        listener.close()


def test_unix_socket_outside_grants_refused_even_with_expose_rw(box, tmp_path):
    """An expose-rw rule lets the program create AF_UNIX sockets, but it
    grants no named socket outside the profile's directories (a host's
    docker.sock, a session bus): connecting to one must fail."""
    path = str(tmp_path / "host.sock")
    listener = unix_listener(path)
    try:
        r, o = run_native(box, profile(box), f'''
            def connect():
                socket.socket(socket.AF_UNIX).connect({path!r})
            py("connect host socket", connect)
            ''')
        assert r.returncode == 0, r
        got_in = accepted(listener)
        # seccomp refuses AF_UNIX with py-sandbox=false (EPERM); otherwise
        # Landlock refuses the path, and under unshare it is not in the root.
        assert o["connect host socket"] in by(box, ("EACCES", "EPERM"), ("EPERM", "ENOENT")) \
            and not got_in, (
            f"native code reached a named Unix socket outside every grant: {r!r}")
    finally:
        listener.close()


def test_abstract_unix_socket_scoped_to_the_sandbox(box):
    """The host's abstract sockets are out of reach; the sandbox's own work."""
    name = f"\0python-sb-test-{os.getpid()}-{time.monotonic_ns()}"
    listener = unix_listener(name)
    try:
        # py-sandbox=true: with it off, AF_UNIX sockets do not exist at all.
        r, o = run_native(box, profile(box).replace("py-sandbox=false", "py-sandbox=true")
                          + "python-import=*\npython-api=ALLOW:native\n", f'''
            def connect():
                socket.socket(socket.AF_UNIX).connect({name!r})
            py("connect host abstract", connect)
            def own():
                srv = socket.socket(socket.AF_UNIX)
                srv.bind({name + "-inner"!r})
                srv.listen()
                socket.socket(socket.AF_UNIX).connect({name + "-inner"!r})
            py("own abstract", own)
            ''')
        assert r.returncode == 0, r
        # The guard refuses every abstract socket (spec 3.5) before the kernel's
        # scope (EPERM, covered by tests/unit/test-landlock.c) is reached.
        assert o["connect host abstract"] in ("ECONNREFUSED", "EPERM"), r
        assert o["own abstract"] in ("ECONNREFUSED", "EPERM"), r
        assert not accepted(listener)
    finally:
        listener.close()


# --------------------------------------------------------------------------
# Processes


def test_fork_refused(anyuser):
    sb = anyuser
    marker = sb.path("rw/CHILD-RAN")
    r, o = run_native(sb, profile(sb), f'''
        def child_marks(pid):
            if pid == 0:
                open({str(marker)!r}, "w").write("child")
                os._exit(0)
        child_marks(attempt("fork", libc.fork))
        child_marks(attempt("SYS_fork", libc.syscall, 57))
        child_marks(attempt("SYS_clone", libc.syscall, 56, 17, 0, 0, 0, 0))  # SIGCHLD
        py("os.fork", lambda: child_marks(os.fork()))
        print("PARENT-DONE")
        ''')
    assert r.returncode == 0, r
    assert o == {"fork": "EPERM", "SYS_fork": "EPERM", "SYS_clone": "EPERM",
                 "os.fork": "EPERM"}, r
    assert r.stdout.count("PARENT-DONE") == 1
    time.sleep(0.2)
    assert not marker.exists()


def test_execve_refused(box):
    """/usr/bin is readable and executable to Landlock here: seccomp refuses."""
    marker = box.path("rw/EXEC-RAN")
    r, o = run_native(box, profile(box) + "expose-ro=/usr/bin\n", f'''
        argv = (ctypes.c_char_p * 4)(b"sh", b"-c", b"echo x > {marker}", None)
        envp = (ctypes.c_char_p * 1)(None)
        attempt("execve", libc.execve, b"/bin/sh", argv, envp)
        attempt("SYS_execve", libc.syscall, 59, b"/bin/sh", argv, envp)
        attempt("SYS_execveat", libc.syscall, 322, -100, b"/bin/sh", argv, envp, 0)
        print("STILL-HERE")
        ''')
    assert r.returncode == 0, r
    assert o == {"execve": "EPERM", "SYS_execve": "EPERM", "SYS_execveat": "EPERM"}, r
    assert "STILL-HERE" in r.stdout
    assert not marker.exists()


def test_python_process_apis_refused(box):
    marker = box.path("rw/SPAWN-RAN")
    cmd = f"echo x > {marker}"
    r, o = run_native(box, profile(box) + "expose-ro=/usr/bin\n", f'''
        import subprocess
        py("subprocess.run", lambda: subprocess.run(["/bin/sh", "-c", {cmd!r}]))
        py("posix_spawn", lambda: os.posix_spawn("/bin/sh", ["sh", "-c", {cmd!r}], {{}}))
        print("system:", os.system({cmd!r}))
        ''')
    assert r.returncode == 0, r
    assert o["subprocess.run"] == "EPERM", r
    assert o["posix_spawn"] == "EPERM", r
    # system() could not start the shell: the status of a shell that exits 127.
    assert o["system"] == "32512", r
    time.sleep(0.2)
    assert not marker.exists()


def test_threads_still_work(box):
    r, o = run_native(box, profile(box), '''
        import threading
        out = []
        t = threading.Thread(target=lambda: out.append(sum(range(1000))))
        t.start(); t.join()
        print("thread result:", out[0])
        ''')
    assert (r.returncode, r.stdout.splitlines()[-1]) == (0, "thread result: 499500"), r


def test_process_exec_grant_allows_subprocess(box):
    """python-api=ALLOW:process-exec lifts the seccomp process rules; execve
    still needs Landlock's execute right on the binary (here /usr/bin, which
    /bin links to on merged-/usr systems, plus the loader and libc that are
    always granted)."""
    marker = box.path("rw/CHILD-RAN")
    r, o = run_native(box, profile(box) + "expose-ro=/usr/bin\n"
                      "python-api=ALLOW:process-exec\n", f'''
        import subprocess
        print("true:", subprocess.run(["/bin/true"]).returncode)
        subprocess.run(["/bin/sh", "-c", "echo child > {marker}"], check=True)
        ''')
    assert r.returncode == 0, r
    assert "true: 0" in r.stdout
    assert marker.read_text() == "child\n"


def test_process_exec_grant_without_exposed_binary(box):
    """The grant lifts seccomp's refusal; Landlock still refuses to execute a
    binary outside the grants. The new root of unshare holds /usr (spec
    section 8): a binary outside it does not exist there."""
    marker = box.path("rw/CHILD-RAN")
    sh = "/bin/sh"
    if box.kernel == "unshare":
        sh = str(box.path("outside-sh"))
        shutil.copy("/bin/sh", sh)
    r, o = run_native(box, profile(box) + "python-api=ALLOW:process-exec\n", f'''
        import subprocess
        py("run sh", lambda: subprocess.run([{sh!r}, "-c", "echo x > {marker}"]))
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        print("fork:", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        ''')
    assert r.returncode == 0, r
    assert o["run sh"] == by(box, "EACCES", "ENOENT"), r
    assert "fork: 7" in r.stdout
    assert not marker.exists()


def test_children_inherit_the_boundary(box):
    """A child started with the process-exec grant is as confined as its parent."""
    secret = box.path("secret.txt")
    r, o = run_native(box, profile(box) + "expose-ro=/usr/bin\n"
                      "python-api=ALLOW:process-exec\n", f'''
        import subprocess
        p = subprocess.run(["/bin/cat", {str(secret)!r}], capture_output=True, text=True)
        print("cat rc:", p.returncode, p.stdout, p.stderr.strip())
        p = subprocess.run(["/bin/sh", "-c", "echo x > ro/by-child"], capture_output=True)
        print("sh rc:", p.returncode)
        ''')
    assert r.returncode == 0, r
    assert "cat rc: 1" in r.stdout, r
    assert by(box, "Permission denied", "No such file or directory") in r.stdout, r
    assert "sh rc: 2" in r.stdout, r
    assert SECRET not in r.stdout
    assert not box.path("ro/by-child").exists()


# --------------------------------------------------------------------------
# Other processes: ptrace, memory, signals


def test_ptrace_and_memory_access_refused(anyuser, victim):
    sb = anyuser
    v = victim(sb)
    r, o = run_native(sb, profile(sb), f'''
        v = {v.pid}
        attempt("ptrace attach", libc.ptrace, 16, v, None, None)
        attempt("ptrace seize parent", libc.ptrace, 0x4206, os.getppid(), None, None)
        buf = ctypes.create_string_buffer(16)
        class iovec(ctypes.Structure):
            _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
        local = iovec(ctypes.addressof(buf), 16)
        remote = iovec(0x400000, 16)
        attempt("process_vm_readv", libc.process_vm_readv, v, ctypes.byref(local), 1,
                ctypes.byref(remote), 1, 0)
        attempt("process_vm_writev", libc.process_vm_writev, v, ctypes.byref(local), 1,
                ctypes.byref(remote), 1, 0)
        attempt("open mem", libc.open, f"/proc/{{v}}/mem".encode(), os.O_RDWR)
        pidfd = libc.syscall(434, v, 0)   # pidfd_open
        attempt("pidfd_getfd", libc.syscall, 438, pidfd, 0, 0)
        ''')
    assert r.returncode == 0, r
    # unshare: the victim is not in the PID namespace, nor in its /proc.
    assert o == {"ptrace attach": "EPERM", "ptrace seize parent": "EPERM",
                 "process_vm_readv": "EPERM", "process_vm_writev": "EPERM",
                 "open mem": by(sb, "EACCES", "ENOENT"), "pidfd_getfd": "EPERM"}, r
    assert v.poll() is None
    assert tracer_pid(v.pid) == 0
    assert tracer_pid(os.getpid()) == 0


def test_signals_outside_the_sandbox_refused(anyuser, victim):
    """seccomp refuses every signal to another process without the process
    grants. Under unshare the launcher is outside the PID namespace
    (getppid() is 0) and the victim has no pid there either; with the grants,
    the kernel's answer is test_kernel_unshare.py's
    test_process_group_signals_stay_inside."""
    sb = anyuser
    v = victim(sb)
    r, o = run_native(sb, profile(sb), f'''
        v = {v.pid}
        print("ppid:", os.getppid())
        attempt("kill parent 0", libc.kill, os.getppid(), 0)
        attempt("kill parent SIGURG", libc.kill, os.getppid(), 23)
        attempt("kill victim", libc.kill, v, 9)
        attempt("tgkill victim", libc.syscall, 234, v, v, 9)
        attempt("sigqueue victim", libc.sigqueue, v, 9, 0)
        pidfd = libc.syscall(434, v, 0)
        attempt("pidfd_send_signal", libc.syscall, 424, pidfd, 9, None, 0)
        attempt("kill own", libc.kill, os.getpid(), 0)
        ''')
    assert r.returncode == 0, r
    assert (o.pop("ppid") == "0") == (sb.kernel == "unshare"), r
    assert o == {"kill parent 0": "EPERM", "kill parent SIGURG": "EPERM",
                 "kill victim": "EPERM", "tgkill victim": "EPERM",
                 "sigqueue victim": "EPERM", "pidfd_send_signal": "EPERM",
                 "kill own": "OK"}, r
    time.sleep(0.1)
    assert v.poll() is None, "the victim was killed from inside the sandbox"


def test_signal_refusal_is_the_sandboxs(sb, victim):
    """Control: without a kernel boundary the same call reaches the victim."""
    v = victim(sb)
    r, o = run_native(sb, "os-sandbox=none\npy-sandbox=false\n", f'''
        attempt("kill victim 0", libc.kill, {v.pid}, 0)
        ''')
    assert o == {"kill victim 0": "OK"}, r


def test_kernel_attack_surface_refused(box):
    """Refused whatever the profile grants (the broadest grants here)."""
    calls = {"io_uring_setup": 425, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
             "keyctl": 250, "add_key": 248, "mount": 165, "umount2": 166, "unshare": 272,
             "setns": 308, "chroot": 161, "pivot_root": 155, "fsopen": 430, "open_tree": 428,
             "shmget": 29, "msgget": 68, "semget": 64, "mq_open": 240, "kcmp": 312,
             "open_by_handle_at": 304, "name_to_handle_at": 303, "init_module": 175,
             "reboot": 169, "syslog": 103, "iopl": 172, "acct": 163, "swapon": 167}
    body = "".join(f'attempt({n!r}, libc.syscall, {nr}, 0, 0, 0, 0, 0)\n'
                   for n, nr in calls.items())
    r, o = run_native(box, profile(box) + "python-api=ALLOW:process-exec\n"
                      "net=ALLOW|tcp,udp|*|*|IN,OUT\n", body)
    assert r.returncode == 0, r
    assert o == {n: "EPERM" for n in calls}, r


def test_clone_namespace_flags_refused_even_with_process_exec(box):
    marker = box.path("rw/NS-CHILD")
    r, o = run_native(box, profile(box) + "python-api=ALLOW:process-exec\n", f'''
        SIGCHLD = 17
        for name, flag in [("newuser", 0x10000000), ("newns", 0x00020000),
                           ("newnet", 0x40000000), ("newpid", 0x20000000)]:
            pid = attempt(name, libc.syscall, 56, flag | SIGCHLD, 0, 0, 0, 0)
            if pid == 0:
                open({str(marker)!r}, "w").write(name)
                os._exit(0)
        attempt("unshare user", libc.unshare, 0x10000000)
        attempt("clone3", libc.syscall, 435, 0, 0)
        ''')
    assert r.returncode == 0, r
    assert o == {"newuser": "EPERM", "newns": "EPERM", "newnet": "EPERM", "newpid": "EPERM",
                 "unshare user": "EPERM", "clone3": "ENOSYS"}, r
    assert not marker.exists()


def test_tiocsti_and_personality_refused(box):
    r, o = run_native(box, profile(box), '''
        c = ctypes.c_char(b"x")
        attempt("TIOCSTI", libc.ioctl, 0, 0x5412, ctypes.byref(c))
        attempt("TIOCSTI high bits", libc.ioctl, 0, ctypes.c_ulong((1 << 32) | 0x5412),
                ctypes.byref(c))
        attempt("personality no-aslr", libc.syscall, 135, 0x0040000)
        print("personality query:", libc.syscall(135, 0xffffffff))
        attempt("newer syscall (statmount)", libc.syscall, 457, 0, 0, 0, 0)
        ''', input="")
    assert r.returncode == 0, r
    assert o["TIOCSTI"] == o["TIOCSTI high bits"] == "EPERM", r
    assert o["personality no-aslr"] == "EPERM", r
    assert o["personality query"] == "0", r
    assert o["newer syscall (statmount)"] == "ENOSYS", r


# --------------------------------------------------------------------------
# Fail closed: a named provider that cannot apply its rules never runs the program


def run_with_parent_fd_limit(sb, nofile, *args):
    """python-sb started with only `nofile` descriptors (set by its parent):
    a constraint from outside that keeps the provider from building its
    boundary (Landlock's ruleset; unshare's pipes, signalfd and mounts)."""
    cmd = sb.prefix + ["prlimit", f"--nofile={nofile}:{nofile}", sb.binary] + [str(a) for a in args]
    return subprocess.run(cmd, cwd=str(sb.root), capture_output=True, text=True,
                          timeout=30, env=sb.env(), stdin=subprocess.DEVNULL)


@not_under_asan
def test_landlock_that_cannot_be_built_fails_closed(box):
    """With 4 descriptors the ruleset is created but the first grant cannot be
    opened (EMFILE): the provider cannot apply its rules, so the program must
    not run (unshare: the same, at its first descriptor)."""
    marker = box.path("rw/RAN")
    box.profile(profile(box))
    s = box.write("s.py", f'print("RAN"); open({str(marker)!r}, "w")\n')
    r = run_with_parent_fd_limit(box, 4, s)
    assert r.returncode == EXIT_CONFIG, r
    assert "python-sb: the sandbox cannot be applied: " in r.stderr
    assert "Too many open files" in r.stderr
    assert "RAN" not in r.stdout
    assert not marker.exists()


@not_under_asan
def test_landlock_failure_on_command_line_fails_closed(box):
    marker = box.path("rw/RAN")
    box.profile("os-sandbox=none\npy-sandbox=false\nexpose-rw=./rw\n")
    r = run_with_parent_fd_limit(box, 4, f"--os-sandbox={box.kernel}", "-c",
                                 f"open({str(marker)!r}, 'w')")
    assert r.returncode == EXIT_CONFIG, r
    assert "the sandbox cannot be applied" in r.stderr
    assert "Too many open files" in r.stderr
    assert not marker.exists()


@not_under_asan
@pytest.mark.parametrize("holder", ["watchdog", "supervisor"])
def test_landlock_failure_under_timeout_fails_closed(box, holder):
    """The program's process (the watchdog's, or the supervisor's child when
    the program may start processes) fails to enter the boundary: the status
    is 255, not the timeout's 124, and nothing ran."""
    marker = box.path("rw/RAN")
    box.profile(profile(box) + "timeout=5s\n" +
                ("python-api=ALLOW:process-exec\n" if holder == "supervisor" else ""))
    s = box.write("s.py", f'open({str(marker)!r}, "w")\n')
    r = run_with_parent_fd_limit(box, 4, s)
    assert r.returncode == EXIT_CONFIG, r
    assert "the sandbox cannot be applied" in r.stderr
    assert not marker.exists()


def test_unreachable_expose_dir_as_nobody_fails_closed(sb_nobody, provider):
    """A directory nobody cannot reach (a parent without search permission)
    cannot carry a Landlock rule, nor be bound. The profile check finds it
    first (realpath needs the same permission as Landlock's O_PATH open), so
    the run stops with a profile error: the program never runs."""
    sb = sb_nobody
    sb.kernel = provider
    sb.mkdir("rw")
    locked = sb.mkdir("locked")
    sb.mkdir("locked/data")
    os.chmod(locked, 0o000)
    try:
        marker = sb.path("rw/RAN")
        r, _ = run_native(sb, base(sb) + "expose-rw=./rw\nexpose-ro=./locked/data\n",
                          f'print("RAN"); open({str(marker)!r}, "w")\n')
        assert r.returncode == EXIT_CONFIG, r
        errs = r.errors
        assert len(errs) == 1, errs
        assert errs[0].startswith(f"{sb.path('.py-sandboxes')}:4: expose-ro='./locked/data'"), errs
        assert "Permission denied" in errs[0]
        assert "RAN" not in r.stdout
        assert not marker.exists()
    finally:
        os.chmod(locked, 0o755)


# --------------------------------------------------------------------------
# Timeout as the unprivileged user too (the rest is in test_limits.py)


def test_timeout_kills_as_either_user(anyuser):
    sb = anyuser
    t0 = time.monotonic()
    r, _ = run_native(sb, profile(sb) + "timeout=1s\n", "while True: pass\n")
    elapsed = time.monotonic() - t0
    assert r.returncode == EXIT_TIMEOUT, r
    assert "python-sb: timeout=1s expired" in r.stderr
    assert elapsed < HANG_BOUND, elapsed



# The inner python-sb of an ASan build ends with status 1: the sanitizer's
# runtime cannot read /proc/PID/task inside the outer sandbox.
@not_under_asan
def test_nested_landlock_refused_by_the_filter_names_the_cause(sb):
    """A python-sb the program starts (sys.executable) under a profile naming
    landlock: python-sb's own seccomp filter refuses nested sandboxes, and the
    message says so rather than that the kernel lacks Landlock."""
    sb.mkdir("rw")
    marker = sb.path("rw/RAN")
    sanitizers = "env=ASAN_OPTIONS=${ASAN_OPTIONS}\nenv=UBSAN_OPTIONS=${UBSAN_OPTIONS}\n"
    sb.write("inner.py-sandboxes", "os-sandbox=landlock\n" + sanitizers + "expose-rw=./rw\n")
    r, o = run_native(sb, "os-sandbox=landlock\npy-sandbox=false\n" + sanitizers +
                      "python-api=ALLOW:process-exec\nexpose-ro=/usr\nexpose-ro=.\n", f'''
        import subprocess
        p = subprocess.run([sys.executable, "--pysandboxes-config", "inner.py-sandboxes", "-c",
                            "open({str(marker)!r}, 'w')"], capture_output=True, text=True)
        print("rc:", p.returncode)
        print("err:", p.stderr.strip())
        ''')
    assert r.returncode == 0, r
    assert o["rc"] == str(EXIT_CONFIG), r
    assert "Landlock is refused by a seccomp filter on this process" in o["err"], r
    assert "not supported by the running kernel" not in o["err"], r
    assert not marker.exists()
