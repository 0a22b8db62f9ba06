#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Startup benchmark: `python-sb -c pass` (os-sandbox=subprocess) against the
# interpreter it embeds, run the same way. Method and results: bench/README.md.
#
# Usage: bench/startup.sh [BUILD_DIR]      (from any directory)
#
#   BUILD_DIR   a release build to reuse, or a new directory to set one up in;
#               default: `meson setup --buildtype=release` in a temporary
#               directory, removed afterwards (KEEP_BUILD=1 keeps it).
#
# Environment:
#   PYTHON_SB, PYTHON_REF  measure these binaries instead of building (set both)
#   PYTHON3                the system interpreter (default /usr/bin/python3)
#   OUT_DIR                where startup.json/startup.md go (default: a new temp dir)
#   RUNS, WARMUP           hyperfine runs/warm-ups per command (default 300, 20)
#   MAX_RATIO              threshold for mean(python-sb) / mean(python-ref) (default 1.05)
#   EXTRA_ENV              NAME=VALUE words added to every command's environment
#
# Exit status: 0 when the ratio is within MAX_RATIO, 1 when above it, 2 on a
# setup error. CI does not run this: timing on shared runners is too noisy.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

RUNS=${RUNS:-300}
WARMUP=${WARMUP:-20}
MAX_RATIO=${MAX_RATIO:-1.05}
command -v hyperfine >/dev/null ||
    die "hyperfine not found (Debian/Ubuntu: apt-get install hyperfine)"

bench_setup "$@"
bench_out_dir startup

# (c) The measurement. -N: no shell in between, so nothing to subtract. The cwd
# is $profile_dir, where python-sb finds ./.py-sandboxes as a user's would.
echo "== hyperfine: $RUNS runs after $WARMUP warm-ups per command; cwd $profile_dir" >&2
"${clean_env[@]}" hyperfine -N --warmup "$WARMUP" --runs "$RUNS" \
    --export-json "$out/startup.json" --export-markdown "$out/startup.md" \
    -n python3 "$(q "$PYTHON3") -c pass" \
    -n python-ref "$(q "$ref") -c pass" \
    -n python-sb "$(q "$sb") -c pass" \
    -n python-sb-strict "$(q "$sb") --pysandboxes-config $(q "$profile_dir/strict.py-sandboxes") -c pass" \
    -n python3-I "$(q "$PYTHON3") -I -c pass" \
    -n python-ref-I "$(q "$ref") -I -c pass" \
    -n python-sb-I "$(q "$sb") -I -c pass"

# (d) Ratios of the means (standard errors propagated) and of the medians.
status=0
bench_ratios "$out/startup.json" "$MAX_RATIO" python-sb/python-ref \
    python-sb/python-ref python-sb/python3 python-ref/python3 \
    python-sb-strict/python-ref python-sb-I/python-ref-I python-sb-I/python3-I || status=$?
echo "results: $out/startup.json $out/startup.md" >&2
exit "$status"
