"""The WHERE conjuncts of a query scope that read only one table's columns, as varlake
predicates for file skipping (``skipping_conjuncts``): only in scopes without outer, semi or
anti joins, so skipping never changes a join. Each conjunct's sqlglot tree, its columns
unqualified, becomes a predicate directly (``varlake.expr.sql.predicate_of``)."""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope

from varlake.errors import ExpressionError
from varlake.expr import Predicate
from varlake.expr.sql import predicate_of
from varlake.spark.reading.scopes import TableUsage, resolve

__all__ = ["skipping_conjuncts"]


def _column_expr(path: tuple[str, ...]) -> exp.Expr:
    """An unqualified reference to a column path (``s.v`` reads field ``v`` of struct ``s``)."""
    node: exp.Expr = exp.column(path[0], quoted=True)
    for name in path[1:]:
        node = exp.Dot(this=node, expression=exp.to_identifier(name, quoted=True))
    return node


def skipping_conjuncts(scope: Scope, alias: str, ours: Mapping[str, TableUsage]) -> list[Predicate] | None:
    """WHERE conjuncts that read only ``alias``'s columns, as predicates (None: none apply)."""
    select = scope.expression
    if not isinstance(select, exp.Select):
        return None
    for join in select.args.get("joins") or []:
        if join.side or (join.kind or "").upper() in ("SEMI", "ANTI", "OUTER"):
            return None  # an outer side may be padded with NULLs that a skipped file would change
    where = select.args.get("where")
    if where is None:
        return None
    parts = where.this.flatten() if isinstance(where.this, exp.And) else [where.this]
    out: list[Predicate] = []
    for part in parts:
        if any(isinstance(n, exp.Query) for n in part.walk()):
            continue
        copy = part.copy()
        columns = list(copy.find_all(exp.Column))
        resolved = [resolve(c, scope, ours) for c in columns]
        if not columns or any(r is None or r[0] != alias for r in resolved):
            continue
        for r in resolved:
            assert r is not None
            _, path, top = r
            if top is copy:
                copy = _column_expr(path)
            else:
                top.replace(_column_expr(path))
        try:
            out.append(predicate_of(copy))
        except (ExpressionError, SqlglotError, ValueError):
            continue
    return out or None
