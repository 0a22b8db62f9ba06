# SPDX-License-Identifier: MIT
"""python-sb serve on Redis Streams (docs/serve-queue.md): a front end that
queues (--queue redis://), workers that pull (--worker). Every accepted job
gets exactly one result: through a worker SIGKILLed mid-run, a poison job,
Redis restarted mid-load (with an fsynced append-only file) and Redis down at
the front end's start; the 202/poll path, 404, back-pressure (429) and 503
while Redis is unreachable. Each test starts its own redis-server on
loopback."""

import json
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import needs_landlock
from queuehelp import NOBODY, REDIS_CLI, REDIS_SERVER, Redis, Worker, free_port
from servehelp import Server, proc_children

pytestmark = [needs_landlock,
              pytest.mark.skipif(not REDIS_SERVER or not REDIS_CLI,
                                 reason="redis-server and redis-cli are missing "
                                        "(scripts/deps.sh test installs them)")]

SERVE_PROFILE = Path(__file__).resolve().parents[2] / "data" / "serve.py-sandboxes"
# The runs' timeout of quick_profile: a worker's visibility timeout must be
# above it + 5 s.
VISIBILITY = "7"


@pytest.fixture(scope="module")
def quick_profile():
    """The built-in profile with timeout=1s, readable by nobody: a dead
    worker's job is taken again after 7 s, not 25."""
    base = Path(tempfile.mkdtemp(prefix="python-sb-queue-profile-", dir="/tmp"))
    os.chmod(base, 0o755)
    path = base / "quick.py-sandboxes"
    text = SERVE_PROFILE.read_text()
    assert "timeout=10s" in text
    path.write_text(text.replace("timeout=10s", "timeout=1s"))
    os.chmod(path, 0o644)
    yield path
    shutil.rmtree(base, ignore_errors=True)


def front(sb_bin, url, *args, **kw):
    return Server(sb_bin, "--queue", url, "--workers", "16", *args, **kw)


def submit(srv, source, **fields):
    """POST with "wait": false: the job's id."""
    status, headers, body = srv.post_json(dict(source=source, wait=False, **fields))
    assert status == 202, body
    assert body["status"] == "queued" and headers["Location"] == f"/v1/runs/{body['id']}"
    return body["id"]


