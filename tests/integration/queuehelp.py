# SPDX-License-Identifier: MIT
"""A redis-server and `python-sb serve --worker` processes started for a test
(docs/serve-queue.md); the front end is servehelp.Server with --queue.

    with Redis() as redis, Worker(sb_bin, redis.url("jobs")) as worker:
        redis.cli("XLEN", "{jobs}")

Redis listens on 127.0.0.1 on a port found free, without persistence unless
asked (persist=True: an append-only file fsynced at every write, so that a
SIGKILL loses nothing it acknowledged), in a directory of its own.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from servehelp import SANITIZER_ENV, START_TIMEOUT

REDIS_SERVER = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    def __init__(self, persist=False, start=True, password=None, users=()):
        self.dir = Path(tempfile.mkdtemp(prefix="python-sb-redis-"))
        self.port = free_port()
        self.persist = persist
        self.password = password
        self.users = users  # ACL lines: "NAME on >PASSWORD ~KEYS +COMMAND..."
        self.proc = None
        if start:
            self.start()

    def url(self, stream, password=None):
        auth = f":{password}@" if password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/{stream}"

    def start(self):
        cmd = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
               "--dir", str(self.dir), "--save", "", "--daemonize", "no",
               "--loglevel", "warning"]
        cmd += ["--appendonly", "yes", "--appendfsync", "always"] if self.persist \
            else ["--appendonly", "no"]
        if self.password:
            cmd += ["--requirepass", self.password]
        for user in self.users:
            cmd += ["--user"] + user.split()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start")
                time.sleep(0.05)
        # Loaded its data (the append-only file) before it answers PING.
        while self.cli("PING") != "PONG":
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not answer")
            time.sleep(0.05)

    def kill(self):
        """SIGKILL: what a crash loses, it loses."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def restart(self):
        self.kill()
        self.start()

    def cli(self, *args):
        cmd = [REDIS_CLI, "-p", str(self.port), "--raw"]
        if self.password:
            cmd += ["--no-auth-warning", "-a", self.password]
        out = subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True,
                             timeout=30)
        return out.stdout.strip()

    def stats(self, stream):
        fields = self.cli("HGETALL", "{%s}:stats" % stream).split("\n")
        return {k: int(v) for k, v in zip(fields[::2], fields[1::2]) if k}

    def close(self):
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Worker:
    """python-sb serve --worker, waited for until it says where it pulls from."""

    def __init__(self, sb_bin, url, *args, prefix=(), env=None):
        self.base = Path(tempfile.mkdtemp(prefix="python-sb-worker-test-", dir="/tmp"))
        os.chmod(self.base, 0o755)
        self.workdir = self.base / "work"
        if prefix:
            self.workdir.mkdir(mode=0o711)
            shutil.chown(self.workdir, "nobody")
        cmd = list(prefix) + [sb_bin, "serve", "--worker", "--queue", url,
                              "--workdir", str(self.workdir)] + [str(a) for a in args]
        run_env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        run_env.update(SANITIZER_ENV)
        run_env.update(env or {})
        self.log = []
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, env=run_env)
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                line = self.proc.stderr.readline()
                if not line:
                    self.proc.wait(timeout=10)
                    raise RuntimeError("the worker did not start:\n" + "".join(self.log))
                self.log.append(line)
                if re.search(r"worker on redis://", line):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("the worker did not say it started")
        except BaseException:
            self.close()
            raise
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()

    def _read_log(self):
        for line in self.proc.stderr:
            self.log.append(line)

    @property
    def pid(self):
        return self.proc.pid

    def consumers(self):
        """The consumer names of this worker's threads: host-pid-index."""
        return f"{socket.gethostname()}-{self.pid}-"

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if hasattr(self, "_reader"):
                self._reader.join(timeout=5)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
