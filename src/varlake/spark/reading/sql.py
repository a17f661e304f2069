"""The SQL side of the Spark reader: find Variant path uses in a query and rewrite them (sqlglot).

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

``rewrite`` turns each site of a table that has shredded files into
``IF(t.__vl_shredded, t.__vl_<n>, <the original expression>)``: rows of shredded files
take the pre-computed leaf column, every other row evaluates the user's own expression,
lazily, exactly where Spark would (so its errors surface where Spark's would). Spark folds
the IF away inside each union branch and pushes filters on the leaf down to Parquet. A
table whose every read file serves all its uses (only shredded groups: ``direct``) needs
no fallback: its sites become the derived columns themselves, and its view has no flag.
There, an array of structs the query explodes and reads only field by field
(``element_fields``) may be read as its shredded elements: the site becomes the array of
element groups, and each ``l.f`` the cast of the element's leaf (``planner.element_shape``
says when the files allow it), so no struct is rebuilt per element. A DATE read from
string leaves the writer proved to hold only ISO dates (an exploded field, or a path with
its ``text_of`` column) compares with another such DATE or a DATE constant as text
(``_dates_as_text``): no date is parsed per row, and Parquet gets the filter on the leaf.

Queries sqlglot cannot parse, or that hold no rewritable site, run as written (only the
placeholders are replaced), so results never depend on sqlglot understanding the query.
And since sqlglot parses more leniently than Spark, nothing it derived is used unless
Spark reads its regeneration of the tree (``regenerate``) as the same query as the
user's text (``varlake.spark.reading.verdict``); otherwise the query runs as written too
(``as_written``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.dialects.databricks import Databricks
from sqlglot.errors import SqlglotError
from sqlglot.generators.databricks import DatabricksGenerator
from sqlglot.optimizer.scope import Scope, traverse_scope, walk_in_scope
from sqlglot.parser import binary_range_parser
from sqlglot.parsers.databricks import DatabricksParser
from sqlglot.tokens import TokenType

from varlake.delta.schema import PrimitiveType, StructType
from varlake.errors import ExpressionError, InvalidPathError, TableError
from varlake.expr import Predicate, normalize_type, parse_predicate
from varlake.semantics.types import backquote
from varlake.semantics.datetime_text import string_to_date
from varlake.spark.reading.element_fields import ElementFields, FieldAccess, element_fields, primitive_struct
from varlake.spark.reading.leaf_casts import cast_sql, iso_date_text_sql, raise_sql, type_sql
from varlake.spark.reading.planner import (
    ISNULL, ElementShape, PathUse, elements_of, failure_of, is_nested, nested_target, target_type, text_of, variant_columns,
)
from varlake.variant.path import VariantPath

__all__ = [
    "FLAG_COLUMN",
    "CountQuery",
    "QueryAnalysis",
    "Site",
    "SparkSQL",
    "TableUsage",
    "analyze",
    "as_written",
    "count_from_log",
    "count_query",
    "depends_on_tree",
    "derived_name",
    "regenerate",
    "retarget",
    "rewrite",
    "rewritten_tree",
    "spark_path",
    "substitute",
    "view_name",
]

FLAG_COLUMN = "__vl_shredded"
_VIEW_PREFIX = "__varlake_"
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VARIANT_GET = {"variant_get", "try_variant_get"}
_NOT_PRIMITIVE = {"variant", "struct", "array", "map", "void"}


_TYPED_LITERAL = "typed_literal"


def _typed_literal(parser: DatabricksParser, this: exp.Expr, to: exp.DataType) -> exp.Expr:
    """``DATE '2024-01-02'``: sqlglot's cast of the string, marked to be written back as a
    typed literal (Spark parses the two differently, and the verdict compares parses)."""
    node = parser.expression(exp.Cast(this=this, to=to))
    node.meta[_TYPED_LITERAL] = True
    return node


_OPERATOR = "operator"
_RLIKE = binary_range_parser(exp.RegexpLike)


def _rlike(parser: DatabricksParser, this: exp.Expr | None) -> exp.Expr | None:
    """``a RLIKE b`` (or ``REGEXP``), marked to be written back as the operator, which
    Spark parses differently from the ``regexp_like`` function."""
    node = _RLIKE(parser, this)
    like = node.this if isinstance(node, exp.Escape) else node
    if isinstance(like, exp.RegexpLike):
        like.meta[_OPERATOR] = True
    return node


class SparkSQL(Databricks):
    """Databricks' dialect (Spark SQL with ``v:a::t``), with fixes for Spark 4.3.

    ``''`` inside a string literal is an escaped quote in Spark, bracketed Variant path
    keys must use single quotes (``v:['a b']``), and date/timestamp typed literals are
    written back as written (not as casts), as is the ``RLIKE`` operator.
    """

    class Tokenizer(Databricks.Tokenizer):
        STRING_ESCAPES = ["\\", "'"]

    class Parser(DatabricksParser):
        TYPE_LITERAL_PARSERS = {
            **DatabricksParser.TYPE_LITERAL_PARSERS,
            **{
                t: _typed_literal
                for t in (exp.DType.DATE, exp.DType.TIMESTAMP, exp.DType.TIMESTAMPTZ, exp.DType.TIMESTAMPNTZ, exp.DType.TIMESTAMPLTZ)
            },
        }
        RANGE_PARSERS = {**DatabricksParser.RANGE_PARSERS, TokenType.RLIKE: _rlike}
        # kept as written: sqlglot reads date_sub(d, n) as DATE_ADD(d, n * -1), which Spark parses differently
        FUNCTIONS = {**DatabricksParser.FUNCTIONS, "DATE_SUB": lambda args: exp.Anonymous(this="DATE_SUB", expressions=args)}

    class Generator(DatabricksGenerator):
        JSON_PATH_SINGLE_QUOTE_ESCAPE = True

        def cast_sql(self, expression: exp.Cast, safe_prefix: str | None = None) -> str:
            this = expression.this
            if expression.meta.get(_TYPED_LITERAL) and isinstance(this, exp.Literal) and this.is_string and not safe_prefix:
                return f"{self.sql(expression, 'to')} {self.sql(this)}"
            return super().cast_sql(expression, safe_prefix)

        def not_sql(self, expression: exp.Not) -> str:
            # sqlglot reads ``x IS NOT NULL`` as NOT(x IS NULL); Spark plans ``NOT x IS NULL`` as
            # Not(IsNull(x)) but ``x IS NOT NULL`` as IsNotNull(x), so write the form the user wrote
            this = expression.this
            if isinstance(this, exp.Is) and isinstance(this.expression, exp.Null):
                return f"{self.sql(this, 'this')} IS NOT NULL"
            return super().not_sql(expression)

        def regexplike_sql(self, expression: exp.RegexpLike) -> str:
            if expression.meta.get(_OPERATOR):
                return self.binary(expression, "RLIKE")
            return self.function_fallback_sql(expression)


def view_name(name: str) -> str:
    """The temporary view a ``{name}`` placeholder becomes."""
    return f"{_VIEW_PREFIX}{name}"


def derived_name(index: int) -> str:
    """Name of the ``index``-th derived path column of a table's view."""
    return f"__vl_{index}"


