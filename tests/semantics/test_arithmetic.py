"""Spark's ANSI arithmetic: DECIMAL result types and values, integer overflow, division and
remainder by zero, LIKE patterns, substring, checked against Spark."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from varlake.errors import ExpressionEvaluationError
from varlake.semantics.arithmetic import (
    decimal_op,
    decimal_result_type,
    floating_op,
    integral_negate,
    integral_op,
    like_regex,
    substring_sql,
    trim_spaces,
)

LONG = (-(2**63), 2**63 - 1)


def test_decimal_result_types():
    assert decimal_result_type("+", 2, 1, 1, 0) == (3, 1)
    assert decimal_result_type("*", 2, 1, 3, 2) == (6, 3)
    assert decimal_result_type("/", 2, 1, 1, 0) == (7, 6)
    assert decimal_result_type("/", 10, 2, 5, 1) == (17, 8)
    assert decimal_result_type("%", 1, 0, 2, 1) == (2, 1)
    assert decimal_result_type("*", 38, 10, 38, 10) == (38, 6)


def test_ansi_errors():
    with pytest.raises(ExpressionEvaluationError, match="ARITHMETIC_OVERFLOW"):
        integral_op("+", 2**63 - 1, 1, *LONG)
    with pytest.raises(ExpressionEvaluationError, match="ARITHMETIC_OVERFLOW"):
        integral_negate(-128, -128, 127)
    with pytest.raises(ExpressionEvaluationError, match="REMAINDER_BY_ZERO"):
        integral_op("%", 5, 0, *LONG)
    with pytest.raises(ExpressionEvaluationError, match="DIVIDE_BY_ZERO"):
        floating_op("/", 1.0, -0.0)
    with pytest.raises(ExpressionEvaluationError, match="NUMERIC_VALUE_OUT_OF_RANGE"):
        decimal_op("*", Decimal("99.9"), Decimal("99.9"), 4, 1)
    assert integral_op("%", -5, 3, *LONG) == -2
    assert floating_op("%", -5.5, 3.0) == -2.5


def test_like_and_strings():
    assert like_regex("a\\_c").fullmatch("a_c") and not like_regex("a\\_c").fullmatch("abc")
    assert like_regex("a%").fullmatch("a\nb")
    assert like_regex("a!%", "!").fullmatch("a%")
    with pytest.raises(ExpressionEvaluationError):
        like_regex("a\\x")
    assert substring_sql("hello", -3, 2) == "ll" and substring_sql("hello", 0) == "hello"
    assert substring_sql("hello", 2, -1) == "" and substring_sql("hello", -10, 7) == "he"
    assert trim_spaces("  a\t ") == "a\t"


@pytest.mark.spark
def test_decimal_arithmetic_matches_spark(spark):
    rng = random.Random(7)
    types = [(10, 2), (5, 1), (38, 18), (18, 0), (20, 10), (3, 3)]
    cases = []
    for _ in range(60):
        (p1, s1), (p2, s2) = rng.choice(types), rng.choice(types)
        a = Decimal(rng.randrange(-(10 ** min(p1, 12)) + 1, 10 ** min(p1, 12))).scaleb(-s1)
        b = Decimal(rng.randrange(-(10 ** min(p2, 12)) + 1, 10 ** min(p2, 12))).scaleb(-s2)
        cases.append((p1, s1, a, p2, s2, b, rng.choice("+-*/%")))
    exprs = [f"CAST('{a}' AS DECIMAL({p1},{s1})) {op} CAST('{b}' AS DECIMAL({p2},{s2}))"
             for p1, s1, a, p2, s2, b, op in cases if not (op in "/%" and b == 0)]
    kept = [c for c in cases if not (c[6] in "/%" and c[5] == 0)]
    row = spark.sql("SELECT " + ", ".join(f"typeof({e}) AS t{i}" for i, e in enumerate(exprs))).collect()[0]
    for i, (p1, s1, a, p2, s2, b, op) in enumerate(kept):
        p, s = decimal_result_type(op, p1, s1, p2, s2)
        assert row[f"t{i}"] == f"decimal({p},{s})", exprs[i]
    # values: one query over the cases whose result fits (an overflow would fail it)
    fitting = []
    for i, (p1, s1, a, p2, s2, b, op) in enumerate(kept):
        p, s = decimal_result_type(op, p1, s1, p2, s2)
        try:
            fitting.append((exprs[i], decimal_op(op, a, b, p, s)))
        except ExpressionEvaluationError:
            continue
    got = spark.sql("SELECT " + ", ".join(f"{e} AS v{i}" for i, (e, _) in enumerate(fitting))).collect()[0]
    bad = [(e, got[f"v{i}"], mine) for i, (e, mine) in enumerate(fitting) if got[f"v{i}"] != mine]
    assert not bad, bad[:5]
