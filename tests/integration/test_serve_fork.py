# SPDX-License-Identifier: MIT
"""The fork server of python-sb serve (docs/serve.md, "The fork server"): what
is its own beyond test_serve.py, which runs everything with both runners.
Runs that share a parent see nothing of each other; a run that corrupts the
interpreter leaves the next one alone; the fork server stays single-threaded,
never runs submitted code, and is restarted when it dies, runs in flight then
getting an error, not a hang; a run is confined before the first bytecode of
its program; what is shared between runs (hash seed, address-space layout)
and what is not (random's state)."""

import json
import os
import re
import secrets
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import IS_ASAN, needs_landlock, needs_userns
from servehelp import Server

pytestmark = needs_landlock


@pytest.fixture(scope="module")
def server(sb_bin):
    srv = Server(sb_bin, "--workers", "2", "--queue", "32")
    try:
        yield srv
        assert srv.stop() == 0, "".join(srv.log)
    finally:
        srv.close()


@pytest.fixture
def shared_dir():
    """A directory the runs' user may read (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="python-sb-serve-fork-", dir="/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def ok(srv, source, **fields):
    status, body = srv.run(source, **fields)
    assert status == 200, (body, srv.log)
    assert body["report"]["exit_code"] == 0, body
    return body


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split(None, 1)[1].strip()
    raise KeyError(key)


# -- the fork server itself ---------------------------------------------------

def test_fork_server_is_ready_warm_and_single_threaded(server):
    ready = [re.search(r"fork server ready \(pid (\d+)\): (\d+) modules warmed", line)
             for line in server.log]
    ready = [m for m in ready if m]
    assert len(ready) == 1, server.log
    # Most of the built-in profile's modules: the server imported them once.
    assert int(ready[0].group(2)) >= 30, server.log
    assert int(ready[0].group(1)) == server.zygote()
    assert "runner fork" in "".join(server.log)
    for _ in range(5):
        ok(server, "import json, re, decimal\nprint(json.dumps([1]))\n")
    zygote = server.zygote()
    # One thread at every fork (zygote.c says why): none was ever started.
    assert proc_status(zygote, "Threads") == "1"
    # It has no child between runs, and holds its control socket and its
    # signalfd beyond 0-2 (a run's reply socket is closed just after its
    # DONE: a moment after the response, perhaps).
    assert server.descendants() == []
    deadline = time.monotonic() + 5
    while len(os.listdir(f"/proc/{zygote}/fd")) != 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(os.listdir(f"/proc/{zygote}/fd")) == 5


def test_warmed_modules_are_loaded_before_the_program(server):
    body = ok(server, "import sys\nprint(sorted(m for m in ('json', 'decimal', 'statistics') "
                      "if m in sys.modules))\nimport json, decimal, statistics\n")
    assert body["stdout"] == "['decimal', 'json', 'statistics']\n"
    assert body["report"]["denials"] == [] and body["report"]["denials_total"] == 0
    # ... yet the profile still decides: a warmed module's dependency that
    # the profile does not list is refused to the program.
    status, body = server.run("import sys\nassert 'enum' in sys.modules\nimport enum\n")
    assert body["report"]["exit_code"] == 0  # enum is in the built-in profile
    status, body = server.run("import _json\n")
    assert [d["subject"] for d in body["report"]["denials"]] == ["_json"]


def test_zygote_never_runs_submitted_code(server):
    """The program's process is a child of the fork server, never the server
    itself, and it runs as the runs' user (root's service: nobody)."""
    zygote = server.zygote()
    body = ok(server, "import os\nprint(os.getpid(), os.getppid(), os.getuid())\n")
    pid, ppid, uid = map(int, body["stdout"].split())
    assert ppid == zygote and pid != zygote
    if os.geteuid() == 0:
        assert uid == 65534
        assert proc_status(zygote, "Uid").split()[0] == "0"


# -- isolation between runs that share a parent -------------------------------

def test_a_run_cannot_see_a_previous_runs_objects_or_files(server):
    ok(server, "import json, sys, os\n"
               "json.secret = 'run one'\n"
               "__builtins__.leftover = 42\n"
               "sys.modules['run_one'] = json\n"
               "os.environ['RUN_ONE'] = '1'\n"
               "print(open('data.txt').read())\n",
       files={"data.txt": "first"})
    body = ok(server, "import json, sys, os\n"
                      "print(hasattr(json, 'secret'), hasattr(__builtins__, 'leftover'),\n"
                      "      'run_one' in sys.modules, 'RUN_ONE' in os.environ,\n"
                      "      sorted(os.listdir('.')), os.path.exists('../' ))\n")
    assert body["stdout"].startswith("False False False False ['main.py']")
    # The previous run's directory is gone; the work directory cannot be
    # listed by a run.
    status, body = server.run("import os\nprint(os.listdir('..'))\n")
    assert body["report"]["exit_code"] == 1
    assert body["report"]["denials"] and body["report"]["denials"][0]["kind"] == "file"


def memory_holds(pid, needles):
    """Which of needles (bytes) are anywhere in the readable memory of pid
    (as root: /proc/PID/mem of a process of another user)."""
    found = set()
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            if fields[1][0] != "r" or line.rstrip().endswith(("[vvar]", "[vsyscall]")):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            # In pieces that overlap by a needle's length, so that none is
            # cut in two.
            overlap = max(len(n) for n in needles)
            for pos in range(start, end, 1 << 24):
                try:
                    mem.seek(pos)
                    data = mem.read(min(end, pos + (1 << 24) + overlap) - pos)
                except OSError:
                    break
                found.update(n for n in needles if n in data)
    return found


@pytest.mark.skipif(os.geteuid() != 0, reason="reads the memory of the runs' user's processes")
@pytest.mark.skipif(IS_ASAN, reason="ASan maps terabytes of shadow memory")
def test_no_run_data_in_the_fork_server_nor_in_the_next_run(server):
    """A run's program, input, files, arguments and output never reach the
    fork server (it passes descriptors on), so the next run, a copy of the
    server, holds none of them: both memories are searched for them, each
    search checked on something it must find."""
    tag = secrets.token_hex(12)
    marks = {k: f"{k}-{tag}".encode() for k in ("source", "stdin", "file", "arg", "output")}
    # The output mark is made at run time: the source holds it reversed.
    source = (f"import sys\nSECRET = {marks['source'].decode()!r}\n"
              "data = [sys.stdin.read(), open('data.txt').read(), sys.argv[1]]\n"
              f"print({marks['output'].decode()[::-1]!r}[::-1], len(''.join(data)))\n")
    body = ok(server, source, stdin=marks["stdin"].decode(), args=[marks["arg"].decode()],
              files={"data.txt": marks["file"].decode()})
    assert body["stdout"].startswith(marks["output"].decode())

    zygote = server.zygote()
    assert memory_holds(zygote, [b"--pysandboxes-zygote=3"]) == {b"--pysandboxes-zygote=3"}
    assert memory_holds(zygote, list(marks.values())) == set()

    own = f"own-{tag}".encode()
    result = {}
    sleeper = threading.Thread(target=lambda: result.update(r=server.run(
        f"import time\nOWN = {own.decode()!r}\ntime.sleep(3)\n")))
    sleeper.start()
    found = set()
    deadline = time.monotonic() + 30
    while own not in found and time.monotonic() < deadline:
        pids = [p for p in server.descendants()]
        for pid in pids:
            try:
                found = memory_holds(pid, [own, *marks.values()])
            except OSError:  # not started yet, or gone
                continue
        time.sleep(0.05)
    sleeper.join()
    assert result["r"][0] == 200, result
    assert own in found, "the next run was not seen running"
    assert found == {own}, found


def test_a_run_that_corrupts_the_interpreter_does_not_affect_the_next(server):
    ok(server, "import sys, json, random\n"
               "json.dumps = None\n"
               "random.random = lambda: 4\n"
               "__builtins__.len = lambda x: -1\n"
               "sys.modules['math'] = None\n"
               "del sys.modules['os']\n"
               "sys.path.clear()\n"
               "sys.setrecursionlimit(50)\n"
               "sys.stdout.flush()\n"
               "__builtins__.print = None\n")
    body = ok(server, "import sys, json, random, math, os\n"
                      "print(json.dumps([len('abc'), math.sqrt(4)]), 0 <= random.random() < 1,\n"
                      "      sys.getrecursionlimit(), bool(sys.path))\n")
    assert body["stdout"] == "[3, 2.0] True 1000 True\n"


def test_random_is_reseeded_but_the_hash_seed_and_layout_are_shared(sb_bin, server):
    """What a fork server shares between runs (docs/serve.md): the hash
    secret (CPython reads it once, at start) and the address-space layout
    (so id() of a warmed object); what it does not: random's state, reseeded
    in each child. --fresh-exec shares none of them."""
    source = ("import random, json\n"
              "print(random.random(), hash('python-sb'), id(json.dumps))\n")
    runs = [ok(server, source)["stdout"].split() for _ in range(3)]
    assert len({r[0] for r in runs}) == 3, runs      # random: reseeded
    assert len({r[1] for r in runs}) == 1, runs      # hash('...'): one secret
    assert len({r[2] for r in runs}) == 1, runs      # the same layout
    with Server(sb_bin, "--workers", "1", "--fresh-exec") as fresh:
        runs = [ok(fresh, source)["stdout"].split() for _ in range(3)]
        assert len({r[1] for r in runs}) == 3, runs
        if not IS_ASAN:  # ASan's allocator puts the heap at a fixed place
            assert len({r[2] for r in runs}) == 3, runs
        assert fresh.stop() == 0


# -- confined before the first bytecode --------------------------------------

@pytest.mark.parametrize("py_sandbox", ["true", "false"])
def test_confined_before_the_first_bytecode(sb_bin, shared_dir, py_sandbox):
    """The first line of the program already runs in the sandbox: with
    py-sandbox=false the kernel alone refuses a file outside the grants
    (Landlock: EACCES), and the process has its seccomp filter, no
    capability, no_new_privs and the runs' user."""
    profile = shared_dir / "p.py-sandboxes"
    # /proc for the guard to let the program read its own status (Landlock
    # grants /proc/self alone).
    profile.write_text(f"os-sandbox=landlock\npy-sandbox={py_sandbox}\npython-import=*\n"
                       "expose-ro=/proc\ntimeout=10s\n")
    source = ("try:\n"
              "    open('/etc/hostname').read()\n"
              "    first = 'read'\n"
              "except OSError as e:\n"
              "    first = type(e).__name__ + ':' + str(e.errno)\n"
              "status = dict(l.split(':', 1) for l in open('/proc/self/status'))\n"
              "import os\n"
              "print(first, status['Seccomp'].strip(), status['NoNewPrivs'].strip(),\n"
              "      status['CapEff'].strip(), os.getuid())\n")
    with Server(sb_bin, "--profile", profile, "--workers", "1") as srv:
        status, body = srv.run(source)
        assert status == 200, body
        first, seccomp, nnp, capeff, uid = body["stdout"].split()
        if py_sandbox == "false":
            assert first == "PermissionError:13"   # Landlock's refusal
        else:
            assert first == "RuleFileNotFoundError:2"    # the guard's, first
        assert (seccomp, nnp, capeff) == ("2", "1", "0000000000000000")
        if os.geteuid() == 0:
            assert uid == "65534"
        assert srv.stop() == 0


