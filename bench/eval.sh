#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The eval layer (issue #16): a guarded eval of a small expression against a
# plain one, in the same python-sb binary.
#
#   bench/eval.sh [BUILD_DIR]     (default: a temporary release build)
#
# Two runs of BUILD_DIR/python-sb in an empty environment, os-sandbox=none:
#   plain    python-api=ALLOW:dynamic-code: eval/exec/compile are CPython's
#   guarded  eval-syntax=arith, compare and eval-call=len: the eval layer
# Each times, in process, the same few operations (ROUNDS rounds of N calls;
# wall-clock and CPU time around each round; the medians divided by N): eval of one source again and again, eval of a new source each time, and
# for the plain run the compile and the run of the compiled code apart.
# Target: on a repeated expression, what the layer adds to running the code
# (the guarded eval minus the plain run of the compiled code: cache lookup,
# namespace, budgets) costs less than the compile that a plain eval repeats
# every time (CPU time: the machine is shared). Exits 1 when it does not.
# bench/python-ref (CPython without python-sb's code) runs the plain side too,
# for reference, when the build has it. Method and results: bench/README.md.
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
src=$(dirname -- "$here")
work=$(mktemp -d)
cleanup=("$work")
trap 'rm -rf "${cleanup[@]}"' EXIT
if [[ -n ${1:-} ]]; then
    build=$(realpath -m -- "$1")
else
    build=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-bench-build.XXXXXX")
    cleanup+=("$build")
fi
if [[ ! -x $build/python-sb ]]; then
    meson setup "$build" "$src" --buildtype=release >/dev/null
fi
ninja -C "$build" >/dev/null

mkdir "$work/plain" "$work/guarded"
printf 'os-sandbox=none\npython-import=*\npython-api=ALLOW:dynamic-code\n' \
    > "$work/plain/.py-sandboxes"
printf 'os-sandbox=none\npython-import=*\neval-syntax=arith, compare\neval-call=len\n' \
    > "$work/guarded/.py-sandboxes"
cat > "$work/bench.py" <<'PY'
import json, os, statistics, sys, time

N, ROUNDS = int(os.environ.get("N", 20000)), int(os.environ.get("ROUNDS", 15))
SMALL = "x * 2 + 1"          # no call: runs on the caller's thread
CALLS = "len(s) + x"         # a call: runs on an evaluation thread
g = {"x": 3, "s": "abc"}


def per_call(fn):
    """Medians over ROUNDS rounds of N calls, in ns per call: wall-clock time
    and the process's CPU time (every thread's: the evaluation threads too)."""
    wall, cpu = [], []
    for _ in range(ROUNDS):
        t, c = time.perf_counter_ns(), time.process_time_ns()
        fn()
        cpu.append((time.process_time_ns() - c) / N)
        wall.append((time.perf_counter_ns() - t) / N)
    return [statistics.median(wall), statistics.median(cpu)]


def repeated(src):
    def run():
        for _ in range(N):
            eval(src, g)
    return run


def unique(template):
    counter = iter(range(10**9))

    def run():
        for _ in range(N):
            eval(template % next(counter), g)
    return run


out = {}
for name, src in (("small", SMALL), ("calls", CALLS)):
    assert eval(src, g) in (7, 6), eval(src, g)
    out[name + "_repeated"] = per_call(repeated(src))
    out[name + "_unique"] = per_call(unique(src + " + %d"))
if sys.argv[1] == "plain":
    code = compile(SMALL, "<s>", "eval")
    out["small_compile"] = per_call(lambda: [compile(SMALL, "<s>", "eval") for _ in range(N)])
    out["small_run"] = per_call(lambda: [eval(code, g) for _ in range(N)])
print(json.dumps(out))
PY
measure() {
    (cd "$work/$1" && env -i PATH=/usr/bin:/bin HOME="$work" LC_ALL=C.UTF-8 \
        N="${N:-20000}" ROUNDS="${ROUNDS:-15}" "$build/python-sb" "$work/bench.py" "$1")
}
plain=$(measure plain)
guarded=$(measure guarded)
ref=""
if [[ -x $build/bench/python-ref ]]; then
    # CPython alone (bench/meson.build): no guard at all, for reference.
    ref=$(cd "$work/plain" && env -i PATH=/usr/bin:/bin HOME="$work" LC_ALL=C.UTF-8 \
        N="${N:-20000}" ROUNDS="${ROUNDS:-15}" "$build/bench/python-ref" "$work/bench.py" plain)
fi
/usr/bin/python3 - "$plain" "$guarded" "$ref" <<'PY'
import json, sys
p, g = json.loads(sys.argv[1]), json.loads(sys.argv[2])
r = json.loads(sys.argv[3]) if sys.argv[3] else None
us = lambda v: f"{v[0] / 1000:7.2f} us wall {v[1] / 1000:7.2f} us CPU"
rows = [
    ("eval, same source", "small_repeated"), ("eval, new source", "small_unique"),
    ("eval with a call, same source", "calls_repeated"),
    ("eval with a call, new source", "calls_unique"),
]
for label, key in rows:
    print(f"{label:32s} plain {us(p[key])}   guarded {us(g[key])}"
          + (f"   python-ref {us(r[key])}" if r else ""))
print(f"{'plain compile alone':32s} {us(p['small_compile'])}")
print(f"{'plain run of the compiled code':32s} {us(p['small_run'])}")
# What the layer adds to running the code, against the compile a plain eval
# repeats each time: CPU time (the machine is shared; wall time for information).
added = g["small_repeated"][1] - p["small_run"][1]
print(f"the layer's cost on a repeated expression: {added / 1000:.2f} us CPU, the compile it "
      f"saves: {p['small_compile'][1] / 1000:.2f} us CPU (ratio {added / p['small_compile'][1]:.2f})")
ok = added < p["small_compile"][1]
print("target met" if ok else "TARGET MISSED")
sys.exit(0 if ok else 1)
PY
