"""varlake.spark.sql with struct and array targets: perfectly shredded subtrees are read as Parquet structs.

``variant_get(v, '$.items', 'array<struct<...>>')``, ``CAST(v:customer AS STRUCT<...>)`` and
``variant_get(v, '$.tags', 'array<string>')`` over files written by varlake and by Spark:
answers (rows and schema) equal Spark's own evaluation over the same files read as
VARIANT; files whose subtree holds JSON nulls, other types or unshredded fields take the
Variant path; errors Spark raises are still raised.
"""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import varlake.spark as vs
from spark_files import spark_shredded_file
from varlake.delta.actions import AddFile
from varlake.delta.schema import parse_schema
from varlake.io.parquet_write import write_parquet
from varlake.spark.reading.explain import executed_scans
from varlake.table import Table, to_arrow_table

pytestmark = pytest.mark.spark

FILE_SCHEMA = parse_schema(
    '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
    '{"name":"v","type":"variant","nullable":true,"metadata":{}}]}'
)
LAYOUT = (
    "o bigint, customer struct<c_name: string, nation: struct<n_name: string, n_key: bigint>>, "
    "tags array<string>, items array<struct<q: decimal(9,2), d: date, f: string>>"
)
#: the same paths as Spark shreds JSON text (JSON has no dates: ``d`` stays a string)
SPARK_LAYOUT = LAYOUT.replace("d: date", "d: string")


def _order(i: int) -> dict[str, Any]:
    """An order document; some rows lack paths, some line items lack fields."""
    doc: dict[str, Any] = {
        "o": i,
        "customer": {"c_name": f"c{i}", "nation": {"n_name": f"n{i % 3}", "n_key": i % 3}},
        "tags": [f"t{i}", "x"][: i % 3],
        "items": [{"q": Decimal(f"{j + i}.25"), "d": datetime.date(1995, 1, 1 + (i + j) % 28), "f": "AR"[(i + j) % 2]} for j in range(i % 4)],
    }
    if i % 4 == 3:
        del doc["items"][1]["d"]
    if i % 9 == 5:
        del doc["customer"]["nation"]
    if i % 5 == 1:
        del doc["customer"]
    if i % 7 == 2:
        del doc["items"]
    if i % 6 == 3:
        del doc["tags"]
    return doc


def _having(rows: list[tuple[int, Any]], key: str) -> dict[str, Any]:
    """The first document with a non-empty ``key``."""
    return next(doc for _, doc in rows if doc is not None and doc.get(key))


def _json(value: Any) -> str:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime.date):
        return json.dumps(value.isoformat())
    if isinstance(value, list):
        return "[" + ",".join(_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_json(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _add(table: Table, rel: str) -> AddFile:
    path = Path(table.open_file(rel))
    return AddFile(rel, path.stat().st_size, {}, 0, True, table.file_stats_json(rel))


def _write(table: Table, rel: str, rows: list[tuple[int, Any]], layout: str | None) -> AddFile:
    data = to_arrow_table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]}, FILE_SCHEMA)
    write_parquet(data, Path(table.open_file(rel)), shredding={"v": layout} if layout else None, variant_columns=["v"])
    return _add(table, rel)


def _spark_write(spark: Any, table: Table, rel: str, rows: list[tuple[int, Any]], layout: str) -> AddFile:
    spark_shredded_file(spark, Path(table.open_file(rel)), [(i, None if doc is None else _json(doc)) for i, doc in rows], layout)
    return _add(table, rel)


def _rows(start: int, stop: int) -> list[tuple[int, Any]]:
    return [(i, _order(i)) for i in range(start, stop)]


