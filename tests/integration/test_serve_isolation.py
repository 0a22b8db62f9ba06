# SPDX-License-Identifier: MIT
"""python-sb serve (docs/serve.md, "How a run is isolated"): what a request
controls never chooses a run's rules, and what a run gets cannot be used
against the machine or other users.

- the rule file: a relative --profile, an include named relative to the
  current directory, a request file named like either, a profile gone or
  asking for learning: the run is confined by the service's rules or fails,
  never learns;
- stdin: a sealed, read-only memory file (no fallocate()/write() of memory
  outside the run's limits);
- the run's directory: readable by the run's user alone, named on no
  command line;
- a service killed with SIGKILL: its default work directory is removed by
  the next start of the same user, a live service's is kept;
- a --workdir that holds files the service did not make, or that another
  live service uses, is refused at start, not emptied.

Each test runs with the fork server and --fresh-exec, the service as root
and as nobody (when the suite runs as root)."""

import grp
import os
import pwd
import random
import shutil
import signal
import string
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import needs_landlock
from servehelp import Server

pytestmark = needs_landlock

RUNNERS = {"fork": (), "exec": ("--fresh-exec",)}
SETPRIV = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
LEARNING = "LEARNING MODE"


def service_prefix(who):
    if who == "root":
        if os.geteuid() != 0:
            pytest.skip("needs root")
        return ()
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("starts the service as nobody from root")
    return SETPRIV


def run_ids(who):
    """The uid and gid of the runs (the service's --user default, or the
    service's own user)."""
    return pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid


@pytest.fixture
def shared_dir():
    """A directory every user may read (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="python-sb-serve-iso-", dir="/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


STRICT = "os-sandbox=landlock\npython-import=sys, os, stat, time, errno\ntimeout=10s\n"
# What a forged rule file would grant: everything.
FORGED = "os-sandbox=none\npy-sandbox=false\ntimeout=10s\n"
PROBE = ("try:\n    import json\n    print('json imported')\n"
         "except Exception as e:\n    print('json refused')\n")


def assert_confined(status, body):
    assert status == 200, body
    assert body["stdout"] == "json refused\n", body
    assert [d["subject"] for d in body["report"]["denials"]] == ["json"], body["report"]
    assert LEARNING not in body["stderr"], body["stderr"]


# -- S1: the rule file -------------------------------------------------------

@pytest.mark.parametrize("who", ["root", "nobody"])
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_relative_profile_is_the_services_not_the_runs(sb_bin, shared_dir, runner, who):
    """--profile prof/k.py-sandboxes is the file of the service's current
    directory: not a file of the run's directory (a request file of that
    name), nor learning mode when the run's directory has none."""
    (shared_dir / "prof").mkdir(mode=0o755)
    (shared_dir / "prof" / "k.py-sandboxes").write_text(STRICT)
    with Server(sb_bin, "--profile", "prof/k.py-sandboxes", "--workers", "1",
                *RUNNERS[runner], prefix=service_prefix(who), cwd=shared_dir) as srv:
        # (a) no file of that name in the run's directory
        assert_confined(*srv.run(PROBE))
        # (b) the request brings one
        assert_confined(*srv.run(PROBE, files={"prof/k.py-sandboxes": FORGED}))
        assert srv.stop() == 0
    assert LEARNING not in "".join(srv.log)


@pytest.mark.parametrize("include", ["conf/site.py-sandboxes", "./site.py-sandboxes"])
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_include_relative_to_the_current_directory_is_refused(sb_bin, shared_dir, runner,
                                                             include):
    """(c) An include named from the current directory would be read from
    the run's directory (the request's files): the service does not start,
    and says how to name it. Nested below an include of an absolute name
    too."""
    (shared_dir / "inner.py-sandboxes").write_text(f'include "{include}"\n')
    profile = shared_dir / "p.py-sandboxes"
    profile.write_text(STRICT + f'include "{shared_dir}/inner.py-sandboxes"\n')
    with pytest.raises(RuntimeError, match=r"includes \"" + include.replace(".", r"\.") +
                       r"\", a name relative to the current directory.*absolute path"):
        Server(sb_bin, "--profile", profile, "--workers", "1", *RUNNERS[runner],
               workdir=False)


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_include_of_a_bare_name_is_next_to_the_profile(sb_bin, shared_dir, runner):
    """A bare name stays the way to include a file beside the profile: its
    rules apply, and a request file of that name changes nothing."""
    (shared_dir / "extra.py-sandboxes").write_text("python-import=json\n")
    profile = shared_dir / "p.py-sandboxes"
    profile.write_text(STRICT + 'include "extra.py-sandboxes"\n')
    with Server(sb_bin, "--profile", profile, "--workers", "1", *RUNNERS[runner]) as srv:
        status, body = srv.run(PROBE + "import socket\n",
                               files={"extra.py-sandboxes": FORGED + "python-import=*\n"})
        assert status == 200 and body["stdout"] == "json imported\n", body
        assert [d["subject"] for d in body["report"]["denials"]] == ["socket"]
        assert srv.stop() == 0


