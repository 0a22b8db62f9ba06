# SPDX-License-Identifier: MIT
"""Fixtures for the python-sb integration tests.

The binary under test comes from $PYTHON_SB (CI points it at an installed copy),
else from `python-sb` on $PATH.  Every run gets a controlled environment (never
the developer's), a timeout, and captured text output.

    sb.profile("python-import=json")        # writes <root>/.py-sandboxes
    sb.script("import json")                 # writes <root>/s.py
    r = sb.run(sb.path("s.py"))              # runs python-sb, cwd=<root>
    r.returncode, r.stdout, r.stderr

`sb_nobody` is the same helper whose runs happen as an unprivileged user.
"""

import os
import re
import shutil
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

SANITIZER_ENV = {k: os.environ[k] for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")
                 if k in os.environ}
TIMEOUT = 30
# How long a program killed by a timeout= or limit-* may take to end, start-up
# included: a bound on hanging, not a latency check (at a load of 40 a 1 s
# timeout ended 7 s after the start). Below TIMEOUT, so that the kill is
# python-sb's, not the harness's.
HANG_BOUND = 20

CONFIG_ERROR_HEADER = "python-sb: ConfigSyntaxError: Syntax error in config files."
EXIT_CONFIG = 255
EXIT_USAGE = 2
EXIT_TIMEOUT = 124


def pytest_configure(config):
    config.addinivalue_line("markers", "load: a long load test (scripts/test.sh runs it once, "
                            "on the installed build)")


