"""Which terms of a bound predicate could raise on a file's rows, given its statistics.

Data skipping removes files whose rows cannot match. Under Spark's ANSI mode a filter
can also *raise* on a row (``CAST(v:a AS INT)`` of the string ``"x"``, a value out of
the target's range), so a file that statistics exclude but whose rows would have made
Spark raise must still be read: skipping may change how fast a query runs, never
whether it fails. ``raising_terms`` names the terms that statistics cannot prove safe;
a file with none can be skipped.

A non-try ``variant_get`` (``v:a::int``) is proven safe when the file's Variant path
bounds share one type family that converts to the target without error (exact numbers
within the target's range and scale; any number to a double; strings to strings, and so on), or when it reads a
date or timestamp of a path whose every value is ISO date text
(``FileStats.variant_iso_dates``). A non-try ``CAST`` is safe when its types cannot fail (a wider integer, text of a number or a date) or
when it narrows an exact-number column whose min and max fit the target; a cast of
text to a number or a date is never proven safe (statistics say nothing of the text).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from varlake.expr.binding import term_type
from varlake.expr.stats import FileStats
from varlake.expr.tree import Call, Cast, Column, Condition, Literal, Predicate, Term, VariantGet
from varlake.expr.types import INTEGRAL_TYPES, TypeFamily, decimal_params, family_of, is_integral, is_numeric
from varlake.expr.visitors import PredicateVisitor, leaf_terms, visit
from varlake.semantics.datetime_text import ISO_DATE_TARGETS

__all__ = ["Proof", "cannot_raise", "cast_proofs", "fits", "only_plain_terms", "possibly_raising_terms", "raising_terms", "repeated_raising_terms"]

EXACT = TypeFamily.EXACT_NUMERIC
_SAME_FAMILY_SAFE = frozenset(
    {TypeFamily.STRING, TypeFamily.BOOLEAN, TypeFamily.DATE, TypeFamily.TIMESTAMP, TypeFamily.TIMESTAMP_NTZ}
)


#: Calls that never raise under ANSI (others: overflow, division by zero, a bad LIKE pattern).
_SAFE_CALLS = frozenset({"length", "lower", "upper", "trim", "ltrim", "rtrim", "substring", "concat", "coalesce",
                         "case", "startswith", "endswith", "contains", "year", "month", "day"})


def _may_raise(term: Call) -> bool:
    if term.name in _SAFE_CALLS:
        return False
    floating = term.dtype in ("float", "double")
    return not (floating and term.name in ("+", "-", "*", "negative", "abs"))


class _RaisingTerms(PredicateVisitor[list]):
    """Every term of a bound predicate that might raise: non-try casts, ``variant_get``s and
    function calls that can fail (arithmetic, LIKE); statistics never prove a call safe."""

    def visit_true(self) -> list:
        return []

    visit_false = visit_true

    def visit_not(self, child: list) -> list:
        return child

    def visit_and(self, left: list, right: list) -> list:
        return left + right

    visit_or = visit_and

    def _leaf(self, node: Predicate) -> list:
        out: list[Term] = []
        stack = list(leaf_terms(node))
        while stack:
            term = stack.pop()
            if isinstance(term, VariantGet) and not term.try_ and term.target != "variant":
                out.append(term)
            elif isinstance(term, Cast):
                if not term.try_:
                    out.append(term)
                stack.append(term.term)
            elif isinstance(term, Call):
                if _may_raise(term):
                    out.append(term)
                stack.extend(term.args)
            elif isinstance(term, Condition):
                out.extend(visit(term.predicate, _RaisingTerms()))
        return out

    visit_is_null = visit_is_not_null = visit_comparison = visit_in = visit_not_in = _leaf  # type: ignore[assignment]


def repeated_raising_terms(predicate: Predicate) -> tuple[Term, ...]:
    """The non-try casts and ``variant_get``s that occur more than once in ``predicate``."""
    seen: dict[Term, int] = {}
    for term in visit(predicate, _RaisingTerms()):
        seen[term] = seen.get(term, 0) + 1
    return tuple(t for t, n in seen.items() if n > 1)


def possibly_raising_terms(predicate: Predicate) -> tuple[Term, ...]:
    """Every non-try cast and ``variant_get`` of ``predicate`` (each once, in order)."""
    return tuple(dict.fromkeys(visit(predicate, _RaisingTerms())))


def fits(value: object, target: str) -> bool:
    """Whether an exact number converts to an integral or decimal ``target`` without
    overflow or rounding (any value fits any other target)."""
    if is_integral(target):
        low, high = INTEGRAL_TYPES[target]
        return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    params = decimal_params(target)
    if params is not None:
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            return False
        number = Decimal(value)
        exponent = number.as_tuple().exponent
        if not isinstance(exponent, int) or -exponent > params[1]:
            return False
        return abs(number) < Decimal(10) ** (params[0] - params[1])
    return True


Proof = Callable[[FileStats], bool]


def _never(stats: FileStats) -> bool:
    return False


def _always(stats: FileStats) -> bool:
    return True


def _exact_bounds_fit(low: Any, high: Any, target: str) -> bool:
    return fits(low, target) and fits(high, target)


def _variant_get_proof(term: VariantGet) -> Proof:
    """Statistics prove every value at the path converts to the target without error: the
    path's bounds share one type family that converts (exact numbers that fit the target's
    range and scale; strings to strings, booleans to booleans, ...), or the path holds
    only ISO date text and the target is a date or timestamp type."""
    key, target = (term.column.path, term.path), term.target
    numeric = is_integral(target) or decimal_params(target) is not None
    family = family_of(target)
    if target == "double":
        return _to_double_proof(key)
    if not numeric and family not in _SAME_FAMILY_SAFE:
        return _never
    if is_integral(target):
        lo, hi = INTEGRAL_TYPES[target]

        def integral(stats: FileStats) -> bool:
            low, high = stats.variant_min.get(key), stats.variant_max.get(key)
            if low is None or high is None or low.family is not EXACT or high.family is not EXACT:
                return False
            a, b = low.value, high.value
            return type(a) is int and type(b) is int and lo <= a <= hi and lo <= b <= hi

        return integral

    dates = target in ISO_DATE_TARGETS

    def proof(stats: FileStats) -> bool:
        if dates and key in stats.variant_iso_dates:
            return True  # every value is ISO date text, which these casts always read
        low, high = stats.variant_min.get(key), stats.variant_max.get(key)
        if low is None or high is None or low.family is not high.family:
            return False
        if numeric:
            return low.family is EXACT and _exact_bounds_fit(low.value, high.value, target)
        return low.family is family

    return proof


_NUMBERS = frozenset({EXACT, TypeFamily.DOUBLE, TypeFamily.FLOAT})


def _to_double_proof(key: Any) -> Proof:
    """Every number converts to a double without error (an exact number to the nearest
    double: a decimal's 38 digits are far inside its range), so bounds that are numbers on
    both sides prove the path safe -- delta-spark's shredded decimals read as doubles."""

    def proof(stats: FileStats) -> bool:
        low, high = stats.variant_min.get(key), stats.variant_max.get(key)
        return low is not None and high is not None and low.family in _NUMBERS and high.family in _NUMBERS

    return proof


_INTEGRAL_RANK = {"byte": 0, "short": 1, "integer": 2, "long": 3}
_NEVER_FAILS_TO_STRING = ("boolean", "date", "timestamp", "timestamp_ntz", "string", "binary")


def _cast_proof(term: Cast) -> Proof:
    """The cast cannot fail for its types (widening, to text), or it narrows an exact-number
    column whose statistics' min and max fit the target."""
    source, target = term_type(term.term), term.target
    if source == target or source == "void":
        return _always
    if target == "string":
        return _always if is_numeric(source) or source in _NEVER_FAILS_TO_STRING else _never
    if target == "double" and is_numeric(source):
        return _always
    if is_integral(source) and is_integral(target) and _INTEGRAL_RANK[source] <= _INTEGRAL_RANK[target]:
        return _always
    exact = is_integral(source) or decimal_params(source) is not None
    if exact and (is_integral(target) or decimal_params(target) is not None) and isinstance(term.term, Column):
        path = term.term.path

        def proof(stats: FileStats) -> bool:
            low, high = stats.min_values.get(path), stats.max_values.get(path)
            return low is not None and high is not None and _exact_bounds_fit(low, high, target)

        return proof
    return _never


def cast_proofs(predicate: Predicate) -> tuple[tuple[Term, Proof], ...]:
    """Each term of ``possibly_raising_terms`` with the statistics check proving it safe on a
    file (compiled once; evaluate per file)."""
    return tuple(
        (t, _variant_get_proof(t) if isinstance(t, VariantGet) else _cast_proof(t) if isinstance(t, Cast) else _never)
        for t in possibly_raising_terms(predicate)
    )


def raising_terms(predicate: Predicate, stats: FileStats) -> tuple[Term, ...]:
    """The terms of the bound ``predicate`` that could raise on this file's rows.

    Empty when statistics prove that evaluating the predicate row by row never raises.
    """
    return tuple(t for t, proven in cast_proofs(predicate) if not proven(stats))


def cannot_raise(predicate: Predicate, stats: FileStats) -> bool:
    """Whether evaluating the bound ``predicate`` on this file's rows can never raise."""
    return not raising_terms(predicate, stats)


class _PlainTerms(PredicateVisitor[bool]):
    def visit_true(self) -> bool:
        return True

    visit_false = visit_true

    def visit_not(self, child: bool) -> bool:
        return child

    def visit_and(self, left: bool, right: bool) -> bool:
        return left and right

    visit_or = visit_and

    def _leaf(self, node: Predicate) -> bool:
        return all(isinstance(t, (Column, Literal)) for t in leaf_terms(node))

    visit_is_null = visit_is_not_null = visit_comparison = visit_in = visit_not_in = _leaf  # type: ignore[assignment]


def only_plain_terms(predicate: Predicate) -> bool:
    """Whether every leaf compares plain columns and literals (no casts, no Variant paths):
    what a Parquet reader can check against a row group's own statistics."""
    return visit(predicate, _PlainTerms())
