#!/usr/bin/env bash
# Builds python-sb (release), installs it under /usr/local and runs the bundled
# example. The first of the README's two set-up commands.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh build
# os-sandbox=qemu's own guest kernel where qemu is installed (a few minutes,
# once; kept in build-qemu-kernel/): without it python-sb boots Debian's
# kernel, about 1.5 s slower under emulation. PYSANDBOXES_NO_QEMU_KERNEL=1
# skips it.
options=(--buildtype=release --prefix=/usr/local)
if command -v qemu-system-x86_64 >/dev/null && [ -z "${PYSANDBOXES_NO_QEMU_KERNEL:-}" ]; then
	bash scripts/deps.sh kernel
	options+=(-Dqemu_kernel="$(bash scripts/qemu-kernel.sh)")
fi
if [ -d build-release ]; then
	meson setup --reconfigure build-release "${options[@]}"
else
	meson setup build-release "${options[@]}"
fi
meson compile -C build-release
meson install -C build-release --strip

echo
echo "== python-sb examples/hello/hello.py"
cd examples/hello
python-sb hello.py
