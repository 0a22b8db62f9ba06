# SPDX-License-Identifier: MIT
"""What os-sandbox=unshare does that the other providers do not (the boundary
it shares with landlock is tested in test_kernel_landlock.py, under both):
python-sb's own namespaces and processes, the new root, ignore= under the
kernel, the exit status and signals of the program seen through the launcher,
the unshare.* parameters, the network through slirp4netns and nftables, and a
clear error where user namespaces are refused. Run with py-sandbox=false
unless the guard is the point, as the caller (root in CI) and as nobody."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from conftest import (EXIT_CONFIG, IS_ASAN, SANITIZER_ENV, TIMEOUT, needs_userns,
                      not_under_asan, run_native, still_alive_after)

pytestmark = needs_userns

BASE = "os-sandbox=unshare\npy-sandbox=false\n"
SECRET = "TOP-SECRET-7d1e40"
# A python-sb the program starts (sys.executable) is an ASan build too in the
# sanitizer run: it needs the same settings (no leak report changing its exit
# status).
SANITIZERS = "env=ASAN_OPTIONS=${ASAN_OPTIONS}\nenv=UBSAN_OPTIONS=${UBSAN_OPTIONS}\n"


@pytest.fixture(params=["caller", "nobody"])
def anyuser(request):
    sb = request.getfixturevalue("sb" if request.param == "caller" else "sb_nobody")
    sb.mkdir("ro")
    sb.mkdir("rw")
    sb.write("ro/ok.txt", "ok\n")
    return sb


def tools_missing():
    return [t for t in ("slirp4netns", "nft")
            if not any(os.access(os.path.join(d, t), os.X_OK)
                       for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin"))]


def tun_usable_by(sb):
    """slirp4netns opens /dev/net/tun as the sandbox's user (mode 0666 on
    Debian through udev; some machines leave it 0600)."""
    if not sb.prefix:
        return os.access("/dev/net/tun", os.R_OK | os.W_OK)
    return os.stat("/dev/net/tun").st_mode & 0o006 == 0o006


# --------------------------------------------------------------------------
# The namespaces and the processes


def test_inside_the_namespaces(anyuser):
    sb = anyuser
    r, o = run_native(sb, BASE + "expose-ro=./ro\nexpose-rw=./rw\n", '''
        print("pid:", os.getpid())
        print("ppid:", os.getppid())
        print("uid:", os.getuid(), os.getgid())
        print("procs:", sorted(p for p in os.listdir("/proc") if p.isdigit()))
        status = open("/proc/self/status").read().splitlines()
        for key in ("CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
            print(key + ":", [l.split()[1] for l in status if l.startswith(key + ":")][0])
        print("interfaces:", sorted(l.split(":")[0].strip()
                                    for l in open("/proc/self/net/dev").readlines()[2:]))
        py("write /", lambda: open("/new-file", "w"))
        py("mkdir /", lambda: os.mkdir("/new-dir"))
        with open("/tmp/mine", "w") as f:
            f.write("private")
        print("tmp:", open("/tmp/mine").read())
        ''')
    assert r.returncode == 0, r
    assert o["pid"] == "2" and o["ppid"] == "0", r
    uid = str(os.getuid()) if not sb.prefix else str(sb.owner[0])
    assert o["uid"].split()[0] == uid, r
    assert o["procs"] == "['1', '2']", r
    assert o["CapEff"] == o["CapPrm"] == o["CapBnd"] == o["CapAmb"] == "0000000000000000", r
    assert o["NoNewPrivs"] == "1" and o["Seccomp"] == "2", r
    assert o["interfaces"] == "['lo']", r
    assert o["write /"] == "EROFS" and o["mkdir /"] == "EROFS", r
    assert o["tmp"] == "private" and not os.path.exists("/tmp/mine"), r


def test_map_root_user(sb_nobody):
    r, o = run_native(sb_nobody, BASE + "unshare.map-root-user=yes\n", '''
        print("uid:", os.getuid(), os.getgid())
        print("name:", __import__("pwd").getpwuid(0).pw_name)
        status = open("/proc/self/status").read()
        print("caps:", [l.split()[1] for l in status.splitlines() if l.startswith("CapEff")][0])
        ''')
    assert r.returncode == 0, r
    assert o == {"uid": "0 0", "name": "root", "caps": "0000000000000000"}, r


def test_exit_status_and_death_look_like_python(anyuser):
    sb = anyuser
    cases = [
        ("import sys; sys.exit(7)", 7),
        ("raise SystemExit('bye')", 1),
        ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", -signal.SIGTERM),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", -signal.SIGKILL),
        ("raise KeyboardInterrupt", -signal.SIGINT),
    ]
    if not IS_ASAN:  # AddressSanitizer reports a SEGV and exits 1
        cases.append(("import ctypes; ctypes.string_at(0)", -signal.SIGSEGV))
    sb.profile(BASE)
    for code, want in cases:
        r = sb.run("-c", code)
        assert r.returncode == want, (code, r)


def start(sb, code, profile=BASE):
    """python-sb running code in the background, as the sandbox's user."""
    sb.profile(profile)
    s = sb.write("s.py", textwrap.dedent(code))
    env = dict(sb.env(), **SANITIZER_ENV)
    return subprocess.Popen(sb.prefix + [sb.binary, str(s)], cwd=str(sb.root), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)


