#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Instruction counts (valgrind --tool=callgrind, "I refs") of `-c pass` for
# python-ref, python-sb (os-sandbox=subprocess) and /usr/bin/python3: unlike
# wall time, they do not depend on the machine's load. Method: bench/README.md.
#
# Usage: bench/instructions.sh [BUILD_DIR]   (same build options as startup.sh:
# PYTHON_SB/PYTHON_REF, PYTHON3, KEEP_BUILD; EXTRA_ENV is set here)
#
# PYTHONHASHSEED is fixed (default 0, override with PYTHONHASHSEED=N) in every
# command's environment and passed by the profile: with random hashing the
# count of one binary varies by about ±0.2 % from run to run.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

command -v valgrind >/dev/null || die "valgrind not found (Debian/Ubuntu: apt-get install valgrind)"
EXTRA_ENV="PYTHONHASHSEED=${PYTHONHASHSEED:-0}"
bench_setup "$@"

irefs() {
    local log
    log=$("${clean_env[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1) ||
        die "valgrind $* failed: $log"
    sed -n 's/^==[0-9]*== I *refs: *//p' <<<"$log" | tr -d ,
}

declare -A n
n[python3]=$(irefs "$PYTHON3" -c pass)
n[python-ref]=$(irefs "$ref" -c pass)
n[python-sb]=$(irefs "$sb" -c pass)
n[python-sb-strict]=$(irefs "$sb" --pysandboxes-config "$profile_dir/strict.py-sandboxes" -c pass)
n[python3-I]=$(irefs "$PYTHON3" -I -c pass)
n[python-ref-I]=$(irefs "$ref" -I -c pass)
n[python-sb-I]=$(irefs "$sb" -I -c pass)

echo "${EXTRA_ENV}; cwd $profile_dir"
for k in python3 python-ref python-sb python-sb-strict python3-I python-ref-I python-sb-I; do
    printf '%-18s %12d I refs\n' "$k" "${n[$k]}"
done
ratio() {
    awk -v a="${n[$1]}" -v b="${n[$2]}" -v l="$1 / $2" \
        'BEGIN { printf "%-30s %.4f (%+d instructions)\n", l, a / b, a - b }'
}
echo
ratio python-sb python-ref
ratio python-sb python3
ratio python-ref python3
ratio python-sb-strict python-ref
ratio python-sb-I python-ref-I
ratio python-sb-I python3-I
