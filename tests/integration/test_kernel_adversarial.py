# SPDX-License-Identifier: MIT
"""Adversarial native programs against the kernel layer alone (issue 12,
findings 3 and 7): py-sandbox=false, so no Python guard; raw syscall() through
ctypes, so no libc wrapper between the program and the filter. Every attack of
the review, and its class: each asserts the errno, and where there is an
effect to miss, that it did not happen (the victim outside the sandbox kept
its CPUs, scheduling policy, limits, life; the file outside every grant kept
its mode, owner, times and attributes; the host name stayed). The kernel
providers (landlock, unshare) and subprocess's filter alone, as the caller
(root in CI) and as nobody; the victim runs as the same user as the program,
so only the filter (and unshare's namespaces) stands between them."""

import errno
import os
import socket
import subprocess
import time

import pytest

from conftest import SANITIZER_ENV, needs_landlock, needs_userns, run_native

if os.uname().machine != "x86_64":
    pytest.skip("the syscall numbers below are x86_64's", allow_module_level=True)

PROVIDERS = [pytest.param("landlock", marks=needs_landlock), "subprocess",
             pytest.param("unshare", marks=needs_userns)]
WHO = ["caller", "nobody"]


@pytest.fixture(params=WHO)
def box(request, sb, sb_nobody):
    return sb if request.param == "caller" else sb_nobody


@pytest.fixture
def victim(box):
    """A process outside the sandbox, of the same user as the program."""
    p = subprocess.Popen(box.prefix + ["sleep", "60"])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # until setpriv has exec'd sleep
        try:
            if open(f"/proc/{p.pid}/comm").read().strip() == "sleep":
                break
        except OSError:
            pass
        time.sleep(0.01)
    yield p.pid
    p.kill()
    p.wait()


def victim_state(pid):
    status = open(f"/proc/{pid}/status").read()
    cpus = [l for l in status.splitlines() if l.startswith("Cpus_allowed_list")][0]
    return (cpus, os.sched_getscheduler(pid), open(f"/proc/{pid}/limits").read(),
            os.getpriority(os.PRIO_PROCESS, pid))


# x86_64 numbers: the point is to bypass every wrapper.
NR = dict(ioctl=16, sched_setscheduler=144, sched_setaffinity=203, modify_ldt=154,
          prctl=157, setpriority=141, kill=62, tgkill=234, chmod=90, fchmod=91, chown=92,
          utimensat=280, setxattr=188, fsetxattr=190, memfd_create=319, personality=135,
          unshare=272, clone=56, clone3=435, mount=165, ptrace=101, process_vm_readv=310,
          pidfd_open=434, io_uring_setup=425, bpf=321, perf_event_open=298, userfaultfd=323,
          inotify_init1=294, fanotify_init=300, keyctl=250, sethostname=170,
          clock_settime=227, prlimit64=302, socket=41, openat=257, fcntl=72, statmount=457,
          listmount=458, mseal=462, shmget=29, mq_open=240, add_key=248, syslog=103,
          settimeofday=164, setns=308, kcmp=312, migrate_pages=256, move_pages=279,
          getpgid=121, getsid=124, getpriority=140)

