"""Visitor base class over predicate trees, plus the small structural visitors.

Like pyiceberg's ``BooleanExpressionVisitor``: ``visit`` walks a predicate post-order and
hands each node's already-visited children to the matching ``visit_*`` method.  Every
algorithm (binding, NOT removal, simplification, skipping, row evaluation) is one small
subclass, so no algorithm touches another's code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from functools import singledispatch
from typing import Generic, TypeVar

from varlake.errors import ExpressionError
from varlake.expr.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Call,
    Cast,
    Column,
    Comparison,
    Condition,
    In,
    IsNotNull,
    IsNull,
    Not,
    NotIn,
    Or,
    Predicate,
    Term,
    VariantGet,
)

T = TypeVar("T")


class PredicateVisitor(ABC, Generic[T]):
    """Post-order visitor; leaves receive the node, inner nodes their children's results.

    Every method is abstract: a visitor that forgets a node kind fails when it is built,
    not halfway through a walk.
    """

    @abstractmethod
    def visit_true(self) -> T:
        ...

    @abstractmethod
    def visit_false(self) -> T:
        ...

    @abstractmethod
    def visit_not(self, child: T) -> T:
        ...

    @abstractmethod
    def visit_and(self, left: T, right: T) -> T:
        ...

    @abstractmethod
    def visit_or(self, left: T, right: T) -> T:
        ...

    @abstractmethod
    def visit_is_null(self, node: IsNull) -> T:
        ...

    @abstractmethod
    def visit_is_not_null(self, node: IsNotNull) -> T:
        ...

    @abstractmethod
    def visit_comparison(self, node: Comparison) -> T:
        ...

    @abstractmethod
    def visit_in(self, node: In) -> T:
        ...

    @abstractmethod
    def visit_not_in(self, node: NotIn) -> T:
        ...


def visit(predicate: Predicate, visitor: PredicateVisitor[T]) -> T:
    """Apply ``visitor`` to ``predicate`` post-order."""
    try:
        return _visit(predicate, visitor)
    except RecursionError as exc:
        raise ExpressionError("predicate is nested too deeply to evaluate") from exc


@singledispatch
def _visit(predicate: Predicate, visitor: PredicateVisitor[T]) -> T:
    raise ExpressionError(f"not a predicate: {predicate!r}")


@_visit.register
def _(node: AlwaysTrue, visitor: PredicateVisitor[T]) -> T:
    return visitor.visit_true()


@_visit.register
def _(node: AlwaysFalse, visitor: PredicateVisitor[T]) -> T:
    return visitor.visit_false()


@_visit.register
def _(node: Not, visitor: PredicateVisitor[T]) -> T:
    return visitor.visit_not(_visit(node.child, visitor))


@_visit.register
def _(node: And, visitor: PredicateVisitor[T]) -> T:
    return visitor.visit_and(_visit(node.left, visitor), _visit(node.right, visitor))


@_visit.register
def _(node: Or, visitor: PredicateVisitor[T]) -> T:
    return visitor.visit_or(_visit(node.left, visitor), _visit(node.right, visitor))


@_visit.register
def _(node: IsNull, visitor: PredicateVisitor[T]) -> T:
    return visitor.visit_is_null(node)


@_visit.register
def _(node: IsNotNull, visitor: PredicateVisitor[T]) -> T:
    return visitor.visit_is_not_null(node)


@_visit.register
def _(node: Comparison, visitor: PredicateVisitor[T]) -> T:
    return visitor.visit_comparison(node)


@_visit.register
def _(node: In, visitor: PredicateVisitor[T]) -> T:
    return visitor.visit_in(node)


@_visit.register
def _(node: NotIn, visitor: PredicateVisitor[T]) -> T:
    return visitor.visit_not_in(node)


class _RewriteNot(PredicateVisitor[Predicate]):
    """Pushes NOT to the leaves using exact three-valued negation (``Predicate.negate``)."""

    def visit_true(self) -> Predicate:
        return AlwaysTrue()

    def visit_false(self) -> Predicate:
        return AlwaysFalse()

    def visit_not(self, child: Predicate) -> Predicate:
        return child.negate()

    def visit_and(self, left: Predicate, right: Predicate) -> Predicate:
        return And(left, right)

    def visit_or(self, left: Predicate, right: Predicate) -> Predicate:
        return Or(left, right)

    def visit_is_null(self, node: IsNull) -> Predicate:
        return node

    def visit_is_not_null(self, node: IsNotNull) -> Predicate:
        return node

    def visit_comparison(self, node: Comparison) -> Predicate:
        return node

    def visit_in(self, node: In) -> Predicate:
        return node

    def visit_not_in(self, node: NotIn) -> Predicate:
        return node


def rewrite_not(predicate: Predicate) -> Predicate:
    """Equivalent predicate (same TRUE/FALSE/NULL on every row) with NOT only left above
    leaves that have no negated form (``a <=> b`` between two non-literals)."""
    return visit(predicate, _RewriteNot())


def term_columns(term: Term) -> list[Column]:
    """The columns a term reads (a Variant path reads its Variant column)."""
    if isinstance(term, Column):
        return [term]
    if isinstance(term, VariantGet):
        return [term.column]
    if isinstance(term, Cast):
        return term_columns(term.term)
    if isinstance(term, Call):
        return [c for arg in term.args for c in term_columns(arg)]
    if isinstance(term, Condition):
        return sorted(referenced_columns(term.predicate), key=lambda c: c.path)
    return []


def leaf_terms(node: Predicate) -> list[Term]:
    if isinstance(node, Comparison):
        return [node.left, node.right]
    if isinstance(node, (IsNull, IsNotNull, In, NotIn)):
        return [node.term]
    return []


class _References(PredicateVisitor[frozenset[Column]]):
    def visit_true(self) -> frozenset[Column]:
        return frozenset()

    visit_false = visit_true

    def visit_not(self, child: frozenset[Column]) -> frozenset[Column]:
        return child

    def visit_and(self, left: frozenset[Column], right: frozenset[Column]) -> frozenset[Column]:
        return left | right

    visit_or = visit_and

    def _leaf(self, node: Predicate) -> frozenset[Column]:
        return frozenset(c for t in leaf_terms(node) for c in term_columns(t))

    visit_is_null = visit_is_not_null = visit_comparison = visit_in = visit_not_in = _leaf  # type: ignore[assignment]


def referenced_columns(predicate: Predicate) -> frozenset[Column]:
    """Every column a predicate reads, e.g. to know which statistics a scan needs."""
    return visit(predicate, _References())


def term_variant_gets(term: Term) -> list[VariantGet]:
    """The ``variant_get``s a term evaluates, at any depth (casts, calls, conditions)."""
    if isinstance(term, VariantGet):
        return [term]
    if isinstance(term, Cast):
        return term_variant_gets(term.term)
    if isinstance(term, Call):
        return [g for arg in term.args for g in term_variant_gets(arg)]
    if isinstance(term, Condition):
        return list(variant_gets(term.predicate))
    return []


class _VariantGets(_References):
    def _leaf(self, node: Predicate) -> frozenset[VariantGet]:  # type: ignore[override]
        return frozenset(g for t in leaf_terms(node) for g in term_variant_gets(t))

    visit_is_null = visit_is_not_null = visit_comparison = visit_in = visit_not_in = _leaf  # type: ignore[assignment]


def variant_gets(predicate: Predicate) -> frozenset[VariantGet]:
    """Every ``variant_get`` a predicate evaluates."""
    return visit(predicate, _VariantGets())  # type: ignore[arg-type]