def test_signals_sent_to_the_launcher_reach_the_program(anyuser):
    """kill(1) knows the launcher's pid: the program gets the signal, handles
    it, and its exit status is the launcher's."""
    p = start(anyuser, '''
        import os, signal, sys, time
        def handler(sig, frame):
            # os.write: the signal may come while print("ready") returns.
            os.write(1, f"got {signal.Signals(sig).name}\\n".encode())
            if sig == signal.SIGTERM:
                sys.exit(3)
        signal.signal(signal.SIGUSR1, handler)
        signal.signal(signal.SIGTERM, handler)
        print("ready", flush=True)
        # Not signal.pause(): a signal that comes after the interpreter's
        # last check and before pause() starts runs its handler only at the
        # next signal, which never comes (the test waits for this one).
        while True:
            time.sleep(0.05)
        ''')
    assert p.stdout.readline() == "ready\n"
    p.send_signal(signal.SIGUSR1)
    assert p.stdout.readline() == "got SIGUSR1\n"
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=TIMEOUT)
    assert (p.returncode, out) == (3, "got SIGTERM\n"), err


def test_killing_the_launcher_kills_the_program(anyuser):
    sb = anyuser
    marker = sb.path("rw/LATE")
    p = start(sb, f'''
        import time
        print("ready", flush=True)
        time.sleep(1.5)
        open({str(marker)!r}, "w").write("still alive")
        ''', BASE + "expose-rw=./rw\n")
    assert p.stdout.readline() == "ready\n"
    p.kill()
    p.wait(timeout=TIMEOUT)
    time.sleep(2)
    assert not marker.exists()


def test_background_processes_end_with_the_program(anyuser):
    """PID 1 of the namespace goes when the program ends, and the kernel kills
    what the program left behind, even a daemon that left its session."""
    sb = anyuser
    marker = sb.path("rw/DAEMON")
    r, _ = run_native(sb, BASE + "expose-rw=./rw\npython-api=ALLOW:process-exec\n", f'''
        import time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(1.5)
                open({str(marker)!r}, "w").write("alive")
            os._exit(0)
        print("MAIN DONE")
        ''')
    assert (r.returncode, r.stdout) == (0, "MAIN DONE\n"), r
    time.sleep(2)
    assert not marker.exists()


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except FileNotFoundError:
        return []


def exe_name(pid):
    return os.path.basename(os.readlink(f"/proc/{pid}/exe"))


