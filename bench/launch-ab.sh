#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A/B of python-sb's own launching work under os-sandbox=unshare and
# os-sandbox=bwrap: two release builds (a base, e.g. main's, and this
# checkout's), each as its hooked copy (docs/development.md, "Two
# binaries"), measured side by side. Method and results: bench/README.md,
# "os-sandbox=unshare" and "Wrapper providers" (the sections "without a fork"
# and "the launching side's cheap items").
#
# Usage: bench/launch-ab.sh BASE_BUILD [BUILD_DIR]
#
#   BASE_BUILD  a release build of the base (built: python-sb,
#               python-sb-supervise, python-sb-hook)
#   BUILD_DIR   as for bench/startup.sh: this checkout's release build to
#               reuse, or a new directory; default: a temporary directory.
#
# Environment: PYTHON3, EXTRA_ENV as for startup.sh, and
#   OUT_DIR     where the JSON and the callgrind files go (default: a temp dir)
#   IRUNS       rounds of the interleaved run (default 200)
#   PRUNS       runs of each perf stat (default 40)
#
# Measures, for each build:
#   - bwrap: the launching python-sb alone: instructions (callgrind,
#     --trace-children=no) and task-clock, page faults (perf stat -i: no
#     inherit, that process only);
#   - unshare: task-clock and page faults of the whole run (perf stat, the
#     processes python-sb starts included while they run);
#   - both: one interleaved run (interleave.py) with /usr/bin/python3 as the
#     baseline: wall and CPU time per round, base and new paired in a round.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

IRUNS=${IRUNS:-200}
PRUNS=${PRUNS:-40}
(($# >= 1)) || die "usage: $bench_name BASE_BUILD [BUILD_DIR]"
base_build=$(realpath -- "$1")
shift
[[ -x $base_build/python-sb ]] || die "$base_build/python-sb is not built"
command -v bwrap >/dev/null || die "bwrap is needed (Debian: bubblewrap)"

bench_setup "$@"
bench_out_dir launch-ab
bench_hooked
[[ -n $hooked ]] || die "no hooked copy of $sb (python-sb-hook.so, patchelf)"
new=$hooked
sb=$base_build/python-sb
bench_hooked
[[ -n $hooked ]] || die "no hooked copy of $sb (python-sb-hook.so, patchelf)"
base=$hooked

bench_write_profile "$profile_dir/bwrap.py-sandboxes" os-sandbox=bwrap
bench_write_profile "$profile_dir/unshare.py-sandboxes" os-sandbox=unshare \
    limit-cpu=5s limit-memory=1GB limit-open-files=256 "expose-ro=$profile_dir"
bw=(--pysandboxes-config "$profile_dir/bwrap.py-sandboxes")
us=(--pysandboxes-config "$profile_dir/unshare.py-sandboxes")
for b in "$base" "$new"; do
    for p in bw us; do
        declare -n opts=$p
        "${clean_env[@]}" "$b" "${opts[@]}" -c pass || die "$b ${opts[*]} -c pass fails here"
    done
done
echo "== base: $base_build; new: $(dirname -- "$(dirname -- "$new")") (hooked copies)" >&2
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs" >&2

if command -v valgrind >/dev/null; then
    for which in base new; do
        declare -n b=$which
        "${clean_env[@]}" valgrind --tool=callgrind --trace-children=no \
            --callgrind-out-file="$out/bwrap-launch-$which.callgrind" \
            "$b" "${bw[@]}" -c pass 2>"$out/bwrap-launch-$which.log" ||
            die "callgrind of $which failed (see $out/bwrap-launch-$which.log)"
        echo "bwrap, the launching python-sb ($which): $(grep -o 'Collected : [0-9]*' \
            "$out/bwrap-launch-$which.log" | cut -d' ' -f3) instructions (callgrind)"
    done
fi
if command -v perf >/dev/null; then
    for which in base new; do
        declare -n b=$which
        perf stat -i -r "$PRUNS" -x, -e task-clock,page-faults -o "$out/bwrap-perf-$which.csv" \
            "${clean_env[@]}" "$b" "${bw[@]}" -c pass
        echo "bwrap, the launching python-sb ($which, perf stat -i -r $PRUNS):" \
            "$(awk -F, '/task-clock/ {printf "%.3f ms task-clock (+-%s)", $1, $4} /page-faults/ {printf ", %d page faults", $1}' "$out/bwrap-perf-$which.csv")"
        perf stat -r "$PRUNS" -x, -e task-clock,page-faults -o "$out/unshare-perf-$which.csv" \
            "${clean_env[@]}" "$b" "${us[@]}" -c pass
        echo "unshare, the whole run ($which, perf stat -r $PRUNS):" \
            "$(awk -F, '/task-clock/ {printf "%.3f ms task-clock (+-%s)", $1, $4} /page-faults/ {printf ", %d page faults", $1}' "$out/unshare-perf-$which.csv")"
    done
fi

echo "== interleaved: $IRUNS rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"${clean_env[@]}" "$PYTHON3" "$bench_here/interleave.py" --runs "$IRUNS" \
    --json "$out/launch-ab.json" \
    python3="$PYTHON3 -c pass" \
    unshare-base="$base ${us[*]} -c pass" \
    unshare-new="$new ${us[*]} -c pass" \
    bwrap-base="$base ${bw[*]} -c pass" \
    bwrap-new="$new ${bw[*]} -c pass"
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# new / base, paired per round, from the samples.
"$PYTHON3" - "$out/launch-ab.json" <<'EOF'
import json, random, statistics, sys

data = json.load(open(sys.argv[1]))
samples = data.get("samples", data)

def series(name, key):
    s = samples[name]
    if key == "cpu":
        return [u + y for u, y in zip(s["user"], s["sys"])]
    return s[key]

for what in ("unshare", "bwrap"):
    for key in ("wall", "cpu"):
        a, b = series(f"{what}-base", key), series(f"{what}-new", key)
        ratios = [y / x for x, y in zip(a, b) if x > 0]
        med = statistics.median(ratios)
        rng = random.Random(0)
        boots = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(1000))
        print(f"{what} new/base ({key}): {med:.3f} [{boots[25]:.3f}, {boots[974]:.3f}];"
              f" medians {statistics.median(a):.2f} -> {statistics.median(b):.2f} ms")
EOF
echo "results: $out" >&2
