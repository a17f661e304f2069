"""Spark's ANSI arithmetic and string functions on Python values.

Numbers: ``+ - * / %``, unary minus and ``abs`` with ANSI errors (integer overflow,
division or remainder by zero, a DECIMAL result that does not fit), DECIMAL result
types as Spark's ``DecimalPrecision`` computes them (precision loss allowed), results
rounded HALF_UP to the result scale; ``/`` of non-decimals is a DOUBLE division; ``%``
keeps the dividend's sign (Java's ``%``). FLOAT arithmetic is done in double and rounded
once to float32 (exact for one operation). Strings: ``LIKE`` patterns
(``StringUtils.escapeLikeRegex``), ``substring`` (``UTF8String.substringSQL``) and
``trim`` (spaces only). Failures raise ``ExpressionEvaluationError`` named with Spark's
error class.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Context, Decimal, localcontext
from fractions import Fraction

from varlake.errors import ExpressionEvaluationError
from varlake.semantics.numbers import to_float32

MAX_PRECISION = 38
MINIMUM_ADJUSTED_SCALE = 6
#: Precision of an integral type's values as a DECIMAL (``DecimalType.forType``).
INTEGRAL_DECIMAL_PRECISION = {"byte": 3, "short": 5, "integer": 10, "long": 20}
_EXACT = Context(prec=200, rounding=ROUND_HALF_UP)


def _divide_by_zero() -> ExpressionEvaluationError:
    return ExpressionEvaluationError("[DIVIDE_BY_ZERO] Division by zero")


def _remainder_by_zero() -> ExpressionEvaluationError:
    return ExpressionEvaluationError("[REMAINDER_BY_ZERO] Remainder by zero")


def _overflow(what: str) -> ExpressionEvaluationError:
    return ExpressionEvaluationError(f"[ARITHMETIC_OVERFLOW] {what} caused overflow")


def adjust_precision_scale(precision: int, scale: int) -> tuple[int, int]:
    """``DecimalType.adjustPrecisionScale`` with precision loss allowed."""
    if precision <= MAX_PRECISION:
        return precision, scale
    int_digits = precision - scale
    min_scale = min(scale, MINIMUM_ADJUSTED_SCALE)
    return MAX_PRECISION, max(MAX_PRECISION - int_digits, min_scale)


def decimal_result_type(op: str, p1: int, s1: int, p2: int, s2: int) -> tuple[int, int]:
    """Precision and scale of ``decimal(p1,s1) op decimal(p2,s2)``."""
    if op in ("+", "-"):
        scale = max(s1, s2)
        return adjust_precision_scale(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op == "*":
        return adjust_precision_scale(p1 + p2 + 1, s1 + s2)
    if op == "/":
        scale = max(MINIMUM_ADJUSTED_SCALE, s1 + p2 + 1)
        return adjust_precision_scale(p1 - s1 + s2 + scale, scale)
    if op == "%":
        return adjust_precision_scale(min(p1 - s1, p2 - s2) + max(s1, s2), max(s1, s2))
    raise ValueError(f"unknown decimal operator {op!r}")


def wider_decimal(p1: int, s1: int, p2: int, s2: int) -> tuple[int, int]:
    """``DecimalPrecision.widerDecimalType``: holds both (bounded to 38 digits)."""
    scale = max(s1, s2)
    int_digits = max(p1 - s1, p2 - s2)
    return min(int_digits + scale, MAX_PRECISION), min(scale, MAX_PRECISION)


def integral_op(op: str, a: int, b: int, low: int, high: int) -> int:
    """``a op b`` for integers of one type with range ``[low, high]`` (``/`` is not integral)."""
    if op == "+":
        result = a + b
    elif op == "-":
        result = a - b
    elif op == "*":
        result = a * b
    elif op == "%":
        if b == 0:
            raise _remainder_by_zero()
        result = abs(a) % abs(b)
        result = -result if a < 0 else result
    else:
        raise ValueError(f"unknown integral operator {op!r}")
    if not low <= result <= high:
        raise _overflow(f"{a} {op} {b}")
    return result


def integral_negate(a: int, low: int, high: int, what: str = "negative") -> int:
    """Unary minus (and ``abs`` of a negative): overflows only at the type's minimum."""
    if not low <= -a <= high:
        raise _overflow(f"{what}({a})")
    return -a


