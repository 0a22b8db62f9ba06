# SPDX-License-Identifier: MIT
"""The eval-* layer (spec section 5), one test per behaviour of spec section 10
(15 to 22), then what the behaviours imply: the report, the namespace modes,
named profiles, code objects, learning.

Every run uses os-sandbox=none: what stops the evaluated code is the eval
layer alone. Each refusal is proven to come from it: the exception class and
the attribute naming the rule (EvalSyntaxRejected.rules, RuleEvalPermissionError
.target/.rule_key, EvalInterrupted.reason).
"""

import json
import re

import pytest

from test_learning import block

BASE = "os-sandbox=none\npython-import=*\n"

# Prints one line per call: "<label> OK <repr>" or "<label> <class> <detail>".
PROBE = """\
import pysandboxes, time
def probe(label, fn):
    started = time.monotonic()
    try:
        value = fn()
    except pysandboxes.EvalSyntaxRejected as e:
        print(label, 'EvalSyntaxRejected', e.rules, flush=True)
    except pysandboxes.RuleEvalPermissionError as e:
        print(label, 'RuleEvalPermissionError', repr(e.target), e.rule_key, flush=True)
    except pysandboxes.EvalInterrupted as e:
        print(label, 'EvalInterrupted', e.reason, round(time.monotonic() - started, 1), flush=True)
    except BaseException as e:
        print(label, type(e).__name__, str(e).splitlines()[0][:200], flush=True)
    else:
        print(label, 'OK', repr(value)[:200], flush=True)
"""


def run(sb, profile, code, **kw):
    return sb.run_code(BASE + profile, PROBE + code, **kw)


def outcome(r, label):
    for line in r.stdout.splitlines():
        if line.startswith(label + " "):
            return line[len(label) + 1:]
    raise AssertionError(f"no outcome for {label!r}: {r!r}")


# --- spec 10, behaviours 15 to 22 ------------------------------------------------

def test_spec_10_15_closed_arith(sb):
    r = run(sb, "eval-namespace=closed\neval-syntax=arith\n",
            "probe('sum', lambda: eval('40 + 2', {'__builtins__': {}}, {}))\n"
            "probe('walk', lambda: eval('().__class__.__base__.__subclasses__()',"
            " {'__builtins__': {}}, {}))\n")
    assert outcome(r, "sum") == "OK 42", r
    assert outcome(r, "walk") == ("EvalSyntaxRejected ['eval-magic=__class__', "
                                  "'eval-magic=__base__', 'eval-magic=__subclasses__']"), r


def test_spec_10_16_timeout_caller_survives(sb):
    r = run(sb, "eval-syntax=loop\neval-timeout=1s\neval-max-iterations=1_000_000_000_000\n",
            "probe('loop', lambda: exec('while True: pass'))\n"
            "print('AFTER', eval('[1, 2]'))\n")
    out = outcome(r, "loop").split()
    assert out[:2] == ["EvalInterrupted", "eval-timeout=1s"], r
    assert 0.9 <= float(out[2]) < 3, r
    assert "AFTER [1, 2]" in r.stdout and r.returncode == 0, r


def test_spec_10_16_interrupted_is_not_an_exception(sb):
    # EvalInterrupted escapes `except Exception` and `except SandBoxError`
    # in the caller, and cannot be caught by the evaluated code itself.
    r = run(sb, "eval-syntax=loop, exception\neval-timeout=300ms\n"
                "eval-max-iterations=1_000_000_000_000\n",
            "import pysandboxes\n"
            "try:\n"
            "    try:\n"
            "        exec('while True:\\n try:\\n  while True: pass\\n except BaseException:\\n"
            "  pass')\n"
            "    except (Exception, pysandboxes.SandBoxError):\n"
            "        print('CAUGHT-AS-EXCEPTION')\n"
            "except BaseException as e:\n"
            "    print('OUTER', type(e).__name__, e.reason)\n")
    assert "CAUGHT-AS-EXCEPTION" not in r.stdout, r
    assert "OUTER EvalInterrupted eval-timeout=300ms" in r.stdout, r