def test_the_launcher_becomes_python_sb_supervise_or_waits(anyuser):
    """Where it can (not the instrumented build, not with net= rules), the
    program's process gets the launcher's memory (no fork, no copy on
    write) and python-sb's process becomes python-sb-supervise, whose init
    mode is the PID namespace's init too (it shares no memory with the
    program); else python-sb forks the program and waits itself. Either
    way: the same pid for the caller, the init and the program its two
    children, nothing left at the end."""
    sb = anyuser
    p = start(sb, '''
        import time
        print("ready", flush=True)
        while True:
            time.sleep(0.05)
        ''')
    try:
        assert p.stdout.readline() == "ready\n"
        # setpriv execs: p.pid is python-sb's own process, whoever runs it.
        kids = children(p.pid)
        assert len(kids) == 2, kids
        names = sorted(exe_name(k) for k in kids)
        if IS_ASAN:
            assert exe_name(p.pid) == os.path.basename(os.path.realpath(sb.binary)), p.pid
        else:
            assert exe_name(p.pid) == "python-sb-supervise", exe_name(p.pid)
            assert names == sorted(["python-sb-supervise", os.path.basename(sb.binary)]), names
        inits = [k for k in kids if open(f"/proc/{k}/comm").read().strip() == "python-sb-init"]
        assert len(inits) == 1, kids
        # The ambient capability the init kept across its exec is gone with
        # the others.
        status = open(f"/proc/{inits[0]}/status").read().splitlines()
        for key in ("CapEff", "CapPrm", "CapInh", "CapAmb"):
            assert [l.split()[1] for l in status if l.startswith(key + ":")] == \
                ["0000000000000000"], (key, status)
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=TIMEOUT)
        assert p.returncode == -signal.SIGTERM, p.returncode
        assert still_alive_after(kids, TIMEOUT) == [], kids
    finally:
        p.kill()
        p.wait()


def test_every_forwarded_signal_reaches_the_program(anyuser):
    """The signals `python` would get from whoever knows its pid, through
    python-sb-supervise (or the waiting launcher) to the program; the
    program's death by one is the caller's."""
    p = start(anyuser, '''
        import os, signal, time
        names = ["SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGWINCH"]
        def handler(sig, frame):
            os.write(1, f"got {signal.Signals(sig).name}\\n".encode())
        for n in names:
            signal.signal(getattr(signal, n), handler)
        print("ready", flush=True)
        while True:
            time.sleep(0.05)
        ''')
    assert p.stdout.readline() == "ready\n"
    for name in ("SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGWINCH"):
        p.send_signal(getattr(signal, name))
        assert p.stdout.readline() == f"got {name}\n", name
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode == -signal.SIGTERM, (p.returncode, err)


def test_killing_the_launcher_kills_the_init_and_the_program(anyuser):
    p = start(anyuser, '''
        import time
        print("ready", flush=True)
        time.sleep(60)
        ''')
    try:
        assert p.stdout.readline() == "ready\n"
        kids = children(p.pid)
        assert len(kids) == 2, kids
        p.kill()
        p.wait(timeout=TIMEOUT)
        assert still_alive_after(kids, TIMEOUT) == [], kids
    finally:
        p.kill()
        p.wait()


def test_process_group_signals_stay_inside(anyuser):
    """The program shares its process group with the launcher (so that the
    terminal's ^C and ^Z reach it) and with whatever the caller runs in it:
    kill(0, ...) must not reach them (Landlock's signal scope, or a session
    of the program's own on kernels without it)."""
    sb = anyuser
    got = sb.path("VICTIM-GOT-SIGNAL")
    victim = sb.write("victim.py", f'''
        import signal, time
        def handler(sig, frame):
            open({str(got)!r}, "w").write(str(sig))
        signal.signal(signal.SIGURG, handler)
        signal.signal(signal.SIGUSR2, handler)
        time.sleep(5)
        ''')
    # The process grants: seccomp lets kill(0, ...) through to the kernel,
    # whose answer is what this tests.
    sb.profile(BASE + "python-api=ALLOW:process-exec\n")
    s = sb.write("s.py", textwrap.dedent('''
        import ctypes, os, signal, time
        libc = ctypes.CDLL(None, use_errno=True)
        # The group includes the program itself.
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)
        time.sleep(0.5)
        print("kill group:", libc.kill(0, 23), libc.kill(0, 12), flush=True)
        '''))
    # The victim and python-sb in one new process group: the shell execs
    # python-sb after starting the victim in the background.
    env = dict(sb.env(), **SANITIZER_ENV)
    cmd = sb.prefix + ["/bin/sh", "-c", f'{sys.executable} {victim} & exec {sb.binary} {s}']
    p = subprocess.run(cmd, cwd=str(sb.root), env=env, capture_output=True, text=True,
                       timeout=TIMEOUT, start_new_session=True)
    assert p.returncode == 0, p
    assert "kill group: 0 0" in p.stdout, p
    time.sleep(0.5)
    assert not got.exists(), "a process of the caller's group got the sandbox's signal"


