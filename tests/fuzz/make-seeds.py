#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpora of the fuzz targets (tests/fuzz/README.md) into
tests/fuzz/corpus/<target>/seed-*: every test vector the unit tests already
have (read from their sources), pickles CPython writes for every data-only
type at every protocol, hostile streams, frames, rule files. Inputs the
fuzzers found are kept next to them under other names (crash-*, found-*)
and are never touched here. Run with the interpreter python-sb embeds:
    /usr/bin/python3 tests/fuzz/make-seeds.py
"""
import datetime
import decimal
import fractions
import hashlib
import ipaddress
import os
import pathlib
import pickle
import re
import struct
import sys
import uuid

TOP = pathlib.Path(__file__).resolve().parents[2]
CORPUS = TOP / "tests/fuzz/corpus"


def c_strings(text):
    """The C string literals of text, decoded (escapes as C reads them)."""
    out = []
    for m in re.finditer(r'"((?:[^"\\\n]|\\.)*)"', text):
        out.append(c_unescape(m.group(1)))
    return out


def c_unescape(s):
    b = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            b += c.encode()
            i += 1
            continue
        n = s[i + 1]
        if n == "x":
            j = i + 2
            while j < len(s) and s[j] in "0123456789abcdefABCDEF":
                j += 1
            b.append(int(s[i + 2:j], 16) & 0xff)
            i = j
        elif n in "01234567":
            j = i + 1
            while j < len(s) and j < i + 4 and s[j] in "01234567":
                j += 1
            b.append(int(s[i + 1:j], 8) & 0xff)
            i = j
        else:
            b += {"n": b"\n", "t": b"\t", "r": b"\r", "0": b"\0", "\\": b"\\",
                  '"': b'"', "'": b"'"}.get(n, n.encode())
            i += 2
    return bytes(b)


def write(target, data, name=None):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    name = name or hashlib.sha1(data).hexdigest()[:16]
    (d / f"seed-{name}").write_bytes(data)


def clean(target):
    d = CORPUS / target
    if d.is_dir():
        for f in d.glob("seed-*"):
            f.unlink()


# ---- pickles: result-guard and unpickle -------------------------------------

def result_guard_vectors():
    """test-result-guard.c's streams: {"name", "literal"..., length[, "reason"]}."""
    text = (TOP / "tests/unit/test-result-guard.c").read_text()
    for m in re.finditer(r'\{"([^"]*)",\s*((?:"(?:[^"\\]|\\.)*"\s*)+),\s*(\d+)(?:,\s*(?:NULL|"[^"]*"))?\}',
                         text):
        data = b"".join(c_strings(m.group(2)))[: int(m.group(3))]
        yield re.sub(r"\W+", "-", m.group(1)), data
    # The streams written inline (the MARK budget).
    for s in re.findall(r'static const char \w+\[\] = ((?:"(?:[^"\\]|\\.)*"\s*)+);', text):
        yield None, b"".join(c_strings(s))


class Obj:
    def __init__(self):
        self.v = 3


class Evil:
    def __reduce__(self):
        return (os.system, ("touch PWNED",))


class MyInt(int):
    pass


class MyError(Exception):
    pass


