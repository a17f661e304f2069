"""CHECK constraints with arithmetic and scalar functions are evaluated on pyarrow writes
with Spark's results: random rows, each constraint, Spark's verdict (a NULL result is a
violation) against varlake's, and Spark's ANSI errors where varlake raises."""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal

import pyarrow as pa
import pytest

from varlake.errors import ConstraintViolationError, ExpressionEvaluationError
from varlake.expr import RowEvaluator, bind, parse_predicate
from varlake.semantics.numbers import to_float32
from varlake.table import Table

from constraint_tables import add_constraints

UTC = dt.timezone.utc
DDL = "id int, a int, b bigint, t tinyint, d decimal(10,2), f double, g float, s string, dt date, ts timestamp"
TYPES = {("id",): "integer", ("a",): "integer", ("b",): "long", ("t",): "byte", ("d",): "decimal(10,2)",
         ("f",): "double", ("g",): "float", ("s",): "string", ("dt",): "date", ("ts",): "timestamp"}
POOLS = {
    "a": [None, 0, 1, -1, 7, -7, 2147483647, -2147483648, 100, 3],
    "b": [None, 0, 3, -3, 9223372036854775807, -9223372036854775808, 10**12, 1],
    "t": [None, 0, 1, -128, 127, 100, -100, 5],
    "d": [None, Decimal("0.00"), Decimal("1.50"), Decimal("-2.25"), Decimal("99999999.99"), Decimal("-0.01"), Decimal("3.00")],
    "f": [None, 0.0, -0.0, 1.5, -2.5, math.nan, math.inf, -math.inf, 1e308, 3.0, 0.1],
    "g": [None, 0.0, to_float32(1.1), -3.5, math.nan, math.inf, 2.0],
    "s": [None, "", "abc", "ABC", "a_c", "a%c", " x ", "ümlaut", "Ünïcode", "a\\c", "xyz", "İ", "aXc"],
    "dt": [None, dt.date(2000, 1, 1), dt.date(1999, 12, 31), dt.date(2024, 2, 29), dt.date(1, 1, 1)],
    "ts": [None, dt.datetime(2000, 1, 1, tzinfo=UTC), dt.datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC),
           dt.datetime(2024, 2, 29, 12, tzinfo=UTC)],
}
CONSTRAINTS = [
    "a + b > 0", "a - t < 100", "a * 2 >= b", "b / a > 0.5", "a % 3 = 1", "d * 2 < 100", "d + a >= 0",
    "d / 3 > 0.33", "d % 0.5 = 0", "f + 1 > g", "f / 2 <= 10", "f % 2 = 1", "g * g > 1", "-a < 5", "abs(t) < 100",
    "abs(d) > 1", "length(s) BETWEEN 1 AND 3", "lower(s) = 'abc'", "upper(s) IN ('ABC', 'XYZ', 'İ')",
    "coalesce(a, b, 0) >= 0", "coalesce(d, 1.5) > 1", "a IN (1, -1, b)", "s LIKE 'a%'", "s LIKE 'a\\\\_c'",
    "s NOT LIKE '%c'", "s LIKE 'a!%c' ESCAPE '!'", "s ILIKE 'a%'",
    "CASE WHEN a > 0 THEN b > 0 WHEN a < 0 THEN b < 0 ELSE s IS NOT NULL END",
    "CASE a WHEN 1 THEN 'one' WHEN -1 THEN 'minus' ELSE s END <> 'abc'", "trim(s) = s",
    "substring(s, 2, 2) <> 'bc'", "substring(s, -2) = 'bc'", "concat(s, a) <> 'abc1'", "year(dt) >= 2000",
    "month(dt) = 2 OR day(dt) = 31", "nullif(a, 0) > 0", "if(a > 0, a, -a) < 10", "(a > 0) = (b > 0)",
    "startswith(s, 'a') OR endswith(s, 'z') OR contains(s, 'ml')", "t + t > 0", "b + 1 > b", "d * d * d * d > 1",
    "year(ts) > 2000", "a / b * 2 > 1", "length(s) + a > 2", "t * 2 / 3 > 1", "b - a * 3 % 2 <> 1",
]

ERROR_CHECKS = ["b / a > 0.5", "t + t > 0", "abs(t) < 100", "b - a * 3 % 2 <> 1"]


