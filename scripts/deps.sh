#!/usr/bin/env bash
# Installs the Debian 12 packages the project needs; does nothing when they are
# already there (so repeated runs and CI stay fast). Usage: deps.sh [build|test|kernel]
set -euo pipefail

# os-sandbox=qemu's own guest kernel (scripts/qemu-kernel.sh): Debian's Linux
# source and what its build needs (objtool wants libelf).
kernel_packages=(linux-source-6.1 make gcc flex bison bc libelf-dev)

# libmicrohttpd and jansson: python-sb serve and the run report; libhiredis:
# serve --queue redis:// (docs/serve-queue.md); musl-tools: the timeout
# supervisor, static on musl (meson.build says why).
packages=(meson ninja-build gcc pkg-config python3 python3-dev libpython3.11-dev libseccomp-dev
	libmicrohttpd-dev libjansson-dev libhiredis-dev patchelf musl-tools)
case "${1:-build}" in
test)
	# chromium: the playground's browser test (driven by playwright-core);
	# python3-ipython: ipython-sb, installed and tested when IPython is there.
	# slirp4netns and nftables: os-sandbox=unshare with net= rules (at run
	# time too; python-sb names them when they are missing).
	# bubblewrap and firejail: the wrapper providers' tools (os-sandbox=bwrap, firejail).
	packages+=(python3-pytest clang clang-format util-linux chromium python3-ipython slirp4netns
		nftables bubblewrap firejail)
	# os-sandbox=qemu: qemu's x86 machines, a kernel with 9p (the cloud kernel
	# has none) and xz to unpack it once (at run time too: python-sb names them).
	packages+=(qemu-system-x86 linux-image-amd64 xz-utils "${kernel_packages[@]}")
	# redis-server (and redis-cli): the tests of serve --queue start their own.
	packages+=(redis-server redis-tools)
	;;
kernel)
	packages+=("${kernel_packages[@]}")
	;;
bench)
	# bench/serve.sh: the load generators, and bwrap for the baseline.
	packages+=(wrk hey bubblewrap redis-server redis-tools)
	;;
esac
# The playground is bundled by esbuild (npm): node and npm as commands, which
# a node from another source provides as well as Debian's packages.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps.sh: missing Debian packages: ${missing[*]} (run as root to install them)" >&2
		exit 1
	fi
	echo "deps.sh: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
