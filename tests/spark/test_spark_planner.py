"""The Spark read planner without Spark: SQL analysis and rewriting, footer layouts, grouping, skipping."""

from __future__ import annotations

import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from varlake.delta.actions import AddFile
from varlake.delta.schema import parse_schema
from varlake.errors import TableError
from varlake.expr import FileStats, TypeFamily, VariantBound, bind, flatten_delta_schema, parse_predicate
from varlake.expr.raising import cannot_raise
from varlake.io.parquet_write import write_parquet
from varlake.read.layout import file_layout
from varlake.spark.reading.planner import (
    ISNULL,
    PathUse,
    leaf_serves,
    nested_target,
    plan_table,
    serving,
    target_type,
    type_text,
)
from varlake.spark.reading.placeholders import derived_name
from varlake.spark.reading.rewrite import rewrite
from varlake.spark.reading.sql import analyze, spark_path
from varlake.table import Table, to_arrow_table

EVENTS = parse_schema(
    '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
    '{"name":"v","type":"variant","nullable":true,"metadata":{}},'
    '{"name":"w","type":"variant","nullable":true,"metadata":{}},'
    '{"name":"p","type":"integer","nullable":true,"metadata":{}}]}'
)


def _uses(query: str, **schemas: Any) -> Any:
    return analyze(query, schemas or {"e": EVENTS})


# --- analysis -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "use"),
    [
        ("v:a.b::int", PathUse(("v",), ("a", "b"), "integer")),
        ("CAST(v:a AS BIGINT)", PathUse(("v",), ("a",), "long")),
        ("TRY_CAST(v:a[2] AS DECIMAL(10, 2))", PathUse(("v",), ("a", 2), "decimal(10,2)", safe=True)),
        ("variant_get(v, '$.a.b', 'string')", PathUse(("v",), ("a", "b"), "string")),
        ("try_variant_get(v, '$[\"x y\"]', 'date')", PathUse(("v",), ("x y",), "date", safe=True)),
        ("CAST(variant_get(v, '$.a') AS SMALLINT)", PathUse(("v",), ("a",), "short")),
        ("v:['k.l']::boolean", PathUse(("v",), ("k.l",), "boolean")),
        ("v:a IS NULL", PathUse(("v",), ("a",), ISNULL)),
        ("w:z::double", PathUse(("w",), ("z",), "double")),
    ],
)
def test_every_form_of_a_typed_path_is_a_site(expression: str, use: PathUse) -> None:
    analysis = _uses(f"SELECT id, {expression} FROM {{e}}")
    usage = analysis.tables["e"]
    assert not usage.whole_variant, usage.reasons
    assert usage.uses == [use]
    assert [s.use for s in analysis.sites] == [use]


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("SELECT * FROM {e}", "SELECT *"),
        ("SELECT e.* FROM {e} e", "reads every column"),
        ("SELECT to_json(v) FROM {e}", "whole Variant"),
        ("SELECT v:a FROM {e}", "used as a Variant"),
        ("SELECT v:a::map<string, int> FROM {e}", "not supported"),
        ("SELECT variant_get(v, '$.a', 'struct<x: variant>') FROM {e}", "not supported"),
        ("SELECT variant_get(v, concat('$.', 'a'), 'int') FROM {e}", "not literals"),
        ("SELECT variant_get(v, 'a', 'int') FROM {e}", "invalid path"),
        ("SELECT v:a::int FROM {e} JOIN other_table USING (id)", "cannot tell"),
    ],
)
def test_whole_variant_uses_disable_path_pruning(query: str, reason: str) -> None:
    usage = _uses(query).tables["e"]
    assert usage.whole_variant and usage.uses == []
    assert any(reason in r for r in usage.reasons), usage.reasons