def test_profile_that_asks_for_learning_is_refused(sb_bin, shared_dir):
    profile = shared_dir / "p.py-sandboxes"
    profile.write_text(STRICT + "learn=learned.py-sandboxes\n")
    with pytest.raises(RuntimeError, match=r"asks for learning mode .*learn="):
        Server(sb_bin, "--profile", profile, "--fresh-exec", workdir=False)


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_fresh_exec_run_without_its_profile_fails_and_never_learns(sb_bin, shared_dir, who):
    profile = shared_dir / "p.py-sandboxes"
    profile.write_text(STRICT)
    with Server(sb_bin, "--profile", profile, "--workers", "1", "--fresh-exec",
                prefix=service_prefix(who)) as srv:
        assert_confined(*srv.run(PROBE))
        profile.unlink()
        learned = Path(f"/tmp/python-sb-serve-learned-{os.getpid()}")
        try:
            status, _, body = srv.post_json({"source": f"open('{learned}', 'w')\nprint('ran')\n"})
            assert status == 500, body
            assert f"the rule file {profile} is gone" in body["error"], body
            assert "no run starts without its rules" in body["error"]
            assert not learned.exists()
        finally:
            learned.unlink(missing_ok=True)
        assert srv.stop() == 0
    assert LEARNING not in "".join(srv.log)


def test_fork_server_without_its_profile_fails_and_never_learns(sb_bin, shared_dir):
    profile = shared_dir / "p.py-sandboxes"
    profile.write_text(STRICT)
    with Server(sb_bin, "--profile", profile, "--workers", "1") as srv:
        assert_confined(*srv.run(PROBE))
        profile.unlink()
        os.kill(srv.zygote(), signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status, _, body = srv.post_json({"source": "print('ran')\n"})
            assert status == 503, body
            if "before it was ready" in body["error"]:
                break
            time.sleep(0.2)
        assert "before it was ready" in body["error"], body
        assert "the fork server cannot learn: its rule file does not exist" in "".join(srv.log), srv.log
        assert srv.stop() == 0
    assert LEARNING not in "".join(srv.log)


# -- S2: stdin ---------------------------------------------------------------

def shmem_kb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1])
    return 0


STDIN_PROBE = """\
import errno, os, time
out = []
for name, call in (("fallocate", lambda: os.posix_fallocate(0, 0, 512 << 20)),
                   ("write", lambda: os.write(0, b"x" * 65536)),
                   ("pwrite", lambda: os.pwrite(0, b"x" * 65536, 1 << 20)),
                   ("truncate", lambda: os.ftruncate(0, 512 << 20))):
    try:
        call()
        out.append(name + " ok")
    except OSError as e:
        out.append(name + " " + errno.errorcode.get(e.errno, str(e.errno)))
out.append("size %d" % os.fstat(0).st_size)
out.append(os.read(0, 100).decode())
print(*out, sep="\\n", flush=True)
time.sleep(1)
"""


@pytest.mark.parametrize("who", ["root", "nobody"])
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_stdin_cannot_be_written_nor_grown(sb_bin, shared_dir, runner, who):
    """A profile without limit-file-size=: stdin still holds what the
    request sent, and no more memory."""
    profile = shared_dir / "p.py-sandboxes"
    profile.write_text(STRICT)
    with Server(sb_bin, "--profile", profile, "--workers", "1", *RUNNERS[runner],
                prefix=service_prefix(who)) as srv:
        peak, done = [shmem_kb()], threading.Event()
        base = peak[0]

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], shmem_kb())
                time.sleep(0.05)

        t = threading.Thread(target=sample)
        t.start()
        try:
            status, body = srv.run(STDIN_PROBE, stdin="hello")
        finally:
            done.set()
            t.join()
        assert status == 200, body
        lines = body["stdout"].splitlines()
        for name, line in zip(("fallocate", "write", "pwrite", "truncate"), lines):
            word = line.split()[1]
            assert word in ("EBADF", "EPERM", "EINVAL"), (name, body)
        assert lines[4:] == ["size 5", "hello"], body
        # 512 MB would show; other tests of the machine may move it a little.
        assert peak[0] - base < 128 << 10, (base, peak[0])
        assert srv.stop() == 0


# -- S3: the run's directory -------------------------------------------------

