#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# os-sandbox=unshare benchmark: `python-sb -c pass` in the namespaces and the
# new root python-sb builds itself (no unshare(1)), with seccomp and resource
# limits, side by side in one interleaved run with `unshare -Urnmpf
# --mount-proc` wrapping /usr/bin/python3 by hand and with bare
# /usr/bin/python3. python-sb is the hooked copy (what meson install installs,
# docs/development.md "Two binaries") when the build can make one; the static
# binary runs alongside for reference. Method and results: bench/README.md,
# "os-sandbox=unshare".
#
# Usage: bench/unshare.sh [BUILD_DIR]     (from any directory)
#
#   BUILD_DIR   as for bench/startup.sh: a release build to reuse, or a new
#               directory to set one up in; default: a temporary directory.
#
# Environment: PYTHON_SB, PYTHON_REF, PYTHON3, KEEP_BUILD, EXTRA_ENV as for
# startup.sh, PYTHON_SB_HOOKED as for python3.sh, and
#   OUT_DIR     where the JSON of the runs goes (default: a new temp dir)
#   IRUNS       rounds of the interleaved run (default 400; the net= run gets
#               a tenth)
#   MAX_RATIO   threshold for python-sb-unshare / python3, the median of the
#               per-round wall-time ratios (1.15, the goal of issue 14)
#
# Exit status: 0 when that ratio is within MAX_RATIO, 1 when above it, 2 on a
# setup error (no user namespaces, unshare(1) missing).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

MAX_RATIO=${MAX_RATIO:-1.15}
IRUNS=${IRUNS:-400}
command -v unshare >/dev/null || die "unshare(1) not found (Debian: util-linux)"

bench_setup "$@"
bench_out_dir unshare
bench_use_hooked python-sb-unshare

# The same limits and grant as kernel.sh's landlock profile, so that the two
# providers are compared on one policy.
rules=(limit-cpu=5s limit-memory=1GB limit-open-files=256 "expose-ro=$profile_dir")
bench_write_profile "$profile_dir/unshare.py-sandboxes" os-sandbox=unshare "${rules[@]}"
bench_write_profile "$profile_dir/landlock.py-sandboxes" os-sandbox=landlock "${rules[@]}"
# For information: a net= rule starts slirp4netns and loads an nftables filter.
bench_write_profile "$profile_dir/unshare-net.py-sandboxes" os-sandbox=unshare "${rules[@]}" \
    "net=ALLOW|tcp|10.0.2.2|9|OUT"

explain=$(bench_explain_check unshare --pysandboxes-config "$profile_dir/unshare.py-sandboxes")
grep -q '^#   namespaces: user, mount, PID, network' <<<"$explain" ||
    die "--explain shows no namespaces for os-sandbox=unshare"
grep -q '^#   seccomp: ' <<<"$explain" || die "--explain shows no seccomp filter"
grep -q '^#   limit-memory: ' <<<"$explain" || die "--explain shows no limits"
echo "== new root of python-sb-unshare: $(grep -c '^#     ' <<<"$explain") entries" >&2

# Every command runs here, and imports the same modules as python3 alone.
hand=(unshare -Urnmpf --mount-proc)
modules='import sys; print(" ".join(sorted(sys.modules)))'
want=$("${clean_env[@]}" "$PYTHON3" -c "$modules")
check() {
    local got
    got=$("${clean_env[@]}" "$@" -c "$modules" </dev/null) || die "this does not run here: $*"
    if [[ $got != "$want" ]]; then
        echo "$bench_name: warning: $* imports other modules than $PYTHON3 alone:" >&2
        diff <(tr ' ' '\n' <<<"$want") <(tr ' ' '\n' <<<"$got") >&2 || true
    fi
}
us=(--pysandboxes-config "$profile_dir/unshare.py-sandboxes")
ll=(--pysandboxes-config "$profile_dir/landlock.py-sandboxes")
net=(--pysandboxes-config "$profile_dir/unshare-net.py-sandboxes")
check "$sb" "${us[@]}"
check "${hand[@]}" "$PYTHON3"
landlock=()
if "${clean_env[@]}" "$sb" "${ll[@]}" -c pass 2>/dev/null; then
    landlock=(python-sb-landlock="$sb ${ll[*]} -c pass")
fi
static_run=()
if [[ $static != "$sb" ]]; then
    check "$static" "${us[@]}"
    static_run=(static-unshare="$static ${us[*]} -c pass")
fi
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs" >&2
with_net=1
"${clean_env[@]}" "$sb" "${net[@]}" -c pass 2>/dev/null || with_net=0

echo "== interleaved: $IRUNS rounds after 10 warm-up rounds; cwd $profile_dir" >&2
status=0
"${clean_env[@]}" "$PYTHON3" "$bench_here/interleave.py" --runs "$IRUNS" \
    --json "$out/unshare-interleaved.json" --gate "python-sb-unshare=$MAX_RATIO" \
    python3="$PYTHON3 -c pass" \
    "${landlock[@]}" \
    python-sb-unshare="$sb ${us[*]} -c pass" \
    "${static_run[@]}" \
    unshare-python3="${hand[*]} $PYTHON3 -c pass" || status=$?
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

if ((with_net)); then
    echo "== interleaved, with a net= rule: $((IRUNS / 10)) rounds" >&2
    "${clean_env[@]}" "$PYTHON3" "$bench_here/interleave.py" --runs "$((IRUNS / 10))" \
        --json "$out/unshare-net-interleaved.json" \
        python3="$PYTHON3 -c pass" \
        python-sb-unshare="$sb ${us[*]} -c pass" \
        python-sb-unshare-net="$sb ${net[*]} -c pass" || true
else
    echo "== skipped the net= run: slirp4netns or nft missing, or /dev/net/tun not usable" >&2
fi
echo "results: $out" >&2
exit "$status"