def test_columns_resolve_through_aliases_subqueries_and_ctes() -> None:
    query = (
        "WITH recent AS (SELECT id, v:a::bigint AS a FROM {e} WHERE v:ts::bigint > 5) "
        "SELECT r.a, x.v:b::string FROM recent r JOIN {e} AS x ON r.id = x.id "
        "WHERE x.id IN (SELECT id FROM {e} WHERE v:c IS NOT NULL)"
    )
    usage = _uses(query).tables["e"]
    assert not usage.whole_variant, usage.reasons
    assert set(usage.uses) == {
        PathUse(("v",), ("a",), "long"), PathUse(("v",), ("ts",), "long"),
        PathUse(("v",), ("b",), "string"), PathUse(("v",), ("c",), ISNULL),
    }
    # three occurrences: the CTE's (filtered), the join's (no WHERE on x alone), the IN subquery's
    assert len(usage.filters) == 3 and usage.filters.count(None) == 1


def test_subquery_column_named_like_the_variant_is_not_the_table_column() -> None:
    usage = _uses("SELECT s.v:a::int FROM (SELECT parse_json('{}') AS v) s, {e} t WHERE t.id = 1").tables["e"]
    assert not usage.whole_variant and usage.uses == []


def test_a_column_of_two_tables_with_the_same_name_is_ambiguous() -> None:
    analysis = _uses("SELECT v:a::int FROM {e} JOIN {f} ON true", e=EVENTS, f=EVENTS)
    assert analysis.tables["e"].whole_variant and analysis.tables["f"].whole_variant


def test_where_conjuncts_of_one_table_become_skipping_filters() -> None:
    query = "SELECT id FROM {e} WHERE v:a::bigint BETWEEN 1 AND 5 AND p = 2 AND id + 1 > rand() AND upper(v:b::string) = 'X'"
    (filters,) = _uses(query).tables["e"].filters
    assert [str(f) for f in filters] == [
        str(parse_predicate("v:a::bigint BETWEEN 1 AND 5")), str(parse_predicate("p = 2")),
        str(parse_predicate("upper(variant_get(v, '$.b', 'string')) = 'X'")),  # not id + 1 > rand(): varlake has no rand()
    ]


def test_outer_joins_give_no_skipping_filters() -> None:
    query = "SELECT a.id FROM {e} a LEFT JOIN {f} b ON a.id = b.id WHERE b.v:a::int = 1 AND a.p = 1"
    analysis = _uses(query, e=EVENTS, f=EVENTS)
    assert analysis.tables["e"].filters == [None] and analysis.tables["f"].filters == [None]


def test_join_conjuncts_are_split_per_table() -> None:
    query = "SELECT a.id FROM {e} a JOIN {f} b ON a.id = b.id WHERE b.v:a::int = 1 AND a.p = 1 AND a.id = b.id"
    analysis = _uses(query, e=EVENTS, f=EVENTS)
    assert [str(f) for f in analysis.tables["e"].filters[0]] == [str(parse_predicate("p = 1"))]
    assert [str(f) for f in analysis.tables["f"].filters[0]] == [str(parse_predicate("v:a::int = 1"))]


def test_unknown_placeholder_and_unparsable_sql() -> None:
    with pytest.raises(TableError, match="no table 'x'"):
        _uses("SELECT * FROM {x}")
    analysis = _uses("SELECT v:a::int FROM {e} WHERE (((")
    assert analysis.tables["e"].whole_variant and analysis.note and "sqlglot" in analysis.note
    assert rewrite(analysis, {"e": {}}) == "SELECT v:a::int FROM __varlake_e WHERE ((("


# --- rewriting ----------------------------------------------------------------------------------------


def test_rewrite_routes_each_site_through_the_flag_and_keeps_the_original() -> None:
    analysis = _uses("SELECT x.v:a::int AS a, count(*) FROM {e} x WHERE try_variant_get(x.v, '$.b', 'string') = 'k' AND x.v:c IS NULL GROUP BY 1")
    derived = {"e": {use: derived_name(i) for i, use in enumerate(analysis.tables["e"].uses)}}
    text = rewrite(analysis, derived)
    assert "IF(x.__vl_shredded, x.__vl_0, CAST(VARIANT_GET(x.v, '$.a') AS INT)) AS a" in text
    assert "IF(x.__vl_shredded, x.__vl_1, TRY_VARIANT_GET(x.v, '$.b', 'string')) = 'k'" in text
    assert "IF(x.__vl_shredded, x.__vl_2, VARIANT_GET(x.v, '$.c') IS NULL)" in text
    assert "FROM __varlake_e AS x" in text


