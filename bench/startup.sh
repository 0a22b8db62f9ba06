#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Startup benchmark: `python-sb -c pass` (os-sandbox=subprocess) against the
# interpreter it embeds, run the same way. Method and results: bench/README.md.
#
# Usage: bench/startup.sh [BUILD_DIR]
#
#   BUILD_DIR   a release build to (re)use or create; default: a fresh
#               `meson setup --buildtype=release` in a temporary directory,
#               removed afterwards (KEEP_BUILD=1 keeps it).
#
# Environment:
#   PYTHON_SB, PYTHON_REF  use these binaries instead of building (both needed)
#   PYTHON3                the system interpreter (default /usr/bin/python3)
#   OUT_DIR                where the JSON/Markdown results go (default: new temp dir)
#   RUNS, WARMUP           hyperfine runs/warmups per command (default 300, 20)
#   MAX_RATIO              failure threshold for python-sb / python-ref (default 1.05)
#
# Exit status: 0 when mean(python-sb) / mean(python-ref) <= MAX_RATIO, 1 when it
# is above, 2 on a usage or setup error. Not run by CI (timing is too noisy there).
set -euo pipefail

die() { echo "startup.sh: $*" >&2; exit 2; }

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
srcdir=$(dirname -- "$here")
PYTHON3=${PYTHON3:-/usr/bin/python3}
RUNS=${RUNS:-300}
WARMUP=${WARMUP:-20}
MAX_RATIO=${MAX_RATIO:-1.05}

command -v hyperfine >/dev/null ||
    die "hyperfine not found (Debian/Ubuntu: apt-get install hyperfine)"
[[ -x $PYTHON3 ]] || die "$PYTHON3 is not executable (set PYTHON3)"

