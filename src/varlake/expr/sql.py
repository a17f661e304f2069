"""SQL predicate text (or its sqlglot tree) -> predicate tree, in varlake's dialect.

The dialect (``varlake.expr.dialect``) is Databricks', Spark SQL plus the Variant
shorthand (``v:a.b``, ``v:a['x y'][0]::bigint``), with Spark 4.3's own parsing rules;
it keeps ANSI ``CAST`` distinct from ``TRY_CAST``.  Anything the tree cannot express raises
UnsupportedExpressionError naming the SQL fragment.
"""

from __future__ import annotations

from functools import reduce
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from varlake.errors import (
    ExpressionEvaluationError,
    ExpressionParseError,
    ExpressionTypeError,
    UnsupportedExpressionError,
)
from varlake.expr.casts import can_cast, cast_value, sql_number, timestamp_has_zone
from varlake.expr.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Call,
    Column,
    Comparison,
    Condition,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    Or,
    Predicate,
    Term,
    VariantGet,
)
from varlake.expr.dialect import CANONICAL, DIALECT
from varlake.expr.types import normalize_type
from varlake.expr.variant_paths import normalize_variant_path, normalized_from_segments

_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.NullSafeEQ: "<=>",
}
_VARIANT_GET = {"variant_get": False, "try_variant_get": True}
_ARITHMETIC: dict[type[exp.Expression], str] = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}
_UNARY: dict[type[exp.Expression], str] = {
    exp.Length: "length", exp.Lower: "lower", exp.Upper: "upper", exp.Abs: "abs",
    exp.Year: "year", exp.Month: "month", exp.Day: "day", exp.DayOfMonth: "day",
}
_STRING_TESTS: dict[type[exp.Expression], str] = {exp.StartsWith: "startswith", exp.EndsWith: "endswith",
                                                  exp.Contains: "contains"}
#: Nodes that are predicates wherever they appear (as a value they become a ``Condition``).
_PREDICATE_NODES = (exp.And, exp.Or, exp.Not, exp.Boolean, exp.Is, exp.In, exp.Between, exp.NullSafeNEQ,
                    *_COMPARISONS)
_TRUE = Literal(True, "boolean")


def parse_predicate(text: str) -> Predicate:
    """Parse a Spark SQL boolean expression (a WHERE clause body) into an unbound tree."""
    try:
        node = sqlglot.parse_one(text, read=DIALECT)
    except SqlglotError as exc:
        raise ExpressionParseError(f"cannot parse predicate {text!r}: {str(exc).splitlines()[0]}") from exc
    except RecursionError as exc:
        raise ExpressionParseError(f"predicate {text[:80]!r}... is nested too deeply") from exc
    try:
        return _predicate(node)
    except RecursionError as exc:
        raise ExpressionParseError(f"predicate {text[:80]!r}... is nested too deeply") from exc


def predicate_of(node: exp.Expression) -> Predicate:
    """The predicate tree of a sqlglot expression parsed with ``dialect.DIALECT`` (e.g. a
    WHERE body taken from a parsed query): what ``parse_predicate`` gives for its text,
    without rendering it and parsing it again. ``node`` is not changed."""
    try:
        return _predicate(node)
    except RecursionError as exc:
        raise ExpressionParseError(f"predicate (a {type(node).__name__} tree) is nested too deeply") from exc


def parse_term(text: str) -> Term:
    """Parse a single value expression, e.g. ``v:a.b::bigint`` or ``s.x``."""
    try:
        node = sqlglot.parse_one(text, read=DIALECT)
    except SqlglotError as exc:
        raise ExpressionParseError(f"cannot parse expression {text!r}: {str(exc).splitlines()[0]}") from exc
    return _term(node)


def term_of(node: exp.Expression) -> Term:
    """The term of a sqlglot value expression parsed with ``dialect.DIALECT``: what
    ``parse_term`` gives for its text, without rendering and parsing it again."""
    try:
        return _term(node)
    except RecursionError as exc:
        raise ExpressionParseError(f"expression (a {type(node).__name__} tree) is nested too deeply") from exc


