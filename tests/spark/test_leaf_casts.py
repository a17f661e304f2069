"""String leaves serve every atomic cast with Spark's own Variant-cast semantics (``leaf_casts``).

A table whose ``$.s`` is shredded as a string leaf is queried through ``varlake.spark.sql``
with every cast form (``::T``, ``CAST``, ``try_cast``, ``variant_get``, ``try_variant_get``)
to every atomic target; the reference is Spark's query over the same documents as
unshredded Variants (``parse_json``). Both must give the same rows, or fail with the same
error condition -- and the plan must read the string leaf (no Variant group).
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
from varlake.spark.reading.leaf_casts import cast_sql, failure_sql, may_fail, raise_sql, string_leaf_serves
from varlake.spark.reading.planner import PathUse, failure_of, plan_table, target_type
from varlake.spark.session.local import spark_conf
from varlake.table import Table, to_arrow_table
from varlake.variant import Variant
from varlake.write.staging.files import add_action, file_facts

pytestmark = pytest.mark.spark

TARGETS = [
    "date", "timestamp", "timestamp_ntz", "int", "bigint", "smallint", "tinyint", "double", "float",
    "decimal(10,2)", "decimal(38,10)", "boolean", "binary",
]

#: strings of every kind: dates and timestamps in the forms Spark accepts (and some it does
#: not), numbers (signs, fractions, exponents, out of range), booleans, blanks, junk
CURATED = [
    "2024-01-02", " 2024-01-02 ", "2024-1-2", "2024", "2024-01", "+2024-01-02", "-0044-03-15", "12345-01-01",
    "2024-02-30", "2024-13-01", "2024-01-02T10:20:30", "2024-01-02 10:20:30.123456", "2024-01-02T10:20:30Z",
    "2024-01-02 10:20:30+05:30", "2024-01-02T10:20:30.5-08:00", "2024-01-02 10:20:30 UTC", "2024-01-02T25:00:00",
    "2024-01-02 10:20:30 America/Los_Angeles", "T10:20:30", "10:20:30", "2024-01-02T", "1970-01-01 00:00:00",
    "0", "1", "-1", "+5", " 12 ", "\t42\n", "127", "128", "-129", "32768", "2147483648", "9223372036854775807",
    "9223372036854775808", "1.5", "-1.5", "1.", ".5", "1e3", "1E-3", "-2.5e2", "1e400", "1e-400", "123456789.125",
    "99999999.995", "0.005", "nan", "NaN", "Infinity", "-infinity", "inf", "1.0f", "1d", "0x1p3",
    "true", "TRUE", "t", "yes", "Y", "false", "f", "no", "N", "on", " true ", "abc", "", " ", "2024-01-02abc",
    "１２", "null",
]

DATE_TEXT = st.builds(
    lambda y, m, d, sep, pad: f"{y:04d}{sep}{m:0{pad}d}{sep}{d:0{pad}d}",
    st.integers(1, 9999), st.integers(0, 13), st.integers(0, 32), st.sampled_from(["-", "/"]), st.sampled_from([1, 2]),
)
TIME_TEXT = st.builds(
    lambda date, h, mi, s, frac, zone, t: f"{date}{t}{h:02d}:{mi:02d}:{s:02d}{frac}{zone}",
    DATE_TEXT, st.integers(0, 24), st.integers(0, 60), st.integers(0, 60),
    st.sampled_from(["", ".1", ".123456", ".1234567"]), st.sampled_from(["", "Z", "+01:00", "-0830", " UTC", " Europe/Paris"]),
    st.sampled_from([" ", "T"]),
)
NUMBER_TEXT = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=4).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.builds(lambda m, e: f"{m}e{e}", st.integers(-999, 999), st.integers(-40, 40)),
)
TEXT = st.one_of(
    st.sampled_from(CURATED), DATE_TEXT, TIME_TEXT, NUMBER_TEXT,
    st.builds(lambda s, l, r: l + s + r, st.sampled_from(CURATED), st.sampled_from(["", " ", "\t"]), st.sampled_from(["", " ", "\n"])),
    st.text(max_size=6),
)

_COUNTER = itertools.count()


def _docs_table(root: Path, docs: list[Any], layout: str, tagged: bool = False) -> Table:
    """One file of documents ``v`` shredded with ``layout``; ``tagged``: its ``add`` carries
    the layout tags the write path records (``write.files``: leaves of ISO dates proven),
    else planners read its footer."""
    table = Table.create(root, "id bigint, v variant")
    schema = StructType(tuple(table.schema.field(name) for name in ("id", "v")))
    values = [None if d is None else Variant.from_python(d) for d in docs]
    data = to_arrow_table({"id": list(range(len(docs))), "v": values}, schema)
    write_parquet(data, root / "part-0.parquet", shredding={"v": layout}, variant_columns=["v"])
    if tagged:
        (facts,) = file_facts(table.storage, [("part-0.parquet", f"{root}/part-0.parquet")], table.schema.to_schema_string(), 32)
        table.commit_files([add_action(facts, {})], "append")
        return table
    size = (root / "part-0.parquet").stat().st_size
    table.commit_files([AddFile("part-0.parquet", size, {}, 0, True, table.file_stats_json("part-0.parquet"))], "append")
    return table


def _reference(spark: Any, docs: list[Any]) -> str:
    """A view of the same documents as unshredded Variants (``parse_json``)."""
    return reference_view(spark, docs, "leaf_casts_ref")


def _check(spark: Any, table: Table, ref: str, query: str) -> tuple[str, Any]:
    return same_outcome(spark, table, ref, query)


def _assert_leaf_read(spark: Any, table: Table, query: str) -> None:
    """The query is rewritten and every file is read as struct leaves (no Variant group)."""
    explanation = vs.explain(spark, query, t=table, show=False)
    plan = explanation.plans["t"]
    assert explanation.prepared.rewritten, str(explanation)
    assert plan.groups and all(g.kind == "shredded" for g in plan.groups), str(explanation)


def _string_docs(texts: list[str]) -> list[Any]:
    """Documents with ``s`` holding each text, plus a SQL NULL row and one without ``s``."""
    return [{"s": t, "k": i % 3} for i, t in enumerate(texts)] + [None, {"k": 9}]


def _every_form(spark: Any, table: Table, ref: str, targets: list[str]) -> None:
    """Every target's ``try_`` forms and its erroring forms on the rows where the cast works
    (two queries), then the erroring forms on every row for each of ``targets``."""
    tries = ", ".join(f"try_cast(v:s AS {t}), try_variant_get(v, '$.s', '{t}')" for t in TARGETS)
    _check(spark, table, ref, f"SELECT id, {tries} FROM {{t}}")
    _assert_leaf_read(spark, table, f"SELECT id, {tries} FROM {{t}}")
    guarded = ", ".join(
        f"CASE WHEN try_variant_get(v, '$.s', '{t}') IS NULL THEN NULL ELSE array(v:s::{t}, variant_get(v, '$.s', '{t}'), CAST(v:s AS {t})) END"
        for t in TARGETS
    )
    assert _check(spark, table, ref, f"SELECT id, {guarded} FROM {{t}}")[0] == "rows"
    _assert_leaf_read(spark, table, f"SELECT id, {guarded} FROM {{t}}")
    for t in targets:
        _check(spark, table, ref, f"SELECT id, v:s::{t}, variant_get(v, '$.s', '{t}'), CAST(v:s AS {t}) FROM {{t}}")


# --- the SQL each form becomes ------------------------------------------------------------------------------


def test_string_leaves_serve_every_atomic_target_but_nothing_else_changes() -> None:
    for target in ("date", "timestamp", "timestamp_ntz", "integer", "long", "short", "byte", "double", "float",
                   "decimal(15,2)", "boolean", "binary"):
        assert string_leaf_serves("string", target)
    assert not string_leaf_serves("string", "string")  # the leaf itself (planner.leaf_serves)
    assert not string_leaf_serves("long", "date") and not string_leaf_serves(None, "date")
    assert cast_sql("x", "string", "date") == "try_cast(x AS date)"
    assert cast_sql("x", "integer", "long") == "CAST(x AS bigint)"
    items = target_type("array<struct<d:date,n:long,s:string>>")
    assert may_fail(target_type("array<struct<d:string,n:long,s:string>>"), items)
    assert not may_fail(target_type("array<struct<d:date,n:integer,s:string>>"), items)
    assert failure_sql("g", target_type("long"), target_type("long")) == "CAST(NULL AS VARIANT)"
    assert failure_sql("g", target_type("date"), target_type("string")) == (
        "IF((g.typed_value IS NOT NULL AND try_cast(g.typed_value AS date) IS NULL), CAST(g.typed_value AS VARIANT), NULL)"
    )
    assert raise_sql("f", "x", "date") == "COALESCE(variant_get(f, '$', 'date'), x)"


def test_a_use_that_can_fail_gets_a_failure_column_read_from_its_leaf(tmp_path: Path) -> None:
    docs = [{"s": "2024-01-02", "n": 1}, {"s": "x", "n": 2}]
    table = _docs_table(tmp_path / "t", docs, "s string, n bigint")
    uses = [PathUse(("v",), ("s",), "date"), PathUse(("v",), ("s",), "date", safe=True), PathUse(("v",), ("n",), "integer")]
    plan = plan_table("t", table, table.snapshot(), uses, False, None)
    assert plan.uses == (*uses, failure_of(uses[0]))  # the try_ form and the long leaf cannot fail
    (group,) = plan.groups
    assert group.kind == "shredded" and group.leaves[failure_of(uses[0])] == "string"


# --- against Spark ---------------------------------------------------------------------------------------------


def test_curated_strings_every_target_and_form(spark: Any, tmp_path: Path) -> None:
    docs = _string_docs(CURATED)
    table = _docs_table(tmp_path / "t", docs, "s string, k bigint")
    ref = _reference(spark, docs)
    # the erroring forms on every row, per target (binary never fails; the integer and float widths fail alike)
    _every_form(spark, table, ref, ["date", "timestamp", "timestamp_ntz", "int", "tinyint", "double", "decimal(10,2)", "boolean"])
    _assert_leaf_read(spark, table, "SELECT v:s::date, try_cast(v:s AS int), variant_get(v, '$.s', 'decimal(10,2)') FROM {t}")


@settings(max_examples=4, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    texts=st.lists(TEXT, min_size=1, max_size=12),
    targets=st.lists(st.sampled_from(TARGETS), min_size=1, max_size=2, unique=True),
    tagged=st.booleans(),
)
@example(texts=["2024-01-02", "1.5", "true"], targets=["date", "int"], tagged=False)
@example(texts=["2024-01-02", "0000-02-29", "9999-12-31"], targets=["date", "timestamp"], tagged=True)  # proven: no failure column
def test_random_strings_match_spark(spark: Any, tmp_path: Path, texts: list[str], targets: list[str], tagged: bool) -> None:
    texts = [t for t in texts if "\x00" not in t]  # Spark's parse_json keeps NUL; varlake too, but the JSON text cannot
    docs = _string_docs(texts)
    table = _docs_table(tmp_path / f"t{next(_COUNTER)}", docs, "s string, k bigint", tagged)
    ref = _reference(spark, docs)
    _every_form(spark, table, ref, targets)


def test_ansi_off_and_session_time_zone(spark: Any, tmp_path: Path) -> None:
    docs = _string_docs(CURATED)
    table = _docs_table(tmp_path / "t", docs, "s string, k bigint")
    ref = _reference(spark, docs)
    with spark_conf(spark, {"spark.sql.ansi.enabled": "false"}):
        _every_form(spark, table, ref, ["int", "date"])
    with spark_conf(spark, {"spark.sql.session.timeZone": "America/Los_Angeles"}):
        _every_form(spark, table, ref, ["timestamp"])


def test_casts_in_filters_conditionals_and_aggregates(spark: Any, tmp_path: Path) -> None:
    docs = [{"k": "y", "d": f"2024-01-{i % 28 + 1:02d}", "n": str(i)} if i % 2 else {"k": "x", "d": "bad", "n": "x"} for i in range(40)]
    table = _docs_table(tmp_path / "t", docs, "k string, d string, n string")
    ref = _reference(spark, docs)
    for query in [
        "SELECT id, v:d::date FROM {t} WHERE v:k::string = 'y'",
        "SELECT id, CASE WHEN v:k::string = 'y' THEN v:d::date END FROM {t}",
        # read twice in one projection: Spark keeps the view's columns apart, yet nothing fails
        "SELECT id, IF(v:k::string = 'y', v:d::date, NULL), IF(v:k::string = 'y', v:d::date + 1, NULL) FROM {t}",
        "SELECT count(*), max(v:d::date), sum(v:n::int) FROM {t} WHERE v:k::string = 'y' AND v:d::date > DATE'2024-01-03'",
        "SELECT v:k::string, count(try_cast(v:d AS date)), sum(try_variant_get(v, '$.n', 'bigint')) FROM {t} GROUP BY 1",
        "SELECT id, v:d::date FROM {t}",
        "SELECT sum(v:n::int) FROM {t}",
    ]:
        _check(spark, table, ref, query)
        _assert_leaf_read(spark, table, query)


# --- inside rebuilt structs and arrays: the TPC-H nested shapes ---------------------------------------------------


ITEMS = "array<struct<l_shipdate: date, l_quantity: decimal(15,2), l_flag: string, l_n: int>>"


def _order(i: int, bad: str | None = None) -> dict[str, Any]:
    items = [
        {"l_shipdate": (datetime.date(1995, 1, 1) + datetime.timedelta(days=37 * i + j)).isoformat(),
         "l_quantity": Decimal(f"{(i * 7 + j) % 50}.{j}0"), "l_flag": "AR"[j % 2], "l_n": str(j)}
        for j in range(i % 4)
    ]
    if bad is not None and items:
        items[-1]["l_shipdate"] = bad
    return {"o_orderdate": (datetime.date(1994, 1, 1) + datetime.timedelta(days=11 * i)).isoformat(), "o_key": i, "lineitems": items}


ORDER_LAYOUT = "o_orderdate string, o_key bigint, lineitems array<struct<l_shipdate: string, l_quantity: decimal(15,2), l_flag: string, l_n: string>>"

TPCH_SHAPES = [
    # Q1: every line item, grouped
    f"""SELECT l.l_flag, sum(l.l_quantity) AS q, count(*) AS n
    FROM (SELECT variant_get(v, '$.lineitems', '{ITEMS}') AS lis FROM {{t}}) LATERAL VIEW explode(lis) x AS l
    WHERE l.l_shipdate <= date_sub(DATE'1998-12-01', 90) GROUP BY l.l_flag""",
    # Q3: an order date filter and the line items of the orders kept
    f"""SELECT o_key, sum(l.l_quantity) AS q, o_orderdate
    FROM (SELECT v:o_key::bigint AS o_key, v:o_orderdate::date AS o_orderdate, variant_get(v, '$.lineitems', '{ITEMS}') AS lis
          FROM {{t}} WHERE v:o_orderdate::date < DATE'1995-03-15') LATERAL VIEW explode(lis) x AS l
    WHERE l.l_shipdate > DATE'1995-03-15' GROUP BY o_key, o_orderdate""",
    # try_variant_get of the whole array: a bad element date is NULL, not an error
    f"SELECT v:o_key::bigint, try_variant_get(v, '$.lineitems', '{ITEMS}') FROM {{t}}",
    "SELECT v:o_key::bigint, variant_get(v, '$.lineitems', 'array<struct<l_shipdate: timestamp, l_n: tinyint>>') FROM {t}",
    "SELECT v:o_key::bigint, try_cast(v:lineitems AS ARRAY<STRUCT<l_n: BOOLEAN, l_shipdate: DATE>>) FROM {t}",
]


@pytest.mark.parametrize("bad", [None, "1995-02-30x"])
def test_tpch_nested_shapes_read_element_leaves(spark: Any, tmp_path: Path, bad: str | None) -> None:
    docs = [_order(i, bad if i == 9 else None) for i in range(30)]
    table = _docs_table(tmp_path / "t", docs, ORDER_LAYOUT)
    ref = _reference(spark, docs)
    outcomes = []
    for query in TPCH_SHAPES:
        outcomes.append(_check(spark, table, ref, query)[0])
        _assert_leaf_read(spark, table, query)
    if bad is None:
        assert outcomes == ["rows"] * len(TPCH_SHAPES)
    else:  # the bad date raises where a date is cast with variant_get, is NULL with try_
        assert outcomes == ["error", "error", "rows", "error", "rows"]


def test_leaves_of_iso_dates_need_no_failure_test_and_other_files_keep_theirs(spark: Any, tmp_path: Path) -> None:
    """The writer proves the date strings ISO dates (``varlake.layout.dates``): the casts of
    those files need no failure column. A file with a date in a spelling Spark reads but the
    writer does not prove, and one whose ISO-shaped ``1995-02-30`` is no day, keep theirs:
    the answers and errors stay Spark's."""
    good = [_order(i) for i in range(30)]
    loose, bad = [_order(30, "1995-1-3"), _order(34)], [_order(31, "1995-02-30")]
    table = appended_table(tmp_path / "t", [good])
    ref = _reference(spark, good)
    dates_only = [q.replace(", l_n: int>>", ">>") for q in TPCH_SHAPES[:3]] + [
        "SELECT v:o_key::bigint, v:o_orderdate::timestamp, CAST(v:o_orderdate AS TIMESTAMP_NTZ),"
        " variant_get(v, '$.lineitems', 'array<struct<l_shipdate: timestamp>>') FROM {t}"
    ]
    for query in dates_only:  # every cast that could fail is a date or timestamp cast of ISO dates
        assert _check(spark, table, ref, query)[0] == "rows"
        plan = vs.explain(spark, query, t=table, show=False).plans["t"]
        (group,) = plan.groups
        assert group.kind == "shredded" and not any(use.failure for use in plan.uses), query
    plan = vs.explain(spark, TPCH_SHAPES[1], t=table, show=False).plans["t"]  # l_n: int can fail: it keeps its test
    assert [use.segments for use in plan.uses if use.failure] == [("lineitems",)]
    assert "casts proven by ISO-date leaves: v:$['o_orderdate'] AS date" in str(vs.explain(spark, TPCH_SHAPES[1], t=table, show=False))

    table = appended_table(tmp_path / "t2", [good, loose])
    ref = _reference(spark, good + loose)
    for query in TPCH_SHAPES + dates_only:
        assert _check(spark, table, ref, query)[0] == "rows"
    plan = vs.explain(spark, dates_only[0], t=table, show=False).plans["t"]
    assert sorted(len(g.proven) for g in plan.groups) == [0, 1] and any(use.failure for use in plan.uses)

    table = appended_table(tmp_path / "t3", [good, bad, loose])
    ref = _reference(spark, good + bad + loose)
    for ansi in ("true", "false"):
        with spark_conf(spark, {"spark.sql.ansi.enabled": ansi}):
            outcomes = [_check(spark, table, ref, query)[0] for query in TPCH_SHAPES + dates_only]
        assert outcomes == ["error", "error", "rows", "error", "rows", "error", "error", "rows", "error"], ansi