def poll(srv, run_id, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        status, _, data = srv.request("GET", f"/v1/runs/{run_id}")
        body = json.loads(data)
        if status != 202:
            return status, body
        assert body == {"id": run_id, "status": "pending"}
        assert time.monotonic() < deadline, f"no result for {run_id}"
        time.sleep(0.1)


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


# -- the paths of a run ----------------------------------------------------------

def test_sync_run_poll_and_404(sb_bin):
    with Redis() as redis, front(sb_bin, redis.url("jobs")) as srv, \
            Worker(sb_bin, redis.url("jobs"), "--workers", "1") as worker:
        # Synchronous: the local service's reply.
        status, body = srv.run("import sys\nprint(sys.stdin.read(), sys.argv[1:])\n",
                               stdin="in", args=["a"], files={"d/x.txt": "x"},
                               limits={"timeout_ms": 5000})
        assert status == 200, body
        assert body["stdout"] == "in ['a']\n" and body["stderr"] == ""
        assert body["report"]["exit_code"] == 0 and body["report"]["provider"] == "landlock"
        # The worker checks the request again; its runs are nobody's (a root
        # service), as the local service's.
        status, body = srv.run("import os\nprint(os.getuid())\nopen('/etc/shadow')\n")
        assert status == 200 and body["stdout"] == "65534\n"
        assert [d["kind"] for d in body["report"]["denials"]] == ["file"]

        # 202, then the same body at GET /v1/runs/{id}, as often as asked.
        run_id = submit(srv, "print(6 * 7)")
        status, body = poll(srv, run_id)
        assert status == 200 and body["stdout"] == "42\n"
        assert poll(srv, run_id) == (status, body)
        # Unknown, malformed: 404; POST only on /v1/runs, GET only on an id.
        for path in ("/v1/runs/" + "0" * 32, "/v1/runs/xyz", "/v1/runs/" + "A" * 32):
            status, _, data = srv.request("GET", path)
            assert status == 404, path
            assert "no such run" in json.loads(data)["error"]
        assert srv.request("POST", f"/v1/runs/{run_id}")[0] == 405
        # A bad "wait" is the request's error, nothing queued.
        status, _, body = srv.post_json({"source": "print(1)", "wait": "no"})
        assert status == 400 and body["field"] == "wait"
        assert redis.stats("jobs") == {"results": 3}

        status, _, data = srv.request("GET", "/v1/health")
        assert status == 200 and json.loads(data)["stream_depth"] == 0
        metrics = srv.metrics()
        assert metrics["python_sb_queue_up"] == 1
        assert metrics["python_sb_queue_stream_depth"] == 0
        assert metrics['python_sb_http_requests_total{code="202"}'] >= 1
        # The synchronous runs (the second ends with an uncaught exception).
        assert metrics['python_sb_runs_total{outcome="ok"}'] == 1
        assert metrics['python_sb_runs_total{outcome="error"}'] == 1
        assert worker.stop() == 0, "".join(worker.log)
        assert srv.stop() == 0


def test_fresh_exec_worker(sb_bin):
    with Redis() as redis, front(sb_bin, redis.url("fx")) as srv, \
            Worker(sb_bin, redis.url("fx"), "--workers", "1", "--fresh-exec") as worker:
        assert "runner exec" in "".join(worker.log)
        status, body = srv.run("import sys\nprint(sys.argv[1:])\n", args=["x"])
        assert status == 200 and body["stdout"] == "['x']\n", body


def test_wait_is_refused_by_the_local_service(sb_bin):
    with Server(sb_bin, "--workers", "1") as srv:
        status, _, body = srv.post_json({"source": "print(1)", "wait": False})
        assert status == 400 and body["field"] == "wait"
        assert srv.request("GET", "/v1/runs/" + "0" * 32)[0] == 404


def test_result_expires_after_its_ttl(sb_bin):
    with Redis() as redis, front(sb_bin, redis.url("ttl"), "--result-ttl", "1") as srv, \
            Worker(sb_bin, redis.url("ttl"), "--workers", "1", "--result-ttl", "1"):
        run_id = submit(srv, "print('soon gone')")
        status, body = poll(srv, run_id)
        assert status == 200 and body["stdout"] == "soon gone\n"
        time.sleep(2.2)
        status, _, data = srv.request("GET", f"/v1/runs/{run_id}")
        assert status == 404 and "expired" in json.loads(data)["error"]
        assert redis.cli("KEYS", "{ttl}:result:*") == ""


def test_back_pressure_429_then_drained_by_a_worker(sb_bin):
    with Redis() as redis, front(sb_bin, redis.url("bp"), "--queue-depth", "5") as srv:
        ids = [submit(srv, f"print({i})") for i in range(5)]
        status, headers, body = srv.post_json({"source": "print(5)", "wait": False})
        assert status == 429 and headers["Retry-After"] == "1"
        assert "--queue-depth" in body["error"]
        assert redis.cli("XLEN", "{bp}") == "5"  # the refused one was not queued
        with Worker(sb_bin, redis.url("bp"), "--workers", "2"):
            for i, run_id in enumerate(ids):
                status, body = poll(srv, run_id)
                assert status == 200 and body["stdout"] == f"{i}\n"
        assert redis.cli("XLEN", "{bp}") == "0"
        assert srv.metrics()['python_sb_http_requests_total{code="429"}'] == 1


def test_sync_wait_limit_504_then_poll(sb_bin):
    """A synchronous request waits --queue-wait, then gets 504 with the id:
    the job is not lost, its result is there to poll. The wait outlasts
    --idle-timeout (a suspended connection is not idle)."""
    with Redis() as redis, front(sb_bin, redis.url("slow"), "--queue-wait", "2",
                                 "--idle-timeout", "1") as srv:
        t0 = time.monotonic()
        status, headers, body = srv.post_json({"source": "print('later')"})
        assert status == 504, body
        assert 1.9 < time.monotonic() - t0 < 30
        assert headers["Location"] == f"/v1/runs/{body['id']}" and body["status"] == "pending"
        assert "poll GET /v1/runs/" in body["error"]
        with Worker(sb_bin, redis.url("slow"), "--workers", "1"):
            status, body = poll(srv, body["id"])
            assert status == 200 and body["stdout"] == "later\n"


# -- Redis down ---------------------------------------------------------------

def test_redis_down_at_start_then_up(sb_bin):
    redis = Redis(start=False)
    try:
        with front(sb_bin, redis.url("late")) as srv, \
                Worker(sb_bin, redis.url("late"), "--workers", "1") as worker:
            wait_for(lambda: any("unreachable" in line for line in srv.log), 10,
                     "the front end did not say Redis is unreachable")
            status, headers, body = srv.post_json({"source": "print(1)"})
            assert status == 503 and headers["Retry-After"] == "5"
            assert "127.0.0.1" in body["error"]
            status, _, data = srv.request("GET", "/v1/health")
            assert status == 503 and json.loads(data)["status"] == "unavailable"
            assert srv.metrics()["python_sb_queue_up"] == 0
            # Log lines arrive through a reader thread: waited for, not
            # sampled once.
            wait_for(lambda: any("unreachable" in line for line in worker.log), 10,
                     "the worker did not say Redis is unreachable")

            redis.start()
            wait_for(lambda: srv.request("GET", "/v1/health")[0] == 200, 15,
                     "the front end did not reconnect")
            status, body = srv.run("print('late but there')")
            assert status == 200 and body["stdout"] == "late but there\n"
            wait_for(lambda: any("reachable again" in line for line in srv.log), 10,
                     "the front end did not log its reconnection")
            wait_for(lambda: any("reachable again" in line for line in worker.log), 10,
                     "the worker did not log its reconnection")
    finally:
        redis.close()


def test_redis_killed_during_a_run_loses_nothing_acknowledged(sb_bin):
    with Redis(persist=True) as redis, front(sb_bin, redis.url("crash")) as srv, \
            Worker(sb_bin, redis.url("crash"), "--workers", "1"):
        result = {}

        def wait_run():
            result["sync"] = srv.run("import time\ntime.sleep(0.8)\nprint('survived')\n")

        waiter = threading.Thread(target=wait_run)
        waiter.start()
        wait_for(lambda: redis.cli("XPENDING", "{crash}", "python-sb").startswith("1"), 15,
                 "the job did not start")
        redis.kill()
        # Not queued, so not accepted: 503, nothing half done.
        status, headers, body = srv.post_json({"source": "print(1)", "wait": False})
        assert status == 503 and headers["Retry-After"] == "5", body
        time.sleep(1.5)  # the run ends while Redis is down: its result waits
        redis.start()
        waiter.join(timeout=60)
        status, body = result["sync"]
        assert status == 200 and body["stdout"] == "survived\n", body
        assert redis.stats("crash")["results"] == 1


# -- workers that die, poison -------------------------------------------------

def run_jobs_through_three_workers_one_killed(sb_bin, profile, n_jobs):
    with Redis() as redis, front(sb_bin, redis.url("many"), "--profile", profile,
                                 "--queue-depth", "100000") as srv:
        workers = [Worker(sb_bin, redis.url("many"), "--workers", "1", "--profile", profile,
                          "--visibility-timeout", VISIBILITY) for _ in range(3)]
        try:
            ids = {}

            def post(i):
                return i, submit(srv, f"print({i})")

            with ThreadPoolExecutor(4) as pool:
                for i, run_id in pool.map(post, range(n_jobs)):
                    ids[run_id] = i
            victim = workers[0]

            def victim_running():
                pending = redis.cli("XPENDING", "{many}", "python-sb", "-", "+", "10")
                return victim.consumers() in pending

            wait_for(victim_running, 60, "the first worker never ran a job")
            victim.stop(signal.SIGKILL)
            lost = redis.cli("XPENDING", "{many}", "python-sb", "-", "+", "10",
                             victim.consumers() + "0")
            wait_for(lambda: redis.stats("many").get("results", 0) == n_jobs, 240,
                     "not every job got a result")
            # One result each (a job run twice, by a worker taken for dead
            # that was only slow, would count under "duplicates": its result
            # dropped).
            assert redis.stats("many")["results"] == n_jobs
            for run_id, i in ids.items():
                status, body = poll(srv, run_id)
                assert status == 200 and body["stdout"] == f"{i}\n", (i, body)
            assert redis.cli("XLEN", "{many}") == "0"
            assert redis.cli("XPENDING", "{many}", "python-sb").split("\n")[0] == "0"
            claimed = "".join(workers[1].log + workers[2].log)
            if lost:  # the victim was killed with a job in hand: taken over
                assert "claimed from a worker that did not finish it" in claimed, lost
            for w in workers[1:]:
                assert w.stop() == 0, "".join(w.log)
        finally:
            for w in workers:
                w.close()


def test_jobs_through_three_workers_one_killed(sb_bin, quick_profile):
    run_jobs_through_three_workers_one_killed(sb_bin, quick_profile, 150)


@pytest.mark.load
def test_1000_jobs_through_three_workers_one_killed(sb_bin, quick_profile):
    run_jobs_through_three_workers_one_killed(sb_bin, quick_profile, 1000)


def test_poison_job_is_failed_not_retried(sb_bin, quick_profile):
    with Redis() as redis, front(sb_bin, redis.url("poison"), "--profile", quick_profile) as srv:
        run_id = submit(srv, "print('never runs')")
        entry = redis.cli("XRANGE", "{poison}", "-", "+").split("\n")[0]
        # Three workers took it and died: three deliveries, idle long enough.
        redis.cli("XREADGROUP", "GROUP", "python-sb", "dead-1", "COUNT", "1", "STREAMS",
                  "{poison}", ">")
        for dead in ("dead-2", "dead-3"):
            redis.cli("XCLAIM", "{poison}", "python-sb", dead, "0", entry, "IDLE", "600000")
        # Not a job at all: dropped with a message, the worker goes on.
        redis.cli("XADD", "{poison}", "*", "job", "{\"v\": 1}")
        with Worker(sb_bin, redis.url("poison"), "--workers", "1", "--profile", quick_profile,
                    "--visibility-timeout", VISIBILITY, "--max-deliveries", "3") as worker:
            status, body = poll(srv, run_id)
            assert status == 500, body
            assert "delivered 4 times" in body["error"] and "not tried again" in body["error"]
            wait_for(lambda: "is not a job" in "".join(worker.log), 10,
                     "the bad entry was not reported")
            status, body = srv.run("print('next')")
            assert status == 200 and body["stdout"] == "next\n"
        assert redis.stats("poison") == {"poisoned": 1, "results": 1}
        assert redis.cli("XLEN", "{poison}") == "0"


def kill_fork_server_mid_run(redis, stream, worker):
    """SIGKILLs the worker's fork server once its job has started."""
    wait_for(lambda: redis.cli("XPENDING", stream, "python-sb").startswith("1"), 15,
             "the job did not start")
    zygotes = [pid for pid in proc_children().get(worker.pid, [])
               if b"--pysandboxes-zygote" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert len(zygotes) == 1
    os.kill(zygotes[0], signal.SIGKILL)


def test_fork_server_killed_mid_run_job_is_run_again(sb_bin, quick_profile):
    """The local service answers 503 when its fork server dies during a run;
    a worker leaves the job pending instead, and it is run again after the
    visibility timeout."""
    with Redis() as redis, front(sb_bin, redis.url("fs"), "--profile", quick_profile) as srv, \
            Worker(sb_bin, redis.url("fs"), "--workers", "1", "--profile", quick_profile,
                   "--visibility-timeout", VISIBILITY) as worker:
        run_id = submit(srv, "import time\ntime.sleep(0.5)\nprint('second time')\n")
        kill_fork_server_mid_run(redis, "{fs}", worker)
        status, body = poll(srv, run_id, timeout=60)
        assert status == 200 and body["stdout"] == "second time\n", body
        log = "".join(worker.log)
        assert "left pending for another attempt" in log and "(delivery 2)" in log, log
        assert redis.stats("fs") == {"results": 1}


def test_worker_sigterm_finishes_its_run(sb_bin):
    with Redis() as redis, front(sb_bin, redis.url("term")) as srv:
        with Worker(sb_bin, redis.url("term"), "--workers", "1") as worker:
            run_id = submit(srv, "import time\ntime.sleep(0.8)\nprint('finished')\n")
            wait_for(lambda: redis.cli("XPENDING", "{term}", "python-sb").startswith("1"), 15,
                     "the job did not start")
            assert worker.stop() == 0, "".join(worker.log)
        # Written before the worker exited: no other worker is running.
        status, _, data = srv.request("GET", f"/v1/runs/{run_id}")
        assert status == 200 and json.loads(data)["stdout"] == "finished\n"
        # Its consumer went with it: nothing pending, nothing to claim.
        assert redis.cli("XINFO", "CONSUMERS", "{term}", "python-sb") == ""


def test_consumers_of_workers_gone_are_removed_not_those_with_work(sb_bin, quick_profile):
    """A worker removes the consumers of workers gone (idle for twice the
    visibility timeout, nothing pending), never one holding an entry: its job
    must stay claimable."""
    with Redis() as redis, front(sb_bin, redis.url("gone"), "--profile", quick_profile) as srv:
        run_id = submit(srv, "print('ran')")
        # "dead-busy" took the job and died; "dead-idle" never got one.
        redis.cli("XREADGROUP", "GROUP", "python-sb", "dead-busy", "COUNT", "1", "STREAMS",
                  "{gone}", ">")
        redis.cli("XGROUP", "CREATECONSUMER", "{gone}", "python-sb", "dead-idle")

        def consumers():
            out = redis.cli("XINFO", "CONSUMERS", "{gone}", "python-sb").split("\n")
            return {out[i + 1]: int(out[i + 3]) for i, v in enumerate(out) if v == "name"}

        assert consumers() == {"dead-busy": 1, "dead-idle": 0}
        # A visibility timeout of 30 s: nothing is claimed during the test, and
        # nothing is idle long enough (60 s) to go either.
        with Worker(sb_bin, redis.url("gone"), "--workers", "1", "--profile", quick_profile,
                    "--visibility-timeout", "30") as worker:
            # Its first look is at its start; a few reads (1 s each) more.
            time.sleep(2.5)
            assert worker.proc.poll() is None, "".join(worker.log)
            assert consumers() == {"dead-busy": 1, "dead-idle": 0}
            assert worker.stop() == 0, "".join(worker.log)
            assert "consumer" not in "".join(worker.log)
        assert set(consumers()) == {"dead-busy", "dead-idle"}
        # A worker with a visibility timeout of 7 s: it claims the job of
        # "dead-busy" (pending for 7 s) and runs it; both dead consumers go
        # once idle for 14 s with nothing pending, and only its own is left.
        with Worker(sb_bin, redis.url("gone"), "--workers", "1", "--profile", quick_profile,
                    "--visibility-timeout", VISIBILITY) as worker:
            status, body = poll(srv, run_id)
            assert status == 200 and body["stdout"] == "ran\n", body
            wait_for(lambda: not {"dead-busy", "dead-idle"} & set(consumers()), 40,
                     "the dead consumers were not removed")
            assert consumers() == {worker.consumers() + "0": 0}
            log = "".join(worker.log)
            assert re.search(r"removed [12] consumers? of workers gone \(nothing pending, "
                             r"idle 14 s\)", log), log
        assert redis.stats("gone") == {"results": 1}


def test_worker_stopped_with_a_job_left_pending_keeps_its_consumer(sb_bin, quick_profile):
    """A job the worker could not run stays pending under its consumer, which
    the worker's clean exit must not remove (XGROUP DELCONSUMER would drop
    the entry: never claimed, never answered)."""
    with Redis() as redis, front(sb_bin, redis.url("kept"), "--profile", quick_profile) as srv:
        with Worker(sb_bin, redis.url("kept"), "--workers", "1", "--profile", quick_profile,
                    "--visibility-timeout", VISIBILITY) as worker:
            run_id = submit(srv, "import time\ntime.sleep(0.5)\nprint('second worker')\n")
            kill_fork_server_mid_run(redis, "{kept}", worker)
            wait_for(lambda: "left pending for another attempt" in "".join(worker.log), 15,
                     "the job was not left pending")
            owner = worker.consumers() + "0"
            assert worker.stop() == 0, "".join(worker.log)
        pending = redis.cli("XPENDING", "{kept}", "python-sb", "-", "+", "10")
        assert owner in pending, pending
        with Worker(sb_bin, redis.url("kept"), "--workers", "1", "--profile", quick_profile,
                    "--visibility-timeout", VISIBILITY):
            status, body = poll(srv, run_id, timeout=60)
            assert status == 200 and body["stdout"] == "second worker\n", body
        assert redis.stats("kept") == {"results": 1}


def test_pooled_connections_closed_by_redis_are_made_anew(sb_bin, quick_profile):
    """Redis closes idle clients (its `timeout` setting, a proxy, CLIENT KILL,
    a restart): the front end's pooled connections are then broken, which
    says nothing about Redis now. A poll, a submission or a synchronous run
    that takes one is tried once more on a new connection: never a 503 while
    Redis answers. The workers reconnect too."""
    with Redis() as redis, front(sb_bin, redis.url("idle"), "--profile", quick_profile) as srv, \
            Worker(sb_bin, redis.url("idle"), "--workers", "1", "--profile", quick_profile,
                   "--visibility-timeout", VISIBILITY):
        first = submit(srv, "print('first')")
        status, body = poll(srv, first)
        assert status == 200 and body["stdout"] == "first\n", body

        def get():
            status, _, data = srv.request("GET", f"/v1/runs/{first}")
            body = json.loads(data)
            assert status == 200 and body["stdout"] == "first\n", (status, body)

        def post_async():
            status, body = poll(srv, submit(srv, "print('queued')"))
            assert status == 200 and body["stdout"] == "queued\n", body

        def post_sync():
            status, body = srv.run("print('waited')")
            assert status == 200 and body["stdout"] == "waited\n", body

        # Each kind of request first after the kill, on the pooled connection.
        for first_request in (get, post_async, post_sync, get):
            killed = int(redis.cli("CLIENT", "KILL", "TYPE", "normal"))
            assert killed >= 2, killed  # the front end's and the worker's
            first_request()
            get()
        # The monitor's own connection (it reads the stream's depth every
        # second) breaks too: Redis is not marked down for that, which would
        # refuse requests for the back-off's 0.1 s.
        redis.cli("CLIENT", "KILL", "TYPE", "normal")
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            get()
        status, _, data = srv.request("GET", "/v1/health")
        assert status == 200, data
        assert redis.stats("idle") == {"results": 3}


def test_redis_restarted_mid_load(sb_bin, quick_profile):
    """Redis SIGKILLed and restarted (its fsynced append-only file) while jobs
    flow: a client gets 503 for what could not be queued and sends it again;
    every job accepted gets its one result."""
    with Redis(persist=True) as redis, front(sb_bin, redis.url("rs"), "--profile",
                                            quick_profile) as srv:
        workers = [Worker(sb_bin, redis.url("rs"), "--workers", "1", "--profile",
                          quick_profile, "--visibility-timeout", VISIBILITY) for _ in range(2)]
        try:
            accepted, refused = {}, [0]

            def client(start):
                for i in range(start, start + 60):
                    while True:
                        status, _, body = srv.post_json(
                            {"source": f"print({i})", "wait": i % 10 != 0})
                        if status in (200, 202):
                            accepted[i] = body
                            break
                        assert status == 503, body
                        refused[0] += 1
                        time.sleep(0.2)

            clients = [threading.Thread(target=client, args=(k * 60,)) for k in range(3)]
            for c in clients:
                c.start()
            wait_for(lambda: len(accepted) >= 40, 60, "no load")
            redis.restart()
            for c in clients:
                c.join(timeout=120)
            assert len(accepted) == 180
            for i, body in accepted.items():
                if "id" in body:
                    status, body = poll(srv, body["id"])
                assert body.get("stdout") == f"{i}\n", (i, body)
            stats = redis.stats("rs")
            # A job written just before Redis died, whose 503 the client then
            # sent again, is run too (its result never read): at most one
            # such job per 503, and never a job's result written twice
            # (results counts jobs; a second result is dropped as a duplicate).
            assert 180 <= stats["results"] <= 180 + refused[0], (stats, refused)
        finally:
            for w in workers:
                w.close()


# -- as nobody, AUTH ----------------------------------------------------------

# The ACL of docs/serve-queue.md's Security: the commands python-sb sends (the
# scripts' too), on the stream's keys only.
ACL = ("~{nb}* +eval +xadd +xlen +xgroup|create +xgroup|delconsumer +xinfo|consumers "
       "+xreadgroup +xautoclaim +xpending +xack +xdel +set +get +exists +del +rpush +blpop "
       "+expire +hincrby")


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="starts the front end and the worker as nobody from root")
def test_front_end_and_worker_as_nobody_with_acl_user(sb_bin):
    with Redis(password="admin", users=[f"sb on >s3cret {ACL}"]) as redis:
        # The front end's password from the environment (USER:@: none in
        # the URL), the worker's in its URL.
        env = {"PYTHON_SB_QUEUE_PASSWORD": "s3cret"}
        front_url = redis.url("nb").replace("redis://", "redis://sb:@")
        worker_url = redis.url("nb").replace("redis://", "redis://sb:s3cret@")
        with front(sb_bin, front_url, prefix=NOBODY, env=env) as srv, \
                Worker(sb_bin, worker_url, "--workers", "1", prefix=NOBODY) as worker:
            status, body = srv.run("import os\nprint(os.getuid())\n")
            assert status == 200 and body["stdout"] == "65534\n"
            run_id = submit(srv, "print('polled')")
            assert poll(srv, run_id)[1]["stdout"] == "polled\n"
            assert not any("s3cret" in line for line in srv.log)
            # The password is nowhere in what Redis holds.
            keys = redis.cli("--scan").split("\n")
            assert "{nb}:stats" in keys and "{nb}:result:" + run_id in keys
            for key in keys:
                if ":result:" in key:
                    assert "s3cret" not in redis.cli("GET", key)
            assert worker.stop() == 0, "".join(worker.log)
        # The ACL lets the worker remove consumers (its own at its exit).
        assert "cannot remove" not in "".join(worker.log), worker.log
        assert redis.cli("XINFO", "CONSUMERS", "{nb}", "python-sb") == ""
        # Without the environment: no AUTH, refused.
        with front(sb_bin, front_url) as srv:
            status, _, body = srv.post_json({"source": "print(1)"})
            assert status == 503 and "NOAUTH" in body["error"], body


def test_wrong_password_is_a_clear_error(sb_bin):
    with Redis(password="right") as redis, \
            front(sb_bin, redis.url("pw", password="wrong")) as srv:
        status, _, body = srv.post_json({"source": "print(1)"})
        assert status == 503
        assert "WRONGPASS" in body["error"] or "invalid" in body["error"], body


def test_bad_queue_options(sb_bin):
    for args, message in (
            (["--worker"], "--worker needs --queue"),
            (["--queue", "http://x/y"], "expected redis://"),
            (["--queue", "redis://127.0.0.1:1/"], "must end with /STREAM"),
            (["--queue", f"redis://127.0.0.1:{free_port()}/s", "--worker",
              "--visibility-timeout", "12"], "must be above the runs' timeout")):
        with pytest.raises(RuntimeError, match=message):
            Server(sb_bin, *args, workdir=False)