@pytest.fixture(scope="module")
def orders(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Table:
    """Six files: perfectly shredded by varlake (f0) and by Spark (f1); a JSON null field and
    a JSON null element (f2); a string among the decimals (f3); unshredded (f4); a customer
    field that is not shredded (f5)."""
    table = Table.create(tmp_path_factory.mktemp("nested") / "orders", "id bigint, v variant")
    f0 = _rows(0, 40) + [(40, None)]
    f2 = _rows(100, 120)
    _having(f2, "customer")["customer"]["c_name"] = None
    _having(f2, "items")["items"].append(None)
    f3 = _rows(200, 220)
    _having(f3, "items")["items"][0]["q"] = "7.25"
    f5 = _rows(400, 420)
    _having(f5, "customer")["customer"]["c_phone"] = "555"
    adds = [
        _write(table, "f0.parquet", f0, LAYOUT),
        _spark_write(spark, table, "f1.parquet", _rows(50, 90) + [(90, None)], SPARK_LAYOUT),
        _write(table, "f2.parquet", f2, LAYOUT),
        _write(table, "f3.parquet", f3, LAYOUT),
        _write(table, "f4.parquet", _rows(300, 320), None),
        _write(table, "f5.parquet", f5, LAYOUT),
    ]
    table.commit_files(adds, "append")
    return table


def _reference(spark: Any, table: Table, query: str) -> Any:
    files = [table.open_file(a.path) for a in table.files()]
    spark.read.schema("id bigint, v variant").parquet(*files).createOrReplaceTempView("reference_orders")
    return spark.sql(query.replace("{t}", "reference_orders"))


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    return value


def _same_answer(spark: Any, table: Table, query: str) -> Any:
    """Assert ``vs.sql`` answers as Spark does over the files read as VARIANT; its DataFrame."""
    got = vs.sql(spark, query, t=table)
    expected = _reference(spark, table, query)
    assert got.schema == expected.schema, f"{got.schema.simpleString()} != {expected.schema.simpleString()}"
    assert got.dtypes == expected.dtypes
    key = lambda row: repr(_plain(row))  # noqa: E731
    assert sorted(got.collect(), key=key) == sorted(expected.collect(), key=key)
    return got


def _kinds(spark: Any, table: Table, query: str) -> dict[str, str]:
    plan = vs.explain(spark, query, t=table, show=False).plans["t"]
    return {t.relative_path: g.kind for g in plan.groups for t in g.tasks}


ITEMS = "array<struct<q: decimal(15,2), d: date>>"
QUERIES = {
    "array of structs": f"SELECT id, variant_get(v, '$.items', '{ITEMS}') AS items FROM {{t}}",
    "array of structs, string fields": "SELECT id, try_variant_get(v, '$.items', 'array<struct<f: string, q: decimal(20,3)>>') AS items FROM {t}",
    "struct in struct": "SELECT id, CAST(v:customer AS STRUCT<c_name: STRING, nation: STRUCT<n_name: STRING>>) AS c FROM {t}",
    "array of strings": "SELECT id, variant_get(v, '$.tags', 'array<string>') AS tags FROM {t}",
    "case, missing and extra fields": "SELECT id, v:customer::struct<C_NAME: string, zz: int, nation: struct<n_key: bigint>> AS c FROM {t}",
    "no field shredded": "SELECT id, variant_get(v, '$.customer', 'struct<zz: int>') AS c FROM {t}",
    "whole document": "SELECT id, try_variant_get(v, '$', 'struct<o: bigint, tags: array<string>>') AS doc FROM {t}",
    "array element": "SELECT id, TRY_CAST(v:items[1] AS STRUCT<d: DATE, `f`: STRING>) AS second FROM {t}",
    "with primitive uses": (
        "SELECT v:o::bigint AS o, size(variant_get(v, '$.items', 'array<struct<f: string>>')) AS n, "
        "variant_get(v, '$.customer.nation', 'struct<n_name: string>').n_name AS nation FROM {t} WHERE v:o::bigint % 3 = 0"
    ),
    "explode": (
        f"SELECT id, l.q, l.d FROM {{t}} LATERAL VIEW explode(variant_get(v, '$.items', '{ITEMS}')) x AS l "
        "WHERE l.d >= DATE'1995-01-10'"
    ),
    "explode, TPC-H form": (
        "SELECT l.f, sum(l.q) AS total, count(*) AS n, count(l.d) AS dated "
        f"FROM (SELECT variant_get(v, '$.items', '{ITEMS.replace('d: date', 'd: date, f: string')}') AS lis FROM {{t}}) "
        "LATERAL VIEW explode(lis) x AS l GROUP BY l.f"
    ),
    "filter on a struct field": (
        "SELECT id FROM {t} WHERE CAST(v:customer AS STRUCT<nation: STRUCT<n_name: STRING>>).nation.n_name = 'n1'"
    ),
}


#: per query, the files read as structs (the others hold JSON nulls, other types or unshredded
#: fields where that query reads, or are not shredded at all: f4); f1's string dates serve
#: date fields by Spark's Variant cast of a string (``leaf_casts``)
SHREDDED = {
    "array of structs": {"f0", "f1", "f5"},
    "array of structs, string fields": {"f0", "f1", "f5"},
    "struct in struct": {"f0", "f1", "f3"},
    "array of strings": {"f0", "f1", "f2", "f3", "f5"},
    "case, missing and extra fields": {"f0", "f1", "f2", "f3"},  # f2's JSON null is in c_name, not C_NAME
    "no field shredded": {"f0", "f1", "f2", "f3"},
    "whole document": {"f0", "f1", "f2", "f3", "f5"},
    "array element": {"f0", "f1", "f3", "f5"},  # f3's string is in items[0].q
    "with primitive uses": {"f0", "f1", "f3", "f5"},
    "explode": {"f0", "f1", "f5"},
    "explode, TPC-H form": {"f0", "f1", "f5"},
    "filter on a struct field": {"f0", "f1", "f2", "f3"},
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_answers_and_types_equal_spark_over_the_same_files(spark: Any, orders: Table, name: str) -> None:
    kinds = _kinds(spark, orders, QUERIES[name])
    assert {k.removesuffix(".parquet") for k, kind in kinds.items() if kind == "shredded"} == SHREDDED[name]
    got = _same_answer(spark, orders, QUERIES[name])
    # the rewritten query ran (not the all-Variant fallback): some scan reads typed leaves
    assert any("typed_value" in schema for schema in _required_schemas(got))


def test_only_perfectly_shredded_subtrees_take_the_struct_path(spark: Any, orders: Table) -> None:
    dated = _kinds(spark, orders, QUERIES["explode"])
    assert dated == {
        "f0.parquet": "shredded", "f5.parquet": "shredded",  # f5's unshredded field is in customer, not items
        "f1.parquet": "shredded",  # Spark shredded d from JSON text: its string leaf serves the date cast
        "f2.parquet": "variant", "f3.parquet": "variant", "f4.parquet": "variant",
    }
    strings = _kinds(spark, orders, QUERIES["array of structs, string fields"])
    assert {k for k, kind in strings.items() if kind == "shredded"} == {"f0.parquet", "f1.parquet", "f5.parquet"}
    customer = _kinds(spark, orders, QUERIES["struct in struct"])
    # f2 has a JSON null c_name, f5 a customer field that is not shredded
    assert {k for k, kind in customer.items() if kind == "shredded"} == {"f0.parquet", "f1.parquet", "f3.parquet"}


def _required_schemas(df: Any) -> list[str]:
    """The read schema of every Parquet scan of an executed DataFrame."""
    df.collect()
    return [str(n.requiredSchema().catalogString()) for n in executed_scans(df)]


def test_shredded_files_read_just_the_needed_leaves(spark: Any, tmp_path: Path) -> None:
    table = Table.create(tmp_path / "one", "id bigint, v variant")
    table.commit_files([_write(table, "f0.parquet", _rows(0, 30), LAYOUT)], "append")
    query = QUERIES["explode"]
    assert _kinds(spark, table, query) == {"f0.parquet": "shredded"}
    df = vs.sql(spark, query, t=table)
    leaves = "struct<q:struct<typed_value:decimal(9,2)>,d:struct<typed_value:date>>"
    assert _required_schemas(df) == [f"struct<id:bigint,v:struct<typed_value:struct<items:struct<typed_value:array<struct<typed_value:{leaves}>>>>>>"]
    _same_answer(spark, table, query)
    # a struct target whose fields are not shredded reads one leaf, for the object's own nulls
    df = vs.sql(spark, QUERIES["no field shredded"], t=table)
    assert _required_schemas(df) == ["struct<id:bigint,v:struct<typed_value:struct<customer:struct<typed_value:struct<c_name:struct<typed_value:string>>>>>>"]
    _same_answer(spark, table, QUERIES["no field shredded"])


@pytest.fixture(scope="module")
def mismatched(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Table:
    """A perfectly shredded file and one where a line item's q is a string no decimal parses."""
    table = Table.create(tmp_path_factory.mktemp("nested_bad") / "orders", "id bigint, v variant")
    bad = _rows(50, 60)
    _having(bad, "items")["items"][0]["q"] = "abc"
    table.commit_files([_write(table, "good.parquet", _rows(0, 10), LAYOUT), _write(table, "bad.parquet", bad, LAYOUT)], "append")
    return table


def _error(fn: Any) -> str:
    """The text of the error running ``fn()`` raises (Spark wraps errors raised while
    reading a file in a Java exception)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    with pytest.raises((PySparkException, Py4JJavaError)) as info:
        fn().collect()
    return str(info.value)


def test_a_cast_that_fails_in_spark_still_fails(spark: Any, mismatched: Table) -> None:
    query = f"SELECT id, variant_get(v, '$.items', '{ITEMS}') AS items FROM {{t}}"
    assert _kinds(spark, mismatched, query) == {"good.parquet": "shredded", "bad.parquet": "variant"}
    expected = _error(lambda: _reference(spark, mismatched, query))
    got = _error(lambda: vs.sql(spark, query, t=mismatched))
    assert "INVALID_VARIANT_CAST" in expected and "INVALID_VARIANT_CAST" in got
    _same_answer(spark, mismatched, query.replace("variant_get", "try_variant_get"))
    explode = f"SELECT count(*), sum(l.q) FROM {{t}} LATERAL VIEW explode(variant_get(v, '$.items', '{ITEMS}')) x AS l"
    assert "INVALID_VARIANT_CAST" in _error(lambda: vs.sql(spark, explode, t=mismatched))


def test_keys_equal_up_to_case_take_the_variant_path(spark: Any, tmp_path: Path) -> None:
    table = Table.create(tmp_path / "case", "id bigint, v variant")
    docs = [(i, {"a": i, "A": -i, "c": {"x": i}}) for i in range(5)]
    table.commit_files([_write(table, "f0.parquet", docs, "a bigint, A bigint, c struct<x: bigint>")], "append")
    for query in (
        "SELECT id, variant_get(v, '$', 'struct<A: bigint, c: struct<x: bigint>>') AS s FROM {t}",
        "SELECT id, v:a::bigint AS a, v:A::bigint AS b FROM {t}",
    ):
        assert _kinds(spark, table, query) == {"f0.parquet": "variant"}
        _same_answer(spark, table, query)
    query = "SELECT id, variant_get(v, '$.c', 'struct<X: bigint>') AS s FROM {t}"
    assert _kinds(spark, table, query) == {"f0.parquet": "shredded"}
    _same_answer(spark, table, query)
