#!/usr/bin/env bash
# Fetch the Hadoop S3A connector for PySpark 4.3 (hadoop-aws 3.5.0, the AWS SDK bundle, Spark's cloud
# committers: tools/s3a/pom.xml) from Maven Central into a cache outside the clone. Idempotent: a
# second run downloads nothing. Prints the folder of the JARs.
#   VARLAKE_CACHE  the cache folder (default ~/.cache/varlake)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${VARLAKE_CACHE:-$HOME/.cache/varlake}"
JARS="$CACHE/jars/s3a"
POM="$HERE/s3a/pom.xml"
# The stamp carries the pom's hash: a changed pom fetches again.
HASH="$(sha256sum "$POM" | cut -c1-16)"
STAMP="$JARS/.fetched-$HASH"
if [[ -f "$STAMP" ]]; then
    echo "$JARS"
    exit 0
fi
if ! command -v mvn >/dev/null 2>&1; then
    echo "tools/s3a.sh: Maven (mvn) is needed to fetch the S3A connector" >&2
    exit 1
fi
echo "tools/s3a.sh: fetching the S3A connector into $JARS (about 700 MB, once)" >&2
TMP="$(mktemp -d "$CACHE/.s3a-XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
(cd "$HERE/s3a" && mvn -q -B dependency:copy-dependencies -DoutputDirectory="$TMP" -DincludeScope=runtime) >&2
rm -rf "$JARS"
mkdir -p "$(dirname "$JARS")"
mv "$TMP" "$JARS"
touch "$STAMP"
echo "$JARS"
