# SPDX-License-Identifier: MIT
"""os-sandbox= selection: none/subprocess/auto/landlock/unshare run; the kernel
providers not built yet fail closed when named, and so do the wrappers whose
tool is not installed; unknown names are profile errors. What bwrap and
firejail enforce: test_kernel_wrappers.py."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import EXIT_CONFIG, LANDLOCK_ABI, SANITIZER_ENV, TIMEOUT, needs_landlock

CODE = "import os\nprint('RAN')\n"


def provider_in_use(r):
    for line in r.stdout.splitlines():
        if line.startswith("#   provider in use: "):
            return line.split(": ", 1)[1]
    raise AssertionError(f"no provider line in {r!r}")


@pytest.mark.parametrize("provider", ["none", "subprocess", "auto", "unshare"])
def test_runnable_providers(sb, provider):
    r = sb.run_code(f"os-sandbox={provider}\npython-import=os\n", CODE)
    assert (r.returncode, r.stdout) == (0, "RAN\n"), r


def test_absent_os_sandbox_means_auto(sb):
    sb.profile("python-import=os\n")
    s = sb.script(CODE)
    r = sb.run(s)
    assert (r.returncode, r.stdout) == (0, "RAN\n"), r
    assert provider_in_use(sb.run("--explain", s)) == ("landlock" if LANDLOCK_ABI else "subprocess")


@needs_landlock
def test_auto_chooses_landlock(sb):
    sb.profile("os-sandbox=auto\npython-import=os\n")
    r = sb.run("--explain", "-c", "pass")
    assert r.returncode == 0, r
    assert provider_in_use(r) == "landlock"
    assert f"Landlock (ABI {LANDLOCK_ABI} on this kernel)" in r.stdout


@pytest.mark.skipif(LANDLOCK_ABI >= 1, reason="the kernel has Landlock: auto does not fall back")
def test_auto_falls_back_to_subprocess_and_says_why(sb):
    sb.profile("os-sandbox=auto\npython-import=os\n")
    r = sb.run("--explain", "-c", "pass")
    assert r.returncode == 0, r
    assert provider_in_use(r) == "subprocess"
    assert "os-sandbox=auto chose subprocess: landlock unavailable" in r.stdout


# os-sandbox=qemu on a machine without its kernel: a provider named that
# cannot be applied (test_kernel_qemu.py has the rest).
NO_KERNEL = {"PYSANDBOXES_QEMU_KERNEL": "/nonexistent/vmlinuz-0"}


@pytest.mark.parametrize("provider", ["qemu"])
def test_named_kernel_provider_fails_closed(sb, provider):
    marker = sb.path("MARK")
    r = sb.run_code(f"os-sandbox={provider}\npython-import=*\n",
                    f"open({str(marker)!r}, 'w')\n", env=NO_KERNEL)
    assert r.returncode == EXIT_CONFIG, r
    assert f"os-sandbox={provider} cannot be applied" in r.stderr
    assert "will not fall back" in r.stderr
    assert not marker.exists()


@pytest.mark.parametrize("provider", ["qemu"])
def test_named_kernel_provider_on_command_line_fails_closed(sb, provider):
    sb.profile("os-sandbox=none\npython-import=*\n")
    marker = sb.path("MARK")
    r = sb.run(f"--os-sandbox={provider}", "-c", f"open({str(marker)!r}, 'w')", env=NO_KERNEL)
    assert r.returncode == EXIT_CONFIG, r
    assert f"os-sandbox={provider} cannot be applied" in r.stderr
    assert not marker.exists()


def test_named_kernel_provider_fails_closed_even_with_py_sandbox_false(sb):
    marker = sb.path("MARK")
    r = sb.run_code("os-sandbox=qemu\npy-sandbox=false\n", f"open({str(marker)!r}, 'w')\n",
                    env=NO_KERNEL)
    assert r.returncode == EXIT_CONFIG, r
    assert "os-sandbox=qemu cannot be applied" in r.stderr
    assert not marker.exists()


@pytest.mark.parametrize("provider,tool,package", [("bwrap", "bwrap", "bubblewrap"),
                                                   ("firejail", "firejail", "firejail")])
def test_wrapper_without_its_tool_fails_closed(sb, tmp_path, provider, tool, package):
    """The tool is looked up on the caller's PATH: an empty directory there is
    a machine without the package."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    marker = sb.path("MARK")
    r = sb.run_code(f"os-sandbox={provider}\npython-import=*\n",
                    f"open({str(marker)!r}, 'w')\n", env={"PATH": str(empty)})
    assert r.returncode == EXIT_CONFIG, r
    assert f"os-sandbox={provider} cannot be applied: {tool} is not installed" in r.stderr, r
    assert f"install the Debian package {package} (apt-get install {package})" in r.stderr, r
    assert "will not fall back" in r.stderr
    assert not marker.exists()