def test_rewrite_leaves_tables_without_derived_columns_alone() -> None:
    analysis = _uses("SELECT v:a::int, 'it''s' FROM {e}")
    assert rewrite(analysis, {}) == "SELECT v:a::int, 'it''s' FROM __varlake_e"


def test_spark_path_text() -> None:
    assert spark_path(("a", 0, "b c", "it's", "x.y")) == "$.a[0]['b c'][\"it's\"]['x.y']"
    assert spark_path(("both'\"",)) is None


# --- which leaves serve which casts ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("leaf", "target", "serves"),
    [
        ("integer", "long", True), ("long", "integer", False), ("byte", "short", True),
        ("integer", "decimal(12,2)", True), ("long", "decimal(12,2)", False), ("long", "decimal(19,0)", True),
        ("decimal(9,2)", "decimal(12,3)", True), ("decimal(9,2)", "decimal(12,1)", False),
        ("decimal(9,2)", "decimal(9,2)", True), ("decimal(12,2)", "decimal(10,2)", False),
        ("string", "string", True), ("long", "string", False), ("string", "long", False),
        ("float", "double", False), ("date", "timestamp", False), ("timestamp", "timestamp", True),
        ("boolean", ISNULL, True), (None, ISNULL, False), (None, "long", False),
    ],
)
def test_leaf_serves_only_lossless_same_family_widening(leaf: str | None, target: str, serves: bool) -> None:
    assert leaf_serves(leaf, target) is serves


# --- footers -----------------------------------------------------------------------------------------------


def _table(tmp_path: Path, *files: tuple[list[Any], str | None], partitioned: bool = False) -> Table:
    schema = "id bigint, v variant" + (", p int" if partitioned else "")
    table = Table.create(tmp_path / "t", schema, partition_by=["p"] if partitioned else [])
    file_schema = parse_schema(
        '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
        '{"name":"v","type":"variant","nullable":true,"metadata":{}}]}'
    )
    adds = []
    for i, (docs, layout) in enumerate(files):
        rel = (f"p={i % 2}/" if partitioned else "") + f"f{i}.parquet"
        target = Path(table.path) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = to_arrow_table({"id": list(range(len(docs))), "v": docs}, file_schema)
        result = write_parquet(data, target, shredding={"v": layout} if layout else None, variant_columns=["v"])
        adds.append(AddFile(rel, result.size, {"p": str(i % 2)} if partitioned else {}, 0, True, table.file_stats_json(rel)))
    table.commit_files(adds, "append")
    return table


def _layout(table: Table, index: int = 0) -> Any:
    tasks = sorted(table.files(), key=lambda a: a.path)
    return file_layout(table.storage, f"{table.path}/{tasks[index].path}")


def test_footer_layout_finds_perfectly_shredded_leaves(tmp_path: Path) -> None:
    docs = [
        {"a": 1, "b": "x", "c": {"d": 5}, "arr": [1, 2], "extra": True},  # 'extra' is not shredded
        {"a": 2, "c": {"d": 6}, "arr": []},  # b missing: still perfect
        None,  # SQL NULL row
        [1, 2],  # not an object: top-level value, no typed_value
        {"a": 3, "b": None, "c": "not an object", "arr": "nope"},  # b is a Variant null
    ]
    table = _table(tmp_path, (docs, "a bigint, b string, c struct<d: int>, arr array<smallint>, q date"))
    layout = _layout(table)
    assert layout.leaf_type(("v",), ("a",)) == "long"
    assert layout.leaf_type(("v",), ("b",)) is None  # the JSON null sits in b's value column
    assert layout.leaf_type(("v",), ("c", "d")) == "integer"
    assert layout.leaf_type(("v",), ("arr", 0)) == "short"
    assert layout.leaf_type(("v",), ("q",)) == "date"  # never present is perfectly (all-missing) shredded
    assert layout.leaf_type(("v",), ("c",)) is None  # an object, not a leaf
    assert layout.leaf_type(("v",), ("extra",)) is None
    assert layout.leaf_type(("v",), ("a", "x")) is None
    assert layout.leaf_type(("nope",), ("a",)) is None


