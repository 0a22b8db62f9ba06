#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where the CPU of a trivial run goes in python-sb serve's fork server
(bench/README.md, "Service (issue 13)"): starts `python-sb serve`, sends
RUNS runs of `print(sum(range(10)))` from C clients after 50 warm-up runs,
and prints per run the CPU of the service's own threads, of the fork server
itself and of the runs (reaped by the fork server), from /proc/PID/stat, and
the time the service's threads and the fork server spent on a CPU and waiting
for one (/proc/PID/task/*/schedstat), with the run reports' own wall and CPU
times.

Usage: serve-cpu.py PYTHON_SB [RUNS [CLIENTS]]

The fork server's pid is written to $ZYGOTE_PID_FILE (if set) and the
measurement starts $PAUSE seconds later, to attach a profiler to it, e.g.
`perf record -g -p PID` (it follows the runs it forks).
"""

import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

BODY = json.dumps({"source": "print(sum(range(10)))\n"})
TCK = os.sysconf("SC_CLK_TCK")


def fork_server(service):
    for task in os.listdir(f"/proc/{service}/task"):
        for child in open(f"/proc/{service}/task/{task}/children").read().split():
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if b"--pysandboxes-zygote" in f.read():
                    return int(child)
    raise RuntimeError("no fork server")


def cpu_ms(pid):
    """utime, stime, and those of reaped children (ms)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return [int(x) * 1000 / TCK for x in fields[11:15]]


def sched_ms(pid):
    """Time on a CPU and waiting for one (ms), all threads of pid."""
    on = wait = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            a, b, _ = open(f"/proc/{pid}/task/{task}/schedstat").read().split()
        except OSError:
            continue
        on += int(a)
        wait += int(b)
    return on / 1e6, wait / 1e6


def client(port, n, times):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for _ in range(n):
        conn.request("POST", "/v1/runs", body=BODY)
        resp = conn.getresponse()
        data = json.loads(resp.read())
        if resp.status != 200:
            raise RuntimeError(data)
        times.append(data["report"]["time"])
    conn.close()


def main():
    sb = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    clients = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    proc = subprocess.Popen([sb, "serve", "--listen", "127.0.0.1:0", "--workers",
                             str(os.cpu_count()), "--queue", "1024"],
                            stderr=subprocess.PIPE, text=True)
    try:
        port = None
        while port is None:
            line = proc.stderr.readline()
            if not line:
                raise RuntimeError("the service did not start")
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
            port = int(m.group(1)) if m else None
        client(port, 50, [])
        zygote = fork_server(proc.pid)
        if os.environ.get("ZYGOTE_PID_FILE"):
            with open(os.environ["ZYGOTE_PID_FILE"], "w") as f:
                f.write(f"{zygote}\n")
        time.sleep(float(os.environ.get("PAUSE", "0")))
        s0, z0, ss0, zs0 = cpu_ms(proc.pid), cpu_ms(zygote), sched_ms(proc.pid), sched_ms(zygote)
        start = time.monotonic()
        times = [[] for _ in range(clients)]
        threads = [threading.Thread(target=client, args=(port, runs // clients, times[i]))
                   for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - start
        s1, z1, ss1, zs1 = cpu_ms(proc.pid), cpu_ms(zygote), sched_ms(proc.pid), sched_ms(zygote)
        n = runs // clients * clients
        reports = [t for ts in times for t in ts]
        load = open("/proc/loadavg").read().split()[0]
        print(f"{n} runs, {clients} clients: {n / elapsed:.0f} runs/s, load {load}")
        print(f"CPU per run (ms): service {(s1[0] - s0[0] + s1[1] - s0[1]) / n:.2f}, "
              f"fork server {(z1[0] - z0[0] + z1[1] - z0[1]) / n:.2f}, "
              f"runs {(z1[2] - z0[2] + z1[3] - z0[3]) / n:.2f}")
        print(f"schedstat per run (ms): service on a CPU {(ss1[0] - ss0[0]) / n:.2f}, waiting "
              f"{(ss1[1] - ss0[1]) / n:.2f}; fork server on a CPU {(zs1[0] - zs0[0]) / n:.2f}, "
              f"waiting {(zs1[1] - zs0[1]) / n:.2f}")
        print(f"run reports: median wall {statistics.median(r['wall_ms'] for r in reports):.2f} "
              f"ms, mean CPU {statistics.mean(r['cpu_user_ms'] + r['cpu_sys_ms'] for r in reports):.2f} ms")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


if __name__ == "__main__":
    main()
