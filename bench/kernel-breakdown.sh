#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Where the kernel boundary's start-up cost goes, for the profiles of
# bench/kernel.sh. Method and results: bench/README.md, "Kernel boundary".
#
#   1. The size of the work: paths in the Landlock ruleset (--explain),
#      landlock_add_rule and seccomp calls made, and all system calls of one
#      `-c pass` (strace -f -c), per variant.
#   2. The time of each step, inside the process and without tracing every
#      system call: uprobes (perf probe) on python-sb's sb_boundary_build,
#      sb_boundary_enter and, within it, sb_limits_apply, sb_landlock_apply and
#      sb_seccomp_apply; RUNS runs per profile, median and mean in µs. Needs
#      root, perf and a kernel with uprobe events and tracefs mounted; skipped
#      with a message otherwise. The probes are removed on exit.
#
# Usage: bench/kernel-breakdown.sh [BUILD_DIR]   (build options as startup.sh;
# RUNS: runs per profile for part 2, default 100)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

RUNS=${RUNS:-100}
command -v strace >/dev/null || die "strace not found (Debian/Ubuntu: apt-get install strace)"
bench_setup "$@"
bench_kernel_profiles

names=(python-ref python-sb-none python-sb-subprocess python-sb-landlock python-sb-landlock-timeout)
# variant NAME: sets vcmd to NAME's command line (as in bench/kernel.sh).
variant() {
    case $1 in
    python-ref) vcmd=("$ref") ;;
    python-sb-none) vcmd=("$sb" --pysandboxes-config "$profile_dir/none.py-sandboxes") ;;
    python-sb-subprocess) vcmd=("$sb") ;;
    python-sb-landlock) vcmd=("$sb" --pysandboxes-config "$profile_dir/landlock.py-sandboxes") ;;
    python-sb-landlock-timeout)
        vcmd=("$sb" --pysandboxes-config "$profile_dir/landlock-timeout.py-sandboxes") ;;
    esac
}
trace=$(mktemp "${TMPDIR:-/tmp}/py-sandboxes-strace.XXXXXX")
bench_cleanup_dirs+=("$trace")

echo "== 1. work: the Landlock ruleset of landlock.py-sandboxes lists $landlock_rules paths (--explain)"
printf '%-28s %9s %8s %8s %8s %7s\n' command syscalls failed add_rule seccomp forks
for k in "${names[@]}"; do
    variant "$k"
    "${clean_env[@]}" strace -f -qq -o "$trace" "${vcmd[@]}" -c pass
    calls=$(grep -vc -e '+++ exited' -e '--- SIG' -e 'resumed>' "$trace")
    failed=$(grep -c ') = -1 ' "$trace" || true)
    n_rules=$(grep -c 'landlock_add_rule(.*) = 0$' "$trace" || true)
    sc=$(grep -c '^[0-9]* *seccomp(' "$trace" || true)
    forks=$(grep -cE '^[0-9]* *(clone|clone3|fork|vfork)\(' "$trace" || true)
    printf '%-28s %9d %8d %8d %8d %7d\n' "$k" "$calls" "$failed" "$n_rules" "$sc" "$forks"
done

echo
echo "== 2. time of each step (uprobes; $RUNS runs per profile)"
probes=(sb_boundary_build sb_boundary_enter sb_limits_apply sb_landlock_apply sb_seccomp_apply)
if ! command -v perf >/dev/null; then
    echo "skipped: perf not found (Debian: apt-get install linux-perf)"
    exit 0
fi
# shellcheck disable=SC2317  # called by the trap
remove_probes() { perf probe -q -d 'pysbbench:*' >/dev/null 2>&1 || true; bench_cleanup; }
trap remove_probes EXIT
add_probe() { # BINARY FUNCTION: entry and return probes, named FUNCTION and FUNCTION_ret
    local err
    if ! err=$(perf probe -q -x "$1" -a "pysbbench:$2=$2" 2>&1) ||
        ! err=$(perf probe -q -x "$1" -a "pysbbench:$2_ret=$2%return" 2>&1); then
        echo "skipped: perf probe failed (root? CONFIG_UPROBE_EVENTS? tracefs mounted on" \
            "/sys/kernel/tracing?): $err"
        exit 0
    fi
}
for f in "${probes[@]}"; do add_probe "$sb" "$f"; done
# libseccomp's seccomp_load: BPF generation and the seccomp() calls.
libseccomp=$(ldd "$sb" | sed -n 's/^[[:space:]]*libseccomp[^ ]* => \([^ ]*\) .*/\1/p')
if [[ -n $libseccomp ]]; then
    add_probe "$libseccomp" seccomp_load
    probes+=(seccomp_load)
fi
# The kernel's side: time inside the landlock_* and seccomp system calls
# (syscall tracepoints, summed per process).
events='pysbbench:*'
for sc in landlock_create_ruleset landlock_add_rule landlock_restrict_self seccomp; do
    if [[ -d /sys/kernel/tracing/events/syscalls/sys_enter_$sc ]]; then
        events+=",syscalls:sys_enter_$sc,syscalls:sys_exit_$sc"
        probes+=("$sc()")
    fi
done
data=$(mktemp "${TMPDIR:-/tmp}/py-sandboxes-perf.XXXXXX")
bench_cleanup_dirs+=("$data")
for k in python-sb-subprocess python-sb-landlock; do
    variant "$k"
    # shellcheck disable=SC2016
    perf record -q -o "$data" -e "$events" -- bash -c \
        'for ((i = 0; i < $1; i++)); do "${@:2}" -c pass || exit; done' _ "$RUNS" \
        "${clean_env[@]}" "${vcmd[@]}" >/dev/null 2>&1 || die "perf record failed for $k"
    echo "-- $k"
    perf script -i "$data" --ns -F pid,time,event 2>/dev/null | "$PYTHON3" -c '
import statistics, sys
# Per process: the time between each entry and its return, summed (a system
# call made several times counts once per process, with its total).
open_, spans = {}, {}
for line in sys.stdin:
    pid, t, ev = line.split()[:3]
    t = float(t.rstrip(":"))
    group, name = ev.rstrip(":").split(":")
    if group == "syscalls":
        kind, f = name.split("_", 2)[1], name.split("_", 2)[2] + "()"
        end = kind == "exit"
    else:
        end = name.endswith("_ret__return")
        f = name[: -len("_ret__return")] if end else name
    if not end:
        open_[(pid, f)] = t
    elif (pid, f) in open_:
        per_pid = spans.setdefault(f, {})
        per_pid[pid] = per_pid.get(pid, 0) + (t - open_.pop((pid, f))) * 1e6
print("%-24s %6s %10s %10s %10s" % ("step", "runs", "median µs", "mean µs", "min µs"))
for f in sys.argv[1:]:
    v = list(spans.get(f, {}).values())
    if v:
        print("%-24s %6d %10.1f %10.1f %10.1f" % (f, len(v), statistics.median(v),
                                               statistics.fmean(v), min(v)))
' "${probes[@]}"
done