ATTACKS = '''
victim = int(sys.argv[1])
outside = sys.argv[2]
nr = {nr!r}
S = lambda n, *a: attempt(n, libc.syscall, nr[n.split("(")[0]], *a)
buf = ctypes.create_string_buffer(256)
cpus = (ctypes.c_ulong * 16)()
# Finding 3, and its class.
S("modify_ldt", 1, buf, 16)
S("prctl(PR_SET_MM)", 35, 1, ctypes.c_ulong(0x400000), 0, 0)         # PR_SET_MM_START_CODE
S("prctl(PR_SET_DUMPABLE)", 4, 1, 0, 0, 0)
S("prctl(PR_SET_PTRACER)", 0x59616d61, -1, 0, 0, 0)
S("fanotify_init", 0, 0)
S("inotify_init1", 0)
S("sethostname", b"pwned", 5)
S("clock_settime", 0, buf)
S("settimeofday", buf, None)
S("sched_setaffinity(victim)", victim, 8, cpus)                       # an empty set
S("sched_setscheduler(victim)", victim, 5, buf)                       # SCHED_IDLE
S("prlimit64(victim)", victim, 0, buf, None)                          # RLIMIT_CPU = 0
S("setpriority(victim)", 0, victim, 19)
S("prlimit64(victim, read)", victim, 7, None, buf)                   # RLIMIT_NOFILE
S("getpgid(victim)", victim)
S("getsid(victim)", victim)
S("getpriority(victim)", 0, victim)                                   # PRIO_PROCESS
S("kill(victim)", victim, 0)
S("kill(-1)", -1, 0)
S("tgkill(victim)", victim, victim, 0)
S("ptrace(victim)", 16, victim, 0, 0)                                 # PTRACE_ATTACH
S("process_vm_readv(victim)", victim, buf, 1, buf, 1, 0)
S("pidfd_open(victim)", victim, 0)
S("kcmp(victim)", os.getpid(), victim, 0, 0, 0)
S("migrate_pages(victim)", victim, 64, cpus, cpus)
S("move_pages(victim)", victim, 0, None, None, None, 0)
S("chmod(outside)", outside.encode(), 0o777)
S("chown(outside)", outside.encode(), os.getuid(), os.getgid())
S("utimensat(outside)", -100, outside.encode(), None, 0)
S("setxattr(outside)", outside.encode(), b"user.pwned", b"x", 1, 0)
try:  # readable under subprocess; Landlock refuses it, unshare's root lacks it (then stdin)
    fd = os.open(outside, os.O_RDONLY)
except (PermissionError, FileNotFoundError):
    fd = 0
S("fchmod(readable)", fd, 0o777)
S("fchmod(stdin)", 0, 0o777)
S("fsetxattr(stdin)", 0, b"user.pwned", b"x", 1, 0)
S("memfd_create", b"x", 0)
S("shmget", 0, 4096, 0o1600)
S("mq_open", b"/pwned", 0o100, 0o600, None)
S("ioctl(TIOCSTI)", 0, 0x5412, b"x")
S("ioctl(TIOCSTI | 1 << 32)", 0, ctypes.c_ulong(0x5412 | 1 << 32), b"x")
S("ioctl(TIOCLINUX)", 0, 0x541C, buf)
S("personality(READ_IMPLIES_EXEC)", 0x0400000)
S("unshare(CLONE_NEWUSER)", 0x10000000)
S("setns", 0, 0)
S("clone(CLONE_NEWUSER)", 0x10000000 | 17, None, None, None, 0)
S("clone3", buf, 88)
S("mount", b"none", b"/tmp", b"tmpfs", 0, None)
S("io_uring_setup", 8, buf)
S("bpf", 0, buf, 16)
S("perf_event_open", buf, 0, -1, -1, 0)
S("userfaultfd", 0)
S("keyctl", 0, 0)
S("add_key", b"user", b"x", b"x", 1, -4)
S("syslog", 3, buf, 256)
S("socket(AF_NETLINK)", 16, 3, 0)
S("socket(AF_PACKET)", 17, 3, 0)
S("socket(AF_INET)", 2, 1, 0)
a, b = socket.socketpair()
S("fcntl(F_SETOWN, victim)", a.fileno(), 8, victim)
S("fcntl(F_SETSIG)", a.fileno(), 10, 9)
S("fcntl(F_SETLEASE)", fd, 1024, 0)
S("statmount", buf, buf, 256, 0)
S("listmount", buf, buf, 8, 0)
S("mseal", 0, 4096, 0)
S("openat(O_CREAT)", -100, (os.path.dirname(outside) + "/created").encode(), 0o101, 0o644)
print("SURVIVED")
'''

EPERM = "EPERM"
WANT = {name: EPERM for name in (
    "modify_ldt", "prctl(PR_SET_MM)", "prctl(PR_SET_DUMPABLE)", "prctl(PR_SET_PTRACER)",
    "fanotify_init", "inotify_init1", "sethostname", "clock_settime", "settimeofday",
    "sched_setaffinity(victim)", "sched_setscheduler(victim)", "prlimit64(victim)",
    "setpriority(victim)", "prlimit64(victim, read)", "getpgid(victim)", "getsid(victim)",
    "getpriority(victim)", "kill(victim)", "kill(-1)", "tgkill(victim)", "ptrace(victim)",
    "process_vm_readv(victim)", "pidfd_open(victim)", "kcmp(victim)",
    "migrate_pages(victim)", "move_pages(victim)", "chmod(outside)", "chown(outside)",
    "utimensat(outside)", "setxattr(outside)", "fchmod(readable)", "fchmod(stdin)",
    "fsetxattr(stdin)", "memfd_create", "shmget", "mq_open", "ioctl(TIOCSTI)",
    "ioctl(TIOCSTI | 1 << 32)", "ioctl(TIOCLINUX)", "personality(READ_IMPLIES_EXEC)",
    "unshare(CLONE_NEWUSER)", "setns", "clone(CLONE_NEWUSER)", "mount", "io_uring_setup",
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "syslog",
    "socket(AF_NETLINK)", "socket(AF_PACKET)", "socket(AF_INET)",
    "fcntl(F_SETOWN, victim)", "fcntl(F_SETSIG)", "fcntl(F_SETLEASE)")}