# --- arrays rebuilt from element leaves: lambda-free failure tests, errors at the query's site -------------------

ARRAY_LAYOUT = "k bigint, a array<struct<d: string, n: string, s: string, q: decimal(10,2)>>, ds array<string>"
ARRAY_TARGETS = [
    "array<struct<d: date, n: int, s: string, q: decimal(12,2), z: date>>",  # z: in no object, NULL
    "array<struct<q: decimal(12,2), d: timestamp>>",
    "array<struct<n: bigint, s: string>>",
]
BAD_DATES = ["1995-02-30x", "", "1995-13-01", "nope", "1e3"]
GOOD_DATES = ["1995-01-02", " 1996-02-29 ", "1997-1-3", "2000-01-01T10:00:00"]


def _item(d: str | None, n: str | None, s: str | None, q: Decimal | None) -> dict[str, Any]:
    """A line item with the fields that are not None (the others missing in this object)."""
    return {k: x for k, x in (("d", d), ("n", n), ("s", s), ("q", q)) if x is not None}


def _array_checks(spark: Any, table: Table, ref: str) -> list[str]:
    """Every form over ``$.a`` and ``$.ds`` against Spark; each read from leaves."""
    queries = []
    for t in ARRAY_TARGETS:
        queries += [
            f"SELECT id, variant_get(v, '$.a', '{t}') FROM {{t}}",
            f"SELECT id, try_variant_get(v, '$.a', '{t}') FROM {{t}}",
            f"SELECT id, CAST(v:a AS {t}), v:a::{t} FROM {{t}}",
            f"SELECT id, try_cast(v:a AS {t}) FROM {{t}}",
        ]
    # field names match case-sensitively: D is in no object (NULL), d is not read
    queries.append("SELECT id, CAST(v:a AS ARRAY<STRUCT<D: DATE, n: INT>>) FROM {t}")
    queries += [
        "SELECT id, variant_get(v, '$.ds', 'array<date>'), try_variant_get(v, '$.ds', 'array<int>') FROM {t}",
        "SELECT id, try_cast(v:ds AS ARRAY<DATE>), CAST(v:ds AS ARRAY<STRING>) FROM {t}",
        f"""SELECT l.d, count(*), sum(l.q) FROM (SELECT variant_get(v, '$.a', '{ARRAY_TARGETS[0]}') AS lis FROM {{t}})
            LATERAL VIEW explode(lis) x AS l GROUP BY l.d""",
        f"""SELECT id, l.d FROM (SELECT id, try_variant_get(v, '$.a', '{ARRAY_TARGETS[0]}') AS lis FROM {{t}})
            LATERAL VIEW explode(lis) x AS l""",
    ]
    outcomes = []
    for query in queries:
        outcomes.append(_check(spark, table, ref, query)[0])
        _assert_leaf_read(spark, table, query)
    return outcomes