def test_spec_10_17_calculator(sb):
    r = run(sb, "eval-namespace=closed\neval-syntax=arith, compare\n",
            "probe('calc', lambda: eval('(3 + 4) * 2'))\n"
            "probe('len', lambda: eval('len([1, 2])'))\n"
            "started = time.monotonic()\n"
            "probe('pow', lambda: eval('10 ** 10**9'))\n"
            "print('POW-TIME', time.monotonic() - started < 1)\n")
    assert outcome(r, "calc") == "OK 14", r
    assert outcome(r, "len") == "EvalSyntaxRejected ['eval-call=len']", r
    assert outcome(r, "pow") == "RuleEvalPermissionError '10 ** 1000000000' eval-max-alloc", r
    assert "POW-TIME True" in r.stdout, r


@pytest.mark.parametrize("label,source", [
    ("def", "def f(n): return f(n+1)\nf(0)"),
    ("lambda", "(lambda g: g(g))(lambda f: f(f))"),
])
def test_spec_10_18_call_depth(sb, label, source):
    r = run(sb, "eval-syntax=func, arith\neval-call=f, g\n",
            f"probe('{label}', lambda: exec({source!r}))\n")
    assert outcome(r, label).startswith("EvalInterrupted eval-max-call-depth=20 "), r


def test_spec_10_19_profile_errors(sb):
    cases = [
        ("eval-syntax=lop", "unknown syntax token 'lop', closest known token is 'loop'"),
        ("eval-namespace=open", "adaptive, closed or caller"),
        ("eval-timeout=10MB", "eval-timeout=10MB"),
        ("eval-timeout=1s\neval-timeout=2s", "Multiple eval-timeout parameters"),
        ("eval-syntax=Bin*", "a pattern ('Bin*') is not accepted in eval-syntax"),
    ]
    for line, message in cases:
        r = sb.run_code(BASE + line + "\n", "print('RAN')\n")
        assert r.returncode == 255 and "RAN" not in r.stdout, (line, r)
        assert any(message in e for e in r.errors), (line, r)


def test_spec_10_20_getattr(sb):
    r = run(sb, "eval-call=getattr\neval-syntax=comprehension\neval-magic=*\n",
            "probe('default', lambda: eval(\"getattr((), '__class__', 'x')\"))\n"
            "probe('frame', lambda: eval(\"getattr((i for i in [1]), 'gi_frame')\"))\n")
    # eval-magic=* grants __class__: the read works, the default is unused.
    assert outcome(r, "default") == "OK <class 'tuple'>", r
    assert outcome(r, "frame") == "RuleEvalPermissionError 'gi_frame' None", r
    r = run(sb, "eval-call=getattr\n",
            "probe('default', lambda: eval(\"getattr((), '__class__', 'x')\"))\n")
    assert outcome(r, "default") == "RuleEvalPermissionError '__class__' eval-magic", r


def test_spec_10_21_reserved_prefix_and_format(sb):
    r = run(sb, "eval-attribute=format\neval-call=f\n",
            "probe('name', lambda: eval('__sb_getattr__'))\n"
            "probe('string', lambda: eval(\"'__sb_tick__'\"))\n"
            "probe('normalised', lambda: eval('_\\uff3fsb_tick__'))\n"
            "probe('format', lambda: eval(\"'{0.__class__}'.format(())\"))\n"
            "probe('data', lambda: eval(\"'{0}-{1[0]}'.format(5, (7,))\"))\n")
    for label in ("name", "string", "normalised"):
        assert outcome(r, label) == "EvalSyntaxRejected []", (label, r)
    assert outcome(r, "format") == "RuleEvalPermissionError '__class__' eval-magic", r
    assert outcome(r, "data") == "OK '5-7'", r


