"""Scalar functions and operators in predicates: parsing, Spark's result types, row results,
and how skipping and the raising analysis treat them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from varlake.errors import ExpressionEvaluationError, ExpressionTypeError
from varlake.expr import (
    ROWS_CANNOT_MATCH,
    ROWS_MIGHT_MATCH,
    Call,
    FileStats,
    RowEvaluator,
    SkippingEvaluator,
    bind,
    parse_predicate,
    parse_term,
    term_type,
)
from varlake.expr.raising import cast_proofs, possibly_raising_terms

SCHEMA = {("a",): "integer", ("b",): "long", ("t",): "byte", ("d",): "decimal(10,2)", ("f",): "double",
          ("g",): "float", ("s",): "string", ("dt",): "date", ("p",): "integer"}


def bound(text: str):
    return bind(parse_predicate(text), SCHEMA)


def value_type(text: str) -> str:
    pred = bound(f"({text}) IS NULL")
    return term_type(pred.term)


@pytest.mark.parametrize(
    ("text", "dtype"),
    [
        ("t + t", "byte"), ("a + b", "long"), ("a / a", "double"), ("g + g", "float"), ("g + a", "double"),
        ("d + 1", "decimal(11,2)"), ("d * d", "decimal(21,4)"), ("d / 3", "decimal(14,6)"), ("b + 1.5", "decimal(22,1)"),
        ("a % 2", "integer"), ("d % 0.5", "decimal(2,2)"), ("-t", "byte"), ("abs(d)", "decimal(10,2)"),
        ("length(s)", "integer"), ("upper(s)", "string"), ("coalesce(a, 2.5)", "decimal(11,1)"),
        ("coalesce(a, b)", "long"), ("CASE WHEN a > 0 THEN 1 ELSE 2.5D END", "double"), ("year(dt)", "integer"),
        ("concat(s, a)", "string"), ("substring(s, 1, 2)", "string"),
    ],
)
def test_result_types_are_sparks(text, dtype):
    assert value_type(text) == dtype


def test_row_results():
    row = {"a": 7, "b": -3, "t": 5, "d": Decimal("1.50"), "f": 2.0, "g": 1.5, "s": "Hello", "dt": dt.date(2024, 2, 29)}
    for text in ["a + b = 4", "a / 2 = 3.5", "a % 3 = 1", "b % 2 = -1", "d * 2 = 3.00", "d / 4 = 0.375",
                 "length(s) = 5", "lower(s) = 'hello'", "s LIKE 'H%o'", "s NOT LIKE 'h%'", "s ILIKE 'h%'",
                 "CASE WHEN a > 5 THEN 'big' ELSE 'small' END = 'big'", "coalesce(NULL, a) = 7",
                 "a IN (1, b, 7)", "a BETWEEN b AND 10", "month(dt) = 2", "abs(b) = 3", "-a = -7",
                 "substring(s, -3) = 'llo'", "trim(concat(' ', s, ' ')) = s", "(a > 0) = (b > 0) IS FALSE"]:
        assert RowEvaluator(bound(text)).matches(row), text


def test_null_and_laziness():
    row = {"a": 0, "b": None, "s": None}
    assert RowEvaluator(bound("a + b > 0")).evaluate(row) is None
    assert RowEvaluator(bound("CASE WHEN a = 0 THEN TRUE ELSE 1 / a > 0 END")).matches(row)  # branch not taken
    assert RowEvaluator(bound("coalesce(a, 1 / a) = 0")).matches(row)
    assert RowEvaluator(bound("b + 1 / a > 0")).evaluate(row) is None  # NULL first: the rest is not evaluated
    with pytest.raises(ExpressionEvaluationError, match="DIVIDE_BY_ZERO"):
        RowEvaluator(bound("1 / a > 0")).evaluate(row)


def test_type_errors_are_named():
    with pytest.raises(ExpressionTypeError):
        bound("s + 1 > 0")
    with pytest.raises(ExpressionTypeError):
        bound("CASE WHEN a > 0 THEN dt ELSE 1 END IS NULL")


def test_skipping_treats_calls_as_unknown_but_sound():
    stats = FileStats(num_records=5, min_values={("a",): 0, ("p",): 1}, max_values={("a",): 3, ("p",): 1},
                      null_count={("a",): 0}, partition_values={"p": "1"})
    assert SkippingEvaluator(bound("a + 100 > 200")).might_match(stats) is ROWS_MIGHT_MATCH
    assert SkippingEvaluator(bound("a + 100 > 200 AND a > 10")).might_match(stats) is ROWS_CANNOT_MATCH
    partitioned = SkippingEvaluator(bound("p * 2 = 4"), {"p": "integer"})
    assert partitioned.might_match(stats) is ROWS_CANNOT_MATCH  # partition values are evaluated exactly
    assert SkippingEvaluator(bound("p / 0 > 1"), {"p": "integer"}).might_match(stats) is ROWS_MIGHT_MATCH


def test_calls_that_can_raise_are_never_proven_safe():
    terms = possibly_raising_terms(bound("a / b > 1 AND lower(s) = 'x' AND f + 1 > 0 AND t + 1 > 0"))
    assert {str(t) for t in terms} == {"(a / b)", "(t + 1)"}
    stats = FileStats(num_records=1)
    assert all(not proof(stats) for _, proof in cast_proofs(bound("a / b > 1")))


def test_parse_term_and_text():
    term = parse_term("abs(a - 1)")
    assert isinstance(term, Call) and term.name == "abs"
    assert str(bound("s LIKE 'a!%' ESCAPE '!'")) == "((s LIKE 'a!%' ESCAPE '!') = TRUE)"


def test_variant_get_of_numbers_as_double_is_proven_safe():
    """Decimal, integer or float bounds of a path prove ``v:p::double`` cannot raise (delta-spark
    shreds JSON fractions as decimals, read as doubles); a string bound proves nothing."""
    from varlake.expr.stats import VariantBound
    from varlake.expr.types import TypeFamily

    [(_, proof)] = cast_proofs(bind(parse_predicate("v:c.d::double < 2.0"), {("v",): "variant"}))
    key = (("v",), "$['c']['d']")

    def stats(low, high):
        return FileStats(num_records=3, variant_min={key: low}, variant_max={key: high})

    exact = VariantBound(Decimal("15.25"), TypeFamily.EXACT_NUMERIC)
    assert proof(stats(exact, VariantBound(17.5, TypeFamily.DOUBLE)))
    assert proof(stats(VariantBound(3, TypeFamily.EXACT_NUMERIC), exact))
    assert not proof(stats(VariantBound("1", TypeFamily.STRING), VariantBound("9", TypeFamily.STRING)))
    assert not proof(FileStats(num_records=3, variant_min={key: exact}))
