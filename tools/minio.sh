#!/usr/bin/env bash
# Build the MinIO server (a real S3-compatible store, for the tests) from source with Go, into a
# cache outside the clone. Idempotent: a second run builds nothing. Prints the binary's path.
#   VARLAKE_CACHE  the cache folder (default ~/.cache/varlake)
set -euo pipefail
MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"
CACHE="${VARLAKE_CACHE:-$HOME/.cache/varlake}"
BIN_DIR="$CACHE/bin"
STAMP="$BIN_DIR/.minio-$MINIO_VERSION"
if [[ -x "$BIN_DIR/minio" && -f "$STAMP" ]]; then
    echo "$BIN_DIR/minio"
    exit 0
fi
if ! command -v go >/dev/null 2>&1; then
    echo "tools/minio.sh: Go is needed to build MinIO (go install github.com/minio/minio@$MINIO_VERSION)" >&2
    exit 1
fi
mkdir -p "$BIN_DIR"
echo "tools/minio.sh: building MinIO $MINIO_VERSION into $BIN_DIR (a few minutes, once)" >&2
# Build into a temporary folder and move the binary in when complete: an interrupted build never
# leaves a half-written binary that a later run would take for a good one.
TMP_BIN="$(mktemp -d "$BIN_DIR/.build-XXXXXX")"
trap 'rm -rf "$TMP_BIN"' EXIT
GOBIN="$TMP_BIN" go install "github.com/minio/minio@$MINIO_VERSION" >&2
mv -f "$TMP_BIN/minio" "$BIN_DIR/minio"
rm -f "$BIN_DIR"/.minio-*
touch "$STAMP"
echo "$BIN_DIR/minio"