def test_spec_10_22_learning_round_trip(sb):
    sb.profile(BASE + "learn=learned\n")
    learned = sb.path("learned")
    s = sb.script("print(eval('sum([i * 2 for i in range(3)])'))\n")
    r = sb.run(s)
    assert r.returncode == 0 and r.stdout == "6\n", r
    lines = block(learned, "learning_guard_eval")
    rules = [line for line in lines if not line.startswith("#")]
    assert rules == ["eval-syntax=BinOp, ListComp, comprehension", "eval-call=range, sum"], r
    assert not any("*" in line for line in rules)
    assert block(learned, "learning_guard_api") == [], r
    # Replayed without learning: the learned rules are what the eval needs.
    sb.profile(BASE + "\n".join(rules) + "\n")
    r = sb.run(s)
    assert (r.returncode, r.stdout) == (0, "6\n"), r


# --- the report --------------------------------------------------------------

def test_report_lists_every_violation(sb):
    src = "x = 1\nwhile x:\n    import os\n    y = x.__class__\n"
    r = run(sb, "eval-syntax=assign\n",
            "import pysandboxes\n"
            f"try:\n    exec({src!r})\n"
            "except pysandboxes.EvalSyntaxRejected as e:\n"
            "    print('IS-SYNTAXERROR', isinstance(e, SyntaxError), isinstance(e, "
            "pysandboxes.SandBoxError))\n"
            "    print('POS', e.lineno, e.offset, repr(e.text))\n"
            "    print('RULES', e.rules)\n"
            "    print('N', len(e.violations))\n"
            "    print(str(e))\n")
    assert "IS-SYNTAXERROR True True" in r.stdout, r
    assert "POS 2 1 'while x:'" in r.stdout, r
    assert ("RULES ['eval-syntax=loop', 'eval-syntax=import', 'eval-import=os', "
            "'eval-magic=__class__']") in r.stdout, r
    assert "N 4" in r.stdout, r
    assert "4 rules violated in <eval>" in r.stdout, r
    # Line, column, the source line, a caret under the construct, the rule,
    # the narrower alternative and the warning where the grant widens.
    assert "  line 4, col 10: attribute '__class__' is not allowed\n" \
           "          y = x.__class__\n" \
           "                ^^^^^^^^^\n" \
           "    add: eval-magic=__class__" in r.stdout, r
    assert "add: eval-syntax=loop        (or, narrower: eval-syntax=While)" in r.stdout, r
    assert re.search(r"add: eval-import=os\n    warning: os exposes", r.stdout), r


def test_report_places_nodes_without_a_position_at_their_parent(sb):
    # comprehension, arguments, match_case and withitem have no position of
    # their own: they are reported where the construct that holds them is,
    # with it. Found by tests/fuzz/fuzz-eval.c: they were violations of their
    # own at "line -1, col -1", listed first, and the exception's lineno was
    # -1 without a text.
    src = "x = 1\ny = [i for i in x]\nf = lambda a: a\n"
    r = run(sb, "eval-syntax=assign\n",
            "import pysandboxes\n"
            f"try:\n    exec({src!r})\n"
            "except pysandboxes.EvalSyntaxRejected as e:\n"
            "    print('POS', e.lineno, e.offset, repr(e.text))\n"
            "    print('N', len(e.violations))\n"
            "    print(str(e))\n")
    assert "POS 2 5 'y = [i for i in x]'" in r.stdout, r
    assert "N 2" in r.stdout, r
    assert "  line 2, col 4: 'ListComp' is not allowed\n" in r.stdout, r
    assert "  line 3, col 4: 'Lambda' is not allowed\n" in r.stdout, r
    assert "line -1" not in r.stdout, r


def test_report_names_the_profile(sb):
    r = run(sb, "eval-syntax:llm=compare\n",
            "import pysandboxes\n"
            "try:\n    pysandboxes.guarded_eval('1 + 1', profile='llm')\n"
            "except pysandboxes.EvalSyntaxRejected as e:\n"
            "    print('RULES', e.rules)\n    print(str(e).splitlines()[0])\n")
    assert "RULES ['eval-syntax:llm=arith']" in r.stdout, r
    assert "1 rule violated in <eval:llm>" in r.stdout, r


