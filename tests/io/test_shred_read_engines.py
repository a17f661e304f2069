"""Files shredded by other engines (Spark 4.3, DuckDB 2.0) read back as those engines' own Variants."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from varlake.io.parquet_read import read_parquet
from varlake.io.thrift_footer import read_schema
from varlake.variant import Variant

# --- DuckDB -----------------------------------------------------------------------------------------

DUCK_ROWS = """
SELECT i AS id, (CASE WHEN i % 11 = 10 THEN NULL
                      WHEN i % 5 = 4 THEN 'not an object'::VARIANT
                      WHEN i % 5 = 3 THEN {'ti': 'wrong type', 'extra': i, 'l': 'not a list'}::VARIANT
                      ELSE {'ti': i::TINYINT, 'si': (i * 100)::SMALLINT, 'ii': (i * 100000)::INTEGER, 'bi': i * 10000000000,
                            'f': 1.5::FLOAT, 'd': i / 3, 'dec4': 1.25::DECIMAL(9, 2), 'dec8': 123456.7891::DECIMAL(18, 4),
                            'dec16': 12345678901234567890.0123456789::DECIMAL(38, 10), 'dt': DATE '2024-01-02' + i::INTEGER,
                            't': TIME '12:34:56.123456', 'ts': TIMESTAMP '2024-01-02 03:04:05.123456',
                            'tstz': TIMESTAMPTZ '2024-01-02 03:04:05.123456+00', 'tsns': TIMESTAMP_NS '2024-01-02 03:04:05.123456789',
                            'b': 'ab'::BLOB, 'u': '12345678-1234-5678-1234-567812345678'::UUID, 's': 'str' || i::VARCHAR,
                            'bo': i % 2 = 0, 'l': [i, NULL, i + 1], 'o': {'x': 'q', 'y': [{'z': 1.5}, {'z': i}]}, 'n': NULL}::VARIANT
                 END) AS v
FROM range({n}) t(i)
"""
DUCK_SHREDDING = (
    "STRUCT(ti TINYINT, si SMALLINT, ii INTEGER, bi BIGINT, f FLOAT, d DOUBLE, dec4 DECIMAL(9,2), dec8 DECIMAL(18,4), "
    "dec16 DECIMAL(38,10), dt DATE, t TIME, ts TIMESTAMP, tstz TIMESTAMPTZ, tsns TIMESTAMP_NS, b BLOB, u UUID, s VARCHAR, "
    "bo BOOLEAN, l BIGINT[], o STRUCT(x VARCHAR, y STRUCT(z DOUBLE)[]))"
)


def _variants(table: pa.Table, column: str = "v") -> list[Variant | None]:
    return [None if r is None else Variant(r["metadata"], r["value"]) for r in table.column(column).to_pylist()]


def _typed_leaves(path: Path) -> list[str]:
    with open(path, "rb") as h:
        root = read_schema(h, os.path.getsize(path), str(path))
    return [".".join(leaf.path) for leaf in root.leaves() if leaf.name == "typed_value"]


@pytest.fixture(scope="module")
def duck_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("duck")
    con = duckdb.connect()
    files = {"forced": base / "forced.parquet", "default": base / "default.parquet", "plain": base / "plain.parquet"}
    query = DUCK_ROWS.replace("{n}", "50")
    con.sql(f"COPY ({query}) TO '{files['forced']}' (FORMAT parquet, SHREDDING {{v: '{DUCK_SHREDDING}'}})")
    con.sql(f"COPY ({query}) TO '{files['default']}' (FORMAT parquet)")
    # shredding 'VARIANT' keeps DuckDB's own unshredded binary: the reference to compare with
    con.sql(f"COPY ({query}) TO '{files['plain']}' (FORMAT parquet, SHREDDING {{v: 'VARIANT'}})")
    con.close()
    return files


def test_duckdb_shreds_and_we_read_its_own_encoding(duck_files: dict[str, Path]) -> None:
    assert _typed_leaves(duck_files["plain"]) == []
    assert len(_typed_leaves(duck_files["forced"])) >= 20  # every type of the shredding schema
    assert _typed_leaves(duck_files["default"])  # DuckDB shreds by default too
    plain = _variants(read_parquet(duck_files["plain"]))
    assert len(plain) == 50 and [i for i, v in enumerate(plain) if v is None] == [10, 21, 32, 43]
    for name in ("forced", "default"):
        got = _variants(read_parquet(duck_files[name]))
        assert got == plain, name
        for v in got:
            if v is not None:
                v.validate()


def test_duckdb_reading_our_values_agrees(duck_files: dict[str, Path]) -> None:
    """DuckDB's own view of the shredded file (as JSON) matches ours for JSON-plain fields."""
    con = duckdb.connect()
    rows = con.sql(
        f"SELECT id, v.s::VARCHAR, v.bi::BIGINT, v.l::VARCHAR FROM read_parquet('{duck_files['forced']}') ORDER BY id"
    ).fetchall()
    ours = _variants(read_parquet(duck_files["forced"]))
    for (i, s, bi, lst), v in zip(rows, ours):
        if i % 11 == 10:
            assert v is None
            continue
        assert v is not None
        if i % 5 in (3, 4):
            continue
        assert v["s"].to_python() == s and v["bi"].to_python() == bi
        assert v["l"].to_json() == lst.replace(" ", "").replace("NULL", "null")