def test_threads_in_a_run_do_not_reach_the_server(sb_bin, shared_dir):
    """A profile that grants threads: a run starts threads, holds locks and
    ends with a daemon thread still running; the server stays single-threaded
    and the next run works."""
    profile = shared_dir / "p.py-sandboxes"
    profile.write_text("os-sandbox=landlock\npython-import=threading, time, queue, sys\n"
                       "python-api=ALLOW:threads\ntimeout=10s\n")
    source = ("import threading, time, queue\n"
              "lock = threading.Lock()\n"
              "q = queue.Queue()\n"
              "def work(i):\n"
              "    with lock:\n"
              "        q.put(i * i)\n"
              "ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]\n"
              "for t in ts: t.start()\n"
              "for t in ts: t.join()\n"
              "lock.acquire()\n"  # held at exit
              "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
              "print(sorted(q.get() for _ in range(8)))\n")
    with Server(sb_bin, "--profile", profile, "--workers", "2") as srv:
        for _ in range(3):
            body = ok(srv, source)
            assert body["stdout"] == "[0, 1, 4, 9, 16, 25, 36, 49]\n"
            assert body["report"]["time"]["wall_ms"] < 10_000
        assert proc_status(srv.zygote(), "Threads") == "1"
        assert srv.descendants() == []
        assert srv.stop() == 0


