#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs one command many times, C at a time, and reports runs/s and latency
percentiles: the per-request spawn baselines of bench/serve.sh, measured the
way the load generators measure the service (wall time of each run, from its
start to its end, under the same concurrency).

Usage: spawn-load.py [--runs N] [--concurrency C] [--warmup N] [--cwd DIR] NAME=COMMAND

COMMAND is split on whitespace and started with posix_spawnp (no shell), its
stdin /dev/null, stdout and stderr to /dev/null; a non-zero exit stops the
measurement. Prints one line: name, runs, runs/s, p50, p90, p99, max (ms).
"""

import argparse
import os
import sys
import threading
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--cwd")
    p.add_argument("command", metavar="NAME=COMMAND")
    a = p.parse_args()
    name, _, cmd = a.command.partition("=")
    argv = cmd.split()
    if a.cwd:
        os.chdir(a.cwd)
    devnull = os.open(os.devnull, os.O_RDWR)
    actions = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
               (os.POSIX_SPAWN_DUP2, devnull, 2)]

    def once():
        t0 = time.perf_counter()
        pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            sys.exit(f"spawn-load.py: {cmd} exited with status {status:#x}")
        return (time.perf_counter() - t0) * 1000

    for _ in range(a.warmup):
        once()
    latencies, lock, left = [], threading.Lock(), [a.runs]

    def worker():
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            ms = once()
            with lock:
                latencies.append(ms)

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(a.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    latencies.sort()

    def pct(q):
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    print(f"{name:22} runs {len(latencies):6}  {len(latencies) / elapsed:7.1f} runs/s  "
          f"p50 {pct(0.50):7.2f}  p90 {pct(0.90):7.2f}  p99 {pct(0.99):7.2f}  "
          f"max {latencies[-1]:7.2f} ms  (concurrency {a.concurrency})")


if __name__ == "__main__":
    main()