def data_values():
    shared = [1]
    loop = []
    loop.append(loop)
    d = {}
    d["self"] = d
    deep = []
    for _ in range(1100):
        deep = [deep]
    tz = datetime.timezone(datetime.timedelta(hours=5, minutes=30), "IST")
    return [
        None, True, False, 0, 1, -1, 255, 256, 65535, 65536, 2**31, -2**31, 2**63, 2**64 + 1,
        -(2**100), 1.5, -0.0, float("nan"), float("inf"), 3j, complex(1, -0.0), "", "a",
        "héllo", "\ud800", "x" * 300, b"", b"\x00\xff", b"y" * 300, bytearray(b"ab"),
        bytearray(), [], [1, [2, [3]]], (), (1,), (1, 2), (1, 2, 3), tuple(range(10)), {},
        {"a": 1, "b": [None]}, {1, 2}, frozenset({1}), frozenset(), [shared, shared], loop, d,
        deep, [str(i) for i in range(200)],
        pathlib.PurePosixPath("/a/b"), pathlib.PureWindowsPath("C:/x"), pathlib.Path("/tmp"),
        datetime.datetime(2024, 1, 2, 3, 4, 5, 6),
        datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone.utc),
        datetime.datetime(2024, 1, 2, tzinfo=tz), datetime.date(2021, 5, 6),
        datetime.time(1, 2), datetime.time(1, 2, tzinfo=tz), datetime.timedelta(1, 2, 3),
        datetime.timezone.utc, tz, decimal.Decimal("1.25"), decimal.Decimal("-0"),
        decimal.Decimal("NaN"), decimal.Decimal("sNaN"), decimal.Decimal("-Infinity"),
        decimal.Decimal("1e999999"), fractions.Fraction(1, 3), fractions.Fraction(-7, 2),
        uuid.UUID(int=7), uuid.UUID("12345678-1234-5678-1234-567812345678", is_safe=uuid.SafeUUID.safe),
        uuid.SafeUUID.unknown, ipaddress.IPv4Address("10.1.2.3"), ipaddress.IPv6Address("::1"),
        ipaddress.IPv4Network("10.0.0.0/8"), ipaddress.IPv6Network("fe80::/64"),
        ipaddress.IPv4Interface("10.1.2.3/8"), ipaddress.IPv6Interface("::1/128"),
        [decimal.Decimal("2.5"), fractions.Fraction(2, 3), {ipaddress.IPv4Address(1): None}],
    ]


def hostile_values():
    return [Obj(), Evil(), MyInt(3), collections_ordered(), ValueError("boom"),
            OSError(2, "No such file"), KeyError("k"), MyError("mine"), SystemExit(3),
            [Obj(), 1], {"k": Evil()}]


def collections_ordered():
    import collections
    return collections.OrderedDict(a=1)


def descriptor(exc, module, qualname):
    """An exception frame's payload, as the worker writes it."""
    return pickle.dumps((module, qualname, str(exc), ["RuleFileNotFoundError: Access"],
                         "Traceback (most recent call last):\n  ...\n",
                         pickle.dumps(exc, 5)), 5)


def pickle_seeds():
    for target in ("result-guard", "unpickle"):
        clean(target)
    for name, data in result_guard_vectors():
        write("result-guard", data, name and f"vector-{name}")
        write("unpickle", data, name and f"vector-{name}")
    for v in data_values():
        for proto in range(6):
            try:
                data = pickle.dumps(v, proto)
            except Exception:
                continue
            write("unpickle" if proto >= 4 else "result-guard", data)
    for v in hostile_values():
        for proto in (0, 2, 4, 5):
            try:
                data = pickle.dumps(v, proto)
            except Exception:
                continue
            write("result-guard" if proto < 4 else "unpickle", data)
    for exc, m, q in ((ValueError("boom"), "builtins", "ValueError"),
                      (OSError(2, "gone"), "builtins", "FileNotFoundError"),
                      (MyError("x"), "mod", "MyError"), (SystemExit(2), "builtins", "SystemExit"),
                      (KeyError("k"), "builtins", "KeyError")):
        write("unpickle", descriptor(exc, m, q))
    # The fallback: the class from the caller's modules when the pickled
    # exception is garbage, of another class, or refused.
    for rich in (b"garbage", pickle.dumps(KeyError("k"), 5), pickle.dumps(Evil(), 5),
                 pickle.dumps(Obj(), 5), b""):
        for m, q in (("builtins", "ValueError"), ("builtins", "OSError"), ("builtins", "list"),
                     ("collections", "OrderedDict"), ("builtins", "ValueError.__init__")):
            write("unpickle", pickle.dumps((m, q, "message", [], "", rich), 5))
    # Out-of-band buffers (protocol 5).
    write("result-guard", pickle.dumps(pickle.PickleBuffer(b"abc"), 5, buffer_callback=lambda b: False))


# ---- frames -----------------------------------------------------------------

def frame(t, payload):
    return struct.pack("<I", len(payload)) + t.encode() + payload