def test_native_syntax_error_is_itself(sb):
    r = run(sb, "eval-syntax=arith\n", "probe('x', lambda: eval('1 +'))\n")
    assert outcome(r, "x").startswith("SyntaxError "), r


# --- namespaces --------------------------------------------------------------

def test_adaptive_bare_eval_sees_nothing_of_the_caller(sb):
    r = run(sb, "eval-syntax=arith\n",
            "SECRET = 41\n"
            "probe('bare', lambda: eval('SECRET + 1'))\n"
            "probe('given', lambda: eval('SECRET + 1', {'SECRET': SECRET}))\n")
    assert outcome(r, "bare") == "NameError name 'SECRET' is not defined", r
    assert outcome(r, "given") == "OK 42", r


def test_adaptive_builtins_come_from_eval_call(sb):
    # CPython would inject every builtin into a dict without __builtins__.
    r = run(sb, "eval-call=len, open\neval-namespace=adaptive\n",
            "g = {'helper': 1}\n"
            "probe('len', lambda: eval('len([1])', g))\n"
            "probe('abs', lambda: eval('abs(1)', g))\n"
            "print('RESTORED', '__builtins__' not in g)\n")
    assert outcome(r, "len") == "OK 1", r
    assert outcome(r, "abs") == "EvalSyntaxRejected ['eval-call=abs']", r
    assert "RESTORED True" in r.stdout, r


def test_adaptive_caller_builtins_get_guarded_forms(sb):
    # A caller's __builtins__ is used as is, but for the capability builtins
    # in it, which are replaced by their guarded forms.
    r = run(sb, "eval-call=getattr\n",
            "import builtins\n"
            "g = {'__builtins__': builtins}\n"
            "probe('raw', lambda: eval(\"getattr((), '__class__')\", g))\n"
            "print('KEPT', g['__builtins__'] is builtins)\n")
    assert outcome(r, "raw") == "RuleEvalPermissionError '__class__' eval-magic", r
    assert "KEPT True" in r.stdout, r


def test_closed_ignores_the_caller(sb):
    r = run(sb, "eval-namespace=closed\neval-syntax=arith\n",
            "probe('x', lambda: eval('x + 1', {'x': 1}))\n")
    assert outcome(r, "x") == "NameError name 'x' is not defined", r


def test_context_warning_once_per_site(sb):
    r = run(sb, "eval-syntax=arith\neval-call=os\n",
            "import os\n"
            "for _ in range(3):\n"
            "    eval('1', {'os': os, 'n': 2, 'rows': [1, 2]})\n"
            "eval('1', {'f': print})\n")
    warnings = [line for line in r.stderr.splitlines() if "SandboxContextWarning" in line]
    assert len(warnings) == 2, r
    assert "module 'os': the evaluated code can reach everything it exposes" in warnings[0], r
    assert "value 'f'" in warnings[1], r
    assert "value 'n'" not in r.stderr and "value 'rows'" not in r.stderr, r


def test_caller_mode_checks_syntax_only(sb):
    r = run(sb, "eval-namespace=caller\neval-syntax=arith\n",
            "x = 41\n"
            "probe('caller', lambda: eval('x + 1'))\n"
            "probe('loop', lambda: exec('while False: pass'))\n")
    assert "eval-namespace=caller" in r.stderr and "debugging only" in r.stderr, r
    assert outcome(r, "caller") == "OK 42", r
    assert outcome(r, "loop") == "EvalSyntaxRejected ['eval-syntax=loop']", r


# --- guarded_eval and named profiles --------------------------------------------

