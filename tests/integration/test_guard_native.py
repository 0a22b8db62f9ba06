# SPDX-License-Identifier: MIT
"""Files, devices and sockets the standard library's C modules open natively,
below the `open` audit event (src/guard/guard-native-files.c): syslog's
/dev/log, OpenSSL's certificate, key and DH files (and SSL_CERT_FILE /
SSL_CERT_DIR), os.openpty/forkpty's /dev/ptmx, ossaudiodev's devices, curses'
TERMINFO, readline's INPUTRC, the time zone file TZ names, SQLite URIs whose
query hides their mode.

Every attack runs as the caller (root in CI) and as `nobody`, under the
default provider (`auto`) and under `os-sandbox=none` (the guard alone), and
checks from the outside that its effect did not happen (the secret or the
ignored certificate's subject is not in the output, the syslog listener got
nothing, no file was created) and that the guard refused it with the rule to
add. The positive tests check that a granted use still works.
"""

import os
import shutil
import socket
import subprocess
import textwrap
import uuid

import pytest

from conftest import SANITIZER_ENV

FILE = "RuleFileNotFoundError"
PERM = "RulePermissionError"
NET = "RuleSocketConnectionRefusedError"

PRELUDE = """\
import os, sys
SECRET = {secret!r}
OUT = {out!r}
RO = {ro!r}
RW = {rw!r}
IGNORED = {ignored!r}

def attempt(name, fn):
    try:
        value = fn()
    except BaseException as e:
        print('OUTCOME', name, type(e).__name__ + ':', str(e)[:300].replace('\\n', ' '),
              flush=True)
    else:
        print('OUTCOME', name, 'completed', repr(value)[:400], flush=True)

"""

RUNS = [("caller", "auto"), ("nobody", "auto"), ("caller", "none"), ("nobody", "none")]


def _make_cert(path, cn):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", f"/CN={cn}", "-keyout", str(path) + ".key", "-out", str(path)],
                   check=True, capture_output=True, timeout=60)


class Arena:
    def __init__(self, sb):
        self.sb = sb
        self.tok = uuid.uuid4().hex[:12]
        self.secret_text = f"S3CR3T-{self.tok}"
        # Beside the sandbox root, in a parent any user can search: only the
        # sandbox can refuse it, not the file modes.
        self.out = sb.root.parent / f"outside-{self.tok}"
        self.out.mkdir()
        os.chmod(self.out, 0o755)
        self.secret = self.out / "secret.pem"
        self.secret.write_text(self.secret_text + "\n")
        os.chmod(self.secret, 0o644)
        self.ro = sb.mkdir("ro")
        self.rw = sb.mkdir("rw")
        self.ignored = self.ro / "ignored.pem"
        self.ignored_cn = f"IGNORED-CN-{self.tok}"
        self.ok_cn = f"GRANTED-CN-{self.tok}"
        if shutil.which("openssl"):
            _make_cert(self.ignored, self.ignored_cn)
            self.sb.mkdir("ro/certs")
            _make_cert(self.ro / "certs" / "ok.pem", self.ok_cn)
        else:
            self.ignored.write_text(self.ignored_cn + "\n")
        for dirpath, dirnames, filenames in os.walk(self.ro):
            for n in dirnames + filenames:
                os.chmod(os.path.join(dirpath, n), 0o755 if n in dirnames else 0o644)
        self.devlog = None

    def listen_dev_log(self):
        """A listener on /dev/log where none is (as root): what syslog() would
        reach. None when it cannot be made."""
        if os.geteuid() != 0 or os.path.exists("/dev/log"):
            return None
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            s.bind("/dev/log")
        except OSError:
            s.close()
            return None
        os.chmod("/dev/log", 0o666)
        s.setblocking(False)
        self.devlog = s
        return s

    def close(self):
        if self.devlog is not None:
            self.devlog.close()
            os.unlink("/dev/log")
        shutil.rmtree(self.out, ignore_errors=True)

    def run(self, body, provider, imports="*", extra=(), env=None):
        lines = [f"os-sandbox={provider}", "py-sandbox=true", f"python-import={imports}",
                 f"expose-ro={self.ro}", f"expose-rw={self.rw}", f"ignore={self.ignored}"]
        lines += list(extra)
        self.sb.profile("\n".join(lines) + "\n")
        program = PRELUDE.format(secret=str(self.secret), out=str(self.out), ro=str(self.ro),
                                 rw=str(self.rw), ignored=str(self.ignored))
        script = self.sb.script(program + textwrap.dedent(body))
        return self.sb.run(script, env=env, timeout=30)

    def leaks(self, r):
        out = r.stdout + r.stderr
        found = [t for t in (self.secret_text, self.ignored_cn) if t in out]
        return found