ISO_DATES = st.dates().map(lambda d: d.isoformat())
DATE_OR_JUNK = st.one_of(st.sampled_from(GOOD_DATES + BAD_DATES), DATE_TEXT, ISO_DATES)
ITEM_LISTS = st.lists(
    st.builds(
        _item,
        st.none() | DATE_OR_JUNK,
        st.none() | st.sampled_from(["1", "-7", " 12 ", "1.5", "x", "99999999999"]),
        st.none() | st.sampled_from(["A", "", "R"]),
        st.none() | st.decimals(min_value=-999, max_value=999, places=2),
    ),
    max_size=4,
)
ORDERS = st.lists(
    st.fixed_dictionaries(
        {"k": st.integers(0, 3)},
        optional={"a": ITEM_LISTS, "ds": st.lists(st.none() | DATE_OR_JUNK, max_size=3)},
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=2, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(orders=ORDERS, tagged=st.booleans())
@example(orders=[
    {"k": 1, "a": [_item("1995-01-02", "1", "A", Decimal("1.50")), _item(None, "2", None, None)], "ds": ["1995-01-02", None]},
    {"k": 2, "a": [], "ds": []},
    {"k": 3},
], tagged=False)
@example(orders=[  # ISO dates only, tagged: the date and timestamp targets need no failure column
    {"k": 1, "a": [_item("1995-01-02", "1", "A", Decimal("1.50")), _item(None, "x", None, None)], "ds": ["1996-02-29"]},
    {"k": 2, "a": [_item("2000-12-31", None, "R", None)], "ds": []},
    {"k": 3},
], tagged=True)
def test_arrays_of_objects_match_spark(spark: Any, tmp_path: Path, orders: list[dict[str, Any]], tagged: bool) -> None:
    orders = [{k: v for k, v in o.items() if k != "ds" or None not in v} for o in orders]  # a JSON null element is not shredded
    docs: list[Any] = [*orders, None]
    table = _docs_table(tmp_path / f"t{next(_COUNTER)}", docs, ARRAY_LAYOUT, tagged)
    _array_checks(spark, table, _reference(spark, docs))


def test_array_errors_surface_where_the_query_evaluates_them(spark: Any, tmp_path: Path) -> None:
    """A bad date in one element: the erroring forms fail (Spark's condition), the try_ form
    is NULL at that leaf only, a CASE that skips the row -- even reading the array twice
    in one projection, which once made the view itself fail -- gives rows."""
    good = [_item(d, str(i), "A", Decimal(i)) for i, d in enumerate(GOOD_DATES)]
    docs = [{"k": 1, "a": good}, {"k": 2, "a": [*good[:2], _item("1995-02-30x", "9", "R", Decimal("2.25"))]}, {"k": 1}, None]
    table = _docs_table(tmp_path / "t", docs, ARRAY_LAYOUT)
    ref = _reference(spark, docs)
    target = ARRAY_TARGETS[0]
    outcomes = _array_checks(spark, table, ref)
    assert outcomes[:4] == ["error", "rows", "error", "rows"]  # variant_get, try_variant_get, CAST and ::, try_cast
    for query in [
        f"SELECT id, CASE WHEN v:k::int = 1 THEN variant_get(v, '$.a', '{target}') END FROM {{t}}",
        f"""SELECT id, IF(v:k::int = 1, size(variant_get(v, '$.a', '{target}')), NULL),
                   IF(v:k::int = 1, variant_get(v, '$.a', '{target}')[0].d, NULL) FROM {{t}}""",
        f"""SELECT l.s, count(*) FROM (SELECT variant_get(v, '$.a', '{target}') AS lis FROM {{t}} WHERE v:k::int = 1)
            LATERAL VIEW explode(lis) x AS l GROUP BY l.s""",
    ]:
        assert _check(spark, table, ref, query)[0] == "rows"
        _assert_leaf_read(spark, table, query)
    rows = vs.sql(spark, f"SELECT try_variant_get(v, '$.a', '{target}') FROM {{t}} WHERE v:k::int = 2", t=table).collect()
    assert [(e.d, e.n, e.s) for e in rows[0][0]] == [
        (datetime.date(1995, 1, 2), 0, "A"), (datetime.date(1996, 2, 29), 1, "A"), (None, 9, "R")  # NULL only where the cast fails
    ]
    with spark_conf(spark, {"spark.sql.ansi.enabled": "false"}):
        assert _array_checks(spark, table, ref) == outcomes


def test_a_file_whose_path_is_not_an_array_reads_as_variant(spark: Any, tmp_path: Path) -> None:
    """The path holds a string in one row: that file is read whole, the other from leaves."""
    root = tmp_path / "t"
    table = Table.create(root, "id bigint, v variant")
    schema = StructType(tuple(table.schema.field(name) for name in ("id", "v")))
    parts = [
        [{"k": 1, "a": [_item("1995-01-02", "1", "A", Decimal("1.00"))]}, {"k": 2}],
        [{"k": 1, "a": "1995-01-02"}, {"k": 2, "a": [_item("bad", "1", "A", Decimal("1.00"))]}],
    ]
    adds = []
    for i, docs in enumerate(parts):
        data = to_arrow_table({"id": [10 * i + j for j in range(len(docs))], "v": [Variant.from_python(d) for d in docs]}, schema)
        write_parquet(data, root / f"part-{i}.parquet", shredding={"v": ARRAY_LAYOUT}, variant_columns=["v"])
        size = (root / f"part-{i}.parquet").stat().st_size
        adds.append(AddFile(f"part-{i}.parquet", size, {}, 0, True, table.file_stats_json(f"part-{i}.parquet")))
    table.commit_files(adds, "append")
    ref = _reference(spark, [d for docs in parts for d in docs])
    spark.sql(f"SELECT id + 8 * (id DIV 2) AS id, v FROM {ref}").createOrReplaceTempView(ref + "_ids")  # ids 0, 1, 10, 11
    query = f"SELECT id, try_variant_get(v, '$.a', '{ARRAY_TARGETS[0]}') FROM {{t}}"
    plan = vs.explain(spark, query, t=table, show=False).plans["t"]
    assert sorted(g.kind for g in plan.groups) == ["shredded", "variant"]
    _check(spark, table, ref + "_ids", query)
    assert _check(spark, table, ref + "_ids", query.replace("try_variant_get", "variant_get"))[0] == "error"


def test_array_fast_paths_evaluate_no_lambda_and_rebuild_once(spark: Any, tmp_path: Path) -> None:
    """The failure tests are lambda-free (``exists`` is gone), an array of primitives is read
    with no lambda at all, and the line items are rebuilt once: Spark's filter inferred
    below ``explode`` reads the view's column, not a second copy of the rebuild."""
    docs = [{**_order(i), "ds": [f"1995-01-0{j + 1}" for j in range(i % 3)]} for i in range(12)]
    table = _docs_table(tmp_path / "t", docs, ORDER_LAYOUT + ", ds array<string>")
    items = target_type(ITEMS)
    shape = target_type("array<struct<l_shipdate:string,l_quantity:decimal(15,2),l_flag:string,l_n:string>>")
    failure = failure_sql("g", items, shape)
    test = failure[: failure.index("to_variant_object")]
    assert "exists(" not in test and "->" not in test, failure
    dates = failure_sql("g", target_type("array<date>"), target_type("array<string>"))
    assert "->" not in dates[: dates.index("to_variant_object")], dates
    for query, rebuilt in [
        (TPCH_SHAPES[0], 1),
        ("SELECT variant_get(v, '$.lineitems', 'array<struct<l_n: int>>'), v:o_key::bigint FROM {t}", 1),
        # an array of primitives: no lambda but the failure Variant's
        ("SELECT v:o_key::bigint, variant_get(v, '$.ds', 'array<date>'), try_variant_get(v, '$.ds', 'array<int>') FROM {t}", 0),
    ]:
        _assert_leaf_read(spark, table, query)
        df = vs.sql(spark, query, t=table)
        df.collect()
        plan = df._jdf.queryExecution().executedPlan().toString().split("== Initial Plan ==")[0]  # the final plan
        assert "exists(" not in plan, plan
        # the rebuild, plus the failure Variant (built only where a cast fails)
        assert plan.count("transform(") == rebuilt + 1 == plan.count("to_variant_object(") + rebuilt, plan
        assert not [line for line in plan.splitlines() if "Filter" in line and "transform(" in line], plan
