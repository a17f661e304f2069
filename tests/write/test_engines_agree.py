"""The same data written through ``Table.append`` and through ``varlake.spark.write``
gives the same Delta actions -- paths, sizes and times aside: the same partition values,
the same statistics (numRecords, min/max, nullCount, Variant path bounds), the same
metaData (schema, partitioning, properties with the stored shredding schema) and the same
protocol -- and files shredded with the same schema."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from varlake import Table
from varlake.variant import parse_json

pytestmark = pytest.mark.spark

DDL = "id bigint, part string, n int, x double, s string, ts timestamp, dec decimal(10,2), v variant"
UTC = dt.timezone.utc
PARTS = ["a/b", "x=1 %", "", None, "é"]


def _doc(i: int) -> str:
    if i % 13 == 0:
        return '{"a": "text", "z": [1, 2]}'
    return json.dumps({"a": i, "b": {"c": f"s{i % 7}", "d": i / 4}, "t": [i, i + 1]})


def _arrow(n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "part": pa.array([PARTS[i % len(PARTS)] for i in range(n)]),
            "n": pa.array([None if i % 9 == 0 else i * 3 - 50 for i in range(n)], pa.int32()),
            "x": pa.array([i / 3 - 7 for i in range(n)], pa.float64()),
            "s": pa.array([None if i % 4 == 0 else f"str{i:04d}" for i in range(n)]),
            "ts": pa.array([dt.datetime(2024, 3, 1, tzinfo=UTC) + dt.timedelta(minutes=i, microseconds=7 * i) for i in range(n)],
                           pa.timestamp("us", tz="UTC")),
            "dec": pa.array([Decimal(i) / 4 for i in range(n)], pa.decimal128(10, 2)),
            "j": pa.array([None if i % 11 == 0 else _doc(i) for i in range(n)]),
        }
    )


def _log(root: Path) -> list[dict[str, Any]]:
    actions = []
    for f in sorted((root / "_delta_log").glob("*.json")):
        actions.extend(json.loads(line) for line in f.read_text().splitlines() if line)
    return actions


def _final(t: Table) -> dict[str, Any]:
    snap = t.snapshot()
    meta = snap.metadata
    return {
        "schema": json.loads(meta.schema_string),
        "partitionColumns": list(meta.partition_columns),
        "configuration": dict(meta.configuration),
        "protocol": snap.protocol.to_dict(),
        "files": sorted(
            (json.dumps(add.partition_values, sort_keys=True), json.dumps(json.loads(add.stats), sort_keys=True))
            for add in snap.files
        ),
    }


def test_table_append_and_spark_write_produce_the_same_actions(spark: Any, tmp_path: Path) -> None:
    from varlake.spark import write

    data = _arrow(400)
    by_table = Table.create(tmp_path / "table", DDL, partition_by=["part"], properties={"delta.enableVariantShredding": "true"})
    docs = [None if j is None else parse_json(j) for j in data.column("j").to_pylist()]
    by_table.append({**{c: data.column(c) for c in data.column_names if c != "j"}, "v": docs})

    frame = spark.createDataFrame(data).selectExpr(*[c for c in data.column_names if c != "j"], "parse_json(j) AS v")
    result = write(frame.coalesce(1), tmp_path / "spark", partition_by=["part"])
    by_spark = Table(tmp_path / "spark")

    mine, theirs = _final(by_table), _final(by_spark)
    assert mine["schema"] == theirs["schema"] and mine["partitionColumns"] == theirs["partitionColumns"] == ["part"]
    assert mine["protocol"] == theirs["protocol"]
    assert mine["configuration"] == theirs["configuration"]
    ddl = mine["configuration"]["varlake.shredding.v"]
    assert ddl and result.layout == {"v": ddl}
    assert len(mine["files"]) == len(theirs["files"]) == 4, "one file per partition ('' and NULL are one)"
    for (pv_a, stats_a), (pv_b, stats_b) in zip(mine["files"], theirs["files"]):
        assert pv_a == pv_b
        a, b = json.loads(stats_a), json.loads(stats_b)
        assert a == b, f"stats of partition {pv_a} differ"
        assert a["numRecords"] > 0 and "v" in a["minValues"] and a["nullCount"]["s"] > 0

    # the files of both carry the same shredded layout of v
    layouts = {str(pq.read_schema(t.data_file(f)).field("v").type) for t in (by_table, by_spark) for f in t.files()}
    assert len(layouts) == 1 and "typed_value" in layouts.pop()

    # the write commits: Table created the table then appended (metaData with the schema on
    # the append); Spark created it with the schema already stored -- the same end state
    ops = {name: [next(iter(a)) for a in _log(tmp_path / name)] for name in ("table", "spark")}
    assert ops["table"].count("add") == ops["spark"].count("add") == 4
    assert ops["table"].count("metaData") == 2 and ops["spark"].count("metaData") == 1
    assert sorted(r["id"] for r in by_table.scan(columns=["id"]).to_arrow().to_pylist()) == list(range(400))
    assert by_table.scan().to_arrow().num_rows == by_spark.scan().to_arrow().num_rows == 400