KERNEL_ONLY_HOSTILE = {
    # The seccomp filter refuses the clone() of a process: EPERM.
    "fork bomb": "import os\nwhile True:\n    os.fork()\n",
    "memory bomb": "x = []\nwhile True:\n    x.append(bytearray(10**7))\n",
    "output flood": "while True:\n    print('flood' * 1000)\n",
    "infinite loop": "while True:\n    pass\n",
    "signal the server": "import os\nos.kill(os.getppid(), 9)\n",
}


@pytest.mark.skipif(IS_ASAN, reason="an ASan build cannot bound its address space")
def test_hostile_programs_without_the_guard_are_stopped_by_the_kernel(sb_bin, shared_dir):
    """py-sandbox=false: the kernel side alone (seccomp, rlimits, the
    server's deadline and the service's output cap) answers each hostile
    program with a report; nothing of it is left, and the fork server is the
    same process after them."""
    profile = shared_dir / "p.py-sandboxes"
    profile.write_text("os-sandbox=landlock\npy-sandbox=false\npython-import=*\n"
                       "limit-memory=256MB\ntimeout=2s\n")
    with Server(sb_bin, "--profile", profile, "--workers", "2",
                "--max-output", "100000") as srv:
        zygote = srv.zygote()
        for name, source in KERNEL_ONLY_HOSTILE.items():
            status, body = srv.run(source)
            assert status == 200, (name, body)
            r = body["report"]
            if name == "fork bomb":
                assert r["exit_code"] == 1 and "PermissionError" in body["stderr"], body
            elif name == "memory bomb":
                assert r["exit_code"] == 1 and "MemoryError" in body["stderr"], body
                assert r["limit_exceeded"] == "memory"
            elif name == "output flood":
                assert r["limit_exceeded"] == "output" and r["output"]["truncated"] is True
            elif name == "infinite loop":
                assert r["timed_out"] is True and r["signal_name"] == "SIGKILL"
            elif name == "signal the server":
                assert r["exit_code"] == 1 and "PermissionError" in body["stderr"], body
            assert srv.descendants() == [], name
            assert srv.leftovers() == [], name
        assert srv.zygote() == zygote
        assert ok(srv, "print(6 * 7)\n")["stdout"] == "42\n"
        assert srv.stop() == 0


