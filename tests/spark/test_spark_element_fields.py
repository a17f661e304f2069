"""Exploded arrays of structs read as their shredded elements (``element_fields``, ``planner.element_shape``).

``FROM (SELECT variant_get(v, '$.items', 'array<struct<...>>') AS lis FROM t) LATERAL VIEW
explode(lis) x AS l`` then ``l.f``: over files that all shred the elements alike and
whose field casts cannot fail, the view passes the shredded elements on and each ``l.f``
is the cast of the element's leaf. Answers, column names and types equal Spark's over
the same documents as unshredded Variants; files that differ, casts that could fail and
queries that see the element whole keep the rebuilt array.
"""

from __future__ import annotations

import datetime
import itertools
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import varlake.spark as vs
from spark_answers import appended_table, reference_view, same_outcome
from varlake.delta.actions import AddFile
from varlake.delta.schema import StructType
from varlake.io.parquet_write import write_parquet
from varlake.table import Table, to_arrow_table
from varlake.variant import Variant

pytestmark = pytest.mark.spark

ELEMENTS = "arrays read as their shredded elements"
ITEMS = "array<struct<q: decimal(15,2), d: date, f: string>>"
LAYOUT = "o bigint, items array<struct<q: decimal(9,2), d: date, f: string>>"
_COUNTER = itertools.count()


def _order(i: int) -> dict[str, Any]:
    """Orders with 0-3 items; some items lack ``d``, some orders lack ``items``."""
    items = [{"q": Decimal(f"{i + j}.25"), "d": datetime.date(1995, 1, 1 + (i + j) % 28), "f": "AR"[(i + j) % 2]} for j in range(i % 4)]
    if i % 4 == 3:
        del items[1]["d"]
    doc: dict[str, Any] = {"o": i, "items": items}
    if i % 7 == 2:
        del doc["items"]
    return doc


def _file(table: Table, rel: str, docs: list[Any], layout: str, first: int) -> AddFile:
    schema = StructType(tuple(table.schema.field(name) for name in ("id", "v")))
    values = [None if d is None else Variant.from_python(d) for d in docs]
    data = to_arrow_table({"id": list(range(first, first + len(docs))), "v": values}, schema)
    path = Path(table.open_file(rel))
    write_parquet(data, path, shredding={"v": layout}, variant_columns=["v"])
    return AddFile(rel, path.stat().st_size, {}, 0, True, table.file_stats_json(rel))


def _table(root: Path, files: list[tuple[list[Any], str]]) -> Table:
    """One file per (documents, layout), ids numbered on across files."""
    table = Table.create(root, "id bigint, v variant")
    starts = itertools.accumulate([0] + [len(docs) for docs, _ in files])
    adds = [_file(table, f"f{i}.parquet", docs, layout, first) for i, ((docs, layout), first) in enumerate(zip(files, starts))]
    table.commit_files(adds, "append")
    return table


def _reference(spark: Any, docs: list[Any]) -> str:
    return reference_view(spark, docs, "element_fields_ref")


def _check(spark: Any, table: Table, ref: str, query: str) -> tuple[bool, str]:
    """(whether the elements path was taken, the outcome kind): answers (names, types, rows)
    or error conditions equal Spark's."""
    kind, _ = same_outcome(spark, table, ref, query)
    elements = ELEMENTS in str(vs.explain(spark, query, t=table, show=False))
    if elements and kind == "rows":  # the rewritten query ran (Spark did not refuse it: no fallback to Variant reads)
        assert "typed_value" in _optimized(spark, table, query), query
    return elements, kind


def _optimized(spark: Any, table: Table, query: str) -> str:
    return str(vs.sql(spark, query, t=table)._jdf.queryExecution().optimizedPlan().toString())


DOCS = [_order(i) for i in range(30)] + [None]
MORE = [_order(i) for i in range(40, 60)]