def frame_seeds():
    clean("frame")
    config = b"path=/srv/app\0main=/srv/app/main.py\0"
    call = pickle.dumps(("mod", "f", (1,), {}), 5)
    value = pickle.dumps([1, "x"], 5)
    worker = frame("C", config) + frame("Q", call) + frame("X", b"")
    parent = (frame("R", b"mode=data-only\0guard=true\0provider=landlock") + frame("I", b"")
              + frame("O", "héllo\n".encode()) + frame("E", b"err\n") + frame("V", value)
              + frame("T", struct.pack("<Q", 600000)) + frame("P", b"malformed call request")
              + frame("F", descriptor(ValueError("x"), "builtins", "ValueError")))
    for limit in range(7):
        for timeout in (0, 0x80):
            ctl = bytes([limit | timeout])
            write("frame", b"\0" + ctl + worker)
            write("frame", b"\1" + ctl + parent)
    write("frame", b"\0\5" + worker[:3])
    write("frame", b"\0\5" + worker[:-1] + b"\xff\xff\xff\xff")
    write("frame", b"\0\6" + struct.pack("<I", 64 << 20) + b"V")
    write("frame", b"\1\4" + struct.pack("<I", 2 * 65536 + 1) + b"O" + b"x" * 10)
    write("frame", b"\1\3" + frame("V", b"x" * 100) + frame("R", b"mode=objects"))
    write("frame", b"\0\0")
    write("frame", b"\1\0")
    # Round trips: (type, 16-bit length) each, '|', then the payload bytes.
    write("frame", b"\2\0" + b"Q\x05\x00" + b"|" + b"hello")
    write("frame", b"\2\0" + b"V\x00\x00I\x00\x00")
    write("frame", b"\2\0" + b"V\x00\x88" + b"O\x10\x00" + b"|" + bytes(range(256)))
    write("frame", b"\2\0" + b"V\xff\xff" + b"|" + b"abc")


# ---- the text parsers -----------------------------------------------------------

def text_seeds():
    for t in ("net-rule", "expand", "units", "learn-file", "explain"):
        clean(t)
    unit = TOP / "tests/unit"
    for s in c_strings((unit / "test-net-rule.c").read_text()):
        if b"|" in s:
            write("net-rule", s)
    profiles = sorted((TOP / "tests/data/profiles").rglob("*"))
    for p in profiles:
        if p.is_file():
            for line in p.read_bytes().splitlines():
                if line.startswith(b"net="):
                    write("net-rule", line[4:].split(b"#")[0].strip())
                for m in re.finditer(rb"\$\{[^ ]*", line):
                    write("expand", m.group(0))

    text = (unit / "test-expand.c").read_text()
    for s in c_strings(text):
        write("expand", s)

    text = (unit / "test-units.c").read_text()
    for m in re.finditer(r'\{(COUNT|SIZE|DURATION), "((?:[^"\\]|\\.)*)"', text):
        kind = {"COUNT": 0, "SIZE": 1, "DURATION": 2}[m.group(1)]
        write("units", bytes([kind]) + c_unescape(m.group(2)))
    for kind in range(3):
        for s in (b"1.5000000000000000000000s", b"1.00000000000000000001s", b"0.000000001GB",
                  b"00000000000000000000001", b"1_0.0_5KB"):
            write("units", bytes([kind]) + s)

    # The rule file, SEP, learned lines ("<section digit><line>"), SEP, line
    # numbers to comment out.
    sep = b"\xff\xfe\xfd"
    template = (TOP / "data/py-sandboxes.template").read_bytes()
    rules = (sep + b"0env=A=${A}\n1expose-ro=./data\n1# seen from native code\n"
             b"2net=ALLOW|tcp|127.0.0.1|80,443|OUT\n3# Standard Python\n3python-import=json\n"
             b"4python-api=ALLOW:os.system\n6remote-result-mode=data-only\n")
    write("learn-file", template + rules)
    write("learn-file", template + rules + sep + b"\x01\x05\x40")
    merge = (b"expose-ro=/data\n# <learning_guard_files>\nexpose-ro=/srv\n"
             b"# </learning_guard_files>\npython-import=json\n")
    write("learn-file", merge + sep + b"1expose-ro=/srv\n1expose-rw=./out\n3# Standard Python\n"
          b"3python-import=json\n0env=A=${A}\n" + sep + b"\x01")
    write("learn-file", b"a\r\nb\r\n" + sep + b"3python-import=os\n")
    write("learn-file", b"no newline at the end" + sep + b"0env=B=${B}\n0env=B=${B}\n")
    write("learn-file", b"python-import=os\n\0python-import=json\n" + sep + b"3python-import=x\n")
    write("learn-file", b"")

    env = b"HOME=/home/tester\nFOO=foo-value\nEMPTY=\nINJECT=${FOO}\nTMPDIR=/tmp\nAPI_TOKEN=secret\n"
    args = b"--net=ALLOW|tcp|127.0.0.1|80|OUT\n--expose-ro=/tmp\n--python-import=json\n-c\npass"
    for p in sorted((TOP / "tests/data/profiles/valid").glob("*.prof")):
        body = p.read_bytes()
        write("explain", body + b"\0" + args + b"\0" + env)
        write("explain", body)
    # test-cli.c's command lines ({.args = {...}, ...}), with the kitchen-sink profile.
    sink = (TOP / "tests/data/profiles/valid/kitchen-sink.prof").read_bytes()
    for m in re.finditer(r"\.args = \{((?:\s*\"(?:[^\"\\]|\\.)*\",?)*)\s*\}", (unit / "test-cli.c").read_text()):
        args = c_strings(m.group(1))
        if all(b"\n" not in a for a in args):
            write("explain", sink + b"\0" + b"\n".join(args) + b"\0" + env)
    write("explain", b"os-sandbox=landlock\nnet=ALLOW|tcp|*|443|OUT\n\0--explain\n-I\n-c\npass\0")
    write("explain", b"\0--py-sandbox=false\n--os-sandbox=none\n-m\nmod\0PATH=/bin")