def test_duckdb_arrow_export_agrees(duck_files: dict[str, Path]) -> None:
    """DuckDB's Arrow export of the same rows (its in-memory Variant binary) equals what we read."""
    con = duckdb.connect()
    exported = con.sql(DUCK_ROWS.replace("{n}", "50") + " ORDER BY id").arrow().read_all()
    assert _variants(exported) == _variants(read_parquet(duck_files["forced"]))


def test_duckdb_paths(duck_files: dict[str, Path]) -> None:
    paths = ["$.o.y[1].z", "$.ti", "$.extra", "$.l[1]", "$.u"]
    table = read_parquet(duck_files["forced"], paths={"v": paths})
    # DuckDB writes object field ids unsorted (VariantEncoding.md wants them sorted by key), so
    # navigate a re-encoded copy of each value rather than DuckDB's bytes
    full = [None if v is None else Variant.from_python(v.to_python()) for v in _variants(read_parquet(duck_files["plain"]))]
    plain = read_parquet(duck_files["plain"], paths={"v": paths})  # navigates DuckDB's own bytes
    for p in paths:
        want = [None if v is None else v.get(p) for v in full]
        assert _variants(table, f"v:{p}") == want, p
        assert _variants(plain, f"v:{p}") == want, p


# --- Spark --------------------------------------------------------------------------------------------

SPARK_FORCED = (
    "bo boolean, i8 tinyint, i16 smallint, i32 int, i64 bigint, f float, d double, d4 decimal(9,2), d8 decimal(18,4), "
    "d16 decimal(38,10), dt date, ts timestamp, ntz timestamp_ntz, s string, b binary, arr array<int>, "
    "o struct<x: string, y: array<struct<z: double>>>"
)
SPARK_ROWS = """
SELECT id, CASE
  WHEN id % 6 = 5 THEN parse_json('"not an object"')
  WHEN id % 6 = 4 THEN parse_json('{"i8": 1000, "s": 12, "arr": {"k": 1}, "o": {"x": 5, "extra": [1]}, "zz": null}')
  WHEN id % 6 = 3 THEN parse_json('{}')
  ELSE to_variant_object(named_struct(
    'bo', id % 2 = 0, 'i8', cast(id % 100 as tinyint), 'i16', cast(300 as smallint), 'i32', cast(id * 1000 as int),
    'i64', id * 10000000000, 'f', cast(1.5 as float), 'd', 2.25d, 'd4', cast(1.25 as decimal(9,2)),
    'd8', cast(123456.7891 as decimal(18,4)), 'd16', cast(12345678901234567890.0123456789 as decimal(38,10)),
    'dt', date'2024-01-02', 'ts', timestamp'2024-01-02 03:04:05.123456', 'ntz', timestamp_ntz'2024-01-02 03:04:05.123456',
    's', concat('s', id), 'b', X'0102', 'arr', array(1, null, 3), 'o', named_struct('x', 'q', 'y', array(named_struct('z', 1.5d))),
    'extra', id))
  END AS v
FROM range(0, {n})
"""


@contextmanager
def _conf(spark: Any, **settings: str) -> Iterator[None]:
    old = {k: spark.conf.get(k, None) for k in settings}
    try:
        for k, v in settings.items():
            spark.conf.set(k, v)
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _spark_write(spark: Any, query: str, out: Path) -> dict[int, Variant]:
    df = spark.sql(query)
    df.coalesce(1).write.mode("overwrite").parquet(str(out))
    return {r["id"]: Variant(r["v"].metadata, r["v"].value) for r in spark.read.parquet(str(out)).collect()}