def test_guarded_eval_named_profile(sb):
    r = run(sb, "eval-syntax=arith, compare, loop\n"
                "eval-syntax:rules=arith, compare, conditional\n"
                "eval-call:rules=min, round\n",
            "from pysandboxes import guarded_eval\n"
            "probe('rule', lambda: guarded_eval(\"round(amount * (0.15 if tier == 'gold' "
            "else 0.05), 2)\", profile='rules', names={'amount': 250.0, 'tier': 'gold'}))\n"
            "probe('noinherit', lambda: guarded_eval('[x for x in (1,)]', profile='rules'))\n"
            "probe('default', lambda: guarded_eval('1 < 2'))\n"
            "probe('missing', lambda: guarded_eval('1', profile='nope'))\n"
            "probe('block', lambda: guarded_eval('x = 2 * 3\\ny = x + 1', mode='exec'))\n")
    assert outcome(r, "rule") == "OK 37.5", r
    assert outcome(r, "noinherit").startswith("EvalSyntaxRejected ['eval-syntax:rules="), r
    assert outcome(r, "default") == "OK True", r
    assert outcome(r, "missing").startswith("ValueError guarded_eval(): no eval profile named "
                                            "'nope'"), r
    assert outcome(r, "block") == "EvalSyntaxRejected ['eval-syntax=assign']", r


def test_guarded_eval_exec_returns_the_names(sb):
    r = run(sb, "eval-syntax=assign, arith\n",
            "from pysandboxes import guarded_eval\n"
            "probe('block', lambda: guarded_eval('x = a * 3\\ny = x + 1', names={'a': 2}, "
            "mode='exec'))\n")
    assert outcome(r, "block") == "OK {'a': 2, 'x': 6, 'y': 7}", r


# --- code objects ------------------------------------------------------------------

def test_code_objects_only_from_the_guarded_compile(sb):
    r = run(sb, "eval-syntax=arith\n",
            "def f():\n    return 1\n"
            "probe('guarded', lambda: eval(compile('40 + 2', 'x.py', 'eval')))\n"
            "probe('foreign', lambda: exec(f.__code__))\n"
            "probe('name', lambda: compile('1', '/usr/lib/python3/os.py', 'eval').co_filename)\n")
    assert outcome(r, "guarded") == "OK 42", r
    assert outcome(r, "foreign") == "RuleEvalPermissionError 'a code object' None", r
    # No evaluated frame passes for a file's.
    assert outcome(r, "name") == "OK '<eval>'", r


def test_compile_checks_the_source(sb):
    r = run(sb, "eval-syntax=arith\n",
            "import ast\n"
            "probe('src', lambda: compile('[x for x in ()]', 'x', 'eval'))\n"
            "probe('ast', lambda: compile(ast.parse('().__class__', mode='eval'), 'x', 'eval'))\n"
            "probe('only', lambda: type(compile('1 + 1', 'x', 'eval', ast.PyCF_ONLY_AST))."
            "__name__)\n")
    assert outcome(r, "src") == "EvalSyntaxRejected ['eval-syntax=comprehension']", r
    assert outcome(r, "ast") == "EvalSyntaxRejected ['eval-magic=__class__']", r
    assert outcome(r, "only") == "OK 'Expression'", r


def test_library_code_generation_still_works(sb):
    # dataclasses and namedtuple generate code from the standard library.
    r = run(sb, "eval-syntax=arith\n",
            "import dataclasses, collections\n"
            "@dataclasses.dataclass\nclass P:\n    x: int = 0\n"
            "print('DC', P(3).x, collections.namedtuple('T', 'a b')(1, 2).b)\n")
    assert "DC 3 2" in r.stdout and r.returncode == 0, r


# --- learning --------------------------------------------------------------------

def test_learning_adaptive_context_is_a_comment(sb):
    sb.profile(BASE + "learn=learned\n")
    learned = sb.path("learned")
    r = sb.run(sb.script("print(eval('g.upper()', {'g': 'ab'}))\n"))
    assert r.stdout == "AB\n", r
    lines = block(learned, "learning_guard_eval")
    assert "eval-attribute=upper" in lines, lines
    assert any(line.startswith("# 'eval() at s.py:1' used the caller's namespace")
               for line in lines), lines


