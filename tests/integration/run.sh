#!/bin/sh
# SPDX-License-Identifier: MIT
# The pytest suite as a meson test (`meson test --suite integration`): against
# the python-sb PYTHON_SB names (scripts/test.sh: the ASan build, then a staged
# install), else the one of the build tree. PYSANDBOXES_PYTHONPATH, when set,
# names the pysandboxes package the partial-mode tests import (conftest.py
# finds the build tree's otherwise). Runs in tests/integration; arguments after
# the first two go to pytest:
#   meson test --suite integration --test-args='test_learning.py -k banner'
#
# usage: run.sh PYTHON BUILD_DIR [pytest arguments...]
set -eu
python=$1
build=$2
shift 2
export PYTHON_SB="${PYTHON_SB:-$build/python-sb}"
# An ASan launcher needs these, as scripts/test.sh sets them: CPython frees
# little at exit by design, so leak reports would be noise.
if grep -q __asan_init "$PYTHON_SB" 2>/dev/null; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
	export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
fi
cd "$(dirname "$0")"
exec "$python" -m pytest -q -p no:cacheprovider "$@"
