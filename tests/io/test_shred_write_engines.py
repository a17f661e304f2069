"""Spark 4.3 and DuckDB 2.0 read varlake-written files as VARIANT, with the same values."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from varlake.io.parquet_write import SPARK_ROW_METADATA, write_parquet
from varlake.shred.shred import variant_array
from varlake.variant import Variant, parse_json
from varlake.variant.temporal import Float32

JSON_DOCS = [
    '{"id": 1, "name": "ann", "tags": ["a", "b"], "geo": {"lat": 1.5, "lon": -2.25}, "items": [{"sku": "x", "n": 2}]}',
    '{"id": 2, "name": "bob", "tags": [], "geo": {"lat": 3}, "extra": {"deep": [1, {"k": null}]}}',
    '{"id": "three", "name": null, "tags": ["c", 7, null], "items": [{"sku": "y", "more": true}, 5]}',
    '"just a string"',
    "null",
    "[1, 2, 3]",
    "{}",
    '{"id": 123456789012345, "name": "long name ' + "x" * 80 + '", "geo": "not an object"}',
]
SHRED_DDL = "id bigint, name string, tags array<string>, geo struct<lat: decimal(10,2), lon: decimal(10,2)>, items array<struct<sku: string, n: int>>"


def typed_docs() -> list[Variant]:
    ts = dt.datetime(2024, 2, 29, 23, 59, 59, 123456, tzinfo=dt.timezone.utc)
    values = [
        {"d": Decimal("12.50"), "day": dt.date(2024, 2, 29), "ts": ts, "ntz": dt.datetime(2001, 2, 3, 4, 5, 6), "f": Float32(0.5), "x": 2.75, "b": b"\x01\x02", "ok": True},
        {"d": Decimal("-0.01"), "day": dt.date(1970, 1, 1), "ts": ts.replace(year=1992), "ntz": dt.datetime(1999, 1, 1), "f": Float32(-8.0), "x": -1e-7, "b": b"", "ok": False},
        {"d": 42, "small": 3, "mid": 30000},
    ]
    return [Variant.from_python(v) for v in values]


TYPED_DDL = "d decimal(12,2), day date, ts timestamp, ntz timestamp_ntz, f float, x double, b binary, ok boolean, small tinyint, mid smallint"


def _table(docs: list[Variant | None]) -> pa.Table:
    inner = pa.StructArray.from_arrays([variant_array(docs)], names=["v"])
    return pa.table({"id": pa.array(range(len(docs)), pa.int32()), "v": variant_array(docs), "nv": inner})


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[Variant | None]]]:
    root = tmp_path_factory.mktemp("engines")
    json_docs: list[Variant | None] = [parse_json(d) for d in JSON_DOCS] + [None]
    typed: list[Variant | None] = list(typed_docs()) + [None]
    out = {}
    for name, docs, shredding in (
        ("json_plain", json_docs, None),
        ("json_shredded", json_docs, {"v": SHRED_DDL, "nv.v": SHRED_DDL}),
        # Inference shreds the top level only when (nearly) every value is an object.
        ("json_auto", [d for d in json_docs if d is None or d.is_object() or d.is_null()], "auto"),
        ("typed_plain", typed, None),
        ("typed_shredded", typed, {"v": TYPED_DDL, "nv.v": TYPED_DDL}),
    ):
        path = root / f"{name}.parquet"
        result = write_parquet(_table(docs), path, shredding=shredding, row_group_size=4)  # type: ignore[arg-type]
        assert (result.shredding["v"] is not None) == (shredding is not None)
        out[name] = (path, docs)
    # A column without a Spark type means no Spark schema JSON: only the footer's VARIANT
    # annotation tells Spark which columns are Variants.
    path = root / "annotation_only.parquet"
    table = _table(json_docs).append_column("u", pa.array(range(len(json_docs)), pa.uint32()))
    write_parquet(table, path, shredding={"v": SHRED_DDL})
    assert SPARK_ROW_METADATA not in (pq.read_metadata(path).metadata or {})
    out["annotation_only"] = (path, json_docs)
    return out


@pytest.mark.spark
@pytest.mark.parametrize("name", ["json_plain", "json_shredded", "json_auto", "typed_plain", "typed_shredded", "annotation_only"])
def test_spark_reads_variant_without_a_schema(spark, files, name: str) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql.types import StructType, VariantType

    path, docs = files[name]
    df = spark.read.parquet(str(path))
    assert isinstance(df.schema["v"].dataType, VariantType)
    nested = df.schema["nv"].dataType
    assert isinstance(nested, StructType) and isinstance(nested["v"].dataType, VariantType)
    rows = df.selectExpr("id", "v", "to_json(v) AS j", "to_json(nv.v) AS nj").orderBy("id").collect()
    assert [r.id for r in rows] == list(range(len(docs)))
    for r, doc in zip(rows, docs):
        if doc is None:
            assert r.v is None and r.j is None
            continue
        assert r.j == doc.to_json("UTC") == r.nj
        assert Variant(bytes(r.v.metadata), bytes(r.v.value)) == doc


def _duck(path: Path, expr: str) -> list[tuple]:
    return duckdb.sql(f"SELECT id, {expr} FROM read_parquet('{path}') ORDER BY id").fetchall()


def _as_json(text: str | None) -> object:
    return None if text is None else json.loads(text, parse_float=Decimal)


@pytest.mark.parametrize("name", ["json_plain", "json_shredded", "json_auto", "typed_plain", "typed_shredded", "annotation_only"])
def test_duckdb_sees_variant_columns(files, name: str) -> None:  # type: ignore[no-untyped-def]
    path, docs = files[name]
    rows = _duck(path, "typeof(v), typeof(nv)")
    for (_, tv, tnv), doc in zip(rows, docs):
        assert tv == "VARIANT" and tnv == "STRUCT(v VARIANT)"


@pytest.mark.parametrize("name", ["json_plain", "json_shredded", "json_auto"])
def test_duckdb_values_equal_the_source_json(files, name: str) -> None:  # type: ignore[no-untyped-def]
    path, docs = files[name]
    got = _duck(path, "v::JSON::VARCHAR, (nv.v)::JSON::VARCHAR")
    for (_, j, nj), doc in zip(got, docs):
        if doc is None:
            assert j is None
            continue
        assert _as_json(j) == _as_json(doc.to_json()) == _as_json(nj)


def test_duckdb_values_of_typed_leaves_match_the_unshredded_file(files) -> None:  # type: ignore[no-untyped-def]
    plain = _duck(files["typed_plain"][0], "v::JSON::VARCHAR")
    shredded = _duck(files["typed_shredded"][0], "v::JSON::VARCHAR")
    assert [(i, _as_json(j)) for i, j in plain] == [(i, _as_json(j)) for i, j in shredded]
    assert plain[-1][1] is None and all(j is not None for _, j in plain[:-1])