# --------------------------------------------------------------------------
# The new root and ignore=


def check_inherited_files_not_reopened(sb, profile):
    """stdin from a file and stdout appended to a log, both outside every
    grant and the user's own (writable by the program's uid): a new root does
    not hold them, but /proc/self/fd/N reopens them by their host path, past
    the read-only binds, with what the file's mode allows. Landlock keeps
    every path outside the new root closed; the descriptors themselves keep
    working (the input read, the output appended). Also test_kernel_wrappers.py
    (bwrap)."""
    sb.mkdir("outside")
    stdin_file = sb.write("outside/input.txt", SECRET + "\n")
    log = sb.write("outside/log.txt", "earlier run\n")
    sb.profile(profile)
    s = sb.write("s.py", __import__("conftest").NATIVE_PRELUDE + textwrap.dedent('''
        py("reopen stdin for writing",
           lambda: os.write(os.open("/proc/self/fd/0", os.O_WRONLY | os.O_TRUNC), b"pwned"))
        py("reopen stdout for reading", lambda: os.read(os.open("/proc/self/fd/1", os.O_RDONLY), 99))
        py("reopen stdout without O_APPEND",
           lambda: os.write(os.open("/proc/self/fd/1", os.O_WRONLY), b"OVERWRITTEN"))
        print("stdin:", sys.stdin.read().strip(), flush=True)
        '''), dedent=False)
    env = dict(sb.env(), **SANITIZER_ENV)
    with open(stdin_file) as stdin, open(log, "a") as out:
        p = subprocess.run(sb.prefix + [sb.binary, str(s)], cwd=str(sb.root), env=env,
                           stdin=stdin, stdout=out, stderr=subprocess.PIPE, text=True,
                           timeout=TIMEOUT)
    text = log.read_text()
    assert p.returncode == 0, (p, text)
    assert text.startswith("earlier run\n"), text
    o = dict(line.split(": ", 1) for line in text.splitlines()[1:] if ": " in line)
    assert o == {"reopen stdin for writing": "EACCES", "reopen stdout for reading": "EACCES",
                 "reopen stdout without O_APPEND": "EACCES", "stdin": SECRET}, text
    assert stdin_file.read_text() == SECRET + "\n"


def test_inherited_files_cannot_be_reopened_through_proc(anyuser):
    check_inherited_files_not_reopened(anyuser, BASE)


