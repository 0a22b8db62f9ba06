# SPDX-License-Identifier: MIT
"""The playground (GET /) in a real browser: Debian's chromium driven by
playwright-core (web/tests/playground-browser.mjs) types a program, runs it,
checks the output and the chart, then runs a hostile program and checks that
its denial is shown with its rule. scripts/test.sh sets PLAYGROUND_REQUIRED=1:
there a missing browser, node or npm package fails instead of skipping."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import needs_landlock
from servehelp import Server

WEB = Path(__file__).resolve().parents[2] / "web"
SCRIPT = WEB / "tests" / "playground-browser.mjs"
CHROMIUM = "/usr/bin/chromium"


def missing():
    if not shutil.which("node"):
        return "node is not installed"
    if not (WEB / "node_modules" / "playwright-core").is_dir():
        return "web/node_modules has no playwright-core (bash scripts/npm-deps.sh)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is not installed"
    return None


@needs_landlock
def test_playground_in_a_browser(sb_bin, tmp_path):
    why = missing()
    if why:
        if os.environ.get("PLAYGROUND_REQUIRED") == "1":
            pytest.fail(why)
        pytest.skip(why)
    with Server(sb_bin, "--workers", "2") as srv:
        status, headers, page = srv.request("GET", "/")
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        assert "default-src 'self'" in headers["Content-Security-Policy"]
        if b"<title>python-sb playground</title>" not in page:
            pytest.fail("this python-sb-serve was built without the playground "
                        "(meson -Dplayground=enabled needs web/node_modules)")
        for asset, kind in (("/playground.js", "text/javascript"),
                            ("/playground.css", "text/css")):
            status, headers, _ = srv.request("GET", asset)
            assert status == 200 and headers["Content-Type"].startswith(kind)
        proc = subprocess.run(["node", str(SCRIPT), f"http://127.0.0.1:{srv.port}/",
                               str(tmp_path)], capture_output=True, text=True, timeout=240,
                              cwd=WEB, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
        assert proc.stdout.strip(), proc.stderr
        seen = json.loads(proc.stdout.strip().splitlines()[-1])
        failed = [c for c in seen["checks"] if not c["ok"]]
        assert not failed and "error" not in seen and proc.returncode == 0, \
            json.dumps(seen, indent=1) + proc.stderr
        assert len(seen["checks"]) >= 15
        assert (tmp_path / "playground-denial.png").stat().st_size > 10_000
        assert srv.descendants() == [] and srv.leftovers() == []
        assert srv.stop() == 0
