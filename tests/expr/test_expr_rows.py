"""Row evaluator: exact SQL three-valued results, Spark NaN order, injected variant_get."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from varlake.errors import ExpressionError, ExpressionEvaluationError
from varlake.expr import RowEvaluator, bind, normalize, parse_predicate

SCHEMA = {("a",): "long", ("b",): "long", ("f",): "double", ("s",): "string", ("st",): "struct",
          ("st", "x"): "long", ("v",): "variant", ("flag",): "boolean"}


def lookup(value, path, target):
    """Stand-in variant_get over dicts: top-level keys only; raises when a value does not cast."""
    key = path[3:-2]
    got = value.get(key) if isinstance(value, dict) else None
    if got is None:
        return None
    if target == "long":
        if isinstance(got, bool) or not isinstance(got, int):
            raise ValueError(f"{got!r} is not a long")
        return got
    if target == "string":
        return got if isinstance(got, str) else str(got)
    raise ValueError(target)


def ev(text, row):
    return RowEvaluator(bind(parse_predicate(text), SCHEMA), variant_get=lookup).evaluate(row)


@pytest.mark.parametrize(
    ("text", "row", "expected"),
    [
        ("a > 1", {"a": 2}, True),
        ("a > 1", {"a": None}, None),
        ("NOT (a > 1)", {"a": None}, None),
        ("a > 1 AND b > 1", {"a": None, "b": 0}, False),
        ("a > 1 AND b > 1", {"a": None, "b": 5}, None),
        ("a > 1 OR b > 1", {"a": None, "b": 5}, True),
        ("a > 1 OR b > 1", {"a": None, "b": 0}, None),
        ("a IN (1, NULL)", {"a": 1}, True),
        ("a IN (1, NULL)", {"a": 2}, None),
        ("a NOT IN (1, NULL)", {"a": 2}, None),
        ("a NOT IN (1, 3)", {"a": 2}, True),
        ("a NOT IN (1, 3)", {"a": None}, None),
        ("a <=> NULL", {"a": None}, True),
        ("a <=> 1", {"a": None}, False),
        ("NOT (a <=> 1)", {"a": None}, True),
        ("a IS DISTINCT FROM b", {"a": None, "b": None}, False),
        ("a = NULL", {"a": 1}, None),
        ("a IS NULL", {}, True),
        ("st.x IS NULL", {"st": None}, True),
        ("st.x = 3", {"st": {"x": 3}}, True),
        ("a BETWEEN 1 AND 3", {"a": 3}, True),
        ("f = CAST('NaN' AS double)", {"f": math.nan}, True),
        ("f > 1e308", {"f": math.nan}, True),
        ("f < CAST('NaN' AS double)", {"f": math.inf}, True),
        ("f IN (CAST('NaN' AS double))", {"f": math.nan}, True),
        ("flag", {"flag": True}, True),
        ("NOT flag", {"flag": None}, None),
        ("s = 5", {"s": "5"}, True),
        ("v:a::bigint > 5", {"v": {"a": 7}}, True),
        ("v:a::bigint > 5", {"v": {}}, None),
        ("v:a::bigint > 5", {"v": None}, None),
        ("try_variant_get(v, '$.a', 'bigint') > 5", {"v": {"a": "seven"}}, None),
        ("v:a::string = '7'", {"v": {"a": 7}}, True),
        ("TRY_CAST(s AS bigint) = 5", {"s": "five"}, None),
    ],
)
def test_three_valued_results(text, row, expected):
    assert ev(text, row) is expected
    # the NOT-free normal form keeps exactly the same rows
    pred = bind(parse_predicate(text), SCHEMA)
    assert RowEvaluator(normalize(pred), variant_get=lookup).matches(row) == (expected is True)


def test_failing_ansi_casts_raise_with_the_expression_named():
    with pytest.raises(ExpressionEvaluationError, match="variant_get"):
        ev("v:a::bigint > 5", {"v": {"a": "seven"}})
    with pytest.raises(ExpressionEvaluationError, match="five"):
        ev("s = 5", {"s": "five"})


def test_variant_paths_need_an_injected_variant_get():
    with pytest.raises(ExpressionError, match="variant_get"):
        RowEvaluator(bind(parse_predicate("v:a::bigint > 5"), SCHEMA))


def test_evaluate_pyarrow_table():
    table = pa.table({"a": [1, 5, None], "st": [{"x": 1}, None, {"x": 9}]})
    evaluator = RowEvaluator(bind(parse_predicate("a > 2 OR st.x > 2"), SCHEMA))
    assert evaluator.evaluate_table(table) == [False, True, True]
    assert [evaluator.matches(r) for r in table.to_pylist()] == [False, True, True]


def test_codec_variant_get_plugs_in():
    """The codec's Spark variant_get takes (value, normalized path, type) as the evaluator calls it."""
    from varlake.variant.functions import to_variant_object, variant_get

    row = {"v": to_variant_object({"a": {"x y": [7, "8"]}, "b": "text"})}
    evaluate = lambda text: RowEvaluator(bind(parse_predicate(text), SCHEMA), variant_get=variant_get).evaluate(row)  # noqa: E731
    assert evaluate("v:a['x y'][0]::bigint = 7") is True
    assert evaluate("v:a['x y'][1]::bigint = 8") is True  # Spark casts the string "8"
    assert evaluate("v:b::string = 'text'") is True
    assert evaluate("try_variant_get(v, '$.b', 'bigint') IS NULL") is True
    with pytest.raises(ExpressionEvaluationError):
        evaluate("v:b::bigint = 1")


