#!/usr/bin/env bash
# Line and branch coverage of the code under test by each fuzz target's
# corpus (tests/fuzz/README.md), with clang's source-based coverage:
#   tests/fuzz/coverage.sh BUILD [CORPORA]
# BUILD is configured for coverage if needed; CORPORA (optional) holds one
# directory per target with more inputs (run.sh's FUZZ_CORPUS of long runs).
set -euo pipefail
build=$1
extra=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

# The build's own generators are instrumented too: their profiles go here.
export LLVM_PROFILE_FILE=$build/generators-%p.profraw
flags=(-Dc_args=-fprofile-instr-generate\ -fcoverage-mapping -Dc_link_args=-fprofile-instr-generate)
if [ -d "$build" ]; then
	CC=clang meson setup --reconfigure "$build" --buildtype=debug "${flags[@]}" >/dev/null
else
	CC=clang meson setup "$build" --buildtype=debug "${flags[@]}" >/dev/null
fi

declare -A sources=(
	[result-guard]="src/wire/result-guard.c"
	[unpickle]="src/partial/unpickle.c src/wire/result-guard.c"
	[frame]="src/wire/frame.c"
	[profile]="src/profile/profile-load.c src/profile/profile-keys.c src/profile/profile-check.c"
	[explain]="src/launcher/explain.c src/launcher/cli.c src/kernel/boundary.c src/policy/env-policy.c"
	[net-rule]="src/profile/net-rule.c"
	[expand]="src/base/expand.c"
	[units]="src/base/units.c"
	[learn-file]="src/learn/learn-file.c"
	[serve-request]="src/serve/request.c src/serve/rundir.c"
	[eval]="src/eval/eval-ast.c src/eval/eval-rewrite.c src/eval/eval-report.c src/eval/eval-profile.c"
)
declare -A corpora=(
	[result-guard]="result-guard unpickle"
	[unpickle]="unpickle result-guard"
	[profile]="profile $top/tests/data/profiles/valid $top/tests/data/profiles/invalid"
)
for t in result-guard unpickle frame profile explain net-rule expand units learn-file \
	serve-request eval; do
	meson compile -C "$build" "tests/fuzz-$t-replay" >/dev/null
	dirs=()
	for c in ${corpora[$t]:-$t}; do
		case $c in
		/*) dirs+=("$c") ;;
		*)
			dirs+=("$here/corpus/$c")
			[ -n "$extra" ] && [ -d "$extra/$c" ] && dirs+=("$extra/$c")
			;;
		esac
	done
	rm -f "$build/cov-$t.profraw"
	LLVM_PROFILE_FILE=$build/cov-$t.profraw "$build/tests/fuzz-$t-replay" "${dirs[@]}" >/dev/null
	llvm-profdata merge -o "$build/cov-$t.profdata" "$build/cov-$t.profraw"
	echo "== $t"
	llvm-cov report "$build/tests/fuzz-$t-replay" -instr-profile="$build/cov-$t.profdata" |
		awk -v want="${sources[$t]}" 'BEGIN { n = split(want, w, " ") }
			NR <= 2 { print; next }
			{ for (i = 1; i <= n; i++)
				if (substr($1, length($1) - length(w[i]) + 1) == w[i]) print }'
done