def _rows(n: int = 48) -> list[dict]:
    rng = random.Random(12)
    return [{"id": i, **{name: rng.choice(pool) for name, pool in POOLS.items()}} for i in range(n)]


def _varlake(text: str, row: dict) -> bool | str:
    """varlake's verdict on one row: kept (TRUE), not, or the error class it raises."""
    try:
        return RowEvaluator(bind(parse_predicate(text), TYPES)).matches(row)
    except ExpressionEvaluationError as exc:
        return str(exc).split("]")[0].lstrip("[")


@pytest.mark.spark
def test_constraint_verdicts_match_spark(spark):
    rows = _rows()
    df = spark.createDataFrame([tuple(r[c] for c in ["id", *POOLS]) for r in rows], DDL)
    df.createOrReplaceTempView("constraint_rows")
    ours = {text: [_varlake(text, row) for row in rows] for text in CONSTRAINTS}
    columns = []
    for k, text in enumerate(CONSTRAINTS):
        raising = [rows[i]["id"] for i, v in enumerate(ours[text]) if isinstance(v, str)]
        guard = f"id IN ({', '.join(map(str, raising))})" if raising else "FALSE"
        columns.append(f"CASE WHEN {guard} THEN NULL ELSE coalesce({text}, FALSE) END AS c{k}")
    got = {r["id"]: r for r in spark.sql(f"SELECT id, {', '.join(columns)} FROM constraint_rows").collect()}
    mismatches = []
    for k, text in enumerate(CONSTRAINTS):
        for i, row in enumerate(rows):
            mine = ours[text][i]
            if not isinstance(mine, str) and got[row["id"]][f"c{k}"] != mine:
                mismatches.append((text, {c: v for c, v in row.items() if c in text or c == "id"}, mine))
    assert not mismatches, mismatches[:10]
    # an error varlake raises, Spark raises too (one row each of a few constraints: Spark jobs are slow)
    for text in ERROR_CHECKS:
        row_id, error = next((rows[i]["id"], v) for i, v in enumerate(ours[text]) if isinstance(v, str))
        with pytest.raises(Exception, match=error):
            spark.sql(f"SELECT coalesce({text}, FALSE) FROM constraint_rows WHERE id = {row_id}").collect()


def test_pyarrow_writes_check_function_constraints(tmp_path):
    root = str(tmp_path / "t")
    t = Table.create(root, "a int, s string, d decimal(10,2)")
    add_constraints(root, constraints={"sum": "a + 1 > 0", "name": "length(trim(s)) BETWEEN 1 AND 5",
                                       "kind": "CASE WHEN s LIKE 'x%' THEN d * 2 < 10 ELSE coalesce(d, 0) >= 0 END"})
    t = Table(root)
    t.append(pa.table({"a": pa.array([0, 5], pa.int32()), "s": ["ab", "xy"], "d": pa.array([Decimal("1.00"), Decimal("4.99")], pa.decimal128(10, 2))}))
    with pytest.raises(ConstraintViolationError, match=r"CHECK constraint sum a \+ 1 > 0 violated by row with values:\n - a : -1"):
        t.append(pa.table({"a": pa.array([-1], pa.int32()), "s": ["ab"], "d": pa.array([Decimal("1.00")], pa.decimal128(10, 2))}))
    with pytest.raises(ConstraintViolationError, match=r"CHECK constraint kind CASE .* END violated by row with values:\n - d : 5.00\n - s : xz"):
        t.append(pa.table({"a": pa.array([1], pa.int32()), "s": ["xz"], "d": pa.array([Decimal("5.00")], pa.decimal128(10, 2))}))
    with pytest.raises(ConstraintViolationError, match="name"):
        t.append(pa.table({"a": pa.array([1], pa.int32()), "s": ["   "], "d": pa.array([None], pa.decimal128(10, 2))}))
    with pytest.raises(ExpressionEvaluationError, match="ARITHMETIC_OVERFLOW"):
        t.append(pa.table({"a": pa.array([2147483647], pa.int32()), "s": ["ab"], "d": pa.array([None], pa.decimal128(10, 2))}))
    assert sorted(Table(root).scan().to_arrow().column("a").to_pylist()) == [0, 5]
