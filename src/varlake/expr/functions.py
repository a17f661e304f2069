"""Scalar functions and operators (``Call`` terms): their Spark result types and their
row-level evaluation. The arithmetic itself (ANSI errors, DECIMAL precision, LIKE
patterns) is ``varlake.semantics.arithmetic``; this module maps Spark's types onto it.

Typing follows Spark's ANSI coercion: integers widen to the wider integer; a FLOAT or
DOUBLE operand makes the operation DOUBLE (FLOAT only with FLOAT); a DECIMAL with an
integer treats the integer as DECIMAL (a literal with just its digits, a column with its
type's 3/5/10/20 digits); ``/`` of non-decimals is DOUBLE.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Any

from varlake.errors import ExpressionTypeError
from varlake.expr.tree import ARITHMETIC_OPS, Call, Literal, Term
from varlake.expr.types import INTEGRAL_TYPES, decimal_params, is_integral, is_numeric
from varlake.semantics.arithmetic import (
    INTEGRAL_DECIMAL_PRECISION,
    decimal_fit_result,
    decimal_op,
    decimal_result_type,
    floating_op,
    integral_negate,
    integral_op,
    like_regex,
    substring_sql,
    trim_spaces,
    wider_decimal,
)

_RANK = {"byte": 0, "short": 1, "integer": 2, "long": 3}
_FLOATS = ("float", "double")
_TIMES = ("date", "timestamp_ntz", "timestamp")
#: Functions of strings that give a string.
STRING_FUNCTIONS = frozenset({"lower", "upper", "trim", "ltrim", "rtrim"})
#: Functions of two strings that give a BOOLEAN.
STRING_TESTS = frozenset({"startswith", "endswith", "contains"})
DATE_PARTS = frozenset({"year", "month", "day"})
#: Every function name a ``Call`` may carry.
FUNCTIONS = ARITHMETIC_OPS | STRING_FUNCTIONS | STRING_TESTS | DATE_PARTS | {
    "negative", "abs", "length", "substring", "concat", "coalesce", "case", "like", "ilike",
}


def _decimal_digits(dtype: str, literal: Any = None) -> tuple[int, int]:
    params = decimal_params(dtype)
    if params is not None:
        return params
    if isinstance(literal, int) and not isinstance(literal, bool):
        return max(len(str(abs(literal))), 1), 0  # Spark types an integer literal by its digits here
    return INTEGRAL_DECIMAL_PRECISION[dtype], 0


def _numeric_type(term: Term, type_of: Callable[[Term], str], where: str) -> str:
    dtype = type_of(term)
    if dtype != "void" and not is_numeric(dtype):
        raise ExpressionTypeError(f"{where}: {term} is {dtype}, not a number")
    return dtype


def arithmetic_type(op: str, left: Term, right: Term, type_of: Callable[[Term], str], where: str) -> str:
    """Spark's result type of ``left op right`` (ANSI)."""
    a, b = _numeric_type(left, type_of, where), _numeric_type(right, type_of, where)
    if a == "void" and b == "void":
        return "double" if op == "/" else "integer"
    a, b = (b if a == "void" else a), (a if b == "void" else b)
    decimal = decimal_params(a) is not None or decimal_params(b) is not None
    if a in _FLOATS or b in _FLOATS:
        return "float" if a == b == "float" and op != "/" else "double"
    if op == "/" and not decimal:
        return "double"
    if decimal:
        p1, s1 = _decimal_digits(a, left.value if isinstance(left, Literal) else None)
        p2, s2 = _decimal_digits(b, right.value if isinstance(right, Literal) else None)
        p, s = decimal_result_type(op, p1, s1, p2, s2)
        return f"decimal({p},{s})"
    return a if _RANK[a] >= _RANK[b] else b


def wider_type(a: str, b: str, where: str) -> str:
    """The type two branch values (CASE, COALESCE) are both cast to."""
    if a == b or b == "void":
        return a
    if a == "void":
        return b
    if is_numeric(a) and is_numeric(b):
        if a in _FLOATS or b in _FLOATS:
            return "float" if a == b == "float" else "double"
        if is_integral(a) and is_integral(b):
            return a if _RANK[a] >= _RANK[b] else b
        p, s = wider_decimal(*_decimal_digits(a), *_decimal_digits(b))
        return f"decimal({p},{s})"
    if a in _TIMES and b in _TIMES:
        return max(a, b, key=_TIMES.index)
    raise ExpressionTypeError(f"{where}: values of types {a} and {b} have no common type")


def common_type(types: Sequence[str], where: str) -> str:
    result = "void"
    for t in types:
        result = wider_type(result, t, where)
    return result


@lru_cache(maxsize=256)
def _like(pattern: str, escape: str) -> re.Pattern[str]:
    return like_regex(pattern, escape)


def _arithmetic(op: str, dtype: str) -> Callable[..., Any]:
    if dtype in _FLOATS:
        narrow = dtype == "float"
        return lambda a, b: floating_op(op, float(a), float(b), narrow)
    params = decimal_params(dtype)
    if params is not None:
        p, s = params
        return lambda a, b: decimal_op(op, Decimal(a), Decimal(b), p, s)
    low, high = INTEGRAL_TYPES[dtype]
    return lambda a, b: integral_op(op, a, b, low, high)


def _sign(name: str, dtype: str) -> Callable[..., Any]:
    params = decimal_params(dtype)
    if dtype in _FLOATS:
        return (lambda a: -a) if name == "negative" else abs
    if params is not None:
        p, s = params
        return (lambda a: decimal_fit_result(-a, p, s)) if name == "negative" else (lambda a: decimal_fit_result(abs(a), p, s))
    low, high = INTEGRAL_TYPES[dtype]
    if name == "negative":
        return lambda a: integral_negate(a, low, high)
    return lambda a: a if a >= 0 else integral_negate(a, low, high, "abs")


def _text(name: str) -> Callable[..., Any]:
    if name == "lower":
        return str.lower
    if name == "upper":
        return str.upper
    return lambda a: trim_spaces(a, name != "rtrim", name != "ltrim")


def strict_function(call: Call) -> Callable[..., Any]:
    """The function of a bound ``Call`` (not ``coalesce`` or ``case``) on its argument values,
    none of them NULL (a NULL argument makes each of these NULL)."""
    name, dtype = call.name, call.dtype or ""
    if name in ARITHMETIC_OPS:
        return _arithmetic(name, dtype)
    if name in ("negative", "abs"):
        return _sign(name, dtype)
    if name == "length":
        return len
    if name in STRING_FUNCTIONS:
        return _text(name)
    if name == "substring":
        return substring_sql
    if name == "concat":
        return lambda *parts: "".join(parts)
    if name == "like":
        return lambda text, pattern, escape: _like(pattern, escape).fullmatch(text) is not None
    if name == "ilike":
        return lambda text, pattern, escape: _like(pattern.lower(), escape).fullmatch(text.lower()) is not None
    if name == "startswith":
        return str.startswith
    if name == "endswith":
        return str.endswith
    if name == "contains":
        return lambda a, b: b in a
    if name in DATE_PARTS:
        return lambda d: getattr(d, name)
    raise ExpressionTypeError(f"cannot evaluate function {name}")


__all__ = ["FUNCTIONS", "arithmetic_type", "common_type", "strict_function", "wider_type"]
