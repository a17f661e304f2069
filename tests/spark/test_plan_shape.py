"""The plan shape of ``varlake.spark.sql`` when only shredded groups serve a table.

When every read file of a table serves all of the query's paths from shredded leaves,
the query must see plain columns: no ``IF(__vl_shredded, ...)`` per row, no flag column,
no union (one group), and no Variant column read. With a Variant group as well, the
flag form stays. Either way the answers (and errors, and output names) are Spark's own
over the Variant form of the same files.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest

import varlake.spark as vs
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
LAYOUT = "a bigint, b string, c struct<d: bigint>"


def _file(table: Table, rel: str, rows: list[tuple[int, Any]], layout: str | None, partition: dict[str, str] | None = None) -> AddFile:
    target = Path(table.open_file(rel))
    target.parent.mkdir(parents=True, exist_ok=True)
    data = to_arrow_table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]}, FILE_SCHEMA)
    write_parquet(data, target, shredding={"v": layout} if layout else None, variant_columns=["v"], row_group_size=25)
    return AddFile(rel, target.stat().st_size, partition or {}, 0, True, table.file_stats_json(rel))


def _doc(i: int) -> dict[str, Any]:
    """Every field perfectly shredded (a missing key, not a Variant null, where there is none)."""
    doc: dict[str, Any] = {"a": i}
    if i % 11:
        doc["b"] = f"k{i % 3}"
    if i % 7:
        doc["c"] = {"d": i * 2}
    return doc


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: Any) -> dict[str, Table]:
    """``single``: two files, one shredded group; ``mixed``: the same plus an unshredded
    file; ``parts``: two partitions, each its own shredded group."""
    root = tmp_path_factory.mktemp("plan_shape")
    single = Table.create(root / "single", "id bigint, v variant")
    single.commit_files([
        _file(single, "f0.parquet", [(i, _doc(i)) for i in range(0, 100)], LAYOUT),
        _file(single, "f1.parquet", [(i, _doc(i)) for i in range(100, 200)], LAYOUT),
    ], "append")  # fmt: skip
    mixed = Table.create(root / "mixed", "id bigint, v variant")
    mixed.commit_files([
        _file(mixed, "f0.parquet", [(i, _doc(i)) for i in range(0, 100)], LAYOUT),
        _file(mixed, "f1.parquet", [(i, _doc(i)) for i in range(100, 200)], None),
    ], "append")  # fmt: skip
    parts = Table.create(root / "parts", "id bigint, v variant, day date", partition_by=["day"])
    parts.commit_files([
        _file(parts, f"day={day}/f.parquet", [(i, _doc(i)) for i in range(k * 100, k * 100 + 100)], LAYOUT, {"day": day})
        for k, day in enumerate(["2024-01-01", "2024-01-02"])
    ], "append")  # fmt: skip
    return {"single": single, "mixed": mixed, "parts": parts}


def _reference(spark: Any, table: Table, query: str) -> Any:
    """Spark's own evaluation over the same files read as Variant (partition columns added)."""
    frames = []
    for add in table.files():
        frame = spark.read.schema("id bigint, v variant").parquet(table.open_file(add.path))
        for key, value in add.partition_values.items():
            frame = frame.selectExpr("*", f"CAST('{value}' AS DATE) AS {key}")
        frames.append(frame)
    view = frames[0]
    for frame in frames[1:]:
        view = view.unionByName(frame)
    view.createOrReplaceTempView("plan_shape_reference")
    return spark.sql(query.replace("{e}", "plan_shape_reference"))


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _plan_text(df: Any) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


QUERIES = [
    "SELECT v:a::bigint, v:b::string FROM {e} WHERE v:a::bigint > 150",
    "SELECT v:b::string AS b, count(*), sum(v:c.d::bigint) FROM {e} GROUP BY 1",
    "SELECT id FROM {e} WHERE v:c.d IS NULL OR try_variant_get(v, '$.a', 'int') < 3",
    "SELECT x.id, variant_get(x.v, '$.c', 'struct<d: bigint>') AS c FROM {e} x WHERE x.v:a::int % 5 = 0",
    "SELECT concat(v:b::string, '-'), max(v:a::bigint) FROM {e} GROUP BY v:b::string",
    "SELECT x.v:a::int + y.v:c.d::int FROM {e} x JOIN {e} y ON x.id = y.id + 1 WHERE y.v:a::bigint < 20",
    # IS NOT NULL is written back as written (sqlglot reads it as NOT .. IS NULL, which Spark plans otherwise)
    "SELECT v:a::bigint FROM {e} WHERE v:c.d IS NOT NULL AND v:b::string IS NOT NULL AND NOT (v:a::int IS NULL)",
]