# libc falls back from these (ENOSYS: "an older kernel"); statmount, listmount
# and mseal are newer than libseccomp 2.5.4's table.
WANT.update({"clone3": "ENOSYS", "statmount": "ENOSYS", "listmount": "ENOSYS",
             "mseal": "ENOSYS"})


def stat_of(path):
    st = os.stat(path)
    return (st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns, os.listxattr(path))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_native_attacks_on_the_kernel_layer(box, victim, provider, tmp_path):
    outside_dir = box.mkdir("outside")  # no grant names it
    outside = box.write("outside/data.txt", "not yours\n")
    os.chmod(outside, 0o644)
    before = (stat_of(outside), victim_state(victim), socket.gethostname())
    box.profile(f"os-sandbox={provider}\npy-sandbox=false\n")
    # stdin is a file of the caller's: the fchmod(stdin) target.
    stdin_file = box.write("stdin.txt", "input\n")
    os.chmod(stdin_file, 0o644)
    s = box.write("s.py", __import__("conftest").NATIVE_PRELUDE +
                  ATTACKS.format(nr=NR), dedent=False)
    with open(stdin_file) as stdin:
        proc = subprocess.run(box.prefix + [box.binary, str(s), str(victim), str(outside)],
                              cwd=box.root, env={**box.env(), **SANITIZER_ENV}, stdin=stdin,
                              capture_output=True,
                              text=True, timeout=60)
    o = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    assert proc.returncode == 0 and proc.stdout.endswith("SURVIVED\n"), proc
    got = {k: o.get(k) for k in WANT}
    assert got == WANT, {k: (o.get(k), v) for k, v in WANT.items() if o.get(k) != v}
    # Creating a file outside every grant: Landlock's EACCES, unshare's new
    # root that has no such directory, or with neither the allowlist's EPERM
    # (no expose-rw rule).
    created = {"landlock": "EACCES", "unshare": "ENOENT"}.get(provider, EPERM)
    assert o["openat(O_CREAT)"] == created, proc
    assert not (outside_dir / "created").exists()
    after = (stat_of(outside), victim_state(victim), socket.gethostname())
    assert after == before
    assert os.stat(stdin_file).st_mode & 0o777 == 0o644


@pytest.mark.parametrize("provider", PROVIDERS)
def test_control_the_same_calls_under_none(box, victim, provider):
    """os-sandbox=none loads no filter: the harmless probes reach the kernel
    and answer for themselves (the test above is not blind)."""
    r, o = run_native(box, "os-sandbox=none\npy-sandbox=false\n", f'''
        attempt("kill(victim)", libc.syscall, 62, {victim}, 0)
        attempt("memfd_create", libc.syscall, 319, b"x", 0)
        attempt("inotify_init1", libc.syscall, 294, 0)
        attempt("modify_ldt(read)", libc.syscall, 154, 0, ctypes.create_string_buffer(16), 16)
        ''')
    assert o == {"kill(victim)": "OK", "memfd_create": "OK", "inotify_init1": "OK",
                 "modify_ldt(read)": "OK"}, r


