#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Start-up in a large sys.path[0]: `python-sb -c`, -m and the REPL run in the
# cwd, a script beside its data. python-sb lists that directory to grant the
# modules python-import= allows there (src/policy/path0-modules.c), and
# grants each of them to Landlock (or binds it, under unshare). Method and
# results: bench/README.md, "Start-up in a large directory".
#
# Usage: bench/path0.sh [BUILD_DIR]   (build options as startup.sh)
#
# Environment, besides common.sh's:
#   IRUNS          interleaved rounds (default 100)
#   FILES          data files in the directory (default 3000)
#   MODULES        modules in it (default 1000)
#   PYTHON_SB_BASE another python-sb to run alongside (e.g. an older build)
#
# Variants, run with the directory as the cwd, `-c pass`, each against
# /usr/bin/python3 in the same rounds:
#   named   os-sandbox=landlock, python-import=json: no module of the
#           directory allowed, so the listing is all the work
#   star    os-sandbox=landlock, python-import=*: every module of it granted
#   unshare os-sandbox=unshare, python-import=*: every module bound
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

IRUNS=${IRUNS:-100}
FILES=${FILES:-3000}
MODULES=${MODULES:-1000}

bench_setup "$@"
big=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-path0.XXXXXX")
bench_cleanup_dirs+=("$big")
for ((i = 0; i < FILES; i++)); do : >"$big/data$i.csv"; done
for ((i = 0; i < MODULES; i++)); do echo "V = $i" >"$big/mod$i.py"; done
# shellcheck disable=SC2016  # the profile's own expansion
env_lines=('env=HOME=${HOME}' 'env=LANG=${LANG}' 'env=PATH=${PATH}')
printf '%s\n' os-sandbox=landlock python-import=json "${env_lines[@]}" >"$profile_dir/named.py-sandboxes"
printf '%s\n' os-sandbox=landlock 'python-import=*' "${env_lines[@]}" >"$profile_dir/star.py-sandboxes"
printf '%s\n' os-sandbox=unshare 'python-import=*' "${env_lines[@]}" >"$profile_dir/unshare.py-sandboxes"

variants=("python3=$PYTHON3")
for binary in "$sb" ${PYTHON_SB_BASE:+"$PYTHON_SB_BASE"}; do
    tag=new
    [[ $binary == "$sb" ]] || tag=base
    for p in named star unshare; do
        variants+=("$tag-$p=$binary --pysandboxes-config $profile_dir/$p.py-sandboxes")
    done
done
# Each variant must run there, and the modules must import.
for v in "${variants[@]:1}"; do
    # shellcheck disable=SC2086  # a command line, split on purpose
    (cd "$big" && "${clean_env[@]}" ${v#*=} -c pass) || die "${v%%=*} fails in $big"
done
(cd "$big" && "${clean_env[@]}" "$sb" --pysandboxes-config "$profile_dir/star.py-sandboxes" \
    -c "import mod0, mod$((MODULES - 1))") || die "the modules do not import"

echo "== $FILES data files and $MODULES modules in the cwd; load average:" \
    "$(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs" >&2
cmds=()
for v in "${variants[@]}"; do cmds+=("$v -c pass"); done
cd "$big"
"${clean_env[@]}" "$PYTHON3" "$bench_here/interleave.py" --runs "$IRUNS" "${cmds[@]}"