DIR_PROBE = """\
import os, stat, time
for p in (".", "main.py", "d", "d/f.txt"):
    st = os.stat(p)
    print(p, oct(stat.S_IMODE(st.st_mode)), st.st_uid, st.st_gid)
print("ready", flush=True)
time.sleep(3)
"""


def other_user(*cmd):
    return subprocess.run(["setpriv", "--reuid=12345", "--regid=12345", "--clear-groups",
                           "--", *cmd], capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("who", ["root", "nobody"])
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_run_directory_is_the_runs_alone(sb_bin, shared_dir, runner, who):
    profile = shared_dir / "p.py-sandboxes"
    profile.write_text(STRICT)
    uid, gid = run_ids(who)
    with Server(sb_bin, "--profile", profile, "--workers", "1", *RUNNERS[runner],
                prefix=service_prefix(who)) as srv:
        result = {}
        t = threading.Thread(target=lambda: result.update(
            zip(("status", "body"), srv.run(DIR_PROBE, files={"d/f.txt": "secret"}))))
        t.start()
        try:
            deadline = time.monotonic() + 30
            rundirs = []
            while not rundirs and time.monotonic() < deadline:
                rundirs = [p for p in srv.workdir.iterdir() if p.name.startswith("run-")]
                time.sleep(0.05)
            assert rundirs, "no run directory"
            time.sleep(0.5)  # the run has started
            rundir = rundirs[0]
            # No command line names it.
            for pid in [srv.pid] + srv.descendants() + srv.zygotes():
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmdline = f.read()
                except OSError:
                    continue
                assert rundir.name.encode() not in cmdline, cmdline
            # Another user of the machine: neither lists nor reads it.
            for cmd in (["ls", str(rundir)], ["cat", str(rundir / "main.py")],
                        ["cat", str(rundir / "d" / "f.txt")]):
                r = other_user(*cmd)
                assert r.returncode != 0 and "Permission denied" in r.stderr, (cmd, r)
        finally:
            t.join()
        assert result["status"] == 200, result
        lines = result["body"]["stdout"].splitlines()
        if who == "root":  # the service's files, the run's group
            want_dir, want_file, owner = "0o750", "0o640", (0, gid)
        else:  # the run is the service's own user
            want_dir, want_file, owner = "0o700", "0o600", (uid, gid)
        assert lines[:4] == [f". {want_dir} {owner[0]} {owner[1]}",
                             f"main.py {want_file} {owner[0]} {owner[1]}",
                             f"d {want_dir} {owner[0]} {owner[1]}",
                             f"d/f.txt {want_file} {owner[0]} {owner[1]}"], lines
        assert srv.stop() == 0


# -- S4: a service killed ----------------------------------------------------

def default_parent():
    st = os.stat("/dev/shm") if os.path.isdir("/dev/shm") else None
    return Path("/dev/shm") if st and (st.st_mode & 0o1777) == 0o1777 else Path("/tmp")


def workdir_of(srv):
    """The default work directory: the fork server's current directory."""
    return Path(os.readlink(f"/proc/{srv.zygote()}/cwd"))


def wait_gone(pid, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} still there")


def decoy_dir(parent):
    """A directory named as mkdtemp() names a work directory."""
    while True:
        path = parent / ("python-sb-serve." + "".join(
            random.choice(string.ascii_letters) for _ in range(6)))
        try:
            path.mkdir(mode=0o700)
            return path
        except FileExistsError:
            continue


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_work_directory_of_a_killed_service_is_removed_at_restart(sb_bin, who):
    prefix = service_prefix(who)
    uid = 0 if who == "root" else pwd.getpwnam("nobody").pw_uid
    gid = 0 if who == "root" else grp.getgrnam("nogroup").gr_gid
    parent = default_parent()
    decoys = []
    try:
        # What a restart must leave: a directory without a lock (an older
        # service's, or one being made), a link to a stale directory, another
        # user's stale directory.
        nolock = decoy_dir(parent)
        target = Path(tempfile.mkdtemp(prefix="python-sb-serve-target-", dir="/tmp"))
        (target / "lock").write_text("")
        link = parent / f"python-sb-serve.L{os.getpid() % 100000:05d}"
        link.symlink_to(target)
        foreign = decoy_dir(parent)
        (foreign / "lock").write_text("")
        decoys += [nolock, link, target, foreign]
        for p in (nolock, target, target / "lock", foreign / "lock"):
            os.lchown(p, uid, gid)
        os.chown(foreign, 12345, 12345)
        os.chown(foreign / "lock", 12345, 12345)

        first = Server(sb_bin, "--workers", "1", prefix=prefix, workdir=False)
        try:
            stale = workdir_of(first)
            zygote = first.zygote()
            status, body = first.run("print(1)")
            assert status == 200 and body["stdout"] == "1\n"
            first.proc.kill()
            first.proc.wait(timeout=30)
            wait_gone(zygote)
        finally:
            first.close()
        assert stale.is_dir() and stale.parent == parent

        with Server(sb_bin, "--workers", "1", prefix=prefix, workdir=False) as second:
            assert not stale.exists(), "the killed service's work directory is left"
            assert any("removed 1 work directory left by a service that was killed" in line
                       for line in second.log), second.log
            live = workdir_of(second)
            with Server(sb_bin, "--workers", "1", prefix=prefix, workdir=False) as third:
                assert live.is_dir(), "a live service's work directory was removed"
                status, body = second.run("print(2)")
                assert status == 200 and body["stdout"] == "2\n", body
                assert workdir_of(third) != live
                assert third.stop() == 0
            assert second.stop() == 0
        assert not live.exists()
        for p in (nolock, link, target / "lock", foreign / "lock"):
            assert os.path.lexists(p), p
    finally:
        for p in decoys:
            if p.is_symlink():
                p.unlink()
            else:
                shutil.rmtree(p, ignore_errors=True)


@pytest.mark.parametrize("rule", ["expose-ro=data", "expose-rw=./out"])
def test_expose_relative_to_the_current_directory_is_refused(sb_bin, shared_dir, rule):
    """The sibling of a relative include: in a run, the run's directory,
    whose directories the request makes."""
    (shared_dir / "data").mkdir()
    (shared_dir / "out").mkdir()
    profile = shared_dir / "p.py-sandboxes"
    profile.write_text(STRICT + rule + "\n")
    with pytest.raises(RuntimeError, match=rule.replace(".", r"\.") +
                       " is relative to the current directory.*absolute path"):
        Server(sb_bin, "--profile", profile, "--fresh-exec", workdir=False, cwd=shared_dir)


# -- S5: a --workdir that is not the service's own ---------------------------

@pytest.mark.parametrize("who", ["root", "nobody"])
def test_a_workdir_holding_other_files_is_refused_not_emptied(sb_bin, who):
    """The service empties its --workdir at start and at exit: a mistyped one
    (., ~, /tmp, a project directory) must not lose its files."""
    prefix = service_prefix(who)
    base = Path(tempfile.mkdtemp(prefix="python-sb-serve-wd-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        work = base / "project"
        (work / "src").mkdir(parents=True)
        (work / "thesis.tex").write_text("years of work\n")
        (work / "src" / "a.c").write_text("int main;\n")
        if who == "nobody":
            for p in (work, work / "src", work / "thesis.tex", work / "src" / "a.c"):
                shutil.chown(p, "nobody")
        proc = subprocess.run(list(prefix) + [sb_bin, "serve", "--listen", "127.0.0.1:0",
                                              "--workdir", str(work)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1, proc.stderr
        assert "holds 'thesis.tex', which python-sb serve did not make" in proc.stderr or \
            "holds 'src', which python-sb serve did not make" in proc.stderr, proc.stderr
        assert (work / "thesis.tex").read_text() == "years of work\n"
        assert (work / "src" / "a.c").exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_a_workdir_in_use_by_a_live_service_is_refused(sb_bin, who):
    """A second service on the same --workdir would empty it under the first
    one's runs; and a directory a stopped or killed service left (its runs'
    directories, its profile, its lock) is taken and emptied."""
    prefix = service_prefix(who)
    with Server(sb_bin, "--workers", "1", prefix=prefix) as first:
        proc = subprocess.run(list(prefix) + [sb_bin, "serve", "--listen", "127.0.0.1:0",
                                              "--workdir", str(first.workdir)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1
        assert "is the work directory of another python-sb serve that is running" \
            in proc.stderr, proc.stderr
        status, body = first.run("print('still here')")
        assert status == 200 and body["stdout"] == "still here\n", body
        left = first.workdir / "run-AbCdEf"
        left.mkdir()
        (left / "main.py").write_text("print(1)\n")
        if who == "nobody":
            shutil.chown(left, "nobody")
            shutil.chown(left / "main.py", "nobody")
        zygote = first.zygote()
        first.proc.kill()
        first.proc.wait(timeout=30)
        wait_gone(zygote)
        second = subprocess.Popen(list(prefix) + [sb_bin, "serve", "--listen", "127.0.0.1:0",
                                                  "--workdir", str(first.workdir)],
                                  stderr=subprocess.PIPE, text=True)
        try:
            line = ""
            while "listening on" not in line:
                line = second.stderr.readline()
                assert line, "the second service did not start"
            assert not left.exists()
        finally:
            second.terminate()
            second.wait(timeout=30)