def test_footer_layout_rejects_mixed_types_and_unshredded_files(tmp_path: Path) -> None:
    table = _table(tmp_path, ([{"a": 1}, {"a": "two"}], "a bigint"), ([{"a": 1}], None), ([{"a": Decimal("1.50")}], "a decimal(9,2)"))
    assert _layout(table, 0).leaf_type(("v",), ("a",)) is None
    assert _layout(table, 1).leaf_type(("v",), ("a",)) is None
    assert _layout(table, 2).leaf_type(("v",), ("a",)) == "decimal(9,2)"


# --- planning a table ---------------------------------------------------------------------------------------


def test_files_group_by_layout_and_partition(tmp_path: Path) -> None:
    ints = [{"a": i, "b": f"s{i}"} for i in range(5)]
    table = _table(
        tmp_path,
        (ints, "a bigint, b string"), (ints, "a int, b string"), (ints, "a bigint, b string"),
        (ints, None), ([{"a": "x"}], "a bigint"), (ints, "a string"),
        partitioned=True,
    )
    uses = [PathUse(("v",), ("a",), "long"), PathUse(("v",), ("b",), "string")]
    plan = plan_table("e", table, table.snapshot(), uses, False, None)
    shredded = [g for g in plan.groups if g.kind == "shredded"]
    assert sorted((dict(g.partition_values)["p"], len(g.tasks), tuple(g.leaves.values())) for g in shredded) == [
        ("0", 2, ("long", "string")), ("1", 1, ("integer", "string")),
    ]
    assert sum(len(g.tasks) for g in plan.groups if g.kind == "variant") == 3
    whole = plan_table("e", table, table.snapshot(), uses, True, None)
    assert {g.kind for g in whole.groups} == {"variant"} and whole.uses == ()


def test_statistics_skip_files_and_partition_values_prune(tmp_path: Path) -> None:
    table = _table(
        tmp_path, ([{"a": i} for i in range(10)], "a bigint"), ([{"a": i} for i in range(100, 110)], "a bigint"),
        ([{"a": i} for i in range(200, 210)], "a bigint"), partitioned=True,
    )
    use = [PathUse(("v",), ("a",), "long")]
    plan = plan_table("e", table, table.snapshot(), use, False, parse_predicate("v:a::bigint BETWEEN 100 AND 150"))
    assert [t.relative_path for t in plan.skipped_by_stats] == ["p=0/f0.parquet", "p=0/f2.parquet"]
    assert [t.relative_path for t in plan.read_tasks] == ["p=1/f1.parquet"]
    plan = plan_table("e", table, table.snapshot(), use, False, parse_predicate("p = 1 AND v:a::bigint > 1000"))
    assert [t.relative_path for t in plan.skipped_by_partition] == ["p=0/f0.parquet", "p=0/f2.parquet"]
    assert [t.relative_path for t in plan.skipped_by_stats] == ["p=1/f1.parquet"]


