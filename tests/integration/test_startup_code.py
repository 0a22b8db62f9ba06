# SPDX-License-Identifier: MIT
"""Code the interpreter runs at start-up, before the guard is armed: site's
.pth files and the modules they import, sitecustomize and usercustomize. A program that could write them
would run unguarded in every later python-sb of the user (any profile): no
grant lets it write them. Root and nobody; the guard alone (os-sandbox=none)
and with the subprocess provider."""

import pytest

WHO = ["root", "nobody"]
PROVIDERS = ["none", "subprocess"]

PLANT = '''\
import os, sys
home = os.environ["HOME"]
site = os.path.join(home, ".local", "lib",
                    "python%d.%d" % sys.version_info[:2], "site-packages")
code = "import os; open(%r, 'w').write('ran')\\n" % os.path.join(home, "MARKER")
# Debian's sitecustomize imports apport_python_hook, a .pth file certifi: the
# user site comes first on sys.path.
for path in (os.path.join(site, "evil.pth"), os.path.join(site, "usercustomize.py"),
             os.path.join(home, "sitecustomize.py"),
             os.path.join(site, "apport_python_hook.py")):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(code if not path.endswith(".pth") else code.replace("\\n", "") + "\\n")
        print("WROTE", os.path.basename(path))
    except PermissionError as e:
        print("REFUSED", os.path.basename(path), "runs it at start-up, before the guard" in str(e))
# An ordinary file of that name elsewhere (a PyTorch checkpoint) stays writable.
open(os.path.join(home, "model.pth"), "w").write("weights")
print("END")
'''


def _sb(request, who):
    return request.getfixturevalue("sb" if who == "root" else "sb_nobody")


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("who", WHO)
def test_startup_code_cannot_be_planted(request, who, provider):
    sb = _sb(request, who)
    home = sb.mkdir("home")
    sb.profile(f"os-sandbox={provider}\nenv=HOME=${{HOME}}\nexpose-rw={home}\n"
               "python-import=os, sys\n")
    s = sb.script(PLANT)
    r = sb.run(s, env={"HOME": str(home)})
    assert r.returncode == 0 and "END" in r.stdout, r
    assert "WROTE" not in r.stdout, r
    assert r.stdout.count("REFUSED") == 4 and "False" not in r.stdout, r
    assert (home / "model.pth").read_text() == "weights"
    # The next start (any profile) runs nothing of the program's.
    r = sb.run("-c", "pass", env={"HOME": str(home)})
    assert not (home / "MARKER").exists(), r