def test_unknown_provider(sb):
    marker = sb.path("MARK")
    r = sb.run_code("os-sandbox=foo\npython-import=*\n", f"open({str(marker)!r}, 'w')\n")
    assert r.returncode == EXIT_CONFIG, r
    assert len(r.errors) == 1
    assert r.errors[0].startswith(f"{sb.path('.py-sandboxes')}:1: Invalid os-sandbox 'foo'")
    assert not marker.exists()


def test_spec_10_38_command_line_overrides_file(sb):
    sb.profile("os-sandbox=qemu\npython-import=*\n")
    r = sb.run("--os-sandbox=subprocess", "-c", "print('OVERRIDE')")
    assert (r.returncode, r.stdout) == (0, "OVERRIDE\n"), r
    sb.profile("os-sandbox=none\npython-import=*\n")
    r = sb.run("--os-sandbox=qemu", "-c", "print('NO')", env=NO_KERNEL)
    assert r.returncode == EXIT_CONFIG and "os-sandbox=qemu cannot be applied" in r.stderr, r


def test_os_sandbox_env_default_pattern(sb):
    sb.profile("os-sandbox=${OS_SANDBOX:-auto}\npython-import=*\n")
    r = sb.run("-c", "print('AUTO')")
    assert (r.returncode, r.stdout) == (0, "AUTO\n"), r
    r = sb.run("-c", "print('NO')", env={"OS_SANDBOX": "qemu", **NO_KERNEL})
    assert r.returncode == EXIT_CONFIG and "os-sandbox=qemu cannot be applied" in r.stderr, r


BANNERS = {
    # py-sandbox=false: only the provider limits anything (it printed
    # "of type (null)" for none and subprocess).
    ("false", "none"): "APIs are LIMITED only by the os-sandbox of type none\n",
    ("false", "subprocess"): "APIs are LIMITED only by the os-sandbox of type subprocess\n",
    ("false", "landlock"): "APIs are LIMITED only by the os-sandbox of type landlock\n",
    ("false", "unshare"): "APIs are LIMITED only by the os-sandbox of type unshare\n",
    # The provider is named when its kernel enforces rules of the profile.
    ("true", "subprocess"): "APIs are LIMITED according to the rules in '{rules}'\n",
    ("true", "landlock"): ("APIs are LIMITED according to the rules in '{rules}' "
                           "and by the os-sandbox=landlock\n"),
    ("true", "unshare"): ("APIs are LIMITED according to the rules in '{rules}' "
                          "and by the os-sandbox=unshare\n"),
}


@pytest.mark.skipif(not shutil.which("script"), reason="script(1) is needed for a terminal")
@pytest.mark.parametrize("py_sandbox,provider", list(BANNERS))
def test_repl_banner_names_the_provider(sb, py_sandbox, provider):
    if provider == "landlock" and LANDLOCK_ABI < 1:
        pytest.skip("the kernel has no Landlock")
    rules = sb.profile(f"os-sandbox={provider}\npy-sandbox={py_sandbox}\n")
    proc = subprocess.run(["script", "-qec", sb.binary, "/dev/null"], cwd=sb.root,
                          env=dict(sb.env(), **SANITIZER_ENV), input="print(6*7)\nexit()\n",
                          capture_output=True, text=True, timeout=TIMEOUT)
    out = proc.stdout.replace("\r\n", "\n")
    assert BANNERS[py_sandbox, provider].format(rules=rules) in out, proc
    assert "(null)" not in out
    assert "42" in out


@pytest.mark.skipif(not shutil.which("script"), reason="script(1) is needed for a terminal")
def test_prompt_after_a_script_with_dash_i_is_marked(sb):
    # Issue 17, item 7: `-i script.py` ends in the sandboxed REPL too.
    sb.profile("os-sandbox=subprocess\n")
    s = sb.script("X = 6\n")
    proc = subprocess.run(["script", "-qec", f"{sb.binary} -i {s}", "/dev/null"], cwd=sb.root,
                          env=dict(sb.env(), **SANITIZER_ENV), input="print(X*7)\nexit()\n",
                          capture_output=True, text=True, timeout=TIMEOUT)
    out = proc.stdout.replace("\r\n", "\n")
    assert "42" in out, proc
    assert "\u26a0 >>> " in out, proc


# --------------------------------------------------------------------------
# Grants every confining provider derives from the file system


