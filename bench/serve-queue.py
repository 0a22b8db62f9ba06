#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""python-sb serve on Redis Streams (docs/serve-queue.md): the throughput of 1
and 2 workers on this machine, and the latency the queue adds to a run against
the local service. Method and results: bench/README.md, "The Redis queue".

    /usr/bin/python3 bench/serve-queue.py [--sb BUILD/python-sb] [--jobs 2000]
                                    [--latency-runs 300] [--rounds 3]

Throughput: with W worker processes (--workers 1 each: one run at a time, so
that W is the number of CPUs the runs get) already started and warm, N trivial
jobs are posted with "wait": false by 4 client threads on kept-alive
connections; the time is from the first post to the moment the stream's
result counter reaches N (read every 10 ms). Posting is several times faster
than running, so this is the workers' rate.

Latency: R synchronous POSTs of the same trivial program, one at a time, to
the local service (--workers 1) and to a front end with one worker (--workers
1); the median and the 90th/99th percentiles of each, and the difference of
the medians: the queue's cost per run (XADD, the worker's XREADGROUP, the
result's script, the front end's BLPOP and GET; 2 extra processes and 4 extra
round trips to Redis on loopback).

Rounds alternate the measurements (local, queue, 1 worker, 2 workers) so that
a change of the machine's load hits all of them.
"""

import argparse
import json
import os
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "integration"))

from queuehelp import Redis, Worker  # noqa: E402
from servehelp import Server  # noqa: E402

PROGRAM = "print(sum(range(10)))"


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def latency(srv, runs):
    times = []
    conn = srv.connection()
    body = json.dumps({"source": PROGRAM})
    for _ in range(runs):
        t0 = time.perf_counter()
        conn.request("POST", "/v1/runs", body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        times.append((time.perf_counter() - t0) * 1000)
        assert resp.status == 200, data
    conn.close()
    return times


def throughput(sb, redis, stream, workers, jobs):
    with Server(sb, "--queue", redis.url(stream), "--workers", "16",
                "--queue-depth", str(jobs * 2)) as srv:
        ws = [Worker(sb, redis.url(stream), "--workers", "1") for _ in range(workers)]
        try:
            body = json.dumps({"source": PROGRAM, "wait": False})
            counter = iter(range(jobs))
            lock = threading.Lock()

            def client():
                conn = srv.connection()
                while True:
                    with lock:
                        if next(counter, None) is None:
                            break
                    conn.request("POST", "/v1/runs", body=body,
                                 headers={"Content-Type": "application/json"})
                    resp = conn.getresponse()
                    resp.read()
                    assert resp.status == 202
                conn.close()

            t0 = time.perf_counter()
            with ThreadPoolExecutor(4) as pool:
                for f in [pool.submit(client) for _ in range(4)]:
                    f.result()
            posted = time.perf_counter() - t0
            while redis.stats(stream).get("results", 0) < jobs:
                time.sleep(0.01)
            elapsed = time.perf_counter() - t0
        finally:
            for w in ws:
                w.close()
    return jobs / elapsed, jobs / posted


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sb", default=str(HERE.parent / "build-test" / "python-sb"))
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--latency-runs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(f"python-sb: {args.sb}; {os.cpu_count()} CPUs; load average at start: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results = {"local": [], "queue": [], "w1": [], "w2": [], "post": []}
    with Redis() as redis:
        for rnd in range(args.rounds):
            with Server(args.sb, "--workers", "1") as srv:
                latency(srv, 20)  # warm
                results["local"] += latency(srv, args.latency_runs)
            with Server(args.sb, "--queue", redis.url(f"lat{rnd}"), "--workers", "4") as srv, \
                    Worker(args.sb, redis.url(f"lat{rnd}"), "--workers", "1"):
                latency(srv, 20)
                results["queue"] += latency(srv, args.latency_runs)
            for w in (1, 2):
                rate, post_rate = throughput(args.sb, redis, f"tp{rnd}w{w}", w, args.jobs)
                results[f"w{w}"].append(rate)
                results["post"].append(post_rate)
            print(f"round {rnd + 1}: 1 worker {results['w1'][-1]:.0f} runs/s, "
                  f"2 workers {results['w2'][-1]:.0f} runs/s; load "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
    for name in ("local", "queue"):
        t = results[name]
        print(f"latency {name:5}: median {statistics.median(t):6.2f} ms  "
              f"p90 {percentile(t, 90):6.2f} ms  p99 {percentile(t, 99):6.2f} ms  (n={len(t)})")
    print(f"added by the queue (median - median): "
          f"{statistics.median(results['queue']) - statistics.median(results['local']):.2f} ms")
    for w in (1, 2):
        r = results[f"w{w}"]
        print(f"throughput {w} worker(s): median {statistics.median(r):.0f} runs/s "
              f"(rounds: {', '.join(f'{x:.0f}' for x in r)})")
    print(f"scaling 2 workers / 1: "
          f"{statistics.median(results['w2']) / statistics.median(results['w1']):.2f}")
    print(f"front end posting rate (202s, 4 clients): median "
          f"{statistics.median(results['post']):.0f} /s")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