def test_files_whose_rows_would_raise_are_not_skipped(tmp_path: Path) -> None:
    table = _table(tmp_path, ([{"a": 1000 + i} for i in range(10)], "a bigint"), ([{"a": i} for i in range(10)], "a bigint"))
    use = [PathUse(("v",), ("a",), "byte")]
    # v:a::tinyint < 0 excludes both files by statistics, but 1000 does not fit a tinyint:
    # Spark raises on the first file, so it must be read
    plan = plan_table("e", table, table.snapshot(), use, False, parse_predicate("v:a::tinyint < 0"))
    assert [t.relative_path for t in plan.readmitted] == ["f0.parquet"]
    assert [t.relative_path for t in plan.skipped_by_stats] == ["f1.parquet"]
    plan = plan_table("e", table, table.snapshot(), use, False, parse_predicate("try_variant_get(v, '$.a', 'tinyint') < 0"))
    assert plan.readmitted == () and len(plan.skipped_by_stats) == 2


def test_cannot_raise_needs_statistics_that_prove_the_cast() -> None:
    types = flatten_delta_schema({"fields": [{"name": "v", "type": "variant"}, {"name": "s", "type": "string"}]})
    key = (("v",), "$['a']")

    def stats(lo: Any, hi: Any, family: TypeFamily = TypeFamily.EXACT_NUMERIC) -> FileStats:
        return FileStats(num_records=5, variant_min={key: VariantBound(lo, family)}, variant_max={key: VariantBound(hi, family)})

    def check(text: str, s: FileStats) -> bool:
        return cannot_raise(bind(parse_predicate(text), types), s)

    assert check("v:a::int > 5", stats(-5, 2**31 - 1))
    assert not check("v:a::int > 5", stats(-5, 2**31))
    assert check("v:a::decimal(5,1) > 5", stats(-5, 9999))
    assert not check("v:a::decimal(5,1) > 5", stats(-5, 10000))
    assert not check("v:a::int > 5", FileStats(num_records=5))
    assert check("v:a::string = 'x'", stats("a", "b", TypeFamily.STRING))
    assert not check("v:a::int = 1", stats("a", "b", TypeFamily.STRING))
    assert check("try_variant_get(v, '$.a', 'int') = 1", FileStats(num_records=5))
    assert not check("CAST(s AS INT) = 1", FileStats(num_records=5))


NESTED = parse_schema(
    '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
    '{"name":"s","type":{"type":"struct","fields":[{"name":"n","type":"integer","nullable":true,"metadata":{}},'
    '{"name":"v","type":"variant","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}'
)


def test_variants_held_in_structs_are_sites_too() -> None:
    analysis = analyze("SELECT t.s.v:a::int, s.v:b IS NULL, s.n FROM {e} t WHERE s.v:a::bigint > 5 AND t.s.n = 1", {"e": NESTED})
    usage = analysis.tables["e"]
    assert not usage.whole_variant, usage.reasons
    assert usage.uses == [PathUse(("s", "v"), ("a",), "integer"), PathUse(("s", "v"), ("b",), ISNULL), PathUse(("s", "v"), ("a",), "long")]
    assert [s.qualifier for s in analysis.sites] == ["t", None, None]
    assert [str(f) for f in usage.filters[0]] == [str(parse_predicate("s.v:a::bigint > 5")), str(parse_predicate("s.n = 1"))]
    derived = {"e": {use: derived_name(i) for i, use in enumerate(usage.uses)}}
    text = rewrite(analysis, derived)
    assert "IF(t.__vl_shredded, t.__vl_0, CAST(VARIANT_GET(t.s.v, '$.a') AS INT))" in text
    assert "IF(__vl_shredded, __vl_2, CAST(VARIANT_GET(s.v, '$.a') AS BIGINT)) > 5" in text


@pytest.mark.parametrize("query", ["SELECT s FROM {e}", "SELECT to_json(s.v) FROM {e}", "SELECT t.s.v FROM {e} t"])
def test_reading_the_struct_or_its_variant_whole_disables_pruning(query: str) -> None:
    assert analyze(query, {"e": NESTED}).tables["e"].whole_variant


