# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2016
# Sourced by bench/startup.sh and bench/instructions.sh (bash, set -euo pipefail).
#
# bench_setup [BUILD_DIR] sets:
#   sb, ref       absolute paths of python-sb and python-ref
#   clean_env     `env -i ...` prefix: the one environment every command runs in
#   profile_dir   a temp dir (the cwd from then on) holding .py-sandboxes and
#                 strict.py-sandboxes
# It honours PYTHON_SB/PYTHON_REF, PYTHON3, KEEP_BUILD, EXTRA_ENV (described in
# the scripts' headers) and removes its temp dirs on exit.

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
        meson compile -C "$builddir" python-sb bench/python-ref >/dev/null ||
            die "build failed (run: meson compile -C $builddir)"
        sb=$builddir/python-sb
        ref=$builddir/bench/python-ref
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
    if [[ -n ${TERM:-} ]]; then clean_env+=("TERM=$TERM"); fi

    profile_dir=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-profile.XXXXXX")
    bench_cleanup_dirs+=("$profile_dir")
    # The profile a user writes to keep python's own site behaviour: without
    # HOME, site.py imports pwd to find the user base; without LANG, CPython
    # turns on UTF-8 mode and imports encodings.ascii.
    cat >"$profile_dir/.py-sandboxes" <<'EOF'
os-sandbox=subprocess
python-import=*
env=HOME=${HOME}
env=LANG=${LANG}
env=PATH=${PATH}
EOF
    # For information: the strict default, no environment passed through.
    printf '%s\n' os-sandbox=subprocess 'python-import=*' >"$profile_dir/strict.py-sandboxes"
    for extra in ${EXTRA_ENV:-}; do
        name=${extra%%=*}
        clean_env+=("$extra")
        printf 'env=%s=${%s}\n' "$name" "$name" >>"$profile_dir/.py-sandboxes"
        printf 'env=%s=${%s}\n' "$name" "$name" >>"$profile_dir/strict.py-sandboxes"
    done
    cd -- "$profile_dir" || die "cannot enter $profile_dir"

    local explain
    explain=$("${clean_env[@]}" "$sb" --explain -c pass) || die "$sb --explain failed"
    grep -q '^#   provider in use: subprocess$' <<<"$explain" ||
        die "python-sb does not use the subprocess provider with the benchmark profile"

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
    bench_binaries "$@"
    bench_profiles
}