def test_ignore_refuses_native_code_and_the_guard_hides(anyuser):
    sb = anyuser
    sb.write("ro/.env", SECRET + "\n")
    sb.write("ro/sub/.env", SECRET + "\n")
    sb.write("ro/.git/config", SECRET + "\n")
    sb.write("rw/.env", SECRET + "\n")
    rules = "expose-ro=./ro\nexpose-rw=./rw\nignore=.env\nignore=.git\n"
    code = '''
        for path in ["ro/.env", "ro/sub/.env", "ro/.git/config", "rw/.env", "ro/ok.txt"]:
            py(path, lambda: print(open(path).read()))
        py("list .git", lambda: os.listdir("ro/.git"))
        py("unlink rw/.env", lambda: os.unlink("rw/.env"))
        py("rename rw/.env", lambda: os.rename("rw/.env", "rw/moved"))
        print("listing:", sorted(os.listdir("ro")))
        '''
    r, o = run_native(sb, BASE + rules, code)
    assert r.returncode == 0, r
    # The kernel: access refused (EACCES); the name stays in listings.
    assert o["ro/.env"] == o["ro/sub/.env"] == o["ro/.git/config"] == "EACCES", r
    assert o["rw/.env"] == o["list .git"] == "EACCES", r
    assert o["ro/ok.txt"] == "OK", r
    # A placeholder is a mount point: it cannot be removed or renamed away.
    assert o["unlink rw/.env"] == o["rename rw/.env"] == "EBUSY", r
    assert o["listing"] == "['.env', '.git', 'ok.txt', 'sub']", r
    assert SECRET not in r.stdout + r.stderr
    assert sb.path("rw/.env").read_text() == SECRET + "\n"
    # With the guard, Python code sees them vanish (ENOENT), native code is
    # still refused by the kernel.
    r, o = run_native(sb, BASE.replace("py-sandbox=false", "py-sandbox=true") + rules +
                      "python-import=*\npython-api=ALLOW:native\n", '''
        py("python open", lambda: open("ro/.env").read())
        print("python listing:", sorted(os.listdir("ro")))
        attempt("libc open", libc.open, b"ro/.env", os.O_RDONLY)
        ''')
    assert r.returncode == 0, r
    assert o["python open"] == "ENOENT" and o["libc open"] == "EACCES", r
    assert o["python listing"] == "['ok.txt', 'sub']", r
    assert SECRET not in r.stdout + r.stderr


def test_symbolic_links_lead_as_on_the_host(sb):
    """A granted path reached through a link: the link exists in the new root
    and leads to the same place; a link to outside the grants leads nowhere."""
    sb.write("real/data.txt", "through the link\n")
    os.symlink("real", sb.path("link"))
    sb.write("secret.txt", SECRET)
    os.symlink(sb.path("secret.txt"), sb.path("real/to-secret"))
    r, o = run_native(sb, BASE + "expose-ro=./link\n", '''
        py("via link", lambda: print(open("link/data.txt").read().strip()))
        py("link target", lambda: print(os.readlink("link")))
        py("to secret", lambda: open("link/to-secret").read())
        ''')
    assert r.returncode == 0, r
    assert "through the link" in r.stdout and o["link target"] == "OK", r
    assert o["to secret"] == "ENOENT", r
    assert SECRET not in r.stdout


def test_private_tmp_size(sb):
    r, o = run_native(sb, BASE + "unshare.tmp-size=8\n", '''
        st = os.statvfs("/tmp")
        print("tmp MiB:", st.f_blocks * st.f_frsize // (1 << 20))
        def fill():
            with open("/tmp/big", "wb") as f:
                f.write(b"x" * (16 << 20))
        py("fill", fill)
        ''')
    assert r.returncode == 0, r
    assert o == {"tmp MiB": "8", "fill": "ENOSPC"}, r


def test_nested_python_sb_says_it_cannot_sandbox_again(sb):
    """A program started through sys.executable under a profile that asks for
    unshare again: the sandbox's seccomp filter refuses namespaces, mounts
    and seccomp itself, so python-sb stops (255), saying why, before any of
    the program runs."""
    sb.mkdir("rw")
    marker = sb.path("rw/NESTED-RAN")
    r, o = run_native(sb, BASE + SANITIZERS + "expose-rw=./rw\npython-api=ALLOW:process-exec\n",
                      f'''
        import subprocess
        p = subprocess.run([sys.executable, "-c", "open({str(marker)!r}, 'w')"],
                           capture_output=True, text=True)
        print("child:", p.returncode)
        print("said:", "already running inside an os-sandbox=unshare sandbox" in p.stderr)
        ''')
    assert r.returncode == 0, r
    assert o == {"child": str(EXIT_CONFIG), "said": "True"}, r
    assert not marker.exists()


# --------------------------------------------------------------------------
# unshare.* parameters