def outcomes(r):
    d = {}
    for line in r.stdout.splitlines():
        if line.startswith("OUTCOME "):
            _, name, rest = line.split(" ", 2)
            d[name] = rest
    return d


@pytest.fixture(params=RUNS, ids=[f"{u}-{p}" for u, p in RUNS])
def where(request):
    user, provider = request.param
    sb = request.getfixturevalue("sb" if user == "caller" else "sb_nobody")
    arena = Arena(sb)
    yield arena, provider
    arena.close()


def expect_refused(r, got, names, kinds=(FILE,)):
    for name in names:
        assert name in got, f"{name} did not run: {r.stdout}{r.stderr}"
        assert any(got[name].startswith(k + ":") for k in kinds), \
            f"{name}: expected {kinds}, got {got[name]}\n{r.stderr}"
        assert "Add '" in got[name] or "Rule '" in got[name] or "ignore=" in got[name] \
            or "rule" in got[name], f"{name}: the refusal names no rule: {got[name]}"


# --- syslog: the Unix socket /dev/log ----------------------------------------

def test_syslog_reaches_no_dev_log(where):
    arena, provider = where
    listener = arena.listen_dev_log()
    r = arena.run("""
        import syslog
        attempt('openlog-syslog', lambda: (syslog.openlog('x'),
                                           syslog.syslog(syslog.LOG_ERR, 'INJ' + 'ECTED')))
        attempt('syslog-implicit-open', lambda: syslog.syslog('INJ' + 'ECTED'))
        attempt('openlog-ndelay', lambda: syslog.openlog('x', syslog.LOG_NDELAY))
        attempt('openlog-cons', lambda: syslog.openlog('x', syslog.LOG_CONS))
    """, provider, imports="os, sys, syslog")
    got = outcomes(r)
    expect_refused(r, got, ["openlog-syslog", "syslog-implicit-open", "openlog-ndelay"],
                   kinds=(NET,))
    assert "/dev/log" in got["openlog-syslog"], got
    expect_refused(r, got, ["openlog-cons"], kinds=(NET, FILE, PERM))
    if listener is not None:
        with pytest.raises(BlockingIOError):
            listener.recv(4096)


# --- ssl: OpenSSL's own file loaders -----------------------------------------

SSL_ATTACKS = """
    import ssl, _ssl
    ctx = lambda: ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    attempt('cafile-secret', lambda: ctx().load_verify_locations(cafile=SECRET))
    attempt('cafile-ignored', lambda: ctx().load_verify_locations(IGNORED))
    attempt('cafile-ignored-pathlike',
            lambda: ctx().load_verify_locations(__import__('pathlib').Path(IGNORED)))
    attempt('capath-outside', lambda: ctx().load_verify_locations(capath=OUT))
    attempt('cert-chain-secret', lambda: ctx().load_cert_chain(SECRET))
    attempt('cert-chain-keyfile-secret',
            lambda: ctx().load_cert_chain(RO + '/certs/ok.pem', keyfile=SECRET))
    attempt('dh-params-secret', lambda: ctx().load_dh_params(SECRET))
    attempt('decode-cert-ignored', lambda: _ssl._test_decode_cert(IGNORED))
    attempt('decode-cert-secret', lambda: _ssl._test_decode_cert(SECRET))
    os.environ['SSL_CERT_FILE'] = IGNORED
    attempt('default-paths-cert-file', lambda: ctx().set_default_verify_paths())
    attempt('default-context-cert-file', lambda: ssl.create_default_context())
    del os.environ['SSL_CERT_FILE']
    os.environ['SSL_CERT_DIR'] = '/usr/lib/ssl/certs:' + OUT
    attempt('default-paths-cert-dir', lambda: ctx().set_default_verify_paths())
"""


