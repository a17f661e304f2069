"""The SQL side of the Spark reader: find Variant path uses in a query (sqlglot).

A query names tables as ``{name}`` placeholders. ``analyze`` replaces each by a view name
and walks the query scope by scope (``sqlglot.optimizer.scope``) to find, per table:

* *sites*: expressions that read one Variant path as a primitive type, or as a struct or
  array of such (``planner.nested_target``; maps fall back) --
  ``v:a.b::int``, ``CAST(v:a AS BIGINT)``, ``TRY_CAST(...)``, ``variant_get(v, '$.a',
  'int')``, ``try_variant_get(...)``, ``CAST(variant_get(v, '$.a') AS ...)``,
  ``variant_get(v, '$.items', 'array<struct<q: double>>')`` -- or test it for NULL
  (``v:a IS NULL``); the Variant may be a top-level column or a struct field
  (``s.v:a::int``), qualified by a table alias or not;
* whether the Variant column is needed whole (``SELECT *``, ``v`` itself, ``to_json(v)``,
  an uncast ``v:a``, a struct holding a Variant, or any reference it cannot resolve for
  sure: then that table is simply read as Variant and none of its expressions change);
* the WHERE conjuncts that read only that table, as varlake predicates for file skipping
  (only in scopes without outer/semi/anti joins, so skipping never changes a join).

``rewrite`` (``rewrite.py``) then routes the sites through the derived columns of each
table's view. The parts: ``placeholders`` (view and derived column names), ``scopes`` (what
an analysis records, which table a column reads), ``skip_filters`` (the WHERE conjuncts as
predicates), ``rewrite`` and ``date_texts`` (the rewrites), ``count`` (``count(*)`` from the
log); the dialect is ``varlake.expr.dialect``.

Queries sqlglot cannot parse, or that hold no rewritable site, run as written (only the
placeholders are replaced), so results never depend on sqlglot understanding the query.
And since sqlglot parses more leniently than Spark, nothing it derived is used unless
Spark reads its regeneration of the tree (``regenerate``) as the same query as the
user's text (``varlake.spark.reading.verdict``); otherwise the query runs as written too
(``as_written``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope, walk_in_scope

from varlake.delta.schema import StructType
from varlake.errors import ExpressionError, InvalidPathError, TableError
from varlake.expr import normalize_type
from varlake.expr.dialect import SparkSQL
from varlake.spark.reading.element_fields import element_fields
from varlake.spark.reading.placeholders import substitute, view_name
from varlake.spark.reading.planner import ISNULL, PathUse, is_nested, nested_target, target_type, variant_columns
from varlake.spark.reading.scopes import QueryAnalysis, Site, TableUsage, is_lateral, our_sources, reference, resolve, visible
from varlake.spark.reading.skip_filters import skipping_conjuncts
from varlake.variant.path import VariantPath

__all__ = ["analyze", "as_written", "depends_on_tree", "json_segments", "regenerate", "spark_path"]

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VARIANT_GET = {"variant_get", "try_variant_get"}
_NOT_PRIMITIVE = {"variant", "struct", "array", "map", "void"}


def spark_path(segments: tuple[str | int, ...]) -> str | None:
    """``variant_get`` path text for segments (``$.a['b c'][0]``), None if a key cannot be written."""
    out = ["$"]
    for segment in segments:
        if isinstance(segment, int):
            out.append(f"[{segment}]")
        elif _PLAIN_KEY.fullmatch(segment):
            out.append(f".{segment}")
        elif "'" not in segment:
            out.append(f"['{segment}']")
        elif '"' not in segment:
            out.append(f'["{segment}"]')
        else:
            return None
    return "".join(out)


# --- analysis ----------------------------------------------------------------------------------------


def analyze(query: str, schemas: Mapping[str, StructType]) -> QueryAnalysis:
    """Placeholders replaced, path uses found, skipping filters extracted (see the module doc)."""
    text = substitute(query, schemas)
    usages = {name: TableUsage(name, schema) for name, schema in schemas.items()}
    by_view = {view_name(name): usage for name, usage in usages.items()}
    try:
        tree = sqlglot.parse_one(text, dialect=SparkSQL)
        scopes = list(traverse_scope(tree))
    except (SqlglotError, RecursionError, ValueError, KeyError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return _not_understood(text, schemas, f"no rewrite: sqlglot cannot analyse the query ({first})")
    sites: list[Site] = []
    seen: set[int] = set()
    found: dict[str, int] = {}
    for scope in scopes:
        for usage in _analyze_scope(scope, by_view, sites, seen):
            found[usage.name] = found.get(usage.name, 0) + 1
    for view, usage in by_view.items():
        occurrences = sum(1 for t in tree.find_all(exp.Table) if t.name == view and not t.args.get("db"))
        if occurrences != found.get(usage.name, 0):
            usage.need_whole("the table is read somewhere the analysis does not follow")
            usage.filters = [None]
    for usage in usages.values():
        if not usage.filters:
            usage.filters.append(None)  # the table is never read: no rows, nothing to skip for
        if usage.whole_variant:
            usage.uses.clear()
    return QueryAnalysis(text, usages, tree, [s for s in sites if not usages[s.table].whole_variant], names_known=_names_known(tree))


def _not_understood(text: str, schemas: Mapping[str, StructType], note: str) -> QueryAnalysis:
    """The analysis of a query read as written: every table whole, nothing to skip by."""
    usages = {name: TableUsage(name, schema) for name, schema in schemas.items()}
    for usage in usages.values():
        usage.need_whole("the query is not understood by sqlglot")
        usage.filters.append(None)
    return QueryAnalysis(text, usages, None, [], note)


def as_written(analysis: QueryAnalysis, note: str) -> QueryAnalysis:
    """``analysis`` given up: the query runs as written (``note`` says why)."""
    return _not_understood(analysis.text, {name: usage.schema for name, usage in analysis.tables.items()}, note)


def depends_on_tree(analysis: QueryAnalysis) -> bool:
    """Whether anything varlake does with the query comes from sqlglot's tree: a site to
    rewrite or a filter to skip files by (else the query runs as written anyway)."""
    if analysis.tree is None:
        return False
    return bool(analysis.sites) or any(f is not None for usage in analysis.tables.values() for f in usage.filters)


def regenerate(analysis: QueryAnalysis) -> str:
    """sqlglot's SQL for its (unrewritten) tree: what its analysis takes the query to be."""
    if analysis.tree is None:
        raise TableError("the query has no syntax tree to regenerate")
    return analysis.tree.sql(dialect=SparkSQL)


