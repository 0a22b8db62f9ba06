#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The cost of the run report (issue 13): python-sb running a workload with
# --report against the very same run without it. With --report the launcher
# forks its supervisor (as with timeout=), relays stdout and stderr through a
# thread, and installs the profiling hooks (a C profile function and a C trace
# function, and a wrapper around the PyMem/PyObject allocators). Without it
# none of that exists: the hooks are never installed. Method and results:
# bench/README.md, "Run report".
#
# Usage: bench/report.sh [BUILD_DIR]
#
#   BUILD_DIR   a release build to reuse, or a new directory to set one up in
#               (as bench/startup.sh); default: a temporary directory.
#
# Environment: PYTHON_SB, PYTHON_REF, PYTHON3, KEEP_BUILD as for startup.sh, and
#   IRUNS      rounds of each interleaved run (default 30; 100 for trivial)
#   OUT_DIR    where the JSON samples go (default: a new temp dir)
#
# Workloads (bench/report-workloads/): calls.py (250k calls of a recursive
# Python function), loop.py (3M executed lines of the program's own file, no
# calls), builtins.py (json, re, sorted: time spent in C), trivial.py (one
# print: what a code-runner service mostly sees). Each is run round-robin
# (interleave.py): plain python-sb, python-sb --report=/dev/null, and
# python-sb with timeout= (the supervisor and its fork alone, no hooks), so
# that the hooks' share is the difference between the last two.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

IRUNS=${IRUNS:-30}
bench_setup "$@"
out=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-report-bench.XXXXXX")}
mkdir -p "$out"

cp "$bench_here"/report-workloads/*.py "$profile_dir"/
# The benchmark profile with Landlock, as a service would run; and the same
# with a timeout, for the supervisor alone.
bench_write_profile "$profile_dir/.py-sandboxes" os-sandbox=landlock
bench_write_profile "$profile_dir/timeout.py-sandboxes" os-sandbox=landlock timeout=60s

for w in trivial calls loop builtins; do
    runs=$IRUNS
    [[ $w == trivial ]] && runs=$((IRUNS > 100 ? IRUNS : 100))
    echo "== $w.py ($runs rounds)"
    "${clean_env[@]}" "$PYTHON3" "$bench_here/interleave.py" --runs "$runs" --warmup 3 \
        --json "$out/report-$w.json" \
        "plain=$sb $w.py" \
        "timeout=$sb --pysandboxes-config timeout.py-sandboxes $w.py" \
        "report=$sb --report=/dev/null $w.py"
done
echo "== samples in $out"