def test_eval_layer_in_a_forked_run(sb_bin, shared_dir):
    """The eval-* layer works in a run forked from the server as in a fresh
    python-sb: evaluated code that calls something runs on an evaluation
    thread of the run's own process (the server stays single-threaded), and a
    refusal is in the report with its rule."""
    profile = shared_dir / "p.py-sandboxes"
    profile.write_text("os-sandbox=landlock\npython-import=*\neval-syntax=arith, Call\n"
                       "eval-call=abs\neval-timeout=1s\ntimeout=10s\n")
    source = ("import pysandboxes\nprint(eval('abs(-3) + 4'))\n"
              "try:\n    eval('len([])')\nexcept pysandboxes.EvalSyntaxRejected as e:\n"
              "    print('rejected', e.rules)\n")
    with Server(sb_bin, "--profile", profile, "--workers", "1") as srv:
        for _ in range(2):
            body = ok(srv, source)
            assert body["stdout"] == "7\nrejected ['eval-call=len']\n", body
            assert [(d["kind"], d["rule_to_add"]) for d in body["report"]["denials"]] == \
                [("eval", "eval-call=len")]
        assert proc_status(srv.zygote(), "Threads") == "1"
        assert srv.stop() == 0


def test_profile_that_allows_processes_needs_fresh_exec(sb_bin, shared_dir):
    profile = shared_dir / "p.py-sandboxes"
    profile.write_text("os-sandbox=landlock\npython-import=os\npython-api=ALLOW:os.fork\n"
                       "timeout=10s\n")
    with pytest.raises(RuntimeError, match="supervises runs of one process.*use --fresh-exec"):
        Server(sb_bin, "--profile", profile, "--workers", "1", workdir=False).close()
    with Server(sb_bin, "--profile", profile, "--workers", "1", "--fresh-exec") as srv:
        body = ok(srv, "import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\n"
                       "print(os.waitpid(pid, 0)[1])\n")
        assert body["stdout"] == "0\n"
        assert srv.stop() == 0