def test_ssl_loaders_judge_their_files(where):
    arena, provider = where
    if not shutil.which("openssl"):
        pytest.skip("no openssl command to make the certificates")
    r = arena.run(SSL_ATTACKS, provider)
    got = outcomes(r)
    assert arena.leaks(r) == [], r.stdout + r.stderr
    expect_refused(r, got, ["cafile-secret", "cafile-ignored", "cafile-ignored-pathlike",
                            "capath-outside", "cert-chain-secret", "cert-chain-keyfile-secret",
                            "dh-params-secret", "decode-cert-ignored", "decode-cert-secret",
                            "default-paths-cert-file", "default-context-cert-file",
                            "default-paths-cert-dir"])
    assert "ignore=" in got["cafile-ignored"], got


def test_ssl_granted_files_still_load(where):
    arena, provider = where
    if not shutil.which("openssl"):
        pytest.skip("no openssl command to make the certificates")
    r = arena.run("""
        import ssl, _ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        attempt('cafile', lambda: ctx.load_verify_locations(cafile=RO + '/certs/ok.pem'))
        attempt('capath', lambda: ctx.load_verify_locations(capath=RO + '/certs'))
        attempt('chain', lambda: ctx.load_cert_chain(RO + '/certs/ok.pem',
                                                     RO + '/certs/ok.pem.key'))
        attempt('decode', lambda: _ssl._test_decode_cert(RO + '/certs/ok.pem')['subject'])
        attempt('default', lambda: ssl.create_default_context().cert_store_stats())
    """, provider)
    got = outcomes(r)
    for name in ("cafile", "capath", "chain", "decode", "default"):
        assert got.get(name, "").startswith("completed"), r.stdout + r.stderr
    assert arena.ok_cn in got["decode"], got


# --- pseudo-terminals ---------------------------------------------------------

def test_openpty_and_forkpty_need_dev_ptmx(where):
    arena, provider = where
    r = arena.run("""
        import pty
        attempt('os-openpty', lambda: os.openpty())
        attempt('posix-openpty', lambda: __import__('posix').openpty())
        attempt('pty-openpty', lambda: pty.openpty())
        def forkpty():
            pid, fd = os.forkpty()
            if pid == 0:
                print('CHILD-' + 'RAN', flush=True)
                os._exit(0)
            os.waitpid(pid, 0)
        attempt('os-forkpty', forkpty)
    """, provider, extra=["python-api=ALLOW:os.forkpty"])
    got = outcomes(r)
    expect_refused(r, got, ["os-openpty", "posix-openpty", "os-forkpty"], kinds=(FILE, PERM))
    # pty.openpty() falls back to the BSD pseudo-terminals (/dev/ptyXY) after
    # an OSError: each open of those is refused too.
    assert not got["pty-openpty"].startswith("completed"), got
    assert "/dev/ptmx" in got["os-openpty"] or "/dev/pts" in got["os-openpty"], got
    assert "CHILD-RAN" not in r.stdout, r.stdout


# --- ossaudiodev, curses, readline: devices and files named by variables ------

def test_device_and_variable_named_files(where):
    arena, provider = where
    arena.secret.write_text(f"set bell-style {arena.secret_text}\n{arena.secret_text}\n")
    r = arena.run("""
        import warnings
        warnings.simplefilter('ignore')
        import ossaudiodev, _curses
        attempt('oss-open-secret', lambda: ossaudiodev.open(SECRET, 'r'))
        os.environ['AUDIODEV'] = SECRET
        attempt('oss-open-audiodev', lambda: ossaudiodev.open('r'))
        attempt('oss-openmixer', lambda: ossaudiodev.openmixer(SECRET))
        os.environ['TERMINFO'] = OUT
        attempt('curses-terminfo', lambda: _curses.setupterm('xterm', 1))
        del os.environ['TERMINFO']
        os.environ['TERMINFO_DIRS'] = OUT
        attempt('curses-terminfo-dirs', lambda: _curses.setupterm('xterm', 1))
        os.environ['INPUTRC'] = SECRET
        attempt('readline-import', lambda: __import__('readline'))
        import time
        def tz(value):
            os.environ['TZ'] = value
            time.tzset()
        attempt('tz-absolute', lambda: tz(':' + SECRET))
        attempt('tz-climbing', lambda: tz('../../../../../../../..' + SECRET))
        attempt('tzdir', lambda: os.putenv('TZDIR', OUT))
        attempt('tz-zone', lambda: (tz('Europe/Paris'), tz('EST5EDT'), tz('UTC'), time.tzname))
    """, provider)
    got = outcomes(r)
    assert arena.leaks(r) == [], r.stdout + r.stderr
    expect_refused(r, got, ["oss-open-secret", "oss-open-audiodev", "oss-openmixer",
                            "curses-terminfo", "curses-terminfo-dirs", "readline-import",
                            "tz-absolute", "tz-climbing", "tzdir"],
                   kinds=(FILE, PERM))
    # A zone name, or a POSIX TZ string, is read under the system's zoneinfo.
    assert got["tz-zone"].startswith("completed"), got