SERVED = {
    "direct": f"SELECT id, l.q, l.d FROM {{t}} LATERAL VIEW explode(variant_get(v, '$.items', '{ITEMS}')) x AS l WHERE l.d >= DATE'1995-01-10'",
    "TPC-H form": (
        f"SELECT l.f, sum(l.q) AS total, count(*) AS n, count(l.d) AS dated FROM (SELECT variant_get(v, '$.items', '{ITEMS}') AS lis "
        "FROM {t}) LATERAL VIEW explode(lis) x AS l GROUP BY l.f ORDER BY l.f"
    ),
    "outer, a field in no element": (
        "SELECT id, l.q, l.zz FROM {t} LATERAL VIEW OUTER explode(variant_get(v, '$.items', 'array<struct<q: decimal(15,2), zz: int>>')) x AS l"
    ),
    "explode_outer, cast": f"SELECT id, l.f FROM {{t}} LATERAL VIEW explode_outer(CAST(v:items AS ARRAY<STRUCT<q: DECIMAL(15,2), f: STRING>>)) x AS l",
    "nested subqueries": (
        f"SELECT f, sum(r) AS r FROM (SELECT l.f, l.q * 2 AS r FROM (SELECT v:o::bigint AS o, variant_get(v, '$.items', '{ITEMS}') AS lis "
        "FROM {t} WHERE v:o::bigint > 3) LATERAL VIEW explode(lis) x AS l WHERE l.f = 'A') GROUP BY f"
    ),
    "the same array also read whole": (
        f"SELECT id, l.q, size(w) AS n FROM (SELECT id, variant_get(v, '$.items', '{ITEMS}') AS lis, "
        f"variant_get(v, '$.items', '{ITEMS}') AS w FROM {{t}}) LATERAL VIEW explode(lis) x AS l"
    ),
    "try form": f"SELECT id, l.q FROM (SELECT id, try_variant_get(v, '$.items', '{ITEMS}') AS lis FROM {{t}}) LATERAL VIEW explode(lis) x AS l",
}
REBUILT = {
    "the element whole": f"SELECT id, l FROM {{t}} LATERAL VIEW explode(variant_get(v, '$.items', '{ITEMS}')) x AS l",
    "a field cased otherwise": f"SELECT id, l.Q FROM {{t}} LATERAL VIEW explode(variant_get(v, '$.items', '{ITEMS}')) x AS l",
    "posexplode": f"SELECT id, p, l.q FROM {{t}} LATERAL VIEW posexplode(variant_get(v, '$.items', '{ITEMS}')) x AS p, l",
}


@pytest.fixture(scope="module")
def uniform(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Table, str]:
    """Two files shredding the items alike (decimal, date and string leaves)."""
    table = _table(tmp_path_factory.mktemp("elements") / "t", [(DOCS, LAYOUT), (MORE, LAYOUT)])
    return table, _reference(spark, DOCS + MORE)


@pytest.mark.parametrize("name", sorted(SERVED))
def test_exploded_fields_read_from_element_leaves_answer_as_spark(spark: Any, uniform: tuple[Table, str], name: str) -> None:
    table, ref = uniform
    assert _check(spark, table, ref, SERVED[name]) == (True, "rows")


@pytest.mark.parametrize("name", sorted(REBUILT))
def test_queries_that_see_the_element_otherwise_keep_the_rebuilt_array(spark: Any, uniform: tuple[Table, str], name: str) -> None:
    table, ref = uniform
    assert _check(spark, table, ref, REBUILT[name]) == (False, "rows")


def test_the_view_passes_the_elements_on_and_keeps_what_other_sites_need(spark: Any, uniform: tuple[Table, str]) -> None:
    table, _ = uniform
    prepared = vs.explain(spark, SERVED["TPC-H form"], t=table, show=False).prepared
    (uses,) = prepared.derived.values()
    assert [use.elements for use in uses] == [True]  # no rebuilt array, no failure column
    assert "transform" not in prepared.sql and "`l`.typed_value.`q`.typed_value" in prepared.sql
    assert not prepared.plans["t"].keep_apart  # nothing rebuilt to keep apart
    both = vs.explain(spark, SERVED["the same array also read whole"], t=table, show=False).prepared
    (uses,) = both.derived.values()
    assert sorted(use.elements for use in uses) == [False, True]
    df = vs.sql(spark, SERVED["TPC-H form"], t=table)
    assert df.columns == ["f", "total", "n", "dated"]


def test_files_shredding_the_elements_differently_keep_the_rebuilt_array(spark: Any, tmp_path: Path) -> None:
    """A second file shreds ``q`` as a wider decimal: the view's column would have two types."""
    table = _table(tmp_path / "t", [(DOCS, LAYOUT), (MORE, LAYOUT.replace("decimal(9,2)", "decimal(12,2)"))])
    ref = _reference(spark, DOCS + MORE)
    for query in (SERVED["TPC-H form"], SERVED["direct"]):
        assert _check(spark, table, ref, query) == (False, "rows")
    # a file read as Variant (the items unshredded) leaves no direct read either
    table = _table(tmp_path / "t2", [(DOCS, LAYOUT), (MORE, "o bigint")])
    assert _check(spark, table, ref, SERVED["TPC-H form"]) == (False, "rows")


