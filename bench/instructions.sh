#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Instruction counts (valgrind --tool=callgrind, "I refs") of `-c pass` for
# python-ref, python-sb and /usr/bin/python3: unlike wall time, they do not
# depend on the machine's load. Method: bench/README.md.
#
# Usage: bench/instructions.sh [BUILD_DIR]   (same build options as startup.sh:
# PYTHON_SB/PYTHON_REF, PYTHON3, KEEP_BUILD; EXTRA_ENV is set here)
#
# PYTHONHASHSEED is fixed (default 0, override with PYTHONHASHSEED=N) in every
# command's environment and passed by the profile: with random hashing the
# count of one binary varies by about ±0.2 % from run to run.
#
# The python-sb rows:
#   python-sb           ./.py-sandboxes (os-sandbox=subprocess: guard + seccomp)
#   python-sb-none      the same with --os-sandbox=none: launcher and guard, no
#                       kernel layer (what python-sb was before the kernel boundary)
#   python-sb-landlock  landlock.py-sandboxes (Landlock + seccomp + limits, as
#                       bench/kernel.sh)
# valgrind runs the program's system calls itself and refuses those it does not
# know: 3.19 (Debian 12) knows neither seccomp (317) nor landlock_create_ruleset
# (444), so python-sb cannot apply its kernel layer under it and stops. Such a
# row is reported as skipped, with the syscall, instead of failing the script.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

command -v valgrind >/dev/null || die "valgrind not found (Debian/Ubuntu: apt-get install valgrind)"
EXTRA_ENV="PYTHONHASHSEED=${PYTHONHASHSEED:-0}"
bench_setup "$@"
bench_kernel_profiles

declare -A n skipped
# irefs NAME COMMAND...: n[NAME] = I refs, or skipped[NAME] = why.
irefs() {
    local name=$1 log status=0 sys
    shift
    log=$("${clean_env[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1) ||
        status=$?
    if ((status)); then
        sys=$(sed -n 's/^--[0-9]*-- WARNING: unhandled [a-z0-9]*-linux syscall: \([0-9]*\)$/\1/p' <<<"$log" |
            sort -u | tr '\n' ' ')
        [[ -n $sys ]] || die "valgrind $* failed: $log"
        skipped[$name]="valgrind $(valgrind --version | sed 's/^valgrind-//') does not handle syscall ${sys% }"
        return
    fi
    n[$name]=$(sed -n 's/^==[0-9]*== I *refs: *//p' <<<"$log" | tr -d ,)
}

none=--os-sandbox=none
strict=(--pysandboxes-config "$profile_dir/strict.py-sandboxes")
irefs python3 "$PYTHON3" -c pass
irefs python-ref "$ref" -c pass
irefs python-sb "$sb" -c pass
irefs python-sb-none "$sb" "$none" -c pass
irefs python-sb-landlock "$sb" --pysandboxes-config "$profile_dir/landlock.py-sandboxes" -c pass
irefs python-sb-strict "$sb" "${strict[@]}" -c pass
irefs python-sb-strict-none "$sb" "$none" "${strict[@]}" -c pass
irefs python3-I "$PYTHON3" -I -c pass
irefs python-ref-I "$ref" -I -c pass
irefs python-sb-I "$sb" -I -c pass
irefs python-sb-none-I "$sb" "$none" -I -c pass

echo "${EXTRA_ENV}; cwd $profile_dir"
for k in python3 python-ref python-sb python-sb-none python-sb-landlock python-sb-strict \
    python-sb-strict-none python3-I python-ref-I python-sb-I python-sb-none-I; do
    if [[ -n ${n[$k]:-} ]]; then
        printf '%-22s %12d I refs\n' "$k" "${n[$k]}"
    else
        printf '%-22s %12s (%s)\n' "$k" skipped "${skipped[$k]}"
    fi
done
ratio() {
    [[ -n ${n[$1]:-} && -n ${n[$2]:-} ]] || return 0
    awk -v a="${n[$1]}" -v b="${n[$2]}" -v l="$1 / $2" \
        'BEGIN { printf "%-38s %.4f (%+d instructions)\n", l, a / b, a - b }'
}
echo
ratio python-sb python-ref
ratio python-sb-none python-ref
ratio python-sb-landlock python-ref
ratio python-sb python-sb-none
ratio python-sb-landlock python-sb
ratio python-sb python3
ratio python-sb-none python3
ratio python-ref python3
ratio python-sb-strict python-ref
ratio python-sb-strict-none python-ref
ratio python-sb-I python-ref-I
ratio python-sb-none-I python-ref-I
ratio python-sb-I python3-I
ratio python-sb-none-I python3-I
