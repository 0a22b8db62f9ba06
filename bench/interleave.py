#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Start-up times of several commands, measured round-robin.

hyperfine runs each command's runs as one block: on a shared machine, load
that comes and goes lands on one command and not the next, and the ratio of
two blocks moves by more than the few per cent we care about. Here every round
runs each command once, in an order reversed every other round, so that drift
hits all of them alike; the ratios of the medians are what to read.

Usage: interleave.py [--runs N] [--warmup N] [--json FILE] [--gate NAME=MAX]...
                     NAME=COMMAND...

Each COMMAND is split on whitespace and started with posix_spawnp (no shell; PATH searched)
in the caller's environment (run it under `env -i ...` as the other scripts
do), stdout and stderr to /dev/null; a non-zero exit stops the measurement.
The first command is the baseline of the ratios. Prints, per command, the
median, the mean, the 10th percentile, the mean user and system CPU time of
the child, the median of the per-round ratios to the baseline (the two ran in
the same round) with its bootstrap 95 % interval, and the ratio of the medians;
then the same paired ratio of the CPU time (user + system, the child and every
process it reaped): on a loaded machine wall time is mostly waiting for a CPU,
while the CPU time a run consumes moves much less with the load.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=300)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--json", help="write every sample here")
    p.add_argument("--gate", metavar="NAME=MAX", action="append", default=[],
                   help="exit 1 when NAME's paired ratio to the baseline is above MAX")
    p.add_argument("commands", nargs="+", metavar="NAME=COMMAND")
    a = p.parse_args()
    cmds = []
    for c in a.commands:
        name, sep, cmd = c.partition("=")
        if not sep or not cmd.split():
            p.error(f"expected NAME=COMMAND, got {c!r}")
        cmds.append((name, cmd.split()))
    return a, cmds


def run_once(argv, devnull):
    t0 = time.perf_counter_ns()
    pid = os.posix_spawnp(argv[0], argv, os.environ,
                          file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1),
                                        (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status, usage = os.wait4(pid, 0)
    elapsed = (time.perf_counter_ns() - t0) / 1e6
    if status != 0:
        sys.exit(f"interleave.py: {' '.join(argv)} exited with status {status:#x}")
    return elapsed, usage.ru_utime * 1e3, usage.ru_stime * 1e3


def paired_ratio(a, b, rounds=2000):
    """The median of the per-round ratios a[i] / b[i] (both ran in the same
    round, under the same load) and its bootstrap 95 % interval."""
    ratios = [x / y for x, y in zip(a, b)]
    rng = random.Random(0)
    boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(rounds))
    return statistics.median(ratios), boot[int(0.025 * rounds)], boot[int(0.975 * rounds)]


def main():
    a, cmds = parse()
    devnull = os.open(os.devnull, os.O_RDWR)
    samples = {name: {"wall": [], "user": [], "sys": []} for name, _ in cmds}
    for r in range(a.warmup + a.runs):
        for name, argv in (cmds if r % 2 == 0 else cmds[::-1]):
            wall, user, sys_ = run_once(argv, devnull)
            if r >= a.warmup:
                s = samples[name]
                s["wall"].append(wall)
                s["user"].append(user)
                s["sys"].append(sys_)
    base = cmds[0][0]
    bw = samples[base]["wall"]
    ratios = {}
    print(f"{'command':16} {'median':>8} {'mean':>8} {'p10':>8} {'user':>7} {'sys':>7}"
          f"   paired ratio [95 %]       medians  (ms; {a.runs} rounds; ratios to {base})")
    for name, _ in cmds:
        w = samples[name]["wall"]
        r, lo, hi = paired_ratio(w, bw)
        ratios[name] = r
        print(f"{name:16} {statistics.median(w):8.3f} {statistics.mean(w):8.3f} "
              f"{sorted(w)[len(w) // 10]:8.3f} {statistics.mean(samples[name]['user']):7.3f} "
              f"{statistics.mean(samples[name]['sys']):7.3f}   "
              f"{r:.4f} [{lo:.4f}, {hi:.4f}]   "
              f"{statistics.median(w) / statistics.median(bw):.4f}")
    print(f"{'command':16} {'cpu ms':>8}   paired cpu ratio [95 %]   (user + sys, median)")
    bc = [u + s for u, s in zip(samples[base]["user"], samples[base]["sys"])]
    for name, _ in cmds:
        c = [u + s for u, s in zip(samples[name]["user"], samples[name]["sys"])]
        r, lo, hi = paired_ratio(c, bc)
        print(f"{name:16} {statistics.median(c):8.3f}   {r:.4f} [{lo:.4f}, {hi:.4f}]")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"commands": {n: " ".join(c) for n, c in cmds}, "samples": samples}, f)
    failed = False
    for g in a.gate:
        name, _, limit = g.partition("=")
        if name not in ratios:
            sys.exit(f"interleave.py: --gate names an unknown command {name!r}")
        ok = ratios[name] <= float(limit)
        failed = failed or not ok
        print(f"{'OK' if ok else 'FAIL'}: {name} / {base} = {ratios[name]:.4f} "
              f"(paired median) {'<=' if ok else '>'} {limit}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