HAVE_TOOL = {w: shutil.which(w) is not None for w in ("bwrap", "firejail")}
CONFINING = [
    pytest.param("landlock", marks=needs_landlock), "unshare",
    pytest.param("bwrap", marks=pytest.mark.skipif(not HAVE_TOOL["bwrap"],
                                                   reason="bwrap is not installed")),
    pytest.param("firejail", marks=pytest.mark.skipif(not HAVE_TOOL["firejail"],
                                                      reason="firejail is not installed")),
]
PLANTED_SECRET = "PLANTED-LINK-SECRET-81c2"


@pytest.mark.parametrize("who", ["caller", "nobody"])
@pytest.mark.parametrize("provider", CONFINING)
@pytest.mark.parametrize("kind", ["module", "package"])
def test_link_planted_beside_the_script_grants_nothing(request, provider, who, kind):
    """The script's directory is expose-rw: a program (native code, no guard)
    makes a module link there leading outside every grant, a file of the
    user's or a whole directory. The next run, whose python-import= allows
    every module beside the script, would be granted the link's target by
    every provider and both layers (the modules of sys.path[0] are granted
    as their resolved paths): it stops instead, naming the link, and the
    secret never reaches the output. A link into an expose-* tree still
    works."""
    if provider == "firejail" and who == "nobody":
        pytest.skip("firejail refuses the user nobody (test_kernel_wrappers.py)")
    sb = request.getfixturevalue("sb" if who == "caller" else "sb_nobody")
    secret_dir = sb.mkdir("private")
    secret = sb.write("private/secret.txt", PLANTED_SECRET + "\n")
    os.chmod(secret, 0o644)
    app = sb.mkdir("app")
    sb.mkdir("data")
    sb.write("data/shared.py", "VALUE = 'shared'\n")
    prof = sb.profile(f"os-sandbox={provider}\nexpose-rw={app}\nexpose-ro={sb.path('data')}\n"
                      "python-import=*\n", rel="prof")
    target = secret if kind == "module" else secret_dir
    name = "helper.py" if kind == "module" else "pkg"
    plant = sb.write("app/plant.py", f'''
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.symlink({str(target).encode()!r}, b"{app}/{name}") == 0, ctypes.get_errno()
        assert libc.symlink(b"{sb.path('data/shared.py')}", b"{app}/shared.py") == 0
        print("planted")
        ''')
    r = sb.run("--pysandboxes-config", prof, "--py-sandbox=false", plant)
    assert r.returncode == 0 and "planted" in r.stdout, r
    assert os.path.islink(app / name)
    reader = sb.write("app/read.py", f'''
        import os
        p = "{app}/{name}"
        print(open(p).read() if os.path.isfile(p) else os.listdir(p))
        ''')
    for py_sandbox in ("true", "false"):
        r = sb.run("--pysandboxes-config", prof, f"--py-sandbox={py_sandbox}", reader)
        assert r.returncode == EXIT_CONFIG, r
        assert f"{app}/{name}, beside the script, is a symbolic link to {target}" in r.stderr, r
        assert f"expose-ro={target.parent}" in r.stderr, r
        assert PLANTED_SECRET not in r.stdout + r.stderr
        assert "secret.txt" not in r.stdout
    # A link leading into an expose-* tree is what that rule grants anyway.
    os.unlink(app / name)
    r = sb.run("--pysandboxes-config", prof, "-c", "import shared; print(shared.VALUE)",
               cwd=app)
    assert r.returncode == 0 and "shared" in r.stdout, r


