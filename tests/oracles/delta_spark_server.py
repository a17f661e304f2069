"""The delta-spark oracle's process: run by the side virtualenv's Python (PySpark 4.2.0 and
delta-spark 4.4.0, built by ``tools/delta_oracle.sh``), never by varlake's.

It imports nothing of varlake. It starts one local SparkSession with Delta's extension (and, when
``DELTA_ORACLE_EXTRA_JARS`` names them, Hadoop's S3A jars on ``spark.jars``) and answers
JSON requests, one per line on stdin, with one JSON line on stdout (Spark's own output goes to
stderr):

- ``{"op": "sql", "sql": "...", "collect": true}`` runs a statement; with ``collect`` the answer
  holds ``columns`` and ``rows`` (each row as ``Row.asDict(recursive=True)``, with Variant values
  as their JSON text, bytes as hex, dates and times as ISO text, decimals as text).
- ``{"op": "exec", "code": "..."}`` runs Python with ``spark`` (and ``DeltaTable``) in scope; the
  value it leaves in ``result`` is the answer (JSON-able, or converted as above).
- ``{"op": "ping"}`` answers ``{"ok": true, "spark": version, "delta": version}``.

A failed request answers ``{"ok": false, "error": class name, "message": text}`` and the process
goes on serving.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import glob
import json
import os
import sys
import traceback


def _session(jars_dir: str, warehouse: str):
    from pyspark.sql import SparkSession

    jars = sorted(glob.glob(os.path.join(jars_dir, "*.jar")))
    jars += [j for j in os.environ.get("DELTA_ORACLE_EXTRA_JARS", "").split(",") if j]  # S3A, when fetched
    jars = ",".join(jars)
    builder = (
        SparkSession.builder.master(os.environ.get("DELTA_ORACLE_MASTER", "local[2]"))
        .appName("delta-spark-oracle")
        .config("spark.jars", jars)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", os.environ.get("DELTA_ORACLE_MEMORY", "1g"))
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={warehouse}")
    )
    for pair in filter(None, os.environ.get("DELTA_ORACLE_CONF", "").split("\n")):
        key, _, value = pair.partition("=")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def plain_value(value):
    """A value of a collected Row as JSON: Variant as its JSON text, bytes as hex."""
    from pyspark.sql import Row

    if isinstance(value, Row):
        return {k: plain_value(v) for k, v in value.asDict(recursive=False).items()}
    if isinstance(value, dict):
        return {str(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, datetime.datetime):
        return {"$timestamp": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"$date": value.isoformat()}
    if type(value).__name__ == "VariantVal":
        return {"$variant": value.toJson()}
    if isinstance(value, float) and value != value:
        return {"$float": "NaN"}
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return {"$float": str(value)}
    return value


def _answer(request, spark, scope):
    op = request.get("op")
    if op == "ping":
        import delta

        return {"ok": True, "spark": spark.version, "delta": getattr(delta, "__version__", "?")}
    if op == "sql":
        frame = spark.sql(request["sql"])
        if not request.get("collect", False):
            return {"ok": True}
        rows = frame.collect()
        return {"ok": True, "columns": frame.columns, "rows": [plain_value(r) for r in rows]}
    if op == "exec":
        scope.pop("result", None)
        exec(compile(request["code"], "<oracle request>", "exec"), scope)  # noqa: S102 -- test code
        return {"ok": True, "result": plain_value(scope.get("result"))}
    raise ValueError(f"unknown op {op!r}")


def main() -> int:
    jars_dir, warehouse = sys.argv[1], sys.argv[2]
    # The protocol gets its own copy of fd 1; fd 1 itself then points at stderr, so nothing the
    # JVM prints (VACUUM prints "Deleted N files ...") or request code prints breaks the protocol.
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    spark = _session(jars_dir, warehouse)
    from delta.tables import DeltaTable

    scope = {"spark": spark, "DeltaTable": DeltaTable}
    out.write(json.dumps({"ok": True, "ready": True, "spark": spark.version}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = _answer(json.loads(line), spark, scope)
        except Exception as exc:  # noqa: BLE001 -- every failure is answered, the server goes on
            answer = {
                "ok": False,
                "error": type(exc).__name__,
                "message": str(exc)[:4000],
                "trace": traceback.format_exc()[-4000:],
            }
        out.write(json.dumps(answer, default=str) + "\n")
        out.flush()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
