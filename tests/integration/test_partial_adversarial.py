# SPDX-License-Identifier: MIT
"""Partial mode against a hostile sandboxed function (docs/partial-mode.md,
"The result guard"): the function runs in the worker and may write anything
to its channel (fd 3) or return anything. The parent (an ordinary
/usr/bin/python3) must survive each attack with the documented error, as root
and as nobody, and keep serving calls."""

import pytest

from conftest import LANDLOCK_ABI
from test_partial import main, partial, partial_nobody  # noqa: F401 (fixtures)

MODULE = '''\
import os, struct, pickle
from pysandboxes import sandbox

P = (1 << 61) - 1

def frame(t, p):
    return struct.pack('<I', len(p)) + t + p

class FakeExit(Exception):
    """Says it is builtins.SystemExit and pickles as SystemExit(0)."""
    def __reduce__(self):
        return (SystemExit, (0,))
FakeExit.__module__, FakeExit.__qualname__ = 'builtins', 'SystemExit'

class FakeInterrupt(Exception):
    def __reduce__(self):
        return (KeyboardInterrupt, ())
FakeInterrupt.__module__, FakeInterrupt.__qualname__ = 'builtins', 'KeyboardInterrupt'

class Collide:
    """A set of 40,000 ints of equal hash: quadratic to build."""
    def __reduce__(self):
        return (set, ([k * P for k in range(1, 40001)],))

@sandbox
def deep_key():
    # A tuple 400,000 deep used as a dict key: tuplehash recurses in C.
    os.write(3, frame(b'V', b'\\x80\\x05}' + b')' + b'\\x85' * 400000 + b'Ns.'))
    os._exit(0)

@sandbox
def fake_exit():
    raise FakeExit()

@sandbox
def fake_interrupt():
    raise FakeInterrupt()

@sandbox
def inject():
    os.write(3, frame(b'V', pickle.dumps('INJECTED', protocol=5)))
    return 'mine'

@sandbox
def collide():
    return Collide()

@sandbox
def collide_frame():
    body = b'(' + b''.join(b'\\x8a\\x10' + (k * P).to_bytes(16, 'little', signed=True)
                           for k in range(1, 25001))
    os.write(3, frame(b'V', b'\\x80\\x05\\x8f' + body + b'\\x90.'))
    os._exit(0)

@sandbox
def echo(x):
    return x
'''

ATTACKS = {
    "deep": '''
        try:
            deep_key()
            print("deep: no error")
        except RestrictedUnpicklingError as e:
            print("deep: refused", "nested deeper than 1000 levels" in str(e))
        except SandBoxProtocolError as e:
            print("deep: protocol", e)
        try:  # the worker left with os._exit: this call finds it gone
            echo(0)
        except SandBoxProtocolError:
            pass
    ''',
    "exit": '''
        for f in (fake_exit, fake_interrupt):
            try:
                f()
            except SandBoxBaseExceptionError as e:
                print("exit: base", e)
            print("exit: after", echo(41) + 1)
    ''',
    "inject": '''
        import time
        for i, f in enumerate((inject, lambda: echo(42), lambda: echo(43))):
            try:
                print("inject:", i, repr(f()))
            except SandBoxProtocolError as e:
                print("inject:", i, "protocol", "nobody asked for" in str(e))
            time.sleep(0.3)
    ''',
    "collide": '''
        import time
        for f in (collide, collide_frame):
            t = time.monotonic()
            try:
                f()
                print("collide: no error")
            except RestrictedUnpicklingError as e:
                print("collide: refused", "share one hash value" in str(e)
                      or "a set made by calling builtins.set" in str(e))
            print("collide: fast", time.monotonic() - t < 5)
        try:  # collide_frame's worker left with os._exit
            echo(0)
        except SandBoxProtocolError:
            pass
        print("collide: after", echo(7))
    ''',
}


def run_attack(partial, body, provider="subprocess", extra=""):
    partial.write("mod.py", MODULE)
    return partial.run(main(body, provider, ", call_timeout=20" + extra))


def test_deep_nesting_refused(partial):
    """A1: refused by the prescan (the parent would die of SIGSEGV)."""
    r = run_attack(partial, ATTACKS["deep"] + '    print("survived")\n')
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "deep: refused True" in r.stdout, r.stdout
    assert "survived" in r.stdout


def test_base_exception_named_by_the_worker(partial):
    """A2: a class that says it is builtins.SystemExit does not end the
    parent; neither does KeyboardInterrupt."""
    r = run_attack(partial, ATTACKS["exit"])
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.count("exit: base builtins.SystemExit") == 1, r.stdout
    assert r.stdout.count("exit: base builtins.KeyboardInterrupt") == 1, r.stdout
    assert r.stdout.count("exit: after 42") == 2, r.stdout


def test_forged_reply_does_not_shift_replies(partial):
    """A3: a forged reply frame followed by the real one: the extra frame
    is a protocol error, never the next call's reply."""
    r = run_attack(partial, ATTACKS["inject"])
    assert r.returncode == 0, r.stderr[-2000:]
    assert "'mine'" not in r.stdout, r.stdout
    assert "inject: 1 42" in r.stdout or "inject: 1 protocol True" in r.stdout, r.stdout
    assert "protocol True" in r.stdout, r.stdout
    assert "inject: 2 43" in r.stdout, r.stdout


def test_hash_collisions_refused(partial):
    """A4: 40,000 keys of one hash value (quadratic to insert, with the GIL
    held: minutes): refused before anything is built."""
    r = run_attack(partial, ATTACKS["collide"])
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.count("collide: refused True") == 2, r.stdout
    assert r.stdout.count("collide: fast True") == 2, r.stdout
    assert "collide: after 7" in r.stdout, r.stdout


def test_attacks_as_nobody(partial_nobody):
    provider = "landlock" if LANDLOCK_ABI >= 1 else "subprocess"
    body = (ATTACKS["deep"] + ATTACKS["exit"] + ATTACKS["inject"] + ATTACKS["collide"]
            + '    print("survived")\n')
    r = run_attack(partial_nobody, body, provider)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "deep: refused True" in r.stdout, r.stdout
    assert r.stdout.count("exit: after 42") == 2, r.stdout
    assert "'mine'" not in r.stdout and "inject: 2 43" in r.stdout, r.stdout
    assert r.stdout.count("collide: refused True") == 2, r.stdout
    assert "survived" in r.stdout
