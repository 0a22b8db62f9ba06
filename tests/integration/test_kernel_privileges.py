# SPDX-License-Identifier: MIT
"""Identity and capabilities (issue 12, finding 4): in every provider but
`none`, the program has no capability whoever started python-sb, the
securebits are locked, no_new_privs is set; user=UID[:GID] makes a python-sb
started as root run the program as that identity. Checked from inside with
native code (py-sandbox=false) and from /proc/<pid>/status."""

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from conftest import EXIT_CONFIG, HANG_BOUND, Sandbox, needs_landlock, run_native

PROVIDERS = [pytest.param("landlock", marks=needs_landlock), "subprocess"] + [
    pytest.param(w, marks=pytest.mark.skipif(shutil.which(w) is None,
                                             reason=f"{w} is not installed"))
    for w in ("bwrap", "firejail")]

STATUS = '''
fields = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
for k in ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
          "NoNewPrivs"):
    print(f"{k}: {fields[k].split()[0] if fields[k].split() else '-'}")
libc.prctl.restype = ctypes.c_int
print("securebits:", libc.prctl(27, 0, 0, 0, 0))  # PR_GET_SECUREBITS
'''

RAISE = '''
class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]
hdr, data = Header(0x20080522, 0), (Data * 2)()
data[0].effective = data[0].permitted = 1 << 21  # CAP_SYS_ADMIN
attempt("capset", libc.syscall, 126, ctypes.byref(hdr), data)
attempt("setuid(0)", libc.syscall, 105, 0)
attempt("setresuid(0)", libc.syscall, 117, 0, 0, 0)
attempt("setgroups", libc.syscall, 116, 0, None)
attempt("PR_CAP_AMBIENT raise", libc.syscall, 157, 47, 2, 21, 0, 0)
attempt("PR_CAPBSET_DROP", libc.syscall, 157, 24, 0, 0, 0, 0)
attempt("PR_SET_SECUREBITS", libc.syscall, 157, 28, 0, 0, 0, 0)
attempt("PR_SET_KEEPCAPS", libc.syscall, 157, 8, 1, 0, 0, 0)
'''

ZERO = "0000000000000000"


def base(provider):
    return f"os-sandbox={provider}\npy-sandbox=false\n"


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("who", ["caller", "nobody"])
def test_no_capabilities_whoever_starts_it(sb, sb_nobody, provider, who):
    if provider == "firejail" and (who == "nobody" or os.geteuid() != 0):
        pytest.skip("firejail never lets the user nobody start a sandbox "
                    "(test_kernel_wrappers.py checks python-sb's error)")
    box = sb if who == "caller" else sb_nobody
    r, o = run_native(box, base(provider), STATUS + RAISE)
    assert r.returncode == 0, r
    for k in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert o[k] == ZERO, (k, r)
    assert o["NoNewPrivs"] == "1", r
    if os.geteuid() == 0 and who == "caller":
        # Root had CAP_SETPCAP: the bounding set is empty and the securebits
        # that would give uid 0 its capabilities back are set and locked.
        assert o["CapBnd"] == ZERO, r
        assert o["securebits"] == str(0xef), r
    # Every way back is refused: by seccomp (EPERM) before the kernel's own
    # capability checks.
    for k in ("capset", "setuid(0)", "setresuid(0)", "setgroups", "PR_CAP_AMBIENT raise",
              "PR_CAPBSET_DROP", "PR_SET_SECUREBITS", "PR_SET_KEEPCAPS"):
        assert o[k] == "EPERM", (k, r)


def test_capabilities_control_under_none(sb):
    """os-sandbox=none drops nothing: the control for the test above."""
    if os.geteuid() != 0:
        pytest.skip("an unprivileged caller has no capability to keep")
    r, o = run_native(sb, base("none"), STATUS)
    assert r.returncode == 0, r
    assert o["CapEff"] != ZERO and o["NoNewPrivs"] == "0", r