@pytest.mark.parametrize("provider", PROVIDERS)
def test_what_cpython_needs_still_works(box, provider):
    """The allowlist is not a wall: a realistic program (imports, json, re,
    statistics, decimal, threads, an asyncio event loop, hashing, compression,
    sqlite in memory, mmap, signals to itself, select, a socketpair, reading
    its own files) runs under it, as root and as nobody."""
    box.write("data.json", '{"values": [3, 1, 4, 1, 5, 9, 2, 6]}')
    r = box.run_code(f"os-sandbox={provider}\npy-sandbox=false\nexpose-ro=.\n", '''
        import asyncio, bz2, concurrent.futures, decimal, hashlib, json, lzma, mmap, os
        import re, select, signal, socket, sqlite3, statistics, threading, time, zlib
        data = json.load(open("data.json"))["values"]
        print(statistics.mean(data), statistics.median(data))
        print(decimal.Decimal(1) / decimal.Decimal(7))
        print(re.findall(r"\\d+", "a1b22c333"))
        t = threading.Thread(target=lambda: None); t.start(); t.join()
        with concurrent.futures.ThreadPoolExecutor(4) as ex:
            print(sum(ex.map(lambda x: x * x, range(100))))
        async def main():
            await asyncio.sleep(0.01)
            q = asyncio.Queue(); await q.put(7); return await q.get()
        print(asyncio.run(main()))
        print(hashlib.sha256(b"x").hexdigest()[:8], len(zlib.compress(b"x" * 1000)),
              len(bz2.compress(b"y" * 100)), len(lzma.compress(b"z" * 100)))
        c = sqlite3.connect(":memory:"); c.execute("create table t(x)")
        c.executemany("insert into t values (?)", [(i,) for i in range(10)])
        print(c.execute("select sum(x) from t").fetchone()[0])
        m = mmap.mmap(-1, 4096); m.write(b"abc"); m.close()
        got = []
        signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
        os.kill(os.getpid(), signal.SIGUSR1)
        signal.raise_signal(signal.SIGUSR1)
        a, b = socket.socketpair(); a.send(b"ping")
        print(select.select([b], [], [], 1)[0] == [b], b.recv(4), len(got))
        os.sched_setaffinity(0, os.sched_getaffinity(0)); os.nice(0)
        print(sorted(os.listdir("."))[:2], time.monotonic() > 0, len(os.urandom(8)))
        # Landlock or the new root decides which files may be written
        # (/dev/null may); without them nothing checks paths, and writing
        # needs expose-rw.
        try:
            with open(os.devnull, "w") as f:
                print("devnull", file=f)
            print("devnull: written")
        except PermissionError as e:
            print("devnull:", e.errno)
        ''')
    assert r.returncode == 0, r
    assert r.stdout.splitlines() == [
        "3.875 3.5", "0.1428571428571428571428571429", "['1', '22', '333']", "328350", "7",
        "2d711642 17 39 68", "45", "True b'ping' 2", "['.py-sandboxes', 'data.json'] True 8",
        # The new root's /dev/null is a device of its own, as writable.
        "devnull: written" if provider in ("landlock", "unshare") else f"devnull: {errno.EPERM}",
    ], r


@pytest.mark.parametrize("provider", PROVIDERS)
def test_no_set_id_program_left_behind(box, provider):
    """A program with an expose-rw rule writes an executable and marks it
    set-user-ID or set-group-ID: the file outlives the sandbox, and whoever
    may run it from that directory runs it as the sandbox's user (as root
    without capabilities, a setuid-root binary). chmod, fchmod and fchmodat
    refuse those bits (EPERM), on the low 16 bits the kernel reads; every
    other mode, the sticky bit of a directory included, stays allowed."""
    box.mkdir("rw")
    r, o = run_native(box, f"os-sandbox={provider}\npy-sandbox=false\nexpose-rw=./rw\n", '''
        with open("rw/tool", "w") as f:
            f.write("#!/bin/sh\\nid\\n")
        fd = os.open("rw/tool", os.O_RDONLY)
        attempt("chmod(4755)", libc.syscall, 90, b"rw/tool", 0o4755)
        attempt("chmod(2755)", libc.syscall, 90, b"rw/tool", 0o2755)
        attempt("fchmod(6755)", libc.syscall, 91, fd, 0o6755)
        attempt("fchmodat(4755)", libc.syscall, 268, -100, b"rw/tool", 0o4755, 0)
        attempt("chmod(4755 | 1 << 32)", libc.syscall, 90, b"rw/tool",
                ctypes.c_ulong(0o4755 | 1 << 32))
        attempt("chmod(755)", libc.syscall, 90, b"rw/tool", 0o755)
        os.mkdir("rw/shared")
        attempt("chmod(dir, 1777)", libc.syscall, 90, b"rw/shared", 0o1777)
        ''')
    assert r.returncode == 0, r
    assert o == {"chmod(4755)": "EPERM", "chmod(2755)": "EPERM", "fchmod(6755)": "EPERM",
                 "fchmodat(4755)": "EPERM", "chmod(4755 | 1 << 32)": "EPERM",
                 "chmod(755)": "OK", "chmod(dir, 1777)": "OK"}, r
    assert os.stat(box.path("rw/tool")).st_mode & 0o7777 == 0o755
    assert os.stat(box.path("rw/shared")).st_mode & 0o7777 == 0o1777
