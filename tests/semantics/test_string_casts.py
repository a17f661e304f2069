"""Spark's string -> number/boolean casts (ANSI grammar)."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from varlake.semantics.string_casts import decimal_fit, parse_decimal, parse_double, parse_integer, string_to_boolean


@pytest.mark.parametrize(("text", "value"), [("42", 42), (" -7\t", -7), ("+3", 3), ("1.00", None), ("1_000", None),
                                             ("", None), ("0x10", None), ("١٢", None), ("\x00 5 \x7f", 5)])
def test_parse_integer(text: str, value: int | None) -> None:
    assert parse_integer(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("1e23", 1e23), (" 2.5d ", 2.5), ("0x1p3", 8.0), ("-Infinity", -math.inf), ("inf", math.inf), ("INF", math.inf),
     ("1e400", math.inf), ("1e-400", 0.0), (".5", 0.5), ("5.", 5.0), ("x", None), ("1,5", None), ("", None)],
)
def test_parse_double(text: str, value: float | None) -> None:
    assert parse_double(text, False) == value
    assert parse_double("nan", False) != parse_double("nan", False)
    assert parse_double("0.1", True) == 0.10000000149011612


def test_parse_decimal_and_fit() -> None:
    assert parse_decimal(" 1.005 ") == Decimal("1.005") and parse_decimal("1e3") == Decimal("1E+3")
    assert parse_decimal("abc") is None and parse_decimal("NaN") is None
    assert decimal_fit(Decimal("1.005"), 10, 2) == Decimal("1.01")  # half up
    assert decimal_fit(Decimal("-1.005"), 10, 2) == Decimal("-1.01")
    assert decimal_fit(Decimal("123.4"), 3, 1) is None and decimal_fit(Decimal("99.95"), 3, 1) is None


@pytest.mark.parametrize(("text", "value"), [("t", True), (" YES ", True), ("1", True), ("n", False), ("False", False),
                                             ("0", False), ("maybe", None), ("", None), ("2", None)])
def test_string_to_boolean(text: str, value: bool | None) -> None:
    assert string_to_boolean(text) is value
