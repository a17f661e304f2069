"""Spark's string -> number and string -> boolean casts (ANSI grammar, TRY-style results).

Each function returns the value or None where Spark's cast fails: integers are
``UTF8String.toLongExact`` (``[+-]digits`` after trimming ASCII whitespace and control
characters, no fraction), doubles ``Double.parseDouble`` (plus ``inf``/``nan`` spellings),
decimals ``new BigDecimal(s.trim())`` then ``changePrecision`` with ROUND_HALF_UP, booleans
``t/true/y/yes/1`` and ``f/false/n/no/0`` in any case.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from fractions import Fraction

from varlake.semantics.numbers import float32_of_fraction

_JAVA_BLANKS = "".join(map(chr, range(0x21)))
_CONTROL_BLANKS = _JAVA_BLANKS + "\x7f"


def trim_control(text: str) -> str:
    """``UTF8String.trimAll``: strip ASCII whitespace/control bytes (0x00-0x20 and 0x7F)."""
    return text.strip(_CONTROL_BLANKS)


def trim_java(text: str) -> str:
    """``String.trim``: strip characters <= U+0020."""
    return text.strip(_JAVA_BLANKS)


_INTEGER = re.compile(r"[+\-]?[0-9]+\Z")


def parse_integer(text: str) -> int | None:
    """``UTF8String.toLongExact`` without the range check: ``[+-]digits`` after trimming."""
    t = trim_control(text)
    if not _INTEGER.match(t):
        return None
    return int(t)


_JAVA_DECIMAL_FLOAT = re.compile(r"[+\-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+\-]?\d+)?)[fFdD]?)\Z", re.ASCII)
_JAVA_HEX_FLOAT = re.compile(
    r"([+\-]?)0[xX]([0-9a-fA-F]*)\.?([0-9a-fA-F]*)[pP]([+\-]?\d+)[fFdD]?\Z", re.ASCII
)
_SPECIAL_FLOATS = {
    "inf": math.inf, "+inf": math.inf, "infinity": math.inf, "+infinity": math.inf,
    "-inf": -math.inf, "-infinity": -math.inf, "nan": math.nan,
}


def _exact_of_java_float(text: str) -> Fraction | float | None:
    """The exact value of Java floating-point literal text (a float for NaN/Infinity)."""
    m = _JAVA_DECIMAL_FLOAT.match(text)
    if m:
        body = m.group(1)
        negative = text.startswith("-")
        if body == "NaN":
            return math.nan
        if body == "Infinity":
            return -math.inf if negative else math.inf
        number = m.group(2)
        d = Decimal(("-" if negative else "") + number)
        if d.is_zero():
            return -0.0 if negative else 0.0
        if d.adjusted() > 400:
            return -math.inf if negative else math.inf
        if d.adjusted() < -400:
            return -0.0 if negative else 0.0
        return Fraction(d)
    m = _JAVA_HEX_FLOAT.match(text)
    if m and (m.group(2) or m.group(3)):
        mant = int((m.group(2) + m.group(3)) or "0", 16)
        exp = int(m.group(4)) - 4 * len(m.group(3))
        negative = m.group(1) == "-"
        if mant == 0:
            return -0.0 if negative else 0.0
        if exp + mant.bit_length() > 1100:
            return -math.inf if negative else math.inf
        if exp + mant.bit_length() < -1200:
            return -0.0 if negative else 0.0
        value = Fraction(mant) * Fraction(2) ** exp
        return -value if negative else value
    return None


def parse_double(text: str, float32: bool) -> float | None:
    """Spark's string -> DOUBLE/FLOAT: ``Double.parseDouble`` (or ``Float.parseFloat``),
    then the case-insensitive ``inf``/``infinity``/``nan`` literals."""
    t = trim_java(text)
    exact = _exact_of_java_float(t)
    if exact is None:
        return _SPECIAL_FLOATS.get(t.lower())
    if isinstance(exact, float):
        return exact
    if float32:
        return float32_of_fraction(exact)
    try:
        return exact.numerator / exact.denominator
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


_BIG_DECIMAL = re.compile(r"[+\-]?(\d+\.?\d*|\.\d+)([eE][+\-]?\d+)?\Z")
_WIDE = Context(prec=1000, Emax=999_999_999_999, Emin=-999_999_999_999)


def parse_decimal(text: str) -> Decimal | None:
    """``new java.math.BigDecimal(s.trim())``: digits, optional fraction and exponent."""
    t = trim_java(text)
    if not _BIG_DECIMAL.match(t):
        return None
    try:
        d = Decimal(t)
    except InvalidOperation:
        return None
    exp = d.as_tuple().exponent
    if not isinstance(exp, int) or not -(2**31) < exp <= 2**31:
        return None
    return d


def decimal_fit(d: Decimal, precision: int, scale: int) -> Decimal | None:
    """Spark's ``changePrecision`` with ROUND_HALF_UP: None if the value needs more digits."""
    if d.adjusted() >= precision - scale + 1 and not d.is_zero():
        return None
    q = d.quantize(Decimal((0, (1,), -scale)), rounding=ROUND_HALF_UP, context=_WIDE)
    digits = len(q.as_tuple().digits)
    if not q.is_zero() and digits > precision:
        return None
    return q


_TRUE_STRINGS = frozenset(("t", "true", "y", "yes", "1"))
_FALSE_STRINGS = frozenset(("f", "false", "n", "no", "0"))


def string_to_boolean(text: str) -> bool | None:
    low = trim_control(text).lower()
    if low in _TRUE_STRINGS:
        return True
    if low in _FALSE_STRINGS:
        return False
    return None