@pytest.mark.parametrize("text", [
    "try_cast(s AS DATE) < DATE'2021-06-01'",
    "try_cast(s AS TIMESTAMP) < TIMESTAMP'2021-06-01 00:00:00'",
    "try_variant_get(v, '$.d', 'date') < DATE'2021-06-01'",
    "variant_get(v, '$.d', 'date') < DATE'2021-06-01'",
])
def test_a_date_spark_reads_but_python_cannot_hold_raises_even_under_try(text):
    """Spark casts '0000-02-29' to a DATE of year 0, which Python's ``date`` cannot hold: the
    row evaluator names that, where a try form's NULL would drop the row Spark keeps."""
    from varlake.expr.rows import row_variant_get
    from varlake.variant import Variant
    from varlake.variant.cast import OutOfPythonRange

    row = {"s": "0000-02-29", "v": Variant.from_python({"d": "0000-02-29"})}
    evaluator = RowEvaluator(bind(parse_predicate(text), SCHEMA), variant_get=row_variant_get)
    with pytest.raises(OutOfPythonRange, match=r"0000-02-29( 00:00:00)? is outside the years 1-9999"):
        evaluator.evaluate(row)
    # a text Spark cannot cast stays NULL under try and an error without it
    bad = {"s": "0000-02-30", "v": Variant.from_python({"d": "0000-02-30"})}
    if text.startswith("try"):
        assert evaluator.evaluate(bad) is None
    else:
        with pytest.raises(ExpressionEvaluationError):
            evaluator.evaluate(bad)


def test_a_try_cast_does_not_swallow_its_argument_s_error():
    """Spark's ``try_cast`` guards its own cast only: an ANSI cast inside it still raises
    (``try_cast(CAST('x' AS INT) AS STRING)`` fails in Spark 4.3)."""
    with pytest.raises(ExpressionEvaluationError, match="'x'"):
        ev("try_cast(CAST(s AS INT) AS STRING) = '1'", {"s": "x"})
    assert ev("try_cast(CAST(s AS INT) AS STRING) = '1'", {"s": "1"}) is True
    assert ev("try_cast(s AS INT) = 1", {"s": "x"}) is None
