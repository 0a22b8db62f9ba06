# SPDX-License-Identifier: MIT
"""os-sandbox=qemu: a micro-VM per run (src/providers/qemu.c). The guest is
emulated (TCG: the profile sets qemu.use_kvm=false, as nested KVM may stall
rather than fail), so each boot costs seconds: the tests share boots where
one run can show several things, and the configuration errors are checked
before any machine starts.

The kernel part runs with py-sandbox=false: what is refused is refused by the
virtual machine (what the guest was given over virtio-9p) and the seccomp
filter inside it, against the program's own system calls. Each refusal is
checked by the errno *and* by the missing effect on the host."""

import os
import shutil
import signal
import subprocess

import pytest

from conftest import EXIT_CONFIG, EXIT_TIMEOUT, SANITIZER_ENV, run_native

KERNELS = [f for f in os.listdir("/boot") if f.startswith("vmlinuz-")
           and os.path.exists(f"/lib/modules/{f[8:]}/kernel/fs/9p/9p.ko")] \
    if os.path.isdir("/boot") else []

pytestmark = pytest.mark.skipif(
    shutil.which("qemu-system-x86_64") is None or not KERNELS,
    reason="qemu-system-x86 and linux-image-amd64 are needed (scripts/deps.sh test installs "
           "them)")

# A boot under emulation on a loaded machine: a bound on hanging only.
VM_TIMEOUT = 240
SECRET = "TOP-SECRET-qemu-41d7"
BASE = "os-sandbox=qemu\nqemu.use_kvm=false\n"


def test_program_streams_and_exit_status(sb):
    """stdin reaches the guest and ends, stdout and stderr stay apart, the
    exit status comes back."""
    r = sb.run_code(BASE + "python-import=sys\n", """\
        import sys
        data = sys.stdin.read()
        print("out:" + data.upper().strip())
        print("err:" + str(len(data)), file=sys.stderr)
        raise SystemExit(7)
        """, input="hello from the host\n", timeout=VM_TIMEOUT)
    assert r.returncode == 7, r
    assert r.stdout == "out:HELLO FROM THE HOST\n", r
    assert "err:20\n" in r.stderr and "out:" not in r.stderr, r


@pytest.fixture(params=["caller", "unprivileged"])
def anyuser(request):
    """The caller's sandbox and an unprivileged user's, with ./ro
    (expose-ro), ./rw (expose-rw) and a secret beside them that anyone may
    read on the host."""
    sb = request.getfixturevalue("sb" if request.param == "caller" or os.geteuid() != 0
                                 else "sb_nobody")
    sb.write("ro/existing.txt", "ORIGINAL\n")
    sb.write("ro/hidden.key", SECRET + "\n")
    sb.write("ro/keys.d/inner.txt", SECRET + "\n")
    sb.mkdir("rw")
    os.chmod(sb.write("secret.txt", SECRET + "\n"), 0o644)
    return sb


def test_kernel_confines_a_hostile_program(anyuser):
    sb = anyuser
    r, o = run_native(sb, BASE + f"""\
        py-sandbox=false
        expose-ro={sb.path('ro')}
        expose-rw={sb.path('rw')}
        ignore=*.key
        ignore=keys.d
        """, f"""\
        py("read-ro", lambda: print("content:" + open({str(sb.path('ro/existing.txt'))!r}).read().strip()))
        py("write-ro", lambda: open({str(sb.path('ro/existing.txt'))!r}, "w"))
        py("create-ro", lambda: open({str(sb.path('ro/new.txt'))!r}, "w"))
        py("write-rw", lambda: open({str(sb.path('rw/made.txt'))!r}, "w").write("made"))
        py("read-secret", lambda: print(open({str(sb.path('secret.txt'))!r}).read()))
        py("read-shadow", lambda: open("/etc/shadow").read())
        py("write-tmp", lambda: open("/tmp/qemu-escape", "w"))
        py("socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        attempt("raw-open", libc.open, {str(sb.path('secret.txt')).encode()!r}, os.O_RDONLY)
        py("ignored-file", lambda: print("ignored:" + repr(open({str(sb.path('ro/hidden.key'))!r}).read())))
        py("ignored-dir", lambda: print("listed:" + repr(os.listdir({str(sb.path('ro/keys.d'))!r}))))
        """, timeout=VM_TIMEOUT)
    assert r.returncode == 0, r
    assert "content:ORIGINAL" in r.stdout, r
    assert o["read-ro"] == "OK", r
    assert o["write-ro"] == "EROFS" and o["create-ro"] == "EROFS", r
    assert (sb.path("ro/existing.txt").read_text() == "ORIGINAL\n"
            and not sb.path("ro/new.txt").exists()), r
    assert o["write-rw"] == "OK" and sb.path("rw/made.txt").read_text() == "made", r
    # Not shared with the guest at all: it does not exist there.
    assert o["read-secret"] == "ENOENT" and o["raw-open"] == "ENOENT", r
    assert SECRET not in r.stdout + r.stderr, r
    assert o["read-shadow"] == "ENOENT", r
    # ignore= masks what matches: an empty file, an empty directory.
    assert "ignored:''" in r.stdout and "listed:[]" in r.stdout, r
    assert o["write-tmp"] == "EROFS" and not os.path.exists("/tmp/qemu-escape"), r
    # The seccomp filter inside the guest: no Internet socket without net=.
    assert o["socket"] == "EPERM", r