def test_learning_bare_eval_reading_the_callers_variables(sb):
    # A bare eval() sees the caller's variables in CPython, none guarded:
    # learning says so, next to the rules it learned.
    sb.profile(BASE + "learn=learned\n")
    learned = sb.path("learned")
    r = sb.run(sb.script("x = 5\nprint(eval('x + 1'))\nprint(eval('len([x])'))\n"))
    assert r.stdout == "6\n1\n", r
    lines = block(learned, "learning_guard_eval")
    assert ("# 'eval() at s.py:2' read the caller's variables x: a guarded eval() without a "
            "namespace sees none of them; pass them in a dict (eval(source, {...}))") in lines, lines
    assert "# 'eval() at s.py:3' read the caller's variables x: " in "\n".join(lines), lines
    assert [line for line in lines if not line.startswith("#")] == [
        "eval-syntax=BinOp", "eval-call=len"], lines


def test_learning_named_profile(sb):
    sb.profile(BASE + "learn=learned\neval-syntax:llm=arith\n")
    learned = sb.path("learned")
    r = sb.run(sb.script("import pysandboxes\n"
                         "print(pysandboxes.guarded_eval('[x * 2 for x in v]', profile='llm',"
                         " names={'v': [1]}))\n"))
    assert r.stdout == "[2]\n", r
    rules = [line for line in block(learned, "learning_guard_eval") if not line.startswith("#")]
    assert rules == ["eval-syntax:llm=ListComp, comprehension"], rules


# --- --explain -----------------------------------------------------------------

def test_explain_says_the_eval_guard_enforces(sb):
    sb.profile(BASE + "eval-syntax=arith\n")
    r = sb.run("--explain")
    assert re.search(r"eval-syntax=arith .*\[eval guard", r.stdout), r
    assert "NOT enforced" not in "\n".join(l for l in r.stdout.splitlines() if "eval-" in l), r


def test_no_warning_that_eval_is_unenforced(sb):
    r = sb.run_code(BASE + "eval-syntax=arith\n", "print(eval('1 + 1'))\n")
    assert (r.returncode, r.stdout) == (0, "2\n"), r
    assert "not in this version" not in r.stderr, r


# --- the exception classes, partial mode ------------------------------------------

def test_exception_classes(sb):
    r = run(sb, "eval-syntax=arith\n",
            "import pysandboxes as p\n"
            "print('CLASSES', issubclass(p.SandboxContextWarning, Warning),"
            " issubclass(p.SandboxContextWarning, p.SandBoxError),"
            " issubclass(p.EvalInterrupted, Exception),"
            " issubclass(p.EvalSyntaxRejected, SyntaxError),"
            " issubclass(p.RuleEvalPermissionError, PermissionError),"
            " 'guarded_eval' in p.__all__)\n")
    assert "CLASSES True False False True True True" in r.stdout, r


def test_guarded_eval_in_partial_mode(sb, pysandboxes_dir):
    from test_partial import Partial
    partial = Partial(sb, pysandboxes_dir)
    partial.write("tool.py", "from pysandboxes import sandbox, guarded_eval\n"
                             "@sandbox\n"
                             "def calc(expr):\n"
                             "    return guarded_eval(expr, profile='calc')\n")
    r = partial.run("import pysandboxes\n"
                    "from pysandboxes import sandboxes\n"
                    "from tool import calc\n"
                    "if __name__ == '__main__':\n"
                    "    try:\n"
                    "        pysandboxes.guarded_eval('1')\n"
                    "    except RuntimeError as e:\n"
                    "        print('CALLER', e)\n"
                    "    with sandboxes():\n"
                    "        print('WORKER', calc('(3 + 4) * 2'))\n"
                    "        try:\n"
                    "            calc('().__class__')\n"
                    "        except pysandboxes.EvalSyntaxRejected as e:\n"
                    "            print('REFUSED', e.rules)\n",
                    profile="os-sandbox=subprocess\npython-import=*\n"
                            "eval-syntax:calc=arith\n")
    assert "CALLER guarded_eval() runs under python-sb's eval guard" in r.stdout, r
    assert "WORKER 14" in r.stdout, (r.stdout, r.stderr)
    assert "REFUSED ['eval-magic:calc=__class__']" in r.stdout, (r.stdout, r.stderr)


