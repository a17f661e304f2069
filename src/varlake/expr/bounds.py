"""Per-file value bounds of a term, derived soundly from statistics.

A bounds getter maps ``FileStats`` to ``(lo, hi, hi_is_prefix)``: every non-NULL value
of the term in the file is ``>= lo`` and ``<= hi`` (None = unknown side).  When
``hi_is_prefix`` is set, ``hi`` is only known to bound each value's prefix of
``len(hi)`` characters (a string max that may have been truncated without padding).
Casts map bounds only when the cast is monotone (numeric widening/narrowing, identity);
any other cast, e.g. string -> bigint, gives no bounds at all.

Float and double bounds describe the non-NaN values only. Spark orders NaN above every
number (and ``NaN = NaN``), and writers disagree on where a NaN goes: Delta on Spark
sorts it in (a file holding one has max NaN), Parquet-derived stats (delta-rs, pyarrow)
leave it out (a file holding one may have max 5.0). So a NaN bound is dropped, and
whether a file holds a NaN at all is a separate proof (:func:`nan_free`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from functools import lru_cache
from typing import Any

from varlake.expr.binding import term_type
from varlake.expr.casts import parse_date
from varlake.expr.stats import STRING_PREFIX_LENGTH, FileStats, VariantStatsKey
from varlake.expr.tree import Cast, Column, Term, VariantGet
from varlake.expr.types import TypeFamily, decimal_params, family_of, is_integral
from varlake.semantics.datetime_text import is_iso_date_text

Bounds = tuple[Any, Any, bool]
BoundsFn = Callable[[FileStats], Bounds]
Convert = Callable[[Any], Any] | None  # None = identity
NullFn = Callable[[FileStats], bool]

_NO_BOUNDS: Bounds = (None, None, False)
_NUMERIC = (TypeFamily.EXACT_NUMERIC, TypeFamily.DOUBLE, TypeFamily.FLOAT)
_FLOATS = (TypeFamily.DOUBLE, TypeFamily.FLOAT)
_FLOAT_TYPES = ("double", "float")
_TIMESTAMPS = (TypeFamily.TIMESTAMP, TypeFamily.TIMESTAMP_NTZ)
#: Delta truncates timestamp statistics down to milliseconds; the true max may be 999us later.
_TIMESTAMP_SLACK = dt.timedelta(microseconds=999)
_UNITS_NEAR_LIMIT = STRING_PREFIX_LENGTH - 1


def maybe_truncated(text: Any) -> bool:
    """Whether a string/binary max could be a prefix cut at 32 characters.

    Writers count characters differently (code points, or Java UTF-16 units, possibly
    backing off one unit so as not to split a surrogate pair), so anything 31 UTF-16 units
    or longer is treated as a possible prefix; shorter values are exact bounds.
    """
    size = len(text)
    if size >= _UNITS_NEAR_LIMIT:
        return True
    if size * 2 < _UNITS_NEAR_LIMIT or not isinstance(text, str):
        return False
    return size + sum(1 for ch in text if ord(ch) > 0xFFFF) >= _UNITS_NEAR_LIMIT


def _floor(value: Any) -> Any:
    return value if type(value) is int else math.floor(value)


def _ceil(value: Any) -> Any:
    return value if type(value) is int else math.ceil(value)


def _quantizer(scale: int, rounding: str) -> Callable[[Any], Decimal]:
    step = Decimal(1).scaleb(-scale)

    def convert(value: Any) -> Decimal:
        return Decimal(value).quantize(step, rounding=rounding)  # Decimal(float) is exact

    return convert


def monotone_converters(source: TypeFamily, target: str) -> tuple[Convert, Convert] | None:
    """(lower, upper) bound converters for casting ``source``-family values to ``target``.

    Returned only when the cast is order-preserving where it succeeds (values it
    cannot convert become NULL or an error, and never match), else None.
    """
    target_family = family_of(target)
    if target_family is TypeFamily.EXACT_NUMERIC and source in _NUMERIC:
        params = decimal_params(target)
        if params is not None:
            return _quantizer(params[1], ROUND_FLOOR), _quantizer(params[1], ROUND_CEILING)
        if is_integral(target):
            return _floor, _ceil
    if target_family is TypeFamily.DOUBLE and source in _NUMERIC:
        return (None, None) if source is not TypeFamily.EXACT_NUMERIC else (float, float)
    if target_family is not None and target_family == source:
        return None, None
    return None


def _converted(value: Any, convert: Convert) -> Any:
    if value is None or convert is None:
        return value
    try:
        return convert(value)
    except (ValueError, OverflowError, TypeError, ArithmeticError):
        return None  # NaN / infinity / garbage: this side is unknown


def _shaped(lo: Any, hi: Any, family: TypeFamily | None) -> Bounds:
    if family in _TIMESTAMPS and hi is not None:
        hi = hi + _TIMESTAMP_SLACK
    prefix = hi is not None and family in (TypeFamily.STRING, TypeFamily.BINARY) and maybe_truncated(hi)
    return lo, hi, prefix


def _number(value: Any) -> Any:
    """A float/double bound, or None when it is NaN or not a number at all."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return value