def next_derived_name(derived: Mapping[Any, str]) -> str:
    """A derived column name no column of ``derived`` has (one past the highest index)."""
    taken = [int(name.removeprefix("__vl_")) for name in derived.values() if name.removeprefix("__vl_").isdigit()]
    return derived_name(max(taken, default=-1) + 1)


def substitute(query: str, names: Mapping[str, object], tables: Mapping[str, tuple[str, str]] | None = None) -> str:
    """Replace every ``{name}`` placeholder by its view name, or by the qualified table
    ``tables`` gives for it (``db.t`` works as a column qualifier too); unknown names are an error.

    Text inside string literals, quoted identifiers and comments is left as it is: there a
    ``{name}`` is not a table (and no substitution may change a literal's value).
    """

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in names:
            raise TableError(f"the query names {{{name}}} but no table {name!r} was given (tables: {', '.join(sorted(names)) or 'none'})")
        if tables is not None and name in tables:
            return ".".join(backquote(part) for part in tables[name])
        return view_name(name)

    out, start = [], 0
    for begin, end in _code_spans(query):
        out.append(query[start:begin])
        out.append(_PLACEHOLDER.sub(replace, query[begin:end]))
        start = end
    out.append(query[start:])
    return "".join(out)


def _code_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the parts of ``text`` outside string literals (``'...'``,
    ``"..."``, backslash escapes, raw ``r'...'``), quoted identifiers (`````...`````) and
    comments (``--``, nested ``/* */``), as Spark's lexer delimits them; an unterminated
    one runs to the end."""
    spans, i, start, n = [], 0, 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`" or (c == "-" and text.startswith("--", i)) or (c == "/" and text.startswith("/*", i)):
            if start < i:
                spans.append((start, i))
            if c == "-":
                newline = text.find("\n", i)
                i = n if newline < 0 else newline
            elif c == "/":
                depth, i = 1, i + 2
                while i < n and depth:
                    if text.startswith("/*", i):
                        depth, i = depth + 1, i + 2
                    elif text.startswith("*/", i):
                        depth, i = depth - 1, i + 2
                    else:
                        i += 1
            else:
                raw = c != "`" and i > 0 and text[i - 1] in "rR" and (i == 1 or not (text[i - 2].isalnum() or text[i - 2] == "_"))
                i += 1
                while i < n and text[i] != c:
                    i += 2 if text[i] == "\\" and c != "`" and not raw else 1
                i += 1
            start = i
        else:
            i += 1
    if start < n:
        spans.append((start, n))
    return spans


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


def _is_lateral(scope: Scope) -> bool:
    return isinstance(scope.expression, exp.Lateral)


def _visible(scope: Scope) -> dict[str, exp.Table | Scope]:
    """Alias -> source of what a scope's columns may read: the sources a SELECT selects
    from, or for a ``LATERAL VIEW`` the sources before it (``v`` in ``explode(v:a)``)."""
    if _is_lateral(scope):
        return dict(scope.lateral_sources)
    return {alias: source for alias, (_, source) in scope.selected_sources.items()}


def _our_sources(scope: Scope, by_view: Mapping[str, TableUsage]) -> dict[str, TableUsage]:
    """Alias -> table usage for the placeholder tables this scope selects from."""
    out: dict[str, TableUsage] = {}
    for alias, source in _visible(scope).items():
        if isinstance(source, exp.Table) and not source.args.get("db") and source.name in by_view:
            out[alias] = by_view[source.name]
    return out


def _source_has(scope: Scope, alias: str, name: str, ours: Mapping[str, TableUsage]) -> bool | None:
    """Whether the source under ``alias`` has a column ``name`` (None: cannot tell)."""
    if alias in ours:
        return name.lower() in {n.lower() for n in ours[alias].schema.names}
    source = _visible(scope)[alias]
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


def _reference(column: exp.Column) -> tuple[list[str], exp.Expr]:
    """The dotted name parts of a column reference (``t.s.v`` -> t, s, v, following field
    accesses ``.x`` above it) and the outermost node of the reference."""
    parts = [p.name for p in column.parts]
    top: exp.Expr = column
    while isinstance(top.parent, exp.Dot) and top.parent.this is top and isinstance(top.parent.expression, exp.Identifier):
        top = top.parent
        parts.append(top.expression.name)
    return parts, top


def _resolve(column: exp.Column, scope: Scope, ours: Mapping[str, TableUsage]) -> tuple[str, tuple[str, ...], exp.Expr] | None:
    """(alias of our table, column path in its schema, outermost node) of a reference that
    certainly reads one of our tables, else None."""
    parts, top = _reference(column)
    sources = _visible(scope)
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
    ours = _our_sources(scope, by_view)
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
        resolved = _resolve(node, scope, ours)
        if resolved is None:
            parts, _ = _reference(node)
            if len(parts) > 1 and parts[0] in _visible(scope):
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
            qualifier = alias if len(_reference(node)[0]) > len(path) else None
            fields = element_fields(target_node, target_type(use.target)) if is_nested(use.target) else None
            sites.append(Site(target_node, usage.name, qualifier, use, fields))
            if use not in usage.uses:
                usage.uses.append(use)
    if _is_lateral(scope):
        return []  # reads the tables of the SELECT it belongs to: not an occurrence of its own
    for alias, usage in ours.items():
        usage.filters.append(_conjuncts(scope, alias, ours))
    return list(ours.values())


def _json_segments(path: exp.Expr) -> tuple[str | int, ...] | None:
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
        segments = _json_segments(parent.expression)
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


# --- skipping filters --------------------------------------------------------------------------------------------


def _column_expr(path: tuple[str, ...]) -> exp.Expr:
    """An unqualified reference to a column path (``s.v`` reads field ``v`` of struct ``s``)."""
    node: exp.Expr = exp.column(path[0], quoted=True)
    for name in path[1:]:
        node = exp.Dot(this=node, expression=exp.to_identifier(name, quoted=True))
    return node


def _conjuncts(scope: Scope, alias: str, ours: Mapping[str, TableUsage]) -> list[Predicate] | None:
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
        resolved = [_resolve(c, scope, ours) for c in columns]
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
            out.append(parse_predicate(copy.sql(dialect=SparkSQL)))
        except (ExpressionError, SqlglotError, ValueError):
            continue
    return out or None


# --- rewriting -------------------------------------------------------------------------------------------------


def _variant_get_form(node: exp.Expr) -> exp.Expr:
    """``v:a.b`` as the equivalent ``variant_get(v, '$.a.b')`` (Spark resolves ``:`` to exactly that)."""
    for extract in list(node.find_all(exp.JSONExtract)):
        if not extract.args.get("variant_extract"):
            continue
        segments = _json_segments(extract.expression)
        path = spark_path(segments) if segments is not None else None
        if path is None:
            continue
        call = exp.Anonymous(this="variant_get", expressions=[extract.this.copy(), exp.Literal.string(path)])
        if extract is node:
            return call
        extract.replace(call)
    return node


def rewrite(
    analysis: QueryAnalysis,
    derived: Mapping[str, Mapping[PathUse, str]],
    direct: Collection[str] = (),
    elements: Mapping[str, Mapping[PathUse, ElementShape]] | None = None,
) -> str:
    """The query with every site of the tables in ``derived`` routed through the derived columns.

    ``derived`` maps a table name to ``{use: derived column}``; tables not in it keep
    their expressions. A table in ``direct`` has only shredded reads (every row comes
    from a file that serves all its uses): its sites become the derived column itself,
    with no flag and no fallback. ``elements`` gives, per direct table, the uses whose
    exploded sites (``Site.fields``) read the array as its shredded elements (the derived
    column of ``elements_of(use)``) and how they are read (``planner.element_shape``): each
    access ``l.f`` becomes the cast of ``l``'s leaf of ``f``, and a comparison of a field of
    ISO dates with another such field or a constant DATE compares texts
    (``_dates_as_text``). Without any site to rewrite the text is returned as analysed.
    """
    tree = rewritten_tree(analysis, derived, direct, elements)
    return analysis.text if tree is None else tree.sql(dialect=SparkSQL)


def rewritten_tree(
    analysis: QueryAnalysis,
    derived: Mapping[str, Mapping[PathUse, str]],
    direct: Collection[str] = (),
    elements: Mapping[str, Mapping[PathUse, ElementShape]] | None = None,
) -> exp.Expr | None:
    """``rewrite``'s syntax tree: a rewritten copy of the analysis's tree (which stays as
    parsed, so one analysis serves many rewrites), or None when nothing is rewritten."""
    elements = elements or {}
    chosen = [
        s for s in analysis.sites
        if s.table in derived and (s.use in derived[s.table] or _as_elements(s, elements) is not None)
    ]
    if analysis.tree is None or not chosen:
        return None
    tree = analysis.tree.copy()
    copies = {id(old): new for old, new in zip(analysis.tree.walk(), tree.walk())}  # the copy has the same shape
    texts: dict[int, tuple[exp.Expr, exp.Expr]] = {}  # id -> (a node read as a DATE of ISO text, that text)
    for site in chosen:
        node = copies[id(site.node)]
        qualifier = site.qualifier
        shape = _as_elements(site, elements)
        if shape is not None and site.fields is not None:
            node.replace(exp.column(derived[site.table][elements_of(site.use)], table=qualifier))
            for access in site.fields.accesses:
                copies[id(access.node)].replace(_field_sql(site.use, site.fields.element, access, shape.leaves))
            texts.update(_element_texts(site, shape))
            continue
        text = derived[site.table].get(text_of(site.use)) if site.table in direct else None
        if text is not None:
            texts[id(site.node)] = (site.node, exp.column(text, table=qualifier))
        value = exp.column(derived[site.table][site.use], table=qualifier)
        failure = derived[site.table].get(failure_of(site.use))
        if failure is not None:  # a cast that can fail on a string leaf fails here, where Spark's would (leaf_casts)
            check = raise_sql(exp.column(failure, table=qualifier).sql(dialect=SparkSQL), value.sql(dialect=SparkSQL), site.use.target)
            value = sqlglot.parse_one(check, dialect=SparkSQL)
        if site.table in direct:
            node.replace(value)
            continue
        flag = exp.column(FLAG_COLUMN, table=qualifier)
        original = _variant_get_form(node.copy())
        node.replace(exp.If(this=flag, true=value, false=original))
    _dates_as_text(texts, copies)
    return tree


def _as_elements(site: Site, elements: Mapping[str, Mapping[PathUse, ElementShape]]) -> ElementShape | None:
    """The element leaves' shape when ``site`` reads its array as shredded elements."""
    if site.fields is None:
        return None
    return elements.get(site.table, {}).get(site.use)