def test_unshare_options_are_refused_with_the_reason(sb):
    marker = sb.path("RAN")
    p = sb.profile("os-sandbox=unshare\nunshare.propagation=slave\nunshare.fork=\n"
                   "unshare.hostnam=box\n")
    r = sb.run("-c", f"open({str(marker)!r}, 'w')")
    assert r.returncode == EXIT_CONFIG, r
    assert r.errors == [
        f"{p}:2: unshare.propagation is not supported: the program's root is a new tree "
        "detached from the host's mounts: nothing propagates either way",
        f"{p}:3: unshare.fork is not supported: always done: the program runs as PID 2 "
        "under python-sb's own init",
        f"{p}:4: Unknown unshare parameter 'hostnam'",
    ], r
    assert not marker.exists()


def test_explain_shows_the_namespaces_and_the_mounts(sb):
    sb.mkdir("ro/.git")
    sb.profile("os-sandbox=unshare\nexpose-ro=./ro\nignore=.git\n"
               "net=ALLOW|tcp|10.0.2.2|8080|OUT\n")
    r = sb.run("--explain", "-c", "pass")
    assert r.returncode == 0, r
    out = r.stdout
    for line in ("#   namespaces: user, mount, PID, network, IPC, UTS, cgroup",
                 "#   processes: python-sb outside",
                 "#   files: nothing outside the new root, also not through /proc/self/fd",
                 f"#     ro   {sb.path('ro')}",
                 f"#     hide {sb.path('ro/.git')}",
                 "#     proc /proc",
                 "#     tmpfs /tmp",
                 "host loopback reachable (a rule names 10.0.2.2)",
                 "ip daddr 10.0.2.2 meta l4proto tcp th dport 8080 accept"):
        assert line in out, out
    assert "ignore=.git" in out and "[Python guard + kernel: access refused]" in out, out


# --------------------------------------------------------------------------
# The network: slirp4netns and nftables