def column_bounds(column: Column) -> BoundsFn:
    key, family = column.path, family_of(term_type(column))
    if family is None:
        return lambda stats: _NO_BOUNDS
    if family in _FLOATS:
        return lambda stats: (_number(stats.min_values.get(key)), _number(stats.max_values.get(key)), False)
    if family in _TIMESTAMPS or family in (TypeFamily.STRING, TypeFamily.BINARY):
        return lambda stats: _shaped(stats.min_values.get(key), stats.max_values.get(key), family)
    return lambda stats: (stats.min_values.get(key), stats.max_values.get(key), False)


def _iso_date(value: Any) -> dt.date | None:
    """The day an ``ISO_DATE_TEXT`` string names, as Spark's cast reads it (None: not such a
    text, or a year Python's ``date`` cannot hold)."""
    return _iso_date_text(value) if isinstance(value, str) else None


@lru_cache(maxsize=65_536)  # files of a table share their days, and plans repeat
def _iso_date_text(text: str) -> dt.date | None:
    if not is_iso_date_text(text):
        return None
    try:
        return parse_date(text)
    except ValueError:  # OutOfPythonRange: year 0000, a day Python's ``date`` cannot hold
        return None


def _iso_date_bounds(key: VariantStatsKey, stats: FileStats) -> Bounds:
    """Date bounds of a path whose every value is an ISO date string
    (``FileStats.variant_iso_dates``): such texts have one width and their fields run from
    the most significant, so the path's string min and max name its earliest and latest
    day."""
    low, high = stats.variant_min.get(key), stats.variant_max.get(key)
    lo = _iso_date(low.value) if low is not None and low.family is TypeFamily.STRING else None
    hi = _iso_date(high.value) if high is not None and high.family is TypeFamily.STRING else None
    return lo, hi, False


def variant_bounds(term: VariantGet) -> BoundsFn:
    """Bounds of ``variant_get`` from per-path stats whose family allows a monotone cast
    (or, read as a DATE, from the string bounds of a path of ISO dates)."""
    key = (term.column.path, term.path)
    table: Mapping[TypeFamily, tuple[Convert, Convert]] = {
        family: conv for family in TypeFamily if (conv := monotone_converters(family, term.target)) is not None
    }
    dates = term.target == "date"

    def bounds(stats: FileStats) -> Bounds:
        if dates and key in stats.variant_iso_dates:
            return _iso_date_bounds(key, stats)
        low = stats.variant_min.get(key)
        high = stats.variant_max.get(key)
        lo = hi = None
        if low is not None:
            conv = table.get(low[1])
            if conv is not None:
                lo = low[0] if conv[0] is None else _converted(low[0], conv[0])
        if high is not None:
            conv = table.get(high[1])
            if conv is not None:
                hi = high[0] if conv[1] is None else _converted(high[0], conv[1])
                return _shaped(lo, hi, high[1])
        return lo, hi, False

    return bounds


