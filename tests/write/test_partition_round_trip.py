"""Partition values of every partition type round-trip through every engine path.

One table per writer (``Table.append`` and ``varlake.spark.write``, the latter in a
non-UTC session zone), partitioned by a column of every partition type, with NULL, empty
text and bytes, ``/``, ``=``, ``%``, spaces, ``../`` and non-ASCII text; read back with
``Table.scan``, ``varlake.spark.read`` and ``deltalake``. Empty strings and empty bytes
are NULL partition values (the Delta protocol; Spark writes them so too). The decimals
are positive: deltalake 1.6 cannot read a negative decimal partition value (it builds the
text ``-12.-25``); ``tests/write/test_partition_values.py`` covers negative ones.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from varlake import Table
from varlake.errors import PartitionValueError, TableError

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("s", pa.string()),
        ("b", pa.binary()),
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i32", pa.int32()),
        ("i64", pa.int64()),
        ("bo", pa.bool_()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("dec", pa.decimal128(10, 2)),
        ("f", pa.float32()),
        ("db", pa.float64()),
    ]
)
PARTITIONS = SCHEMA.names[1:]
TEXTS = ["a/b=c%d", "", None, " spaced out ", "../x", "..", "é中文 ü", "%2F", "=", "/"]
BYTES = [b"\x01\x02", b"", None, "é/=%".encode(), b"../", b"..", b" ", "中".encode(), b"%", b"a=b"]


def _rows() -> list[dict[str, Any]]:
    rows = []
    for i in range(len(TEXTS)):
        nothing = i == 2
        rows.append(
            {
                "id": i,
                "s": TEXTS[i],
                "b": BYTES[i],
                "i8": None if nothing else [-128, 127, 0, 1, -1][i % 5],
                "i16": None if nothing else [-32768, 32767, 7][i % 3],
                "i32": None if nothing else [-(2**31), 2**31 - 1, 42][i % 3],
                "i64": None if nothing else [-(2**63), 2**63 - 1, 10**15][i % 3],
                "bo": None if nothing else i % 2 == 0,
                "d": None if nothing else dt.date(2024, 2, 29) + dt.timedelta(days=400 * i - 2000),
                "ts": None if nothing else dt.datetime(2024, 1, 1, 0, 0, 0, 250000, UTC) + dt.timedelta(hours=13 * i, seconds=i),
                "ntz": None if nothing else dt.datetime(2000, 2, 29, 12, 30) + dt.timedelta(days=i, microseconds=i),
                "dec": None if nothing else [Decimal("1.50"), Decimal("0.01"), Decimal("99999999.99")][i % 3],
                "f": None if nothing else [0.10000000149011612, float("nan"), float("inf"), -1.5][i % 4],
                "db": None if nothing else [1e23, float("-inf"), float("nan"), 2.5e-300, 0.1][i % 5],
            }
        )
    return rows


def _expected() -> list[tuple]:
    out = []
    for r in _rows():
        r = dict(r)
        r["s"] = r["s"] or None  # "" is a NULL partition value
        r["b"] = r["b"] or None
        out.append(_key(r))
    return sorted(out, key=repr)


def _norm(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(UTC)
    return v


def _key(row: dict[str, Any]) -> tuple:
    return tuple(_norm(row[c]) for c in SCHEMA.names)


def _got(table: pa.Table) -> list[tuple]:
    return sorted((_key(r) for r in table.select(SCHEMA.names).to_pylist()), key=repr)


def _table_append(root: Path) -> Table:
    # no deletion vectors: deltalake 1.6's to_pyarrow_table refuses the deletionVectors reader feature
    t = Table.create(root, SCHEMA, partition_by=PARTITIONS, properties={"delta.enableDeletionVectors": "false"})
    t.append(pa.Table.from_pylist(_rows(), schema=SCHEMA))
    return t


def _check_reads(t: Table) -> None:
    assert _got(t.scan().to_arrow()) == _expected()
    assert len(t.files()) == len(TEXTS), "one file per row: every row has its own partition"
    # partition pruning reads the same values
    assert [r["id"] for r in t.scan("s = '../x'").to_arrow().to_pylist()] == [4]
    assert sorted(r["id"] for r in t.scan("s IS NULL").to_arrow().to_pylist()) == [1, 2]
    assert [r["id"] for r in t.scan("b = X'2E2E2F'").to_arrow().to_pylist()] == [4]
    assert [r["id"] for r in t.scan("s = 'a/b=c%d' AND i8 = -128 AND dec = 1.50").to_arrow().to_pylist()] == [0]
    assert len(t.files("s = 'é中文 ü'")) == 1 and len(t.files("ts > TIMESTAMP'2024-01-03 00:00:00'")) == 6


def _deltalake_rows(root: Path) -> list[tuple]:
    deltalake = pytest.importorskip("deltalake")
    return _got(deltalake.DeltaTable(str(root)).to_pyarrow_table())


def test_table_append_round_trips_every_partition_type(tmp_path: Path) -> None:
    t = _table_append(tmp_path / "t")
    _check_reads(t)
    for add in t.files():  # paths stay one directory per column, inside the table
        assert add.path.count("/") == len(PARTITIONS)
    assert _deltalake_rows(tmp_path / "t") == _expected()


def test_values_that_cannot_be_partition_values_fail_before_writing(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, b binary", partition_by=["b"])
    with pytest.raises(PartitionValueError, match="'b'.*not UTF-8"):
        t.append([{"id": 1, "b": b"\xff"}])
    assert t.version == 0 and not [p for p in (tmp_path / "t").rglob("*.parquet")]
    with pytest.raises(TableError, match="partition column 'nope'"):
        Table.create(tmp_path / "u", "id bigint", partition_by=["nope"])


def _spark_frame(spark: Any) -> Any:
    data = pa.Table.from_pylist(_rows(), schema=SCHEMA)
    # timestamp_ntz goes through text so no session zone can shift it
    data = data.set_column(SCHEMA.names.index("ntz"), "ntz", pa.array([None if r["ntz"] is None else str(r["ntz"]) for r in _rows()]))
    frame = spark.createDataFrame(data)
    return frame.selectExpr(*[c if c != "ntz" else "CAST(ntz AS timestamp_ntz) AS ntz" for c in SCHEMA.names])


@pytest.mark.spark
def test_spark_write_and_read_round_trip_every_partition_type(spark: Any, tmp_path: Path) -> None:
    from varlake.spark import read, spark_conf, write

    frame = _spark_frame(spark)
    assert [f.dataType.simpleString() for f in frame.schema.fields] == [
        "bigint", "string", "binary", "tinyint", "smallint", "int", "bigint", "boolean", "date", "timestamp",
        "timestamp_ntz", "decimal(10,2)", "float", "double",
    ]
    with spark_conf(spark, {"spark.sql.session.timeZone": "America/Los_Angeles"}):  # Spark names dirs in this zone
        write(frame, tmp_path / "spark", partition_by=PARTITIONS, properties={"delta.enableDeletionVectors": "false"})
    by_spark = Table(tmp_path / "spark")
    _check_reads(by_spark)
    assert _deltalake_rows(tmp_path / "spark") == _expected()

    by_table = _table_append(tmp_path / "table")
    stored = lambda t: sorted(repr(sorted(a.partition_values.items())) for a in t.files())  # noqa: E731
    assert stored(by_spark) == stored(by_table), "both writers store the same partition values"
    for t in (by_spark, by_table):
        assert _got(read(spark, t.path).toArrow()) == _expected()
        picked = read(spark, t.path, ["id"], "s = '../x' OR b = X'25' OR s IS NULL").toArrow()
        assert sorted(picked.column("id").to_pylist()) == [1, 2, 4, 8]


@pytest.mark.spark
def test_spark_refuses_binary_partition_values_that_are_not_utf8(spark: Any, tmp_path: Path) -> None:
    from varlake.spark import write

    bad = spark.sql("SELECT 1 AS id, X'FF00' AS b UNION ALL SELECT 2, X'41'")
    with pytest.raises(TableError, match="not UTF-8"):
        write(bad, tmp_path / "t", partition_by=["b"])
    assert not (tmp_path / "t" / "_delta_log").exists()