# --- struct and array targets --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("array<struct<l_quantity: double, l_shipdate: date>>", "array<struct<l_quantity:double,l_shipdate:date>>"),
        ("STRUCT<c_name: STRING, nation: STRUCT<n_name: STRING>>", "struct<c_name:string,nation:struct<n_name:string>>"),
        ("ARRAY<STRING>", "array<string>"),
        ("struct<`c d`: INT, b ARRAY<BIGINT>, `x``y`: DECIMAL(15, 2)>", "struct<`c d`:integer,b:array<long>,`x``y`:decimal(15,2)>"),
        ("array<array<struct<t: TINYINT, s: SMALLINT, ts: TIMESTAMP_LTZ, n: TIMESTAMP_NTZ, r: REAL>>>",
         "array<array<struct<t:byte,s:short,ts:timestamp,n:timestamp_ntz,r:float>>>"),
        # what the planner leaves to the Variant path
        ("map<string, int>", None), ("struct<a: map<string, int>>", None), ("array<variant>", None),
        ("struct<>", None), ("struct<a: int, a: bigint>", None), ("struct<a: int, A: bigint>", None),
        ("struct<a: int NOT NULL>", None), ("struct<a: int COMMENT 'x'>", None), ("struct<a: varchar(3)>", None),
        ("int", None), ("struct<a: int", None),
    ],
)
def test_nested_targets_have_one_canonical_text(text: str, canonical: str | None) -> None:
    assert nested_target(text) == canonical
    if canonical is not None:
        assert type_text(target_type(canonical)) == canonical  # parses back to the same type


@pytest.mark.parametrize(
    ("expression", "target"),
    [
        ("variant_get(v, '$.a', 'array<struct<q: double, d: date>>')", "array<struct<q:double,d:date>>"),
        ("try_variant_get(v, '$.a', 'array<string>')", "array<string>"),
        ("CAST(v:a AS STRUCT<c_name: STRING, nation: STRUCT<n_name: STRING>>)", "struct<c_name:string,nation:struct<n_name:string>>"),
        ("TRY_CAST(v:a AS ARRAY<BIGINT>)", "array<long>"),
        ("v:a::struct<`x y`: int>", "struct<`x y`:integer>"),
        ("CAST(variant_get(v, '$.a') AS ARRAY<STRUCT<b: INT>>)", "array<struct<b:integer>>"),
    ],
)
def test_struct_and_array_casts_are_sites(expression: str, target: str) -> None:
    analysis = _uses(f"SELECT id, {expression} FROM {{e}}")
    usage = analysis.tables["e"]
    assert not usage.whole_variant, usage.reasons
    assert usage.uses == [PathUse(("v",), ("a",), target, safe=expression.lower().startswith("try_"))]


def test_lateral_view_explode_of_a_variant_array_is_a_site() -> None:
    query = (
        "SELECT o.id, l.q, l.d FROM {e} o LATERAL VIEW explode(variant_get(o.v, '$.items', 'array<struct<q: double, d: date>>')) x AS l "
        "LATERAL VIEW explode(variant_get(v, '$.tags', 'array<string>')) y AS tag WHERE v:a::bigint > 5 AND l.q > 1"
    )
    analysis = _uses(query)
    usage = analysis.tables["e"]
    assert not usage.whole_variant, usage.reasons
    assert usage.uses == [
        PathUse(("v",), ("items",), "array<struct<q:double,d:date>>"), PathUse(("v",), ("tags",), "array<string>"),
        PathUse(("v",), ("a",), "long"),
    ]
    # the lateral views are not occurrences of their own: one occurrence, with its own conjunct
    assert [[str(f) for f in fs] for fs in usage.filters if fs is not None] == [[str(parse_predicate("v:a::bigint > 5"))]]
    assert len(usage.filters) == 1
    derived = {"e": {use: derived_name(i) for i, use in enumerate(usage.uses)}}
    text = rewrite(analysis, derived)
    assert "EXPLODE(IF(o.__vl_shredded, o.__vl_0, VARIANT_GET(o.v, '$.items', 'array<struct<q: double, d: date>>')))" in text
    assert "EXPLODE(IF(__vl_shredded, __vl_1, VARIANT_GET(v, '$.tags', 'array<string>')))" in text


