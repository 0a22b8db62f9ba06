#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Partial mode: round trip of a trivial @sandbox call, and worker start.
#
#   bench/partial.sh [BUILD_DIR]     (default: a temporary release build)
#
# The parent is /usr/bin/python3 (PYTHON3 overrides) with BUILD_DIR/python on
# its path and BUILD_DIR/python-sb as the worker. Targets (issue #6): round
# trip median under 100 us, worker start under landlock under 50 ms; (issue
# 17) a gather of 5 calls of 0.2 s under 0.4 s once the workers run (the
# first gather, which starts them, is shown apart). Exits 1 when a target is
# missed. Method and results: bench/README.md.
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
src=$(dirname -- "$here")
PYTHON3=${PYTHON3:-/usr/bin/python3}
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

cd "$work"
printf 'python-import=json,asyncio\n' > .py-sandboxes
cat > benchmod.py <<'PY'
from pysandboxes import sandbox

@sandbox
def f(x):
    return x + 1

@sandbox
async def nap(s):
    import asyncio
    await asyncio.sleep(s)
    return s
PY
cat > bench.py <<'PY'
import asyncio, os, statistics, sys, time
import pysandboxes
from pysandboxes import sandboxes
from benchmod import f, nap

CALLS, STARTS = int(os.environ.get("CALLS", 20000)), int(os.environ.get("STARTS", 40))

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]

ok = True
for provider in ("subprocess", "landlock", "unshare"):
    starts = []
    for _ in range(STARTS):
        t = time.perf_counter_ns()
        box = sandboxes(sandboxes_config=".py-sandboxes", os_sandbox=provider)
        box.__enter__()
        starts.append(time.perf_counter_ns() - t)
        assert f(1) == 2
        box.__exit__(None, None, None)
    with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox=provider):
        for i in range(1000):
            f(i)
        rt = []
        for i in range(CALLS):
            t = time.perf_counter_ns()
            f(i)
            rt.append(time.perf_counter_ns() - t)
    ms = [s / 1e6 for s in starts]
    us = [r / 1e3 for r in rt]
    print(f"{provider:10s} start: median {statistics.median(ms):6.1f} ms  p90 {pct(ms, .9):6.1f} ms"
          f"   round trip: median {statistics.median(us):5.1f} us  p90 {pct(us, .9):5.1f} us"
          f"  p99 {pct(us, .99):5.1f} us  mean {statistics.fmean(us):5.1f} us")
    if statistics.median(us) >= 100:
        ok = False
    if provider == "landlock" and statistics.median(ms) >= 50:
        ok = False
# Concurrent calls (issue 17): asyncio.gather of 5 calls of 0.2 s each, with
# the pool (max_workers=8, the default) and with one worker; the pool's first
# gather starts its extra workers, so it is timed apart from the warm ones.
async def gather(provider, workers, rounds):
    times = []
    async with sandboxes(sandboxes_config=".py-sandboxes", os_sandbox=provider,
                         max_workers=workers):
        for _ in range(rounds):
            t = time.perf_counter()
            await asyncio.gather(*(nap(0.2) for _ in range(5)))
            times.append(time.perf_counter() - t)
    return times

GATHERS = int(os.environ.get("GATHERS", 10))
for provider in ("subprocess", "landlock"):
    pool = asyncio.run(gather(provider, 8, GATHERS + 1))
    one = asyncio.run(gather(provider, 1, 3))
    print(f"{provider:10s} gather 5 x 0.2 s: pool first {pool[0]:.2f} s, warm median "
          f"{statistics.median(pool[1:]):.2f} s  max {max(pool[1:]):.2f} s;"
          f"  max_workers=1 median {statistics.median(one):.2f} s")
    if statistics.median(pool[1:]) >= 0.4:
        ok = False
print("targets met" if ok else "TARGET MISSED")
sys.exit(0 if ok else 1)
PY
env -i PATH=/usr/bin:/bin HOME="$work" LC_ALL=C.UTF-8 PYTHONPATH="$build/python" \
    PYSANDBOXES_PYTHON_SB="$build/python-sb" CALLS="${CALLS:-20000}" STARTS="${STARTS:-40}" \
    GATHERS="${GATHERS:-10}" \
    "$PYTHON3" bench.py