class HostListener:
    """A TCP server on the host's 127.0.0.1, which the sandbox sees as
    10.0.2.2 when a rule names it."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]

    def received(self):
        try:
            conn, _ = self.sock.accept()
        except socket.timeout:
            return None
        with conn:
            conn.settimeout(2)
            return conn.recv(100)

    def close(self):
        self.sock.close()


def net_user(request):
    sb = request.getfixturevalue("sb" if request.param == "caller" else "sb_nobody")
    if tools_missing():
        pytest.skip(f"not installed: {tools_missing()} (scripts/deps.sh test installs them)")
    if not tun_usable_by(sb):
        pytest.skip("/dev/net/tun is not readable and writable by the sandbox's user here "
                    "(mode 0600; Debian's udev makes it 0666)")
    return sb


@pytest.fixture(params=["caller", "nobody"])
def netuser(request):
    return net_user(request)


def test_net_reaches_the_host_only_where_a_rule_allows(netuser):
    sb = netuser
    allowed, other = HostListener(), HostListener()
    try:
        r, o = run_native(sb, BASE + f"net=ALLOW|tcp|10.0.2.2|{allowed.port}|OUT\n", f'''
            def connect(host, port):
                def go():
                    c = socket.create_connection((host, port), timeout=3)
                    c.sendall(b"HELLO-" + str(port).encode())
                    c.close()
                return go
            py("allowed", connect("10.0.2.2", {allowed.port}))
            py("other port", connect("10.0.2.2", {other.port}))
            py("own loopback", connect("127.0.0.1", {allowed.port}))
            print("interfaces:", sorted(l.split(":")[0].strip()
                                        for l in open("/proc/self/net/dev").readlines()[2:]))
            ''')
        assert r.returncode == 0, r
        assert o["allowed"] == "OK", r
        # nftables refuses at once (a reset), nothing waits for a timeout;
        # 127.0.0.1 is the sandbox's own loopback, where nothing listens.
        assert o["other port"] == o["own loopback"] == "ECONNREFUSED", r
        assert o["interfaces"] == "['lo', 'tap0']", r
        assert allowed.received() == f"HELLO-{allowed.port}".encode()
        assert other.received() is None
    finally:
        allowed.close()
        other.close()


def check_data_sent_before_the_exit_arrives(sb, base):
    """4 MiB sent to a host's port, the socket closed and the program gone at
    once (os._exit): the host reads them all, then the end of stream."""
    size = 4 << 20
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(30)
    got = {}

    def read_all():
        conn, _ = server.accept()
        with conn:
            conn.settimeout(30)
            n = 0
            while chunk := conn.recv(1 << 16):
                n += len(chunk)
            got["bytes"] = n

    reader = threading.Thread(target=read_all)
    reader.start()
    try:
        port = server.getsockname()[1]
        r, o = run_native(sb, base + f"net=ALLOW|tcp|10.0.2.2|{port}|OUT\n", f'''
            c = socket.create_connection(("10.0.2.2", {port}), timeout=10)
            c.sendall(b"x" * {size})
            c.close()
            os._exit(0)
            ''')
        assert r.returncode == 0, r
        reader.join(timeout=60)
        assert got == {"bytes": size}, r
    finally:
        server.close()
        reader.join(timeout=60)


def test_net_data_sent_before_the_exit_arrives(netuser):
    """The host's end of a connection is slirp4netns, which the sandbox's
    exit stops: the bytes and the end of stream still in flight (in the
    namespace's socket, on tap0) arrive first, as with the kernel's own
    network, where a closed socket's data outlives its process."""
    check_data_sent_before_the_exit_arrives(netuser, BASE)


def test_net_wildcard_rule_does_not_open_the_hosts_loopback(sb):
    if tools_missing():
        pytest.skip(f"not installed: {tools_missing()}")
    listener = HostListener()
    try:
        r, o = run_native(sb, BASE + "net=ALLOW|tcp|*|*|OUT\n", f'''
            def go():
                socket.create_connection(("10.0.2.2", {listener.port}), timeout=3).close()
            py("host loopback", go)
            ''')
        assert r.returncode == 0, r
        assert o["host loopback"] == "ECONNREFUSED", r
        assert listener.received() is None
    finally:
        listener.close()


def test_net_pinned_names_are_in_etc_hosts(sb):
    if tools_missing():
        pytest.skip(f"not installed: {tools_missing()}")
    r, o = run_native(sb, BASE + "net=ALLOW|tcp|localhost|80|OUT\n"
                      "net=ALLOW|tcp|10.0.2.2|1|OUT\n", '''
        print("hosts:", open("/etc/hosts").read().replace("\\n", "|"))
        print("resolved:", socket.gethostbyname("localhost"))
        ''')
    assert r.returncode == 0, r
    assert "127.0.0.1\tlocalhost" in o["hosts"] and o["resolved"] == "127.0.0.1", r


def test_server_inside_is_unreachable_from_the_host(sb):
    """Binding is the guard's to refuse (the kernel does not filter it under
    unshare), but a server in the sandbox's namespace listens on its own
    loopback: nothing outside reaches it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = start(sb, f'''
        import socket, time
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("0.0.0.0", {port}))
        srv.listen()
        print("listening", flush=True)
        time.sleep(5)
        ''', BASE + f"net=ALLOW|tcp|*|{port}|IN\nnet=ALLOW|tcp|10.0.2.2|1|OUT\n")
    try:
        assert p.stdout.readline() == "listening\n", p.stderr.read()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=2)
    finally:
        p.kill()
        p.wait()


def test_missing_network_tools_name_their_debian_package(sb):
    """As root in a mount namespace of the test's own, where slirp4netns (or
    nft) is not executable: the run stops before anything starts, naming the
    package to install."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) to hide a program")
    for tool, package in (("slirp4netns", "slirp4netns"), ("nft", "nftables")):
        path = shutil.which(tool, path="/usr/sbin:/usr/bin:/sbin:/bin")
        if not path:
            pytest.skip(f"{tool} is not installed")
        marker = sb.path("RAN")
        sb.profile(BASE + "net=ALLOW|tcp|10.0.2.2|80|OUT\n")
        # Every directory python-sb looks in gets the same empty file over it.
        script = "".join(f"[ -e {d}/{tool} ] && mount --bind /dev/null {d}/{tool}; "
                         for d in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                   "/usr/bin", "/sbin", "/bin"))
        cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c",
               script + f'exec "$0" -c "open({str(marker)!r}, \'w\')"', sb.binary]
        p = subprocess.run(cmd, cwd=str(sb.root), capture_output=True, text=True,
                           env=dict(sb.env(), **SANITIZER_ENV), timeout=TIMEOUT)
        assert p.returncode == EXIT_CONFIG, p
        assert f"{tool} is not installed (Debian package {package})" in p.stderr, p
        assert not marker.exists()


