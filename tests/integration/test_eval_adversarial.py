# SPDX-License-Identifier: MIT
"""Adversarial sources against the eval layer alone (issue #16).

os-sandbox=none and python-import=*: the eval layer is all that stands
between each source and what it is after. One python-sb run evaluates every
attack, each under the named profile that grants what the attack needs to
*start* (eval-syntax:tools=..., eval-magic:magic=* ...), and prints one JSON
line per attack; each attack is then its own test, asserting the exact
refusal: the exception class and the attribute that names the rule
(EvalSyntaxRejected.rules, RuleEvalPermissionError.target/.rule_key,
EvalInterrupted.reason).

The same run then replays every fast attack forty times and checks that
nothing stays behind: no memory, no thread, the profiles'
namespaces unchanged, the box objects the attacks tried to write to
untouched. Threads leaked by a blocking call are the subject of their own
test (eval-max-leaked-threads).
"""

import json

import pytest

PROFILE = """\
os-sandbox=none
python-import=*
expose-ro=/proc
eval-syntax=arith
eval-namespace=closed

eval-syntax:calc=arith, compare

eval-syntax:tools=arith, compare, comprehension, subscript, func, loop, assign, exception
eval-syntax:tools=fstring, conditional, yield, import
eval-call:tools=getattr, hasattr, vars, dir, type, setattr, delattr, globals, locals
eval-call:tools=breakpoint, len, range, list, sum, iter, format, str, sorted, max, pow, int
eval-call:tools=any, next, eval, exec, compile, fmt, helper, ZeroDivisionError
eval-attribute:tools=format, format_map, vformat, get_field, upper, mro, join, ljust, extend
eval-attribute:tools=match, search, compile, real, dumps
eval-import:tools=json
eval-max-iterations:tools=200_000

eval-syntax:magic=arith, compare, comprehension, subscript, func, exception, assign
eval-magic:magic=*
eval-attribute:magic=*
eval-call:magic=getattr, type, Exception, list

eval-syntax:budget=loop, arith, func, comprehension, exception, assign, yield, subscript
eval-call:budget=sum, range, list, len, f, g, bytes
eval-attribute:budget=extend, ljust
eval-timeout:budget=5s
eval-max-iterations:budget=1000
eval-max-call-depth:budget=5
eval-max-depth:budget=10
eval-max-nodes:budget=100
eval-max-alloc:budget=100KB

eval-syntax:slow=loop, exception
eval-call:slow=BaseException, ValueError
eval-timeout:slow=300ms
eval-max-iterations:slow=1_000_000_000_000
"""

SYN = "EvalSyntaxRejected"
PERM = "RuleEvalPermissionError"
INT = "EvalInterrupted"