cleanup_dirs=()
cleanup() { if ((${#cleanup_dirs[@]})); then rm -rf -- "${cleanup_dirs[@]}"; fi; }
trap cleanup EXIT

# --- (a) the binaries: a release build of our own, or paths from the environment
if [[ -n ${PYTHON_SB:-} || -n ${PYTHON_REF:-} ]]; then
    [[ -n ${PYTHON_SB:-} && -n ${PYTHON_REF:-} ]] || die "set both PYTHON_SB and PYTHON_REF"
    sb=$(realpath -- "$PYTHON_SB")
    ref=$(realpath -- "$PYTHON_REF")
else
    command -v meson >/dev/null || die "meson not found"
    if (($# > 0)); then
        builddir=$(realpath -m -- "$1")
    else
        builddir=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-bench-build.XXXXXX")
        [[ ${KEEP_BUILD:-0} == 1 ]] || cleanup_dirs+=("$builddir")
    fi
    if [[ -f $builddir/build.ninja ]]; then
        buildtype=$(meson introspect --buildoptions "$builddir" |
            "$PYTHON3" -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "buildtype"))')
        [[ $buildtype == release ]] ||
            die "$builddir is a '$buildtype' build; give a release build or a new directory"
    else
        echo "== meson setup --buildtype=release $builddir" >&2
        # werror off: a new compiler warning at -O3 must not stop a measurement.
        meson setup --buildtype=release -Dwerror=false "$builddir" "$srcdir" >/dev/null ||
            die "meson setup failed (see $builddir/meson-logs/meson-log.txt)"
    fi
    if ! meson introspect --targets "$builddir" | grep -q '"name": "python-ref"'; then
        die "the build has no python-ref target: either meson.build lacks subdir('bench')," \
            "or python-sb does not link the static libpython (see the meson setup messages)"
    fi
    echo "== building python-sb and python-ref" >&2
    meson compile -C "$builddir" python-sb bench/python-ref >/dev/null ||
        die "build failed (run: meson compile -C $builddir)"
    sb=$builddir/python-sb
    ref=$builddir/bench/python-ref
fi
[[ -x $sb ]] || die "$sb is not executable"
[[ -x $ref ]] || die "$ref is not executable"

if [[ -n ${OUT_DIR:-} ]]; then
    mkdir -p -- "$OUT_DIR"
    out=$(realpath -- "$OUT_DIR")
else
    out=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-startup.XXXXXX")
fi

# --- (b) profiles. The environment every command runs in is the same short one,
# so python3 and python-sb see the same variables: HOME, LANG, PATH (and TERM).
export LANG=${LANG:-C.UTF-8}
[[ -n ${HOME:-} ]] || die "HOME is not set"
clean_env=(env -i "HOME=$HOME" "LANG=$LANG" "PATH=$PATH")
if [[ -n ${TERM:-} ]]; then clean_env+=("TERM=$TERM"); fi

profile_dir=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-profile.XXXXXX")
cleanup_dirs+=("$profile_dir")
# The profile a user would write to keep python's own site behaviour: without
# HOME, site.py imports pwd to find the user base; without LANG, CPython turns
# on UTF-8 mode and imports encodings.ascii.
cat >"$profile_dir/.py-sandboxes" <<'EOF'
os-sandbox=subprocess
python-import=*
env=HOME=${HOME}
env=LANG=${LANG}
env=PATH=${PATH}
EOF
# For information: the strict default, no environment passed through.
cat >"$profile_dir/strict.py-sandboxes" <<'EOF'
os-sandbox=subprocess
python-import=*
EOF

# Every command must import the same modules (same site behaviour); check it
# once so a change in python-sb that adds imports is seen here, not guessed.
cd -- "$profile_dir"
modules='import sys; print(" ".join(sorted(sys.modules)))'
want=$("${clean_env[@]}" "$PYTHON3" -c "$modules")
for cmd in "$ref" "$sb"; do
    got=$("${clean_env[@]}" "$cmd" -c "$modules") || die "$cmd -c failed"
    [[ $got == "$want" ]] || {
        echo "startup.sh: warning: $cmd imports other modules than $PYTHON3 at startup:" >&2
        diff <(tr ' ' '\n' <<<"$want") <(tr ' ' '\n' <<<"$got") >&2 || true
    }
done
explain=$("${clean_env[@]}" "$sb" --explain -c pass) || die "$sb --explain failed"
grep -q '^#   provider in use: subprocess$' <<<"$explain" ||
    die "python-sb does not use the subprocess provider with the benchmark profile"

# --- (c) the measurement
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }   # quoting for hyperfine -N
echo "== hyperfine: $RUNS runs, $WARMUP warmups; cwd $profile_dir" >&2
"${clean_env[@]}" hyperfine -N --warmup "$WARMUP" --runs "$RUNS" \
    --export-json "$out/startup.json" --export-markdown "$out/startup.md" \
    -n python3 "$(q "$PYTHON3") -c pass" \
    -n python-ref "$(q "$ref") -c pass" \
    -n python-sb "$(q "$sb") -c pass" \
    -n python-sb-strict "$(q "$sb") --pysandboxes-config $(q "$profile_dir/strict.py-sandboxes") -c pass" \
    -n python3-I "$(q "$PYTHON3") -I -c pass" \
    -n python-ref-I "$(q "$ref") -I -c pass" \
    -n python-sb-I "$(q "$sb") -I -c pass"

# --- (d) ratios of the means, with the standard error of each mean propagated
status=0
"$PYTHON3" - "$out/startup.json" "$MAX_RATIO" <<'EOF' || status=$?
import json, math, statistics, sys

results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
max_ratio = float(sys.argv[2])


def ratio(a, b):
    ra, rb = results[a], results[b]
    ma, mb = ra["mean"], rb["mean"]
    sea = ra["stddev"] / math.sqrt(len(ra["times"]))
    seb = rb["stddev"] / math.sqrt(len(rb["times"]))
    r = ma / mb
    return r, r * math.hypot(sea / ma, seb / mb), ra["median"] / rb["median"]


print()
print("%-34s %8s %10s %8s" % ("", "mean", "± s.e.", "median"))
for a, b in [("python-sb", "python-ref"), ("python-sb", "python3"),
             ("python-ref", "python3"), ("python-sb-strict", "python-ref"),
             ("python-sb-I", "python-ref-I"), ("python-sb-I", "python3-I")]:
    r, se, med = ratio(a, b)
    print("%-34s %8.4f %10.4f %8.4f" % (a + " / " + b, r, se, med))

r, se, _ = ratio("python-sb", "python-ref")
print()
if r > max_ratio:
    print("FAIL: python-sb / python-ref = %.4f ± %.4f > %.2f" % (r, se, max_ratio))
    sys.exit(1)
print("OK: python-sb / python-ref = %.4f ± %.4f <= %.2f" % (r, se, max_ratio))
EOF
status=$?
echo "results: $out/startup.json $out/startup.md" >&2
exit "$status"
