# SPDX-License-Identifier: MIT
"""io.open_code() of the standard library's bytecode caches, served by the
guard (src/guard/guard-open-code.h): each cache an import reads is opened
once (the guard used to read it a second time to prove the unmarshalled code
was the file's), the open is the same audit event and the same errors as
io.open()'s, and the only visible difference is the file object (an
io.BytesIO over the bytes). That code laundered under a standard-library
name is still refused is test_adversarial_runtime.py's
(marshal-served-cache-edited and the marshal attacks before it)."""
import ctypes
import importlib.util
import os
import struct
import sysconfig

import pytest

STDLIB = sysconfig.get_path("stdlib")
# A module nothing else on the machine imports while the test runs: the
# watch below sees every process's opens.
MODULE = "colorsys"
SOURCE = os.path.join(STDLIB, MODULE + ".py")
CACHE = importlib.util.cache_from_source(SOURCE)

IN_OPEN = 0x20
IN_CLOSE_NOWRITE = 0x10
IN_NONBLOCK = os.O_NONBLOCK


def _inotify():
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(IN_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        pytest.skip(f"inotify_init1: {os.strerror(ctypes.get_errno())}")
    # IN_CLOSE_NOWRITE too: the kernel folds an event into an identical one
    # still unread, so two opens in a row would count as one.
    if libc.inotify_add_watch(fd, os.path.dirname(CACHE).encode(),
                              IN_OPEN | IN_CLOSE_NOWRITE) < 0:
        err = ctypes.get_errno()
        os.close(fd)
        pytest.skip(f"inotify_add_watch: {os.strerror(err)}")
    return fd


def _opens(fd, name):
    count = 0
    while True:
        try:
            buf = os.read(fd, 65536)
        except BlockingIOError:
            return count
        pos = 0
        while pos < len(buf):
            _, mask, _, length = struct.unpack_from("iIII", buf, pos)
            event_name = buf[pos + 16:pos + 16 + length].rstrip(b"\0").decode()
            if mask & IN_OPEN and event_name == name:
                count += 1
            pos += 16 + length


@pytest.fixture
def cache():
    if not os.path.isfile(CACHE):
        pytest.skip(f"{CACHE} is missing: imports would compile the source")
    return CACHE


PROFILES = {
    "guard": "os-sandbox=none\npython-import=*\n",
    "no-guard": "os-sandbox=none\npy-sandbox=false\npython-import=*\n",
    "landlock": "os-sandbox=landlock\npython-import=*\n",
}


@pytest.mark.parametrize("who", ["root", "nobody"])
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_each_stdlib_cache_is_opened_once(request, cache, who, profile):
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    fd = _inotify()
    try:
        r = sb.run_code(PROFILES[profile],
                        f"import {MODULE}\nprint('LOADED', {MODULE}.__spec__.cached)\n")
        opens = _opens(fd, os.path.basename(cache))
    finally:
        os.close(fd)
    assert r.returncode == 0, r
    assert f"LOADED {cache}" in r.stdout, r
    assert opens == 1, (opens, r)


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_the_guard_decides_on_a_served_cache(request, cache, who):
    # The hook raises the "open" event itself: a cache ignore= hides is never
    # opened, io.open_code() is refused as io.open() would be, and the import
    # falls back to the module's source (os-sandbox=none: the guard alone).
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    fd = _inotify()
    try:
        r = sb.run_code(PROFILES["guard"] + f"ignore={cache}\n",
                        f"import io, {MODULE}\nprint('IMPORTED', {MODULE}.__name__)\n"
                        f"try:\n    io.open_code({cache!r})\n"
                        "except FileNotFoundError as e:\n    print('REFUSED', type(e).__name__)\n")
        opens = _opens(fd, os.path.basename(cache))
    finally:
        os.close(fd)
    assert r.returncode == 0, r
    assert f"IMPORTED {MODULE}" in r.stdout, r
    assert "REFUSED RuleFileNotFoundError" in r.stdout, r
    assert f"is ignored by rule 'ignore={cache}'" in r.stderr, r
    assert opens == 0, (opens, r)


OPEN_CODE = """\
import io, os, sys
CACHE = {cache!r}
MISSING = {missing!r}
seen = []
sys.addaudithook(lambda event, args: event == 'open' and seen.append(args))
f = io.open_code(CACHE)
data = f.read()
events = list(seen)
with open(CACHE, 'rb') as g:
    print('SAME', data == g.read())
print('TYPE', type(f).__name__)
print('EVENTS', events == [(CACHE, 'r', os.O_RDONLY | os.O_CLOEXEC)], events)
try:
    io.open_code(MISSING)
except FileNotFoundError as e:
    print('MISSING', e.errno, e.filename == MISSING)
with io.open_code(__file__) as h:
    print('OTHER', type(h).__name__, h.read(9))
"""


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_open_code_of_a_stdlib_cache(request, cache, who):
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    missing = os.path.join(os.path.dirname(cache), "no-such-module.cpython-311.pyc")
    # The program's own audit hook sees the event: it needs its grant.
    r = sb.run_code(PROFILES["landlock"] + "python-api=ALLOW:sys.addaudithook\n",
                    OPEN_CODE.format(cache=cache, missing=missing))
    assert r.returncode == 0, r
    assert "SAME True" in r.stdout, r
    assert "TYPE BytesIO" in r.stdout, r
    assert "EVENTS True" in r.stdout, r
    assert "MISSING 2 True" in r.stdout, r
    # Another file: io.open()'s buffered reader, as without the guard.
    assert "OTHER BufferedReader b'import io'" in r.stdout, r


def test_open_code_without_the_guard_is_cpythons(sb, cache):
    missing = os.path.join(os.path.dirname(cache), "no-such-module.cpython-311.pyc")
    r = sb.run_code(PROFILES["no-guard"], OPEN_CODE.format(cache=cache, missing=missing))
    assert r.returncode == 0, r
    assert "TYPE BufferedReader" in r.stdout, r
    assert "EVENTS True" in r.stdout, r
    assert "MISSING 2 True" in r.stdout, r


@pytest.mark.parametrize("profile", ["guard", "landlock"])
def test_open_code_called_by_the_program_needs_no_import_rule(sb, profile):
    # CPython's io.open_code() imports _io to call _io.open(): from the
    # program's call, that import was the program's, refused without
    # python-import=_io (runpy.run_path() of a file hit it too).
    rules = PROFILES[profile].replace("python-import=*", "python-import=io")
    r = sb.run_code(rules, "import io\nwith io.open_code(__file__) as f:\n"
                           "    print('READ', f.read(9))\n")
    assert r.returncode == 0, r
    assert "READ b'import io'" in r.stdout, r