# id, profile, mode, source, names (keys of NAMES), expected:
#   (SYN, rule or None)         the rule is in e.rules; None: no rule allows it
#   (PERM, target, rule_key)    rule_key None: no rule allows it
#   (INT, reason)
#   ("OK", repr of the value) / (class name, text in the message)
ATTACKS = [
    # -- attribute chains, __class__ walks
    ("walk-dunder", "calc", "eval", "().__class__.__base__.__subclasses__()", (),
     (SYN, "eval-magic:calc=__class__")),
    ("walk-popen", "calc", "eval",
     "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'Popen'][0](['sh'])",
     (), (SYN, "eval-syntax:calc=comprehension")),
    ("getattr-magic", "tools", "eval", "getattr((), '__class__')", (),
     (PERM, "__class__", "eval-magic:tools")),
    ("getattr-computed", "tools", "eval", "getattr((), '__cla' + 'ss__')", (),
     (PERM, "__class__", "eval-magic:tools")),
    ("getattr-default", "tools", "eval", "getattr((), '__class__', 0)", (),
     (PERM, "__class__", "eval-magic:tools")),
    ("hasattr-magic", "tools", "eval", "hasattr((), '__class__')", (),
     (PERM, "__class__", "eval-magic:tools")),
    ("getattr-mro-hop", "tools", "eval", "getattr(type(()).mro()[1], '__subclasses__')", (),
     (PERM, "__subclasses__", "eval-magic:tools")),
    ("getattr-reserved", "tools", "eval", "getattr(o, '_' + '_sb' + '_getattr__')", ("o",),
     (PERM, "__sb_getattr__", None)),
    # Everything open in the sub-language, the API guard still refuses Popen.
    ("magic-walk-to-popen", "magic", "eval",
     "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'Popen'][0]"
     "(['/bin/true'])", (), ("RuleApiPermissionError", "subprocess.Popen")),
    ("namespace-builtins", "magic", "eval", "__builtins__", (), (SYN, None)),
    ("namespace-globals", "magic", "eval", "(lambda: 0).__globals__", (), (SYN, None)),
    ("namespace-globals-getattr", "magic", "eval", "getattr(lambda: 0, '__glo' + 'bals__')",
     (), (PERM, "__globals__", None)),
    ("namespace-builtins-getattr", "magic", "eval",
     "getattr(lambda: 0, '__built' + 'ins__')", (), (PERM, "__builtins__", None)),
    ("closure", "tools", "eval", "(lambda f: f.__closure__)(lambda: 0)", (),
     (SYN, "eval-magic:tools=__closure__")),
    ("code-attribute", "tools", "eval", "(lambda: 0).__code__", (),
     (SYN, "eval-magic:tools=__code__")),
    ("reserved-name", "calc", "eval", "__sb_getattr__", (), (SYN, None)),
    ("reserved-normalised", "calc", "eval", "_\uff3fsb_tick__", (), (SYN, None)),
    ("reserved-walrus", "tools", "eval", "(__sb_tick__ := 1)", (), (SYN, None)),
    ("attribute-store", "tools", "exec", "o.x = 1", ("o",), (SYN, None)),
    ("setattr", "tools", "eval", "setattr(o, 'x', 7)", ("o",), (PERM, "setattr", None)),
    ("delattr", "tools", "eval", "delattr(o, 'y')", ("o",), (PERM, "delattr", None)),
    ("vars-object", "tools", "eval", "vars(o)", ("o",), (PERM, "__dict__", "eval-magic:tools")),
    ("vars-namespace", "tools", "eval", "vars()", (), (PERM, "vars()", None)),
    ("globals", "tools", "eval", "globals()", (), (PERM, "globals()", None)),
    ("breakpoint", "tools", "eval", "breakpoint()", (), (PERM, "breakpoint()", None)),
    ("dir-namespace", "tools", "eval", "dir()", (), (PERM, "dir()", None)),
    ("dir-filtered", "tools", "eval", "[n for n in dir('') if n[:1] == '_']", (), ("OK", "[]")),
    ("type-factory", "tools", "eval", "type('X', (), {})", (),
     (PERM, "type(name, bases, dict)", None)),
    ("locals-hide-namespace", "tools", "eval",
     "sorted(k for k in locals() if k[:2] == '__')", (), ("OK", "[]")),
    # -- format strings
    ("format-attribute", "tools", "eval", "'{0.__class__}'.format(())", (),
     (PERM, "__class__", "eval-magic:tools")),
    ("format-unbound", "tools", "eval", "str.format('{0.__class__}', ())", (),
     (PERM, "__class__", "eval-magic:tools")),
    ("format-through-type", "tools", "eval", "type('').format('{0.__class__}', ())", (),
     (PERM, "__class__", "eval-magic:tools")),
    ("format-map", "tools", "eval", "'{0.__class__}'.format_map([()])", (),
     (PERM, "__class__", "eval-magic:tools")),
    ("format-nested-field", "tools", "eval", "'{0:{1.__class__}}'.format(3, 4)", (),
     (PERM, "__class__", "eval-magic:tools")),
    ("format-data", "tools", "eval", "'{0}-{1[0]}'.format(5, (7,))", (), ("OK", "'5-7'")),
    ("format-nested-width", "tools", "eval", "'{:{}}'.format(1, 10**9)", (),
     (PERM, "a format width or precision of 1000000000", "eval-max-alloc:tools")),
    ("fstring-width", "tools", "eval", "f'{1:{10**9}}'", (),
     (PERM, "a format width or precision of 1000000000", "eval-max-alloc:tools")),
    ("fstring-attribute", "tools", "eval", "f'{().__class__}'", (),
     (SYN, "eval-magic:tools=__class__")),
    ("printf-star-width", "tools", "eval", "'%*d' % (10**9, 1)", (),
     (PERM, "a format width or precision of 1000000000", "eval-max-alloc:tools")),
    ("printf-width", "tools", "eval", "'%0100000000d' % 1", (),
     (PERM, "a format width or precision of 100000000", "eval-max-alloc:tools")),
    ("format-builtin-width", "tools", "eval", "format(1, '0100000000d')", (),
     (PERM, "a format width or precision of 100000000", "eval-max-alloc:tools")),
    ("formatter-format", "tools", "eval", "F.format('{0.__class__}', ())", ("F",),
     (PERM, "__class__", "eval-magic:tools")),
    ("formatter-vformat", "tools", "eval", "F.vformat('{0.__class__}', ((),), {})", ("F",),
     (PERM, "__class__", "eval-magic:tools")),
    ("formatter-get-field", "tools", "eval", "F.get_field('0.__class__', ((),), {})", ("F",),
     (PERM, "__class__", "eval-magic:tools")),
    ("formatter-prebound", "tools", "eval", "fmt('{0.__class__}', ())", ("fmt",),
     (PERM, "__class__", "eval-magic:tools")),
    ("formatter-data", "tools", "eval", "F.format('{0.real}', 5)", ("F",), ("OK", "'5'")),
    # -- generators' frames
    ("generator-frame", "tools", "eval", "(i for i in [1]).gi_frame", (), (SYN, None)),
    ("generator-frame-getattr", "tools", "eval", "getattr((i for i in [1]), 'gi_' + 'frame')",
     (), (PERM, "gi_frame", None)),
    ("generator-frame-magic-star", "magic", "eval", "getattr((i for i in [1]), 'gi_frame')",
     (), (PERM, "gi_frame", None)),
    ("generator-code", "magic", "eval", "(i for i in []).gi_code", (), (SYN, None)),
    ("generator-yieldfrom", "magic", "eval", "getattr((i for i in []), 'gi_yieldfrom')", (),
     (PERM, "gi_yieldfrom", None)),
    ("function-generator-frame", "tools", "exec", "def g():\n    yield 1\nx = g().gi_frame",
     (), (SYN, None)),
    # -- exceptions' tracebacks
    ("traceback", "tools", "exec",
     "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    t = e.__traceback__", (),
     (SYN, "eval-magic:tools=__traceback__")),
    ("traceback-frame", "magic", "exec",
     "try:\n    1 / 0\nexcept Exception as e:\n    t = e.__traceback__.tb_frame", (),
     (SYN, None)),
    ("traceback-frame-getattr", "magic", "exec",
     "try:\n    1 / 0\nexcept Exception as e:\n"
     "    t = getattr(e.__traceback__, 'tb_' + 'frame')", (), (PERM, "tb_frame", None)),
    ("traceback-next-getattr", "magic", "exec",
     "try:\n    1 / 0\nexcept Exception as e:\n"
     "    t = getattr(e.__traceback__, 'tb_' + 'next')", (), (PERM, "tb_next", None)),
    # -- decorators
    ("decorator-not-callable", "tools", "exec", "@print\ndef f():\n    pass", (),
     (SYN, "eval-call:tools=print")),
    ("decorator-attribute", "tools", "exec", "@o.method\ndef f():\n    pass", ("o",),
     (SYN, "eval-attribute:tools=method")),
    # -- huge literals
    ("huge-string-literal", "calc", "eval", "'" + "a" * 200000 + "'", (),
     (SYN, None)),
    ("huge-int-literal", "calc", "eval", "1" + "0" * 5000, (),
     ("SyntaxError", "Exceeds the limit")),
    ("huge-expression", "calc", "eval", "[" + "1, " * 6000 + "]", (),
     (SYN, "eval-max-nodes:calc=")),
    ("huge-chain", "calc", "eval", "+".join(["1"] * 3000), (), (SYN, None)),
    ("huge-list-literal", "tools", "eval", "[" + "1, " * 20000 + "]", (),
     (SYN, "eval-max-nodes:tools=")),
    # -- deep nesting
    ("deep-unary", "calc", "eval", "-" * 100 + "1", (), (SYN, "eval-max-depth:calc=")),
    ("deep-unary-past-the-parser", "calc", "eval", "-" * 5000 + "1", (), (SYN, None)),
    ("deep-parentheses", "calc", "eval", "(" * 1000 + "1" + ")" * 1000, (),
     ("SyntaxError", "too many nested parentheses")),
    ("deep-lists", "calc", "eval", "[" * 30 + "]" * 30, (), (SYN, "eval-max-depth:calc=")),
    # -- budgets, each kind
    ("iterations-while", "budget", "exec", "while True: pass", (),
     (INT, "eval-max-iterations:budget=1000")),
    ("iterations-comprehension", "budget", "eval", "[0 for _ in range(10**9)]", (),
     (INT, "eval-max-iterations:budget=1000")),
    ("iterations-sum-range", "budget", "eval", "sum(range(10**12))", (),
     (INT, "eval-max-iterations:budget=1000")),
    ("iterations-list-range", "budget", "eval", "list(range(10**9))", (),
     (INT, "eval-max-alloc:budget=100KB")),
    ("iterations-quadratic-sum", "budget", "eval", "sum([[0]] * 10**4, [])", (),
     (INT, "eval-max-iterations:budget=1000")),
    ("iterations-iter-sentinel", "tools", "eval", "any(iter(int, 1))", (),
     (INT, "eval-max-iterations:tools=200000")),
    ("iterations-caught", "budget", "exec",
     "try:\n    while True: pass\nexcept BaseException:\n    x = 1", (),
     (INT, "eval-max-iterations:budget=1000")),
    ("call-depth-def", "budget", "exec", "def f(n):\n    return f(n + 1)\nf(0)", (),
     (INT, "eval-max-call-depth:budget=5")),
    ("call-depth-lambda", "budget", "eval", "(lambda g: g(g))(lambda f: f(f))", (),
     (INT, "eval-max-call-depth:budget=5")),
    ("call-depth-generator", "budget", "exec",
     "def g(n):\n    yield from g(n + 1)\n    yield n\nx = list(g(0))", (),
     (INT, "eval-max-call-depth:budget=5")),
    ("ast-depth", "budget", "eval", "-" * 15 + "1", (), (SYN, "eval-max-depth:budget=")),
    ("ast-nodes", "budget", "eval", "+".join(["1"] * 60), (), (SYN, "eval-max-nodes:budget=")),
    ("alloc-pow", "budget", "eval", "10 ** 10**9", (),
     (PERM, "10 ** 1000000000", "eval-max-alloc:budget")),
    ("alloc-repeat", "budget", "eval", "'x' * 10**6", (),
     (PERM, "'x' * 1000000", "eval-max-alloc:budget")),
    ("alloc-concat", "budget", "exec", "s = 'x' * 60000\nt = s + s", (),
     (PERM, "<str of 60000 items> + <str of 60000 items>", "eval-max-alloc:budget")),
    ("alloc-augmented", "budget", "exec", "s = [0] * 9000\ns *= 2", (),
     (PERM, "<list of 9000 items> * 2", "eval-max-alloc:budget")),
    ("alloc-lshift", "budget", "eval", "1 << 10**7", (),
     (PERM, "1 << 10000000", "eval-max-alloc:budget")),
    ("alloc-in-c-bytes", "budget", "eval", "len(bytes(10**7))", (),
     (INT, "eval-max-alloc:budget=100KB")),
    ("alloc-in-c-ljust", "budget", "eval", "len(''.ljust(10**7))", (),
     (INT, "eval-max-alloc:budget=100KB")),
    ("alloc-in-c-doubling", "budget", "exec",
     "l = [0] * 100\nfor i in range(30):\n    l.extend(l)", (),
     (INT, "eval-max-alloc:budget=100KB")),
    ("work-bigint-power", "tools", "eval", "3 ** 10**7", (),
     (PERM, "3 ** 10000000", "eval-max-iterations:tools")),
    ("work-modular-power", "tools", "eval", "pow(3, 1 << 10**6, 10**300)", (),
     (PERM, "3 ** <int of 1000001 bits>", "eval-max-iterations:tools")),
    ("timeout-loop", "slow", "exec", "while True: pass", (), (INT, "eval-timeout:slow=300ms")),
    ("timeout-swallowed", "slow", "exec",
     "while True:\n    try:\n        while True: pass\n    except BaseException:\n        pass",
     (), (INT, "eval-timeout:slow=300ms")),
    ("timeout-finally", "slow", "exec",
     "try:\n    while True: pass\nfinally:\n    while True: pass", (),
     (INT, "eval-timeout:slow=300ms")),
    ("timeout-tuple-catch", "slow", "exec",
     "while True:\n    try:\n        while True: pass\n    except (ValueError, BaseException):\n"
     "        pass", (), (INT, "eval-timeout:slow=300ms")),
    # -- regular expressions
    ("regex-nested-repeat", "tools", "eval", "re.match('(a+)+$', 'a' * 30 + 'b')", ("re",),
     (PERM, "the regular expression '(a+)+$'", None)),
    ("regex-alternation", "tools", "eval", "re.search('(a|aa)+$', 'a' * 40 + 'b')", ("re",),
     (PERM, "the regular expression '(a|aa)+$'", None)),
    ("regex-backreference", "tools", "eval", "re.search('(a*)\\\\1', 'aaa')", ("re",),
     (PERM, "the regular expression '(a*)\\\\1'", None)),
    ("regex-compiled", "tools", "eval", "P.match('x' * 40 + 'z')", ("P",),
     (PERM, "the regular expression '(x+x+)+y'", None)),
    ("regex-compile", "tools", "eval", "re.compile('(a*)*b')", ("re",),
     (PERM, "the regular expression '(a*)*b'", None)),
    ("regex-linear", "tools", "eval", "re.match('a+b', 'aab') is not None", ("re",),
     ("OK", "True")),
    # -- imports
    ("import-os", "tools", "exec", "import os", (), (SYN, "eval-import:tools=os")),
    ("import-granted", "tools", "exec", "import json\nx = json.dumps([1])", (),
     ("OK", "{'json': 'module', 'x': '[1]'}")),
    ("import-dunder", "calc", "eval", "__import__('os')", (), (SYN, "eval-call:calc=__import__")),
    ("import-relative", "tools", "exec", "from . import x", (), (SYN, None)),
    ("import-star", "tools", "exec", "from json import *", (), (SYN, None)),
    # -- evaluation inside evaluation
    ("nested-eval", "tools", "eval", "eval('().__class__')", (),
     (SYN, "eval-magic:tools=__class__")),
    ("nested-compiled", "tools", "eval", "eval(compile('6 * 7', 'x', 'eval'))", (), ("OK", "42")),
]