def test_a_lateral_column_named_like_the_variant_is_ambiguous() -> None:
    usage = _uses("SELECT v FROM {e} LATERAL VIEW explode(variant_get(v, '$.t', 'array<string>')) x AS v").tables["e"]
    assert usage.whole_variant


ORDERS_LAYOUT = (
    "o bigint, customer struct<c_name: string, nation: struct<n_name: string, n_key: bigint>>, "
    "tags array<string>, items array<struct<q: decimal(9,2), d: date, f: string>>"
)


def _order(i: int) -> dict[str, Any]:
    return {
        "o": i, "customer": {"c_name": f"c{i}", "nation": {"n_name": f"n{i % 3}", "n_key": i % 3}}, "tags": [f"t{i}"],
        "items": [{"q": Decimal(f"{j}.25"), "d": datetime.date(1995, 1, 1 + j), "f": "AR"[j % 2]} for j in range(i % 3)],
    }


def _use(path: str, target: str) -> PathUse:
    canonical = nested_target(target)
    assert canonical is not None
    return PathUse(("v",), tuple(path.split(".")) if path else (), canonical)


def test_perfectly_shredded_subtrees_serve_struct_and_array_targets(tmp_path: Path) -> None:
    docs = [_order(i) for i in range(6)]
    docs[1].pop("customer")  # path missing in some rows
    docs[2]["items"][0].pop("d")  # an element without one field
    docs.append(None)
    table = _table(tmp_path, (docs, ORDERS_LAYOUT))
    layout = _layout(table)
    serve = lambda path, target: serving(layout, _use(path, target))  # noqa: E731
    assert serve("items", "array<struct<q: decimal(15,2), d: date>>") == "array<struct<q:decimal(9,2),d:date>>"
    assert serve("customer", "struct<c_name: string, nation: struct<n_name: string>>") == "struct<c_name:string,nation:struct<n_name:string>>"
    assert serve("tags", "array<string>") == "array<string>"
    # target fields that are not shredded are NULL in every row (Spark matches names case-sensitively);
    # when none is shredded one other field is read, only for the object's own nulls
    assert serve("customer", "struct<C_NAME: string, zz: int, nation: struct<n_key: bigint>>") == "struct<nation:struct<n_key:long>>"
    assert serve("customer", "struct<zz: int>") == "struct<c_name:string>"
    assert serve("", "struct<o: bigint, tags: array<string>>") == "struct<o:long,tags:array<string>>"
    # leaves that do not convert exactly, and shapes that do not match, do not serve
    assert serve("items", "array<struct<q: decimal(9,1)>>") is None
    assert serve("items", "array<struct<q: double>>") is None
    assert serve("customer", "array<string>") is None
    assert serve("tags", "struct<a: string>") is None
    assert serve("items", "array<array<string>>") is None
    assert serve("o", "struct<a: string>") is None


def test_json_nulls_mixed_types_and_residual_fields_do_not_serve(tmp_path: Path) -> None:
    null_field, null_element, mixed, extra = ([_order(i) for i in range(4)] for _ in range(4))
    null_field[2]["customer"]["c_name"] = None
    null_element[2]["items"].append(None)
    mixed[2]["items"][0]["q"] = "7.25"
    extra[2]["customer"]["c_phone"] = "555"  # not shredded: lands in customer's residual value
    table = _table(tmp_path, (null_field, ORDERS_LAYOUT), (null_element, ORDERS_LAYOUT), (mixed, ORDERS_LAYOUT), (extra, ORDERS_LAYOUT))
    customer = _use("customer", "struct<c_name: string>")
    items = _use("items", "array<struct<q: decimal(15,2)>>")
    flags = _use("items", "array<struct<f: string>>")
    served = [(serving(_layout(table, i), customer), serving(_layout(table, i), items), serving(_layout(table, i), flags)) for i in range(4)]
    assert served == [
        (None, "array<struct<q:decimal(9,2)>>", "array<struct<f:string>>"),  # a JSON null in c_name
        ("struct<c_name:string>", None, None),  # a JSON null element
        ("struct<c_name:string>", None, "array<struct<f:string>>"),  # a string among q's decimals
        (None, "array<struct<q:decimal(9,2)>>", "array<struct<f:string>>"),  # customer has an unshredded field
    ]


