#!/usr/bin/env bash
# Builds everything and runs the whole test suite: format check, C unit tests
# (TAP), the fuzz corpora replayed, an ASan/UBSan build of all of it, a short
# run of every fuzz target, and the pytest integration suite against an
# installed python-sb (as root and as an unprivileged user). The second of the
# README's two set-up commands.
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

echo "== os-sandbox=qemu's guest kernel (built once per source and configuration)"
qemu_kernel=$(bash scripts/qemu-kernel.sh)
echo "$qemu_kernel"

echo "== build and unit tests (gcc)"
setup build-test --buildtype=debugoptimized -Dplayground=enabled -Dqemu_kernel="$qemu_kernel"
meson compile -C build-test
meson test -C build-test --print-errorlogs --no-suite integration

echo "== release build (what scripts/install.sh builds: -O3 shows warnings -O2 does not)"
setup build-release-check --buildtype=release -Dplayground=enabled
meson compile -C build-release-check

echo "== build and unit tests (clang, ASan + UBSan)"
CC=clang setup build-asan --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
	-Dplayground=enabled -Dqemu_kernel="$qemu_kernel"
meson compile -C build-asan
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C build-asan --print-errorlogs \
	--no-suite integration

echo "== libFuzzer targets: build and a short run of each (tests/fuzz/README.md)"
CC=clang setup build-fuzz --buildtype=debug -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false
# Seconds per target: the parsers of untrusted bytes get more.
fuzz_targets=(result-guard:20 unpickle:20 frame:10 profile:15 explain:10 net-rule:10 expand:10
	units:10 learn-file:10 serve-request:10 eval:15 zygote-proto:10
	queue-job:10)
fuzz_builds=()
for t in "${fuzz_targets[@]}"; do fuzz_builds+=("tests/fuzz-${t%%:*}"); done
meson compile -C build-fuzz "${fuzz_builds[@]}"
for t in "${fuzz_targets[@]}"; do
	name=${t%%:*}
	if ! bash tests/fuzz/run.sh build-fuzz "$name" "${t##*:}" >"build-fuzz/fuzz-$name.log" 2>&1; then
		tail -40 "build-fuzz/fuzz-$name.log"
		echo "fuzz-$name: a finding; the input is in build-fuzz/fuzz-artifacts/$name/" >&2
		exit 1
	fi
	echo "fuzz-$name: $(grep -E '^Done [0-9]+ runs' "build-fuzz/fuzz-$name.log")"
done

# The integration suite (meson's "integration" suite, tests/integration/run.sh)
# runs the ASan launcher, then the *installed* one. The stage directory must be
# reachable by the unprivileged user the suite switches to.
stage=$(mktemp -d /tmp/py-sandboxes-stage.XXXXXX)
trap 'rm -rf "$stage"' EXIT
chmod 755 "$stage"
meson install -C build-test --destdir "$stage" >/dev/null
installed=$(find "$stage" -path '*/bin/python-sb' -type f | head -n1)
# What meson install installs here is the hooked copy of the system's python3
# (docs/development.md, "Two binaries"): the suite below is its gate.
if ! grep -q python-sb-hook.so "$installed"; then
	echo "test.sh: $installed is not the hooked copy (see meson install's messages)" >&2
	exit 1
fi
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
