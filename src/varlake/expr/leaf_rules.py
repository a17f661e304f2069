"""Per-leaf skipping rules: when statistics prove that no row makes one leaf TRUE.

Each rule compiles to ``FileStats -> bool`` (True = rows might match).  A rule returns
ROWS_CANNOT_MATCH only on proof from bounds (``bounds.py``) or null counts; any
exception on odd statistics is caught and answered with ROWS_MIGHT_MATCH.  Comparisons
with a NaN anywhere are False in Python, and a rule only concludes on a True comparison,
so NaN bounds or literals never prune.

Float bounds cover the non-NaN values only (``bounds.py``). In Spark a NaN is above every
number and equal to itself, so a NaN row makes ``x > c``, ``x >= c``, ``x <> c`` and
``x NOT IN (...)`` TRUE and ``x < c``, ``x <= c``, ``x = c``, ``x IN (...)`` (non-NaN
``c``) FALSE: the first kind prunes on the max only with a proof that the file holds no
NaN (``nan_free``); the second kind prunes on bounds alone.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from typing import Any

from varlake.expr.bounds import all_null, nan_free, term_bounds
from varlake.expr.stats import FileStats
from varlake.expr.tree import Comparison, Literal, Term

ROWS_MIGHT_MATCH = True
ROWS_CANNOT_MATCH = False

FileFn = Callable[[FileStats], bool]


def might(stats: FileStats) -> bool:
    return ROWS_MIGHT_MATCH


def cannot(stats: FileStats) -> bool:
    return ROWS_CANNOT_MATCH


def _proven(stats: FileStats) -> bool:
    return True


def guarded(check: FileFn) -> FileFn:
    """Any failure on odd statistics (wrong types, garbage) means "might match"."""

    def leaf(stats: FileStats) -> bool:
        try:
            return check(stats)
        except Exception:  # noqa: BLE001 - soundness: unknown is never "cannot match"
            return ROWS_MIGHT_MATCH

    return leaf


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


class Interval:
    """``lower (<|<=) term (<|<=) upper`` on one term: =, <, <=, >, >=, <=> and BETWEEN."""

    __slots__ = ("term", "lower", "lower_inclusive", "upper", "upper_inclusive")

    def __init__(self, term: Term, lower: Any, lower_inclusive: bool, upper: Any, upper_inclusive: bool) -> None:
        self.term, self.lower, self.lower_inclusive = term, lower, lower_inclusive
        self.upper, self.upper_inclusive = upper, upper_inclusive

    @classmethod
    def of(cls, node: Comparison) -> Interval | None:
        if not isinstance(node.right, Literal) or isinstance(node.left, Literal):
            return None
        value = node.right.value
        if value is None or is_nan(value):
            return None
        op = node.op
        if op in ("=", "<=>"):
            return cls(node.left, value, True, value, True)
        if op in ("<", "<="):
            return cls(node.left, None, False, value, op == "<=")
        if op in (">", ">="):
            return cls(node.left, value, op == ">=", None, False)
        return None

    def intersect(self, other: Interval) -> Interval | None:
        """Tighter interval for ``self AND other`` on the same term (None if not comparable)."""
        if other.term != self.term:
            return None
        try:
            lower, lower_inc = _tighter(self.lower, self.lower_inclusive, other.lower, other.lower_inclusive, 1)
            upper, upper_inc = _tighter(self.upper, self.upper_inclusive, other.upper, other.upper_inclusive, -1)
        except TypeError:
            return None
        return Interval(self.term, lower, lower_inc, upper, upper_inc)

    def compile(self) -> FileFn:
        bounds, null = term_bounds(self.term), all_null(self.term)
        lower, lower_inc, upper, upper_inc = self.lower, self.lower_inclusive, self.upper, self.upper_inclusive
        if lower is not None and upper is not None:
            try:
                if lower > upper or (lower == upper and not (lower_inc and upper_inc)):
                    return cannot  # empty interval: no value satisfies it
            except TypeError:
                pass
        lower_prefix = lower if isinstance(lower, (str, bytes)) else None
        # A NaN row fails any upper bound, and passes any lower one (NaN > every number).
        no_nan = nan_free(self.term) if upper is None else None

        def check(stats: FileStats) -> bool:
            lo, hi, hi_prefix = bounds(stats)
            if upper is not None and lo is not None and (upper < lo or (upper == lo and not upper_inc)):
                return ROWS_CANNOT_MATCH
            if lower is not None and hi is not None and (no_nan is None or no_nan(stats)):
                if hi_prefix:
                    if lower_prefix is not None and lower_prefix[: len(hi)] > hi:
                        return ROWS_CANNOT_MATCH
                elif lower > hi or (lower == hi and not lower_inc):
                    return ROWS_CANNOT_MATCH
            return not null(stats)

        return guarded(check)


def _tighter(a: Any, a_inc: bool, b: Any, b_inc: bool, direction: int) -> tuple[Any, bool]:
    """The stricter of two bounds (direction 1: lower bounds, -1: upper bounds)."""
    if a is None:
        return b, b_inc
    if b is None:
        return a, a_inc
    if a == b:
        return a, a_inc and b_inc
    if (a > b) == (direction > 0):
        return a, a_inc
    return b, b_inc


def nulls_only(*terms: Term) -> FileFn:
    """A comparison is NULL (never TRUE) on a row where either side is NULL."""
    checks = [all_null(t) for t in terms if not isinstance(t, Literal)]
    return guarded(lambda stats: not any(check(stats) for check in checks))


def not_equal(term: Term, value: Any) -> FileFn:
    bounds, null, no_nan = term_bounds(term), all_null(term), nan_free(term)

    def check(stats: FileStats) -> bool:
        lo, hi, hi_prefix = bounds(stats)
        if not hi_prefix and lo is not None and hi is not None and lo == value and hi == value and no_nan(stats):
            return ROWS_CANNOT_MATCH  # every value equals the literal
        return not null(stats)

    return guarded(check)


def in_list(term: Term, values: list[Any]) -> FileFn:
    bounds, null = term_bounds(term), all_null(term)
    try:
        points = sorted(values)
    except TypeError:
        points = []
    if not points or any(is_nan(p) for p in points):
        return nulls_only(term)
    textual = isinstance(points[0], (str, bytes))

    def check(stats: FileStats) -> bool:
        lo, hi, hi_prefix = bounds(stats)
        index = 0 if lo is None else bisect_left(points, lo)
        if index == len(points):
            return ROWS_CANNOT_MATCH  # every point is below the minimum
        first = points[index]  # smallest candidate; larger ones fail the max test if it does
        if hi is not None:
            if hi_prefix:
                if textual and first[: len(hi)] > hi:
                    return ROWS_CANNOT_MATCH
            elif first > hi:
                return ROWS_CANNOT_MATCH
        return not null(stats)

    return guarded(check)


def not_in_list(term: Term, values: list[Any]) -> FileFn:
    bounds, null = term_bounds(term), all_null(term)
    # A NaN row passes NOT IN unless the list holds a NaN too (NaN = NaN in Spark).
    no_nan = _proven if any(is_nan(v) for v in values) else nan_free(term)

    def check(stats: FileStats) -> bool:
        lo, hi, hi_prefix = bounds(stats)
        if not hi_prefix and lo is not None and lo == hi and any(lo == v for v in values) and no_nan(stats):
            return ROWS_CANNOT_MATCH  # the only value in the file is excluded
        return not null(stats)

    return guarded(check)