def _field_sql(use: PathUse, element: str, access: FieldAccess, shape: StructType) -> exp.Expr:
    """``l.f`` over shredded elements: the cast of the element's leaf of ``f`` as Spark
    casts its Variant value (``leaf_casts.cast_sql``; NULL where the element or its field
    is), NULL of the field's type where no file shreds ``f`` (missing in every element);
    a bare SELECT item keeps its output name ``f``."""
    want = _element_type(use).field(access.field).type
    read = {f.name: f.type for f in shape.fields}.get(access.field)
    assert isinstance(want, PrimitiveType) and (read is None or isinstance(read, PrimitiveType))
    if read is None:
        text = f"CAST(NULL AS {type_sql(want.name)})"
    else:
        text = cast_sql(_leaf_text(element, access.field), read.name, want.name)
    value = sqlglot.parse_one(text, dialect=SparkSQL)
    return exp.alias_(value, access.field, quoted=True) if access.projected else value


def _element_type(use: PathUse) -> StructType:
    """The element struct of a use served as shredded elements (``element_fields`` checked it)."""
    element = primitive_struct(target_type(use.target))
    assert element is not None
    return element


def _leaf_text(element: str, field: str) -> str:
    """SQL for the typed leaf of field ``field`` of the shredded element ``element``."""
    return f"{backquote(element)}.typed_value.{backquote(field)}.typed_value"