def _names_known(tree: exp.Expr) -> bool:
    """Whether every output column is named in the text (an alias or a plain column), so that
    a rewritten query keeps Spark's output names without asking Spark for them."""
    if not isinstance(tree, exp.Select):
        return False
    return all(isinstance(p, exp.Alias) or (isinstance(p, exp.Column) and not p.is_star) for p in tree.expressions)


def _variant_column(usage: TableUsage, path: tuple[str, ...]) -> tuple[tuple[str, ...] | None, bool]:
    """(the Variant column this path names, whether it names a struct holding Variants)."""
    wanted = tuple(p.lower() for p in path)
    holds = False
    for column in variant_columns(usage.schema):
        lowered = tuple(p.lower() for p in column)
        if lowered == wanted:
            return column, False
        if lowered[: len(wanted)] == wanted:
            holds = True
    return None, holds


def _mentions_variant(usage: TableUsage, name: str) -> bool:
    return any(name.lower() in (p.lower() for p in column) for column in variant_columns(usage.schema))


def _analyze_scope(scope: Scope, by_view: Mapping[str, TableUsage], sites: list[Site], seen: set[int]) -> list[TableUsage]:
    """Record this scope's sites and whole-Variant uses; returns the tables it selects from."""
    ours = our_sources(scope, by_view)
    expression = scope.expression
    if isinstance(expression, exp.Select):
        for projection in expression.expressions:
            if isinstance(projection, exp.Star):
                for usage in ours.values():
                    usage.need_whole("SELECT * reads every column")
    for node in walk_in_scope(expression):
        if not isinstance(node, exp.Column) or id(node) in seen:
            continue
        seen.add(id(node))
        if node.is_star:
            qualifier = node.table
            for alias, usage in ours.items():
                if not qualifier or qualifier == alias:
                    usage.need_whole(f"{node.sql(dialect=SparkSQL)} reads every column")
            continue
        resolved = resolve(node, scope, ours)
        if resolved is None:
            parts, _ = reference(node)
            if len(parts) > 1 and parts[0] in visible(scope):
                continue  # qualified by another source of this scope: certainly not our column
            for usage in by_view.values():
                if any(_mentions_variant(usage, part) for part in parts):
                    usage.need_whole(f"cannot tell which table {node.sql(dialect=SparkSQL)} belongs to")
            continue
        alias, path, top = resolved
        usage = ours[alias]
        column, holds = _variant_column(usage, path)
        if holds and not (isinstance(top.parent, exp.Is) and isinstance(top.parent.expression, exp.Null)):
            usage.need_whole(f"{top.sql(dialect=SparkSQL)} reads a struct holding Variants")  # (its NULL test does not)
        if column is None:
            continue
        site = _site(top, column)
        if isinstance(site, str):
            usage.need_whole(site)
        else:
            target_node, use = site
            qualifier = alias if len(reference(node)[0]) > len(path) else None
            fields = element_fields(target_node, target_type(use.target)) if is_nested(use.target) else None
            sites.append(Site(target_node, usage.name, qualifier, use, fields))
            if use not in usage.uses:
                usage.uses.append(use)
    if is_lateral(scope):
        return []  # reads the tables of the SELECT it belongs to: not an occurrence of its own
    for alias, usage in ours.items():
        usage.filters.append(skipping_conjuncts(scope, alias, ours))
    return list(ours.values())


