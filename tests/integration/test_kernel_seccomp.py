# SPDX-License-Identifier: MIT
"""The seccomp filter, which every provider but `none` installs: under
os-sandbox=subprocess (no Landlock) with py-sandbox=false only seccomp can
refuse, and os-sandbox=none is the control where the same native calls
succeed. Each refusal is checked by its errno and by the missing effect."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import (EXIT_CONFIG, SANITIZER_ENV, TIMEOUT, needs_landlock, run_native)


SUBPROCESS = "os-sandbox=subprocess\npy-sandbox=false\n"
NONE = "os-sandbox=none\npy-sandbox=false\n"


@pytest.fixture
def listener():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.settimeout(0.3)
    yield s
    s.close()


def received(listener):
    try:
        conn, _ = listener.accept()
    except socket.timeout:
        return None
    with conn:
        conn.settimeout(1)
        return conn.recv(100)


CONNECT = '''
def connect():
    c = socket.create_connection(("127.0.0.1", {port}), timeout=2)
    c.sendall(b"REACHED")
    c.close()
attempt("socket", libc.socket, socket.AF_INET, socket.SOCK_STREAM, 0)
py("connect", connect)
'''


def test_inet_socket_refused_without_net_rule(sb, listener):
    port = listener.getsockname()[1]
    r, o = run_native(sb, SUBPROCESS, CONNECT.format(port=port))
    assert r.returncode == 0, r
    assert o == {"socket": "EPERM", "connect": "EPERM"}, r
    assert received(listener) is None


def test_inet_socket_control_under_none(sb, listener):
    """Control: os-sandbox=none installs no filter, the same program connects."""
    port = listener.getsockname()[1]
    r, o = run_native(sb, NONE, CONNECT.format(port=port))
    assert o == {"socket": "OK", "connect": "OK"}, r
    assert received(listener) == b"REACHED"


def test_filter_holds_with_the_guard_on(sb, listener):
    """py-sandbox=true with every import allowed: the guard refuses first,
    naming the rule (issue 17, item 3), and the kernel still refuses native
    code."""
    port = listener.getsockname()[1]
    r = sb.run_code("os-sandbox=subprocess\npython-import=*\npython-api=ALLOW:native\n", f'''
        import ctypes, socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=2)
        except ConnectionRefusedError as e:
            print("guard", type(e).__name__, "net=ALLOW|tcp|" in str(e))
        libc = ctypes.CDLL(None, use_errno=True)
        print("kernel", libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0), ctypes.get_errno())
        ''')
    assert (r.returncode, r.stdout) == (
        0, "guard RuleSocketConnectionRefusedError True\nkernel -1 1\n"), r
    assert received(listener) is None


def test_net_rule_allows_inet_under_subprocess(sb, listener):
    """Without Landlock the port is not the kernel's to check: any net= ALLOW
    rule opens socket(AF_INET, SOCK_STREAM)."""
    port = listener.getsockname()[1]
    r, o = run_native(sb, SUBPROCESS + f"net=ALLOW|tcp|127.0.0.1|{port}|OUT\n",
                      CONNECT.format(port=port) + '''
attempt("dgram", libc.socket, socket.AF_INET, socket.SOCK_DGRAM, 0)
attempt("raw", libc.socket, socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
''')
    assert o == {"socket": "OK", "connect": "OK", "dgram": "EPERM", "raw": "EPERM"}, r
    assert received(listener) == b"REACHED"


@pytest.mark.parametrize("profile, unix", [
    (SUBPROCESS, "EPERM"),
    (SUBPROCESS + "expose-ro=./d\n", "EPERM"),
    # Nothing would check the socket path with py-sandbox=false, so even a
    # writable grant gives native code no AF_UNIX socket.
    (SUBPROCESS + "expose-rw=./d\n", "EPERM"),
])
def test_unix_socket_needs_a_writable_grant(sb, profile, unix):
    sb.mkdir("d")
    r, o = run_native(sb, profile, '''
        attempt("unix", libc.socket, socket.AF_UNIX, socket.SOCK_STREAM, 0)
        fds = (ctypes.c_int * 2)()
        attempt("socketpair", libc.socketpair, socket.AF_UNIX, socket.SOCK_STREAM, 0, fds)
        attempt("netlink", libc.socket, socket.AF_NETLINK, socket.SOCK_RAW, 0)
        ''')
    assert r.returncode == 0, r
    assert o == {"unix": unix, "socketpair": "OK", "netlink": "EPERM"}, r


FORK = '''
def child_marks(pid):
    if pid == 0:
        open({marker!r}, "w").write("child")
        os._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
child_marks(attempt("fork", libc.fork))
child_marks(attempt("SYS_fork", libc.syscall, 57))
'''


def test_fork_refused_under_subprocess(sb):
    marker = sb.path("CHILD-RAN")
    r, o = run_native(sb, SUBPROCESS, FORK.format(marker=str(marker)))
    assert r.returncode == 0, r
    assert o == {"fork": "EPERM", "SYS_fork": "EPERM"}, r
    time.sleep(0.1)
    assert not marker.exists()


def test_fork_control_under_none(sb):
    marker = sb.path("CHILD-RAN")
    r, o = run_native(sb, NONE, FORK.format(marker=str(marker)))
    assert o == {"fork": "OK", "SYS_fork": "OK"}, r
    assert marker.read_text() == "child"


def test_exec_refused_and_granted_under_subprocess(sb):
    marker = sb.path("EXEC-RAN")
    body = f'''
        import subprocess
        py("run", lambda: subprocess.run(["/bin/sh", "-c", "echo x > {marker}"]))
        '''
    r, o = run_native(sb, SUBPROCESS, body)
    assert o == {"run": "EPERM"}, r
    assert not marker.exists()
    # Without Landlock, the shell's redirection needs an expose-rw rule:
    # nothing else checks which file it opens for writing.
    r, o = run_native(sb, SUBPROCESS + "python-api=ALLOW:process-exec\n", body)
    assert o == {"run": "OK"}, r
    assert "Operation not permitted" in r.stderr, r
    assert not marker.exists()
    r, o = run_native(sb, SUBPROCESS + "python-api=ALLOW:process-exec\nexpose-rw=.\n", body)
    assert o == {"run": "OK"}, r
    assert marker.read_text() == "x\n"


def test_a_single_process_exec_function_lifts_the_process_rules(sb):
    """The kernel follows the python-api answer for the category: one
    granted function (os.fork here) is enough."""
    r, o = run_native(sb, SUBPROCESS + "python-api=ALLOW:os.fork\n", '''
        pid = attempt("fork", libc.fork)
        if pid == 0:
            os._exit(5)
        print("child:", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        ''')
    assert o == {"fork": "OK", "child": "5"}, r


def test_ptrace_refused_under_subprocess(sb):
    victim = subprocess.Popen(["sleep", "30"])
    try:
        r, o = run_native(sb, SUBPROCESS + "python-api=ALLOW:process-exec\n", f'''
            attempt("ptrace attach", libc.ptrace, 16, {victim.pid}, None, None)
            attempt("ptrace traceme", libc.ptrace, 0, 0, None, None)
            buf = ctypes.create_string_buffer(8)
            class iovec(ctypes.Structure):
                _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
            local, remote = iovec(ctypes.addressof(buf), 8), iovec(0x400000, 8)
            attempt("process_vm_readv", libc.process_vm_readv, {victim.pid},
                    ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
            ''')
        assert o == {"ptrace attach": "EPERM", "ptrace traceme": "EPERM",
                     "process_vm_readv": "EPERM"}, r
        with open(f"/proc/{victim.pid}/status") as f:
            assert "TracerPid:\t0\n" in f.read()
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


SYSCALLS = {"unshare(0)": (272, 0), "io_uring_setup": (425, 0), "bpf": (321, 0),
            "perf_event_open": (298, 0), "userfaultfd": (323, 0), "keyctl": (250, 0),
            "mount": (165, 0), "setns": (308, 0), "chroot": (161, 0), "shmget": (29, 0),
            "semget": (64, 0), "msgsnd": (69, 0), "mq_unlink": (241, 0),
            "pidfd_getfd": (438, 0), "kexec_load": (246, 0), "quotactl": (179, 0)}


def test_attack_surface_refused_under_subprocess(sb):
    body = "".join(f'attempt({n!r}, libc.syscall, {nr}, {a}, 0, 0, 0)\n'
                   for n, (nr, a) in SYSCALLS.items())
    r, o = run_native(sb, SUBPROCESS + "python-api=ALLOW:process-exec\n"
                      "net=ALLOW|tcp,udp|*|*|IN,OUT\nexpose-rw=.\n", body)
    assert r.returncode == 0, r
    assert o == {n: "EPERM" for n in SYSCALLS}, r


def test_attack_surface_control_under_none(sb):
    """The harmless probes succeed or fail for their own reasons without the
    filter (unshare(0) does nothing and returns 0)."""
    r, o = run_native(sb, NONE, '''
        attempt("unshare(0)", libc.syscall, 272, 0)
        attempt("chroot(NULL)", libc.syscall, 161, 0)
        ''')
    assert o == {"unshare(0)": "OK", "chroot(NULL)": "EFAULT"}, r


FOREIGN = '''
import mmap
if sys.argv[1] == "x32":
    # An x32 syscall number (bit 30) through the native instruction.
    libc.syscall(ctypes.c_long(0x40000000 + 39))
else:
    # mov eax, 20 (i386 getpid); int 0x80; ret
    code = bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3])
    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(code)
    f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
    f()
print("SURVIVED")
'''


_I386_WORKS = None


def skip_without_i386_syscalls():
    """Some virtual machines (this project's CI runs on Firecracker with PVM)
    end every `int 0x80` in SIGSEGV whatever the process: then there is no
    32-bit system call for the filter to stop. Checked with the plain
    interpreter, outside any sandbox."""
    global _I386_WORKS
    if _I386_WORKS is None:
        probe = "import ctypes, sys\n" + FOREIGN.replace("sys.argv[1]", "'i386'")
        r = subprocess.run(["/usr/bin/python3", "-c", probe], capture_output=True,
                           text=True, timeout=TIMEOUT)
        _I386_WORKS = r.stdout == "SURVIVED\n"
    if not _I386_WORKS:
        pytest.skip("this kernel runs no i386 system calls (int 0x80 ends in SIGSEGV "
                    "without any sandbox)")


@pytest.mark.parametrize("abi", ["i386", "x32"])
def test_foreign_abi_kills_the_process(sb, abi):
    if os.uname().machine != "x86_64":
        pytest.skip("x86_64 only")
    if abi == "i386":
        skip_without_i386_syscalls()
    r, _ = run_native(sb, SUBPROCESS, FOREIGN, abi)
    assert r.returncode == -signal.SIGSYS, r
    assert "SURVIVED" not in r.stdout
    assert not list(sb.path().glob("core*"))


def test_foreign_abi_control_under_none(sb):
    if os.uname().machine != "x86_64":
        pytest.skip("x86_64 only")
    skip_without_i386_syscalls()
    r, _ = run_native(sb, NONE, FOREIGN, "i386")
    assert (r.returncode, r.stdout) == (0, "SURVIVED\n"), r


def test_explain_describes_the_filter(sb):
    sb.profile(SUBPROCESS)
    out = sb.run("--explain", "-c", "pass").stdout
    assert "#   no Landlock ruleset with this provider" in out
    assert "#   seccomp: an allowlist; anything else fails with EPERM" in out
    assert "#   seccomp allows, its own memory: brk, mmap, munmap" in out
    assert ("#   seccomp refuses whatever the rules, reaching into other processes: "
            "ptrace,") in out
    assert ("#   seccomp refuses (needs python-api=ALLOW:process-exec), starting processes: "
            "fork, vfork") in out
    assert ("#   seccomp refuses (needs an expose-rw rule), creating, renaming, removing "
            "files: mkdir,") in out
    assert "open, openat read-only (no write access, O_CREAT" in out
    assert "clone: threads only, no CLONE_NEW* flag" in out
    assert "kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo: this process only" in out
    assert ("AF_UNIX refused (needs an expose-rw rule and py-sandbox=true); "
            "AF_INET/AF_INET6 refused (no net= rule)") in out
    sb.mkdir("d")
    sb.profile("os-sandbox=subprocess\nexpose-rw=./d\nnet=ALLOW|tcp|*|443|OUT\n"
               "python-api=ALLOW:process-exec\n")
    out = sb.run("--explain", "-c", "pass").stdout
    assert ("AF_UNIX allowed (the Python guard checks the socket path); AF_INET/AF_INET6 "
            "SOCK_STREAM (TCP) only (no udp net= rule)") in out
    assert "seccomp refuses (needs" not in out
    assert "#   seccomp allows, starting processes: fork, vfork" in out
    assert "kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo: any pid but -1" in out
    sb.profile("os-sandbox=landlock\n")
    out = sb.run("--explain", "-c", "pass").stdout
    assert "open, openat with any flags (Landlock decides which files" in out
    sb.profile(NONE)
    out = sb.run("--explain", "-c", "pass").stdout
    assert "#   no seccomp filter with os-sandbox=none" in out
    assert "seccomp allows" not in out


# --------------------------------------------------------------------------
# Fail closed


@pytest.mark.parametrize("provider", [pytest.param("landlock", marks=needs_landlock),
                                      "subprocess"])
def test_tiny_memory_limit_is_applied_after_the_boundary(sb, provider):
    """limit-memory is set after the Landlock ruleset and the seccomp filter
    are in place (building them needs memory), so a tiny limit cannot make
    python-sb fail while applying its boundary. Whatever the interpreter then
    manages, it never dies of a signal and never runs outside the filter."""
    sb.mkdir("rw")
    r, o = run_native(sb, f"os-sandbox={provider}\npy-sandbox=false\nexpose-rw=./rw\n"
                      "limit-memory=2MB\n", '''
        print("RAN")
        attempt("inet", libc.socket, socket.AF_INET, socket.SOCK_STREAM, 0)
        ''')
    assert r.returncode >= 0, r
    if "RAN" in r.stdout:
        assert o.get("inet") == "EPERM", r
    else:
        assert r.returncode in (1, EXIT_CONFIG), r

# --------------------------------------------------------------------------
# The filter holds before any Python code runs, and a load that fails stops
# everything.

# Threads: python-sb starts none; a busy machine may take a while to reap one
# that a change did start: it must be gone soon, not at once.
START_UP_STATUS = """
import time
def status():
    with open("/proc/self/status") as f:
        return {k: v.strip() for k, v in (line.split(":", 1) for line in f.read().splitlines())}
d = status()
for _ in range(200):
    if status()["Threads"] == "1":
        break
    time.sleep(0.01)
d["Threads"] = status()["Threads"]
print("start-up:", " ".join(f"{k}={d[k]}"
                            for k in ("Seccomp", "Seccomp_filters", "NoNewPrivs", "Threads")))
"""


@pytest.mark.parametrize("guard", ["true", "false"])
@pytest.mark.parametrize("provider", ["subprocess", pytest.param("landlock", marks=needs_landlock)])
@pytest.mark.parametrize("who", ["root", "nobody"])
def test_filter_holds_when_start_up_code_runs(request, who, provider, guard):
    """sitecustomize, the earliest Python code of a run (imported by site
    while the interpreter starts), finds the filter in force and no thread
    but its own; os-sandbox=none is the control."""
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    site = sb.mkdir("site")
    sb.write("site/sitecustomize.py", START_UP_STATUS)
    common = f"python-import=*\nexpose-ro={site}\nenv=PYTHONPATH={site}\n"
    r = sb.run_code(f"os-sandbox={provider}\npy-sandbox={guard}\n" + common, 'print("RAN")')
    assert r.returncode == 0, r
    assert r.stdout == ("start-up: Seccomp=2 Seccomp_filters=1 NoNewPrivs=1 Threads=1\nRAN\n"), r
    control = sb.run_code("os-sandbox=none\npy-sandbox=false\n" + common, 'print("RAN")')
    assert control.stdout.startswith("start-up: Seccomp=0 Seccomp_filters=0"), control


# Runs argv[1:] under a filter that refuses seccomp() itself, as a container's
# or another sandbox's may: python-sb's own filter then cannot be loaded.
REFUSE_SECCOMP = """
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
insn = lambda code, k, jt=0, jf=0: struct.pack("HBBI", code, jt, jf, k)
prog = b"".join([insn(0x20, 0),                    # A = syscall number
                 insn(0x15, 317, 0, 1),            # seccomp?
                 insn(0x06, 0x00050000 | 1),       # ERRNO(EPERM)
                 insn(0x06, 0x7fff0000)])          # ALLOW
buf = ctypes.create_string_buffer(prog)
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fprog = Fprog(len(prog) // 8, ctypes.addressof(buf))
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0):
    sys.exit(f"cannot install the test filter: errno {ctypes.get_errno()}")
os.execv(sys.argv[1], sys.argv[1:])
"""


@pytest.mark.parametrize("guard", ["true", "false"])
@pytest.mark.parametrize("who", ["root", "nobody"])
def test_a_filter_that_cannot_be_loaded_stops_the_run(request, who, guard):
    """Neither start-up code (sitecustomize) nor the program runs, with the
    guard or without: the interpreter does not start. The error names the
    system call and the errno."""
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    site, rw = sb.mkdir("site"), sb.mkdir("rw")
    sb.write("site/sitecustomize.py", f"open({str(rw / 'STARTED')!r}, 'w').close()\n")
    helper = sb.write("refuse_seccomp.py", REFUSE_SECCOMP)
    sb.profile(f"os-sandbox=subprocess\npy-sandbox={guard}\npython-import=*\n"
               f"expose-ro={site}\nexpose-rw={rw}\nenv=PYTHONPATH={site}\n")
    program = sb.write("s.py", f"open({str(rw / 'RAN')!r}, 'w').close()\n")
    p = subprocess.run(sb.prefix + [sys.executable, str(helper), sb.binary, str(program)],
                       cwd=str(sb.root), capture_output=True, text=True, timeout=TIMEOUT,
                       env=dict(sb.env(), **SANITIZER_ENV), stdin=subprocess.DEVNULL)
    assert p.returncode == EXIT_CONFIG, p
    assert "seccomp(SECCOMP_SET_MODE_FILTER): Operation not permitted" in p.stderr, p
    assert sorted(os.listdir(rw)) == [], p
