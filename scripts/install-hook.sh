#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Makes the hooked python-sb (docs/development.md, "Two binaries"): a copy of
# the system's python3.X with python-sb-hook.so added as a needed library, so
# that python-sb runs Debian's own interpreter code (LTO + PGO).
#
# Usage: install-hook.sh DEST LIBDIR [INTERPRETER [VERSION [MODE]]]
#   DEST         the file to write (relative: under $MESON_INSTALL_DESTDIR_PREFIX)
#   LIBDIR       where the copy finds python-sb-hook.so at run time; '$ORIGIN/...'
#                is relative to the copy (what meson install uses, so that a
#                staged or relocated install works)
#   INTERPRETER  the interpreter to copy (default /usr/bin/python3.11)
#   VERSION      the CPython version python-sb-hook.so was compiled against: a
#                different INTERPRETER keeps the static python-sb (auto) or
#                fails (hooked)
#   MODE         auto (default): without patchelf or with another version, keep
#                what is at DEST and say so; hooked: fail instead
set -euo pipefail
dest=$1 libdir=$2 interp=${3:-/usr/bin/python3.11} want=${4:-} mode=${5:-auto}
if [[ $dest != /* && -n ${MESON_INSTALL_DESTDIR_PREFIX:-} ]]; then
	dest=$MESON_INSTALL_DESTDIR_PREFIX/$dest
fi
keep() {
	[[ $mode == auto ]] || { echo "install-hook.sh: $1" >&2; exit 1; }
	echo "install-hook.sh: $1: $dest stays the statically linked python-sb" >&2
	exit 0
}
command -v patchelf >/dev/null || keep "patchelf not found (bash scripts/deps.sh build)"
[[ -x $interp ]] || keep "$interp not found"
if [[ -n $want ]]; then
	have=$("$interp" -c 'import platform; print(platform.python_version())')
	[[ $have == "$want" ]] || keep "$interp is CPython $have, python-sb was built against $want"
fi
tmp=$(mktemp "$dest.XXXXXX")
trap 'rm -f "$tmp"' EXIT
cp -- "$interp" "$tmp"
patchelf --add-needed "$libdir/python-sb-hook.so" "$tmp"
chmod 755 "$tmp"
# Every symbol resolved now rather than at its first call: a CPython function
# python-sb uses that this interpreter does not export fails here, not in a
# user's program.
if ! out=$(LD_BIND_NOW=1 "$tmp" --version 2>&1); then
	keep "the hooked copy does not start: $out"
fi
mv -f -- "$tmp" "$dest"
trap - EXIT
