"""Value casts and literal parsing as Spark (ANSI) does them, and partition value parsing."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pytest

from varlake.errors import ExpressionEvaluationError
from varlake.expr import parse_partition_value
from varlake.expr.casts import cast_value, java_double_text, literal_type, parse_timestamp, sql_number

UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("value", "source", "target", "expected"),
    [
        ("42", "string", "integer", 42),
        (" -7 ", "string", "long", -7),
        (" 1\t", "string", "long", 1),
        (3.99, "double", "long", 3),
        (-3.99, "double", "long", -3),
        (Decimal("2.5"), "decimal(2,1)", "integer", 2),
        (True, "boolean", "long", 1),
        ("1.005", "string", "decimal(10,2)", Decimal("1.01")),
        (Decimal("-1.005"), "decimal(4,3)", "decimal(10,2)", Decimal("-1.01")),
        (5, "integer", "double", 5.0),
        ("NaN", "string", "double", math.nan),
        ("-Infinity", "string", "double", -math.inf),
        (0.1, "double", "float", 0.10000000149011612),
        (1e300, "double", "float", math.inf),
        (1.5, "double", "string", "1.5"),
        (1e7, "double", "string", "1.0E7"),
        (1.25e-5, "double", "string", "1.25E-5"),
        (100.0, "double", "string", "100.0"),
        (Decimal("1.50"), "decimal(3,2)", "string", "1.50"),
        (False, "boolean", "string", "false"),
        (dt.datetime(2024, 1, 1, 10, 0, 0, 120000, UTC), "timestamp", "string", "2024-01-01 10:00:00.12"),
        ("yes", "string", "boolean", True),
        (0, "integer", "boolean", False),
        ("2024-02-03 10:00:00", "string", "date", dt.date(2024, 2, 3)),
        ("2024-7", "string", "date", dt.date(2024, 7, 1)),
        (dt.datetime(2024, 1, 1, 23, 30, tzinfo=UTC), "timestamp", "date", dt.date(2024, 1, 1)),
        (dt.date(2024, 1, 1), "date", "timestamp", dt.datetime(2024, 1, 1, tzinfo=UTC)),
        (dt.datetime(2024, 1, 1, 5), "timestamp_ntz", "timestamp", dt.datetime(2024, 1, 1, 5, tzinfo=UTC)),
        ("ab", "string", "binary", b"ab"),
        (None, "string", "long", None),
    ],
)
def test_casts(value, source, target, expected):
    result = cast_value(value, source, target)
    if isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(result)
    else:
        assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    ("value", "source", "target"),
    [("abc", "string", "long"), ("1_000", "string", "long"), ("1.5", "string", "integer"),
     ("1.00", "string", "long"),  # Spark 4.3 ANSI: CAST_INVALID_INPUT (UTF8String.toLongExact takes no fraction)
     (2**40, "long", "integer"), (math.nan, "double", "long"), ("x", "string", "double"),
     (Decimal("123.4"), "decimal(4,1)", "decimal(3,1)"), ("maybe", "string", "boolean"),
     ("2024-13-01", "string", "date")],
)
def test_failing_casts_raise_and_name_the_value(value, source, target):
    with pytest.raises(ExpressionEvaluationError) as info:
        cast_value(value, source, target)
    assert target in str(info.value)


def test_timestamp_text_forms():
    assert parse_timestamp("2024-01-01") == dt.datetime(2024, 1, 1, tzinfo=UTC)
    assert parse_timestamp("2024-01-01T10:11:12.1234567Z") == dt.datetime(2024, 1, 1, 10, 11, 12, 123456, UTC)
    assert parse_timestamp("2024-01-01 10:11:12+02:00") == dt.datetime(2024, 1, 1, 8, 11, 12, tzinfo=UTC)
    assert parse_timestamp("2024-06-01 12:00", "Europe/Paris") == dt.datetime(2024, 6, 1, 10, tzinfo=UTC)
    assert parse_timestamp("2024-06-01 12:00:00 Europe/Paris") == dt.datetime(2024, 6, 1, 10, tzinfo=UTC)
    with pytest.raises(ValueError):  # Spark 4.3 takes a zone only after the seconds: NULL / CAST_INVALID_INPUT
        parse_timestamp("2024-06-01 12:00 Europe/Paris")
    assert parse_timestamp("2024-06-01 12:00:00.5", ntz=True) == dt.datetime(2024, 6, 1, 12, 0, 0, 500000)
    with pytest.raises(ValueError):
        parse_timestamp("yesterday")


def test_java_double_text_round_trips():
    for number in [0.1, 123456.789, 1e-3, 9.999e-4, 1e22, -2.5e-300, 5e-324, 1.7976931348623157e308]:
        assert float(java_double_text(number)) == number


def test_literal_types():
    assert literal_type(2**31 - 1) == "integer"
    assert literal_type(2**31) == "long"
    assert literal_type(2**63) == "decimal(19,0)"
    assert literal_type(Decimal("-0.050")) == "decimal(3,3)"
    assert literal_type(Decimal("1E+2")) == "decimal(3,0)"
    assert literal_type(dt.datetime(2024, 1, 1)) == "timestamp_ntz"
    assert sql_number("007") == (7, "integer")


@pytest.mark.parametrize(
    ("raw", "dtype", "expected"),
    [
        ("", "integer", None),
        (None, "string", None),
        ("", "string", None),
        ("12", "integer", 12),
        ("-1.50", "decimal(5,2)", Decimal("-1.50")),
        ("2.5", "double", 2.5),
        ("true", "boolean", True),
        ("2024-01-02", "date", dt.date(2024, 1, 2)),
        ("2024-01-02 03:04:05.123456", "timestamp", dt.datetime(2024, 1, 2, 3, 4, 5, 123456, UTC)),
        ("1970-01-01T00:00:00.123456Z", "timestamp", dt.datetime(1970, 1, 1, 0, 0, 0, 123456, UTC)),
        ("2024-01-02 03:04:05", "timestamp_ntz", dt.datetime(2024, 1, 2, 3, 4, 5)),
        ("\u0001\u0002", "binary", b"\x01\x02"),
        ("a b", "string", "a b"),
    ],
)
def test_partition_values(raw, dtype, expected):
    assert parse_partition_value(raw, dtype) == expected
