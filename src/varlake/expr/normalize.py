"""Normal form for pruning: no NOT, constants folded, NULL-literal comparisons made FALSE.

After ``rewrite_not`` a predicate is monotone (AND/OR over leaves), so a leaf that can
only be NULL may be replaced by FALSE without changing which rows are kept.  That is
*not* true under NOT, which is why folding only ever runs after NOT has been removed.
"""

from __future__ import annotations

from varlake.expr.rows import compare_values
from varlake.expr.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Comparison,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    NotIn,
    Or,
    Predicate,
)
from varlake.expr.visitors import PredicateVisitor, rewrite_not, visit


def _const(value: bool | None) -> Predicate:
    return AlwaysTrue() if value is True else AlwaysFalse()


class _Simplify(PredicateVisitor[Predicate]):
    def visit_true(self) -> Predicate:
        return AlwaysTrue()

    def visit_false(self) -> Predicate:
        return AlwaysFalse()

    def visit_not(self, child: Predicate) -> Predicate:
        # only two-valued leaves (a <=> b) keep a NOT after rewrite_not, so folding is exact
        if isinstance(child, (AlwaysTrue, AlwaysFalse)):
            return child.negate()
        return Not(child)

    def visit_and(self, left: Predicate, right: Predicate) -> Predicate:
        if isinstance(left, AlwaysFalse) or isinstance(right, AlwaysFalse):
            return AlwaysFalse()
        if isinstance(left, AlwaysTrue):
            return right
        if isinstance(right, AlwaysTrue):
            return left
        return And(left, right)

    def visit_or(self, left: Predicate, right: Predicate) -> Predicate:
        if isinstance(left, AlwaysTrue) or isinstance(right, AlwaysTrue):
            return AlwaysTrue()
        if isinstance(left, AlwaysFalse):
            return right
        if isinstance(right, AlwaysFalse):
            return left
        return Or(left, right)

    def visit_is_null(self, node: IsNull) -> Predicate:
        if isinstance(node.term, Literal):
            return _const(node.term.value is None)
        return node

    def visit_is_not_null(self, node: IsNotNull) -> Predicate:
        if isinstance(node.term, Literal):
            return _const(node.term.value is not None)
        return node

    def visit_comparison(self, node: Comparison) -> Predicate:
        left, right = node.left, node.right
        if isinstance(left, Literal) and isinstance(right, Literal):
            return _const(compare_values(node.op, left.value, right.value))
        if isinstance(right, Literal) and right.value is None:
            return IsNull(left) if node.op == "<=>" else AlwaysFalse()
        return node

    def visit_in(self, node: In) -> Predicate:
        values = tuple(v for v in node.values if v.value is not None)
        if not values:
            return AlwaysFalse()
        if isinstance(node.term, Literal):
            return _const(any(compare_values("=", node.term.value, v.value) for v in values))
        return In(node.term, values)

    def visit_not_in(self, node: NotIn) -> Predicate:
        if any(v.value is None for v in node.values):
            return AlwaysFalse()  # x NOT IN (.., NULL) is FALSE or NULL, never TRUE
        if isinstance(node.term, Literal):
            if node.term.value is None:
                return AlwaysFalse()
            return _const(not any(compare_values("=", node.term.value, v.value) for v in node.values))
        return node


def normalize(predicate: Predicate) -> Predicate:
    """NOT-free, constant-folded form that keeps exactly the same rows as ``predicate``."""
    return visit(rewrite_not(predicate), _Simplify())
