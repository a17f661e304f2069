"""What the analysis of a query records (``Site``, ``TableUsage``, ``QueryAnalysis``) and
which table a column of a query scope reads (``resolve``: only where that is certain).

A scope (``sqlglot.optimizer.scope``) selects from sources by alias; a ``LATERAL VIEW``
reads the sources before it. A column resolves to one of the query's tables when it is
qualified by that table's alias, or when exactly one visible source has a column of that
name and every source can tell (a subquery with ``*`` or unnamed generator columns cannot).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from varlake.delta.schema import StructType
from varlake.expr import Predicate
from varlake.spark.reading.element_fields import ElementFields
from varlake.spark.reading.placeholders import view_name
from varlake.spark.reading.planner import PathUse

__all__ = ["QueryAnalysis", "Site", "TableUsage", "is_lateral", "our_sources", "reference", "resolve", "visible"]


@dataclass
class Site:
    """One rewritable expression: ``node`` reads ``use`` of table ``table`` via ``qualifier``."""

    node: exp.Expr
    table: str
    qualifier: str | None
    use: PathUse
    #: an array of structs the query explodes and reads field by field (``element_fields``)
    fields: ElementFields | None = None


@dataclass
class TableUsage:
    """What the query needs from one table."""

    name: str
    schema: StructType
    uses: list[PathUse] = field(default_factory=list)
    whole_variant: bool = False
    reasons: list[str] = field(default_factory=list)
    filters: list[list[Predicate] | None] = field(default_factory=list)

    @property
    def view(self) -> str:
        return view_name(self.name)

    def need_whole(self, why: str) -> None:
        self.whole_variant = True
        if why not in self.reasons:
            self.reasons.append(why)


@dataclass
class QueryAnalysis:
    """The query with views in place of placeholders, and what it needs per table."""

    text: str
    tables: dict[str, TableUsage]
    tree: exp.Expr | None
    sites: list[Site]
    note: str | None = None
    names_known: bool = False


def is_lateral(scope: Scope) -> bool:
    return isinstance(scope.expression, exp.Lateral)


def visible(scope: Scope) -> dict[str, exp.Table | Scope]:
    """Alias -> source of what a scope's columns may read: the sources a SELECT selects
    from, or for a ``LATERAL VIEW`` the sources before it (``v`` in ``explode(v:a)``)."""
    if is_lateral(scope):
        return dict(scope.lateral_sources)
    return {alias: source for alias, (_, source) in scope.selected_sources.items()}


def our_sources(scope: Scope, by_view: Mapping[str, TableUsage]) -> dict[str, TableUsage]:
    """Alias -> table usage for the placeholder tables this scope selects from."""
    out: dict[str, TableUsage] = {}
    for alias, source in visible(scope).items():
        if isinstance(source, exp.Table) and not source.args.get("db") and source.name in by_view:
            out[alias] = by_view[source.name]
    return out


def _source_has(scope: Scope, alias: str, name: str, ours: Mapping[str, TableUsage]) -> bool | None:
    """Whether the source under ``alias`` has a column ``name`` (None: cannot tell)."""
    if alias in ours:
        return name.lower() in {n.lower() for n in ours[alias].schema.names}
    source = visible(scope)[alias]
    if isinstance(source, Scope) and isinstance(source.expression, exp.Lateral):
        alias_node = source.expression.args.get("alias")
        names = [c.name.lower() for c in alias_node.columns] if isinstance(alias_node, exp.TableAlias) else []
        return name.lower() in names if names else None  # unnamed generator columns: cannot tell
    if isinstance(source, Scope) and isinstance(source.expression, exp.Query):
        query = source.expression
        if isinstance(query, exp.Select) and any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star) for e in query.expressions):
            return None
        return name.lower() in {n.lower() for n in query.named_selects}
    return None


def reference(column: exp.Column) -> tuple[list[str], exp.Expr]:
    """The dotted name parts of a column reference (``t.s.v`` -> t, s, v, following field
    accesses ``.x`` above it) and the outermost node of the reference."""
    parts = [p.name for p in column.parts]
    top: exp.Expr = column
    while isinstance(top.parent, exp.Dot) and top.parent.this is top and isinstance(top.parent.expression, exp.Identifier):
        top = top.parent
        parts.append(top.expression.name)
    return parts, top


def resolve(column: exp.Column, scope: Scope, ours: Mapping[str, TableUsage]) -> tuple[str, tuple[str, ...], exp.Expr] | None:
    """(alias of our table, column path in its schema, outermost node) of a reference that
    certainly reads one of our tables, else None."""
    parts, top = reference(column)
    sources = visible(scope)
    if len(parts) > 1 and parts[0] in sources:
        return (parts[0], tuple(parts[1:]), top) if parts[0] in ours else None
    owners = []
    for alias in sources:
        has = _source_has(scope, alias, parts[0], ours)
        if has is None:
            return None
        if has:
            owners.append(alias)
    if len(owners) == 1 and owners[0] in ours:
        return owners[0], tuple(parts), top
    return None