def test_keys_equal_up_to_case_are_not_read_as_structs(tmp_path: Path) -> None:
    table = _table(tmp_path, ([{"a": 1, "A": 2, "c": {"x": 1}}, {"a": 3, "c": {"x": 2}}], "a bigint, A bigint, c struct<x: bigint>"))
    layout = _layout(table)
    assert layout.leaf_type(("v",), ("a",)) is None
    assert serving(layout, _use("", "struct<a: bigint>")) is None
    assert serving(layout, _use("", "struct<c: struct<x: bigint>>")) == "struct<c:struct<x:long>>"


def test_nested_uses_group_files_by_shape(tmp_path: Path) -> None:
    docs = [_order(i) for i in range(4)]
    narrow = [dict(d, items=[{"q": item["q"]} for item in d["items"]]) for d in docs]
    table = _table(tmp_path, (docs, ORDERS_LAYOUT), (narrow, "items array<struct<q: decimal(12,2)>>"), (docs, None))
    use = _use("items", "array<struct<q: decimal(15,2), f: string>>")
    plan = plan_table("e", table, table.snapshot(), [use], False, None)
    shapes = sorted(g.leaves[use] for g in plan.groups if g.kind == "shredded")
    assert shapes == ["array<struct<q:decimal(12,2)>>", "array<struct<q:decimal(9,2),f:string>>"]
    assert [len(g.tasks) for g in plan.groups if g.kind == "variant"] == [1]


def test_wider_numeric_leaves_serve_narrower_targets_when_the_footer_bounds_fit(tmp_path: Path) -> None:
    inside = [{"q": Decimal("12.50"), "n": 7}, {"q": Decimal("-99999.99"), "n": -(2**31)}, {"n": None}, {}]
    outside = [{"q": Decimal("12345678901234.00"), "n": 2**31}]
    table = _table(tmp_path, (inside, "q decimal(18,2), n bigint"), (outside, "q decimal(18,2), n bigint"))
    fits, overflows = _layout(table, 0), _layout(table, 1)
    use = lambda path, target: PathUse(("v",), (path,), target)  # noqa: E731
    assert serving(fits, use("q", "decimal(15,2)")) == "decimal(18,2)"
    assert serving(fits, use("q", "decimal(8,3)")) == "decimal(18,2)"  # more scale is exact
    assert serving(fits, use("q", "decimal(7,3)")) is None  # -99999.99 needs five integer digits
    assert serving(fits, use("q", "decimal(15,1)")) is None  # less scale would round
    assert serving(fits, use("q", "integer")) is None  # decimal to integer: never by bounds
    assert serving(fits, use("n", "integer")) is None  # n holds a JSON null: not perfectly shredded
    assert serving(overflows, use("q", "decimal(15,2)")) is None
    assert serving(overflows, use("q", "decimal(16,2)")) == "decimal(18,2)"
    assert serving(overflows, use("n", "integer")) is None and serving(overflows, use("n", "long")) == "long"
    ints = _table(tmp_path / "ints", ([{"n": 5}, {"n": -(2**31)}, {}], "n bigint"))
    assert serving(_layout(ints), use("n", "integer")) == "long"
    assert serving(_layout(ints), use("n", "short")) is None
    assert serving(_layout(ints), use("n", "decimal(10,0)")) == "long"
    assert serving(_layout(ints), use("n", "decimal(11,2)")) is None
    assert _layout(ints).leaf_bounds("v.typed_value.n") == (-(2**31), 5)