_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ)


def compared(node: exp.Expr) -> bool:
    """Whether ``node`` is compared (``=``, ``<``, ..., ``<=>``, the subject of ``BETWEEN``):
    a DATE of ISO text there may compare as text (``_dates_as_text``)."""
    parent = node.parent
    return isinstance(parent, _COMPARISONS) or (isinstance(parent, exp.Between) and parent.this is node)


def _element_texts(site: Site, shape: ElementShape) -> dict[int, tuple[exp.Expr, exp.Expr]]:
    """The site's field accesses read as DATE from leaves of ISO dates
    (``ElementShape.iso_dates``), each with its leaf's text."""
    assert site.fields is not None
    element = _element_type(site.use)
    return {
        id(a.node): (a.node, sqlglot.parse_one(_leaf_text(site.fields.element, a.field), dialect=SparkSQL))
        for a in site.fields.accesses
        if a.field in shape.iso_dates and element.field(a.field).type == PrimitiveType("date")
    }


def _dates_as_text(texts: Mapping[int, tuple[exp.Expr, exp.Expr]], copies: Mapping[int, exp.Expr]) -> None:
    """Comparisons of DATEs read from leaves of ISO dates (``texts``: original node id ->
    (that node, the leaf's text); an exploded field or a site of a path) with each other, or with a DATE
    constant (``_constant_date``), rewritten in the copy (``copies``: original node id ->
    copy, sites already rewritten) to compare texts: the same answer
    (``leaf_casts.iso_date_text_sql``) without parsing a date per row, and a filter Parquet
    can check against a string leaf's bounds. A constant outside the span of ISO texts
    keeps the comparison as written (Spark folds the test of a constant away)."""
    def text(side: exp.Expr) -> exp.Expr:
        return texts[id(side)][1].copy()

    done: set[int] = set()
    for node, _ in texts.values():
        compare = node.parent
        if compare is None or id(compare) in done or not compared(node):
            continue
        done.add(id(compare))
        if isinstance(compare, _COMPARISONS):
            left, right = compare.this, compare.expression
            if id(left) in texts and id(right) in texts:
                copies[id(compare)].replace(type(compare)(this=text(left), expression=text(right)))
                continue
            constant = right if id(left) in texts else left
            if not _constant_date(constant):
                continue
            test, value = _iso_text(constant)
            both = type(compare)(this=text(left), expression=value) if id(left) in texts else type(compare)(this=value, expression=text(right))
        else:
            low, high = compare.args.get("low"), compare.args.get("high")
            if not (_constant_date(low) and _constant_date(high)):
                continue
            (low_test, low_text), (high_test, high_text) = _iso_text(low), _iso_text(high)
            test = exp.and_(low_test, high_test)
            both = exp.Between(this=text(node), low=low_text, high=high_text)
        written = copies[id(compare)]
        written.replace(exp.Case(ifs=[exp.If(this=test, true=both)], default=written.copy()))