@needs_userns
def test_provider_that_runs_the_program_in_a_child_needs_fresh_exec(sb_bin, shared_dir):
    """os-sandbox=unshare runs the program as the init's child of a new PID
    namespace: one fork per run is not enough, the server refuses to start."""
    profile = shared_dir / "u.py-sandboxes"
    profile.write_text("os-sandbox=unshare\npython-import=os\ntimeout=10s\n")
    with pytest.raises(RuntimeError, match="os-sandbox=unshare runs the program in a process "
                                           "of its own: the fork server cannot; use --fresh-exec"):
        Server(sb_bin, "--profile", profile, "--workers", "1", workdir=False).close()
    with Server(sb_bin, "--profile", profile, "--workers", "1", "--fresh-exec") as srv:
        body = ok(srv, "import os\nprint(os.getpid())\n")
        assert body["stdout"] == "2\n", body  # the init of its PID namespace is 1
        assert srv.stop() == 0


# -- the fork server dies -----------------------------------------------------

def test_fork_server_killed_while_idle_is_restarted(sb_bin):
    with Server(sb_bin, "--workers", "1") as srv:
        first = srv.zygote()
        ok(srv, "print(1)\n")
        os.kill(first, signal.SIGKILL)
        # Ready is the service's word that the new one serves: a new process
        # alone is not (a killed zygote's socket outlives its memory for a
        # while, and a run sent then ends with a 503 that says so).
        deadline = time.monotonic() + 60
        while (sum("fork server ready" in line for line in srv.log) < 2
               and time.monotonic() < deadline):
            time.sleep(0.05)
        body = ok(srv, "print(2)\n")
        assert body["stdout"] == "2\n"
        assert srv.zygote() != first
        assert any("the fork server died (signal 9 (KILL)): restarting it" in line
                   for line in srv.log), srv.log
        assert srv.stop() == 0


