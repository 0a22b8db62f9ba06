# SPDX-License-Identifier: MIT
"""The hooked python-sb (docs/development.md, "Two binaries"): what meson
install installs where it can, a copy of the system's python3.X with
python-sb-hook.so added to its needed libraries. Skipped for a python-sb that
is not one (the build tree's, the ASan build's)."""

import os
import shutil
import struct
import subprocess

import pytest

from conftest import LANDLOCK_ABI, TIMEOUT

HOOK = b"python-sb-hook.so"
INTERPRETER = "/usr/bin/python3.11"


def _is_hooked(path):
    with open(path, "rb") as f:
        return HOOK in f.read()


@pytest.fixture
def hooked(sb_bin):
    if not _is_hooked(sb_bin):
        pytest.skip(f"{sb_bin} is the static python-sb, not the hooked copy")
    return sb_bin


def _build_id(data):
    """The NT_GNU_BUILD_ID note of an ELF64 file, and its offset in data."""
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data,
                                                                  phoff + i * phentsize)
        if p_type != 4:  # PT_NOTE
            continue
        off, end = p_offset, p_offset + p_filesz
        while off + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", data, off)
            desc = off + 12 + (namesz + 3) // 4 * 4
            if ntype == 3 and data[off + 12:off + 12 + namesz] == b"GNU\0":
                return data[desc:desc + descsz], desc
            off = desc + (descsz + 3) // 4 * 4
    raise AssertionError("no build-id note")


def test_runs_the_system_interpreters_code(hooked):
    """The installed binary is the system's interpreter, byte for byte in its
    code: same build-id; and it is python-sb (its --version says so)."""
    with open(hooked, "rb") as f, open(INTERPRETER, "rb") as g:
        assert _build_id(f.read())[0] == _build_id(g.read())[0]
    r = subprocess.run([hooked, "--version"], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0 and "python-sb" in r.stdout, r


def test_warns_when_the_system_interpreter_changed(hooked, sb):
    """A copy whose interpreter is no longer the system's (a Debian update of
    python3.11 since the install) keeps running the program, and says why it
    should be installed again."""
    changed = os.path.join(os.path.dirname(hooked), "python-sb-test-changed")
    if not os.access(os.path.dirname(hooked), os.W_OK):
        pytest.skip("the install's bin directory is not writable")
    with open(hooked, "rb") as f:
        data = bytearray(f.read())
    _, at = _build_id(data)
    data[at] ^= 0xFF
    try:
        with open(changed, "wb") as f:
            f.write(data)
        shutil.copymode(hooked, changed)
        sb.profile("os-sandbox=none\n")
        r = subprocess.run([changed, "-c", "print('ran')"], capture_output=True, text=True,
                           cwd=sb.path(), timeout=TIMEOUT, env=sb.env())
    finally:
        os.unlink(changed)
    assert r.returncode == 0, r
    assert r.stdout == "ran\n", r
    assert f"{INTERPRETER} changed since python-sb was installed" in r.stderr, r
    assert "install python-sb again" in r.stderr, r
    # The unchanged copy says nothing of it.
    r = sb.run("-c", "pass")
    assert "changed since python-sb was installed" not in r.stderr, r


@pytest.mark.skipif(LANDLOCK_ABI < 1, reason="the kernel has no Landlock")
def test_python_sb_started_again_inside_landlock_loads_its_library(hooked, sb):
    """sys.executable is the hooked copy: started again inside the sandbox,
    the dynamic loader must read python-sb-hook.so, which lies outside every
    other grant (under /usr/local/lib): the boundary grants it with the
    binary."""
    sb.write("inner.py-sandboxes", "os-sandbox=none\npy-sandbox=false\n")
    sb.profile("os-sandbox=landlock\npy-sandbox=false\npython-api=ALLOW:process-exec\nexpose-ro=.\n")
    r = sb.run("-c", "import subprocess, sys\n"
               "p = subprocess.run([sys.executable, '--pysandboxes-config', 'inner.py-sandboxes',"
               " '-c', 'print(6 * 7)'], capture_output=True, text=True)\n"
               "print(p.returncode, p.stdout.strip(), p.stderr.strip())")
    assert r.returncode == 0, r
    assert r.stdout.strip() == "0 42", r