def own_kernel(binary):
    """python-sb's own guest kernel where it was installed (meson's
    qemu_kernel option: beside python-sb in a build tree, in libexec
    installed), else None."""
    here = os.path.dirname(os.path.realpath(binary))
    for path in (os.path.join(here, "python-sb-qemu-kernel"),
                 os.path.join(here, "..", "libexec", "py-sandboxes", "python-sb-qemu-kernel")):
        if os.path.exists(path):
            return os.path.realpath(path)
    return None


def test_own_kernel_is_booted_where_installed(sb):
    """scripts/test.sh builds python-sb's own kernel (scripts/qemu-kernel.sh)
    and installs it: every boot of this suite uses it, Debian's kernel being
    the fallback (next test)."""
    kernel = own_kernel(sb.binary)
    if kernel is None:
        pytest.skip("python-sb's own guest kernel is not installed (meson -Dqemu_kernel=)")
    sb.profile(BASE)
    r = sb.run("--explain", "-c", "pass")
    assert r.returncode == 0, r
    booted = r.stdout.split("-kernel ", 1)[1].split()[0]
    assert os.path.realpath(booted) == kernel, r.stdout


def test_debian_kernel_with_its_modules_still_boots(sb):
    """PYSANDBOXES_QEMU_KERNEL=/boot/vmlinuz-<release>: Debian's kernel, its
    modules loaded from the initramfs, the machine ended by a reset all the
    same."""
    kernel = "/boot/" + sorted(KERNELS)[-1]
    r = sb.run_code(BASE + "python-import=sys\n", """\
        import sys
        print("out:" + sys.stdin.read().strip())
        raise SystemExit(3)
        """, input="via debian\n", env={"PYSANDBOXES_QEMU_KERNEL": kernel},
                    timeout=VM_TIMEOUT)
    assert r.returncode == 3 and r.stdout == "out:via debian\n", r


def test_use_kvm_runs_or_falls_back_to_emulation(sb):
    """qemu.use_kvm=true: KVM where a probe boot shows that it runs a guest,
    else a warning and TCG (nested KVM aborts or stalls: on CI's machines
    this is the fallback); the program runs either way."""
    r = sb.run_code("os-sandbox=qemu\nqemu.use_kvm=true\n", "print('ran')\n",
                    timeout=VM_TIMEOUT)
    assert r.returncode == 0 and r.stdout == "ran\n", r
    kvm_usable = os.access("/dev/kvm", os.R_OK | os.W_OK)
    if not kvm_usable:
        assert "/dev/kvm cannot be opened" in r.stderr and "emulated (TCG)" in r.stderr, r


def test_deadline_kills_a_looping_guest(sb):
    """timeout= counts python-sb's start-up in the guest too, seconds under
    emulation (more in a sanitizer build): 10 s leave the program time to
    print before it loops."""
    r = sb.run_code(BASE + "py-sandbox=false\ntimeout=10s\n", """\
        print("looping", flush=True)
        while True:
            pass
        """, timeout=VM_TIMEOUT)
    assert r.returncode == EXIT_TIMEOUT, r
    assert "looping" in r.stdout and "timeout=10s expired" in r.stderr, r


