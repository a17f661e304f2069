"""``Table.to_duckdb`` and ``Table.to_polars`` return the rows ``Table.scan`` returns.

Tables with partitions, deletion vectors, shredded and unshredded Variants, and Variants
nested in structs and arrays; DuckDB sees Variant columns as ``VARIANT`` and Polars gets
them as ``Struct{metadata, value}`` or as Spark's JSON text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pytest

from varlake import Table, Variant, parse_json
from varlake.errors import TableError

DOCS = [
    '{"a": 1, "b": [1, "x", true], "c": {"d": "deep"}}',
    '{"a": 2, "b": []}',
    '"text"',
    "[1, 2, {\"k\": null}]",
    "null",
    '{"a": 3}',
]


def _value(i: int) -> Variant | None:
    return None if i % 7 == 6 else parse_json(DOCS[i % len(DOCS)])


def _rows(start: int, n: int) -> pa.Table:
    from varlake.shred.variant_arrays import variant_array

    ids = list(range(start, start + n))
    v = variant_array([_value(i) for i in ids])
    w = variant_array([parse_json(f'{{"n": {i}}}') for i in ids])
    s = pa.StructArray.from_arrays([w, pa.array(ids, pa.int64())], names=["w", "n"])
    offsets = pa.array([2 * k for k in range(n + 1)], pa.int32())
    elements = variant_array([x for i in ids for x in (parse_json(str(i)), _value(i + 1))])
    lst = pa.ListArray.from_arrays(offsets, elements)
    return pa.table({"id": ids, "p": [f"p{i % 3}" for i in ids], "v": v, "s": s, "l": lst})


@pytest.fixture(params=["unshredded", "shredded"], scope="module")
def table(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Table:
    """A partitioned table in three commits, rows deleted by deletion vectors in the last."""
    root = tmp_path_factory.mktemp(request.param) / "t"
    t = Table.create(
        root,
        "id bigint, p string, v variant, s struct<w: variant, n: bigint>, l array<variant>",
        partition_by=["p"],
        properties={"delta.enableVariantShredding": str(request.param == "shredded").lower()},
    )
    t.append(_rows(0, 30))
    t.append(_rows(30, 30))
    result = t.delete("id % 5 = 1")
    assert result.version is not None
    assert any(add.deletion_vector for add in t.files())  # the rows are gone by deletion vectors
    return t


def _decoded(value: Any) -> Any:
    """A row value with every Variant storage dict as a ``Variant`` (lists of pairs as dicts)."""
    if isinstance(value, dict):
        if set(value) == {"metadata", "value"}:
            return None if value["metadata"] is None else Variant(value["metadata"], value["value"])
        return {k: _decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    return value


def _scan_rows(t: Table, version: int | None = None) -> list[dict[str, Any]]:
    return sorted(_decoded(t.scan(version=version).to_arrow().to_pylist()), key=lambda r: r["id"])


def test_duckdb_view_returns_the_scan_rows_as_variant(table: Table) -> None:
    con = duckdb.connect()
    relation = table.to_duckdb(con, "events")
    expected = _scan_rows(table)
    assert len(expected) == 48 and not any(r["id"] % 5 == 1 for r in expected)
    types = dict(con.sql("select column_name, column_type from (describe events)").fetchall())
    assert types == {
        "id": "BIGINT", "p": "VARCHAR", "v": "VARIANT", "s": "STRUCT(w VARIANT, n BIGINT)", "l": "VARIANT[]",
    }  # fmt: skip
    got = con.sql("select * from events order by id").to_arrow_table().to_pylist()
    assert _decoded(got) == expected  # DuckDB's Variant bytes, compared logically
    assert relation.aggregate("count(*)").fetchall() == [(48,)]
    # DuckDB's own Variant functions work on the view
    a_values = con.sql("select id, v.a::BIGINT from events where v.a is not null order by id").fetchall()
    assert a_values == [(r["id"], r["v"].get("$.a").to_python()) for r in expected if r["v"] is not None and r["v"].get("$.a") is not None]
    deep = con.sql("select count(*) from events where v.c.d::VARCHAR = 'deep'").fetchall()
    assert deep == [(sum(1 for r in expected if r["v"] is not None and r["v"].get("$.c.d") == parse_json('"deep"')),)]


def test_duckdb_view_of_an_older_version(table: Table) -> None:
    con = duckdb.connect()
    table.to_duckdb(con, "before", version=1)
    got = con.sql("select * from before order by id").to_arrow_table().to_pylist()
    assert _decoded(got) == _scan_rows(table, version=1) and len(got) == 30
    table.to_duckdb(con, "before", version=2)  # the name is taken over by the newer snapshot
    assert con.sql("select count(*) from before").fetchall() == [(60,)]


def test_duckdb_without_a_connection_and_with_a_bad_name(table: Table) -> None:
    relation = table.to_duckdb(None, "t")
    assert relation.aggregate("count(*)").fetchall() == [(48,)]
    with pytest.raises(TableError, match="needs a name"):
        table.to_duckdb(duckdb.connect(), "")


def test_polars_struct_form_returns_the_scan_rows(table: Table) -> None:
    frame = table.to_polars()
    assert isinstance(frame, pl.DataFrame)
    assert frame.schema["v"] == pl.Struct({"metadata": pl.Binary, "value": pl.Binary})
    assert frame.schema["l"] == pl.List(pl.Struct({"metadata": pl.Binary, "value": pl.Binary}))
    assert frame.schema["p"] == pl.String
    got = sorted(_decoded(frame.to_dicts()), key=lambda r: r["id"])
    assert got == _scan_rows(table)


def test_polars_json_form_renders_spark_json(table: Table) -> None:
    frame = table.to_polars(variant="json").sort("id")
    assert frame.schema["v"] == pl.String and frame.schema["s"] == pl.Struct({"w": pl.String, "n": pl.Int64})
    assert frame.schema["l"] == pl.List(pl.String)
    expected = _scan_rows(table)
    assert frame["v"].to_list() == [None if r["v"] is None else r["v"].to_json() for r in expected]
    assert frame["s"].struct.field("w").to_list() == [r["s"]["w"].to_json() for r in expected]
    assert frame["l"].to_list() == [[None if x is None else x.to_json() for x in r["l"]] for r in expected]
    assert frame.filter(pl.col("v").str.json_path_match("$.a") == "2")["id"].to_list() == [
        r["id"] for r in expected if r["v"] is not None and r["v"].get("$.a") == parse_json("2")
    ]
    older = table.to_polars(variant="json", version=1)
    assert older.height == 30


def test_polars_struct_frames_write_back(table: Table, tmp_path: Path) -> None:
    copy = Table.create(tmp_path / "copy", table.schema, partition_by=["p"])
    copy.append(table.to_polars().to_arrow())
    assert _scan_rows(copy) == _scan_rows(table)
    with pytest.raises(TableError, match="variant must be one of"):
        table.to_polars(variant="object")
