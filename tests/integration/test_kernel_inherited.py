# SPDX-License-Identifier: MIT
"""What the caller hands python-sb (issue 12, finding 5): descriptors above 2
are closed before anything of the program runs (python-sb's own, and one the
command line names, excepted), and the caller's environment is gone from
/proc/self/environ and from the process's memory, not only from os.environ.
Native code (py-sandbox=false) looks for them, as root and as nobody, under
both kernel providers."""

import os
import shutil
import subprocess

import pytest

from conftest import IS_ASAN, SANITIZER_ENV, TIMEOUT, needs_landlock, run_native

PROVIDERS = [pytest.param("landlock", marks=needs_landlock), "subprocess"] + [
    pytest.param(w, marks=pytest.mark.skipif(shutil.which(w) is None,
                                             reason=f"{w} is not installed"))
    for w in ("bwrap", "firejail")]


def skip_firejail_nobody(provider, who):
    if provider == "firejail" and (who == "nobody" or os.geteuid() != 0):
        pytest.skip("firejail never lets the user nobody start a sandbox")

# Two halves, never joined in the program: finding them side by side in
# memory means the caller's environment was left there.
HALF_A, HALF_B = "PYSBSECRET", "Zq7wX3-host-token"
SECRET = HALF_A + HALF_B

SCAN = f'''
a, b = {HALF_A!r}.encode(), {HALF_B!r}.encode()
def scan():
    hits = 0
    for line in open("/proc/self/maps").read().splitlines():
        addr, perms = line.split()[:2]
        if "r" not in perms or "[vvar" in line or "[vsyscall" in line:
            continue
        lo, hi = (int(x, 16) for x in addr.split("-"))
        data = ctypes.string_at(lo, hi - lo)
        i = data.find(a)
        while i >= 0:
            hits += data[i + len(a):i + len(a) + len(b)] == b
            i = data.find(a, i + 1)
    return hits
print("memory:", scan() if sys.argv[1:] != ["no-scan"] else "not scanned")
try:
    env = open("/proc/self/environ", "rb").read()
except PermissionError:
    print("environ: refused")  # Landlock grants /proc/self entries, not environ
else:
    print("environ:", a + b in env, sum(1 for c in env if c))
print("os.environ:", sorted(os.environ))
'''


# Reading every mapping of the process through ctypes trips AddressSanitizer
# (its interceptors check the shadow of what memcpy() reads).
scans_memory = pytest.mark.skipif(IS_ASAN, reason="AddressSanitizer forbids reading its "
                                  "redzones: the memory scan needs a build without it")


def who_box(who, sb, sb_nobody):
    return sb if who == "caller" else sb_nobody


@pytest.mark.parametrize("provider", PROVIDERS + ["none"])
@pytest.mark.parametrize("who", ["caller", "nobody"])
def test_inherited_descriptors_are_closed(sb, sb_nobody, provider, who, tmp_path):
    skip_firejail_nobody(provider, who)
    box = who_box(who, sb, sb_nobody)
    secret = tmp_path / "secret.txt"
    secret.write_text("inherited-secret\n")
    box.profile(f"os-sandbox={provider}\npy-sandbox=false\n")
    s = box.write("s.py", '''
        import os
        for fd in range(3, 64):
            try:
                os.fstat(fd)
            except OSError as e:
                continue
            print("open:", fd, os.readlink(f"/proc/self/fd/{fd}"))
        print("done")
        ''')
    with open(secret) as f, open(os.devnull, "w") as w:
        fds = (f.fileno(), w.fileno())
        proc = subprocess.run(box.prefix + [box.binary, str(s)], cwd=box.root,
                              env={**box.env(), **SANITIZER_ENV}, capture_output=True,
                              text=True, timeout=TIMEOUT, pass_fds=fds,
                              stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc
    assert "inherited" not in proc.stdout, proc
    # What is left is the interpreter's own (the script it reads, under
    # landlock nothing): never a descriptor of the caller's.
    for line in proc.stdout.splitlines():
        if line.startswith("open:"):
            assert int(line.split()[1]) not in fds or "secret" not in line, proc
    assert proc.stdout.endswith("done\n"), proc


def test_a_descriptor_the_command_line_names_stays(sb):
    """`python-sb <(cmd)`: the script is /dev/fd/N, the one descriptor kept."""
    sb.profile("os-sandbox=subprocess\npy-sandbox=false\n")
    r, w = os.pipe()
    os.write(w, b"print('from the pipe')\n")
    os.close(w)
    try:
        proc = subprocess.run([sb.binary, f"/dev/fd/{r}"], cwd=sb.root,
                              env={**sb.env(), **SANITIZER_ENV}, capture_output=True,
                              text=True, timeout=TIMEOUT, pass_fds=(r,),
                              stdin=subprocess.DEVNULL)
    finally:
        os.close(r)
    assert (proc.returncode, proc.stdout) == (0, "from the pipe\n"), proc


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("who", ["caller", "nobody"])
def test_the_callers_environment_is_gone(sb, sb_nobody, provider, who):
    skip_firejail_nobody(provider, who)
    box = who_box(who, sb, sb_nobody)
    # AddressSanitizer forbids reading its redzones: /proc/self/environ only.
    r, o = run_native(box, f"os-sandbox={provider}\npy-sandbox=false\nenv=KEPT=${{KEPT}}\n",
                      SCAN, *(["no-scan"] if IS_ASAN else []),
                      env={"HOST_TOKEN": SECRET, "KEPT": "yes"})
    assert r.returncode == 0, r
    assert o["memory"] == ("not scanned" if IS_ASAN else "0"), r
    assert o["environ"] == ("refused" if provider == "landlock" else "False 0"), r
    assert o["os.environ"] == "['KEPT', 'TERM']" or o["os.environ"] == "['KEPT']", r


@scans_memory
def test_control_the_scan_finds_what_is_there(sb):
    """The scan is not blind: learning leaves the caller's environment to the
    program, and the scan finds it (in os.environ's copies at least)."""
    r = sb.run_code("os-sandbox=subprocess\npy-sandbox=true\npython-import=*\n"
                    "python-api=ALLOW:native\nlearn=./learned\n",
                    "import ctypes, os, sys\n" + SCAN, env={"HOST_TOKEN": SECRET})
    assert r.returncode == 0, r
    assert "memory: 0" not in r.stdout, r
    assert "environ: True" in r.stdout, r


@pytest.mark.parametrize("who", ["caller", "nobody"])
def test_the_supervisors_environment_is_gone_too(sb, sb_nobody, who):
    """With timeout= and the right to start processes, the supervisor (the
    program's parent; without that right the watchdog holds the timeout and
    there is no supervisor) is forked after the scrub: /proc/<ppid>/environ
    holds nothing either. Without Landlock the program may open it when both
    run as the same unprivileged uid (as root, the supervisor keeps
    capabilities the program lacks: EACCES)."""
    box = who_box(who, sb, sb_nobody)
    r, o = run_native(box, "os-sandbox=subprocess\npy-sandbox=false\ntimeout=10s\n"
                      "python-api=ALLOW:process-exec\n", '''
        try:
            env = open(f"/proc/{os.getppid()}/environ", "rb").read()
            print("parent environ:", b"PYSBSECRET" in env, sum(1 for c in env if c))
        except PermissionError:
            print("parent environ: EACCES")
        ''', env={"HOST_TOKEN": SECRET})
    assert r.returncode == 0, r
    assert o["parent environ"] in ("False 0", "EACCES"), r
    if who == "nobody":
        assert o["parent environ"] == "False 0", r
