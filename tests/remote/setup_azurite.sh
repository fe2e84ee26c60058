#!/usr/bin/env bash
# Installs Azurite (Microsoft's Azure Storage emulator, from npm) and the Azure Storage SDK the tests
# upload their objects with, pinned, into target/azurite. The Azure tests (tests/remote/azure.rs) start
# `target/azurite/node_modules/.bin/azurite-blob` on a free port of 127.0.0.1; without it they fail when
# VZARR_REQUIRE_AZURITE=1 (`./dev test` sets it after this script succeeded), else print a notice.
# Needs Node.js >= 18 and npm. Exits non-zero, with the reason on the last line of stderr, when
# Azurite cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/../.."

DIR=target/azurite
AZURITE=3.35.0
SDK=12.32.0

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "tests/remote/setup_azurite.sh: node and npm not found (Azurite needs Node.js >= 18)" >&2
  exit 1
fi
if ! node -e 'process.exit(parseInt(process.versions.node) >= 18 ? 0 : 1)'; then
  echo "tests/remote/setup_azurite.sh: Node.js $(node --version) is too old (Azurite needs >= 18)" >&2
  exit 1
fi
installed() {
  (cd "$DIR" && node -p "require('azurite/package.json').version + ' ' + require('@azure/storage-blob/package.json').version") 2>/dev/null || true
}
mkdir -p "$DIR"
if [ "$(installed)" != "$AZURITE $SDK" ]; then
  [ -f "$DIR/package.json" ] || echo '{ "private": true }' >"$DIR/package.json"
  if ! npm install --prefix "$DIR" --no-audit --no-fund --save-exact "azurite@$AZURITE" "@azure/storage-blob@$SDK" >&2; then
    echo "tests/remote/setup_azurite.sh: npm could not install azurite@$AZURITE (no network access to the npm registry?)" >&2
    exit 1
  fi
fi
echo "azurite and @azure/storage-blob: $(installed)" >&2
if [ ! -x "$DIR/node_modules/.bin/azurite-blob" ]; then
  echo "tests/remote/setup_azurite.sh: npm installed azurite but $DIR/node_modules/.bin/azurite-blob is missing" >&2
  exit 1
fi
