#!/usr/bin/env bash
# Install Azurite (Microsoft's Azure Storage emulator, a real Blob service server, from npm) into
# a cache outside the clone, for the Azure tests. Idempotent: a second run installs nothing.
# Prints the path of its `azurite-blob` program.
#   VARLAKE_CACHE  the cache folder (default ~/.cache/varlake)
set -euo pipefail
AZURITE_VERSION="3.37.0"
CACHE="${VARLAKE_CACHE:-$HOME/.cache/varlake}"
DIR="$CACHE/azurite"
BIN="$DIR/node_modules/.bin/azurite-blob"
STAMP="$DIR/.azurite-$AZURITE_VERSION"
if [[ -x "$BIN" && -f "$STAMP" ]]; then
    echo "$BIN"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "tools/azurite.sh: npm (Node.js) is needed to install Azurite $AZURITE_VERSION" >&2
    exit 1
fi
echo "tools/azurite.sh: installing Azurite $AZURITE_VERSION into $DIR (about a minute, once)" >&2
mkdir -p "$CACHE"
TMP="$(mktemp -d "$CACHE/.azurite-XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm install --silent --no-audit --no-fund --no-save "azurite@$AZURITE_VERSION") >&2
rm -rf "$DIR"
mv "$TMP" "$DIR"
touch "$STAMP"
echo "$BIN"
