"""Sound data skipping: may any row of a file satisfy the predicate, given its stats?

``ROWS_CANNOT_MATCH`` is answered only with proof; missing, partial or odd statistics
always give ``ROWS_MIGHT_MATCH``.  The predicate is bound, put in NOT-free normal form
and compiled once into closures; evaluating a file is a few dict look-ups and
comparisons, with no state kept between calls.

Why it is sound: after ``normalize`` the predicate is AND/OR over leaves, and a row
satisfying it satisfies a set of leaves that makes the tree TRUE, so it suffices that
each leaf answers "cannot match" only when no row in the file makes that leaf TRUE.
Partition-only leaves are evaluated exactly on the file's partition values.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, TypeVar

from varlake.errors import ExpressionError
from varlake.expr.binding import require_bound
from varlake.expr.bounds import all_null, no_null
from varlake.expr.leaf_rules import (
    ROWS_CANNOT_MATCH,
    ROWS_MIGHT_MATCH,
    FileFn,
    Interval,
    cannot,
    guarded,
    in_list,
    is_nan,
    might,
    not_equal,
    not_in_list,
    nulls_only,
)
from varlake.expr.normalize import normalize
from varlake.expr.partition import partition_row
from varlake.expr.rows import RowEvaluator
from varlake.expr.stats import FileStats
from varlake.expr.tree import (
    Comparison,
    In,
    IsNotNull,
    IsNull,
    Literal,
    NotIn,
    Predicate,
)
from varlake.expr.visitors import PredicateVisitor, leaf_terms, term_columns, visit

F = TypeVar("F")


class _Compiler(PredicateVisitor[Any]):
    """Compiles a normalized predicate to a ``FileStats -> bool`` closure.

    Intermediate results may be ``Interval`` objects so that ``a >= 10 AND a <= 20``
    becomes one range check with one statistics look-up.
    """

    def __init__(self, partitions: Mapping[str, str], tz: str) -> None:
        self.partitions = partitions
        self.tz = tz

    def fn(self, result: Any) -> FileFn:
        return result.compile() if isinstance(result, Interval) else result

    def visit_true(self) -> Any:
        return might

    def visit_false(self) -> Any:
        return cannot

    def visit_not(self, child: Any) -> Any:
        return might  # only "a <=> b" between two non-literals keeps a NOT

    def visit_and(self, left: Any, right: Any) -> Any:
        if isinstance(left, Interval) and isinstance(right, Interval):
            merged = left.intersect(right)
            if merged is not None:
                return merged
        first, second = self.fn(left), self.fn(right)
        if first is cannot or second is cannot:
            return cannot
        if first is might:
            return second
        if second is might:
            return first
        return lambda stats: first(stats) and second(stats)

    def visit_or(self, left: Any, right: Any) -> Any:
        first, second = self.fn(left), self.fn(right)
        if first is might or second is might:
            return might
        if first is cannot:
            return second
        if second is cannot:
            return first
        return lambda stats: first(stats) or second(stats)

    # --- leaves ----------------------------------------------------------------------

    def partition_only(self, node: Predicate) -> FileFn | None:
        """Exact evaluation when every column the leaf reads is a partition column."""
        columns = [c for t in leaf_terms(node) for c in term_columns(t)]
        if not columns or not all(len(c.path) == 1 and c.path[0] in self.partitions for c in columns):
            return None  # mixed leaves fall back to statistics (partition columns have none)
        names = {c.path[0]: self.partitions[c.path[0]] for c in columns}
        evaluate, tz = RowEvaluator(node).evaluate, self.tz

        def exact(stats: FileStats) -> bool:
            return evaluate(partition_row(stats.partition_values, names, tz)) is True

        return guarded(exact)

    def visit_is_null(self, node: IsNull) -> Any:
        exact = self.partition_only(node)
        if exact is not None:
            return exact
        never_null = no_null(node.term)
        return guarded(lambda stats: not never_null(stats))

    def visit_is_not_null(self, node: IsNotNull) -> Any:
        exact = self.partition_only(node)
        if exact is not None:
            return exact
        null = all_null(node.term)
        return guarded(lambda stats: not null(stats))

    def visit_comparison(self, node: Comparison) -> Any:
        exact = self.partition_only(node)
        if exact is not None:
            return exact
        interval = Interval.of(node)
        if interval is not None:
            return interval
        if isinstance(node.right, Literal):
            if node.op == "<>":
                return not_equal(node.left, node.right.value)
            return nulls_only(node.left)
        if node.op == "<=>":
            return might
        return nulls_only(node.left, node.right)

    def visit_in(self, node: In) -> Any:
        exact = self.partition_only(node)
        if exact is not None:
            return exact
        values = [v.value for v in node.values if v.value is not None]
        if len(values) == 1 and not is_nan(values[0]):
            return Interval(node.term, values[0], True, values[0], True)
        return in_list(node.term, values)

    def visit_not_in(self, node: NotIn) -> Any:
        exact = self.partition_only(node)
        if exact is not None:
            return exact
        return not_in_list(node.term, [v.value for v in node.values])


class SkippingEvaluator:
    """Answers ROWS_MIGHT_MATCH / ROWS_CANNOT_MATCH per file for one bound predicate.

    ``partition_columns`` maps each top-level partition column to its type; their values
    come from ``FileStats.partition_values``.  Build once per scan and reuse.
    """

    __slots__ = ("predicate", "normalized", "_fn")

    def __init__(
        self,
        predicate: Predicate,
        partition_columns: Mapping[str, str] | Collection[str] = (),
        *,
        schema: Mapping[tuple[str, ...], str] | None = None,
        session_tz: str = "UTC",
    ) -> None:
        require_bound(predicate)
        self.predicate = predicate
        self.normalized = normalize(predicate)
        compiler = _Compiler(_partition_types(partition_columns, schema), session_tz)
        self._fn = _with_empty_check(compiler.fn(visit(self.normalized, compiler)))

    def might_match(self, stats: FileStats) -> bool:
        return self._fn(stats)

    __call__ = might_match

    def filter(self, files: Iterable[F], stats_of: Callable[[F], FileStats]) -> list[F]:
        """The files that might hold a matching row."""
        fn = self._fn
        return [f for f in files if fn(stats_of(f))]


def _with_empty_check(fn: FileFn) -> FileFn:
    if fn is cannot:
        return fn

    def evaluate(stats: FileStats) -> bool:
        if stats.num_records == 0:
            return ROWS_CANNOT_MATCH  # an empty file holds no matching row
        return fn(stats)

    return evaluate


def _partition_types(
    columns: Mapping[str, str] | Collection[str], schema: Mapping[tuple[str, ...], str] | None
) -> dict[str, str]:
    if isinstance(columns, Mapping):
        return dict(columns)
    types: dict[str, str] = {}
    for name in columns:
        if schema is None or (name,) not in schema:
            raise ExpressionError(f"partition column {name!r}: its type is unknown (pass a schema or a mapping)")
        types[name] = schema[(name,)]
    return types


__all__ = ["ROWS_CANNOT_MATCH", "ROWS_MIGHT_MATCH", "FileFn", "SkippingEvaluator"]
