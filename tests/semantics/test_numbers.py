"""Java 17's ``Double.toString``/``Float.toString`` and decimal text, as Spark prints them."""

from __future__ import annotations

import math
import struct
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.semantics.numbers import (
    INTEGRAL_RANGES,
    decimal_parts,
    decimal_plain_text,
    decimal_text,
    decimal_to_integral,
    float32_of_fraction,
    fractional_to_integral,
    java_double,
    java_float,
    plain_decimal,
    stripped_decimal_text,
    to_float32,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e23, "9.999999999999999E22"), (2e23, "1.9999999999999998E23"), (5e-324, "4.9E-324"), (-0.0, "-0.0"), (0.0, "0.0"),
        (math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity"), (1e7, "1.0E7"), (9999999.0, "9999999.0"),
        (1e-3, "0.001"), (9.999999999999999e-4, "9.999999999999998E-4"), (0.1, "0.1"), (100.0, "100.0"),
        (1.99802253835840973e18, "1.99802253835840973E18"), (1.7976931348623157e308, "1.7976931348623157E308"),
        (2.2250738585072014e-308, "2.2250738585072014E-308"), (2.0**63, "9.223372036854776E18"), (-1.5, "-1.5"),
    ],
)
def test_java_double(value: float, text: str) -> None:
    assert java_double(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.1, "0.1"), (1.4e-45, "1.4E-45"), (3.4028234663852886e38, "3.4028235E38"), (1e10, "1.0E10"), (1e23, "1.0E23"),
     (16777216.0, "1.6777216E7"), (-0.0, "-0.0"), (math.nan, "NaN"), (0.001, "0.001"), (1.0, "1.0")],
)
def test_java_float(value: float, text: str) -> None:
    assert java_float(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
@settings(max_examples=500, deadline=None)
def test_double_text_reads_back(value: float) -> None:
    text = java_double(value)
    assert float(text) == value and ("E" in text) == (value != 0 and not 1e-3 <= abs(value) < 1e7)


@given(st.integers(0, 2**32 - 1))
@settings(max_examples=500, deadline=None)
def test_float_text_reads_back_as_float32(bits: int) -> None:
    value = struct.unpack("<f", struct.pack("<I", bits))[0]
    if value == value and abs(value) != math.inf:
        assert to_float32(float(java_float(value))) == value


def test_decimal_text() -> None:
    assert plain_decimal(150, 2) == "1.50" and decimal_text(150, 2) == "1.5" and decimal_text(-5, 3) == "-0.005"
    assert plain_decimal(0, 3) == "0.000" and decimal_text(0, 3) == "0" and plain_decimal(-7, 0) == "-7"
    assert decimal_plain_text(Decimal("-0.050")) == "-0.050" and decimal_plain_text(Decimal("1E+2")) == "100"
    assert stripped_decimal_text(Decimal("12.3400")) == "12.34" and decimal_parts(Decimal("-1.50")) == (-150, 2)


def test_float32_rounding() -> None:
    assert to_float32(0.1) == 0.10000000149011612 and to_float32(1e300) == math.inf
    assert float32_of_fraction(Fraction(16777217)) == 16777216.0  # ties to even
    assert float32_of_fraction(Fraction(1, 10)) == to_float32(0.1)


def test_fractional_and_decimal_to_integral() -> None:
    lo, hi = INTEGRAL_RANGES["bigint"]
    assert fractional_to_integral(2.0**63, lo, hi) == hi  # Spark saturates in double arithmetic
    assert fractional_to_integral(-3.99, lo, hi) == -3 and fractional_to_integral(math.nan, lo, hi) is None
    assert fractional_to_integral(1e19, lo, hi) is None
    assert decimal_to_integral(-25, 1, *INTEGRAL_RANGES["int"]) == -2
    assert decimal_to_integral(10**20, 0, lo, hi) is None and decimal_to_integral(-(10**19), 1, lo, hi) == -(10**18)
    assert decimal_to_integral(1285, 1, *INTEGRAL_RANGES["tinyint"]) is None