def _fragment(node: exp.Expression) -> str:
    try:
        return node.sql(dialect=CANONICAL)
    except Exception:  # noqa: BLE001 - only used to word an error message
        return repr(node)


def _unsupported(what: str, node: exp.Expression) -> UnsupportedExpressionError:
    return UnsupportedExpressionError(f"unsupported {what}", _fragment(node))


def _balanced(parts: list[Predicate], combine: type[And] | type[Or]) -> Predicate:
    """Long AND/OR chains become balanced trees, keeping visitors' recursion shallow."""
    while len(parts) > 1:
        paired = [combine(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            paired.append(parts[-1])
        parts = paired
    return parts[0]


def _predicate(node: exp.Expression) -> Predicate:
    if isinstance(node, exp.Paren):
        return _predicate(node.this)
    if isinstance(node, (exp.And, exp.Or)):
        combine = And if isinstance(node, exp.And) else Or
        return _balanced([_predicate(part) for part in node.flatten()], combine)
    if isinstance(node, exp.Not):
        return Not(_predicate(node.this))
    if isinstance(node, exp.Boolean):
        return AlwaysTrue() if node.this else AlwaysFalse()
    if isinstance(node, exp.Null):  # WHERE NULL: unknown, and NOT NULL is unknown too
        return Comparison("=", Literal(None, "boolean"), Literal(True, "boolean"))
    op = _COMPARISONS.get(type(node))
    if op is not None:
        return Comparison(op, _term(node.this), _term(node.expression))
    if isinstance(node, exp.NullSafeNEQ):
        return Not(Comparison("<=>", _term(node.this), _term(node.expression)))
    if isinstance(node, exp.Is):
        return _is(node)
    if isinstance(node, exp.In):
        return _in(node)
    if isinstance(node, exp.Between):
        term = _term(node.this)
        return And(Comparison(">=", term, _term(node.args["low"])), Comparison("<=", term, _term(node.args["high"])))
    if isinstance(node, (exp.Like, exp.ILike, exp.Escape)):
        like = Comparison("=", _like(node), _TRUE)
        negated = (node.this if isinstance(node, exp.Escape) else node).args.get("negate")
        return Not(like) if negated else like
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in ("isnull", "isnotnull") and len(node.expressions) == 1:
        term = _term(node.expressions[0])
        return IsNull(term) if str(node.this).lower() == "isnull" else IsNotNull(term)
    # WHERE flag, WHERE CASE ... END, WHERE startswith(s, 'a'): TRUE iff the value is TRUE
    return Comparison("=", _term(node), _TRUE)


def _is(node: exp.Is) -> Predicate:
    term, what = _term(node.this), node.expression
    if isinstance(what, exp.Null):
        return IsNull(term)
    if isinstance(what, exp.Boolean):  # x IS TRUE is two-valued: x <=> TRUE
        return Comparison("<=>", term, Literal(bool(what.this), "boolean"))
    raise _unsupported("IS test", node)


def _in(node: exp.In) -> Predicate:
    if node.args.get("query") is not None or node.args.get("unnest") is not None or node.args.get("field"):
        raise _unsupported("IN with a subquery", node)
    term = _term(node.this)
    members = [_term(m) for m in node.expressions]
    if not members:
        raise _unsupported("empty IN list", node)
    if all(isinstance(m, Literal) for m in members):
        return In(term, tuple(members))  # type: ignore[arg-type]
    # x IN (a, b) is exactly x = a OR x = b in three-valued logic
    return reduce(Or, [Comparison("=", term, m) for m in members])  # type: ignore[arg-type]


def _term(node: exp.Expression) -> Term:
    if isinstance(node, exp.Paren):
        return _term(node.this)
    if isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star):
            raise _unsupported("star", node)
        return Column(tuple(part.name for part in node.parts))
    if isinstance(node, exp.Dot):
        base = _term(node.this)
        if not isinstance(base, Column) or not isinstance(node.expression, exp.Identifier):
            raise _unsupported("field access", node)
        return Column((*base.path, node.expression.name))
    if isinstance(node, exp.Neg) and not (isinstance(node.this, exp.Literal) and not node.this.is_string):
        return Call("negative", (_term(node.this),))
    if isinstance(node, exp.Concat) and not all(isinstance(p, exp.Literal) and p.is_string for p in node.expressions):
        return Call("concat", tuple(_term(p) for p in node.expressions))
    if isinstance(node, (exp.Literal, exp.Boolean, exp.Null, exp.Neg, exp.HexString, exp.Concat)):
        return _literal(node)
    call = _call(node)
    if call is not None:
        return call
    if isinstance(node, _PREDICATE_NODES) or isinstance(node, (exp.Like, exp.ILike, exp.Escape)):
        return Condition(_predicate(node))
    if isinstance(node, exp.Cast):
        target = normalize_type(node.to.sql(dialect="spark"))
        try_ = isinstance(node, exp.TryCast) or bool(node.args.get("safe"))
        inner = _term(node.this)
        if isinstance(inner, Literal) and _folds_without_session(inner, target):
            return _cast_literal(inner, target, try_, node)
        return inner.cast(target, try_)
    if isinstance(node, exp.JSONExtract) and node.args.get("variant_extract"):
        return _variant_extract(node)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in _VARIANT_GET:
        return _variant_get(node)
    raise _unsupported("expression", node)


def _literal(node: exp.Expression) -> Literal:
    if isinstance(node, exp.Null):
        return Literal(None, "void")
    if isinstance(node, exp.Boolean):
        return Literal(bool(node.this), "boolean")
    if isinstance(node, exp.HexString):
        text = str(node.this)
        try:
            return Literal(bytes.fromhex(text if len(text) % 2 == 0 else "0" + text), "binary")
        except ValueError as exc:
            raise _unsupported("binary literal", node) from exc
    if isinstance(node, exp.Concat):  # Spark joins adjacent string literals: 'it' 's'
        parts = [_literal(p) for p in node.expressions]
        if not all(p.dtype == "string" for p in parts):
            raise _unsupported("expression", node)
        return Literal("".join(p.value for p in parts), "string")
    if isinstance(node, exp.Neg):
        inner = node.this
        if isinstance(inner, exp.Literal) and not inner.is_string:
            value, dtype = sql_number("-" + str(inner.this))
            return Literal(value, dtype)
        raise _unsupported("arithmetic", node)
    assert isinstance(node, exp.Literal)
    if node.is_string:
        return Literal(str(node.this), "string")
    value, dtype = sql_number(str(node.this))
    return Literal(value, dtype)


def _folds_without_session(literal: Literal, target: str) -> bool:
    """Typed literals fold at parse time unless their value depends on the session zone."""
    if target != "timestamp" or literal.dtype != "string" or literal.value is None:
        return target != "timestamp" or literal.dtype in ("timestamp", "void")
    return timestamp_has_zone(str(literal.value))


def _cast_literal(literal: Literal, target: str, try_: bool, node: exp.Expression) -> Literal:
    if not can_cast(literal.dtype, target):
        raise ExpressionTypeError(f"cannot cast {literal.dtype} to {target}: {_fragment(node)}")
    try:
        return Literal(cast_value(literal.value, literal.dtype, target), target)
    except ExpressionEvaluationError as exc:
        if try_:
            return Literal(None, target)
        raise ExpressionTypeError(f"invalid literal: {_fragment(node)}") from exc


def _column_of(node: exp.Expression, context: exp.Expression) -> Column:
    column = _term(node)
    if not isinstance(column, Column):
        raise _unsupported("Variant source (a column is needed)", context)
    return column


def _variant_extract(node: exp.JSONExtract) -> VariantGet:
    column = _column_of(node.this, node)
    segments: list[str | int] = []
    for segment in node.expression.expressions:
        if isinstance(segment, exp.JSONPathRoot):
            continue
        if isinstance(segment, exp.JSONPathKey) and isinstance(segment.this, str):
            segments.append(segment.this)
        elif isinstance(segment, exp.JSONPathSubscript) and isinstance(segment.this, int) and segment.this >= 0:
            segments.append(segment.this)
        else:
            raise _unsupported("Variant path segment", node)
    return VariantGet(column, normalized_from_segments(tuple(segments)), "variant", False)


def _variant_get(node: exp.Anonymous) -> VariantGet:
    args = node.expressions
    if len(args) not in (2, 3):
        raise _unsupported("variant_get call (it takes 2 or 3 arguments)", node)
    column = _column_of(args[0], node)
    path, target = _string_arg(args[1], node), (_string_arg(args[2], node) if len(args) == 3 else "variant")
    return VariantGet(column, normalize_variant_path(path), normalize_type(target),
                      _VARIANT_GET[str(node.this).lower()], eager=True)


def _string_arg(node: exp.Expression, call: exp.Expression) -> Any:
    if isinstance(node, exp.Literal) and node.is_string:
        return str(node.this)
    raise _unsupported("non-literal variant_get argument", call)


def _call(node: exp.Expression) -> Term | None:
    """A scalar function or operator node as a ``Call``; None if the node is not one."""
    op = _ARITHMETIC.get(type(node))
    if op is not None:
        return Call(op, (_term(node.this), _term(node.expression)))
    name = _UNARY.get(type(node))
    if name is not None:
        inner = node.this.this if isinstance(node.this, exp.TsOrDsToDate) else node.this
        return Call(name, (_term(inner),))
    name = _STRING_TESTS.get(type(node))
    if name is not None:
        return Call(name, (_term(node.this), _term(node.expression)))
    if isinstance(node, exp.DPipe):
        return Call("concat", (_term(node.this), _term(node.expression)))
    if isinstance(node, exp.Coalesce):
        return Call("coalesce", tuple(_term(a) for a in (node.this, *node.expressions)))
    if isinstance(node, exp.Trim):
        if node.args.get("expression") is not None or node.args.get("collation") is not None:
            raise _unsupported("trim of characters other than spaces", node)
        position = str(node.args.get("position") or "BOTH").upper()
        return Call({"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "trim"), (_term(node.this),))
    if isinstance(node, exp.Substring):
        args = [node.this, node.args.get("start"), node.args.get("length")]
        return Call("substring", tuple(_term(a) for a in args if a is not None))
    if isinstance(node, (exp.Like, exp.ILike, exp.Escape)):
        return Condition(_predicate(node))
    if isinstance(node, exp.Case):
        base = node.args.get("this")
        parts: list[Term] = []
        for branch in node.args.get("ifs") or []:
            if base is not None:
                condition: Predicate = Comparison("=", _term(base), _term(branch.this))
            else:
                condition = _predicate(branch.this)
            parts += [Condition(condition), _term(branch.args["true"])]
        default = node.args.get("default")
        return Call("case", (*parts, _term(default) if default is not None else Literal(None, "void")))
    if isinstance(node, exp.If):
        otherwise = node.args.get("false")
        return Call("case", (Condition(_predicate(node.this)), _term(node.args["true"]),
                             _term(otherwise) if otherwise is not None else Literal(None, "void")))
    if isinstance(node, exp.Nullif):
        value = _term(node.this)
        return Call("case", (Condition(Comparison("=", value, _term(node.expression))), Literal(None, "void"), value))
    return None


def _like(node: exp.Expression) -> Call:
    escape: Term = Literal("\\", "string")
    if isinstance(node, exp.Escape):
        escape = _term(node.expression)
        node = node.this
    if not isinstance(node, (exp.Like, exp.ILike)):
        raise _unsupported("ESCAPE", node)
    name = "ilike" if isinstance(node, exp.ILike) else "like"
    return Call(name, (_term(node.this), _term(node.expression), escape))
