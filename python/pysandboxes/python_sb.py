# SPDX-License-Identifier: MIT
"""`python -m pysandboxes.python_sb [option] ... [-c cmd | -m mod | file | -] [arg] ...`

python-sb, started from an ordinary interpreter: the python-sb this package
was installed with (PYSANDBOXES_PYTHON_SB overrides), with the same arguments.
Run from a virtual environment's python, python-sb uses that environment."""

import os
import sys

from . import _core


def main():
    exe = os.environ.get("PYSANDBOXES_PYTHON_SB") or _core.PYTHON_SB
    if not os.access(exe, os.X_OK):
        print(f"python-sb not found at '{exe}': install py-sandboxes or set "
              "PYSANDBOXES_PYTHON_SB", file=sys.stderr)
        return 2
    env = os.environ
    if sys.prefix != sys.base_prefix and "VIRTUAL_ENV" not in env:
        # This interpreter's venv, as activation would name it.
        env = dict(env, VIRTUAL_ENV=sys.prefix)
    os.execve(exe, [exe] + sys.argv[1:], env)


if __name__ == "__main__":
    sys.exit(main())
