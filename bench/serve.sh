#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# python-sb serve under load (issue 13): runs/s and latency of trivial runs
# (`print(sum(range(10)))`) through the service, measured with real load
# generators (wrk with a Lua body, and hey), side by side with the same runs
# spawned per request without any HTTP: python-sb exactly as the service's
# phase-1 runner starts it, bwrap around /usr/bin/python3, and plain
# /usr/bin/python3 for reference. Method and results: bench/README.md,
# "Service".
#
# Usage: bench/serve.sh [BUILD_DIR]
#
#   BUILD_DIR  a release build to reuse, or a new directory to set one up in;
#              default: a temporary directory.
#
# Environment:
#   DURATION     seconds of each wrk run (default 10)
#   CONNECTIONS  wrk/hey connections, also the spawn concurrency (default "2 8")
#   WORKERS      the service's workers (default: the number of CPUs)
#   RUNS         runs of each spawn baseline per round (default 300)
#   HEY_RUNS     requests of each hey run (default 300)
#   ROUNDS       rounds (default 3): every measurement once per round
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
src=$(dirname -- "$here")
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-"2 8"}
WORKERS=${WORKERS:-$(nproc)}
RUNS=${RUNS:-300}
HEY_RUNS=${HEY_RUNS:-300}
ROUNDS=${ROUNDS:-3}
die() { echo "serve.sh: $*" >&2; exit 2; }
for tool in wrk hey bwrap; do
    command -v "$tool" >/dev/null || die "$tool not found (bash scripts/deps.sh bench)"
done

cleanup_dirs=()
server_pid=
cleanup() {
    if [[ -n $server_pid ]]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" || true; fi
    if ((${#cleanup_dirs[@]})); then rm -rf -- "${cleanup_dirs[@]}"; fi
}
trap cleanup EXIT

if (($# > 0)); then
    build=$(realpath -m -- "$1")
else
    build=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-serve-bench.XXXXXX")
    cleanup_dirs+=("$build")
fi
if [[ ! -f $build/build.ninja ]]; then
    meson setup --buildtype=release -Dwerror=false "$build" "$src" >/dev/null
fi
meson compile -C "$build" python-sb python-sb-serve >/dev/null || die "build failed"
sb=$build/python-sb

# A run's directory as the service makes it, readable by nobody.
work=$(mktemp -d /tmp/py-sandboxes-serve-bench-run.XXXXXX)
cleanup_dirs+=("$work")
chmod 755 "$work"
printf 'print(sum(range(10)))\n' >"$work/main.py"
chmod 644 "$work/main.py"
cp "$src/data/serve.py-sandboxes" "$work/profile"
user_prefix=()
if [[ $(id -u) == 0 ]]; then user_prefix=(setpriv --reuid=nobody --regid=nogroup --clear-groups --); fi

echo "== machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)"
echo "== build: $build ($(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?'))"

# Each measurement prints one line: NAME c=C RUNS_PER_S P50_MS P99_MS.
spawn() { # name concurrency command...
    local name=$1 c=$2
    shift 2
    "$@" 2>&1 | awk -v n="$name" -v c="$c" '/runs\/s/ {
        for (i = 1; i <= NF; i++) { if ($i == "runs/s") r = $(i-1); if ($i == "p50") a = $(i+1); if ($i == "p99") b = $(i+1) }
        printf "%s c=%s %s %s %s\n", n, c, r, a, b }'
}
to_ms() { # wrk/hey durations: 12.3ms, 1.2s, 900us
    awk '{ v = $1; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } printf "%.2f", v }'
}
measure_wrk() { # concurrency seconds
    local out rps p50 p99
    out=$(wrk -t2 -c"$1" -d"$2s" --latency -s "$here/serve-post.lua" "$url")
    if grep -q 'Non-2xx' <<<"$out"; then die "wrk: some runs were not 200: $out"; fi
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    p50=$(awk '$1 == "50%" {print $2}' <<<"$out" | to_ms)
    p99=$(awk '$1 == "99%" {print $2}' <<<"$out" | to_ms)
    echo "serve+wrk c=$1 $rps $p50 $p99"
}
measure_hey() { # concurrency requests
    local out rps p50 p99 n
    # hey gives each connection n/c requests: a multiple of c is what it sends.
    n=$(($2 / $1 * $1))
    out=$(hey -n "$n" -c "$1" -m POST -T application/json -d '{"source": "print(sum(range(10)))\n"}' "$url")
    grep -q "\[200\]	$n responses" <<<"$out" || die "hey: some runs were not 200: $out"
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    p50=$(awk '$1 == "50%" {print $3 * 1000}' <<<"$out")
    p99=$(awk '$1 == "99%" {print $3 * 1000}' <<<"$out")
    p99=${p99:-nan}
    echo "serve+hey c=$1 $rps $p50 $p99"
}

log=$work/serve.log
"$sb" serve --listen 127.0.0.1:0 --workers "$WORKERS" --queue 1024 2>"$log" &
server_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
port=$(grep -o '127\.0\.0\.1:[0-9]*' "$log" | head -n1 | cut -d: -f2)
[[ -n $port ]] || die "the service did not start: $(cat "$log")"
url=http://127.0.0.1:$port/v1/runs
curl -sf -o /dev/null -d '{"source": "print(1)"}' "$url" || die "a run failed"

drive=(env -i PATH=/usr/bin:/bin LANG=C.UTF-8 /usr/bin/python3 "$here/spawn-load.py" --warmup 5
    --runs "$RUNS" --cwd "$work")
results=$work/results
: >"$results"
# Rounds: every measurement once per round, so that load from elsewhere on
# the machine lands on all of them alike; the medians over rounds are the
# figures.
for round in $(seq "$ROUNDS"); do
    echo "== round $round/$ROUNDS (load $(cut -d' ' -f1-3 /proc/loadavg))"
    for c in $CONNECTIONS; do
        {
            measure_wrk "$c" "$DURATION"
            measure_hey "$c" "$HEY_RUNS"
            spawn "python-sb(runner)" "$c" "${user_prefix[@]}" "${drive[@]}" --concurrency "$c" \
                "x=$sb --pysandboxes-config $work/profile --report=/dev/null --expose-ro=$work --timeout=10000ms -- main.py"
            spawn "python-sb(no-report)" "$c" "${user_prefix[@]}" "${drive[@]}" --concurrency "$c" \
                "x=$sb --pysandboxes-config $work/profile --expose-ro=$work --timeout=10000ms -- main.py"
            spawn "bwrap+python3" "$c" "${drive[@]}" --concurrency "$c" \
                "x=bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --proc /proc --dev /dev --ro-bind $work /run --chdir /run /usr/bin/python3 main.py"
            spawn "python3(no-sandbox)" "$c" "${drive[@]}" --concurrency "$c" "x=/usr/bin/python3 main.py"
        } | tee -a "$results"
    done
done
curl -s "http://127.0.0.1:$port/metrics" | grep -E '^python_sb_runs_total' | grep -v ' 0$'

echo "== medians over $ROUNDS rounds (runs/s, p50 ms, p99 ms)"
/usr/bin/python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, c, rps, p50, p99 = line.split()
    rows.setdefault((name, c), []).append((float(rps), float(p50), float(p99)))
print(f"{'what':22} {'conc':>6} {'runs/s':>8} {'p50':>8} {'p99':>8}")
for (name, c), v in rows.items():
    med = [statistics.median(x[i] for x in v) for i in range(3)]
    print(f"{name:22} {c:>6} {med[0]:8.1f} {med[1]:8.1f} {med[2]:8.1f}")
PY
