"""Float/double data skipping stays sound under Spark's semantics (NaN above every number,
NaN = NaN, -0.0 = 0.0, infinities) whichever way a writer computed min/max: Spark's
ordering (a NaN makes the max NaN) or Parquet's (NaN left out)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from varlake.delta.stats import file_stats
from varlake.delta.schema import parse_schema
from varlake.expr import (
    ROWS_CANNOT_MATCH,
    ROWS_MIGHT_MATCH,
    And,
    Comparison,
    FileStats,
    In,
    IsNotNull,
    IsNull,
    Not,
    NotIn,
    Or,
    RowEvaluator,
    SkippingEvaluator,
    bind,
    col,
    lit,
    parse_predicate,
)
from varlake.semantics.numbers import java_double, java_float, to_float32

NAN, INF = math.nan, math.inf
SPECIAL = [NAN, INF, -INF, 0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.0, -1.0, 1.5, 2.0,
           1.7976931348623157e308, 1.401298464324817e-45, 3.4028234663852886e38, 0.1, 1.1]
OPS = ["=", "<>", "<", "<=", ">", ">=", "<=>"]


def _is_nan(x: object) -> bool:
    return isinstance(x, float) and x != x


def values(float32: bool) -> st.SearchStrategy[float | None]:
    number = st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=True, allow_infinity=True))
    if float32:
        number = number.map(to_float32)
    return st.one_of(st.none(), number)


def _spark_key(x: float) -> tuple[int, float]:
    return (1, 0.0) if _is_nan(x) else (0, x)


def min_max(column: list[float | None], mode: str, flip_zero: bool) -> tuple[float | None, float | None]:
    """Min and max as a writer computes them: ``spark`` orders NaN last, ``parquet`` leaves it out
    (no bounds when nothing is left). Which zero a writer reports is arbitrary: ``flip_zero``."""
    live = [x for x in column if x is not None]
    if mode == "parquet":
        live = [x for x in live if not _is_nan(x)]
    if not live:
        return None, None
    lo, hi = min(live, key=_spark_key), max(live, key=_spark_key)
    if flip_zero:
        lo, hi = (-lo if lo == 0 else lo), (-hi if hi == 0 else hi)
    return lo, hi


def stats_json(column: list[float | None], mode: str, flip_zero: bool, float32: bool) -> str:
    """Delta stats text as a writer produces it (Java number text, Jackson's "NaN"/"Infinity")."""
    text = java_float if float32 else java_double

    def number(x: float) -> str:
        if _is_nan(x):
            return '"NaN"'
        if math.isinf(x):
            return '"Infinity"' if x > 0 else '"-Infinity"'
        return text(x)

    lo, hi = min_max(column, mode, flip_zero)
    parts = [f'"numRecords": {len(column)}', f'"nullCount": {{"x": {sum(x is None for x in column)}}}']
    for key, bound in (("minValues", lo), ("maxValues", hi)):
        if bound is not None:
            parts.append(f'"{key}": {{"x": {number(bound)}}}')
    return "{" + ", ".join(parts) + "}"


def schema_of(float32: bool):
    kind = "float" if float32 else "double"
    return parse_schema(json.dumps({"type": "struct", "fields": [{"name": "x", "type": kind, "nullable": True, "metadata": {}}]}))


def leaf(draw: st.DrawFn, float32: bool):
    x = col("x")
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "in", "notin", "null", "notnull"]))
    literal = st.sampled_from(SPECIAL + [3.0, -2.5, 1e-300]).map(to_float32 if float32 else float)
    if kind == "cmp":
        return Comparison(draw(st.sampled_from(OPS)), x, lit(draw(literal), "double"))
    if kind in ("in", "notin"):
        items = tuple(lit(v, "double") for v in draw(st.lists(literal, min_size=1, max_size=3)))
        return In(x, items) if kind == "in" else NotIn(x, items)
    return IsNull(x) if kind == "null" else IsNotNull(x)


@st.composite
def predicates(draw: st.DrawFn, float32: bool):
    first = leaf(draw, float32)
    shape = draw(st.sampled_from(["leaf", "and", "or", "not"]))
    if shape == "leaf":
        return first
    if shape == "not":
        return Not(first)
    second = leaf(draw, float32)
    return And(first, second) if shape == "and" else Or(first, second)