def test_alloc_budget_in_c_under_the_run_report(sb):
    # --report wraps the allocator after the guard is armed: the eval layer's
    # hook (eval-max-alloc inside C builtins) must stay under it.
    sb.profile(BASE + "eval-syntax=arith\neval-attribute=ljust\n")
    script = sb.script(PROBE + "probe('ljust', lambda: len(eval(\"'x'.ljust(10**8)\")))\n"
                       "probe('small', lambda: len(eval(\"'x'.ljust(10**5)\")))\n")
    path = sb.path("report.json")
    r = sb.run(f"--report={path}", script)
    assert outcome(r, "ljust").startswith("EvalInterrupted eval-max-alloc=10MB "), r
    assert outcome(r, "small") == "OK 100000", r
    assert r.returncode == 0 and path.exists(), r


def test_run_report_lists_eval_refusals(sb):
    # The eval layer is a part of the guard: its refusals are the report's
    # denials, with the rule to add.
    sb.profile(BASE + "eval-syntax=arith\neval-call=getattr\n")
    script = sb.script(PROBE + "probe('attr', lambda: eval('(1).real'))\n"
                       "probe('syntax', lambda: eval('[x for x in (1, 2)]'))\n"
                       "probe('getattr', lambda: eval('getattr(1, \"imag\")'))\n")
    path = sb.path("report.json")
    r = sb.run(f"--report={path}", script)
    assert outcome(r, "attr").startswith("EvalSyntaxRejected"), r
    denials = json.loads(path.read_text())["denials"]
    assert {d["kind"] for d in denials} == {"eval"}, denials
    rules = [d["rule_to_add"] for d in denials]
    assert "eval-attribute=real" in rules and "eval-syntax=comprehension" in rules, denials
    assert outcome(r, "getattr") == "RuleEvalPermissionError 'imag' eval-attribute", r
    assert {"subject": "imag", "rule_to_add": "eval-attribute=imag"}.items() <= denials[-1].items()


def test_layer_modules_are_its_own_and_made_on_first_use(sb):
    # _ast and _string are not imported at start-up (the node types cost a
    # quarter of a start, issue 19), and what the program puts in sys.modules
    # under their names is not what the layer checks with: its modules are
    # made from the interpreter's init functions.
    r = run(sb, "eval-namespace=closed\neval-syntax=arith\neval-attribute=format\n",
            "import sys, types\n"
            "print('at start', '_ast' in sys.modules, '_string' in sys.modules, flush=True)\n"
            "fake = types.ModuleType('_ast')\n"
            "fake.AST = object\n"
            "sys.modules['_ast'] = sys.modules['_string'] = fake\n"
            "probe('walk', lambda: eval('().__class__', {'__builtins__': {}}, {}))\n"
            "probe('sum', lambda: eval('40 + 2', {'__builtins__': {}}, {}))\n"
            "probe('format', lambda: eval(\"'{0.__class__}'.format(())\", {'__builtins__': {}}, {}))\n"
            "print('after', sys.modules['_ast'] is fake, flush=True)\n")
    assert "at start False False" in r.stdout, r
    assert outcome(r, "walk") == "EvalSyntaxRejected ['eval-magic=__class__']", r
    assert outcome(r, "sum") == "OK 42", r
    assert outcome(r, "format") == "RuleEvalPermissionError '__class__' eval-magic", r
    assert "after True" in r.stdout, r
