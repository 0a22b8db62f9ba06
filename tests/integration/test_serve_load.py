# SPDX-License-Identifier: MIT
"""10,000 runs through python-sb serve, then nothing may be left: no process,
no descriptor, no file in the work directory, no memory growth beyond the
allocator's working set. Marked `load` (a few minutes on two cores):
scripts/test.sh runs it once, against the installed build."""

import json
import threading
import time

import pytest

from conftest import needs_landlock
from servehelp import Server

RUNS = 10_000
CLIENTS = 8
RSS_GROWTH_KB = 20_000


def settle(check, timeout=10):
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.1)
    return check()


@pytest.mark.load
@needs_landlock
def test_ten_thousand_runs_leak_nothing(sb_bin):
    with Server(sb_bin, "--workers", "2", "--queue", "64") as srv:
        for i in range(20):  # warm-up: the allocator's arenas, the page cache
            assert srv.run(f"print({i})")[0] == 200
        fds_before = srv.open_fds()
        rss_before = srv.rss_kb()
        failures, done = [], [0]
        lock = threading.Lock()

        def client(first):
            conn = srv.connection(timeout=120)
            for i in range(first, RUNS, CLIENTS):
                body = json.dumps({"source": f"import sys\nprint({i} * 3, sys.stdin.read())\n",
                                   "stdin": str(i)})
                conn.request("POST", "/v1/runs", body=body)
                resp = conn.getresponse()
                data = resp.read()
                if resp.status != 200 or json.loads(data)["stdout"] != f"{i * 3} {i}\n":
                    with lock:
                        failures.append((i, resp.status, data[:300]))
                with lock:
                    done[0] += 1
            conn.close()

        start = time.monotonic()
        threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - start
        assert done[0] == RUNS and failures == [], failures[:5]
        metrics = srv.metrics()
        assert metrics['python_sb_runs_total{outcome="ok"}'] == RUNS + 20
        assert metrics["python_sb_queue_depth"] == 0 and metrics["python_sb_workers_busy"] == 0

        assert settle(lambda: srv.descendants() == []), srv.descendants()
        assert srv.leftovers() == []
        # The clients' connections are closed: the server's descriptors come
        # back to what they were.
        assert settle(lambda: srv.open_fds() <= fds_before), (srv.open_fds(), fds_before)
        rss_after = srv.rss_kb()
        assert rss_after - rss_before < RSS_GROWTH_KB, (rss_before, rss_after)
        print(f"\n{RUNS} runs in {elapsed:.1f}s ({RUNS / elapsed:.0f} runs/s); server RSS "
              f"{rss_before} -> {rss_after} KB, {fds_before} descriptors")
        assert srv.stop() == 0
        assert not srv.workdir.exists() or not any(srv.workdir.iterdir())