@pytest.fixture
def sb_public(sb_bin):
    """Runs as the caller (root) in a directory every user can read: the
    script is opened by the interpreter after the switch, as the new uid."""
    if os.geteuid() != 0:
        pytest.skip("only a python-sb started as root changes identity")
    base = Path(tempfile.mkdtemp(prefix="python-sb-public-", dir="/tmp"))
    os.chmod(base, 0o755)
    try:
        yield Sandbox(sb_bin, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_user_switches_identity(sb_public, provider):
    r, o = run_native(sb_public, base(provider) + "user=65534:65534\n", STATUS + RAISE + '''
attempt("write root-owned", libc.open, b"/etc/hostname", os.O_WRONLY)
''')
    assert r.returncode == 0, r
    assert (o["Uid"], o["Gid"], o["Groups"]) == ("65534", "65534", "-"), r
    assert o["CapEff"] == ZERO and o["CapBnd"] == ZERO and o["NoNewPrivs"] == "1", r
    assert o["setuid(0)"] == "EPERM", r
    # uid 0 without capabilities still owned /etc/hostname; nobody does not
    # (the wrappers' /etc holds a few files only: not this one).
    assert o["write root-owned"] in (
        ("EACCES", "EPERM", "ENOENT") if provider in ("bwrap", "firejail") else ("EACCES", "EPERM")), r


def test_user_on_the_command_line_and_explain(sb_public):
    sb = sb_public
    sb.profile("os-sandbox=subprocess\npython-import=os\n")
    out = sb.run("--explain", "--user=65534", "-c", "pass").stdout
    assert ("#   capabilities: none (bounding, permitted, effective, inheritable and ambient "
            "sets cleared), securebits locked") in out, out
    assert "#   identity: uid 65534, gid 65534, no supplementary group (user=)" in out, out
    out = sb.run("--explain", "-c", "pass").stdout
    assert "#   identity: uid 0 without capabilities" in out, out
    r = sb.run("--user=65534", "-c", "import os; print(os.getuid(), os.getgid())")
    assert (r.returncode, r.stdout) == (0, "65534 65534\n"), r


def test_user_is_not_applied_by_an_unprivileged_caller(sb_nobody):
    sb = sb_nobody
    uid = os.geteuid() if os.geteuid() != 0 else 65534
    r = sb.run_code("os-sandbox=subprocess\npython-import=os\nuser=4242:4242\n",
                    "import os; print(os.getuid())")
    assert (r.returncode, r.stdout) == (0, f"{uid}\n"), r
    out = sb.run("--explain", "-c", "pass").stdout
    assert "(user=4242:4242 not applied: only a python-sb started as root" in out, out


def test_bad_user_values(sb):
    marker = sb.path("RAN")
    p = sb.profile("os-sandbox=subprocess\nuser=nobody\n")
    r = sb.run("-c", f"open({str(marker)!r}, 'w')")
    assert r.returncode == EXIT_CONFIG, r
    assert r.errors == [f"{p}:2: Invalid user 'nobody': expected a numeric UID or UID:GID "
                        "(for example 65534:65534)"], r
    r = sb.run("--user=-1", "-c", "pass")
    assert r.returncode == EXIT_CONFIG and "Invalid user '-1'" in r.stderr, r
    assert not marker.exists()


@pytest.mark.parametrize("holder", ["watchdog", "supervisor"])
def test_timeout_still_kills_a_program_run_as_another_user(sb_public, holder):
    """The watchdog's timers, made before the change of uid, still fire; with
    the right to start processes the supervisor stays root outside the
    sandbox, and the parent-death link a change of uid clears is set again."""
    t0 = time.monotonic()
    extra = "python-api=ALLOW:process-exec\n" if holder == "supervisor" else ""
    r = sb_public.run_code("os-sandbox=landlock\npython-import=os\nuser=65534\ntimeout=1s\n"
                           + extra,
                           "import os\nprint(os.getuid(), flush=True)\nwhile True: pass\n")
    assert r.returncode == 124 and r.stdout == "65534\n", r
    assert time.monotonic() - t0 < HANG_BOUND
