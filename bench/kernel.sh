#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Kernel-boundary benchmark: `python-sb -c pass` confined by Landlock + seccomp
# + resource limits (os-sandbox=landlock, in its own process, no wrapper)
# against the interpreter it embeds, and against the usual wrappers of a bare
# python, bwrap and firejail, all in one hyperfine run. Method and results:
# bench/README.md, "Kernel boundary".
#
# Usage: bench/kernel.sh [BUILD_DIR]      (from any directory; as root, or with
#                                          bwrap and firejail installed)
#
#   BUILD_DIR   as for bench/startup.sh: a release build to reuse, or a new
#               directory to set one up in; default: a temporary directory.
#
# Environment: PYTHON_SB, PYTHON_REF, PYTHON3, KEEP_BUILD, EXTRA_ENV as for
# startup.sh, and
#   OUT_DIR       where kernel.json/kernel.md go (default: a new temp dir)
#   RUNS, WARMUP  hyperfine runs/warm-ups per command (default 300, 20)
#   IRUNS         rounds of the interleaved run (default 400)
#   MAX_RATIO     threshold for python-sb-landlock / python-ref, the median of the
#                 per-round ratios of the interleaved run (1.05)
#
# Exit status: 0 when that ratio is within MAX_RATIO, 1 when above it, 2 on a
# setup error (also when bwrap or firejail are missing and cannot be installed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

RUNS=${RUNS:-300}
WARMUP=${WARMUP:-20}
MAX_RATIO=${MAX_RATIO:-1.05}
IRUNS=${IRUNS:-400}
command -v hyperfine >/dev/null ||
    die "hyperfine not found (Debian/Ubuntu: apt-get install hyperfine)"

# The peers. Installed here if missing (Debian/Ubuntu, as root).
if ! command -v bwrap >/dev/null || ! command -v firejail >/dev/null; then
    echo "== installing the peers: apt-get install -y bubblewrap firejail" >&2
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        apt-get install -y bubblewrap firejail >&2 ||
            { apt-get update >&2 && apt-get install -y bubblewrap firejail >&2; } || true
    fi
    { command -v bwrap >/dev/null && command -v firejail >/dev/null; } ||
        die "bwrap and firejail are needed and could not be installed" \
            "(Debian/Ubuntu: sudo apt-get install bubblewrap firejail)"
fi

bench_setup "$@"
bench_kernel_profiles
bench_out_dir kernel
echo "== Landlock ruleset of python-sb-landlock: $landlock_rules paths" >&2

# The peers' command lines (arrays; quoted for hyperfine below).
# bwrap: a new root holding /usr read-only (and the usual /lib, /lib64, /bin
# symlinks into it), a fresh /proc and a minimal /dev, every namespace
# unshared (user, ipc, pid, net, uts, cgroup), killed with its parent, a new
# session (no TIOCSTI into the terminal), and an environment rebuilt from
# nothing with the benchmark's variables. /etc/python3.11 is bound because
# Debian's sitecustomize.py is a symlink into it: without it python would
# import one module less than everywhere else in this benchmark.
bwrap_cmd=(bwrap --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64
    --symlink usr/bin /bin --ro-bind /etc/python3.11 /etc/python3.11
    --proc /proc --dev /dev --unshare-all --die-with-parent --new-session --clearenv)
for name in "${env_names[@]}"; do bwrap_cmd+=(--setenv "$name" "${!name}"); done
# python-ref is outside /usr: bound at the same path for bwrap-ref.
bwrap_ref=("${bwrap_cmd[@]}" --ro-bind "$ref" "$ref")
# firejail without any profile: its bare sandbox (mount and PID namespaces,
# /proc and /sys remounted, its own monitor process) ...
firejail_cmd=(firejail --quiet --noprofile)
# ... and with the options a careful user adds for untrusted code: no network
# (an empty network namespace), a private /dev, firejail's default seccomp
# blacklist, every capability dropped, no_new_privs. (--private-tmp is left
# out: python-ref usually lives in a build directory under /tmp.)
firejail_strict=(firejail --quiet --noprofile --net=none --private-dev --seccomp --caps.drop=all
    --nonewprivs)

# Each wrapper must run, and run python with the same modules as python3 alone.
modules='import sys; print(" ".join(sorted(sys.modules)))'
want=$("${clean_env[@]}" "$PYTHON3" -c "$modules")
check_peer() {
    local got
    got=$("${clean_env[@]}" "$@" -c "$modules" </dev/null) || die "this does not run here: $*"
    if [[ $got != "$want" ]]; then
        echo "$bench_name: warning: $* imports other modules than $PYTHON3 alone:" >&2
        diff <(tr ' ' '\n' <<<"$want") <(tr ' ' '\n' <<<"$got") >&2 || true
    fi
}
check_peer "${bwrap_cmd[@]}" "$PYTHON3"
check_peer "${bwrap_ref[@]}" "$ref"
check_peer "${firejail_cmd[@]}" "$PYTHON3"
check_peer "${firejail_cmd[@]}" "$ref"
check_peer "${firejail_strict[@]}" "$PYTHON3"
check_peer "${firejail_strict[@]}" "$ref"