def test_casts_that_can_fail_keep_spark_errors_and_the_try_form_reads_elements(spark: Any, tmp_path: Path) -> None:
    """String leaves of unproven dates: ``variant_get`` keeps the rebuilt array and its failure
    test (Spark's error on a bad date, even in an element the query filters out); the try
    forms read the elements, NULL at the failing field only."""
    docs = [{"items": [{"d": "1995-01-02", "q": 1}, {"d": "1995-1-3", "q": 2}]}, {"items": [{"d": "nope", "q": 3}]}, {"items": []}]
    table = _table(tmp_path / "t", [(docs, "items array<struct<d: string, q: bigint>>")])
    ref = _reference(spark, docs)
    raising = "SELECT l.q FROM (SELECT variant_get(v, '$.items', 'array<struct<d: date, q: bigint>>') AS lis FROM {t}) LATERAL VIEW explode(lis) x AS l"
    assert _check(spark, table, ref, raising) == (False, "error")
    assert _check(spark, table, ref, raising + " WHERE l.q < 3") == (False, "error")
    tried = raising.replace("variant_get", "try_variant_get").replace("SELECT l.q", "SELECT l.q, l.d")
    assert _check(spark, table, ref, tried) == (True, "rows")
    rows = vs.sql(spark, tried, t=table).collect()
    assert sorted((r.q, r.d) for r in rows) == [(1, datetime.date(1995, 1, 2)), (2, datetime.date(1995, 1, 3)), (3, None)]
    cast = "SELECT l.q FROM {t} LATERAL VIEW explode(try_cast(v:items AS ARRAY<STRUCT<d: DATE, q: BIGINT>>)) x AS l"
    assert _check(spark, table, ref, cast) == (True, "rows")


ISO_DATES = st.dates(min_value=datetime.date(1900, 1, 1), max_value=datetime.date(2100, 12, 31)).map(lambda d: d.isoformat())
ITEM = st.fixed_dictionaries({}, optional={"a": st.integers(-(2**40), 2**40), "s": st.sampled_from(["A", "R", "", "é"]), "d": ISO_DATES,
                                           "e": st.sampled_from(["1999-12-31", "2000-01-01", "2000-02-29"])})
DOC = st.one_of(st.none(), st.fixed_dictionaries({"k": st.integers(0, 3)}, optional={"items": st.lists(ITEM, max_size=4)}))
QUERIES = [
    "SELECT id, l.a, l.s, l.d FROM (SELECT id, variant_get(v, '$.items', 'array<struct<a: bigint, s: string, d: date>>') AS lis "
    "FROM {t}) LATERAL VIEW OUTER explode(lis) x AS l",
    "SELECT l.s, count(*), sum(l.a), max(l.d) FROM {t} LATERAL VIEW explode(variant_get(v, '$.items', "
    "'array<struct<s: string, a: decimal(20,0), d: timestamp>>')) x AS l WHERE l.d IS NOT NULL OR l.a > 0 GROUP BY l.s",
    "SELECT id, l.a FROM (SELECT id, variant_get(v, '$.items', 'array<struct<a: bigint, d: date, e: date>>') AS lis FROM {t}) "
    "LATERAL VIEW explode(lis) x AS l WHERE l.d >= DATE'2000-01-01' OR l.d <=> l.e OR l.e BETWEEN DATE'2000-01-01' AND DATE'2000-02-28'",
]