@pytest.mark.parametrize("query", QUERIES)
def test_one_shredded_group_reads_plain_leaves(spark: Any, tables: dict[str, Table], query: str) -> None:
    table = tables["single"]
    explanation = vs.explain(spark, query, e=table, show=False)
    assert [g.kind for g in explanation.plans["e"].groups] == ["shredded"]
    sql = explanation.sql
    assert "__vl_shredded" not in sql and "IF(" not in sql.upper() and "VARIANT_GET" not in sql.upper(), sql
    assert "the query reads them as plain columns" in str(explanation)
    df = vs.sql(spark, query, e=table)
    expected = _reference(spark, table, query)
    assert df.columns == expected.columns
    assert _rows(df) == _rows(expected)
    plan = _plan_text(df)
    # (output names may spell the user's variant_get; an evaluated one would name an attribute, v#12)
    assert "__vl_shredded" not in plan and "Union" not in plan and not re.search(r"variant_get\(\w+#", plan, re.I), plan
    for scan in executed_scans(df):
        schema = str(scan.requiredSchema().json())
        assert '"variant"' not in schema and '"name":"value"' not in schema, schema


def test_partitions_each_a_shredded_group_need_no_flag(spark: Any, tables: dict[str, Table]) -> None:
    query = "SELECT day, v:b::string, sum(v:a::bigint) FROM {e} WHERE v:c.d::bigint > 10 GROUP BY 1, 2"
    explanation = vs.explain(spark, query, e=tables["parts"], show=False)
    assert [g.kind for g in explanation.plans["e"].groups] == ["shredded", "shredded"]
    assert "__vl_shredded" not in explanation.sql and "IF(" not in explanation.sql.upper()
    df = vs.sql(spark, query, e=tables["parts"])
    assert "__vl_shredded" not in _plan_text(df)
    assert _rows(df) == _rows(_reference(spark, tables["parts"], query))
    assert {r[0] for r in df.collect()} == {dt.date(2024, 1, 1), dt.date(2024, 1, 2)}


def test_a_variant_group_keeps_the_flag_form(spark: Any, tables: dict[str, Table]) -> None:
    query = "SELECT v:b::string AS b, count(*), sum(v:c.d::bigint) FROM {e} GROUP BY 1"
    explanation = vs.explain(spark, query, e=tables["mixed"], show=False)
    assert sorted(g.kind for g in explanation.plans["e"].groups) == ["shredded", "variant"]
    assert "IF(__vl_shredded, __vl_0, CAST(VARIANT_GET(v, '$.b') AS STRING))" in explanation.sql
    assert "plain columns" not in str(explanation)
    df = vs.sql(spark, query, e=tables["mixed"])
    assert _rows(df) == _rows(_reference(spark, tables["mixed"], query))


def test_select_star_and_the_whole_variant_still_read_the_variant(spark: Any, tables: dict[str, Table]) -> None:
    query = "SELECT id, v, v:a::bigint FROM {e} WHERE id < 3"
    df = vs.sql(spark, query, e=tables["single"])
    assert [(r[0], r[2]) for r in sorted(df.collect())] == [(0, 0), (1, 1), (2, 2)]
    star = vs.sql(spark, "SELECT * FROM {e} WHERE v:a::bigint < 2", e=tables["single"])
    assert star.columns == ["id", "v"] and sorted(r[0] for r in star.collect()) == [0, 1]


@pytest.mark.parametrize("query", ["SELECT sum(v:b::int) FROM {e}", "SELECT v:a::tinyint FROM {e}"])
def test_errors_are_sparks_own(spark: Any, tables: dict[str, Table], query: str) -> None:
    with pytest.raises(Exception) as expected:
        _reference(spark, tables["single"], query).collect()
    with pytest.raises(Exception) as got:
        vs.sql(spark, query, e=tables["single"]).collect()
    assert type(got.value) is type(expected.value)
    assert getattr(got.value, "getCondition", lambda: None)() == getattr(expected.value, "getCondition", lambda: None)()


def test_analyses_are_made_once_per_text_schema_and_confs(spark: Any, tables: dict[str, Table]) -> None:
    from varlake.spark.reading.prepare import prepare

    query = "SELECT v:b::string AS b, count(*) FROM {e} WHERE v:a::bigint > 3 GROUP BY 1"
    single = prepare(spark, query, {"e": tables["single"]})
    again = prepare(spark, query, {"e": tables["single"]})
    assert again.analysis is single.analysis  # made once
    mixed = prepare(spark, query, {"e": tables["mixed"]})
    assert mixed.analysis is single.analysis  # the same schema: the same analysis, rewritten its own way
    assert "__vl_shredded" not in single.sql and "IF(__vl_shredded" in mixed.sql and again.sql == single.sql
    assert single.analysis.tree is not None and "__vl_" not in single.analysis.tree.sql()  # rewrites copy the tree
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        other = prepare(spark, query, {"e": tables["single"]})
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")
    assert other.analysis is not single.analysis and other.sql == single.sql  # other parser confs: analysed again
    assert _rows(vs.sql(spark, query, e=tables["mixed"])) == _rows(_reference(spark, tables["mixed"], query))
