"""``SELECT count(*) FROM {t} [WHERE ...]`` answered from the Delta log (``count_query``,
``count_from_log``): no file is read when the statistics settle the count."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Mapping

from sqlglot import exp
from sqlglot.errors import SqlglotError

from varlake.errors import ExpressionError, InvalidPathError
from varlake.expr import Predicate
from varlake.expr.sql import predicate_of
from varlake.semantics.types import backquote
from varlake.spark.reading.placeholders import view_name
from varlake.spark.reading.scopes import QueryAnalysis

__all__ = ["CountQuery", "count_from_log", "count_query"]


@dataclass(frozen=True)
class CountQuery:
    """``SELECT count(*) [AS a], ... FROM {t} [WHERE ...]``: the table, Spark's output names
    and the WHERE (a predicate over the table's columns) if any."""

    table: str
    names: tuple[str, ...]
    where: Predicate | None


def _counts_rows(node: exp.Expr) -> bool:
    """``count(*)`` or ``count(1)`` (Spark names both ``count(1)``)."""
    if not isinstance(node, exp.Count) or node.args.get("big_int") is False:
        return False
    arg = node.this
    return isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and not arg.is_string and arg.this == "1")


def count_query(analysis: QueryAnalysis) -> CountQuery | None:
    """The query as a ``CountQuery`` if it is exactly one (no join, grouping, DISTINCT,
    HAVING, ORDER BY, LIMIT, window or subquery; a WHERE read whole, no conjunct left
    out), else None -- the shape Delta's ``OptimizeMetadataOnlyDeltaQuery`` answers from
    the log."""
    tree = analysis.tree
    if not isinstance(tree, exp.Select) or not tree.expressions:
        return None
    for arg in ("joins", "group", "having", "order", "limit", "offset", "distinct", "qualify", "windows", "with", "laterals", "pivots", "into", "kind", "hint"):
        if tree.args.get(arg):
            return None
    source = tree.args.get("from") or tree.args.get("from_")
    table = source.this if isinstance(source, exp.From) else None
    if not isinstance(table, exp.Table) or table.args.get("db") or table.args.get("joins") or table.args.get("pivots"):
        return None
    by_view = {view_name(name): name for name in analysis.tables}
    name = by_view.get(table.name)
    if name is None or len(analysis.tables) != 1:
        return None
    names = []
    for projection in tree.expressions:
        alias = projection.alias if isinstance(projection, exp.Alias) else None
        inner = projection.this if isinstance(projection, exp.Alias) else projection
        if not _counts_rows(inner):
            return None
        names.append(alias or "count(1)")
    where = tree.args.get("where")
    predicate = None
    if where is not None:
        if any(isinstance(n, (exp.Query, exp.Subquery, exp.Window, exp.AggFunc)) for n in where.walk()):
            return None
        if any(c.table for c in where.find_all(exp.Column)):
            return None  # a qualified name: the alias or a struct? Spark decides; count the rows
        try:
            predicate = predicate_of(where.this)
        except (ExpressionError, SqlglotError, ValueError, InvalidPathError):
            return None
    return CountQuery(name, tuple(names), predicate)


def count_from_log(spark: Any, analysis: QueryAnalysis, plans: Mapping[str, Any], tz: str) -> Any:
    """The answer to a ``CountQuery`` from the log (``planner.metadata_count``) as a
    one-row DataFrame with Spark's output names (``BIGINT``, never NULL, as ``count``
    gives), or None to run the query."""
    from varlake.spark.reading.planner import metadata_count

    query = count_query(analysis)
    if query is None:
        return None
    n = metadata_count(plans[query.table], query.where, tz)
    if n is None:
        return None
    return spark.sql("SELECT " + ", ".join(f"CAST({n} AS BIGINT) AS {backquote(name)}" for name in query.names))
