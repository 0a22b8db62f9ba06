#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/qemu-snapshot.sh's measurement (run by it, in its working directory:
the guest's init and job built there). Method: bench/qemu-snapshot.sh and
bench/README.md, "A template VM restored per run"."""
import json, os, select, socket, statistics, subprocess, time

runs, kernel, sb = int(os.environ["RUNS"]), os.environ["KERNEL"], os.environ["SB"]
here = os.getcwd()


def cpio(path, entries):
    """A newc archive: entries are (name, mode, data or None for a directory)."""
    out = bytearray()
    for ino, (name, mode, data) in enumerate(entries + [("TRAILER!!!", 0, b"")], 1):
        data = data or b""
        fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0]
        out += b"070701" + b"".join(b"%08X" % f for f in fields) + name.encode() + b"\0"
        out += b"\0" * (-len(out) % 4)
        out += data
        out += b"\0" * (-len(out) % 4)
    with open(path, "wb") as f:
        f.write(out)


def python_files():
    """python3 and what `python3 -I -S` opens to start: ld.so, its libraries, the
    modules imported before the program (their sources and .pyc files), os.py
    and lib-dynload (the landmarks of its prefix)."""
    mods = subprocess.run(
        ["/usr/bin/python3", "-I", "-S", "-c",
         "import sys, importlib.util as u\n"
         "for m in list(sys.modules.values()):\n"
         "    f = getattr(m, '__file__', None)\n"
         "    if f: print(f); print(u.cache_from_source(f))"],
        capture_output=True, text=True, check=True).stdout.split()
    libs = [l.split()[-2] if "=>" in l else l.split()[0]
            for l in subprocess.run(["ldd", "/usr/bin/python3"], capture_output=True,
                                    text=True, check=True).stdout.splitlines()
            if "/" in l]
    files = {"/usr/bin/python3", "/usr/lib/python3.11/os.py", *libs, *mods}
    return sorted(os.path.realpath(f) if f.startswith("/usr/bin") else f
                  for f in files if os.path.exists(f))


def initramfs(path, with_python):
    entries, dirs = [], {"/dev", "/proc", "/usr/lib/python3.11/lib-dynload"}
    files = {"/init": open("init", "rb").read(), "/job": open("job", "rb").read()}
    if with_python:
        for f in python_files():
            files["/usr/bin/python3" if f.startswith("/usr/bin/python3") else f] = \
                open(f, "rb").read()
    for f in list(files) + list(dirs):
        p = os.path.dirname(f)
        while p != "/":
            dirs.add(p)
            p = os.path.dirname(p)
    for d in sorted(dirs):
        entries.append((d.lstrip("/"), 0o40755, None))
    for f, data in sorted(files.items()):
        entries.append((f.lstrip("/"), 0o100755, data))
    cpio(path, entries)
    return sum(len(d) for d in files.values())


def host_khz():
    for line in open("/proc/cpuinfo"):
        if line.startswith("cpu MHz"):
            return int(float(line.split(":")[1]) * 1000)
    return 0


khz = host_khz()
# The kernel's command line of src/providers/qemu.c (kernel_command_line(),
# no console, TCG), with the job's kind.
cmdline = ("rdinit=/init panic=-1 reboot=t noreplace-smp i8042.noaux i8042.nokbd "
           "i8042.nopnp cryptomgr.notests quiet loglevel=0 random.trust_cpu=on mitigations=off"
           + (f" tsc_early_khz={khz} tsc=reliable lpj={khz * 4}" if khz else ""))


def qemu_argv(job, mem, extra=()):
    argv = ["qemu-system-x86_64", "-M",
            "microvm,x-option-roms=off,rtc=on,pit=on,pic=on,isa-serial=on",
            "-accel", "tcg", "-cpu", "max", "-smp", "1", "-m", str(mem), "-nodefaults",
            "-no-user-config", "-display", "none", "-no-reboot", "-kernel", kernel,
            "-serial", "stdio", "-device", "virtio-serial-device,max_ports=5"]
    for n, name in enumerate(["sb.stdin", "sb.stdout", "sb.stderr", "sb.status"]):
        argv += ["-chardev", f"null,id=c{n}",
                 "-device", f"virtserialport,chardev=c{n},name={name},nr={n + 1}"]
    argv += ["-initrd", "initrd-exec" if job == "exec" else "initrd-python",
             "-append", f"{cmdline} sbjob={job}", *extra]
    return argv


def read_line(p, prefix, deadline):
    """The first line of qemu's stdout (the guest's serial line) that starts with
    prefix, and the time it came."""
    buf = b""
    while True:
        r, _, _ = select.select([p.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            raise SystemExit(f"qemu-snapshot.sh: no {prefix!r} line in time; got {buf!r}")
        chunk = os.read(p.stdout.fileno(), 4096)
        if not chunk:
            p.wait()
            raise SystemExit(f"qemu-snapshot.sh: qemu ended before {prefix!r}; got {buf!r}, "
                             f"{p.stderr.read().decode(errors='replace')}")
        buf += chunk
        for line in buf.split(b"\n")[:-1]:
            if line.startswith(prefix.encode()):
                return line.decode(), time.monotonic()
            if line.startswith(b"FAIL"):
                raise SystemExit(f"qemu-snapshot.sh: the guest said {line!r}; before: {buf!r}")


def job_line(job):
    return b"2 pass\n" if job == "python" else b"2\n"


def ram_file(path, mem, share):
    """The guest's RAM in a file: the template's, mapped shared when it is made
    (x-ignore-shared leaves it out of the stream), privately (copy on write)
    when it is restored, so that no run changes it."""
    return ["-object", f"memory-backend-file,id=ram,size={mem}M,mem-path={path},share={share}",
            "-machine", "memory-backend=ram"]


IGNORE_SHARED = (b'{"execute": "migrate-set-capabilities", "arguments": {"capabilities": '
                 b'[{"capability": "x-ignore-shared", "state": true}]}}\n')


def run(job, mem, snapshot=None, mapped=False):
    """One run: qemu started, (cold) READY awaited, the job's line sent, DONE
    awaited, qemu's exit. Returns wall, CPU, ready (guest ns), job times (ns).
    mapped: the template's RAM mapped from its file, the stream only the
    devices' state."""
    qmp_path, before = f"{here}/qmp-run", b""
    extra = ["-incoming", f"exec:cat {snapshot}", "-qmp",
             f"unix:{qmp_path},server=on,wait=off"] if snapshot else []
    if mapped:
        extra = ram_file(f"{snapshot}.ram", mem, "off") + [
            "-incoming", "defer", "-qmp", f"unix:{qmp_path},server=on,wait=off"]
        before = IGNORE_SHARED + json.dumps(
            {"execute": "migrate-incoming", "arguments": {"uri": f"exec:cat {snapshot}"}}
        ).encode() + b"\n"
    t0, ready = time.monotonic(), None
    p = subprocess.Popen(qemu_argv(job, mem, extra), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = t0 + 120
    if snapshot:
        wait_running(qmp_path, deadline, before=before)
    else:
        line, _ = read_line(p, "READY", deadline)
        ready = int(line.split()[1])
    p.stdin.write(job_line(job))
    p.stdin.flush()
    line, _ = read_line(p, "DONE", deadline)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    err = p.stderr.read()
    if status != 0:
        raise SystemExit(f"qemu-snapshot.sh: qemu failed ({status}): {err!r}")
    return wall, ru.ru_utime + ru.ru_stime, ready, [int(x) for x in line.split()[1:]]


def qmp(sock, cmd, **args):
    sock.sendall(json.dumps({"execute": cmd, "arguments": args}).encode() + b"\n")
    f = sock.makefile("rb")
    while True:
        msg = json.loads(f.readline())
        if "return" in msg or "error" in msg:
            if "error" in msg:
                raise SystemExit(f"qemu-snapshot.sh: QMP {cmd}: {msg['error']}")
            return msg["return"]


def wait_running(path, deadline, then=b"", before=b""):
    """Until the restored machine runs: what the serial line receives while the
    migration loads is lost (the device's state is overwritten). before: QMP
    commands sent first (the incoming migration's); then: sent after."""
    s = socket.socket(socket.AF_UNIX)
    while True:
        try:
            s.connect(path)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > deadline:
                raise SystemExit("qemu-snapshot.sh: no QMP socket")
            time.sleep(0.002)
    with s:
        f = s.makefile("rb")
        f.readline()  # the greeting
        s.sendall(b'{"execute": "qmp_capabilities"}\n' + before +
                  b'{"execute": "query-status"}\n')
        while True:
            msg = json.loads(f.readline())
            if msg.get("event") == "RESUME" or msg.get("return", {}).get("running"):
                break
        if then:  # its answer awaited: a command whose socket closes may be dropped
            s.sendall(then)
            while (line := f.readline()) and "return" not in json.loads(line):
                pass


def template(job, mem, mapped=False):
    """The machine booted to READY and saved: the snapshot's path (mapped: its
    RAM in path.ram, the stream only the devices' state)."""
    path = f"{here}/snap-{job}-{mem}" + ("-mapped" if mapped else "")
    qmp_path = f"{path}.qmp"
    extra = ram_file(f"{path}.ram", mem, "on") if mapped else []
    extra += ["-qmp", f"unix:{qmp_path},server=on,wait=off"]
    p = subprocess.Popen(qemu_argv(job, mem, extra),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line, _ = read_line(p, "READY", time.monotonic() + 120)
    time.sleep(0.5)  # the guest settled in its read (its last output drained)
    s = socket.socket(socket.AF_UNIX)
    s.connect(qmp_path)
    s.makefile("rb").readline()  # the greeting
    qmp(s, "qmp_capabilities")
    # Not stopped first: a migration of a paused machine restores it paused.
    qmp(s, "migrate-set-parameters", **{"max-bandwidth": 1 << 40})
    if mapped:
        qmp(s, "migrate-set-capabilities",
            capabilities=[{"capability": "x-ignore-shared", "state": True}])
    qmp(s, "migrate", uri=f"exec:cat > {path}")
    while (st := qmp(s, "query-migrate").get("status")) not in ("completed", "failed"):
        time.sleep(0.05)
    if st != "completed":
        raise SystemExit(f"qemu-snapshot.sh: migration {st}")
    qmp(s, "quit")
    p.wait()
    return path


def qemu_start():
    """qemu's start and exit alone: -S, the QMP greeting, quit."""
    t0 = time.monotonic()
    argv = qemu_argv("exec", 2048, ["-S", "-qmp", "stdio"])
    argv[argv.index("-serial") + 1] = "none"
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdin.write(b'{"execute": "qmp_capabilities"}\n{"execute": "quit"}\n')
    p.stdin.flush()
    _, status, ru = os.wait4(p.pid, 0)
    return time.monotonic() - t0, ru.ru_utime + ru.ru_stime, None, []


def restore_only():
    """A restore alone: the template restored, running, told to quit over QMP."""
    t0, qmp_path = time.monotonic(), f"{here}/qmp-run"
    snapshot = snaps["exec", 2048, False]
    p = subprocess.Popen(qemu_argv("exec", 2048, ["-incoming", f"exec:cat {snapshot}",
                                                  "-qmp", f"unix:{qmp_path},server=on,wait=off"]),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_running(qmp_path, t0 + 120, b'{"execute": "quit"}\n')
    _, status, ru = os.wait4(p.pid, 0)
    return time.monotonic() - t0, ru.ru_utime + ru.ru_stime, None, []


def python_sb():
    t0 = time.monotonic()
    p = subprocess.Popen([sb, "-c", "pass"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={"PATH": "/usr/bin:/bin", "HOME": here, "LC_ALL": "C.UTF-8"})
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise SystemExit(f"qemu-snapshot.sh: python-sb failed: {p.stderr.read()!r}")
    return time.monotonic() - t0, ru.ru_utime + ru.ru_stime, None, []


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


print(f"kernel: {kernel}\ndirectory: {here}")
version = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True)
print(f"qemu: {version.stdout.splitlines()[0]}")
size_exec = initramfs("initrd-exec", False)
size_python = initramfs("initrd-python", True)
print(f"initramfs: exec {size_exec / 1e6:.1f} MB, python {size_python / 1e6:.1f} MB of files")
snaps = {}
for job, mem, mapped in [("exec", 2048, False), ("exec", 128, False), ("exec", 2048, True),
                         ("pystart", 2048, False), ("python", 2048, False)]:
    t0 = time.monotonic()
    snaps[job, mem, mapped] = path = template(job, mem, mapped)
    ram = (f", its RAM file {os.stat(path + '.ram').st_blocks * 512 / 1e6:.1f} MB on disk"
           if mapped else "")
    print(f"template {job} -m {mem}{' mapped' if mapped else ''}: "
          f"{os.path.getsize(path) / 1e6:.1f} MB{ram}, made in {time.monotonic() - t0:.2f} s")
if sb:
    with open(".py-sandboxes", "w") as f:
        f.write("learn=false\nos-sandbox=qemu\nqemu.use_kvm=false\n")

variants = {
    "cold-exec": lambda: run("exec", 2048),
    "snap-exec": lambda: run("exec", 2048, snaps["exec", 2048, False]),
    "snap-exec-m128": lambda: run("exec", 128, snaps["exec", 128, False]),
    "snap-exec-mapped": lambda: run("exec", 2048, snaps["exec", 2048, True], mapped=True),
    "snap-restore": restore_only,
    "cold-pystart": lambda: run("pystart", 2048),
    "snap-pystart": lambda: run("pystart", 2048, snaps["pystart", 2048, False]),
    "cold-python": lambda: run("python", 2048),
    "snap-python": lambda: run("python", 2048, snaps["python", 2048, False]),
    "qemu-start": qemu_start,
}
if sb:
    variants["python-sb"] = python_sb
names = list(variants)
for name in names:  # one unmeasured run each: the page cache
    variants[name]()
print(f"load average before: {load()}, {os.cpu_count()} CPUs")
samples = {n: [] for n in names}
for r in range(runs):
    order = names if r % 2 == 0 else names[::-1]
    for name in order:
        samples[name].append(variants[name]())
    print(f"round {r + 1}: load {load()}", flush=True)
print(f"load average after: {load()}")


def ms(x):
    return f"{x * 1000:.0f}"


print(f"\n{'variant':16} {'wall ms':>8} {'(min-max)':>12} {'ratio':>6} {'CPU ms':>7} "
      f"{'ratio':>6} {'READY ms':>8} {'job 1 ms':>8} {'job 2 ms':>8}")
base = [s[0] for s in samples["cold-exec"]]
base_cpu = [s[1] for s in samples["cold-exec"]]
for name in names:
    s = samples[name]
    wall = [x[0] for x in s]
    ratio = statistics.median(w / b for w, b in zip(wall, base))
    cpu = [x[1] for x in s]
    cpu_ratio = statistics.median(c / b for c, b in zip(cpu, base_cpu))
    ready = [x[2] for x in s if x[2] is not None]
    j1 = [x[3][0] for x in s if x[3]]
    j2 = [x[3][1] for x in s if x[3]]
    print(f"{name:16} {ms(statistics.median(wall)):>8} "
          f"{ms(min(wall)) + '-' + ms(max(wall)):>12} {ratio:6.2f} "
          f"{ms(statistics.median(cpu)):>7} {cpu_ratio:6.2f} "
          f"{(f'{statistics.median(ready) / 1e6:.0f}' if ready else '-'):>8} "
          f"{(f'{statistics.median(j1) / 1e6:.1f}' if j1 else '-'):>8} "
          f"{(f'{statistics.median(j2) / 1e6:.1f}' if j2 else '-'):>8}")
print("(wall: qemu's start to its exit, medians; CPU: qemu's, with the migration's cat; "
      "ratio: the median of the per-round ratios to cold-exec; READY: the guest's clock "
      "when the template waits; job 1, 2: the job's two runs on the guest's clock)")
