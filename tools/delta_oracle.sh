#!/usr/bin/env bash
# The delta-spark oracle of issue 31: a side virtualenv with PySpark 4.2.0 and delta-spark 4.4.0,
# and delta-spark's JARs from Maven Central (tools/delta_oracle/pom.xml), both cached outside the
# clone. Idempotent: a second run installs and downloads nothing. Prints the oracle's folder, which
# holds `venv/` and `jars/`.
#   VARLAKE_CACHE  the cache folder (default ~/.cache/varlake)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${VARLAKE_CACHE:-$HOME/.cache/varlake}"
ROOT="$CACHE/oracles/delta-spark"
POM="$HERE/delta_oracle/pom.xml"
PYSPARK_VERSION="4.2.0"
DELTA_VERSION="4.4.0"
HASH="$( (cat "$POM"; echo "$PYSPARK_VERSION $DELTA_VERSION") | sha256sum | cut -c1-16)"
STAMP="$ROOT/.ready-$HASH"
if [[ -f "$STAMP" ]]; then
    echo "$ROOT"
    exit 0
fi
for tool in mvn java; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "tools/delta_oracle.sh: $tool is needed to build the delta-spark oracle" >&2
        exit 1
    fi
done
PYTHON="${PYTHON:-python3}"
mkdir -p "$CACHE/oracles"
echo "tools/delta_oracle.sh: building the delta-spark oracle in $ROOT (PySpark $PYSPARK_VERSION, delta-spark $DELTA_VERSION; once)" >&2
TMP="$(mktemp -d "$CACHE/oracles/.delta-spark-XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
"$PYTHON" -m venv "$TMP/venv"
"$TMP/venv/bin/python" -m pip install --quiet --upgrade pip >&2
"$TMP/venv/bin/python" -m pip install --quiet "pyspark==$PYSPARK_VERSION" "delta-spark==$DELTA_VERSION" >&2
(cd "$HERE/delta_oracle" && mvn -q -B dependency:copy-dependencies -DoutputDirectory="$TMP/jars" \
    -DincludeScope=runtime -DexcludeGroupIds=org.apache.spark,org.scala-lang,org.apache.hadoop) >&2
rm -rf "$ROOT"
mv "$TMP" "$ROOT"
# The virtualenv's scripts name the folder they were made in; python -m needs none of them.
touch "$STAMP"
echo "$ROOT"
