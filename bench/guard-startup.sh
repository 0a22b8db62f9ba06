#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The guard's share of a start against /usr/bin/python3 (issue 19): the hooked
# copy (docs/development.md, "Two binaries") with os-sandbox=none, the guard on
# (py-sandbox=true) and off, on `-c pass` and on bench/workload-small.py, for
# one build or an A/B of two. Method and results: bench/README.md, "Against
# /usr/bin/python3 (issue 19)", "The guard's share".
#
# Usage: bench/guard-startup.sh NEW_BUILD [BASE_BUILD]
#
#   NEW_BUILD, BASE_BUILD  meson build directories (release) holding
#                          python-sb-hook.so: `meson compile -C DIR python-sb-hook`
#
# Environment:
#   IRUNS        rounds of each interleaved run (default 300)
#   CALLGRIND=0  skip the instruction counts
#   OUT_DIR      where the interleaved runs' JSON goes (default: a temp dir)
#
# What it prints, per workload: instructions (callgrind I refs) of each
# variant; system calls (strace -f -c) and page faults (perf stat); the audit
# events the workload raises (a Python audit hook under /usr/bin/python3
# counting them); then one interleaved run (interleave.py) of python3, the
# guard off (NEW), the guard on (BASE when given, NEW), CPU-time ratios read
# against the guard off. The guard's own time, split by part, needs an
# instrumented build (see the README).
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
srcdir=$(dirname -- "$here")
die() {
	echo "guard-startup.sh: $*" >&2
	exit 2
}
[[ $# -ge 1 && $# -le 2 && ${1:-} != -* ]] || die "usage: bench/guard-startup.sh NEW_BUILD [BASE_BUILD]"
IRUNS=${IRUNS:-300}
PYTHON3=${PYTHON3:-/usr/bin/python3}
command -v patchelf >/dev/null || die "patchelf not found (bash scripts/deps.sh build)"
command -v strace >/dev/null || die "strace not found (apt-get install strace)"
if [[ ${CALLGRIND:-1} != 0 ]] && ! command -v valgrind >/dev/null; then
	die "valgrind not found (apt-get install valgrind, or CALLGRIND=0)"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-guard-startup.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
out=${OUT_DIR:-$work}
mkdir -p -- "$out"

# hooked NAME BUILD: the hooked copy of BUILD's library, as meson install
# makes it (bench/common.sh's bench_hooked).
hooked() {
	local dir=$work/$1 build=$2
	[[ -f $build/python-sb-hook.so ]] || die "$build/python-sb-hook.so is missing"
	mkdir -p "$dir/bin" "$dir/lib"
	cp -- "$build/python-sb-hook.so" "$dir/lib/"
	# shellcheck disable=SC2016  # $ORIGIN is for the dynamic loader
	"$srcdir/scripts/install-hook.sh" "$dir/bin/python-sb" '$ORIGIN/../lib' >/dev/null ||
		die "cannot make the hooked copy of $build"
}
hooked new "$1"
builds=(new)
if [[ $# -eq 2 ]]; then
	hooked base "$2"
	builds=(base new)
fi

# The cwd: the profiles and the workload only (sys.path[0] is listed by the
# guard: a fuller directory costs more).
run=$work/run
mkdir -p "$run"
cp -- "$here/workload-small.py" "$run/"
for p in none noguard; do
	{
		echo os-sandbox=none
		[[ $p == noguard ]] && echo py-sandbox=false
		# shellcheck disable=SC2016  # expanded by python-sb
		printf '%s\n' 'python-import=*' 'env=HOME=${HOME}' 'env=LANG=${LANG}' 'env=PATH=${PATH}' \
			'env=PYTHONHASHSEED=${PYTHONHASHSEED}'
	} >"$run/$p.py-sandboxes"
done
cd -- "$run"
clean_env=(env -i "HOME=$HOME" "LANG=${LANG:-C.UTF-8}" "PATH=$PATH" PYTHONHASHSEED=0)

args_of() { if [[ $1 == pass ]]; then echo "-c pass"; else echo workload-small.py; fi; }
variants() { # NAME=COMMAND lines for one workload
	local w=$1 b
	echo "python3=$PYTHON3 $(args_of "$w")"
	echo "noguard=$work/new/bin/python-sb --pysandboxes-config noguard.py-sandboxes $(args_of "$w")"
	for b in "${builds[@]}"; do
		echo "guard-$b=$work/$b/bin/python-sb --pysandboxes-config none.py-sandboxes $(args_of "$w")"
	done
}

echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for w in pass small; do
	echo "## workload: $(args_of "$w")"
	read -ra wargs <<<"$(args_of "$w")"
	mapfile -t vs < <(variants "$w")
	for v in "${vs[@]}"; do
		name=${v%%=*}
		read -ra cmd <<<"${v#*=}"
		line="$name:"
		if [[ ${CALLGRIND:-1} != 0 ]]; then
			irefs=$("${clean_env[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
				"${cmd[@]}" 2>&1 >/dev/null | sed -n 's/.*Collected : //p')
			line+=" instructions $irefs"
		fi
		"${clean_env[@]}" strace -f -c -o "$work/strace.txt" "${cmd[@]}" >/dev/null 2>&1
		calls=$(awk '$NF == "total" {print $4}' "$work/strace.txt")
		line+=" syscalls $calls"
		if command -v perf >/dev/null; then
			faults=$("${clean_env[@]}" perf stat -x, -e page-faults -r 20 "${cmd[@]}" 2>&1 >/dev/null |
				awk -F, '/page-faults/ {print $1}')
			line+=" page-faults $faults"
		fi
		echo "$line"
	done
	# The events the guard is asked about (python3's own run of the
	# workload: python-sb's guard raises a few more through its wrappers).
	echo "audit events: $("${clean_env[@]}" "$PYTHON3" -c '
import collections, sys
counts = collections.Counter()
sys.addaudithook(lambda event, args: counts.update((event,)))
sys.argv = sys.argv[1:]
if sys.argv[0] == "-c":
    exec(sys.argv[1])
else:
    import runpy, io, contextlib
    with contextlib.redirect_stdout(io.StringIO()):
        runpy.run_path(sys.argv[0], run_name="__main__")
seen = sorted(counts.items(), key=lambda kv: -kv[1])  # no import: nothing more to count
print(sum(n for _, n in seen), dict(seen))
' "${wargs[@]}")"
	"${clean_env[@]}" "$PYTHON3" "$here/interleave.py" --runs "$IRUNS" --warmup 5 \
		--json "$out/guard-startup-$w.json" "${vs[@]}"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