@settings(max_examples=6, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(files=st.lists(st.lists(DOC, min_size=1, max_size=6), min_size=1, max_size=2))
@example(files=[[{"k": 1, "items": [{"a": 1, "s": "A", "d": "1995-01-02", "e": "2000-01-01"}, {"a": 2}]}, {"k": 2, "items": []}, {"k": 3}, None]])
def test_written_tables_answer_as_spark(spark: Any, tmp_path: Path, files: list[list[Any]]) -> None:
    """Tables written by ``Table.append`` (the date strings proven ISO dates by the writer):
    whatever the planner chooses, the answers are Spark's; the explicit example, whose
    files all shred the items alike, reads them as elements."""
    table = appended_table(tmp_path / f"t{next(_COUNTER)}", files)
    ref = _reference(spark, [d for docs in files for d in docs])
    served = [_check(spark, table, ref, query) for query in QUERIES]
    assert all(kind == "rows" for _, kind in served)
    if files == [[{"k": 1, "items": [{"a": 1, "s": "A", "d": "1995-01-02", "e": "2000-01-01"}, {"a": 2}]}, {"k": 2, "items": []}, {"k": 3}, None]]:
        assert [elements for elements, _ in served] == [True, True, True]
        assert "CASE WHEN" in vs.explain(spark, QUERIES[2], t=table, show=False).sql  # the dates compare as text


# --- fields of ISO dates compare as text ---------------------------------------------------------------------

DATED = "array<struct<d: date, e: date, n: bigint>>"


def _dated(i: int, loose: bool = False) -> dict[str, Any]:
    items = [{"d": (datetime.date(1995, 1, 1) + datetime.timedelta(days=(i * 37 + j * 11) % 700)).isoformat(),
              "e": (datetime.date(1995, 6, 1) + datetime.timedelta(days=(i * 5 + j) % 90)).isoformat(), "n": i + j}
             for j in range(i % 4)]
    if items and i % 5 == 1:
        del items[0]["e"]
    if loose and items:
        items[0]["d"] = "1995-1-3"  # a spelling Spark reads, the writer does not prove
    return {"od": (datetime.date(1994, 1, 1) + datetime.timedelta(days=i * 29 % 800)).isoformat(), "items": items}


COMPARISONS = [
    "l.d < DATE'1995-06-01'", "l.d <= date_sub(DATE'1995-12-01', 30)", "DATE'1995-03-01' > l.d", "l.d = DATE'1995-02-11'",
    "l.d <> DATE'1995-02-11'", "l.d <=> DATE'1995-02-11'", "l.d >= add_months(DATE'1995-01-31', 1)",
    "l.d BETWEEN DATE'1995-02-01' AND date_add(DATE'1995-02-01', 60)", "l.d < l.e", "l.e >= l.d", "l.d <=> l.e",
    "l.d < DATE'+10000-01-01'", "l.d > DATE'-0001-01-01'",
]


def test_fields_of_iso_dates_compare_as_text(spark: Any, tmp_path: Path) -> None:
    """Written by ``Table.append`` (the date strings proven ISO dates): a comparison of such a
    field with a DATE constant or with another such field compares the texts, the
    constant's text only inside the span of ISO texts (Spark folds that test away); the
    answers stay Spark's, for ``variant_get`` and the try form."""
    docs = [_dated(i) for i in range(60)] + [{}, None]
    table = appended_table(tmp_path / "t", [docs])
    ref = _reference(spark, docs)
    for where in COMPARISONS:
        for get in ("variant_get", "try_variant_get"):
            query = (f"SELECT id, l.n, l.d FROM (SELECT id, {get}(v, '$.items', '{DATED}') AS lis FROM {{t}}) "
                     f"LATERAL VIEW OUTER explode(lis) x AS l WHERE {where}")
            assert _check(spark, table, ref, query) == (True, "rows"), query
            sql = vs.explain(spark, query, t=table, show=False).sql
            where_sql = sql.split(" WHERE ", 1)[1]
            assert "TRY_CAST(`l`.typed_value.`d`.typed_value AS DATE) " not in where_sql.split(" ELSE ")[0], where_sql
    # the constant's test folds away: Spark compares the leaf with a string literal
    query = f"SELECT count(*) FROM {{t}} LATERAL VIEW explode(variant_get(v, '$.items', '{DATED}')) x AS l WHERE l.d < DATE'1995-06-01'"
    plan = _optimized(spark, table, query)
    assert "typed_value.d.typed_value < 1995-06-01" in plan and "CASE" not in plan, plan
    # a top-level path read as DATE: its leaf's text, a filter Parquet gets
    tops = [
        "SELECT id, v:od::date AS od FROM {t} WHERE v:od::date < DATE'1994-09-01'",
        "SELECT id FROM {t} WHERE try_cast(v:od AS DATE) BETWEEN DATE'1994-03-01' AND add_months(DATE'1994-03-01', 2)",
        "SELECT id FROM {t} WHERE variant_get(v, '$.od', 'date') <=> DATE'1994-01-30' OR v:od::date > DATE'+10000-01-01'",
        f"SELECT id, l.n FROM (SELECT id, v:od::date AS od, variant_get(v, '$.items', '{DATED}') AS lis FROM {{t}}) "
        "LATERAL VIEW explode(lis) x AS l WHERE l.d > od",  # ``od`` is a column of the subquery here: parsed, as written
    ]
    for query in tops:
        assert _check(spark, table, ref, query)[1] == "rows", query
    # both forms in one view (TPC-H Q3's shape): each derived column its own name, the rewrite runs
    both = (f"SELECT id, l.n FROM (SELECT id, variant_get(v, '$.items', '{DATED}') AS lis FROM {{t}} WHERE v:od::date < DATE'1994-09-01') "
            "LATERAL VIEW explode(lis) x AS l WHERE l.d > DATE'1995-03-01'")
    assert _check(spark, table, ref, both) == (True, "rows")
    names = list(vs.explain(spark, both, t=table, show=False).prepared.derived["t"].values())
    assert len(names) == len(set(names)) == 3  # the DATE, its text, the elements (the rebuilt array dropped)
    explained = str(vs.explain(spark, tops[0], t=table, show=False))
    assert "dates of ISO-date leaves compared as text: v:$['od'] AS date" in explained
    physical = vs.sql(spark, tops[0], t=table)._jdf.queryExecution().executedPlan().toString()
    assert "LessThan(v.typed_value.od.typed_value,1994-09-01)" in physical, physical  # pushed to Parquet


def test_unproven_dates_are_parsed(spark: Any, tmp_path: Path) -> None:
    """A file whose dates are not all ISO texts: its fields cast as before, and the answers
    are Spark's."""
    good, loose = [_dated(i) for i in range(30)], [_dated(i, loose=True) for i in range(30, 40)]
    table = appended_table(tmp_path / "t", [good, loose])
    ref = _reference(spark, good + loose)
    for where in ("l.d < DATE'1995-06-01'", "l.d < l.e"):
        query = (f"SELECT id, l.n FROM (SELECT id, try_variant_get(v, '$.items', '{DATED}') AS lis FROM {{t}}) "
                 f"LATERAL VIEW explode(lis) x AS l WHERE {where}")
        elements, kind = _check(spark, table, ref, query)
        assert kind == "rows"
        assert "CASE WHEN" not in vs.explain(spark, query, t=table, show=False).sql


def test_a_date_filter_on_iso_text_skips_row_groups(spark: Any, tmp_path: Path) -> None:
    """Rows ordered by an ISO-date string, written by ``varlake.spark.write`` in small row
    groups: ``v:od::date < DATE'...'`` compares the leaf's text, which Parquet checks
    against each row group's string bounds, so the scan returns only the row groups that
    may match (a DATE cast of the leaf hid the bounds: every row was scanned)."""
    import pyarrow.parquet as pq

    from varlake.spark.reading.explain import executed_scans
    from varlake.spark.session.local import spark_conf

    rows = 60_000
    frame = spark.range(rows).selectExpr(
        "parse_json(to_json(named_struct('od', CAST(date_add(DATE'2000-01-01', CAST(id DIV 100 AS INT)) AS STRING), 'x', id))) AS v"
    ).coalesce(1)
    path = tmp_path / "sorted"
    with spark_conf(spark, {"parquet.block.size": str(64 * 1024)}):
        vs.write(frame, str(path), mode="overwrite", shredding="auto")
    table = Table(path)
    (add,) = table.files()
    assert pq.ParquetFile(table.open_file(add.path)).metadata.num_row_groups >= 4
    query = "SELECT count(*) AS n FROM {t} WHERE v:od::date < DATE'2000-02-01'"
    df = vs.sql(spark, query, t=table)
    assert df.collect()[0].n == 3100  # 31 days of 100 rows
    scanned = sum(int(n.metrics().apply("numOutputRows").value()) for n in executed_scans(df))
    assert 3100 <= scanned < rows // 2, scanned


def test_a_date_filter_on_iso_text_skips_files(spark: Any, tmp_path: Path) -> None:
    """Files whose ``$.od`` strings the writer proved ISO dates: their string bounds are date
    bounds, so ``v:od::date`` comparisons skip files by statistics (a cast that cannot raise
    there); a file holding a date spelled otherwise is read. Answers are Spark's."""
    months = [[{"od": str(datetime.date(1994, m, 1 + d)), "n": d} for d in range(10)] for m in (1, 4, 7, 10)]
    loose = [{"od": "1994-8-5", "n": 3}]
    table = appended_table(tmp_path / "t", [*months, loose])
    ref = reference_view(spark, [doc for docs in (*months, loose) for doc in docs], "iso_files_ref")
    cases = {
        "SELECT id FROM {t} WHERE v:od::date < DATE'1994-04-05'": 2,
        "SELECT id, v:n::int AS n FROM {t} WHERE try_cast(v:od AS DATE) BETWEEN DATE'1994-07-08' AND DATE'1994-09-30'": 3,
        "SELECT count(*) AS c FROM {t} WHERE variant_get(v, '$.od', 'date') >= DATE'1994-10-10'": 3,
    }
    for query, skipped in cases.items():
        assert same_outcome(spark, table, ref, query)[0] == "rows", query
        explained = str(vs.explain(spark, query, t=table, show=False))
        assert f"skipped by statistics: {skipped}" in explained, explained
