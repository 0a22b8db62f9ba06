# SPDX-License-Identifier: MIT
"""VIRTUAL_ENV naming a real venv makes the embedded interpreter use it."""

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