def _landlock_abi():
    """The running kernel's Landlock ABI (0 when it has none)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(abi, 0)


LANDLOCK_ABI = _landlock_abi()


def _read_number(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _userns_refusal():
    """Why unprivileged user namespaces cannot be created here (os-sandbox=unshare
    as nobody), or None."""
    if not os.path.exists("/proc/self/ns/user"):
        return "the kernel has no user namespaces"
    if _read_number("/proc/sys/kernel/unprivileged_userns_clone") == 0:
        return "kernel.unprivileged_userns_clone=0"
    if _read_number("/proc/sys/user/max_user_namespaces") == 0:
        return "user.max_user_namespaces=0"
    if _read_number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1:
        return "AppArmor restricts unprivileged user namespaces"
    return None


USERNS_REFUSAL = _userns_refusal()
needs_userns = pytest.mark.skipif(USERNS_REFUSAL is not None,
                                  reason=f"os-sandbox=unshare: {USERNS_REFUSAL}")


def _is_asan_build():
    binary = os.environ.get("PYTHON_SB") or shutil.which("python-sb")
    try:
        with open(binary, "rb") as f:
            return b"__asan_init" in f.read()
    except (OSError, TypeError):
        return False


# An AddressSanitizer build reserves terabytes of address space and needs more
# descriptors at start: it cannot run under limit-memory or a tight fd limit.
IS_ASAN = _is_asan_build()
not_under_asan = pytest.mark.skipif(IS_ASAN, reason="an ASan build cannot bound its address "
                                    "space or start with a handful of descriptors")
needs_landlock = pytest.mark.skipif(LANDLOCK_ABI < 1, reason="the kernel has no Landlock")


def _locate_binary():
    candidate = os.environ.get("PYTHON_SB") or shutil.which("python-sb")
    if not candidate:
        return None, ("python-sb not found: set PYTHON_SB=/path/to/python-sb "
                      "(e.g. PYTHON_SB=build/python-sb) or put python-sb on PATH")
    path = os.path.abspath(candidate)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return None, f"PYTHON_SB={candidate!r} is not an executable file"
    return path, None


@pytest.fixture(scope="session")
def sb_bin():
    path, err = _locate_binary()
    if err:
        pytest.fail(err, pytrace=False)
    return path


@pytest.fixture(scope="session")
def py_version(sb_bin):
    """(major, minor) of the embedded interpreter, read from `python-sb -V`."""
    out = subprocess.run([sb_bin, "-V"], capture_output=True, text=True,
                         timeout=TIMEOUT, env={"PATH": "/usr/bin:/bin"}).stdout
    m = re.match(r"Python (\d+)\.(\d+)\.\d+", out)
    assert m, f"unexpected -V output: {out!r}"
    return int(m.group(1)), int(m.group(2))


def config_errors(stderr):
    """The `  file:line: message` lines following the ConfigSyntaxError header."""
    lines = stderr.splitlines()
    assert CONFIG_ERROR_HEADER in lines, f"no ConfigSyntaxError report in:\n{stderr}"
    start = lines.index(CONFIG_ERROR_HEADER) + 1
    return [line[2:] for line in lines[start:] if line.startswith("  ")]


def sort_key(err):
    m = re.match(r"(.*?):(\d+): ", err)
    assert m, f"not a file:line: message error: {err!r}"
    return (m.group(1), int(m.group(2)))


class Result:
    def __init__(self, proc):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.args = proc.args

    def __repr__(self):
        return (f"<python-sb rc={self.returncode}\n--- stdout\n{self.stdout}"
                f"--- stderr\n{self.stderr}--->")

    @property
    def errors(self):
        return config_errors(self.stderr)


class Sandbox:
    """Writes profiles and scripts under `root` and runs python-sb there."""

    def __init__(self, binary, root, prefix=(), owner=None):
        self.binary = binary
        self.root = Path(root)
        self.prefix = list(prefix)
        self.owner = owner  # (uid, gid) to chown written files to, or None

    def path(self, rel="."):
        return self.root / rel

    def _chown(self, p):
        if self.owner is None:
            return
        p = Path(p)
        while True:
            os.chown(p, *self.owner)
            if p == self.root or self.root not in p.parents:
                break
            p = p.parent

    def mkdir(self, rel):
        p = self.root / rel
        p.mkdir(parents=True, exist_ok=True)
        self._chown(p)
        return p

    def write(self, rel, text, dedent=True):
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text) if dedent else text)
        self._chown(p)
        return p

    def profile(self, text, rel=".py-sandboxes"):
        body = textwrap.dedent(text)
        if not body.endswith("\n"):
            body += "\n"
        return self.write(rel, body, dedent=False)

    def script(self, code, rel="s.py"):
        return self.write(rel, code)

    def env(self, extra=None, term=None):
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.root), "LC_ALL": "C.UTF-8"}
        if term is not None:
            env["TERM"] = term
        if extra:
            env.update(extra)
        return env

    def run(self, *args, env=None, term=None, cwd=None, input=None, timeout=TIMEOUT,
            raw_env=None):
        cmd = self.prefix + [self.binary] + [str(a) for a in args]
        run_env = dict(raw_env if raw_env is not None else self.env(env, term))
        # Sanitizer settings reach the launcher itself (an ASan build of it);
        # python-sb's own filtering keeps them from the program.
        run_env.update(SANITIZER_ENV)
        proc = subprocess.run(
            cmd, cwd=str(cwd or self.root), capture_output=True, text=True,
            input=input, timeout=timeout,
            env=run_env,
            stdin=None if input is not None else subprocess.DEVNULL)
        return Result(proc)

    def run_code(self, profile, code, *args, **kw):
        """Write `profile` as <root>/.py-sandboxes and code as <root>/s.py; run it."""
        self.profile(profile)
        s = self.script(code)
        return self.run(s, *args, **kw)



def process_alive(pid):
    """Running, not gone and not a zombie waiting for its new parent."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def still_alive_after(pids, timeout):
    """The processes of pids still running after waiting up to timeout
    seconds for them to end."""
    deadline = time.monotonic() + timeout
    while any(process_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if process_alive(p)]

@pytest.fixture
def sb(sb_bin, tmp_path):
    root = tmp_path / "work"
    root.mkdir()
    return Sandbox(sb_bin, root)


def _nobody_ids():
    import grp
    import pwd
    try:
        uid = pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return None
    for g in ("nogroup", "nobody"):
        try:
            return uid, grp.getgrnam(g).gr_gid, g
        except KeyError:
            continue
    return None


