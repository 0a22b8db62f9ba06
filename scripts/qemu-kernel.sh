#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Builds os-sandbox=qemu's own guest kernel (docs/profile.md, "os-sandbox=qemu"):
# Debian's Linux source (the package linux-source-6.1, scripts/deps.sh kernel)
# configured as tinyconfig plus data/qemu-kernel.config, everything the guest
# needs built in. Under emulation it reaches the guest's init about 1.4 s
# sooner than Debian's generic kernel and loads no modules (bench/README.md).
#
# Once per source version and configuration: the result is kept as
# CACHE_DIR/<key>/vmlinux (default: build-qemu-kernel/ in the checkout), and
# its path is printed on stdout. A build takes about 6 minutes on 2 CPUs; the
# unpacked source (1.5 GB) is removed afterwards.
#
# Usage: scripts/qemu-kernel.sh [CACHE_DIR]
# Then: meson setup ... -Dqemu_kernel=<the printed path>, which installs it
# beside the guest's init, where python-sb takes it over /boot's kernel.
set -euo pipefail
top=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cache=${1:-$top/build-qemu-kernel}
fragment=$top/data/qemu-kernel.config

tarball=$(ls -1 /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n1 || true)
if [[ -z $tarball ]]; then
	echo "qemu-kernel.sh: no /usr/src/linux-source-*.tar.xz: install the Debian package" \
		"linux-source-6.1 (bash scripts/deps.sh kernel)" >&2
	exit 2
fi
package=$(basename "$tarball" .tar.xz)
version=$(dpkg-query -W -f='${Version}' "$package" 2>/dev/null ||
	stat -c '%s-%Y' "$tarball")
key=$( (echo "$package $version"; cat "$fragment") | sha256sum | cut -c1-16)
out=$cache/$key/vmlinux
if [[ -s $out ]]; then
	echo "$out"
	exit 0
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
echo "qemu-kernel.sh: building the guest kernel from $package $version (a few minutes)" >&2
tar -xJf "$tarball" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n1)
obj=$work/obj
make -s -C "$src" O="$obj" ARCH=x86_64 tinyconfig >/dev/null
(cd "$obj" && "$src/scripts/kconfig/merge_config.sh" -m .config "$fragment" >/dev/null)
make -s -C "$src" O="$obj" ARCH=x86_64 olddefconfig >/dev/null
# Every line of the fragment must have taken: a symbol renamed or a missing
# dependency in a newer source would otherwise drop a driver silently.
while IFS= read -r line; do
	case $line in
	CONFIG_*=n) want="# ${line%=n} is not set" ;;
	CONFIG_*) want=$line ;;
	*) continue ;;
	esac
	if ! grep -qxF -- "$want" "$obj/.config" &&
		! { [[ $line == *=n ]] && ! grep -q "^${line%=n}=" "$obj/.config"; }; then
		echo "qemu-kernel.sh: $line did not take in $package's configuration" >&2
		exit 1
	fi
done <"$fragment"
make -s -C "$src" O="$obj" ARCH=x86_64 -j"$(nproc)" vmlinux >"$work/make.log" 2>&1 ||
	{ tail -30 "$work/make.log" >&2; exit 1; }
mkdir -p "$cache/$key"
cp "$obj/vmlinux" "$out.tmp"
cp "$obj/.config" "$cache/$key/config"
mv "$out.tmp" "$out"
# Older builds (another source version or configuration) go.
find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name "$key" ! -name "$(basename "$work")" \
	-exec rm -rf -- {} +
echo "$out"