@settings(max_examples=600, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.booleans(), st.sampled_from(["spark", "parquet"]), st.booleans())
def test_float_skipping_never_drops_a_matching_row(data, float32, mode, flip_zero):
    column = data.draw(st.lists(values(float32), min_size=1, max_size=6))
    predicate = bind(data.draw(predicates(float32)), {("x",): "float" if float32 else "double"})
    rows = [{"x": v} for v in column]
    kept = [row for row in rows if RowEvaluator(predicate).matches(row)]
    stats = file_stats(stats_json(column, mode, flip_zero, float32), schema_of(float32))
    if kept:
        assert SkippingEvaluator(predicate).might_match(stats) is ROWS_MIGHT_MATCH, (predicate, column, stats)


def _stats(lo, hi, n=3, nulls=0) -> FileStats:
    mins = {} if lo is None else {("x",): lo}
    maxs = {} if hi is None else {("x",): hi}
    return FileStats(num_records=n, min_values=mins, max_values=maxs, null_count={("x",): nulls})


def might(text: str, stats: FileStats, kind: str = "double") -> bool:
    return SkippingEvaluator(bind(parse_predicate(text), {("x",): kind})).might_match(stats)


@pytest.mark.parametrize("text", ["x > 10", "x >= 10", "x <> 5", "x NOT IN (5)", "x > CAST('Infinity' AS DOUBLE)"])
def test_predicates_a_nan_satisfies_keep_files_with_a_finite_max(text):
    # {5.0, NaN} in Parquet-derived stats: min = max = 5.0
    assert might(text, _stats(5.0, 5.0)) is ROWS_MIGHT_MATCH


@pytest.mark.parametrize("text", ["x < 5", "x <= 4", "x = 6", "x = 4", "x IN (1, 7)", "x BETWEEN 6 AND 8",
                                  "x < CAST('-Infinity' AS DOUBLE)"])
def test_predicates_a_nan_fails_skip_on_bounds(text):
    assert might(text, _stats(5.0, 5.0)) is ROWS_CANNOT_MATCH


def test_one_live_value_proves_no_nan():
    assert might("x > 10", _stats(5.0, 5.0, n=3, nulls=2)) is ROWS_CANNOT_MATCH
    assert might("x <> 5", _stats(5.0, 5.0, n=1)) is ROWS_CANNOT_MATCH
    assert might("x NOT IN (5, 6)", _stats(5.0, 5.0, n=1)) is ROWS_CANNOT_MATCH
    assert might("x > 10", _stats(NAN, NAN, n=1)) is ROWS_MIGHT_MATCH  # the one value is NaN


def test_nan_bounds_give_no_bound_but_min_still_helps():
    assert might("x < 0", _stats(1.0, NAN)) is ROWS_CANNOT_MATCH  # Spark ordering: NaN max, min 1.0
    assert might("x = 0.5", _stats(1.0, NAN)) is ROWS_CANNOT_MATCH
    assert might("x > 100", _stats(1.0, NAN)) is ROWS_MIGHT_MATCH
    assert might("x = CAST('NaN' AS DOUBLE)", _stats(1.0, 2.0)) is ROWS_MIGHT_MATCH


def test_zero_signs_are_equal():
    assert might("x < 0", _stats(-0.0, 1.0)) is ROWS_CANNOT_MATCH
    assert might("x <= 0", _stats(0.0, 1.0)) is ROWS_MIGHT_MATCH
    assert might("x = CAST('-0.0' AS DOUBLE)", _stats(0.0, 0.0)) is ROWS_MIGHT_MATCH
    assert might("x > 0", _stats(-0.0, -0.0, n=1)) is ROWS_CANNOT_MATCH


def test_decimal_literals_compare_as_doubles():
    # Spark compares a double column with 1.1 as the double nearest 1.1
    assert RowEvaluator(bind(parse_predicate("x = 1.1"), {("x",): "double"})).matches({"x": 1.1})
    assert might("x < 1.1", _stats(1.1, 2.0)) is ROWS_CANNOT_MATCH
    assert might("x <= 1.1", _stats(1.1, 2.0)) is ROWS_MIGHT_MATCH
    # a float column: 1.1f is above the double 1.1, so x > 1.1 holds for it
    assert RowEvaluator(bind(parse_predicate("x > 1.1"), {("x",): "float"})).matches({"x": to_float32(1.1)})
    # ANSI: a float compared with an integer is compared as a double (no rounding to float)
    assert not RowEvaluator(bind(parse_predicate("x = 16777217"), {("x",): "float"})).matches({"x": 16777216.0})


