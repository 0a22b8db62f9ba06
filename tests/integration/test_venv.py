# SPDX-License-Identifier: MIT
"""VIRTUAL_ENV naming a real venv makes the embedded interpreter use it."""

import glob
import os
import subprocess

import pytest

from conftest import LANDLOCK_ABI, SANITIZER_ENV, TIMEOUT

PROVIDERS = ["subprocess", pytest.param("landlock", marks=pytest.mark.skipif(
    LANDLOCK_ABI < 1, reason="the kernel has no Landlock"))]

PROFILE = "os-sandbox=none\npython-import=sys,sbvenvmod\n"


def test_venv_prefix_and_site_packages(sb, venv_dir):
    r = sb.run_code(PROFILE, "import sys, sbvenvmod\n"
                             "print(sys.prefix)\nprint(sbvenvmod.VALUE)\n"
                             "print(sbvenvmod.__file__)\n",
                    env={"VIRTUAL_ENV": str(venv_dir)})
    assert r.returncode == 0, r
    prefix, value, origin = r.stdout.splitlines()
    assert prefix == str(venv_dir)
    assert value == "from-venv"
    assert origin.startswith(str(venv_dir) + "/lib/")


def test_venv_base_prefix_is_the_real_installation(sb, venv_dir):
    r = sb.run_code(PROFILE, "import sys\nprint(sys.base_prefix != sys.prefix)\n",
                    env={"VIRTUAL_ENV": str(venv_dir)})
    assert (r.returncode, r.stdout) == (0, "True\n"), r


def test_without_virtual_env_the_module_is_absent(sb, venv_dir):
    r = sb.run_code(PROFILE, "import sys\nprint(sys.prefix == sys.base_prefix)\n"
                             "import sbvenvmod\n")
    assert r.returncode == 1, r
    assert r.stdout == "True\n"
    assert "ModuleNotFoundError: No module named 'sbvenvmod'" in r.stderr


def test_virtual_env_without_pyvenv_cfg_is_ignored(sb, venv_dir):
    fake = sb.mkdir("fakevenv/lib")
    r = sb.run_code(PROFILE, "import sys\nprint(sys.prefix == sys.base_prefix)\n",
                    env={"VIRTUAL_ENV": str(fake.parent)})
    assert (r.returncode, r.stdout) == (0, "True\n"), r


def test_venv_module_still_guarded(sb, venv_dir):
    r = sb.run_code("os-sandbox=none\npython-import=sys\n", "import sbvenvmod\n",
                    env={"VIRTUAL_ENV": str(venv_dir)})
    assert r.returncode == 1, r
    assert "Module named 'sbvenvmod' is not allowed by a rule" in r.stderr


def test_virtual_env_not_leaked_to_program(sb, venv_dir):
    r = sb.run_code("os-sandbox=none\npython-import=os\n",
                    "import os\nprint(os.environ.get('VIRTUAL_ENV'))\n",
                    env={"VIRTUAL_ENV": str(venv_dir)})
    assert (r.returncode, r.stdout) == (0, "None\n"), r


def test_m_module_profile_found_in_venv_site_packages(sb, venv_dir):
    sb.profile("os-sandbox=none\npython-import=json\n")  # decoy in cwd
    r = sb.run("-m", "sbvenvpkg", env={"VIRTUAL_ENV": str(venv_dir)})
    assert (r.returncode, r.stdout) == (0, "VENVPKG-MAIN\n"), r
    r = sb.run("--explain", "-m", "sbvenvpkg", env={"VIRTUAL_ENV": str(venv_dir)})
    assert r.returncode == 0, r
    assert "# rule file: " + str(venv_dir) in r.stdout
    assert "sbvenvpkg/.py-sandboxes" in r.stdout


# ---- venvs of other interpreters (issue 17, item 6) -------------------------

def _venv_copy(sb, venv_dir, name, **cfg):
    """A venv of /usr/bin/python3 whose pyvenv.cfg says other things."""
    d = sb.mkdir(name)
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(d)], check=True,
                   timeout=120, capture_output=True)
    lines = (d / "pyvenv.cfg").read_text().splitlines()
    out = [line for line in lines if line.partition("=")[0].strip() not in cfg]
    out += [f"{k} = {v}" for k, v in cfg.items()]
    (d / "pyvenv.cfg").write_text("\n".join(out) + "\n")
    return d


