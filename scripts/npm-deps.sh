#!/usr/bin/env bash
# Installs the playground's npm packages (web/package-lock.json: CodeMirror,
# esbuild, playwright-core) into web/node_modules; does nothing when they are
# already the locked ones. Install scripts are not run: esbuild's binary comes
# in its platform package, and playwright-core drives Debian's chromium, so it
# downloads no browser.
set -euo pipefail
cd "$(dirname "$0")/../web"

if ! command -v npm >/dev/null; then
	echo "npm-deps.sh: npm is missing (bash scripts/deps.sh build installs it)" >&2
	exit 1
fi
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat node_modules/.installed-lock 2>/dev/null)" = "$want" ]; then
	exit 0
fi
echo "npm-deps.sh: npm ci (web/)"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
echo "$want" >node_modules/.installed-lock
