# SPDX-License-Identifier: MIT
"""python-sb serve against hostile HTTP clients and web pages: a page of
another site that makes its visitor's browser POST a program (a cross-site
"simple" request needs no preflight), DNS rebinding (a page whose name is made
to resolve to the service: its requests name it in Host), and bodies framed two
ways (request smuggling behind a proxy). Nothing may run for any of them."""

import http.server
import json
import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import needs_landlock, not_under_asan
from servehelp import Server

WEB = Path(__file__).resolve().parents[2] / "web"
CHROMIUM = "/usr/bin/chromium"
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
AS_USERS = pytest.mark.parametrize("prefix", [
    pytest.param((), id="own-user"),
    pytest.param(NOBODY, id="nobody", marks=pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("setpriv"), reason="starts the server as nobody")),
])


def runs(srv):
    return sum(v for k, v in srv.metrics().items() if k.startswith("python_sb_runs_total"))


def raw(port, data, timeout=5):
    """Sends data on one connection; everything the server answers until it
    closes the connection (or stays silent for timeout seconds), and whether
    it closed it."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    return out, True
                out += d
        except socket.timeout:
            return out, False


def post(srv, headers, source="print('ran')"):
    status, _, body = srv.request("POST", "/v1/runs", body=json.dumps({"source": source}),
                                  headers=headers)
    return status, json.loads(body)


@needs_landlock
@AS_USERS
def test_a_host_that_is_not_the_service_runs_nothing(sb_bin, prefix):
    """DNS rebinding: after evil.example resolves to 127.0.0.1 its page is of
    the service's origin and reads its answers; its requests say
    "Host: evil.example"."""
    with Server(sb_bin, "--workers", "1", prefix=prefix) as srv:
        for host in (f"evil.example:{srv.port}", "evil.example", "localhost.evil.example",
                     "127.0.0.1.nip.io", f"evil.example:{srv.port}x"):
            status, body = post(srv, {"Host": host, "Content-Type": "application/json"})
            assert status == 403, (host, body)
            assert "DNS rebinding" in body["error"] or "not a valid" in body["error"]
            status, _, page = srv.request("GET", "/", headers={"Host": host})
            assert status == 403, host
        assert runs(srv) == 0
        for host in (f"127.0.0.1:{srv.port}", "127.0.0.1", f"localhost:{srv.port}",
                     f"LOCALHOST.:{srv.port}", f"dev.localhost:{srv.port}", "[::1]:8000",
                     "10.1.2.3"):
            status, body = post(srv, {"Host": host, "Content-Type": "application/json"})
            assert status == 200 and body["stdout"] == "ran\n", (host, body)
    with Server(sb_bin, "--workers", "1", "--allow-host", "sandbox.example.org") as srv:
        status, body = post(srv, {"Host": "Sandbox.Example.org:443"})
        assert status == 200 and body["stdout"] == "ran\n"
        assert post(srv, {"Host": "evil.example"})[0] == 403
    with Server(sb_bin, "--workers", "1", "--allow-host", "*") as srv:
        assert post(srv, {"Host": "anything.example"})[0] == 200


@needs_landlock
@AS_USERS
def test_a_post_from_a_page_of_another_origin_runs_nothing(sb_bin, prefix):
    with Server(sb_bin, "--workers", "1", prefix=prefix) as srv:
        own = f"127.0.0.1:{srv.port}"
        for origin in ("http://evil.example", f"http://127.0.0.1:{srv.port + 1}",
                       f"http://localhost:{srv.port}", "null", f"https://{own}x"):
            status, body = post(srv, {"Host": own, "Origin": origin,
                                      "Content-Type": "text/plain"})
            assert status == 403 and "another origin" in body["error"], (origin, body)
        assert runs(srv) == 0
        # The playground's own page, and clients that are not browsers.
        assert post(srv, {"Host": own, "Origin": f"http://{own}"})[0] == 200
        assert post(srv, {"Host": own})[0] == 200
    # A proxy that rewrites Host (nginx's default): its public name is allowed.
    with Server(sb_bin, "--workers", "1", "--allow-host", "sandbox.example.org") as srv:
        own = f"127.0.0.1:{srv.port}"
        assert post(srv, {"Host": own, "Origin": "https://sandbox.example.org"})[0] == 200
        assert post(srv, {"Host": own, "Origin": "https://evil.example"})[0] == 403


def test_allow_host_takes_names_only(sb_bin):
    for bad in ("evil.example:80", "http://x", ""):
        proc = subprocess.run([sb_bin, "serve", "--allow-host", bad], capture_output=True,
                              text=True, timeout=30)
        assert proc.returncode == 2 and "--allow-host" in proc.stderr, proc.stderr


@needs_landlock
def test_a_body_framed_two_ways_is_refused_and_the_connection_closed(sb_bin):
    """Behind a proxy that frames by Content-Length, the "body" 0\\r\\n\\r\\nPOST ...
    would be a second request the proxy never saw (request smuggling)."""
    smuggled = b'{"source": "print(\'smuggled\')"}'
    second = (b"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
              + str(len(smuggled)).encode() + b"\r\n\r\n" + smuggled)
    with Server(sb_bin, "--workers", "1") as srv:
        out, closed = raw(srv.port, b"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Content-Length: 50\r\nTransfer-Encoding: chunked\r\n\r\n"
                          b"0\r\n\r\n" + second)
        assert out.startswith(b"HTTP/1.1 400 ") and b"Transfer-Encoding" in out, out
        assert closed and out.count(b"HTTP/1.1") == 1 and b"smuggled" not in out, out
        out, closed = raw(srv.port, b"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Content-Length: 0\r\nContent-Length: " + str(len(second)).encode()
                          + b"\r\n\r\n" + second)
        assert out.startswith(b"HTTP/1.1 400 ") and b"more than one Content-Length" in out
        assert closed and out.count(b"HTTP/1.1") == 1, out
        # Two Hosts: the service would check one, a proxy may route by the other.
        body = b'{"source": "print(1)"}'
        out, closed = raw(srv.port, b"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Host: evil.example\r\nContent-Length: "
                          + str(len(body)).encode() + b"\r\n\r\n" + body)
        assert out.startswith(b"HTTP/1.1 400 ") and b"more than one Host" in out, out
        assert closed
        assert runs(srv) == 0
        assert srv.metrics()['python_sb_http_requests_total{code="400"}'] == 3


def browser_missing():
    if not shutil.which("node"):
        return "node is not installed"
    if not (WEB / "node_modules" / "playwright-core").is_dir():
        return "web/node_modules has no playwright-core (bash scripts/npm-deps.sh)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is not installed"
    return None


@needs_landlock
def test_a_page_of_another_site_cannot_run_a_program_through_the_browser(sb_bin, tmp_path):
    """The real thing: chromium opens a page of another origin (another port of
    127.0.0.1) whose script POSTs a program as text/plain, mode no-cors: a
    request the browser sends without a preflight."""
    why = browser_missing()
    if why:
        if os.environ.get("PLAYGROUND_REQUIRED") == "1":
            pytest.fail(why)
        pytest.skip(why)
    with Server(sb_bin, "--workers", "1") as srv:
        (tmp_path / "site").mkdir()
        (tmp_path / "site" / "evil.html").write_text(
            "<html><body><script>\n"
            f"fetch('http://127.0.0.1:{srv.port}/v1/runs', {{method: 'POST', mode: 'no-cors',\n"
            "  headers: {'Content-Type': 'text/plain'},\n"
            "  body: JSON.stringify({source: 'print(6 * 7)'})})\n"
            "  .then(() => { document.title = 'sent'; },\n"
            "        (e) => { document.title = 'failed ' + e; });\n"
            "</script></body></html>\n")
        handler = lambda *a: http.server.SimpleHTTPRequestHandler(  # noqa: E731
            *a, directory=str(tmp_path / "site"))
        http.server.SimpleHTTPRequestHandler.log_message = lambda *a: None
        site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=site.serve_forever, daemon=True).start()
        try:
            proc = subprocess.run(
                ["node", str(WEB / "tests" / "cross-site-browser.mjs"),
                 f"http://127.0.0.1:{site.server_address[1]}/evil.html"],
                capture_output=True, text=True, timeout=120, cwd=WEB,
                env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
        finally:
            site.shutdown()
        assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr
        # The browser sent it (an opaque answer is all a no-cors fetch sees).
        assert json.loads(proc.stdout.strip().splitlines()[-1])["title"] == "sent"
        assert runs(srv) == 0
        assert srv.metrics().get('python_sb_http_requests_total{code="403"}') == 1


@needs_landlock
def test_idle_connections_cannot_take_the_descriptors_runs_need(sb_bin):
    """Under a descriptor limit of 128, a client that opens connections until
    accept() fails would leave a run of another client no descriptor for its
    pipes ("the run could not be started: Too many open files", 500): the
    service keeps the runs' descriptors out of --max-connections."""
    prefix = ["prlimit", "--nofile=128:128", "--"]
    with Server(sb_bin, "--workers", "1", prefix=prefix) as srv:
        conn = srv.connection(30)
        conn.connect()
        hogs = []
        try:
            for _ in range(200):
                try:
                    hogs.append(socket.create_connection(("127.0.0.1", srv.port), timeout=2))
                except OSError:
                    break
            for _ in range(2):
                conn.request("POST", "/v1/runs", body=json.dumps({"source": "print(7)"}),
                             headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                body = json.loads(resp.read())
                assert resp.status == 200 and body["stdout"] == "7\n", body
        finally:
            for s in hogs:
                s.close()
            conn.close()
        assert any("at most 32 connections, not 4096" in line for line in srv.log), srv.log


def test_no_room_for_connections_is_refused_at_start(sb_bin):
    proc = subprocess.run(["prlimit", "--nofile=64:64", "--", sb_bin, "serve", "--listen",
                           "127.0.0.1:0", "--workers", "2"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1
    assert "the descriptor limit (64) leaves no room for connections" in proc.stderr


@needs_landlock
@not_under_asan
@pytest.mark.parametrize("runner", [(), ("--fresh-exec",)], ids=["fork", "exec"])
def test_a_memory_limit_too_small_to_start_is_the_clients_error(sb_bin, runner):
    """limits.memory_bytes below what the interpreter needs: the run cannot
    start. That is the request's doing (400 naming the field), not a broken
    service (500, which alerts on server errors would page someone for)."""
    with Server(sb_bin, "--workers", "1", *runner) as srv:
        status, body = srv.run("print(1)", limits={"memory_bytes": 1000000})
        if runner:
            # python-sb itself refuses, and reports it: a run that failed.
            assert status == 200 and body["report"]["exit_code"] == 255, body
            assert "too small to start the interpreter" in body["stderr"], body
        else:
            assert status == 400, body
            assert body["field"] == "limits.memory_bytes", body
            assert "too small to start the interpreter" in body["error"], body
        status, body = srv.run("print(1)")
        assert status == 200 and body["stdout"] == "1\n"
        m = srv.metrics()
        assert m['python_sb_http_requests_total{code="500"}'] == 0
        assert m['python_sb_runs_total{outcome="failed"}'] == 0