# ---- the eval layer -------------------------------------------------------------

def eval_seeds():
    """A byte (mode: 0 eval, 1 exec, 2 single; + 3 * the profile's index), the
    eval-* lines, NUL, the source: every attack of test_eval_adversarial.py
    under its profile, and a few sources that use every group."""
    import ast
    clean("eval")
    path = TOP / "tests/integration/test_eval_adversarial.py"
    tree = ast.parse(path.read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and \
                node.targets[0].id in ("PROFILE", "ATTACKS") and node.targets[0].id not in found:
            found[node.targets[0].id] = eval(compile(ast.Expression(node.value), str(path), "eval"),
                                             {"SYN": "SYN", "PERM": "PERM", "INT": "INT"})
    rules = "".join(line + "\n" for line in found["PROFILE"].splitlines()
                    if line.startswith("eval-")).encode()
    # The order sb_eval_rules_prepare() keeps: the default profile, then the
    # named ones as they first appear.
    names = [None]
    for line in found["PROFILE"].splitlines():
        m = re.match(r"eval-[a-z-]+(?::([a-z]+))?=", line)
        if m and m.group(1) not in names:
            names.append(m.group(1))
    for attack in found["ATTACKS"]:
        _, profile, mode, source = attack[:4]
        index = names.index(profile) if profile in names else 0
        write("eval", bytes([("eval", "exec").index(mode) + 3 * index]) + rules + b"\0" +
              source.encode())
    everything = (b"eval-syntax=arith, compare, conditional, loop, comprehension, assign, func,"
                  b" async, class, exception, context, import, subscript, fstring, yield\n"
                  b"eval-syntax=Delete, Global, Nonlocal, Match, match_case, MatchValue, MatchAs,"
                  b" MatchOr, MatchSequence, MatchMapping, MatchClass, MatchStar, MatchSingleton\n"
                  b"eval-call=len, range, str, print, sorted, sum, type, isinstance, getattr\n"
                  b"eval-attribute=upper, join, append, items, keys, format\n"
                  b"eval-attribute=str-methods, list-methods\n"
                  b"eval-import=json, math\neval-magic=__len__, __init__, __x__\n")
    sources = [
        (1, b"def f(x, *a, k=1, **kw):\n    for i in range(x):\n        y = i * 2\n"
            b"    return len(str(y).upper())\n"),
        (1, b"import json\nfrom math import sqrt as s\nimport json.decoder\n"),
        (1, b"try:\n    x = [i for i in range(3) if i]\nexcept (ValueError, KeyError) as e:\n"
            b"    raise\nelse:\n    pass\nfinally:\n    del x\n"),
        (0, b"f'{1:>{2}}{3!r}' + 'a'.upper() + 'x' * 3 + '%s' % 1"),
        (0, b"lambda q, /, r=2: q % 3 ** 2 << r"),
        (1, b"class A:\n    def __init__(self):\n        self.v = 1\n    def __len__(self):\n"
            b"        return 1\n@f\ndef g(): pass\n"),
        (1, b"while x:\n    x -= 1\n    x += 2\n    x *= 3\n    x **= 1\n    x <<= 1\n"
            b"    x %= 7\n    if x: break\n    continue\n"),
        (1, b"async def h():\n    async for a in b:\n        await c\n    async with d as e:\n"
            b"        pass\n"),
        (1, b"def gen():\n    yield 1\n    yield from range(2)\n    global G\n"),
        (1, b"match p:\n    case [1, *rest]: pass\n    case {'k': v, **kw}: pass\n"
            b"    case A(x=1, y=b): pass\n    case None | 0: pass\n    case _: pass\n"),
        (1, b"with open(f) as (a, b):\n    a[1:2] = b[::-1]\n    (c := 3)\n"),
        (0, b"{k: v for k, v in d.items()} | {*s} | {x async for x in y}"),
        (2, b"x = 1; y = x if x else -x; z = not x and x or ~x"),
        (0, b"'{0.upper}'.format('a')"),
        (1, b"from . import x\nfrom __future__ import annotations\n"),
        (0, b"().__class__.__bases__[0].__subclasses__()"),
        (0, b"(lambda: 0).__globals__['__builtins__']"),
        (0, b"(x for x in ()).gi_frame.f_back.f_globals"),
        (0, b"__sb_getattr__(1, 'real')"),
        (0, b"\xef\xbc\xbf\xef\xbc\xbfsb_tick__"),
        (0, b"((((((((((((((((((((((((1))))))))))))))))))))))))"),
        (0, b"[" * 120 + b"]" * 120),
    ]
    for mode, source in sources:
        write("eval", bytes([mode]) + everything + b"\0" + source)
        write("eval", bytes([mode]) + b"eval-syntax=arith\n\0" + source)
    write("eval", b"\x01eval-max-nodes=10\neval-max-depth=3\neval-syntax=arith\n\0"
          b"1 + (2 + (3 + (4 + 5)))\n")
    write("eval", b"\x01eval-attribute=*\neval-magic=*\neval-call=*\neval-syntax=func\n\0"
          b"(lambda: 0).__code__.co_consts\n")


# ---- the service's requests ------------------------------------------------------

def serve_request_seeds():
    """A policy byte (0: test-serve-request.c's, 1: the server's, 2: no limits),
    then a body: every body of the unit test, the example of docs/serve.md."""
    clean("serve-request")
    bodies = [s for s in c_strings((TOP / "tests/unit/test-serve-request.c").read_text())
              if s.startswith(b"{") or s in (b"", b"nul", b"[]", b'"x"')]
    for m in re.finditer(r"```json\n(.*?)```", (TOP / "docs/serve.md").read_text(), re.S):
        bodies.append(m.group(1).encode())
    bodies += [
        b'{"source": "", "files": {"main.py/x": ""}}',
        b'{"source": "", "files": {"a/b": "1", "a/c": "2", "b": "\\u00e9"}}',
        b'{"source": "x", "args": [], "files": {}, "limits": {}, "stdin": ""}',
        b'{"source": "", "limits": {"timeout_ms": 9223372036854775807, "cpu_ms": 1,'
        b' "memory_bytes": 1, "output_bytes": 1}}',
        b'{"source": "", "files": {"' + b"a" * 255 + b'": ""}}',
        b'{"source": "", "files": {"' + b"a/" * 8 + b'b": ""}}',
    ]
    for body in bodies:
        for policy in range(3):
            write("serve-request", bytes([policy]) + body)


if __name__ == "__main__":
    if sys.version_info[:2] != (3, 11):
        sys.exit("make-seeds.py: run it with the interpreter python-sb embeds (3.11)")
    sys.setrecursionlimit(10000)
    pickle_seeds()
    frame_seeds()
    text_seeds()
    serve_request_seeds()
    eval_seeds()
    for d in sorted(CORPUS.iterdir()):
        print(d.name, len(list(d.iterdir())))