def _read_dir(out: Path, **kw: Any) -> pa.Table:
    files = sorted(out.glob("*.parquet"))
    assert files
    return pa.concat_tables([read_parquet(f, **kw) for f in files])


def _check_against_spark(table: pa.Table, expected: dict[int, Variant], column: str = "v") -> None:
    got = dict(zip(table.column("id").to_pylist(), _variants(table, column)))
    assert got.keys() == expected.keys()
    for i, v in expected.items():
        assert got[i] == v, f"id {i}: {got[i]} != {v}"


@pytest.mark.spark
def test_spark_forced_shredding_schema_covering_every_type(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "forced"
    with _conf(spark, **{"spark.sql.variant.forceShreddingSchemaForTest": SPARK_FORCED}):
        expected = _spark_write(spark, SPARK_ROWS.replace("{n}", "60"), out)
    files = sorted(out.glob("*.parquet"))
    leaves = _typed_leaves(files[0])
    assert len(leaves) >= 18, leaves  # it really was shredded with the forced schema
    table = _read_dir(out)
    _check_against_spark(table, expected)
    paths = ["$.o.y[0].z", "$.o.extra", "$.i8", "$.arr[1]", "$.zz", "$.extra"]
    projected = _read_dir(out, paths={"v": paths})
    for p in paths:
        got = dict(zip(projected.column("id").to_pylist(), _variants(projected, f"v:{p}")))
        assert got == {i: v.get(p) for i, v in expected.items()}, p


# (Spark infers no shredding schema at all once some rows are not objects, so all rows are objects.)
SPARK_JSON_ROWS = """
SELECT id, parse_json(CASE
  WHEN id % 13 = 0 THEN format_string('{"a": "str%d", "b": [1, "x"], "c": {"d": null}, "e": true}', id)
  WHEN id % 17 = 0 THEN '{}'
  ELSE format_string('{"a": %d, "b": ["s%d", "t"], "c": {"d": %d.5, "f": [{"g": %d}]}, "t": "2024-01-%02d"}', id, id, id, id, id % 28 + 1)
END) AS v FROM range(0, {n})
"""


@pytest.mark.spark
def test_spark_default_inferred_shredding(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "default"
    query = SPARK_JSON_ROWS.replace("{n}", "3000")
    expected = _spark_write(spark, query, out)
    files = sorted(out.glob("*.parquet"))
    assert any(_typed_leaves(f) for f in files)  # Spark inferred a shredding schema on its own
    _check_against_spark(_read_dir(out), expected)


@pytest.mark.spark
def test_spark_without_the_variant_annotation_uses_its_row_metadata(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "plain"
    settings = {
        "spark.sql.parquet.variant.annotateLogicalType.enabled": "false",
        "spark.sql.variant.forceShreddingSchemaForTest": "a int, b array<string>",
    }
    query = """SELECT id, parse_json(CASE WHEN id % 2 = 0 THEN '{"a": 1, "b": ["x", "y"], "c": 2}' ELSE '[1]' END) AS v,
                      named_struct('inner', parse_json('{"a": 5}')) AS s FROM range(0, 10)"""
    with _conf(spark, **settings):
        df = spark.sql(query)
        df.coalesce(1).write.mode("overwrite").parquet(str(out))
        rows = spark.read.parquet(str(out)).collect()
    f = sorted(out.glob("*.parquet"))[0]
    with open(f, "rb") as h:
        root = read_schema(h, os.path.getsize(f), str(f))
    assert not root.child("v").is_variant()  # type: ignore[union-attr]
    assert pq.ParquetFile(f).metadata.metadata[b"org.apache.spark.sql.parquet.row.metadata"]
    table = read_parquet(f)
    expected = {r["id"]: Variant(r["v"].metadata, r["v"].value) for r in rows}
    _check_against_spark(table, expected)
    inner = [Variant(r["inner"]["metadata"], r["inner"]["value"]) for r in table.column("s").to_pylist()]
    assert inner == [Variant(r["s"]["inner"].metadata, r["s"]["inner"].value) for r in sorted(rows, key=lambda r: r["id"])]