def test_fork_server_that_cannot_restart_fails_closed_with_503(sb_bin, shared_dir):
    """The fork server dies and its restart fails: runs get 503 with
    Retry-After and the reason at once (no run waits for it, none runs
    without it); once it can start again, runs go through."""
    allowed = shared_dir / "may-start"
    wrapper = shared_dir / "python-sb"
    wrapper.write_text(f"#!/bin/sh\n[ -e {allowed} ] || exit 3\nexec {os.path.abspath(sb_bin)} \"$@\"\n")
    wrapper.chmod(0o755)
    allowed.touch()
    with Server(sb_bin, "--python-sb", wrapper, "--workers", "1") as srv:
        ok(srv, "print(1)\n")
        allowed.unlink()
        first = srv.zygote()
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while (not any("the fork server did not start" in line for line in srv.log)
               and time.monotonic() < deadline):
            time.sleep(0.05)
        status, headers, body = srv.post_json({"source": "print(2)\n"})
        assert status == 503, body
        assert headers["Retry-After"] == "5"
        assert "the fork server is not running" in body["error"], body
        assert "ended (exit status 3) before it was ready" in body["error"], body
        assert srv.zygotes() == [] and srv.descendants() == []
        status, headers, data = srv.request("GET", "/v1/health")
        health = json.loads(data)
        assert status == 503 and health["status"] == "unavailable", health
        assert "ended (exit status 3) before it was ready" in health["error"], health
        assert srv.metrics()['python_sb_http_requests_total{code="503"}'] >= 2
        allowed.touch()
        deadline = time.monotonic() + 60
        while (sum("fork server ready" in line for line in srv.log) < 2
               and time.monotonic() < deadline):
            time.sleep(0.05)
        body = ok(srv, "print(3)\n")
        assert body["stdout"] == "3\n"
        status, _, data = srv.request("GET", "/v1/health")
        assert status == 200 and json.loads(data)["status"] == "ok", data
        assert srv.stop() == 0


@pytest.mark.skipif(IS_ASAN, reason="slow enough under ASan without a load")
def test_fork_server_killed_mid_load_restarts_and_runs_continue(sb_bin):
    """Runs keep coming while the fork server is killed twice: every run in
    flight then ends with a 503 that says so (none hangs), every other one
    with its output, and nothing is left."""
    with Server(sb_bin, "--workers", "2", "--queue", "64") as srv:
        results, lock, stop = [], threading.Lock(), threading.Event()

        def client(k):
            conn = srv.connection(timeout=60)
            i = 0
            while not stop.is_set():
                body = json.dumps({"source": f"import time\ntime.sleep(0.02)\nprint({k}, {i})\n"})
                start = time.monotonic()
                conn.request("POST", "/v1/runs", body=body)
                resp = conn.getresponse()
                data = json.loads(resp.read())
                with lock:
                    results.append((resp.status, data, (k, i), time.monotonic() - start))
                i += 1
            conn.close()

        threads = [threading.Thread(target=client, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        killed = []
        for _ in range(2):
            time.sleep(1.5)
            zygote = srv.zygote()
            os.kill(zygote, signal.SIGKILL)
            killed.append(zygote)
            deadline = time.monotonic() + 60
            while srv.zygotes() in ([], [zygote]) and time.monotonic() < deadline:
                time.sleep(0.05)
        time.sleep(1.5)
        stop.set()
        for t in threads:
            t.join(timeout=120)
        assert srv.zygote() not in killed
        ok_runs = [r for r in results if r[0] == 200]
        failed = [r for r in results if r[0] != 200]
        for status, data, (k, i), _ in ok_runs:
            assert data["stdout"] == f"{k} {i}\n"
        for status, data, _, _ in failed:
            assert status == 503 and "fork server" in data["error"], data
        assert len(failed) <= 2 * 2 * 2, failed  # at most the runs in flight, twice
        assert max(r[3] for r in results) < 30  # no run hung
        assert len(ok_runs) > 30
        # The last runs, after both restarts, all went through.
        assert all(r[0] == 200 for r in results[-6:])
        deadline = time.monotonic() + 10
        while srv.descendants() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert srv.descendants() == []
        assert srv.leftovers() == []
        assert srv.stop() == 0
