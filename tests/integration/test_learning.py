# SPDX-License-Identifier: MIT
"""Learning mode (spec §6, issue #5): a run records what the rules would
refuse, writes the missing rules once at exit, and the written profile then
runs the same program restricted."""

import difflib
import os
import shutil
import signal
import subprocess

import pytest

from conftest import EXIT_CONFIG, LANDLOCK_ABI, SANITIZER_ENV, TIMEOUT

WRITTEN = "Write all learning rules in '{}'. Check and update this file to validate the rules."

# A program that reads a data directory, writes an output directory, imports
# json and a local package, reads two environment variables (and sets a third
# itself), and calls os.system. With --extra it does one thing more.
MAIN = '''\
import json, os, sys
import mylib
with open("data/in.txt") as f:
    text = f.read()
os.makedirs("out", exist_ok=True)
with open("out/result.json", "w") as f:
    json.dump({"text": text, "lib": mylib.VALUE,
               "a": os.environ.get("LEARN_A"), "b": os.getenv("LEARN_B")}, f)
os.environ["SET_BY_PROGRAM"] = "x"
assert os.environ["SET_BY_PROGRAM"] == "x"
print("system", os.system("true"))
if "--extra" in sys.argv:
    import colorsys
    print("extra", colorsys.rgb_to_hsv(1, 0, 0))
print("DONE")
'''

ENV = {"LEARN_A": "alpha", "LEARN_B": "beta", "LEARN_UNREAD": "never"}


def make_app(sb):
    sb.write("data/in.txt", "hello\n")
    sb.write("app/mylib/__init__.py", "VALUE = 7\n")
    return sb.script(MAIN, rel="app/main.py")


