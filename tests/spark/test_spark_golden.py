"""A handful of Delta's golden tables read through ``varlake.spark.read`` give the rows Delta's
own tests expect (``tests/golden_expected.py``): decimals, maps, INT96 timestamps, a JSON
V2 checkpoint with sidecars, a multi-part checkpoint, time travel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import varlake.spark as vs
from golden_expected import EXPECTED, GOLDEN, arrow_value, canonical_rows as _canon, spark_plain as _plain

pytestmark = pytest.mark.spark


#: table -> SQL select list (timestamps as micros, so no Python time-zone conversion is involved)
CASES: dict[str, list[str] | None] = {
    "basic-decimal-table": None,
    "data-reader-map": None,
    "decimal-various-scale-precision": None,
    "kernel-timestamp-INT96": ["id", "unix_micros(part) AS part", "unix_micros(time) AS time"],
    "data-reader-date-types-America/Los_Angeles": ["unix_micros(timestamp) AS timestamp", "date"],
    "v2-checkpoint-json": None,
    "multi-part-checkpoint": None,
}




pytestmark = [pytestmark, pytest.mark.usefixtures("golden_tables")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_table_through_spark(spark: Any, name: str) -> None:
    exp = EXPECTED[name]
    assert exp.rows is not None
    df = vs.read(spark, str(GOLDEN / name), columns=CASES[name])
    assert tuple(df.columns) == exp.columns
    got = [_plain(tuple(r)) for r in df.collect()]
    assert _canon(got) == _canon(exp.rows())


def test_golden_time_travel_through_spark(spark: Any) -> None:
    exp = EXPECTED["snapshot-data2-deleted"]
    for version, (columns, rows) in sorted(exp.versions.items()):
        df = vs.read(spark, str(GOLDEN / "snapshot-data2-deleted"), version=version)
        assert tuple(df.columns) == columns
        assert _canon([tuple(r) for r in df.collect()]) == _canon(rows())


def test_legacy_parquet_list_and_map_encodings(spark: Any, tmp_path: Path) -> None:
    """Files Spark writes with ``spark.sql.parquet.writeLegacyFormat`` (``bag``/``array`` lists,
    ``key_value`` maps, fixed-length decimals) read like Spark reads them."""
    import pyarrow.parquet as pq

    from varlake.delta.actions import AddFile
    from varlake.table import Table

    query = (
        "SELECT id, array(id, NULL, id + 1) AS a, IF(id % 2 = 0, map(id, array(id, id)), map()) AS m, "
        "array(named_struct('x', id), NULL) AS s, CAST(id * 1.25 AS DECIMAL(10, 2)) AS d, "
        "CAST(id AS DECIMAL(25, 3)) AS big FROM range(6)"
    )
    previous = spark.conf.get("spark.sql.parquet.writeLegacyFormat", "false")
    spark.conf.set("spark.sql.parquet.writeLegacyFormat", "true")
    try:
        spark.sql(query).coalesce(1).write.parquet(str(tmp_path / "raw"))
    finally:
        spark.conf.set("spark.sql.parquet.writeLegacyFormat", previous)
    table = Table.create(
        tmp_path / "t",
        "id bigint, a array<bigint>, m map<bigint, array<bigint>>, s array<struct<x: bigint>>, "
        "d decimal(10,2), big decimal(25,3)",
    )
    raw = next((tmp_path / "raw").glob("*.parquet"))
    raw.rename(tmp_path / "t" / "legacy.parquet")
    size = (tmp_path / "t" / "legacy.parquet").stat().st_size
    table.commit_files([AddFile("legacy.parquet", size, {}, 0, True, table.file_stats_json("legacy.parquet"))], "append")
    expected = [_plain(tuple(r)) for r in spark.sql(query).collect()]
    got = Table(tmp_path / "t").scan().to_arrow()
    assert "bag" in str(pq.ParquetFile(tmp_path / "t" / "legacy.parquet").schema)  # really the legacy layout
    assert _canon([_from_arrow(r, got.schema) for r in got.to_pylist()]) == _canon(expected)


def _from_arrow(row: dict, schema: Any) -> tuple:
    return tuple(arrow_value(row[f.name], f.type) for f in schema)
