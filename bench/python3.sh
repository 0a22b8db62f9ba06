#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Start-up against the interpreter users actually have (issue 19): python-sb
# in the shapes a user runs it, against Debian's /usr/bin/python3 (LTO + PGO),
# on `-c pass` and on a realistic small program (bench/workload-small.py:
# json, re, collections, statistics; ~28 ms). python-ref (the same interpreter
# from the archive python-sb links, same layout) is measured alongside for
# attribution: python-ref / python3 is the layout gap no python-sb code can
# close. Method and results: bench/README.md, "Against /usr/bin/python3".
#
# Usage: bench/python3.sh [BUILD_DIR]   (from any directory)
#
#   BUILD_DIR   as for bench/startup.sh: a release build to reuse, or a new
#               directory to set one up in; default: a temporary directory.
#
# Environment: PYTHON_SB, PYTHON_REF, PYTHON3, KEEP_BUILD as for startup.sh, and
#   IRUNS       rounds of each interleaved run (default 200)
#   WORKLOADS   which to run: "pass small" (default), or one of them
#   MAX_RATIO   threshold for python-sb-landlock-timeout / python3 (and for
#               hooked-landlock-timeout when it runs), the median
#               of the per-round wall-time ratios (1.05, issue 19's goal)
#   OUT_DIR     where the interleaved runs' JSON goes (default: a new temp dir)
#   CALLGRIND=0 skip the instruction counts (valgrind --tool=callgrind; only the
#               variants without a kernel layer: valgrind 3.19 cannot run
#               Landlock or seccomp, see instructions.sh)
#
# Every command runs in the one environment of common.sh with PYTHONHASHSEED=0
# (identical work in every run). The variants, each a profile of
# common.sh's shape (python-import=*, env= HOME, LANG, PATH):
#   python3                      /usr/bin/python3: the baseline
#   python-ref                   the same interpreter from Debian's archive, python-sb's layout
#   python-sb-none-noguard       os-sandbox=none, py-sandbox=false: the launcher alone
#   python-sb-none               os-sandbox=none: the launcher and the Python guard
#   python-sb-landlock           Landlock + seccomp + limit-cpu/-memory/-open-files (kernel.sh's)
#   python-sb-landlock-timeout   the same + timeout=10s: the default shape a service runs
#   hooked-*                     the same four shapes run by the hooked copy: Debian's
#                                python3.11 with python-sb-hook.so added as a needed library
#                                (what meson install installs, docs/development.md); when
#                                the build has the library and patchelf is there, or
#                                PYTHON_SB_HOOKED names an installed one
#
# Exit status: 0 when every workload's python-sb-landlock-timeout / python3 is
# within MAX_RATIO, 1 when one is above it, 2 on a setup error.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

IRUNS=${IRUNS:-200}
MAX_RATIO=${MAX_RATIO:-1.05}
WORKLOADS=${WORKLOADS:-pass small}
# shellcheck disable=SC2034  # read by common.sh
EXTRA_ENV="PYTHONHASHSEED=${PYTHONHASHSEED:-0}"

bench_setup "$@"
bench_kernel_profiles
bench_write_profile "$profile_dir/noguard.py-sandboxes" os-sandbox=none py-sandbox=false
bench_out_dir python3
# In the profile directory: the cwd, granted by the landlock profiles' expose-ro.
cp -- "$bench_here/workload-small.py" "$profile_dir/workload-small.py"

# The hooked copy, as meson install makes it (common.sh).
bench_hooked

cfg() { printf '%s --pysandboxes-config %s' "${2:-$sb}" "$profile_dir/$1.py-sandboxes"; }
variants=(
    "python3=$PYTHON3"
    "python-ref=$ref"
    "python-sb-none-noguard=$(cfg noguard)"
    "python-sb-none=$(cfg none)"
    "python-sb-landlock=$(cfg landlock)"
    "python-sb-landlock-timeout=$(cfg landlock-timeout)"
)
gates=(--gate "python-sb-landlock-timeout=$MAX_RATIO")
if [[ -n $hooked ]]; then
    variants+=(
        "hooked-none-noguard=$(cfg noguard "$hooked")"
        "hooked-none=$(cfg none "$hooked")"
        "hooked-landlock=$(cfg landlock "$hooked")"
        "hooked-landlock-timeout=$(cfg landlock-timeout "$hooked")"
    )
    gates+=(--gate "hooked-landlock-timeout=$MAX_RATIO")
fi

# The small program must print the same in every variant: the same work.
want=$("${clean_env[@]}" "$PYTHON3" workload-small.py) || die "workload-small.py fails with $PYTHON3"
for v in "${variants[@]}"; do
    # shellcheck disable=SC2086  # a command line, split on purpose
    got=$("${clean_env[@]}" ${v#*=} workload-small.py) || die "${v%%=*}: workload-small.py fails"
    [[ $got == "$want" ]] || die "${v%%=*}: workload-small.py prints something else than with python3"
done

wl_args() {
    case $1 in
    pass) printf '%s' "-c pass" ;;
    small) printf '%s' "workload-small.py" ;;
    *) die "WORKLOADS: unknown workload '$1' (pass, small)" ;;
    esac
}

# Instructions: independent of the machine's load, so they attribute what the
# wall-clock runs cannot resolve on a busy machine.
if [[ ${CALLGRIND:-1} != 0 ]]; then
    command -v valgrind >/dev/null || die "valgrind not found (apt-get install valgrind, or CALLGRIND=0)"
    for w in $WORKLOADS; do
        args=$(wl_args "$w")
        echo "== instructions ($w: $args; valgrind --tool=callgrind, I refs)"
        base_n=
        for v in "${variants[@]}"; do
            # valgrind cannot run Landlock or seccomp (instructions.sh).
            [[ ${v%%=*} == *landlock* ]] && continue
            # shellcheck disable=SC2086  # command lines, split on purpose
            n=$("${clean_env[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
                ${v#*=} $args 2>&1 >/dev/null | sed -n 's/^==[0-9]*== I *refs: *//p' | tr -d ,)
            [[ -n $n ]] || die "${v%%=*}: no instruction count from valgrind"
            base_n=${base_n:-$n}
            awk -v name="${v%%=*}" -v n="$n" -v b="$base_n" \
                'BEGIN { printf "%-26s %12d  %.4f (%+d)\n", name, n, n / b, n - b }'
        done
    done
fi

echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs" >&2
# A run queue longer than the CPUs makes every start wait for a CPU: the wall
# times are then mostly that wait, and their ratios (and the gate) say little.
if awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v n="$(nproc)" 'BEGIN { exit !(l > n) }'; then
    echo "$bench_name: warning: load average above the number of CPUs: read the CPU-time" \
        "ratios and the instruction counts, not the wall-clock ratios or the gate" >&2
fi
status=0
for w in $WORKLOADS; do
    args=$(wl_args "$w")
    cmds=()
    for v in "${variants[@]}"; do cmds+=("$v $args"); done
    echo "== $w ($args): $IRUNS interleaved rounds after 10 warm-up rounds" >&2
    "${clean_env[@]}" "$PYTHON3" "$bench_here/interleave.py" --runs "$IRUNS" \
        --json "$out/python3-$w.json" "${gates[@]}" \
        "${cmds[@]}" || status=$?
    echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
exit "$status"