def rules(path):
    """The rule lines of a profile (no comments, no blank lines)."""
    return [line for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def block(path, marker):
    """The lines inside `# <marker>` … `# </marker>`."""
    lines = path.read_text().splitlines()
    start = lines.index(f"# <{marker}>")
    end = lines.index(f"# </{marker}>")
    return lines[start + 1:end]


def native_lines(lines):
    """Splits a block into the guard's lines and those under the native header."""
    header = "# seen from native code (not the Python guard):"
    if header not in lines:
        return lines, []
    i = lines.index(header)
    return lines[:i], lines[i + 1:]


def learn_app(sb):
    main = make_app(sb)
    r = sb.run(main, env=ENV)
    return main, r


# ---- the round trip ----------------------------------------------------------

def test_round_trip(sb):
    main, r = learn_app(sb)
    prof = sb.path(".py-sandboxes")
    assert r.returncode == 0, r
    assert "DONE" in r.stdout and "system 0" in r.stdout
    assert WRITTEN.format(prof) in r.stderr
    assert "LEARNING MODE" in r.stderr and "Never learn with untrusted code" in r.stderr
    assert "os-sandbox=subprocess is forced" in r.stderr

    header = [line for line in prof.read_text().splitlines() if line.startswith("# Add rules (")]
    assert header and all(len(h) == len("# Add rules (2026/11/29 at 15:04)") for h in header)
    assert block(prof, "learning_guard_envs")[1:] == [
        "env=LEARN_A=${LEARN_A}",
        "env=LEARN_B=${LEARN_B}",
    ]
    guard, native = native_lines(block(prof, "learning_guard_files")[1:])
    # mylib, beside the script, needs python-import=mylib alone (issue 17,
    # item 3): both layers grant the files of the modules it allows there.
    assert guard == [
        "expose-ro=./data",
        "expose-rw=./out",
    ]
    # os.system's /bin/sh, seen by the native observer: its directory.
    assert all(line.startswith("expose-ro=/") for line in native), native
    assert block(prof, "learning_guard_socket") == []
    assert block(prof, "learning_guard_import")[1:] == [
        "# Standard Python",
        "python-import=json, os, sys",
        "# External",
        "python-import=mylib",
    ]
    assert block(prof, "learning_guard_api")[1:] == [
        "python-api=ALLOW:os.system",
        "python-api=ALLOW:posix.system",
    ]
    assert block(prof, "learning_guard_eval") == []
    assert "LEARN_UNREAD" not in prof.read_text()
    assert "SET_BY_PROGRAM" not in prof.read_text()
    assert not sb.path(".py-sandboxes.old").exists()

    # Replayed without learning, restricted: first with seccomp and the guard.
    (sb.path("out/result.json")).unlink()
    r = sb.run(main, env=dict(ENV, OS_SANDBOX="subprocess"))
    assert r.returncode == 0, r
    assert "LEARNING" not in r.stderr and "learning" not in r.stderr
    assert "DONE" in r.stdout and "system 0" in r.stdout
    assert '"a": "alpha", "b": "beta"' in sb.path("out/result.json").read_text()
    # One new action is refused, naming the rule to add.
    r = sb.run(main, "--extra", env=dict(ENV, OS_SANDBOX="subprocess"))
    assert r.returncode != 0, r
    assert "Module named 'colorsys' is not allowed by a rule. Add 'python-import=colorsys'" \
        in r.stderr
    assert prof.read_text().count("colorsys") == 0


@pytest.mark.skipif(LANDLOCK_ABI < 1, reason="the kernel has no Landlock")
def test_round_trip_default_provider(sb):
    main, r = learn_app(sb)
    assert r.returncode == 0, r
    sb.path("out/result.json").unlink()
    # The written file says os-sandbox=${OS_SANDBOX:-auto}: Landlock here.
    r = sb.run("--explain", main, env=ENV)
    assert "Landlock (ABI" in r.stdout, r
    r = sb.run(main, env=ENV)
    assert r.returncode == 0, r
    assert "DONE" in r.stdout and "system 0" in r.stdout
    assert sb.path("out/result.json").exists()
    r = sb.run(main, "--extra", env=ENV)
    assert r.returncode != 0 and "Add 'python-import=colorsys'" in r.stderr, r


def test_relearn_adds_only_missing_lines_and_backs_up(sb):
    main, r = learn_app(sb)
    prof = sb.path(".py-sandboxes")
    first = prof.read_text()
    # Learning again on a run that does the same adds nothing, touches nothing.
    r = sb.run("--learn", main, env=ENV)
    assert r.returncode == 0, r
    assert "is unchanged" in r.stderr
    assert prof.read_text() == first
    assert not sb.path(".py-sandboxes.old").exists()

    r = sb.run("--learn", main, "--extra", env=ENV)
    assert r.returncode == 0 and "extra" in r.stdout, r
    assert sb.path(".py-sandboxes.old").read_text() == first
    added = [d[2:] for d in difflib.ndiff(first.splitlines(), prof.read_text().splitlines())
             if d.startswith("+ ")]
    assert added[0].startswith("# Add rules (")
    assert added[1:] == ["# Standard Python", "python-import=colorsys"], added
    assert "the previous version is kept as" in r.stderr

    sb.script(MAIN + "import uuid\n", rel="app/main.py")
    r = sb.run("--learn", main, env=ENV)
    assert r.returncode == 0, r
    assert sb.path(".py-sandboxes.old_1").exists()
    assert rules(prof).count("python-import=json, os, sys") == 1
    assert "python-import=uuid" in rules(prof)


def test_learn_into_another_file_compares_with_it(sb):
    sb.profile("python-import=json\n")
    sb.write("data/x", "x")
    s = sb.script("import json\nopen('data/x').read()\n")
    learned = sb.path("learned.prof")
    for _ in range(2):
        r = sb.run(f"--learn={learned}", s)
        assert r.returncode == 0, r
    assert rules(learned).count("expose-ro=./data") == 1
    assert "python-import=json" not in rules(learned)  # the loaded profile has it
    assert not sb.path("learned.prof.old").exists()


# ---- triggers, locks --------------------------------------------------------

def test_missing_profile_learns_then_restricts(sb):
    s = sb.script("import json\nprint(open('data/in.txt').read())\n")
    sb.write("data/in.txt", "IN")
    r = sb.run(s)
    assert r.returncode == 0 and "IN" in r.stdout, r
    prof = sb.path(".py-sandboxes")
    assert WRITTEN.format(prof) in r.stderr
    assert "expose-ro=./data" in block(prof, "learning_guard_files")
    r = sb.run(s)
    assert r.returncode == 0 and "IN" in r.stdout and "LEARNING" not in r.stderr, r
    s2 = sb.script("import json\nopen('other.txt', 'w').write('x')\n", rel="s.py")
    r = sb.run(s2)
    assert r.returncode != 0 and "Add 'expose-rw=" in r.stderr, r
    assert not sb.path("other.txt").exists()


def test_learn_file_key(sb):
    learned = sb.path("learned.prof")
    sb.profile(f"learn={learned}\n")
    r = sb.run("-c", "import json")
    assert r.returncode == 0, r
    assert "python-import=json" in rules(learned)


def test_what_c_functions_import_is_not_learned_apart(sb):
    """datetime's strftime() imports time and its strptime() _strptime
    (guard-imports.c, call_imports): the learned rule is datetime alone,
    and it is enough for the run after."""
    s = sb.script("import datetime\n"
                  "print(datetime.date(2020, 1, 2).strftime('%Y'),\n"
                  "      datetime.datetime.strptime('2024', '%Y').year)\n")
    r = sb.run(s)
    assert r.returncode == 0 and r.stdout == "2020 2024\n", r
    prof = sb.path(".py-sandboxes")
    assert [line for line in rules(prof) if line.startswith("python-import=")] == \
        ["python-import=datetime"], rules(prof)
    r = sb.run(s)
    assert (r.returncode, r.stdout) == (0, "2020 2024\n") and "LEARNING" not in r.stderr, r


def test_learn_false_refuses_cli_learn(sb):
    sb.profile("learn=false\n")
    r = sb.run("--learn", "-c", "open('MARK', 'w')")
    assert r.returncode == EXIT_CONFIG, r
    assert "learning mode is forbidden, but requested by --learn" in r.stderr
    assert not sb.path("MARK").exists()


def test_learn_false_refuses_cli_rule(sb):
    sb.profile("learn=false\n")
    r = sb.run("--expose-ro=/etc", "-c", "open('MARK', 'w')")
    assert r.returncode == EXIT_CONFIG, r
    assert "learning mode is forbidden, but requested by rules on the command line" in r.stderr


def test_learn_false_of_the_user_profile_refuses_a_missing_rule_file(sb):
    sb.write(".config/py-sandboxes/user-py-sandboxes.profile", "learn=false\n")
    s = sb.script("open('MARK', 'w')\n", rel="app/main.py")
    r = sb.run(s)
    assert r.returncode == EXIT_CONFIG, r
    assert "learning mode is forbidden, but requested by a missing rule file" in r.stderr
    assert "user-py-sandboxes.profile:1" in r.stderr
    assert not sb.path("MARK").exists()
    assert not sb.path(".py-sandboxes").exists()


def test_py_sandbox_false_disables_learning(sb):
    learned = sb.path("learned.prof")
    sb.profile(f"learn={learned}\npy-sandbox=false\nos-sandbox=none\n")
    r = sb.run("-c", "print('RAN')")
    assert r.returncode == 0 and "RAN" in r.stdout, r
    assert "LEARNING" not in r.stderr
    assert not learned.exists()


# ---- what is learned ---------------------------------------------------------

def test_native_code_access_is_learned(sb, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "native.dat").write_text("N")
    s = sb.script(f'''\
        import ctypes
        libc = ctypes.CDLL(None)
        fd = libc.open({str(elsewhere / "native.dat").encode()!r}, 0)
        print("fd", fd >= 0)
        libc.close(fd)
        ''')
    r = sb.run("--learn", s)
    assert r.returncode == 0 and "fd True" in r.stdout, r
    guard, native = native_lines(block(sb.path(".py-sandboxes"), "learning_guard_files")[1:])
    assert native and native[-1].endswith("/elsewhere") and native[-1].startswith("expose-ro="), \
        native
    assert not any("elsewhere" in line for line in guard)
    assert "python-api=ALLOW:ctypes.CDLL" in rules(sb.path(".py-sandboxes"))
    # Replayed, the guard lets native code through and the kernel grants it.
    r = sb.run(s)
    assert r.returncode == 0 and "fd True" in r.stdout, r


def test_network_is_learned_by_name_and_port(sb):
    s = sb.script('''\
        import socket, threading
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        port = srv.getsockname()[1]
        c = socket.create_connection(("localhost", port))
        c.close()
        print("PORT", port)
        ''')
    r = sb.run("--learn", s)
    assert r.returncode == 0, r
    port = int(r.stdout.split()[-1])
    lines = block(sb.path(".py-sandboxes"), "learning_guard_socket")[1:]
    assert "net=ALLOW|tcp|127.0.0.1|0|IN" in lines, lines
    assert f"net=ALLOW|tcp|localhost|{port}|OUT" in lines, lines


def test_whole_category_becomes_one_line(sb):
    names = ["pickle.loads", "_pickle.loads", "pickle.load", "_pickle.load", "pickle._loads",
             "pickle._load", "pickle._Unpickler"]
    s = sb.script('''\
        import pickle, _pickle, io
        data = pickle.dumps(1)
        pickle.loads(data); _pickle.loads(data)
        pickle.load(io.BytesIO(data)); _pickle.load(io.BytesIO(data))
        pickle._loads(data); pickle._load(io.BytesIO(data))
        pickle._Unpickler(io.BytesIO(data)).load()
        import marshal
        marshal.loads(marshal.dumps(1))
        ''')
    r = sb.run("--learn", s)
    assert r.returncode == 0, r
    api = block(sb.path(".py-sandboxes"), "learning_guard_api")[1:]
    assert api == ["python-api=ALLOW:deserialization"], (api, names)
    r = sb.run(s)
    assert r.returncode == 0, r


def test_eval_is_learned_as_eval_rules(sb):
    # eval of a string is learned as the eval-* rules it needs (the eval
    # layer replays it guarded), not as the python-api dynamic-code grant.
    s = sb.script("print(eval('40 + 2'))\n")
    r = sb.run("--learn", s)
    assert r.returncode == 0 and "42" in r.stdout, r
    assert block(sb.path(".py-sandboxes"), "learning_guard_api") == []
    assert block(sb.path(".py-sandboxes"), "learning_guard_eval")[1:] == ["eval-syntax=BinOp"]
    r = sb.run(s)
    assert r.returncode == 0 and "42" in r.stdout, r


def test_temporary_directory_becomes_tmpdir(sb, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    s = sb.script('''\
        import tempfile, os
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "x"), "w").write("x")
        ''')
    r = sb.run("--learn", s, env={"TMPDIR": str(tmp)})
    assert r.returncode == 0, r
    files = block(sb.path(".py-sandboxes"), "learning_guard_files")[1:]
    assert "expose-rw=${TMPDIR:-/tmp}" in files, files
    r = sb.run(s, env={"TMPDIR": str(tmp)})
    assert r.returncode == 0, r


# ---- writing at exit -----------------------------------------------------------

def test_uncaught_exception_still_writes(sb):
    sb.write("data/x", "x")
    s = sb.script("open('data/x').read()\nraise RuntimeError('BOOM')\n")
    r = sb.run("--learn", s)
    assert r.returncode == 1 and "BOOM" in r.stderr, r
    assert "expose-ro=./data" in rules(sb.path(".py-sandboxes"))


def test_sys_exit_still_writes(sb):
    sb.write("data/x", "x")
    s = sb.script("import sys\nopen('data/x').read()\nsys.exit(3)\n")
    r = sb.run("--learn", s)
    assert r.returncode == 3, r
    assert "expose-ro=./data" in rules(sb.path(".py-sandboxes"))


def _start(sb, code, *args):
    sb.write("data/x", "x")
    s = sb.script(code)
    env = dict(sb.env(), **SANITIZER_ENV)
    proc = subprocess.Popen([sb.binary, *args, str(s)], cwd=sb.root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    line = proc.stdout.readline()
    assert line.strip() == "ready", (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc


SLEEPER = '''\
import time
open('data/x').read()
print("ready", flush=True)
time.sleep(60)
'''


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGQUIT, signal.SIGINT])
def test_signal_writes_once(sb, sig):
    proc = _start(sb, SLEEPER, "--learn")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == -sig, (proc.returncode, err)
    assert err.count("Write all learning rules") == 1, err
    assert "expose-ro=./data" in rules(sb.path(".py-sandboxes"))


def test_planted_link_at_the_profile_is_not_followed(sb, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = sb.path("learned.prof")
    os.symlink(victim, link)
    r = sb.run(f"--learn={link}", "-c", "import json")
    assert r.returncode == 0, r
    assert "the learned rules were not written" in r.stderr and "symbolic link" in r.stderr
    assert "python-import=json" in r.stderr  # the rules are shown, not lost
    assert victim.read_text() == "precious\n"
    assert os.path.islink(link)


def test_planted_link_at_the_temporary_name_is_not_followed(sb, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    prof = sb.path("learned.prof")
    go = sb.path("GO")
    proc = _start(sb, f"import os, time\nprint('ready', flush=True)\n"
                  f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\n",
                  f"--learn={prof}")
    os.symlink(victim, f"{prof}.{proc.pid}.tmp")
    go.write_text("")
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err
    assert "the learned rules were not written" in err and "not followed" in err, err
    assert victim.read_text() == "precious\n"
    assert not prof.exists()


# ---- unprivileged -------------------------------------------------------------

def test_round_trip_as_nobody(sb_nobody):
    sb = sb_nobody
    main = make_app(sb)
    sb.mkdir("out")
    r = sb.run(main, env=ENV)
    assert r.returncode == 0 and "DONE" in r.stdout, r
    prof = sb.path(".py-sandboxes")
    assert "expose-rw=./out" in rules(prof)
    assert "python-import=mylib" in rules(prof)
    r = sb.run(main, env=ENV)
    assert r.returncode == 0 and "DONE" in r.stdout and "LEARNING" not in r.stderr, r
    r = sb.run(main, "--extra", env=ENV)
    assert r.returncode != 0 and "Add 'python-import=colorsys'" in r.stderr, r


def test_forked_child_does_not_write(sb):
    sb.write("data/x", "x")
    s = sb.script('''\
        import os, sys
        pid = os.fork()
        if pid == 0:
            sys.exit(0)          # the child finalizes too
        os.waitpid(pid, 0)
        open("data/x").read()
        print("PARENT")
        ''')
    r = sb.run("--learn", s)
    assert r.returncode == 0 and "PARENT" in r.stdout, r
    assert r.stderr.count("Write all learning rules") == 1, r
    assert "expose-ro=./data" in rules(sb.path(".py-sandboxes"))
    assert "python-api=ALLOW:os.fork" in rules(sb.path(".py-sandboxes"))


def test_closing_every_descriptor_keeps_the_program_working(sb):
    # The native observer's socket goes away with the program's descriptors:
    # its helper must keep answering, or every open() would fail with ENOSYS.
    sb.write("data/x", "x")
    s = sb.script('''\
        import os
        os.closerange(3, 4096)
        print(open("data/x").read())
        ''')
    r = sb.run("--learn", s)
    assert r.returncode == 0 and "x" in r.stdout, r
    assert "expose-ro=./data" in rules(sb.path(".py-sandboxes"))


def test_explicit_refusals_stay_while_learning(sb):
    # ignore= and DENY rules are decisions, not missing rules: learning keeps
    # them and adds nothing that would contradict them.
    sb.profile("ignore=secret*\npython-api=DENY:os.system\npython-import=os\n")
    sb.write("secret.txt", "S")
    s = sb.script('''\
        import os
        try:
            open("secret.txt").read()
        except FileNotFoundError as e:
            print("HIDDEN", type(e).__name__)
        try:
            os.system("true")
        except PermissionError as e:
            print("DENIED", e.qualname)
        ''')
    r = sb.run("--learn", s)
    assert r.returncode == 0, r
    assert "HIDDEN RuleFileNotFoundError" in r.stdout and "DENIED os.system" in r.stdout, r
    text = sb.path(".py-sandboxes").read_text()
    assert "ALLOW:os.system" not in text and "ALLOW:posix.system" not in text
    assert "expose-ro=." not in rules(sb.path(".py-sandboxes"))
    assert "is unchanged" in r.stderr, r  # a file without markers would get them appended


def test_guarded_module_rerun_refused_while_learning(sb):
    # No rule could allow it (the wrappers would be gone), so learning neither
    # allows nor records it.
    sb.profile("python-import=*\n")
    s = sb.script('''\
        import inspect
        try:
            inspect.__spec__.loader.exec_module(inspect)
        except PermissionError as e:
            print("REFUSED", e.qualname)
        ''')
    r = sb.run("--learn", s)
    assert r.returncode == 0, r
    assert "REFUSED inspect" in r.stdout, r
    assert "ALLOW:introspection" not in sb.path(".py-sandboxes").read_text()


def test_module_from_pythonpath_learns_the_variable(sb, tmp_path):
    lib = tmp_path / "pylib"
    lib.mkdir()
    (lib / "fromenv.py").write_text("V = 'E'\n")
    s = sb.script("import fromenv\nprint(fromenv.V)\n")
    env = {"PYTHONPATH": str(lib)}
    r = sb.run("--learn", s, env=env)
    assert r.returncode == 0 and "E" in r.stdout, r
    assert "env=PYTHONPATH=${PYTHONPATH}" in rules(sb.path(".py-sandboxes"))
    r = sb.run(s, env=env)
    assert r.returncode == 0 and "E" in r.stdout, r


def test_pythonpath_not_learned_when_nothing_comes_from_it(sb, tmp_path):
    lib = tmp_path / "pylib"
    lib.mkdir()
    r = sb.run("--learn", "-c", "import json", env={"PYTHONPATH": str(lib)})
    assert r.returncode == 0, r
    assert "PYTHONPATH" not in sb.path(".py-sandboxes").read_text().split(
        "# <learning_guard_envs>")[1].split("# </learning_guard_envs>")[0]


def test_native_connect_is_learned(sb):
    s = sb.script('''\
        import ctypes, socket, struct
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        port = srv.getsockname()[1]
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
        addr = struct.pack("!HH4s8x", socket.AF_INET, port, socket.inet_aton("127.0.0.1"))
        # sockaddr_in's family is in host order: repack it so.
        addr = struct.pack("=H", socket.AF_INET) + addr[2:]
        print("connect", libc.connect(fd, addr, len(addr)))
        libc.close(fd)
        print("PORT", port)
        ''')
    r = sb.run("--learn", s)
    assert r.returncode == 0 and "connect 0" in r.stdout, r
    port = int(r.stdout.split()[-1])
    guard, native = native_lines(block(sb.path(".py-sandboxes"), "learning_guard_socket")[1:])
    assert "net=ALLOW|tcp|127.0.0.1|0|IN" in guard, guard
    assert native == [f"net=ALLOW|tcp|127.0.0.1|{port}|OUT"], native


def test_read_only_grant_becomes_writable(sb):
    sb.mkdir("out")
    prof = sb.profile("python-import=os\nexpose-ro=./out\n")
    s = sb.script("open('out/x', 'w').write('x')\nprint('WROTE')\n")
    r = sb.run(s)
    assert r.returncode != 0 and "Use 'expose-rw=./out' instead" in r.stderr, r
    r = sb.run("--learn", s)
    assert r.returncode == 0 and "WROTE" in r.stdout, r
    assert rules(prof) == ["python-import=os", "expose-rw=./out"], prof.read_text()
    assert "# expose-ro=./out  (replaced by learning on " in prof.read_text()
    r = sb.run(s)
    assert r.returncode == 0 and "WROTE" in r.stdout, r


def test_copies_of_the_environment_are_not_reads(sb):
    s = sb.script('''\
        import os, subprocess
        d = dict(os.environ)
        e = {**os.environ}
        c = os.environ.copy()
        items = list(os.environ.items())
        x = os.environ["LEARN_A"]
        y = "LEARN_B" in os.environ
        z = os.environ.get("LEARN_ABSENT")
        os.environ["LEARN_SET"] = "1"
        w = os.environ["LEARN_SET"]
        print(len(d) == len(e) == len(c) == len(items), x, y, z, w)
        ''')
    r = sb.run("--learn", s, env={"LEARN_A": "a", "LEARN_B": "b", "LEARN_C": "c"})
    assert r.returncode == 0 and "True a True None 1" in r.stdout, r
    assert block(sb.path(".py-sandboxes"), "learning_guard_envs")[1:] == [
        "env=LEARN_A=${LEARN_A}",
        "env=LEARN_B=${LEARN_B}",
    ]


@pytest.mark.skipif(not shutil.which("script"), reason="script(1) is needed for a terminal")
def test_repl_banner_says_learning(sb):
    cmd = f"{sb.binary} --learn"
    proc = subprocess.run(["script", "-qec", cmd, "/dev/null"], cwd=sb.root,
                          env=dict(sb.env(), **SANITIZER_ENV), input="print(6*7)\nexit()\n",
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert "API calls are LEARNED and saved in './.py-sandboxes'" in proc.stdout, proc
    assert "42" in proc.stdout
    assert sb.path(".py-sandboxes").exists()


def test_native_syscalls_outside_the_allowlist_are_noted_and_refused(sb):
    """A call no rule allows (sethostname, modify_ldt) is refused while
    learning, as it will be without learning, and named in a note; a process
    started from native code (no Python-level fork for the guard to see)
    learns the rule that allows it."""
    s = sb.script('''\
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        print("sethostname", libc.syscall(170, b"x", 1), ctypes.get_errno())
        print("modify_ldt", libc.syscall(154, 0, None, 0), ctypes.get_errno())
        pid = libc.syscall(57)  # SYS_fork, not os.fork()
        if pid == 0:
            libc.syscall(60, 0)  # SYS_exit
        os.waitpid(pid, 0)
        print("forked", pid > 0)
        ''')
    r = sb.run("--learn", s)
    assert r.returncode == 0, r
    assert r.stdout == "sethostname -1 1\nmodify_ldt -1 1\nforked True\n", r
    api = block(sb.path(".py-sandboxes"), "learning_guard_api")
    assert "python-api=ALLOW:process-exec" in api, api
    for name in ("sethostname", "modify_ldt"):
        assert (f"# '{name}' was called by native code: the kernel boundary (seccomp) "
                "refuses it, no rule allows it") in api, api
    # Replayed with the learned rules, the same program runs the same way.
    r = sb.run(s)
    assert (r.returncode, r.stdout) == (0, "sethostname -1 1\nmodify_ldt -1 1\nforked True\n"), r


# ---- what learning must not grant (issue 17, item 1) -------------------------

PROBES = '''\
import gettext, os, sys
print("exists", os.path.exists("/sb-no-such.ini"), os.path.isfile("/no-such-dir/x.cfg"))
try:
    open("/sb-no-such.cfg")
except FileNotFoundError:
    print("missing")
t = gettext.translation("sb-no-such-domain", fallback=True)
print("gettext", type(t).__name__)
print(open(sys.argv[1]).read())
'''


def _probe_run(sb, env):
    sb.write("app/data/in.txt", "IN")
    s = sb.script(PROBES, rel="app/main.py")
    return s, sb.run(s, sb.path("app/data/in.txt"), env=env)


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_lookups_that_found_nothing_are_not_learned(request, who):
    sb = request.getfixturevalue("sb" if who == "root" else "sb_nobody")
    env = {"LANG": "de_DE.UTF-8", "LANGUAGE": "fr:de"}
    s, r = _probe_run(sb, env)
    assert r.returncode == 0, r
    prof = sb.path(".py-sandboxes")
    files = rules_in(prof, "learning_guard_files")
    # Only the data file's directory: no '/', no locale directory.
    assert files == ["expose-ro=./app/data"], prof.read_text()
    assert rules_in(prof, "learning_guard_envs") == [], prof.read_text()
    # The replay gets the same "not found" answers, and the same output.
    r2 = sb.run(s, sb.path("app/data/in.txt"), env=dict(env, OS_SANDBOX="subprocess"))
    assert r2.returncode == 0, r2
    assert r2.stdout == r.stdout, (r, r2)
    assert "exists False False" in r2.stdout and "missing" in r2.stdout


def rules_in(path, marker):
    return [line for line in block(path, marker) if line and not line.startswith("#")]


def test_root_is_never_learned(sb):
    s = sb.script("import os\nprint(sorted(os.listdir('/'))[:1])\n")
    r = sb.run(s)
    assert r.returncode == 0, r
    prof = sb.path(".py-sandboxes")
    text = prof.read_text()
    assert "expose-ro=/\n" not in text and "expose-rw=/\n" not in text, text
    assert "# '/' is never learned ('/' was read): grant what the program needs there by hand" \
        in block(prof, "learning_guard_files"), text
    assert "python-sb: warning: '/' is never learned ('/' was read)" in r.stderr, r


def test_learning_above_the_program_directory_warns(sb):
    sb.write("settings.ini", "x=1\n")
    s = sb.script("print(open('../settings.ini').read())\n", rel="app/main.py")
    r = sb.run(s, cwd=sb.path("app"), env={"HOME": "/nonexistent"})
    assert r.returncode == 0, r
    prof = sb.path("app/.py-sandboxes")
    lines = block(prof, "learning_guard_files")
    top = str(sb.path())
    if top.startswith("/tmp/"):
        top = "${TMPDIR:-/tmp}" + top[len("/tmp"):]
    i = lines.index(f"expose-ro={top}")
    assert lines[i - 1] == (f"# above the program's directory '{sb.path('app')}': "
                            "check that the program needs all of it"), lines
    assert (f"python-sb: warning: learned 'expose-ro={top}' is above the program's "
            f"directory '{sb.path('app')}': check that the program needs all of it") \
        in r.stderr, r


def test_compile_and_exec_learn_no_category(sb):
    # Issue 17, item 7: one eval/exec/compile never learns the whole
    # dynamic-code category (the eval layer replays them under eval-* rules).
    s = sb.script("c = compile('1+2', 'f', 'eval')\nprint(eval(c))\nexec('y = 1')\n")
    r = sb.run("--learn", s)
    assert r.returncode == 0 and "3" in r.stdout, r
    prof = sb.path(".py-sandboxes")
    assert block(prof, "learning_guard_api") == [], prof.read_text()
    assert block(prof, "learning_guard_eval")[1:] == ["eval-syntax=Assign, BinOp"]
    r = sb.run(s, env={"OS_SANDBOX": "subprocess"})
    assert r.returncode == 0 and "3" in r.stdout, r


def test_bare_learn_writes_the_profile_in_use(sb):
    # Issue 17, item 7: `--learn` edits the profile the lookup chose (here
    # the one beside the script), and what it learns works from any cwd.
    sb.write("app/data/in.txt", "IN")
    prof = sb.profile("os-sandbox=${OS_SANDBOX:-auto}\npython-import=os\n" + TEMPLATE_BLOCKS,
                      rel="app/.py-sandboxes")
    s = sb.script("import os\nprint(open(os.path.join(os.path.dirname(__file__), 'data', "
                  "'in.txt')).read())\n", rel="app/main.py")
    r = sb.run("--learn", s)
    assert r.returncode == 0 and "IN" in r.stdout, r
    assert not sb.path(".py-sandboxes").exists(), r
    assert WRITTEN.format(prof) in r.stderr, r
    # The cwd is not the profile's directory: "./app/data" would name
    # another directory from app/ itself (HOME is the sandbox root here).
    assert block(prof, "learning_guard_files")[1:] == ["expose-ro=~/app/data"], \
        prof.read_text()
    for cwd in (sb.path(), sb.path("app")):
        r = sb.run(s, cwd=cwd, env={"OS_SANDBOX": "subprocess"})
        assert r.returncode == 0 and "IN" in r.stdout, r


def test_learned_paths_in_the_cwd_profile_stay_relative(sb):
    sb.write("data/in.txt", "IN")
    s = sb.script("print(open('data/in.txt').read())\n")
    r = sb.run(s)
    assert r.returncode == 0, r
    assert block(sb.path(".py-sandboxes"), "learning_guard_files")[1:] == ["expose-ro=./data"]


TEMPLATE_BLOCKS = "".join(f"# <{m}>\n# </{m}>\n" for m in (
    "learning_guard_envs", "learning_guard_files", "learning_guard_socket",
    "learning_guard_import", "learning_guard_api", "learning_guard_eval",
    "learning_remote_result"))