def test_float_stats_text_is_read_at_the_columns_precision():
    text = '{"numRecords": 2, "nullCount": {"x": 0}, "minValues": {"x": 1.1}, "maxValues": {"x": 1.1}}'
    assert file_stats(text, schema_of(True)).max_values[("x",)] == to_float32(1.1)
    double = file_stats(text, schema_of(False))
    assert double.min_values[("x",)] == 1.1 and double.max_values[("x",)] == to_float32(1.1)  # widened column
    nan = '{"numRecords": 2, "minValues": {"x": "-Infinity"}, "maxValues": {"x": "NaN"}}'
    parsed = file_stats(nan, schema_of(False))
    assert parsed.min_values[("x",)] == -INF and math.isnan(parsed.max_values[("x",)])


# --- Spark cross-check ---------------------------------------------------------------------------

CASES = [
    [1.0, NAN, 5.0], [NAN, NAN], [None, -0.0, 0.0], [INF, -INF, NAN], [5e-324, None], [2.0], [NAN],
]
SQL = ["x > 4", "x >= 5", "x < 1", "x <= 0", "x = 0", "x <> 5", "x = CAST('NaN' AS DOUBLE)", "x IN (1, 2)",
       "x NOT IN (1, 5)", "x > CAST('Infinity' AS DOUBLE)", "x < CAST('-Infinity' AS DOUBLE)", "x IS NOT NULL",
       "x BETWEEN -1 AND 1", "NOT (x < 3)"]


@pytest.mark.spark
@pytest.mark.parametrize("float32", [False, True])
def test_float_skipping_against_spark(spark, float32):
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType, IntegerType, StructField, StructType

    kind = "float" if float32 else "double"
    columns = [[None if v is None else (to_float32(v) if float32 else v) for v in case] for case in CASES]
    schema = StructType([StructField("case", IntegerType()), StructField("x", FloatType() if float32 else DoubleType())])
    df = spark.createDataFrame([(i, v) for i, column in enumerate(columns) for v in column], schema)
    counts = [F.sum(F.when(F.expr(text), 1).otherwise(0)) for text in SQL]
    result = {r[0]: r[1:] for r in df.groupBy("case").agg(F.min("x"), F.max("x"), F.count("x"), F.count(F.lit(1)), *counts).collect()}
    for i, column in enumerate(columns):
        low, high, live, total, *expected = result[i]
        spark_stats = FileStats(num_records=total, null_count={("x",): total - live},
                                min_values={} if low is None else {("x",): float(low)},
                                max_values={} if high is None else {("x",): float(high)})
        lo, hi = min_max(column, "parquet", False)
        parquet_stats = _stats(lo, hi, n=len(column), nulls=column.count(None))
        for text, count in zip(SQL, expected):
            predicate = bind(parse_predicate(text), {("x",): kind})
            assert sum(RowEvaluator(predicate).matches({"x": v}) for v in column) == count, (text, column)
            if count:
                skip = SkippingEvaluator(predicate)
                assert skip.might_match(spark_stats) and skip.might_match(parquet_stats), (text, column)


def test_kernel_scan_suite_single_row_files_skip():
    # kernel ScanSuite 'data skipping - validate stats written by kernel can be read and used':
    # one row per file, nested.normalDouble > 50.0 keeps the files holding 1500.0 and 200.0
    schema = parse_schema(json.dumps({"type": "struct", "fields": [{"name": "nested", "nullable": True, "metadata": {}, "type": {
        "type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}}
                                     for n, t in (("floatCol", "float"), ("normalDouble", "double"), ("weirdDouble", "double"))]}}]}))
    rows = [("NaN", 1500.0, "Infinity"), (1.23, 10.0, -42.99), ("-Infinity", 200.0, "NaN")]

    def stats(f, n, w):
        value = {"floatCol": f, "normalDouble": n, "weirdDouble": w}
        nulls = {"floatCol": 0, "normalDouble": 0, "weirdDouble": 0}
        return json.dumps({"numRecords": 1, "minValues": {"nested": value}, "maxValues": {"nested": value},
                           "nullCount": {"nested": nulls}})

    types = {("nested",): "struct", ("nested", "floatCol"): "float", ("nested", "normalDouble"): "double",
             ("nested", "weirdDouble"): "double"}
    skip = SkippingEvaluator(bind(parse_predicate("nested.normalDouble > 50.0"), types))
    assert [skip.might_match(file_stats(stats(*r), schema)) for r in rows] == [True, False, True]
    weird = SkippingEvaluator(bind(parse_predicate("nested.weirdDouble > 0"), types))
    assert [weird.might_match(file_stats(stats(*r), schema)) for r in rows] == [True, False, True]
