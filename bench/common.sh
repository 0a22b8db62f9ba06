# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2016
# Sourced by bench/startup.sh, bench/instructions.sh, bench/kernel.sh and
# bench/kernel-breakdown.sh (bash, set -euo pipefail).
#
# bench_setup [BUILD_DIR] sets:
#   sb, ref       absolute paths of python-sb and python-ref
#   ref_bare      python-ref-bare (bench/meson.build), when there is one
#   clean_env     `env -i ...` prefix: the one environment every command runs in
#   env_names     the names clean_env sets (for wrappers that clear the environment)
#   profile_dir   a temp dir (the cwd from then on) holding .py-sandboxes and
#                 strict.py-sandboxes
# It honours PYTHON_SB/PYTHON_REF, PYTHON3, KEEP_BUILD, EXTRA_ENV (described in
# the scripts' headers) and removes its temp dirs on exit.
#
# Helpers: bench_write_profile (more profiles of the same shape),
# bench_explain_check (which provider --explain reports), bench_out_dir,
# q (one word for hyperfine -N), bench_ratios (ratios of a hyperfine JSON).

bench_name=$(basename -- "$0")
die() { echo "$bench_name: $*" >&2; exit 2; }

bench_here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
bench_srcdir=$(dirname -- "$bench_here")
PYTHON3=${PYTHON3:-/usr/bin/python3}