# --- SQLite URIs whose query hides their mode --------------------------------

def test_sqlite_uri_mode_is_read_as_sqlite_reads_it(where):
    arena, provider = where
    r = arena.run("""
        import sqlite3
        def make(uri):
            sqlite3.connect(uri, uri=True).execute('create table t (x)')
        attempt('mode-memory-in-a-value', lambda: make(
            'file:' + OUT + '/new.db?mode=rwc&x=mode=memory'))
        attempt('mode-ro-then-encoded-rwc', lambda: make(
            'file:' + RO + '/new.db?mode=ro&mod%65=rwc'))
        attempt('memory', lambda: make(':memory:'))
    """, provider)
    got = outcomes(r)
    expect_refused(r, got, ["mode-memory-in-a-value", "mode-ro-then-encoded-rwc"],
                   kinds=(FILE, PERM))
    assert got["memory"].startswith("completed"), got
    assert not (arena.out / "new.db").exists()
    assert not (arena.ro / "new.db").exists()


def test_uuid1_still_works(where):
    arena, provider = where
    if os.path.exists("/run/uuidd/request") or os.path.exists("/var/lib/libuuid"):
        pytest.skip("libuuid's daemon or clock file is here: uuid1() needs their rules")
    r = arena.run("""
        import uuid
        attempt('uuid1', lambda: uuid.uuid1().version)
    """, provider)
    assert outcomes(r).get("uuid1") == "completed 1", r.stdout + r.stderr


# --- the host's name ----------------------------------------------------------

def test_sethostname_is_refused(where):
    """As root with the guard alone, sethostname() renamed the host. The test
    asks for the name the host already has, so that a regression changes
    nothing on the machine running it."""
    arena, provider = where
    current = socket.gethostname()
    r = arena.run(f"""
        import socket
        attempt('sethostname', lambda: socket.sethostname({current!r}))
    """, provider)
    got = outcomes(r)
    assert got.get("sethostname", "").startswith(PERM + ":"), r.stdout + r.stderr
    assert "whatever the rules" in got["sethostname"], got
    assert socket.gethostname() == current


def test_tiocsti_into_the_callers_terminal_refused(sb):
    """TIOCSTI pushes characters into a terminal's input: on the terminal
    python-sb was started from, the user's shell would run them after it
    exits. With the guard alone (no seccomp) the guard refuses it whatever
    the rules; the terminal (a pty here, raw so that one byte is readable)
    receives nothing."""
    import fcntl
    import tty
    sb.profile("os-sandbox=none\npython-import=fcntl, termios\n")
    script = sb.script(textwrap.dedent("""\
        import fcntl, termios
        for name in ("TIOCSTI", "TIOCLINUX"):
            try:
                fcntl.ioctl(0, getattr(termios, name), b"\\x0c" if name == "TIOCLINUX" else b"X")
            except OSError as e:
                print(name, type(e).__name__, e)
            else:
                print(name, "completed")
        """))
    master, slave = os.openpty()
    try:
        tty.setraw(slave)
        proc = subprocess.run([sb.binary, str(script)], cwd=sb.root, stdin=slave,
                              capture_output=True, text=True, timeout=60,
                              env={**sb.env(), **SANITIZER_ENV})
        flags = fcntl.fcntl(slave, fcntl.F_GETFL)
        fcntl.fcntl(slave, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        try:
            injected = os.read(slave, 64)
        except BlockingIOError:
            injected = b""
    finally:
        os.close(master)
        os.close(slave)
    assert proc.returncode == 0, proc
    assert "TIOCSTI RulePermissionError" in proc.stdout and "refused by the guard" in proc.stdout, proc
    assert "TIOCLINUX RulePermissionError" in proc.stdout, proc
    assert injected == b"", injected