def floating_op(op: str, a: float, b: float, float32: bool = False) -> float:
    """``a op b`` in DOUBLE (or FLOAT) arithmetic; ``/`` and ``%`` by zero raise under ANSI."""
    if op == "+":
        result = a + b
    elif op == "-":
        result = a - b
    elif op == "*":
        result = a * b
    elif op == "/":
        if b == 0:
            raise _divide_by_zero()
        result = a / b
    elif op == "%":
        if b == 0:
            raise _remainder_by_zero()
        result = math.nan if math.isinf(a) or a != a or b != b else (a if math.isinf(b) else math.fmod(a, b))
    else:
        raise ValueError(f"unknown floating-point operator {op!r}")
    return to_float32(result) if float32 else result


def _fits(value: Decimal, precision: int, scale: int) -> Decimal:
    rounded = value.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP, context=_EXACT)
    if rounded.adjusted() >= precision - scale and not rounded.is_zero():
        raise ExpressionEvaluationError(
            f"[NUMERIC_VALUE_OUT_OF_RANGE] {value} cannot be represented as Decimal({precision}, {scale})"
        )
    return rounded


def _half_up(value: Fraction, scale: int) -> Decimal:
    scaled = abs(value) * 10**scale
    whole = int(scaled + Fraction(1, 2))
    return Decimal(-whole if value < 0 else whole).scaleb(-scale)


def decimal_op(op: str, a: Decimal, b: Decimal, precision: int, scale: int) -> Decimal:
    """``a op b`` as DECIMAL(precision, scale): exact, then HALF_UP to the scale (a quotient
    first to 38 places, as ``Decimal./`` does); a result too wide raises."""
    with localcontext(_EXACT):
        if op == "+":
            result = a + b
        elif op == "-":
            result = a - b
        elif op == "*":
            result = a * b
        elif op == "/":
            if b == 0:
                raise _divide_by_zero()
            result = _half_up(Fraction(a) / Fraction(b), MAX_PRECISION)
        elif op == "%":
            if b == 0:
                raise _remainder_by_zero()
            result = a % b  # sign of the dividend, as BigDecimal.remainder
        else:
            raise ValueError(f"unknown decimal operator {op!r}")
    return _fits(result, precision, scale)


def decimal_fit_result(value: Decimal, precision: int, scale: int) -> Decimal:
    """A DECIMAL result (``abs``, unary minus) at its type's precision and scale."""
    return _fits(value, precision, scale)


def like_regex(pattern: str, escape: str = "\\") -> re.Pattern[str]:
    """Spark's ``LIKE`` pattern as a regex to ``fullmatch`` (``%`` any run, ``_`` one character,
    the escape character before ``%``, ``_`` or itself; DOTALL)."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == escape:
            if i + 1 >= len(pattern):
                raise ExpressionEvaluationError(
                    f"[INVALID_FORMAT.ESC_AT_THE_END] the LIKE pattern {pattern!r} ends with the escape character"
                )
            nxt = pattern[i + 1]
            if nxt not in ("_", "%", escape):
                raise ExpressionEvaluationError(
                    f"[INVALID_FORMAT.ESC_IN_THE_MIDDLE] the LIKE pattern {pattern!r}: the escape character is not "
                    f"allowed to precede {nxt!r}"
                )
            out.append(re.escape(nxt))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


_INT_MAX, _INT_MIN = 2**31 - 1, -(2**31)


def substring_sql(text: str | bytes, pos: int, length: int = _INT_MAX) -> str | bytes:
    """``substring(text, pos, length)``: 1-based, 0 counts as 1, negative from the end."""
    size = len(text)
    start = pos - 1 if pos > 0 else (size + pos if pos < 0 else 0)
    end = max(min(start + length, _INT_MAX), _INT_MIN)
    start = max(start, 0)
    if start >= end:
        return text[:0]
    return text[start:min(end, size)]


def trim_spaces(text: str, left: bool = True, right: bool = True) -> str:
    """``trim`` / ``ltrim`` / ``rtrim``: remove U+0020 only."""
    if left:
        text = text.lstrip(" ")
    if right:
        text = text.rstrip(" ")
    return text