bench_cleanup_dirs=()
# shellcheck disable=SC2317  # called by the trap
bench_cleanup() {
    if ((${#bench_cleanup_dirs[@]})); then rm -rf -- "${bench_cleanup_dirs[@]}"; fi
}
trap bench_cleanup EXIT

# (a) The binaries: a release build of our own, or paths from the environment.
bench_binaries() {
    local builddir buildtype
    if [[ -n ${PYTHON_SB:-} || -n ${PYTHON_REF:-} ]]; then
        [[ -n ${PYTHON_SB:-} && -n ${PYTHON_REF:-} ]] || die "set both PYTHON_SB and PYTHON_REF"
        sb=$(realpath -- "$PYTHON_SB")
        ref=$(realpath -- "$PYTHON_REF")
        if [[ -n ${PYTHON_REF_BARE:-} ]]; then ref_bare=$(realpath -- "$PYTHON_REF_BARE"); fi
    else
        command -v meson >/dev/null || die "meson not found"
        if (($# > 0)); then
            builddir=$(realpath -m -- "$1")
        else
            builddir=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-bench-build.XXXXXX")
            if [[ ${KEEP_BUILD:-0} == 1 ]]; then
                echo "== keeping the build in $builddir" >&2
            else
                bench_cleanup_dirs+=("$builddir")
            fi
        fi
        if [[ -f $builddir/build.ninja ]]; then
            buildtype=$(meson introspect --buildoptions "$builddir" | "$PYTHON3" -c \
                'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "buildtype"))')
            [[ $buildtype == release ]] ||
                die "$builddir is a '$buildtype' build; give a release build or a new directory"
        else
            echo "== meson setup --buildtype=release $builddir" >&2
            # werror off: a new compiler warning at -O3 must not stop a measurement.
            meson setup --buildtype=release -Dwerror=false "$builddir" "$bench_srcdir" >/dev/null ||
                die "meson setup failed (see $builddir/meson-logs/meson-log.txt)"
        fi
        if ! meson introspect --targets "$builddir" | grep -q '"name": "python-ref"'; then
            die "the build has no python-ref target: either meson.build lacks subdir('bench')," \
                "or python-sb does not link the static libpython (see meson's messages)"
        fi
        echo "== building python-sb and bench/python-ref in $builddir" >&2
        # python-sb-hook: the hooked copy (bench_hooked) is what users run; a
        # build without it would measure the static binary with a warning.
        local hook=()
        if meson introspect --targets "$builddir" | grep -q '"name": "python-sb-hook"'; then
            hook=(python-sb-hook)
        fi
        meson compile -C "$builddir" python-sb python-sb-supervise "${hook[@]}" bench/python-ref >/dev/null ||
            die "build failed (run: meson compile -C $builddir)"
        sb=$builddir/python-sb
        ref=$builddir/bench/python-ref
        # For information only (bench/meson.build): absent without python.o.
        if meson compile -C "$builddir" bench/python-ref-bare >/dev/null 2>&1; then
            ref_bare=$builddir/bench/python-ref-bare
        fi
    fi
    [[ -x $sb ]] || die "$sb is not executable"
    [[ -x $ref ]] || die "$ref is not executable"
    [[ -x $PYTHON3 ]] || die "$PYTHON3 is not executable (set PYTHON3)"
}

# (b) One short environment for every command, so python3, python-ref and
# python-sb see the same variables: HOME, LANG, PATH, TERM (if set) and
# EXTRA_ENV (NAME=VALUE words; also passed by the profile).
bench_profiles() {
    local extra name
    export LANG=${LANG:-C.UTF-8}
    [[ -n ${HOME:-} ]] || die "HOME is not set"
    clean_env=(env -i "HOME=$HOME" "LANG=$LANG" "PATH=$PATH")
    env_names=(HOME LANG PATH)
    if [[ -n ${TERM:-} ]]; then clean_env+=("TERM=$TERM") env_names+=(TERM); fi

    profile_dir=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-profile.XXXXXX")
    bench_cleanup_dirs+=("$profile_dir")
    # The profile a user writes to keep python's own site behaviour: without
    # HOME, site.py imports pwd to find the user base; without LANG, CPython
    # turns on UTF-8 mode and imports encodings.ascii.
    # (os-sandbox=subprocess, python-import=*, env=HOME/LANG/PATH and EXTRA_ENV)
    bench_write_profile "$profile_dir/.py-sandboxes" os-sandbox=subprocess
    # For information: the strict default, no environment passed through.
    printf '%s\n' os-sandbox=subprocess 'python-import=*' >"$profile_dir/strict.py-sandboxes"
    for extra in ${EXTRA_ENV:-}; do
        name=${extra%%=*}
        clean_env+=("$extra")
        env_names+=("$name")
        printf 'env=%s=${%s}\n' "$name" "$name" >>"$profile_dir/strict.py-sandboxes"
    done
    cd -- "$profile_dir" || die "cannot enter $profile_dir"

    bench_explain_check subprocess >/dev/null

    # The same site behaviour means the same modules imported at startup;
    # checked, not assumed, so a change that adds imports shows here.
    local modules want got cmd
    modules='import sys; print(" ".join(sorted(sys.modules)))'
    want=$("${clean_env[@]}" "$PYTHON3" -c "$modules")
    for cmd in "$ref" "$sb"; do
        got=$("${clean_env[@]}" "$cmd" -c "$modules") || die "$cmd -c failed"
        if [[ $got != "$want" ]]; then
            echo "$bench_name: warning: $cmd imports other modules than $PYTHON3 at startup:" >&2
            diff <(tr ' ' '\n' <<<"$want") <(tr ' ' '\n' <<<"$got") >&2 || true
        fi
    done
}

bench_setup() {
    if [[ ${1:-} == -* ]]; then
        die "usage: $bench_name [BUILD_DIR]; options are environment variables (see the header of $0)"
    fi
    bench_binaries "$@"
    bench_profiles
}

# bench_write_profile FILE LINE...: a profile with the given lines (os-sandbox=,
# limits, expose-*) and the benchmark profile's python-import and env= rules,
# so every python-sb variant imports the same modules as .py-sandboxes.
bench_write_profile() {
    local file=$1 extra name
    shift
    {
        printf '%s\n' "$@" 'python-import=*' 'env=HOME=${HOME}' 'env=LANG=${LANG}' 'env=PATH=${PATH}'
        for extra in ${EXTRA_ENV:-}; do
            name=${extra%%=*}
            printf 'env=%s=${%s}\n' "$name" "$name"
        done
    } >"$file"
}

# bench_explain_check PROVIDER [python-sb option...]: runs python-sb --explain
# in the benchmark environment (cwd $profile_dir), stops unless it reports
# PROVIDER as the provider in use, and prints the explanation.
bench_explain_check() {
    local want=$1 explain
    shift
    explain=$("${clean_env[@]}" "$sb" "$@" --explain -c pass) || die "$sb $* --explain failed"
    grep -q "^#   provider in use: $want\$" <<<"$explain" ||
        die "python-sb $* does not use the $want provider:" \
            "$(grep '^#   provider in use' <<<"$explain" || echo '(no provider line)')"
    printf '%s\n' "$explain"
}

# bench_out_dir NAME: sets out to $OUT_DIR (created) or a new temp dir.
bench_out_dir() {
    if [[ -n ${OUT_DIR:-} ]]; then
        mkdir -p -- "$OUT_DIR"
        out=$(realpath -- "$OUT_DIR")
    else
        # shellcheck disable=SC2034  # for the caller
        out=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-$1.XXXXXX")
    fi
}

# One word for hyperfine -N, which splits its command lines like a shell.
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# bench_ratios JSON MAX_RATIO GATE PAIR...: prints, for each PAIR "a/b" of
# hyperfine command names, mean(a) / mean(b) with the standard errors of both
# means (stddev/sqrt(runs)) propagated, and the ratio of the medians alongside
# as a check against outliers, the ratio of the fastest runs (the least
# disturbed by load), and mean(a) - mean(b) in ms; an empty PAIR
# prints an empty line. GATE is a pair too: exit status 1 when its ratio of
# the means is above MAX_RATIO.
bench_ratios() {
    "$PYTHON3" - "$@" <<'EOF'
import json, math, sys

results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
max_ratio = float(sys.argv[2])
gate, pairs = sys.argv[3], sys.argv[4:]


def ratio(pair):
    a, b = pair.split("/")
    ra, rb = results[a], results[b]
    ma, mb = ra["mean"], rb["mean"]
    sea = ra["stddev"] / math.sqrt(len(ra["times"]))
    seb = rb["stddev"] / math.sqrt(len(rb["times"]))
    r = ma / mb
    return (r, r * math.hypot(sea / ma, seb / mb), ra["median"] / rb["median"],
            ra["min"] / rb["min"], (ma - mb) * 1000)


width = max([32] + [len(p) + 2 for p in pairs + [gate]])
print()
print("%-*s %8s %8s %8s %8s %9s" % (width, "ratio", "mean", "± s.e.", "median", "min",
                                    "Δ mean ms"))
for pair in pairs:
    if not pair:
        print()
        continue
    r, se, med, mn, diff = ratio(pair)
    print("%-*s %8.4f %8.4f %8.4f %8.4f %+9.3f"
          % (width, pair.replace("/", " / "), r, se, med, mn, diff))

r, se, _, _, _ = ratio(gate)
label = gate.replace("/", " / ")
print()
if r > max_ratio:
    print("FAIL: %s = %.4f ± %.4f > %.2f" % (label, r, se, max_ratio))
    sys.exit(1)
print("OK: %s = %.4f ± %.4f <= %.2f" % (label, r, se, max_ratio))
EOF
}

# bench_kernel_profiles: the profiles of the kernel-boundary benchmark, in
# $profile_dir (same python-import and env= rules as .py-sandboxes):
#   landlock.py-sandboxes          Landlock + seccomp + resource limits
#   landlock-timeout.py-sandboxes  the same + timeout=10s (held by the watchdog:
#                                  the program cannot start processes)
#   none.py-sandboxes              os-sandbox=none: the launcher and the Python
#                                  guard, no kernel layer at all
# Checks with --explain that each gets the provider it names, that the
# landlock ones load a seccomp filter, and runs each once. Sets
# landlock_explain (the --explain text) and landlock_rules (the number of
# paths in the Landlock ruleset, as --explain lists them).
bench_kernel_profiles() {
    local rules=(os-sandbox=landlock limit-cpu=5s limit-memory=1GB limit-open-files=256
        "expose-ro=$profile_dir")
    local p explain
    bench_write_profile "$profile_dir/landlock.py-sandboxes" "${rules[@]}"
    bench_write_profile "$profile_dir/landlock-timeout.py-sandboxes" "${rules[@]}" timeout=10s
    bench_write_profile "$profile_dir/none.py-sandboxes" os-sandbox=none

    bench_explain_check none --pysandboxes-config "$profile_dir/none.py-sandboxes" >/dev/null
    for p in landlock landlock-timeout; do
        explain=$(bench_explain_check landlock --pysandboxes-config "$profile_dir/$p.py-sandboxes")
        grep -q '^#   seccomp: ' <<<"$explain" || die "$p.py-sandboxes: --explain shows no seccomp filter"
        grep -q '^#   limit-memory: ' <<<"$explain" || die "$p.py-sandboxes: --explain shows no limits"
        [[ $p == landlock ]] || grep -q '^#   timeout: 10000 ms$' <<<"$explain" ||
            die "$p.py-sandboxes: --explain shows no timeout"
    done
    # Run once each; and the same modules at startup as python3 (see above).
    local modules='import sys; print(" ".join(sorted(sys.modules)))' want got
    want=$("${clean_env[@]}" "$PYTHON3" -c "$modules")
    for p in landlock landlock-timeout none; do
        got=$("${clean_env[@]}" "$sb" --pysandboxes-config "$profile_dir/$p.py-sandboxes" -c "$modules") ||
            die "python-sb with $p.py-sandboxes fails to run (Landlock disabled in this kernel?)"
        if [[ $got != "$want" ]]; then
            echo "$bench_name: warning: python-sb with $p.py-sandboxes imports other modules than $PYTHON3:" >&2
            diff <(tr ' ' '\n' <<<"$want") <(tr ' ' '\n' <<<"$got") >&2 || true
        fi
    done
    landlock_explain=$(bench_explain_check landlock --pysandboxes-config "$profile_dir/landlock.py-sandboxes")
    # shellcheck disable=SC2034  # for the caller
    landlock_rules=$(grep -c '^#   r[ow]  ' <<<"$landlock_explain")
}

# bench_hooked: sets hooked to the hooked copy (docs/development.md, "Two
# binaries": Debian's python3.X with python-sb-hook.so added as a needed
# library, what meson install installs): PYTHON_SB_HOOKED, or one made as
# meson install makes it (scripts/install-hook.sh) from the build's library
# in a temp dir; empty when neither is possible (no library beside $sb, or
# no patchelf).
bench_hooked() {
    local hook_dir
    hooked=${PYTHON_SB_HOOKED:-}
    if [[ -n $hooked ]]; then
        hooked=$(realpath -- "$hooked")
        return
    fi
    [[ -f $(dirname -- "$sb")/python-sb-hook.so ]] && command -v patchelf >/dev/null || return 0
    hook_dir=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-hooked.XXXXXX")
    bench_cleanup_dirs+=("$hook_dir")
    mkdir -p "$hook_dir/bin" "$hook_dir/lib" "$hook_dir/libexec/py-sandboxes"
    cp -- "$(dirname -- "$sb")/python-sb-hook.so" "$hook_dir/lib/"
    # The timeout supervisor where an install has it (src/kernel/supervise-exec.h).
    if [[ -x $(dirname -- "$sb")/python-sb-supervise ]]; then
        cp -- "$(dirname -- "$sb")/python-sb-supervise" "$hook_dir/libexec/py-sandboxes/"
    fi
    # shellcheck disable=SC2016  # $ORIGIN is for the dynamic loader
    "$bench_srcdir/scripts/install-hook.sh" "$hook_dir/bin/python-sb" '$ORIGIN/../lib' ||
        die "cannot make the hooked copy"
    hooked=$hook_dir/bin/python-sb
}

# bench_use_hooked WHAT: runs bench_hooked, keeps the static binary in
# $static, and makes $sb the hooked copy when there is one (a warning that
# WHAT is the static binary otherwise).
bench_use_hooked() {
    bench_hooked
    static=$sb
    if [[ -n $hooked ]]; then
        sb=$hooked
    else
        echo "$bench_name: warning: no hooked copy (no python-sb-hook.so or patchelf):" \
            "$1 is the static binary" >&2
    fi
}
