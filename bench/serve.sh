#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# python-sb serve under load (issue 13): runs/s and latency of trivial runs
# (`print(sum(range(10)))`) through the service, measured with real load
# generators (wrk with a Lua body, and hey), with the fork server (the
# default runner) and with --fresh-exec, side by side with the same runs
# spawned per request without any HTTP: python-sb exactly as the
# --fresh-exec runner starts it, bwrap around /usr/bin/python3, and plain
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
#   CONNECTIONS  wrk/hey connections, also the spawn concurrency (default "2 4 8")
#   WORKERS      the service's workers (default: the number of CPUs)
#   RUNS         runs of each spawn baseline per round (default 300)
#   HEY_RUNS     requests of each hey run (default 2000)
#   ROUNDS       rounds (default 3): every measurement once per round
#   ONLY         "fork": the fork server's lines alone (wrk, hey)
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
src=$(dirname -- "$here")
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-"2 4 8"}
WORKERS=${WORKERS:-$(nproc)}
RUNS=${RUNS:-300}
HEY_RUNS=${HEY_RUNS:-2000}
ROUNDS=${ROUNDS:-3}
ONLY=${ONLY:-}
die() { echo "serve.sh: $*" >&2; exit 2; }
for tool in wrk hey bwrap; do
    command -v "$tool" >/dev/null || die "$tool not found (bash scripts/deps.sh bench)"
done

cleanup_dirs=()
server_pids=()
cleanup() {
    for pid in "${server_pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" || true
    done
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

load1() { cut -d' ' -f1 /proc/loadavg; }

# CPU time (ms) of a process and its children, live and reaped: the
# service, its fork server and the runs.
cpu_ms() { # pid
    local pid=$1 total=0 t child
    for child in "$pid" $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
        t=$(awk '{print $14 + $15 + $16 + $17}' /proc/"$child"/stat 2>/dev/null || echo 0)
        total=$((total + t))
    done
    echo $((total * 1000 / $(getconf CLK_TCK)))
}

# Each measurement prints one line: NAME c=C RUNS_PER_S P50_MS P99_MS LOAD CPU_MS_PER_RUN.
spawn() { # name concurrency command...
    local name=$1 c=$2 load
    shift 2
    load=$(load1)
    "$@" 2>&1 | awk -v n="$name" -v c="$c" -v l="$load" '/runs\/s/ {
        for (i = 1; i <= NF; i++) { if ($i == "runs/s") r = $(i-1); if ($i == "p50") a = $(i+1); if ($i == "p99") b = $(i+1) }
        printf "%s c=%s %s %s %s %s nan\n", n, c, r, a, b, l }'
}
to_ms() { # wrk/hey durations: 12.3ms, 1.2s, 900us
    awk '{ v = $1; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } printf "%.2f", v }'
}
measure_wrk() { # name pid url concurrency seconds
    local out rps p50 p99 load cpu0 cpu1 n
    load=$(load1)
    cpu0=$(cpu_ms "$2")
    out=$(wrk -t2 -c"$4" -d"$5s" --latency -s "$here/serve-post.lua" "$3")
    cpu1=$(cpu_ms "$2")
    if grep -q 'Non-2xx' <<<"$out"; then die "wrk: some runs were not 200: $out"; fi
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    n=$(awk '/requests in/ {print $1}' <<<"$out")
    p50=$(awk '$1 == "50%" {print $2}' <<<"$out" | to_ms)
    p99=$(awk '$1 == "99%" {print $2}' <<<"$out" | to_ms)
    echo "$1+wrk c=$4 $rps $p50 $p99 $load $(awk -v c=$((cpu1 - cpu0)) -v n="$n" 'BEGIN {printf "%.2f", c / n}')"
}
measure_hey() { # name pid url concurrency requests
    local out rps p50 p99 n load cpu0 cpu1
    # hey gives each connection n/c requests: a multiple of c is what it sends.
    n=$(($5 / $4 * $4))
    load=$(load1)
    cpu0=$(cpu_ms "$2")
    out=$(hey -n "$n" -c "$4" -m POST -T application/json -d '{"source": "print(sum(range(10)))\n"}' "$3")
    cpu1=$(cpu_ms "$2")
    grep -q "\[200\]	$n responses" <<<"$out" || die "hey: some runs were not 200: $out"
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    p50=$(awk '$1 == "50%" {print $3 * 1000}' <<<"$out")
    p99=$(awk '$1 == "99%" {print $3 * 1000}' <<<"$out")
    p99=${p99:-nan}
    echo "$1+hey c=$4 $rps $p50 $p99 $load $(awk -v c=$((cpu1 - cpu0)) -v n="$n" 'BEGIN {printf "%.2f", c / n}')"
}

