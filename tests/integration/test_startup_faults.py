# SPDX-License-Identifier: MIT
"""Start-up's page faults (src/base/prefault.h; bench/README.md, "Page faults,
prefaulted"): before CPython starts, python-sb maps the executable's data in
one system call, where the interpreter alone takes a page fault per page it
writes. Seen from the program: every page of that mapping is present, as a
private copy, while /usr/bin/python3 running the same check
leaves some unmapped. The launcher alone (os-sandbox=none, py-sandbox=false,
which would refuse /proc/self/pagemap), and with Landlock, seccomp and limits;
root and nobody."""

import os
import subprocess

import pytest

from conftest import not_under_asan

PYTHON3 = "/usr/bin/python3"

CHECK = r'''
import os, struct
exe = os.path.realpath("/proc/self/exe")
ranges = []
with open("/proc/self/maps") as f:
    for line in f:
        parts = line.split()
        start, end = (int(x, 16) for x in parts[0].split("-"))
        if len(parts) > 5 and parts[5] == exe and parts[1] == "rw-p":
            ranges.append((start, end))
present = private = total = 0
with open("/proc/self/pagemap", "rb") as pm:
    for start, end in ranges:
        for page in range(start // 4096, end // 4096):
            pm.seek(page * 8)
            (e,) = struct.unpack("<Q", pm.read(8))
            total += 1
            present += bool(e >> 63 & 1)
            private += bool(e >> 63 & 1) and not (e >> 61 & 1)
print(total, present, private)
'''


def pages(cmd, cwd, env):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r
    total, present, private = map(int, r.stdout.split())
    return total, present, private


# An ASan build's data holds its runtime's too: larger than what the
# launcher prefaults (SB_PREFAULT_MAX_BYTES in src/launcher/main.c).
@not_under_asan
@pytest.mark.parametrize("provider", ["none", "landlock"])
@pytest.mark.parametrize("who", ["root", "nobody"])
def test_interpreter_data_is_mapped_before_it_starts(request, who, provider):
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    if provider == "none":
        sb.profile("os-sandbox=none\npy-sandbox=false\n")
    else:
        # The program reads its own maps and pagemap.
        sb.profile("os-sandbox=landlock\npy-sandbox=false\nlimit-memory=1GB\n"
                   "limit-open-files=256\ntimeout=10s\n"
                   "expose-ro=/proc/self\n")
    script = sb.script(CHECK)
    total, present, private = pages(sb.prefix + [sb.binary, str(script)], sb.root, sb.env())
    assert total > 100, "the executable's data and .bss were not found"
    assert present == total and private == total, (total, present, private)


@pytest.mark.skipif(not os.access(PYTHON3, os.X_OK), reason=f"no {PYTHON3}")
def test_the_interpreter_alone_leaves_pages_unmapped(sb):
    """The control: the check tells the two apart."""
    script = sb.script(CHECK)
    total, present, private = pages([PYTHON3, str(script)], sb.root, sb.env())
    assert total > 100 and private < total, (total, present, private)