def json_segments(path: exp.Expr) -> tuple[str | int, ...] | None:
    segments: list[str | int] = []
    for part in path.expressions if isinstance(path, exp.JSONPath) else [None]:
        if isinstance(part, exp.JSONPathRoot):
            continue
        if isinstance(part, exp.JSONPathKey) and isinstance(part.this, str):
            segments.append(part.this)
        elif isinstance(part, exp.JSONPathSubscript) and isinstance(part.this, int) and part.this >= 0:
            segments.append(part.this)
        else:
            return None
    return tuple(segments)


def _string(node: exp.Expr) -> str | None:
    return str(node.this) if isinstance(node, exp.Literal) and node.is_string else None


def _target(type_text: str) -> str | None:
    """The ``PathUse.target`` of a cast's type text: a canonical primitive, or a struct or
    array the planner can serve (``nested_target``); None for anything else."""
    try:
        target = normalize_type(type_text)
    except ExpressionError:
        return None
    if target in ("struct", "array"):
        return nested_target(type_text)
    return None if target in _NOT_PRIMITIVE else target


def _site(column: exp.Expr, name: tuple[str, ...]) -> tuple[exp.Expr, PathUse] | str:
    """The rewritable expression around a Variant column reference, or why there is none."""
    shown = column.sql(dialect=SparkSQL)
    parent = column.parent
    base: exp.Expr
    if isinstance(parent, exp.JSONExtract) and parent.this is column and parent.args.get("variant_extract"):
        segments = json_segments(parent.expression)
        if segments is None or spark_path(segments) is None:
            return f"{parent.sql(dialect=SparkSQL)}: path not supported"
        base = parent
    elif isinstance(parent, exp.Anonymous) and str(parent.this).lower() in _VARIANT_GET and parent.expressions and parent.expressions[0] is column:
        args = parent.expressions
        path_text = _string(args[1]) if len(args) > 1 else None
        type_text = _string(args[2]) if len(args) > 2 else "variant"
        if path_text is None or type_text is None or len(args) > 3:
            return f"{parent.sql(dialect=SparkSQL)}: arguments are not literals"
        try:
            segments = VariantPath.parse(path_text).segments
        except InvalidPathError:
            return f"{parent.sql(dialect=SparkSQL)}: invalid path"
        if type_text.strip().lower() != "variant":
            target = _target(type_text)
            if target is None:
                return f"{parent.sql(dialect=SparkSQL)}: target type is not supported (a map, a Variant, ...)"
            return parent, PathUse(name, segments, target, safe=str(parent.this).lower() == "try_variant_get")
        base = parent
    else:
        return f"{shown} is used as a whole Variant"
    outer = base.parent
    if isinstance(outer, exp.Cast) and outer.this is base:
        target = _target(outer.to.sql(dialect=SparkSQL))
        if target is None:
            return f"{outer.sql(dialect=SparkSQL)}: target type is not supported (a map, a Variant, ...)"
        return outer, PathUse(name, segments, target, safe=isinstance(outer, exp.TryCast))
    if isinstance(outer, exp.Is) and outer.this is base and isinstance(outer.expression, exp.Null):
        return outer, PathUse(name, segments, ISNULL)
    return f"{base.sql(dialect=SparkSQL)} is used as a Variant"
