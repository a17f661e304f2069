"""A file's residual filter (the scan filter with its partition values folded in), and the
rules by which a reader evaluates it so that it raises exactly where Spark does.

Every row of a file has the same partition values, so each leaf that reads partition
columns only is a constant there. Folding replaces such leaves by TRUE or FALSE and
simplifies AND/OR/NOT around them the way Spark's optimizer does for a read whose
partition columns are literals (``x OR TRUE`` is TRUE, ``x AND FALSE`` is FALSE, on
either side; ``(a AND b) OR a`` is ``a``): so a cast that could raise is evaluated on a
file's rows exactly when Spark would evaluate it. A leaf whose value is NULL, or which fails to evaluate, stays
in place and is evaluated per row. ``row_group_guards`` names the conjuncts by which a
reader may leave a row group unevaluated, ``eager_terms`` the extractions it evaluates on
every row it reads, ``filter_steps`` the order in which a row's checks run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from varlake.errors import VarlakeError
from varlake.expr import AlwaysFalse, AlwaysTrue, And, Not, Or, Predicate, PredicateVisitor, RowEvaluator, visit
from varlake.expr.partition import partition_row
from varlake.expr.raising import only_plain_terms, possibly_raising_terms, repeated_raising_terms
from varlake.expr.tree import Cast, Column, Comparison, In, IsNotNull, IsNull, NotIn, VariantGet
from varlake.expr.visitors import leaf_terms, referenced_columns, rewrite_not, term_columns

__all__ = ["Step", "eager_terms", "filter_steps", "fold_partitions", "row_group_guards"]

_TRUE, _FALSE = AlwaysTrue(), AlwaysFalse()


class _Fold(PredicateVisitor[Predicate]):
    def __init__(self, values: Mapping[str, Any], types: Mapping[str, str], tz: str) -> None:
        self.values = values
        self.types = types
        self.tz = tz

    def visit_true(self) -> Predicate:
        return _TRUE

    def visit_false(self) -> Predicate:
        return _FALSE

    def visit_not(self, child: Predicate) -> Predicate:
        if isinstance(child, (AlwaysTrue, AlwaysFalse)):
            return child.negate()
        return Not(child)

    def visit_and(self, left: Predicate, right: Predicate) -> Predicate:
        if isinstance(left, AlwaysFalse) or isinstance(right, AlwaysFalse):
            return _FALSE
        if isinstance(left, AlwaysTrue):
            return right
        if isinstance(right, AlwaysTrue):
            return left
        return _factor(left, right, Or, And)

    def visit_or(self, left: Predicate, right: Predicate) -> Predicate:
        if isinstance(left, AlwaysTrue) or isinstance(right, AlwaysTrue):
            return _TRUE
        if isinstance(left, AlwaysFalse):
            return right
        if isinstance(right, AlwaysFalse):
            return left
        return _factor(left, right, And, Or)

    def _leaf(self, node: Predicate) -> Predicate:
        columns = [c for t in leaf_terms(node) for c in term_columns(t)]
        if not columns or not all(len(c.path) == 1 and c.path[0] in self.types for c in columns):
            return node
        names = {c.path[0]: self.types[c.path[0]] for c in columns}
        try:
            value = RowEvaluator(node).evaluate(partition_row(self.values, names, self.tz))
        except (VarlakeError, KeyError, ValueError, TypeError, ArithmeticError):
            return node  # evaluated per row, where it raises if the row is reached
        if value is True:
            return _TRUE
        if value is False:
            return _FALSE
        return node

    def visit_is_null(self, node: IsNull) -> Predicate:
        return self._leaf(node)

    def visit_is_not_null(self, node: IsNotNull) -> Predicate:
        return self._leaf(node)

    def visit_comparison(self, node: Comparison) -> Predicate:
        return self._leaf(node)

    def visit_in(self, node: In) -> Predicate:
        return self._leaf(node)

    def visit_not_in(self, node: NotIn) -> Predicate:
        return self._leaf(node)


def _split(node: Predicate, kind: type) -> list[Predicate]:
    if isinstance(node, kind):
        return _split(node.left, kind) + _split(node.right, kind)  # type: ignore[attr-defined]
    return [node]


def _join(parts: list[Predicate], kind: type) -> Predicate:
    out = parts[0]
    for part in parts[1:]:
        out = kind(out, part)
    return out


def _factor(left: Predicate, right: Predicate, inner: type, outer: type) -> Predicate:
    """``left <outer> right`` with Spark's common-factor rule: ``(a OR b) AND (a OR c)`` is
    ``a OR (b AND c)``, ``(a AND b) OR a`` is ``a`` (so ``b`` is never evaluated), and the
    same with AND and OR swapped."""
    lhs, rhs = _split(left, inner), _split(right, inner)
    common = [e for e in lhs if e in rhs]
    if not common:
        return outer(left, right)
    ldiff = [e for e in lhs if e not in common]
    rdiff = [e for e in rhs if e not in common]
    if not ldiff or not rdiff:
        return _join(common, inner)
    return _join([*common, outer(_join(ldiff, inner), _join(rdiff, inner))], inner)


def fold_partitions(
    predicate: Predicate, partition_values: Mapping[str, Any], partition_types: Mapping[str, str], tz: str = "UTC"
) -> Predicate:
    """``predicate`` (bound) on one file: partition-only leaves evaluated on its partition
    values (as Delta serialises them, or typed) and the tree simplified around them, and
    common factors of AND / OR taken out as Spark's optimizer does (``_factor``)."""
    return visit(predicate, _Fold(partition_values, partition_types, tz))