# --------------------------------------------------------------------------
# Where user namespaces are refused


def test_refused_user_namespaces_fail_closed_naming_the_cause(sb):
    """In a user namespace of the test's own whose user.max_user_namespaces
    is 0, creating the sandbox's fails: the run stops (255), names the sysctl,
    and the program never runs."""
    if not shutil.which("unshare"):
        pytest.skip("unshare(1) is needed")
    marker = sb.path("RAN")
    sb.profile(BASE)
    cmd = ["unshare", "-Ur", "sh", "-c",
           'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" -c "$1"', sb.binary,
           f"open({str(marker)!r}, 'w')"]
    p = subprocess.run(cmd, cwd=str(sb.root), capture_output=True, text=True,
                       env=dict(sb.env(), **SANITIZER_ENV), timeout=TIMEOUT)
    assert p.returncode == EXIT_CONFIG, p
    assert "cannot create the sandbox's namespaces" in p.stderr, p
    assert "user.max_user_namespaces=0" in p.stderr, p
    assert not marker.exists()


def test_refused_by_a_seccomp_filter_fails_closed_naming_the_cause(sb):
    """Under another sandbox whose seccomp filter refuses unshare() (here
    python-sb's own, os-sandbox=subprocess): a clear error, nothing runs."""
    sb.mkdir("rw")
    marker = sb.path("rw/RAN")
    sb.write("inner.py-sandboxes", BASE + SANITIZERS + "expose-rw=./rw\n")
    r, o = run_native(sb, "os-sandbox=subprocess\npy-sandbox=false\n" + SANITIZERS +
                      "python-api=ALLOW:process-exec\n", f'''
        import subprocess
        p = subprocess.run([sys.executable, "--pysandboxes-config", "inner.py-sandboxes", "-c",
                            "open({str(marker)!r}, 'w')"], capture_output=True, text=True)
        print("rc:", p.returncode)
        print("err:", p.stderr.strip())
        ''')
    assert r.returncode == 0, r
    assert o["rc"] == str(EXIT_CONFIG), r
    assert "cannot create the sandbox's namespaces: Operation not permitted" in o["err"], r
    assert "a seccomp filter or a container refuses unshare()" in o["err"], r
    assert not marker.exists()


@not_under_asan
def test_fd_limit_fails_closed(sb):
    marker = sb.path("RAN")
    sb.profile(BASE)
    cmd = ["prlimit", "--nofile=5:5", sb.binary, "-c", f"open({str(marker)!r}, 'w')"]
    p = subprocess.run(cmd, cwd=str(sb.root), capture_output=True, text=True,
                       env=sb.env(), timeout=TIMEOUT)
    assert p.returncode == EXIT_CONFIG, p
    assert "the sandbox cannot be applied" in p.stderr and "Too many open files" in p.stderr, p
    assert not marker.exists()


def test_learning_runs_under_subprocess(sb):
    """Learning records what the rules would refuse: a kernel that refused it
    first would leave nothing to record (spec section 6)."""
    learned = sb.path("learned.py-sandboxes")
    sb.profile("os-sandbox=unshare\npython-import=json\n")
    r = sb.run(f"--learn={learned}", "-c", "import os; print(os.getpid() != 2)")
    assert (r.returncode, r.stdout) == (0, "True\n"), r
    assert ("os-sandbox=subprocess is forced (os-sandbox=unshare does not apply while "
            "learning)") in r.stderr, r
    assert "python-import=os" in learned.read_text()
