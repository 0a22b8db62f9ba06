# SPDX-License-Identifier: MIT
"""python-sb serve (docs/serve.md): every status code, every bad input, hostile
programs answered with a correct report while other runs go on, isolation of
runs, idle and slow connections, and draining on SIGTERM. The tests of the
shared server run with each runner: the fork server (the default) and
--fresh-exec; test_serve_fork.py has what is the fork server's own."""

import json
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import IS_ASAN, needs_landlock, not_under_asan
from servehelp import Server

pytestmark = needs_landlock

REPORT_FIELDS = {"version", "exit_code", "signal", "signal_name", "timed_out", "limit_exceeded",
                 "time", "memory", "output", "denials", "denials_total", "profile", "python",
                 "provider", "measured"}


RUNNERS = {"fork": (), "exec": ("--fresh-exec",)}


@pytest.fixture(scope="module", params=sorted(RUNNERS))
def server(sb_bin, request):
    srv = Server(sb_bin, "--workers", "2", "--queue", "16", "--max-body", "100000",
                 "--max-output", "100000", *RUNNERS[request.param])
    try:
        yield srv
        assert srv.stop() == 0, "".join(srv.log)
        assert not srv.workdir.exists() or not any(srv.workdir.iterdir()), \
            "the work directory is not empty after SIGTERM"
    finally:
        srv.close()


def runs_total(srv):
    return sum(v for k, v in srv.metrics().items() if k.startswith("python_sb_runs_total"))


# -- a plain run -------------------------------------------------------------

def test_health(server):
    status, headers, body = server.request("GET", "/v1/health")
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    health = json.loads(body)
    assert health["status"] == "ok" and health["workers"] == 2 and health["queue_capacity"] == 16


def test_run_returns_output_and_report(server):
    status, body = server.run(
        "import sys\nprint('out', sys.argv[1:], sys.stdin.read())\n"
        "print('err', file=sys.stderr)\n", stdin="in put", args=["a", "b c"])
    assert status == 200, body
    assert body["stdout"] == "out ['a', 'b c'] in put\n"
    assert body["stderr"] == "err\n"
    report = body["report"]
    assert REPORT_FIELDS <= set(report)
    assert report["exit_code"] == 0 and report["signal"] is None
    assert report["timed_out"] is False and report["limit_exceeded"] is None
    assert report["output"] == {"stdout_bytes": 24, "stderr_bytes": 4, "truncated": False}
    assert report["provider"] == "landlock"
    assert report["time"]["wall_ms"] > 0
    assert report["memory"]["peak_rss_kb"] > 0
    lines = report["profile"]["lines"]
    assert lines == {"1": 1, "2": 1, "3": 1}
    assert report["profile"]["file"].endswith("/main.py")


def test_uncaught_exception_is_printed_as_python_prints_it(server):
    status, body = server.run("import sys\nprint('before')\nsys.stdout.flush()\n"
                              "def f():\n    raise ValueError('boom')\nf()\n")
    assert status == 200, body
    assert body["report"]["exit_code"] == 1
    assert body["stdout"] == "before\n"
    lines = body["stderr"].splitlines()
    assert lines[0] == "Traceback (most recent call last):", body["stderr"]
    assert lines[-1] == "ValueError: boom"
    assert "Exception ignored" not in body["stderr"]


def test_run_holds_only_its_standard_descriptors(server):
    """Nothing of the service, the fork server or another run: the program's
    process has 0, 1 and 2 open and no other descriptor."""
    status, body = server.run("import os\nopen_fds = []\nfor fd in range(4096):\n"
                              "    try:\n        os.fstat(fd)\n    except OSError:\n"
                              "        continue\n    open_fds.append(fd)\nprint(open_fds)\n")
    assert status == 200, body
    assert body["stdout"] == "[0, 1, 2]\n", body


def test_files_are_readable_and_only_the_runs_own(server):
    status, body = server.run(
        "import os\nprint(sorted(os.listdir('.')), open('data/in.txt').read())\n",
        files={"data/in.txt": "payload", "notes": "n"})
    assert status == 200, body
    assert body["stdout"] == "['data', 'main.py', 'notes'] payload\n"
    # The next run sees none of them: its directory is new.
    status, body = server.run("import os\nprint(sorted(os.listdir('.')))\n")
    assert body["stdout"] == "['main.py']\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="runs change user only when the server is root")