def _other_311():
    """Another CPython of the embedded version (a pyenv build), or None."""
    real = os.path.realpath("/usr/bin/python3")
    for c in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.11*/bin/python3.11"))):
        if os.path.realpath(c) != real and os.access(c, os.X_OK):
            return c
    return None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_venv_of_another_same_version_interpreter(sb, py_version, provider, tmp_path):
    """pyvenv.cfg's home names another installation of the same version:
    the embedded interpreter keeps its own standard library (the other one's
    is not in the boundary's grants: it crashed with a codec error)."""
    other = tmp_path / "other"
    (other / "bin").mkdir(parents=True)
    (other / "lib" / f"python{py_version[0]}.{py_version[1]}").mkdir(parents=True)
    (other / "lib" / f"python{py_version[0]}.{py_version[1]}" / "os.py").write_text("")
    venv = _venv_copy(sb, None, "othervenv", home=str(other / "bin"))
    site = venv / "lib" / f"python{py_version[0]}.{py_version[1]}" / "site-packages"
    (site / "othermod.py").write_text("VALUE = 'other'\n")
    r = sb.run_code(f"os-sandbox={provider}\npython-import=sys,othermod\n",
                    "import sys, othermod\nprint(sys.prefix, sys.base_prefix, othermod.VALUE)\n",
                    env={"VIRTUAL_ENV": str(venv)})
    assert r.returncode == 0, r
    assert r.stdout.split() == [str(venv), "/usr", "other"]


def test_venv_of_a_pyenv_interpreter(sb, tmp_path):
    py = _other_311()
    if not py:
        pytest.skip("no other CPython 3.11 (pyenv) on this machine")
    venv = tmp_path / "pyenvvenv"
    subprocess.run([py, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120,
                   capture_output=True)
    r = sb.run_code("os-sandbox=landlock\npython-import=sys\n" if LANDLOCK_ABI else
                    "os-sandbox=subprocess\npython-import=sys\n",
                    "import sys\nprint(sys.prefix, sys.base_prefix)\n",
                    env={"VIRTUAL_ENV": str(venv)})
    assert r.returncode == 0, r
    assert r.stdout.split() == [str(venv), "/usr"]


def test_venv_of_another_version_is_refused(sb):
    venv = _venv_copy(sb, None, "v312", version="3.12.1")
    r = sb.run_code(PROFILE, "print('ran')\n", env={"VIRTUAL_ENV": str(venv)})
    assert r.returncode == 255, r
    assert r.stdout == ""
    assert (f"python-sb: cannot use the virtual environment: the virtual environment "
            f"'{venv}' (VIRTUAL_ENV) was made by Python 3.12") in r.stderr
    assert "python3.12 -m venv" not in r.stderr
    assert "-Dpython=python3.12" in r.stderr


def test_python_sb_linked_into_the_venv_uses_it(sb, venv_dir):
    """As CPython: the pyvenv.cfg beside the bin/ it was started from, with no
    VIRTUAL_ENV set."""
    link = venv_dir / "bin" / "python-sb"
    if not link.exists():
        link.symlink_to(sb.binary)
    sb.profile(PROFILE)
    s = sb.script("import sys, sbvenvmod\nprint(sys.prefix, sbvenvmod.VALUE)\n")
    env = sb.env()
    env.update(SANITIZER_ENV)
    p = subprocess.run([str(link), str(s)], cwd=str(sb.root), capture_output=True, text=True,
                       timeout=TIMEOUT, env=env, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [str(venv_dir), "from-venv"]
    # Found on PATH, as `python-sb` typed in an activated shell.
    env["PATH"] = f"{venv_dir}/bin:/usr/bin:/bin"
    p = subprocess.run(["python-sb", str(s)], cwd=str(sb.root), capture_output=True,
                       text=True, timeout=TIMEOUT, env=env, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [str(venv_dir), "from-venv"]


def test_without_a_venv_the_prefix_is_the_interpreters_home(sb):
    """python-sb names the interpreter's home (embed.c: getpath's search
    skipped): the same prefix and stdlib as /usr/bin/python3."""
    code = ("import sys; print(sys.prefix, sys.exec_prefix,"
            " [p for p in sys.path if p.startswith('/usr/lib/python')])")
    want = subprocess.run(["/usr/bin/python3", "-I", "-c", code], capture_output=True,
                          text=True, timeout=TIMEOUT).stdout
    r = sb.run_code("os-sandbox=none\npython-import=sys\n", code)
    assert (r.returncode, r.stdout) == (0, want), r


def test_pythonhome_the_profile_passes_is_honoured(sb):
    """PYTHONHOME in the program's environment still decides the home: a home
    without a standard library stops the interpreter's start."""
    empty = sb.mkdir("empty-home")
    r = sb.run_code(f"os-sandbox=none\nenv=PYTHONHOME={empty}\n", "print('ran')\n")
    assert r.returncode != 0, r
    assert "ran" not in r.stdout, r
    assert f"PYTHONHOME = '{empty}'" in r.stderr, r
    assert "failed to get the Python codec" in r.stderr, r
