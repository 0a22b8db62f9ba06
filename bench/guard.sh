#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Guard overhead (issue #3): python-sb running an import- and file-heavy
# workload (bench/workload-guard.py: ~120 standard-library modules imported,
# 3000 small files listed, stat'ed, opened and read, a pathlib glob) with the
# Python guard (py-sandbox=true) against the very same run without it
# (py-sandbox=false). Method and results: bench/README.md, "Guard overhead".
#
# Usage: bench/guard.sh [BUILD_DIR]      (from any directory)
#
#   BUILD_DIR   as for bench/startup.sh: a release build to reuse, or a new
#               directory to set one up in; default: a temporary directory.
#
# Environment: PYTHON_SB, PYTHON_REF, PYTHON3, KEEP_BUILD as for startup.sh, and
#   OUT_DIR        where guard.json/guard.md go (default: a new temp dir)
#   RUNS, WARMUP   hyperfine runs/warm-ups per command (default 40, 5)
#   IRUNS          rounds of the interleaved run (default 60)
#   MAX_RATIO      threshold for guard / no guard, os-sandbox=none, the median of
#                  the per-round ratios of the interleaved run (1.05)
#   DIRS, FILES    shape of the data directory (default 30 directories x 100 files)
#   CALLGRIND=0    skip the instruction counts
#   PYTHONHASHSEED fixed in every command's environment (default 0, as
#                  instructions.sh): identical work in every run
#
# The profiles differ only in py-sandbox=true|false. The gate is on
# os-sandbox=none, which loads no kernel layer: what is measured is the guard
# alone (audit hook, C wrappers, decisions), not Landlock's or seccomp's
# per-call cost, which py-sandbox does not change and which would only add
# noise to both sides; and valgrind cannot run the seccomp filter (see
# instructions.sh), so only `none` gets instruction counts. The same pair with
# os-sandbox=subprocess is measured for information.
#
# Exit status: 0 when the ratio is within MAX_RATIO, 1 when above it, 2 on a
# setup error.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

RUNS=${RUNS:-40}
WARMUP=${WARMUP:-5}
MAX_RATIO=${MAX_RATIO:-1.05}
IRUNS=${IRUNS:-60}
DIRS=${DIRS:-30}
FILES=${FILES:-100}
command -v hyperfine >/dev/null ||
    die "hyperfine not found (Debian/Ubuntu: apt-get install hyperfine)"
if [[ ${CALLGRIND:-1} != 0 ]] && ! command -v valgrind >/dev/null; then
    die "valgrind not found (apt-get install valgrind, or CALLGRIND=0)"
fi
# shellcheck disable=SC2034  # read by common.sh
EXTRA_ENV="PYTHONHASHSEED=${PYTHONHASHSEED:-0}"
workload=$bench_here/workload-guard.py
[[ -r $workload ]] || die "$workload is missing"

bench_setup "$@"
bench_out_dir guard

# The data directory: outside the profile directory (the cwd, an implicit
# read grant as sys.path[0] of -c) so that only its expose-ro rule grants it.
data=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-guard-data.XXXXXX")
bench_cleanup_dirs+=("$data")
"$PYTHON3" - "$data" "$DIRS" "$FILES" <<'EOF'
import os, sys
data, dirs, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for d in range(dirs):
    dn = os.path.join(data, "d%02d" % d)
    os.mkdir(dn)
    for f in range(files):
        # 10 bytes to ~700: small files, various sizes.
        with open(os.path.join(dn, "f%03d.txt" % f), "w") as fh:
            fh.write(("d%02d/%d\n" % (d, f)) * (1 + (d * files + f) % 40))
EOF

# Four profiles of the same shape (bench_write_profile adds python-import=*
# and the env= rules), differing in py-sandbox and os-sandbox only.
for os_sb in none subprocess; do
    for py in true false; do
        bench_write_profile "$profile_dir/guard-$py-$os_sb.py-sandboxes" \
            "os-sandbox=$os_sb" "py-sandbox=$py" "expose-ro=$data"
        explain=$(bench_explain_check "$os_sb" --pysandboxes-config "$profile_dir/guard-$py-$os_sb.py-sandboxes")
        grep -q "^py-sandbox=$py " <<<"$explain" ||
            die "guard-$py-$os_sb.py-sandboxes: --explain does not show py-sandbox=$py"
    done