def test_runs_execute_as_nobody(server):
    status, body = server.run("import os\nprint(os.getuid(), os.getgid())\n")
    assert body["stdout"] == "65534 65534\n"


def test_program_cannot_write_its_directory(server):
    status, body = server.run("open('new.txt', 'w')\n")
    assert status == 200
    report = body["report"]
    assert report["exit_code"] == 1
    assert [d["kind"] for d in report["denials"]] == ["file"]
    assert report["denials"][0]["subject"] == "new.txt"
    assert report["denials"][0]["rule_to_add"].startswith("expose-rw=")


def test_output_that_is_not_utf8_is_replaced(server):
    status, body = server.run("import sys\nsys.stdout.buffer.write(b'a\\xffb')\n")
    assert status == 200
    assert body["stdout"] == "a\ufffdb"
    assert body["report"]["output"]["stdout_bytes"] == 3


def test_limits_lower_the_servers(server):
    status, body = server.run("import time\ntime.sleep(5)\n", limits={"timeout_ms": 300})
    assert status == 200
    report = body["report"]
    assert report["timed_out"] is True and report["limit_exceeded"] == "timeout"
    assert report["signal_name"] == "SIGKILL" and report["exit_code"] is None
    assert report["time"]["wall_ms"] < 3000


# -- every status code and every bad input ----------------------------------

BAD_INPUTS = [
    ("not json", b"{nope", None, "not JSON"),
    ("array", b"[]", None, "JSON object"),
    ("number", b"3", None, "JSON object"),
    ("empty body", b"", None, "not JSON"),
    ("missing source", {"stdin": ""}, "source", "required"),
    ("source a number", {"source": 1}, "source", "string"),
    ("stdin a list", {"source": "", "stdin": []}, "stdin", "string"),
    ("args a string", {"source": "", "args": "x"}, "args", "array"),
    ("args with a number", {"source": "", "args": ["x", 1]}, "args[1]", "string"),
    ("files a list", {"source": "", "files": ["a"]}, "files", "object"),
    ("file outside", {"source": "", "files": {"../x": ""}}, "files", "'..'"),
    ("file absolute", {"source": "", "files": {"/tmp/x": ""}}, "files", "absolute"),
    ("file main.py", {"source": "", "files": {"main.py": ""}}, "files", "program's own"),
    ("file content", {"source": "", "files": {"a": 1}}, "files", "must be a string"),
    ("limits a list", {"source": "", "limits": []}, "limits", "object"),
    ("unknown limit", {"source": "", "limits": {"disk": 1}}, "limits.disk", "unknown"),
    ("limit zero", {"source": "", "limits": {"cpu_ms": 0}}, "limits.cpu_ms", "at least 1"),
    ("limit raised", {"source": "", "limits": {"timeout_ms": 10_001}}, "limits.timeout_ms",
     "may only lower"),
    ("output raised", {"source": "", "limits": {"output_bytes": 100_001}},
     "limits.output_bytes", "may only lower"),
    ("unknown field", {"source": "", "priority": 1}, "priority", "unknown field"),
    ("duplicate field", b'{"source": "", "source": ""}', None, "duplicate"),
    ("NUL character", b'{"source": "\\u0000"}', None, "not JSON"),
]