def test_sigterm_ends_the_machine_and_python_sb_dies_of_it(sb):
    """SIGTERM to python-sb is passed on to qemu, which powers the machine
    off cleanly (status 0): python-sb still dies of SIGTERM, as `python`."""
    sb.profile(BASE + "python-import=time\n")
    p = subprocess.Popen([sb.binary, "-c", "import time; print('up', flush=True); time.sleep(120)"],
                         cwd=sb.root, env={**sb.env(), **SANITIZER_ENV}, text=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert p.stdout.readline() == "up\n"
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=VM_TIMEOUT)
    finally:
        p.kill()
    assert p.returncode == -signal.SIGTERM, (p.returncode, err)


def test_start_timeout_kills_the_machine(sb):
    r = sb.run_code(BASE + "qemu.start_timeout=0.2\n", "print('never')\n", timeout=VM_TIMEOUT)
    assert r.returncode == EXIT_CONFIG, r
    assert "did not start the program within 0.2 s (qemu.start_timeout)" in r.stderr, r
    assert "never" not in r.stdout, r


@pytest.mark.parametrize("env, message", [
    ({"PATH": "/nonexistent"}, "qemu-system-x86_64 is not installed (not found in "
     "/nonexistent): install the Debian package qemu-system-x86"),
    ({"PYSANDBOXES_QEMU_KERNEL": "/nonexistent/vmlinuz-0.0"},
     "PYSANDBOXES_QEMU_KERNEL=/nonexistent/vmlinuz-0.0: no readable kernel image"),
])
def test_missing_qemu_or_kernel_fails_closed(sb, env, message):
    r = sb.run_code(BASE, "print('ran')\n", env=env)
    assert r.returncode == EXIT_CONFIG, r
    assert message in r.stderr and "ran" not in r.stdout, r


@pytest.mark.parametrize("line, message", [
    ("qemu.use_kvm=maybe", "Invalid qemu.use_kvm 'maybe'"),
    ("qemu.show_boot_console=2", "Invalid qemu.show_boot_console '2'"),
    ("qemu.virtfs_security_model=open", "Invalid qemu.virtfs_security_model 'open'"),
    ("qemu.cpus=4", "Unknown qemu parameter 'cpus'"),
])
def test_bad_parameters_are_errors(sb, line, message):
    r = sb.run_code(BASE + line + "\n", "print('ran')\n")
    assert r.returncode == EXIT_CONFIG, r
    assert message in r.stderr and "ran" not in r.stdout, r


@pytest.mark.parametrize("line, message", [
    ("qemu.memory=2GB", "Invalid qemu.memory '2GB' (expected an integer of MiB with at most "
     "one suffix k, M, G, T, P or E): the default 2048 applies"),
    ("qemu.start_timeout=soon", "Invalid qemu.start_timeout 'soon'"),
])
def test_bad_values_with_a_default_warn(sb, line, message):
    """The spec's leniency: a warning, then the default. The run stops on
    the missing kernel, before any machine starts."""
    r = sb.run_code(BASE + line + "\n", "print('ran')\n",
                    env={"PYSANDBOXES_QEMU_KERNEL": "/nonexistent/vmlinuz-0.0"})
    assert message in r.stderr, r
    assert r.returncode == EXIT_CONFIG and "no readable kernel image" in r.stderr, r


@pytest.mark.parametrize("line, message", [
    ("qemu.memory=64", "qemu.memory=64: the virtual machine needs at least 128 MiB"),
    ("qemu.virtfs=off", "qemu.virtfs=off: the micro-VM reaches the host's files over virtio-9p "
     "only"),
    ("net=ALLOW|tcp|127.0.0.1|80|OUT", "os-sandbox=qemu does not have in this version"),
])
def test_what_the_machine_cannot_do_fails_closed(sb, line, message):
    r = sb.run_code(BASE + line + "\n", "print('ran')\n")
    assert r.returncode == EXIT_CONFIG, r
    assert message in r.stderr and "ran" not in r.stdout, r


def test_explain_shows_the_command_line(sb):
    sb.profile(BASE)
    r = sb.run("--explain", "-c", "pass")
    assert r.returncode == 0, r
    assert "qemu: a micro-VM" in r.stdout, r
    assert "-M microvm" in r.stdout and "-accel tcg" in r.stdout, r
    assert "virtio-9p-device" in r.stdout and "-nic" not in r.stdout, r

