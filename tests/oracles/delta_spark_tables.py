"""Tables delta-spark 4.4 writes around Variant (issue 31, item 3), for varlake to read.

Runs in the oracle's side virtualenv (PySpark 4.2.0 + delta-spark 4.4.0) and imports nothing of
varlake: the tests send this file's text to the running oracle (``delta_spark.run``), or it runs
alone to regenerate the committed corpus (``tests/data/delta_spark``):

    ~/.cache/varlake/oracles/delta-spark/venv/bin/python tests/oracles/delta_spark_tables.py OUT_DIR

``generate(spark, out)`` writes each table of ``TABLES`` under ``out/<name>`` with its
``expected.json``: the rows as delta-spark reads them (the oracle's plain JSON form), and for each
filter on Variant paths the ids it answers and the names of the data files holding them (a reader
whose skipping drops one of those files is wrong); its history (version, timestamp in ms,
operation) and the rows at version 1.

The session confs of ``SESSION_CONF`` turn on what delta-spark 4.4 writes only when asked: Variant
min/max statistics read back from each shredded file's footer (``parseFooterForStats``, off by
default), at most ``stats.limitPerVariant`` paths per Variant column (its default, 0, keeps none).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys

# The oracle server's value form; it sits beside this file, on sys.path both when this runs as a
# script and when the oracle runs it.
from delta_spark_server import plain_value

#: delta-spark's own confs for Variant statistics (DeltaSQLConf at v4.4.0)
SESSION_CONF = {
    "spark.databricks.delta.variantShredding.parseFooterForStats": "true",
    "spark.databricks.delta.variantShredding.collectVariantDataSkippingStats": "true",
    "spark.databricks.delta.stats.limitPerVariant": "64",
    "spark.sql.variant.writeShredding.enabled": "true",
    "spark.databricks.delta.snapshotPartitions": "1",  # speed only: tiny tables
}


LONG = "p" * 36  # a prefix longer than delta-spark's 32-character string statistics


def _rows_sql(first: int, count: int, odd_a: bool = False) -> str:
    """``count`` rows from id ``first``: a Variant with an int, a string, a nested double, an
    array, and (``odd_a``) ``a`` as a string in one row so ``$.a`` has two types in that file."""
    values = []
    for i in range(first, first + count):
        a = f'"s{i}"' if odd_a and i == first else str(i)
        doc = f'{{"a": {a}, "b": "k{i % 7}", "c": {{"d": {i / 4}, "e": "2024-01-{1 + i % 28:02d}"}}, "t": [{i}, "x{i}"], "l": "{LONG}{i:03d}"}}'
        if i % 11 == 0:
            doc = "null"  # a Variant null
        values.append(f"({i}, parse_json('{doc}'))" if i % 13 else f"({i}, NULL)")
    return ", ".join(values)


#: name -> (CREATE with {path}, statements with {path}, ORDER BY, filters on Variant paths)
TABLES = {
    # shredding (variantShredding-preview), Variant stats, deletion vectors, change data feed,
    # row tracking, in-commit timestamps, v2 checkpoints (every 3 commits)
    "shredded_stats": (
        "CREATE TABLE delta.`{path}` (id BIGINT, v VARIANT) USING delta TBLPROPERTIES ("
        "'delta.enableVariantShredding'='true', 'delta.enableDeletionVectors'='true',"
        "'delta.enableChangeDataFeed'='true', 'delta.enableRowTracking'='true',"
        "'delta.enableInCommitTimestamps'='true', 'delta.checkpointPolicy'='v2',"
        "'delta.checkpointInterval'='3')",
        [
            "INSERT INTO delta.`{path}` VALUES " + _rows_sql(1, 20),
            "INSERT INTO delta.`{path}` VALUES " + _rows_sql(21, 20),
            "INSERT INTO delta.`{path}` VALUES " + _rows_sql(41, 20, odd_a=True),
            "INSERT INTO delta.`{path}` VALUES " + _rows_sql(61, 20),
            "DELETE FROM delta.`{path}` WHERE id % 5 = 0",
            "UPDATE delta.`{path}` SET v = parse_json('{\"a\": 1000, \"b\": \"updated\"}') WHERE id IN (3, 64)",
        ],
        "id",
        [
            "try_variant_get(v, '$.a', 'bigint') > 70",
            "try_variant_get(v, '$.a', 'bigint') BETWEEN 25 AND 30",
            "v:b::string = 'k3'",
            "v:c.d::double < 2.0",
            "v:c.e::date = DATE'2024-01-05'",
            "try_variant_get(v, '$.a', 'bigint') = 1000",
            "v:a::string = 's41'",
            "v:t[0]::int = 34",
            "v:l::string = 'pppppppppppppppppppppppppppppppppppp046'",
            "v:l::string > 'pppppppppppppppppppppppppppppppppppp070'",
            "v IS NULL",
        ],
    ),
    # liquid clustering (clusteringColumns domain metadata), OPTIMIZE, deletion vectors, a MERGE
    "clustered": (
        "CREATE TABLE delta.`{path}` (id BIGINT, k STRING, v VARIANT) USING delta CLUSTER BY (k, id)"
        " TBLPROPERTIES ('delta.enableVariantShredding'='true', 'delta.enableDeletionVectors'='true')",
        [
            "INSERT INTO delta.`{path}` SELECT id, concat('k', id % 3), v FROM VALUES " + _rows_sql(1, 15) + " AS s(id, v)",
            "INSERT INTO delta.`{path}` SELECT id, concat('k', id % 3), v FROM VALUES " + _rows_sql(16, 15) + " AS s(id, v)",
            "OPTIMIZE delta.`{path}`",
            "INSERT INTO delta.`{path}` SELECT id, concat('k', id % 3), v FROM VALUES " + _rows_sql(31, 15) + " AS s(id, v)",
            "MERGE INTO delta.`{path}` t USING (SELECT id, parse_json(concat('{\"a\": ', id * 10, '}')) AS v"
            " FROM range(40, 50)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.v = s.v"
            " WHEN NOT MATCHED THEN INSERT (id, k, v) VALUES (s.id, 'new', s.v)",
            "DELETE FROM delta.`{path}` WHERE k = 'k1' AND id < 10",
        ],
        "id",
        ["v:a::bigint >= 400", "v:b::string = 'k2'", "k = 'new' AND v:a::int = 480"],
    ),
    # column mapping by name (renamed and dropped columns), type widening, Variant in a struct
    # and an array, CHECK constraint
    "mapped_widened": (
        "CREATE TABLE delta.`{path}` (id BIGINT, n INT, s STRUCT<x: INT, w: VARIANT>, arr ARRAY<VARIANT>,"
        " v VARIANT, gone STRING) USING delta TBLPROPERTIES ('delta.columnMapping.mode'='name',"
        " 'delta.enableTypeWidening'='true', 'delta.enableDeletionVectors'='true')",
        [
            "INSERT INTO delta.`{path}` SELECT id, CAST(id AS INT), named_struct('x', CAST(id AS INT), 'w', v),"
            " array(v, parse_json(CAST(id AS STRING))), v, 'g' FROM VALUES " + _rows_sql(1, 12) + " AS s(id, v)",
            "ALTER TABLE delta.`{path}` ALTER COLUMN n TYPE BIGINT",
            "ALTER TABLE delta.`{path}` ALTER COLUMN s.x TYPE BIGINT",
            "ALTER TABLE delta.`{path}` RENAME COLUMN v TO doc",
            "ALTER TABLE delta.`{path}` DROP COLUMN gone",
            "ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (id > 0)",
            "INSERT INTO delta.`{path}` SELECT id, id * 10000000000, named_struct('x', id * 10000000000, 'w', v),"
            " array(v), v FROM VALUES " + _rows_sql(13, 12) + " AS s(id, v)",
            "UPDATE delta.`{path}` SET n = -1 WHERE id IN (2, 14)",
        ],
        "id",
        ["doc:a::bigint > 20", "n > 100000000000", "s.w:b::string = 'k1'"],
    ),
    # column mapping by id, identity and generated columns
    "identity_generated": (
        "CREATE TABLE delta.`{path}` (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 100 INCREMENT BY 2),"
        " ts TIMESTAMP, day DATE GENERATED ALWAYS AS (CAST(ts AS DATE)), v VARIANT) USING delta"
        " PARTITIONED BY (day) TBLPROPERTIES ('delta.columnMapping.mode'='id', 'delta.enableVariantShredding'='true')",
        [
            "INSERT INTO delta.`{path}` (ts, v) SELECT timestamp_seconds(1700000000 + id * 40000), v FROM VALUES "
            + _rows_sql(1, 10) + " AS s(id, v)",
            "INSERT INTO delta.`{path}` (ts, v) SELECT timestamp_seconds(1700000000 + id * 40000), v FROM VALUES "
            + _rows_sql(11, 10) + " AS s(id, v)",
            "DELETE FROM delta.`{path}` WHERE v:a::int = 4",
        ],
        "id",
        ["v:a::bigint < 5", "day = DATE'2023-11-20' AND v:b::string = 'k5'"],
    ),
}


def generate_table(spark, out: str, name: str) -> dict:
    create, steps, order_by, filters = TABLES[name]
    path = os.path.join(out, name)
    shutil.rmtree(path, ignore_errors=True)
    spark.sql(create.replace("{path}", path))
    for step in steps:
        spark.sql(step.replace("{path}", path))
    source = f"delta.`{path}`"
    rows = [plain_value(r) for r in spark.sql(f"SELECT * FROM {source} ORDER BY {order_by}").collect()]
    # every filter in one query (fewer Spark jobs): each one's truth per row
    tests = ", ".join(f"coalesce({condition}, false) AS q{i}" for i, condition in enumerate(filters))
    found = spark.sql(f"SELECT id, _metadata.file_name AS f, {tests} FROM {source} ORDER BY id").collect()
    queries = [
        {"filter": condition, "ids": [r.id for r in found if r[f"q{i}"]], "files": sorted({r.f for r in found if r[f"q{i}"]})}
        for i, condition in enumerate(filters)
    ]
    from delta.tables import DeltaTable

    history = DeltaTable.forPath(spark, path).history().selectExpr("version", "unix_millis(timestamp) AS ms", "operation")
    first = spark.sql(f"SELECT * FROM {source} VERSION AS OF 1 ORDER BY {order_by}").collect()
    expected = {
        "order_by": order_by,
        "rows": rows,
        "queries": queries,
        "history": sorted([r.version, r.ms, r.operation] for r in history.collect()),
        "rows_at_version_1": [plain_value(r) for r in first],
    }
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
    return {"rows": len(rows), "queries": [len(q["ids"]) for q in queries]}


def generate(spark, out: str, names=None) -> dict:
    """Every table of ``TABLES`` (or ``names``) under ``out``, with the session confs of
    ``SESSION_CONF`` set for the writes and put back after."""
    before = {key: spark.conf.get(key, None) for key in SESSION_CONF}
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
    try:
        return {name: generate_table(spark, out, name) for name in (names or TABLES)}
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _session():
    from pyspark.sql import SparkSession

    jars_dir = os.path.expanduser("~/.cache/varlake/oracles/delta-spark/jars")
    return (
        SparkSession.builder.master("local[2]")
        .config("spark.jars", ",".join(sorted(glob.glob(os.path.join(jars_dir, "*.jar")))))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )


if __name__ == "__main__":
    spark = _session()
    spark.sparkContext.setLogLevel("ERROR")
    print(json.dumps(generate(spark, os.path.abspath(sys.argv[1]), sys.argv[2:] or None)))
    spark.stop()