@pytest.mark.parametrize("name,payload,field,words", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_is_400_naming_the_field_and_runs_nothing(server, name, payload, field, words):
    before = runs_total(server)
    status, headers, body = server.post_json(payload)
    assert status == 400, body
    assert headers["Content-Type"] == "application/json"
    assert body["field"] == field
    assert words in body["error"]
    assert runs_total(server) == before, "a run was started for a bad request"
    assert server.leftovers() == []


def test_body_over_the_cap_is_400_before_it_is_read(server):
    before = runs_total(server)
    status, _, body = server.post_json({"source": "x" * 200_000})
    assert status == 400 and body["field"] is None
    assert "larger than the limit of 100000 bytes" in body["error"]
    assert runs_total(server) == before


def test_chunked_body_over_the_cap_is_400(server):
    before = runs_total(server)
    conn = server.connection()
    conn.putrequest("POST", "/v1/runs")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    chunk = b"x" * 50_000
    for _ in range(3):
        conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    conn.send(b"0\r\n\r\n")
    resp = conn.getresponse()
    assert resp.status == 400
    assert "larger than the limit" in json.loads(resp.read())["error"]
    conn.close()
    assert runs_total(server) == before


def test_unknown_path_is_404(server):
    status, _, body = server.request("GET", "/v2/runs")
    assert status == 404 and json.loads(body)["error"] == "no such resource"


@pytest.mark.parametrize("method,path,allow", [("GET", "/v1/runs", "POST"),
                                               ("PUT", "/v1/runs", "POST"),
                                               ("POST", "/metrics", "GET, HEAD"),
                                               ("DELETE", "/v1/health", "GET, HEAD")])
def test_wrong_method_is_405_with_allow(server, method, path, allow):
    status, headers, _ = server.request(method, path)
    assert status == 405 and headers["Allow"] == allow


def test_metrics_is_prometheus_text(server):
    status, headers, body = server.request("GET", "/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = body.decode()
    for name in ("python_sb_http_requests_total", "python_sb_runs_total",
                 "python_sb_run_duration_seconds", "python_sb_queue_depth",
                 "python_sb_workers_busy"):
        assert f"# TYPE {name} " in text
    values = server.metrics()
    assert values['python_sb_run_duration_seconds_bucket{le="+Inf"}'] == \
        values["python_sb_run_duration_seconds_count"]
    assert values['python_sb_http_requests_total{code="400"}'] >= len(BAD_INPUTS)


def test_runner_failure_is_500(sb_bin):
    with Server(sb_bin, "--python-sb", "/bin/false", "--workers", "1", "--fresh-exec") as srv:
        status, body = srv.run("print(1)")
        assert status == 500
        assert "without a report" in body["error"] and body["field"] is None
        assert srv.metrics()['python_sb_runs_total{outcome="failed"}'] == 1
        assert srv.stop() == 0


def test_fork_server_that_cannot_start_stops_the_service(sb_bin):
    with pytest.raises(RuntimeError, match=r"cannot prepare the runner: the fork server "
                       r"\(/bin/false\) ended \(exit status 1\) before it was ready"):
        Server(sb_bin, "--python-sb", "/bin/false", "--workers", "1", workdir=False).close()


def test_full_queue_is_429_with_retry_after(sb_bin):
    with Server(sb_bin, "--workers", "1", "--queue", "0") as srv:
        result = {}
        slow = threading.Thread(target=lambda: result.update(
            slow=srv.run("import time\ntime.sleep(8)\n")))
        slow.start()
        deadline = time.monotonic() + 20
        while srv.metrics()["python_sb_workers_busy"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        status, headers, body = srv.post_json({"source": "print(1)"})
        assert status == 429 and headers["Retry-After"] == "1"
        assert "queue is full" in body["error"]
        slow.join(timeout=30)
        assert result["slow"][0] == 200
        # Room again once the worker is free.
        assert srv.run("print(1)")[0] == 200
        assert srv.stop() == 0


def test_sigterm_drains_runs_in_flight_and_refuses_new_ones(sb_bin):
    with Server(sb_bin, "--workers", "1", "--queue", "4") as srv:
        keep = srv.connection()
        keep.request("GET", "/v1/health")
        assert keep.getresponse().read()
        result = {}
        slow = threading.Thread(target=lambda: result.update(
            slow=srv.run("import time\ntime.sleep(1.5)\nprint('finished')\n")))
        slow.start()
        deadline = time.monotonic() + 20
        while srv.metrics()["python_sb_workers_busy"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        # A connection opened before SIGTERM may still ask: 503.
        keep.request("POST", "/v1/runs", body=json.dumps({"source": "print(2)"}))
        resp = keep.getresponse()
        assert resp.status == 503 and resp.getheader("Retry-After") == "5"
        resp.read()
        keep.request("GET", "/v1/health")
        resp = keep.getresponse()
        assert resp.status == 503 and json.loads(resp.read())["status"] == "draining"
        keep.close()
        # A new connection too, while the run goes on.
        status, headers, body = srv.post_json({"source": "print(3)"})
        assert status == 503 and "shutting down" in body["error"]
        slow.join(timeout=30)
        status, body = result["slow"]
        assert status == 200 and body["stdout"] == "finished\n"
        assert srv.proc.wait(timeout=30) == 0


# -- hostile programs ---------------------------------------------------------

HOSTILE = {
    "fork bomb": ("import os\nwhile True:\n    os.fork()\n", {}),
    "memory bomb": ("x = []\nwhile True:\n    x.append(bytearray(10**7))\n", {}),
    "output flood": ("while True:\n    print('flood' * 1000)\n", {}),
    "infinite loop": ("while True:\n    pass\n", {"limits": {"timeout_ms": 1500}}),
    "cpu burn": ("while True:\n    pass\n", {"limits": {"cpu_ms": 1000}}),
    "write a file": ("open('/tmp/pwned', 'w').write('x')\n", {}),
    "connect": ("import _socket\ns = _socket.socket()\ns.connect(('127.0.0.1', 1))\n", {}),
    "signal": ("import os\nos.kill(1, 9)\n", {}),
    "signal the server": ("import os\nos.kill(os.getppid(), 9)\n", {}),
    "read a secret": ("print(open('/etc/shadow').read())\n", {}),
}


def check_hostile(name, status, body):
    assert status == 200, (name, body)
    r = body["report"]
    kinds = [d["kind"] for d in r["denials"]]
    if name == "fork bomb":
        assert r["exit_code"] == 1 and kinds == ["api"]
        assert r["denials"][0]["rule_to_add"] == "python-api=ALLOW:os.fork"
    elif name == "memory bomb":
        assert r["limit_exceeded"] == "memory" and r["exit_code"] == 1
        assert "MemoryError" in body["stderr"]
    elif name == "output flood":
        assert r["limit_exceeded"] == "output" and r["output"]["truncated"] is True
        assert r["output"]["stdout_bytes"] > 100_000
        assert len(body["stdout"]) == 100_000
    elif name == "infinite loop":
        assert r["timed_out"] is True and r["limit_exceeded"] == "timeout"
        assert r["profile"]["lines"]["2"] > 1000  # the loop was profiled up to its death
    elif name == "cpu burn":
        assert r["limit_exceeded"] == "cpu" and r["signal_name"] == "SIGKILL"
        assert r["timed_out"] is False
    elif name == "write a file":
        assert kinds == ["file"] and r["denials"][0]["subject"] == "/tmp/pwned"
        assert not os.path.exists("/tmp/pwned")
    elif name == "connect":
        assert kinds == ["import"] and r["denials"][0]["rule_to_add"] == "python-import=_socket"
    elif name in ("signal", "signal the server"):
        assert kinds == ["api"] and r["denials"][0]["subject"] == "os.kill"
    elif name == "read a secret":
        assert kinds == ["file"] and r["exit_code"] == 1 and body["stdout"] == ""


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_program_gets_a_correct_report(server, name):
    source, extra = HOSTILE[name]
    if name == "memory bomb" and IS_ASAN:
        pytest.skip("an ASan build cannot bound its address space")
    status, body = server.run(source, **extra)
    check_hostile(name, status, body)
    assert server.descendants() == [], "a process of the run outlived its response"
    assert server.leftovers() == [], "the run left files behind"
    assert server.proc.poll() is None


@not_under_asan
def test_hostile_programs_do_not_stop_other_runs(server):
    """All the hostile programs at once, with ordinary runs among them: each
    gets its report, and the ordinary ones their output."""
    results, threads = {}, []

    def go(key, source, extra):
        results[key] = server.run(source, **extra)

    for name, (source, extra) in HOSTILE.items():
        threads.append(threading.Thread(target=go, args=(name, source, extra)))
    for i in range(6):
        threads.append(threading.Thread(target=go, args=(f"ok{i}", f"print({i} * 7)\n", {})))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for name in HOSTILE:
        check_hostile(name, *results[name])
    for i in range(6):
        status, body = results[f"ok{i}"]
        assert status == 200 and body["stdout"] == f"{i * 7}\n"
    assert server.descendants() == []
    assert server.leftovers() == []


# -- connections --------------------------------------------------------------

def test_idle_and_slow_connections_do_not_block_runs(sb_bin):
    with Server(sb_bin, "--workers", "1", "--idle-timeout", "60") as srv:
        idle = []
        for _ in range(1000):
            idle.append(socket.create_connection(("127.0.0.1", srv.port), timeout=10))
        # Half-open requests: headers started, never finished; a body that
        # trickles in.
        slow = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        slow.sendall(b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"sou")
        half = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        half.sendall(b"GET /v1/heal")
        start = time.monotonic()
        for i in range(3):
            status, body = srv.run(f"print({i})")
            assert status == 200 and body["stdout"] == f"{i}\n", body
        assert time.monotonic() - start < 30
        for s in idle + [slow, half]:
            s.close()
        assert srv.stop() == 0


def test_idle_connections_are_closed_after_the_timeout(sb_bin):
    with Server(sb_bin, "--workers", "1", "--idle-timeout", "1") as srv:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.sendall(b"GET /v1/heal")
        s.settimeout(10)
        assert s.recv(1) == b""  # closed by the server
        s.close()
        assert srv.stop() == 0


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="starts the server as nobody from root")
def test_unprivileged_server(sb_bin):
    prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
    with Server(sb_bin, "--workers", "1", prefix=prefix) as srv:
        status, body = srv.run("import os\nprint(os.getuid())\nopen('/etc/shadow')\n")
        assert status == 200 and body["stdout"] == "65534\n"
        assert [d["kind"] for d in body["report"]["denials"]] == ["file"]
        assert srv.leftovers() == []
        assert srv.stop() == 0


def test_user_option_needs_root(sb_bin):
    if os.geteuid() == 0:
        prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
        if not shutil.which("setpriv"):
            pytest.skip("setpriv is missing")
    else:
        prefix = []
    with pytest.raises(RuntimeError, match="--user needs the service to start as root"):
        Server(sb_bin, "--user", "nobody", prefix=prefix, workdir=False)


def test_profile_without_timeout_is_refused(sb_bin, tmp_path):
    profile = tmp_path / "p.py-sandboxes"
    profile.write_text("os-sandbox=landlock\n")
    with pytest.raises(RuntimeError, match="must set timeout="):
        Server(sb_bin, "--profile", profile, workdir=False)


@pytest.fixture
def shared_dir():
    """A directory the runs' user may read (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="python-sb-serve-data-", dir="/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_custom_profile_applies(sb_bin, shared_dir):
    data = shared_dir / "data"
    data.mkdir()
    (data / "scores.txt").write_text("42\n")
    profile = shared_dir / "p.py-sandboxes"
    profile.write_text(f"os-sandbox=landlock\npython-import=sys\nexpose-ro={data}\n"
                       "timeout=5s\n")
    with Server(sb_bin, "--profile", profile, "--workers", "1") as srv:
        status, body = srv.run(f"print(open('{data}/scores.txt').read().strip())\nimport json\n")
        assert body["stdout"] == "42\n"
        assert [d["subject"] for d in body["report"]["denials"]] == ["json"]
        # timeout=5s is the server's limit now.
        status, _, err = srv.post_json({"source": "", "limits": {"timeout_ms": 6000}})
        assert status == 400 and "limit of 5000" in err["error"]
        assert srv.stop() == 0


def test_serve_help_and_usage_errors(sb_bin):
    import subprocess
    env = {"PATH": "/usr/bin:/bin"}
    r = subprocess.run([sb_bin, "serve", "--help"], capture_output=True, text=True, timeout=30,
                       env=env)
    assert r.returncode == 0 and r.stdout.startswith("usage: python-sb serve")
    for args, words in ((["--workers", "0"], "--workers 0: expected a number from 1"),
                        (["--listen", "nowhere"], "expected HOST:PORT"),
                        (["--max-body", "lots"], "--max-body lots"),
                        (["--frobnicate"], "unknown or incomplete option '--frobnicate'"),
                        (["extra"], "unexpected argument 'extra'")):
        r = subprocess.run([sb_bin, "serve", *args], capture_output=True, text=True,
                           timeout=30, env=env)
        assert r.returncode == 2 and words in r.stderr, (args, r.stderr)