def _conjuncts(predicate: Predicate) -> list[Predicate]:
    out, stack = [], [predicate]
    while stack:
        node = stack.pop()
        if isinstance(node, And):
            stack.extend((node.right, node.left))
        else:
            out.append(node)
    return out


def row_group_guards(residual: Predicate) -> tuple[Predicate, ...]:
    """The top-level conjuncts of ``residual`` (NOT pushed down, so ``NOT (a OR b)`` is two)
    over plain columns, when the residual holds a cast that could raise (else none).

    A Parquet reader checks such conjuncts against a row group's statistics and dictionary
    pages (Spark's does) and does not evaluate the filter on a row group in which no row
    can satisfy one of them: a cast that would fail there never runs. Every engine follows
    that rule -- the planner skips files whose statistics exclude a guard, the pyarrow
    reader drops row groups where no row satisfies one -- so that whether a query raises
    does not depend on the engine.
    """
    if not possibly_raising_terms(residual):
        return ()
    return tuple(c for c in _conjuncts(rewrite_not(residual)) if only_plain_terms(c))


def eager_terms(residual: Predicate) -> tuple[VariantGet, ...]:
    """The typed ``variant_get`` calls of ``residual`` (function form, not ``try_``) that a
    reader evaluates on every row of the row groups it reads, before the filter: Spark
    extracts them while scanning, so one value that does not convert raises even on a row
    the rest of the filter would have rejected (``VariantGet.eager``)."""
    return tuple(
        t for t in possibly_raising_terms(residual) if isinstance(t, VariantGet) and t.eager and t.target != "variant"
    )


# --- the order rows are checked in ------------------------------------------------------------------------------

#: One check of a row: ``("not null", column, ())`` or ``("predicate", conjunct, terms)``,
#: ``terms`` being the casts evaluated first on every row that reaches the conjunct.
Step = tuple[str, Any, tuple[Any, ...]]


def _null_intolerant_columns(node: Any) -> list[str]:
    """The top-level columns under ``node`` through expressions that are NULL whenever their
    input is (Spark's ``scanNullIntolerantAttribute``): comparisons other than ``<=>``,
    NOT, casts, ``variant_get`` and struct fields; not IN, IS NULL, AND, OR."""
    if isinstance(node, Column):
        return [node.path[0]]
    if isinstance(node, Cast):
        return _null_intolerant_columns(node.term)
    if isinstance(node, VariantGet):
        return [node.column.path[0]]
    if isinstance(node, Comparison) and node.op != "<=>":
        return _null_intolerant_columns(node.left) + _null_intolerant_columns(node.right)
    if isinstance(node, Not):
        return _null_intolerant_columns(node.child)
    if isinstance(node, IsNotNull):
        return _null_intolerant_columns(node.term)
    return []


def filter_steps(residual: Predicate) -> tuple[Step, ...]:
    """The checks a row goes through, in order, as Spark's filter runs them; a row is kept
    when it passes every one (exactly the rows the residual keeps).

    Spark infers ``IS NOT NULL`` for every column a top-level conjunct reads through
    NULL-intolerant expressions, and tests it just before the first conjunct that reads
    the column; the conjuncts follow in written order (NOT pushed down, ``NOT (a OR b)``
    split in two); an ``IS NOT NULL`` conjunct on a Variant path or a cast goes last. So
    a row whose Variant is NULL never reaches a failing cast of another column after it.
    A cast that occurs twice in one conjunct is computed once, before the conjunct
    (Spark's common subexpression elimination), so it is evaluated on every row that
    reaches the conjunct, even where AND / OR would have skipped it.
    """
    conjuncts = _conjuncts(rewrite_not(residual))
    not_null: dict[str, None] = {}
    for c in conjuncts:
        not_null.update(dict.fromkeys(_null_intolerant_columns(c)))
    late: list[Predicate] = []
    others: list[Predicate] = []
    for c in conjuncts:
        if isinstance(c, IsNotNull) and _null_intolerant_columns(c.term):
            if not isinstance(c.term, Column):
                late.append(c)  # tested after every other conjunct
            continue  # a column's own IS NOT NULL: in ``not_null``
        others.append(c)
    steps: list[Step] = []
    tested: set[str] = set()
    for c in others:
        for name in sorted({col.path[0] for col in referenced_columns(c)}):
            if name in not_null and name not in tested:
                steps.append(("not null", name, ()))
                tested.add(name)
        steps.append(("predicate", c, repeated_raising_terms(c)))
    steps += [("not null", name, ()) for name in not_null if name not in tested]
    steps += [("predicate", c, ()) for c in late]
    return tuple(steps)