def cast_bounds(term: Cast, inner: BoundsFn) -> BoundsFn:
    source = family_of(term_type(term.term))
    conv = monotone_converters(source, term.target) if source is not None else None
    if conv is None:
        return lambda stats: _NO_BOUNDS
    low_conv, high_conv = conv

    def bounds(stats: FileStats) -> Bounds:
        lo, hi, prefix = inner(stats)
        return _converted(lo, low_conv), _converted(hi, high_conv), prefix

    return bounds


def term_bounds(term: Term) -> BoundsFn:
    if isinstance(term, Column):
        return column_bounds(term)
    if isinstance(term, VariantGet):
        return variant_bounds(term)
    if isinstance(term, Cast):
        return cast_bounds(term, term_bounds(term.term))
    return lambda stats: _NO_BOUNDS


def _column_all_null(path: tuple[str, ...]) -> NullFn:
    def all_null(stats: FileStats) -> bool:
        count = stats.null_count.get(path)
        return count is not None and count == stats.num_records

    return all_null


def all_null(term: Term) -> NullFn:
    """Proof that the term is NULL on every row (``nullCount == numRecords``)."""
    if isinstance(term, Column):
        return _column_all_null(term.path)
    if isinstance(term, VariantGet):
        return _column_all_null(term.column.path)  # NULL Variant -> NULL path value
    if isinstance(term, Cast):
        return all_null(term.term)
    return lambda stats: False


def no_null(term: Term) -> NullFn:
    """Proof that the term is never NULL (``nullCount == 0``); Variant paths never have one."""
    if isinstance(term, Column):
        path = term.path
        return lambda stats: stats.null_count.get(path) == 0
    if isinstance(term, Cast) and not term.try_:
        return no_null(term.term)  # an ANSI cast gives a value or an error, never NULL
    return lambda stats: False


def _always(stats: FileStats) -> bool:
    return True


def _never(stats: FileStats) -> bool:
    return False


def _column_nan_free(path: tuple[str, ...]) -> NullFn:
    def proof(stats: FileStats) -> bool:
        records, nulls = stats.num_records, stats.null_count.get(path)
        if records is None or nulls is None:
            return False
        live = records - nulls
        if live <= 0:
            return True  # every value is NULL
        if live == 1:  # the one value is the file's min and max, under either convention
            return _number(stats.min_values.get(path)) is not None or _number(stats.max_values.get(path)) is not None
        return False

    return proof


def _variant_nan_free(term: VariantGet) -> NullFn:
    """Delta writes no per-path bounds for a path holding a NaN (its footer stats have
    none), so numeric bounds on both sides prove the path NaN-free."""
    key = (term.column.path, term.path)
    numeric = (TypeFamily.EXACT_NUMERIC, *_FLOATS)

    def proof(stats: FileStats) -> bool:
        low, high = stats.variant_min.get(key), stats.variant_max.get(key)
        return low is not None and high is not None and low[1] in numeric and high[1] in numeric

    return proof


def nan_free(term: Term) -> NullFn:
    """Proof that no value of the term in the file is NaN (always true unless it is a float
    or double). Neither a finite max (a Parquet-derived max leaves NaN out) nor anything
    else in per-column stats proves it in general; it is proven when the file holds at
    most one non-NULL value and a non-NaN bound names it."""
    if term_type(term) not in _FLOAT_TYPES:
        return _always
    if isinstance(term, Column):
        return _column_nan_free(term.path)
    if isinstance(term, VariantGet):
        return _variant_nan_free(term)
    if isinstance(term, Cast):
        source = term_type(term.term)
        if is_integral(source) or decimal_params(source) is not None or source == "boolean":
            return _always  # exact numbers never become NaN
        if source in _FLOAT_TYPES:
            return nan_free(term.term)
    return _never
