# SPDX-License-Identifier: MIT
"""A `python-sb serve` started for a test, and what the tests ask of it.

    with Server(sb_bin, "--workers", "2") as srv:
        status, body = srv.run("print(1)")
        srv.metrics()["python_sb_runs_total{outcome=\"ok\"}"]
        srv.descendants()        # processes the server started that still exist

The server listens on 127.0.0.1, port 0; its port is read from the line it
prints. Its work directory is a fresh one under /tmp that the runs' user may
enter, and is checked by the tests (no run may leave anything in it).
"""

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

SANITIZER_ENV = {k: os.environ[k] for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")
                 if k in os.environ}
START_TIMEOUT = 30


def proc_children():
    """{ppid: [pid, ...]} for every process, from /proc."""
    tree = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


class Server:
    def __init__(self, sb_bin, *args, prefix=(), env=None, workdir=True, cwd=None):
        self.base = Path(tempfile.mkdtemp(prefix="python-sb-serve-test-", dir="/tmp"))
        os.chmod(self.base, 0o755)
        self.workdir = self.base / "work" if workdir else None
        cmd = list(prefix) + [sb_bin, "serve", "--listen", "127.0.0.1:0"]
        if self.workdir:
            cmd += ["--workdir", str(self.workdir)]
            if prefix:  # an unprivileged server must own its work directory
                self.workdir.mkdir(mode=0o711)
                shutil.chown(self.workdir, "nobody")
        cmd += [str(a) for a in args]
        run_env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        run_env.update(SANITIZER_ENV)
        run_env.update(env or {})
        self.log = []
        self.proc = None
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         text=True, env=run_env, cwd=cwd)
            self._wait_for_port()
        except BaseException:
            self.close()
            raise
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()

    def _wait_for_port(self):
        self.port = None
        deadline = time.monotonic() + START_TIMEOUT
        while self.port is None:
            line = self.proc.stderr.readline()
            if not line:
                self.proc.wait(timeout=10)
                raise RuntimeError("python-sb serve did not start:\n" + "".join(self.log))
            self.log.append(line)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
            if m:
                self.port = int(m.group(1))
            if time.monotonic() > deadline:
                raise RuntimeError("python-sb serve did not say where it listens")

    def _read_log(self):
        for line in self.proc.stderr:
            self.log.append(line)

    @property
    def pid(self):
        return self.proc.pid

    def connection(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        conn = self.connection(timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def post_json(self, payload, timeout=60):
        body = payload if isinstance(payload, (bytes, str)) else json.dumps(payload)
        status, headers, data = self.request("POST", "/v1/runs", body=body,
                                             headers={"Content-Type": "application/json"},
                                             timeout=timeout)
        return status, headers, json.loads(data) if data else None

    def run(self, source, **fields):
        status, _, body = self.post_json(dict(source=source, **fields))
        return status, body

    def metrics(self):
        status, _, data = self.request("GET", "/metrics")
        assert status == 200
        values = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def zygotes(self):
        """The server's fork servers (the default runner's zygote): children
        started with --pysandboxes-zygote."""
        out = []
        for child in proc_children().get(self.pid, []):
            try:
                with open(f"/proc/{child}/cmdline", "rb") as f:
                    if b"--pysandboxes-zygote" in f.read():
                        out.append(child)
            except OSError:
                pass
        return out

    def zygote(self):
        zygotes = self.zygotes()
        assert len(zygotes) == 1, zygotes
        return zygotes[0]

    def descendants(self):
        """Processes of runs: every descendant of the server but its fork
        server itself (whose children are runs)."""
        tree, out, todo = proc_children(), [], [self.pid]
        zygotes = set(self.zygotes())
        while todo:
            for child in tree.get(todo.pop(), []):
                if child not in zygotes:
                    out.append(child)
                todo.append(child)
        return out

    def open_fds(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def rss_kb(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def leftovers(self):
        """What runs left in the work directory (the service's own files, the
        default profile and the lock it holds, aside)."""
        if not self.workdir or not self.workdir.exists():
            return []
        return sorted(p.name for p in self.workdir.iterdir()
                      if p.name not in ("default.py-sandboxes", "lock"))

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._reader.join(timeout=5)

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