def _iso_text(date: exp.Expr) -> tuple[exp.Expr, exp.Expr]:
    """``leaf_casts.iso_date_text_sql`` of a DATE constant, as (test, text) nodes."""
    test, text = iso_date_text_sql(date.sql(dialect=SparkSQL))
    return sqlglot.parse_one(test, dialect=SparkSQL), sqlglot.parse_one(text, dialect=SparkSQL)


def _constant_date(node: exp.Expr | None) -> bool:
    """Whether ``node`` is a DATE that never fails and is the same on every row: a DATE
    literal, ``current_date()``, or ``date_add``, ``date_sub``, ``add_months`` of one by an
    integer literal."""
    if isinstance(node, exp.Paren):
        return _constant_date(node.this)
    if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):  # DATE'...' (a date Spark reads)
        literal = node.this
        return (node.to.this == exp.DataType.Type.DATE and isinstance(literal, exp.Literal) and literal.is_string
                and string_to_date(literal.this) is not None)
    if isinstance(node, exp.CurrentDate):
        return not node.args.get("this")
    if isinstance(node, exp.AddMonths):
        return _constant_date(node.this) and _integer(node.expression)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in ("date_add", "date_sub") and len(node.expressions) == 2:
        return _constant_date(node.expressions[0]) and _integer(node.expressions[1])
    if isinstance(node, exp.TsOrDsAdd):  # ``date_add(d, n)``, regenerated as such
        unit = node.args.get("unit")
        days = unit is None or (isinstance(unit, exp.Var) and unit.name.upper() == "DAY")
        return days and _constant_date(node.this) and _integer(node.expression)
    return False


def _integer(node: exp.Expr | None) -> bool:
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit()


def retarget(tree: exp.Expr, tables: Mapping[str, tuple[str, str]]) -> str:
    """The SQL of ``tree`` (a copy) with each reference to a view in ``tables`` replaced by
    the ``(database, table)`` given for it, aliased to the view's name when it had no alias
    of its own, so column qualifiers naming the view still resolve."""
    copy = tree.copy()
    for table in list(copy.find_all(exp.Table)):
        if table.args.get("db") or table.name not in tables:
            continue
        database, name = tables[table.name]
        replacement = exp.Table(this=exp.to_identifier(name, quoted=True), db=exp.to_identifier(database, quoted=True))
        alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name, quoted=True))
        replacement.set("alias", alias)
        table.replace(replacement)
    return copy.sql(dialect=SparkSQL)


# --- count(*) from metadata ------------------------------------------------------------------------------


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
            predicate = parse_predicate(where.this.sql(dialect=SparkSQL))
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