start_server() { # log, extra options...: sets server_pid and server_url
    local log=$1 port
    shift
    "$sb" serve --listen 127.0.0.1:0 --workers "$WORKERS" --queue 1024 "$@" 2>"$log" &
    server_pid=$!
    server_pids+=("$server_pid")
    for _ in $(seq 300); do grep -q "listening on" "$log" && break; sleep 0.1; done
    port=$(grep -o '127\.0\.0\.1:[0-9]*' "$log" | head -n1 | cut -d: -f2)
    [[ -n $port ]] || die "the service did not start: $(cat "$log")"
    server_url=http://127.0.0.1:$port/v1/runs
    curl -sf -o /dev/null -d '{"source": "print(1)"}' "$server_url" || die "a run failed"
}
start_server "$work/fork.log"
fork_pid=$server_pid fork_url=$server_url
grep 'fork server ready' "$work/fork.log"
if [[ $ONLY != fork ]]; then
    start_server "$work/exec.log" --fresh-exec
    exec_pid=$server_pid exec_url=$server_url
fi

drive=(env -i PATH=/usr/bin:/bin LANG=C.UTF-8 /usr/bin/python3 "$here/spawn-load.py" --warmup 5
    --runs "$RUNS" --cwd "$work")
results=$work/results
: >"$results"
# Rounds: every measurement once per round, so that load from elsewhere on
# the machine lands on all of them alike; the medians over rounds are the
# figures, each with the load average it was measured under.
for round in $(seq "$ROUNDS"); do
    echo "== round $round/$ROUNDS (load $(cut -d' ' -f1-3 /proc/loadavg))"
    for c in $CONNECTIONS; do
        {
            measure_wrk "fork" "$fork_pid" "$fork_url" "$c" "$DURATION"
            measure_hey "fork" "$fork_pid" "$fork_url" "$c" "$HEY_RUNS"
            if [[ $ONLY != fork ]]; then
                measure_wrk "fresh-exec" "$exec_pid" "$exec_url" "$c" "$DURATION"
                spawn "python-sb(runner)" "$c" "${user_prefix[@]}" "${drive[@]}" --concurrency "$c" \
                    "x=$sb --pysandboxes-config $work/profile --report=/dev/null --expose-ro=$work --timeout=10000ms -- main.py"
                spawn "bwrap+python3" "$c" "${drive[@]}" --concurrency "$c" \
                    "x=bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --proc /proc --dev /dev --ro-bind $work /run --chdir /run /usr/bin/python3 main.py"
                spawn "python3(no-sandbox)" "$c" "${drive[@]}" --concurrency "$c" "x=/usr/bin/python3 main.py"
            fi
        } | tee -a "$results"
    done
done
curl -s "${fork_url%/v1/runs}/metrics" | grep -E '^python_sb_runs_total' | grep -v ' 0$'

echo "== medians over $ROUNDS rounds (runs/s, p50 ms, p99 ms, load average, CPU ms per run)"
/usr/bin/python3 - "$results" <<'PY'
import math, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, c, *v = line.split()
    rows.setdefault((name, c), []).append([float(x) for x in v])
print(f"{'what':22} {'conc':>6} {'runs/s':>8} {'p50':>8} {'p99':>8} {'load':>6} {'cpu/run':>8}")
for (name, c), v in rows.items():
    med = [statistics.median(x[i] for x in v if not math.isnan(x[i])) if any(not math.isnan(x[i]) for x in v) else math.nan
           for i in range(5)]
    print(f"{name:22} {c:>6} {med[0]:8.1f} {med[1]:8.1f} {med[2]:8.1f} {med[3]:6.1f} {med[4]:8.2f}")
PY