done

# The same work everywhere: each variant prints the same checksum as python3.
want=$("${clean_env[@]}" "$PYTHON3" "$workload" "$data") || die "$PYTHON3 $workload failed"
for p in "$profile_dir"/guard-*.py-sandboxes; do
    got=$("${clean_env[@]}" "$sb" --pysandboxes-config "$p" "$workload" "$data") ||
        die "python-sb with $(basename -- "$p") fails on the workload"
    [[ $got == "$want" ]] || die "$(basename -- "$p"): '$got', python3: '$want'"
done
echo "== workload: $want" >&2

cfg() { printf -- "--pysandboxes-config %s" "$(q "$profile_dir/guard-$1.py-sandboxes")"; }
echo "== hyperfine: $RUNS runs after $WARMUP warm-ups per command; cwd $profile_dir" >&2
"${clean_env[@]}" hyperfine -N --warmup "$WARMUP" --runs "$RUNS" \
    --export-json "$out/guard.json" --export-markdown "$out/guard.md" \
    -n guard-none "$(q "$sb") $(cfg true-none) $(q "$workload") $(q "$data")" \
    -n noguard-none "$(q "$sb") $(cfg false-none) $(q "$workload") $(q "$data")" \
    -n guard-subprocess "$(q "$sb") $(cfg true-subprocess) $(q "$workload") $(q "$data")" \
    -n noguard-subprocess "$(q "$sb") $(cfg false-subprocess) $(q "$workload") $(q "$data")" \
    -n python-ref "$(q "$ref") $(q "$workload") $(q "$data")"

bench_ratios "$out/guard.json" "$MAX_RATIO" guard-none/noguard-none \
    guard-none/noguard-none guard-subprocess/noguard-subprocess \
    noguard-none/python-ref || true

# The same pair round-robin (bench/interleave.py): hyperfine's blocks drift
# with the load of this shared machine; the median of the per-round ratios
# does not. This run decides the exit status. interleave.py splits commands
# on spaces and takes no shell quoting (the temporary paths have none).
echo "== interleaved: $IRUNS rounds after 10 warm-up rounds" >&2
status=0
"${clean_env[@]}" "$PYTHON3" "$bench_here/interleave.py" --runs "$IRUNS" \
    --json "$out/guard-interleaved.json" --gate "guard-none=$MAX_RATIO" \
    noguard-none="$sb --pysandboxes-config $profile_dir/guard-false-none.py-sandboxes $workload $data" \
    guard-none="$sb --pysandboxes-config $profile_dir/guard-true-none.py-sandboxes $workload $data" \
    noguard-subprocess="$sb --pysandboxes-config $profile_dir/guard-false-subprocess.py-sandboxes $workload $data" \
    guard-subprocess="$sb --pysandboxes-config $profile_dir/guard-true-subprocess.py-sandboxes $workload $data" || status=$?

# Instructions (no timing noise): os-sandbox=none only, valgrind cannot run
# the seccomp filter.
if [[ ${CALLGRIND:-1} != 0 ]]; then
    declare -A n
    for py in true false; do
        log=$("${clean_env[@]}" valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.$py" \
            "$sb" --pysandboxes-config "$profile_dir/guard-$py-none.py-sandboxes" "$workload" "$data" 2>&1) ||
            die "valgrind failed: $log"
        n[$py]=$(sed -n 's/^==[0-9]*== I *refs: *//p' <<<"$log" | tr -d ,)
    done
    echo
    printf '%-24s %14d I refs\n' guard-none "${n[true]}" noguard-none "${n[false]}"
    awk -v a="${n[true]}" -v b="${n[false]}" \
        'BEGIN { printf "%-24s %14.4f (%+d instructions)\n", "guard / noguard", a / b, a - b }'
    echo "profiles: callgrind_annotate --inclusive=yes $out/callgrind.true" >&2
fi
echo "results: $out/guard.json $out/guard.md" >&2
exit "$status"
