#!/usr/bin/env bash
# Runs one libFuzzer target of a -Dfuzz=true build (tests/fuzz/README.md):
#   tests/fuzz/run.sh BUILD TARGET SECONDS [libFuzzer options...]
# It starts from the target's seed corpus; new inputs go to $FUZZ_CORPUS (a
# temporary directory by default, removed at the end), crashes to
# $FUZZ_ARTIFACTS (default BUILD/fuzz-artifacts/TARGET/). The targets write
# their temporary files under a directory of this script's, removed whatever
# happens. Exit status: libFuzzer's (non-zero on a finding).
set -euo pipefail
build=$1 target=$2 seconds=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)

# The rule-file targets write a file per input (learn-file fsyncs it),
# serve-request a run directory per valid request: in memory when possible,
# several times faster than on disk.
base=${TMPDIR:-/tmp}
case $target in
profile | explain | learn-file | serve-request) [ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm ;;
esac
work=$(mktemp -d "$base/sb-fuzz-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/tmp"
corpus=${FUZZ_CORPUS:-$work/corpus}
artifacts=${FUZZ_ARTIFACTS:-$build/fuzz-artifacts/$target}
mkdir -p "$corpus" "$artifacts"

# What each target reads: the longest useful input, its dictionary.
opts=(-timeout=10 -print_final_stats=1 "-artifact_prefix=$artifacts/")
case $target in
profile | explain) opts+=(-max_len=4096 "-dict=$here/profile.dict") ;;
result-guard | unpickle) opts+=(-max_len=16384 "-dict=$here/pickle.dict") ;;
frame) opts+=(-max_len=70000) ;;
net-rule | expand | units) opts+=(-max_len=512 "-dict=$here/$target.dict") ;;
learn-file) opts+=(-max_len=16384 "-dict=$here/profile.dict") ;;
serve-request) opts+=(-max_len=16384 "-dict=$here/serve-request.dict") ;;
eval) opts+=(-max_len=8192 "-dict=$here/eval.dict") ;;
zygote-proto) opts+=(-max_len=4096) ;;
queue-job) opts+=(-max_len=16384 "-dict=$here/queue-job.dict") ;;
*)
	echo "run.sh: unknown target '$target'" >&2
	exit 2
	;;
esac
case $target in unpickle | eval) opts+=(-rss_limit_mb=4096) ;; esac

# Seeds the fuzzer may not know yet; the found inputs of earlier runs are in
# the same directory.
TMPDIR=$work/tmp "$build/tests/fuzz-$target" "${opts[@]}" -max_total_time="$seconds" \
	"$@" "$corpus" "$here/corpus/$target" </dev/null