@pytest.fixture
def sb_nobody(sb_bin):
    """A Sandbox whose runs happen without privileges.

    As root: `setpriv --reuid=nobody --regid=nogroup --clear-groups --`, in a
    fresh directory under /tmp owned by nobody (pytest's tmp_path is 0700 root).
    As an ordinary user: that user is already unprivileged, so runs are direct.
    """
    if os.geteuid() != 0:
        root = Path(tempfile.mkdtemp(prefix="python-sb-unpriv-"))
        try:
            yield Sandbox(sb_bin, root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        return
    setpriv = shutil.which("setpriv")
    ids = _nobody_ids()
    if not setpriv or not ids:
        pytest.skip("running as root, but setpriv or the nobody user/group is missing, "
                    "so the unprivileged runs cannot be made")
    uid, gid, group = ids
    prefix = [setpriv, "--reuid=nobody", f"--regid={group}", "--clear-groups", "--"]
    probe = subprocess.run(prefix + ["test", "-x", sb_bin], timeout=TIMEOUT)
    if probe.returncode != 0:
        pytest.skip(f"user nobody cannot execute {sb_bin} (a parent directory is not "
                    "searchable by others)")
    # The sandbox root gets a private parent of its own: tests put an "outside"
    # directory beside the root and make its parent searchable, which must
    # never be /tmp itself (that dropped /tmp's sticky bit and world-write).
    base = Path(tempfile.mkdtemp(prefix="python-sb-nobody-", dir="/tmp"))
    os.chmod(base, 0o755)
    root = base / "sb"
    root.mkdir()
    os.chmod(root, 0o755)
    os.chown(root, uid, gid)
    try:
        yield Sandbox(sb_bin, root, prefix=prefix, owner=(uid, gid))
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def venv_dir(tmp_path_factory, py_version):
    """A virtualenv (no pip) holding the module `sbvenvmod` and the package
    `sbvenvpkg` (with its own .py-sandboxes) in its site-packages."""
    py = "/usr/bin/python3"
    if not os.access(py, os.X_OK):
        pytest.skip("/usr/bin/python3 is needed to create a venv")
    d = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([py, "-m", "venv", "--without-pip", str(d)], check=True,
                   timeout=120, capture_output=True)
    site = d / "lib" / f"python{py_version[0]}.{py_version[1]}" / "site-packages"
    assert site.is_dir(), f"venv without {site}"
    (site / "sbvenvmod.py").write_text("VALUE = 'from-venv'\n")
    pkg = site / "sbvenvpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text("print('VENVPKG-MAIN')\n")
    (pkg / ".py-sandboxes").write_text("os-sandbox=none\npython-import=sbvenvpkg\n")
    return d


# Native-code probes for the kernel tests: prepended to every program.
# `attempt` calls a libc function or raw syscall and prints `name: OK` or
# `name: EACCES` (the errno's symbolic name); `py` does the same for Python
# code that raises OSError.
NATIVE_PRELUDE = '''\
import ctypes, errno, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.syscall.argtypes = None
def attempt(name, fn, *args):
    ctypes.set_errno(0)
    r = fn(*args)
    e = ctypes.get_errno()
    print(f"{name}: {errno.errorcode.get(e, e) if r == -1 else 'OK'}", flush=True)
    return r
def py(name, fn):
    try:
        fn()
    except OSError as e:
        print(f"{name}: {errno.errorcode.get(e.errno, e.errno)}", flush=True)
    else:
        print(f"{name}: OK", flush=True)
'''


def outcomes(r):
    """{name: 'OK' | 'EACCES' | ...} from the `name: result` lines."""
    d = {}
    for line in r.stdout.splitlines():
        if ": " in line:
            k, v = line.split(": ", 1)
            d[k] = v
    return d


def run_native(sb, profile, body, *args, **kw):
    """Runs NATIVE_PRELUDE + body under profile; returns (result, outcomes)."""
    sb.profile(profile)
    s = sb.write("s.py", NATIVE_PRELUDE + textwrap.dedent(body), dedent=False)
    r = sb.run(s, *[str(a) for a in args], **kw)
    return r, outcomes(r)


def _pysandboxes_dir():
    """Where the parent python3 finds the pysandboxes package: the
    PYSANDBOXES_PYTHONPATH directory (scripts/test.sh sets it), else
    <build>/python beside $PYTHON_SB. (None, reason) when there is none."""
    explicit = os.environ.get("PYSANDBOXES_PYTHONPATH")
    if explicit:
        return explicit, None
    binary, err = _locate_binary()
    if err:
        return None, err
    if IS_ASAN:
        return None, ("an ASan-built pysandboxes._core cannot load into the ordinary "
                      "/usr/bin/python3: set PYSANDBOXES_PYTHONPATH to a gcc build's "
                      "python/ directory to test the ASan python-sb as the worker")
    candidate = os.path.join(os.path.dirname(binary), "python")
    if os.path.isdir(os.path.join(candidate, "pysandboxes")):
        return candidate, None
    return None, (f"no pysandboxes package beside {binary}: set PYSANDBOXES_PYTHONPATH")


@pytest.fixture(scope="session")
def pysandboxes_dir():
    """The directory holding the pysandboxes package under test (partial mode)."""
    path, err = _pysandboxes_dir()
    if err:
        pytest.skip(err)
    return path
