#!/usr/bin/env bash
# Installs the Debian 12 packages the project needs; does nothing when they are
# already there (so repeated runs and CI stay fast). Usage: deps.sh [build|test]
set -euo pipefail

packages=(meson ninja-build gcc pkg-config python3 python3-dev libpython3.11-dev libseccomp-dev)
if [ "${1:-build}" = test ]; then
	# bubblewrap and firejail: the wrapper providers' tools (os-sandbox=bwrap, firejail).
	packages+=(python3-pytest clang clang-format util-linux bubblewrap firejail)
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