# Attacks that wait for a clock: run once, not in the memory rounds.
SLOW = {a[0] for a in ATTACKS if a[1] == "slow"}

HARNESS = """\
import gc, json, os, re, string, subprocess, sys, time
import pysandboxes
from pysandboxes import guarded_eval

ATTACKS = json.loads(sys.stdin.read())
SLOW = set(ATTACKS.pop('__slow__'))


class Box:
    y = 1

    def method(self, f):
        return f


BOX = Box()
NAMES = {
    'o': lambda: BOX,
    'F': lambda: string.Formatter(),
    'fmt': lambda: string.Formatter().format,
    're': lambda: re,
    'P': lambda: re.compile('(x+x+)+y'),
}


def show(value):
    if isinstance(value, dict):
        return repr({k: ('module' if type(v).__name__ == 'module' else v)
                     for k, v in sorted(value.items())})
    return repr(value)


def outcome(attack):
    profile, mode, source, names = attack
    try:
        value = guarded_eval(source, profile=profile, mode=mode,
                             names={n: NAMES[n]() for n in names})
    except pysandboxes.EvalSyntaxRejected as e:
        return {'cls': 'EvalSyntaxRejected', 'rules': e.rules, 'msg': str(e)[:300]}
    except pysandboxes.RuleEvalPermissionError as e:
        return {'cls': 'RuleEvalPermissionError', 'target': e.target, 'key': e.rule_key}
    except pysandboxes.EvalInterrupted as e:
        return {'cls': 'EvalInterrupted', 'reason': e.reason}
    except pysandboxes.RuleApiPermissionError as e:
        return {'cls': 'RuleApiPermissionError', 'msg': e.qualname}
    except BaseException as e:
        return {'cls': type(e).__name__, 'msg': str(e)[:300]}
    return {'cls': 'OK', 'value': show(value)}


def tasks():
    return len(os.listdir('/proc/self/task'))


def intact():
    # The attacks wrote nowhere: the box, the profiles' namespaces.
    return (not hasattr(BOX, 'x') and hasattr(Box, 'y')
            and guarded_eval('len([1, 2])', profile='tools') == 2
            and guarded_eval("sorted(k for k in locals())", profile='tools') == [])


for name, attack in ATTACKS.items():
    print('RESULT', json.dumps({'id': name, **outcome(attack)}), flush=True)
print('INTACT', intact(), flush=True)

# Memory: blocks in use after 10 more rounds and after 30 more. A leak per
# evaluation grows with the rounds (3000 evaluations, as many blocks); caches
# and free lists fill once.
fast = {n: a for n, a in ATTACKS.items() if n not in SLOW}
blocks = []
for rounds in (2, 10, 30):
    for _ in range(rounds):
        for attack in fast.values():
            outcome(attack)
    gc.collect()
    blocks.append(sys.getallocatedblocks())
    if rounds == 2:
        before_tasks = tasks()
print('MEMORY', len(fast), *blocks, flush=True)
print('TASKS', before_tasks, tasks(), flush=True)
print('INTACT', intact(), flush=True)
"""


