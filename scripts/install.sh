#!/usr/bin/env bash
# Builds python-sb (release), installs it under /usr/local and runs the bundled
# example. The first of the README's two set-up commands.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh build
if [ -d build-release ]; then
	meson setup --reconfigure build-release --buildtype=release --prefix=/usr/local
else
	meson setup build-release --buildtype=release --prefix=/usr/local
fi
meson compile -C build-release
meson install -C build-release --strip

echo
echo "== python-sb examples/hello/hello.py"
cd examples/hello
python-sb hello.py