qa() { local w s=; for w in "$@"; do s+="${s:+ }$(q "$w")"; done; printf '%s' "$s"; }
ll=(--pysandboxes-config "$profile_dir/landlock.py-sandboxes")
llt=(--pysandboxes-config "$profile_dir/landlock-timeout.py-sandboxes")
none=(--pysandboxes-config "$profile_dir/none.py-sandboxes")

echo "== hyperfine: $RUNS runs after $WARMUP warm-ups per command; cwd $profile_dir" >&2
"${clean_env[@]}" hyperfine -N --warmup "$WARMUP" --runs "$RUNS" \
    --export-json "$out/kernel.json" --export-markdown "$out/kernel.md" \
    -n python3 "$(qa "$PYTHON3") -c pass" \
    -n python-ref "$(qa "$ref") -c pass" \
    -n python-sb-none "$(qa "$sb" "${none[@]}") -c pass" \
    -n python-sb-subprocess "$(qa "$sb") -c pass" \
    -n python-sb-landlock "$(qa "$sb" "${ll[@]}") -c pass" \
    -n python-sb-landlock-timeout "$(qa "$sb" "${llt[@]}") -c pass" \
    -n bwrap-python3 "$(qa "${bwrap_cmd[@]}" "$PYTHON3") -c pass" \
    -n bwrap-ref "$(qa "${bwrap_ref[@]}" "$ref") -c pass" \
    -n firejail-python3 "$(qa "${firejail_cmd[@]}" "$PYTHON3") -c pass" \
    -n firejail-ref "$(qa "${firejail_cmd[@]}" "$ref") -c pass" \
    -n firejail-strict-python3 "$(qa "${firejail_strict[@]}" "$PYTHON3") -c pass" \
    -n firejail-strict-ref "$(qa "${firejail_strict[@]}" "$ref") -c pass"

status=0
bench_ratios "$out/kernel.json" "$MAX_RATIO" python-sb-landlock/python-ref \
    python-sb-landlock/python-ref python-sb-landlock/python3 \
    python-sb-landlock-timeout/python-ref python-sb-subprocess/python-ref \
    python-sb-none/python-ref python-ref/python3 '' \
    bwrap-python3/python3 firejail-python3/python3 firejail-strict-python3/python3 '' \
    bwrap-ref/python-ref firejail-ref/python-ref firejail-strict-ref/python-ref '' \
    bwrap-ref/python-sb-landlock firejail-ref/python-sb-landlock \
    firejail-strict-ref/python-sb-landlock '' \
    python-sb-subprocess/python-sb-none python-sb-landlock/python-sb-subprocess \
    python-sb-landlock/python-sb-none python-sb-landlock-timeout/python-sb-landlock || status=$?

# The same commands round-robin (bench/interleave.py): hyperfine's blocks drift
# with the load of this shared machine by more than the bound; the median of
# the per-round ratios does not. This run decides the exit status. The peers
# and python-sb with timeout= get a run of their own: firejail and bwrap leave
# namespace teardown and their monitors' exit work behind them for some
# milliseconds, and timeout= its supervisor's, which lands on whatever runs
# next in the round; in the reversed rounds that was python-sb-landlock
# (measured, same build, back to back: 1.059 with the peers in the round,
# 1.040 without; 1.057 with the timeout= variant in the round, 1.031 without).
echo "== interleaved: $IRUNS rounds after 10 warm-up rounds" >&2
istatus=0
bare=()
if [[ -n ${ref_bare:-} ]]; then bare=(python-ref-bare="$ref_bare -c pass"); fi
"${clean_env[@]}" "$PYTHON3" "$bench_here/interleave.py" --runs "$IRUNS" \
    --json "$out/kernel-interleaved.json" --gate "python-sb-landlock=$MAX_RATIO" \
    python-ref="$ref -c pass" \
    "${bare[@]}" \
    python3="$PYTHON3 -c pass" \
    python-sb-none="$sb ${none[*]} -c pass" \
    python-sb-subprocess="$sb -c pass" \
    python-sb-landlock="$sb ${ll[*]} -c pass" || istatus=$?
echo "== interleaved, timeout= and the peers: $((IRUNS / 2)) rounds after 10 warm-up rounds" >&2
"${clean_env[@]}" "$PYTHON3" "$bench_here/interleave.py" --runs "$((IRUNS / 2))" \
    --json "$out/kernel-peers-interleaved.json" \
    python-ref="$ref -c pass" \
    python-sb-landlock="$sb ${ll[*]} -c pass" \
    python-sb-landlock-timeout="$sb ${llt[*]} -c pass" \
    bwrap-ref="${bwrap_ref[*]} $ref -c pass" \
    firejail-ref="${firejail_cmd[*]} $ref -c pass" || istatus=$?
status=$istatus
echo "results: $out/kernel.json $out/kernel.md $out/kernel-interleaved.json" >&2
exit "$status"