@pytest.fixture(scope="module")
def results(sb_bin, tmp_path_factory):
    from conftest import Sandbox
    sb = Sandbox(sb_bin, tmp_path_factory.mktemp("eval-adversarial"))
    sb.profile(PROFILE)
    attacks = {a[0]: [a[1], a[2], a[3], list(a[4])] for a in ATTACKS}
    attacks["__slow__"] = sorted(SLOW)
    r = sb.run(sb.script(HARNESS), input=json.dumps(attacks), timeout=600)
    lines = r.stdout.splitlines()
    found = {}
    for line in lines:
        if line.startswith("RESULT "):
            entry = json.loads(line[len("RESULT "):])
            found[entry.pop("id")] = entry
    return r, found, lines


@pytest.mark.parametrize("attack", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attack_refused(results, attack):
    r, found, _ = results
    name, expected = attack[0], attack[5]
    assert name in found, r
    got = found[name]
    assert got["cls"] == expected[0], (got, r.stderr[-2000:])
    if expected[0] == SYN:
        rule = expected[1]
        if rule is None:
            assert got["rules"] == [], got
        elif rule.endswith("="):
            assert any(x.startswith(rule) for x in got["rules"]), got
        else:
            assert rule in got["rules"], got
    elif expected[0] == PERM:
        assert (got["target"], got["key"]) == (expected[1], expected[2]), got
    elif expected[0] == INT:
        assert got["reason"] == expected[1], got
    elif expected[0] == "OK":
        assert got["value"] == expected[1], got
    else:
        assert expected[1] in got["msg"], got


def test_nothing_leaked(results):
    r, _, lines = results
    intact = [line for line in lines if line.startswith("INTACT ")]
    assert intact == ["INTACT True", "INTACT True"], r
    memory = next(line for line in lines if line.startswith("MEMORY "))
    n, _, after_10, after_40 = map(int, memory.split()[1:])
    # 30 rounds of every fast attack: a leak of one block per evaluation
    # would be 30 * n blocks; what caches and free lists take is far less.
    assert after_40 - after_10 < 3 * n, memory
    tasks = next(line for line in lines if line.startswith("TASKS "))
    before_tasks, after_tasks = map(int, tasks.split()[1:])
    assert after_tasks == before_tasks, tasks


LEAKS = """\
import os, time
import pysandboxes
from pysandboxes import guarded_eval

def tasks():
    return len(os.listdir('/proc/self/task'))

def attempt(label, source, **names):
    started = time.monotonic()
    try:
        guarded_eval(source, profile='threads', names=names)
        print(label, 'OK', flush=True)
    except pysandboxes.EvalInterrupted as e:
        print(label, 'EvalInterrupted', e.reason, time.monotonic() - started < 1.5, flush=True)
    except pysandboxes.RuleEvalPermissionError as e:
        print(label, 'RuleEvalPermissionError', e.rule_key, flush=True)

start = tasks()
attempt('first', 'sleep(3)', sleep=time.sleep)
attempt('second', 'sleep(3)', sleep=time.sleep)
attempt('refused', 'len([1])')
time.sleep(3.5)
attempt('again', 'len([1])')
print('TASKS', start, tasks(), flush=True)
"""


def test_blocking_calls_and_leaked_threads(sb):
    # A blocking call costs its caller the timeout, not its life; the thread
    # left behind is counted, and past eval-max-leaked-threads new
    # evaluations are refused until it ends.
    sb.profile("os-sandbox=none\npython-import=*\nexpose-ro=/proc\n"
               "eval-call:threads=sleep, len\n"
               "eval-timeout:threads=300ms\n"
               "eval-max-leaked-threads:threads=2\n")
    r = sb.run(sb.script(LEAKS), timeout=60)
    out = r.stdout.splitlines()
    assert out[0] == "first EvalInterrupted eval-timeout:threads=300ms True", r
    assert out[1] == "second EvalInterrupted eval-timeout:threads=300ms True", r
    assert out[2] == "refused RuleEvalPermissionError eval-max-leaked-threads:threads", r
    assert out[3] == "again OK", r
    # The pool keeps the two threads it made, and no more.
    start, end = map(int, out[4].split()[1:])
    assert end - start <= 2, r
