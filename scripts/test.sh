#!/usr/bin/env bash
# Builds everything and runs the whole test suite: format check, C unit tests
# (TAP), the fuzz corpus replay, an ASan/UBSan build of all of it, and the
# pytest integration suite against an installed python-sb (as root and as an
# unprivileged user). The second of the README's two set-up commands.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

bash scripts/deps.sh test
bash scripts/npm-deps.sh

echo "== clang-format"
git ls-files '*.c' '*.h' | xargs clang-format --dry-run --Werror

setup() { # dir, meson options...
	local dir=$1
	shift
	if [ -d "$dir" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
}

echo "== build and unit tests (gcc)"
setup build-test --buildtype=debugoptimized -Dplayground=enabled
meson compile -C build-test
meson test -C build-test --print-errorlogs --no-suite integration

echo "== release build (what scripts/install.sh builds: -O3 shows warnings -O2 does not)"
setup build-release-check --buildtype=release -Dplayground=enabled
meson compile -C build-release-check

echo "== build and unit tests (clang, ASan + UBSan)"
CC=clang setup build-asan --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
	-Dplayground=enabled
meson compile -C build-asan
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C build-asan --print-errorlogs \
	--no-suite integration

echo "== libFuzzer target: build and a short run over the corpus"
CC=clang setup build-fuzz --buildtype=debug -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false
meson compile -C build-fuzz tests/fuzz-profile
fuzz_work=$(mktemp -d)
cp tests/fuzz/corpus/profile/* "$fuzz_work"/
./build-fuzz/tests/fuzz-profile -max_total_time=20 -max_len=4096 -timeout=5 \
	"$fuzz_work" >/dev/null 2>build-fuzz/fuzz.log || { tail -40 build-fuzz/fuzz.log; exit 1; }
rm -rf "$fuzz_work"
grep -E '^Done [0-9]+ runs' build-fuzz/fuzz.log || tail -1 build-fuzz/fuzz.log

# The integration suite (meson's "integration" suite, tests/integration/run.sh)
# runs the ASan launcher, then the *installed* one. The stage directory must be
# reachable by the unprivileged user the suite switches to.
stage=$(mktemp -d /tmp/py-sandboxes-stage.XXXXXX)
trap 'rm -rf "$stage"' EXIT
chmod 755 "$stage"
meson install -C build-test --destdir "$stage" >/dev/null
installed=$(find "$stage" -path '*/bin/python-sb' -type f | head -n1)
# The pysandboxes package of the same install, for the partial-mode tests.
staged_pkg=$(dirname "$(find "$stage" -type d -name pysandboxes -path '*-packages/*' | head -n1)")

# The playground's browser test must run, not skip, here.
export PLAYGROUND_REQUIRED=1

echo "== integration tests on the ASan build"
# CPython frees little at exit by design: leak reports would be noise here. An
# ASan pysandboxes._core cannot load into /usr/bin/python3: the gcc build's.
# The 10,000-run load test runs once, below.
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	PYSANDBOXES_PYTHONPATH="$top/build-test/python" \
	meson test -C build-asan --suite integration --verbose --test-args='-m "not load"'

echo "== integration tests on the installed python-sb ($installed), with the load test"
PYTHON_SB="$installed" PYSANDBOXES_PYTHONPATH="$staged_pkg" \
	meson test -C build-test --suite integration --verbose

# The suite runs as root and creates files for 'nobody': it must leave the
# machine as it found it.
if [ "$(stat -c %a /tmp)" != 1777 ]; then
	echo "test.sh: the suite changed the mode of /tmp to $(stat -c %a /tmp)" >&2
	exit 1
fi