@pytest.mark.parametrize("who", ["caller", "nobody"])
@pytest.mark.parametrize("kind", ["read", "write"])
def test_link_planted_in_a_writable_tree_widens_no_rule(request, who, kind):
    """A rule nested in an expose-rw tree (expose-rw=work, expose-ro=work/inputs
    or expose-rw=work/out): the program replaces the nested directory with a
    link on one run (under Landlock nothing stops it: the tree is writable),
    and the next run's rule, resolved through the link, would grant its
    target: a private directory read, or a read-only tree written. The
    profile is refused instead, naming the link, under every provider."""
    sb = request.getfixturevalue("sb" if who == "caller" else "sb_nobody")
    secret_dir = sb.mkdir("private")
    os.chmod(sb.write("private/secret.txt", PLANTED_SECRET + "\n"), 0o644)
    sb.write("data/sub/existing.txt", "ORIGINAL\n")
    work = sb.mkdir("work")
    nested = sb.mkdir("work/inputs" if kind == "read" else "work/out")
    target = secret_dir if kind == "read" else sb.path("data/sub")
    prof = sb.profile(f"expose-rw={work}\nexpose-ro={sb.path('data')}\n"
                      f"expose-{'ro' if kind == 'read' else 'rw'}={nested}\n"
                      "python-import=*\n", rel="prof")
    plant = sb.write("plant.py", f'''
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.rmdir(b"{nested}") == 0, ctypes.get_errno()
        assert libc.symlink({str(target).encode()!r}, b"{nested}") == 0, ctypes.get_errno()
        print("planted")
        ''')
    r = sb.run("--pysandboxes-config", prof, "--py-sandbox=false", "--os-sandbox=landlock",
               plant)
    if r.returncode != 0 and LANDLOCK_ABI < 1:
        pytest.skip("the kernel has no Landlock")
    assert r.returncode == 0 and "planted" in r.stdout, r
    use = sb.write("use.py", f'''
        import os
        print(os.listdir("{nested}"))
        open("{nested}/existing.txt", "a").write("CHANGED\\n")
        ''')
    providers = ["landlock", "subprocess", "unshare"] + \
        [w for w in ("bwrap", "firejail") if HAVE_TOOL[w] and not (w == "firejail" and sb.prefix)]
    for provider in providers:
        r = sb.run("--pysandboxes-config", prof, f"--os-sandbox={provider}", "--py-sandbox=false",
                   use)
        assert r.returncode == EXIT_CONFIG, (provider, r)
        assert f"leads through the symbolic link {nested}, inside expose-rw={work}" in r.stderr, r
        assert f"={target}) if it is meant" in r.stderr, r
        assert "secret.txt" not in r.stdout
    assert sb.path("data/sub/existing.txt").read_text() == "ORIGINAL\n"


@pytest.mark.parametrize("who", ["caller", "nobody"])
@pytest.mark.parametrize("provider", ["landlock", "unshare", "bwrap"])
def test_python_sb_in_a_writable_tree_refuses_to_start(request, sb_bin, provider, who):
    """python-sb installed inside a directory the profile exposes read-write
    (~/.local/bin in an exposed home): the program replaced it by a shell
    script on one run, which then ran unconfined as the caller at the next
    start, before any boundary. python-sb refuses such a layout before it
    runs anything, and the program never gets the chance."""
    if provider == "landlock" and LANDLOCK_ABI < 1:
        pytest.skip("the kernel has no Landlock")
    if provider == "bwrap" and not HAVE_TOOL["bwrap"]:
        pytest.skip("bwrap is not installed")
    sb = request.getfixturevalue("sb" if who == "caller" else "sb_nobody")
    bindir = sb.mkdir("tools/bin")
    copy = bindir / "python-sb"
    shutil.copy2(sb_bin, copy)
    # The hooked copy (meson install's) loads its library by a path relative
    # to itself ($ORIGIN): it comes along, into the same writable tree.
    hook = re.search(rb"\$ORIGIN/([^\0]*python-sb-hook\.so)", Path(sb_bin).read_bytes())
    if hook:
        lib = bindir / hook.group(1).decode()
        lib.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(sb_bin).parent / hook.group(1).decode(), lib)
    if sb.owner:
        for dirpath, _, filenames in os.walk(sb.path("tools")):
            os.chown(dirpath, *sb.owner)
            for name in filenames:
                os.chown(os.path.join(dirpath, name), *sb.owner)
    marker = sb.path("UNCONFINED")
    sb.profile(f"os-sandbox={provider}\nexpose-rw={sb.path('tools')}\npython-import=*\n",
               rel="prof")
    sb.write("plant.py", f'''
        import os
        p = {str(copy)!r}
        os.rename(p, p + ".orig")
        with open(p, "w") as f:
            f.write("#!/bin/sh\\necho ran > {marker}\\nexec " + p + ".orig \\"$@\\"\\n")
        os.chmod(p, 0o755)
        print("planted")
        ''')
    for args in ([str(sb.path("plant.py"))], ["-c", "print('second run')"]):
        cmd = sb.prefix + [str(copy), "--pysandboxes-config", str(sb.path("prof"))] + args
        r = subprocess.run(cmd, cwd=str(sb.root), capture_output=True, text=True,
                           timeout=TIMEOUT, env={"PATH": "/usr/bin:/bin", **SANITIZER_ENV},
                           stdin=subprocess.DEVNULL)
        assert r.returncode == EXIT_CONFIG, r
        assert f"{copy}, which runs before the sandbox at every start, is inside " \
               f"expose-rw={sb.path('tools')}" in r.stderr, r
        assert "planted" not in r.stdout and "second run" not in r.stdout
    assert os.path.isfile(copy) and not os.path.exists(str(copy) + ".orig")
    assert not marker.exists()
