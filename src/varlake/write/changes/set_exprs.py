"""UPDATE's ``SET column = expression`` (and MERGE's): SQL text -> a function of a row, with
Spark's (ANSI) semantics, and the value stored as the column's type.

Everything the expression layer parses -- literals, column references (``t.x`` for
struct fields or aliases), Variant extraction (``v:a.b``, ``v:a::int``, ``variant_get``),
``CAST``/``TRY_CAST``, arithmetic and functions -- is parsed, bound and evaluated by it
(``varlake.expr``; arithmetic semantics in ``varlake.semantics.arithmetic``), so it behaves
as in filters and CHECK constraints. This module adds what produces Variants:
``parse_json``/``try_parse_json``, ``CAST(x AS VARIANT)`` (``cast_to_variant``) and the
Variant patch functions of ``varlake.variant.patch`` (``VARIANT_FUNCTIONS``: Variant
arguments passed as Variants, a typed value argument cast to VARIANT by its SQL type as
Spark does), each at the top of an expression (their arguments may be any expression).

The result is assigned as Spark's store assignment does: a value of another type is cast
to the column's type (ANSI: a value that does not fit raises); a non-Variant value is not
assigned to a Variant column (use ``parse_json``, ``CAST(x AS VARIANT)`` or a Variant).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from varlake.errors import (
    ExpressionEvaluationError,
    ExpressionParseError,
    ExpressionTypeError,
    UnknownColumnError,
    UnsupportedExpressionError,
    VarlakeError,
)
from varlake.expr.dialect import CANONICAL, DIALECT
from varlake.expr.rows import row_variant_get
from varlake.expr import IsNull, bind, term_of, term_type
from varlake.expr.casts import can_cast, cast_value
from varlake.expr.rows import TermCompiler
from varlake.expr.types import normalize_type
from varlake.variant import Variant, parse_json, try_parse_json
from varlake.variant.functions import cast_to_variant

__all__ = ["VARIANT_FUNCTIONS", "CompiledSet", "compile_set", "variant_patch_functions"]

Row = Mapping[str, Any]
RowFn = Callable[[Row], Any]

#: Spark 4.3's Variant patch functions, evaluated by ``varlake.variant.patch`` when present
VARIANT_FUNCTIONS = (
    "variant_set", "try_variant_set", "variant_insert", "try_variant_insert", "variant_delete",
    "variant_array_append", "try_variant_array_append", "variant_strip_nulls", "is_valid_variant",
)  # fmt: skip


_PATCH_MODULES = ("varlake.variant.patch", "varlake.variant.validity")
#: functions whose third argument is the value to place (cast to VARIANT by its SQL type)
_VALUE_ARGUMENT = frozenset(
    {"variant_set", "try_variant_set", "variant_insert", "try_variant_insert", "variant_array_append",
     "try_variant_array_append"}
)  # fmt: skip


def variant_patch_functions() -> dict[str, Callable[..., Any]]:
    """The patch functions ``varlake.variant.patch`` (and ``is_valid_variant`` from
    ``varlake.variant.validity``) provide; a module not installed provides none."""
    found: dict[str, Callable[..., Any]] = {}
    for name in _PATCH_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        for function in VARIANT_FUNCTIONS:
            if function not in found and callable(getattr(module, function, None)):
                found[function] = getattr(module, function)
    return found


def as_variant(value: Any) -> Variant | None:
    """A Variant column's row value (``{"metadata", "value"}`` or a ``Variant``) as a ``Variant``."""
    if value is None or isinstance(value, Variant):
        return value
    return Variant(value["metadata"], value["value"])


class _Compiler:
    def __init__(self, types: Mapping[tuple[str, ...], str], session_tz: str, text: str) -> None:
        self.types = types
        self.tz = session_tz
        self.text = text
        self.terms = TermCompiler(row_variant_get)
        self.patch = variant_patch_functions()

    def fail(self, what: str, node: exp.Expression) -> UnsupportedExpressionError:
        return UnsupportedExpressionError(f"SET expression {self.text!r}: {what} is not supported", node.sql(CANONICAL))

    def compile(self, node: exp.Expression) -> tuple[RowFn, str]:
        if isinstance(node, exp.Paren):
            return self.compile(node.this)
        if isinstance(node, exp.Cast) and normalize_type(node.to.sql(dialect="spark")) == "variant":
            return self.to_variant(node)
        name = _function_name(node)
        if name in ("parse_json", "try_parse_json"):
            return self.parse_json(node, name == "try_parse_json")
        if name in VARIANT_FUNCTIONS:
            return self.variant_function(name, node)  # type: ignore[arg-type]
        if any(_is_special(n) for n in node.walk() if n is not node):
            raise self.fail("a Variant function or CAST AS VARIANT inside another expression", node)
        return self.leaf(node)  # columns, literals, casts, arithmetic, functions: the expression layer

    def leaf(self, node: exp.Expression) -> tuple[RowFn, str]:
        term = term_of(node)
        bound = bind(IsNull(term), self.types, session_tz=self.tz)
        if not isinstance(bound, IsNull):
            raise self.fail("expression", node)
        return self.terms.compile(bound.term), term_type(bound.term)

    def to_variant(self, node: exp.Cast) -> tuple[RowFn, str]:
        """``CAST(x AS VARIANT)``: Spark's cast of a value of x's type (``cast_to_variant``)."""
        inner, source = self.compile(node.this)
        if source in ("variant", "void"):
            return inner, "variant"
        text, tz = self.text, self.tz

        def cast(row: Row) -> Any:
            try:
                return cast_to_variant(inner(row), source, zone=tz)
            except VarlakeError as exc:
                raise ExpressionEvaluationError(f"SET expression {text!r}: CAST AS VARIANT: {exc}") from exc

        return cast, "variant"

    def parse_json(self, node: exp.Expression, try_: bool) -> tuple[RowFn, str]:
        args = _arguments(node)
        if len(args) != 1:
            raise self.fail("parse_json with other than one argument", node)
        inner, t = self.compile(args[0])
        if t not in ("string", "void"):
            raise ExpressionTypeError(f"SET expression {self.text!r}: parse_json takes a string, not {t}")

        def parse(row: Row) -> Any:
            text = inner(row)
            if text is None:
                return None
            if try_:
                return try_parse_json(text)
            try:
                return parse_json(text)
            except VarlakeError as exc:
                raise ExpressionEvaluationError(f"SET expression {self.text!r}: parse_json: {exc}") from exc

        return parse, "variant"

    def variant_function(self, name: str, node: exp.Expression) -> tuple[RowFn, str]:
        function = self.patch.get(name)
        if function is None:
            raise UnsupportedExpressionError(
                f"SET expression {self.text!r}: {name} needs varlake.variant.patch, which this installation does not have"
            )
        compiled = [self.compile(a) for a in _arguments(node)]
        result_type = "boolean" if name == "is_valid_variant" else "variant"
        if compiled and compiled[0][1] not in ("variant", "void"):
            raise ExpressionTypeError(f"SET expression {self.text!r}: {name} takes a Variant first, not {compiled[0][1]}")
        value_type = None
        if name in _VALUE_ARGUMENT and len(compiled) >= 3 and compiled[2][1] not in ("variant", "void"):
            value_type = compiled[2][1]
        tz = self.tz

        def call(row: Row) -> Any:
            values = [as_variant(f(row)) if t == "variant" else f(row) for f, t in compiled]
            if value_type is not None and values[2] is not None:  # Spark casts the value to VARIANT first
                values[2] = cast_to_variant(values[2], value_type, zone=tz)
            return function(*values)

        return call, result_type


def _function_name(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    if isinstance(node, exp.Func) and not isinstance(node, (exp.Cast, exp.JSONExtract)):
        return node.sql_name().lower() if hasattr(node, "sql_name") else None
    return None


def _arguments(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    return [v for v in [node.args.get("this"), *node.args.get("expressions", [])] if isinstance(v, exp.Expression)]


def _is_special(node: exp.Expression) -> bool:
    """A call this module evaluates itself (not the expression layer)."""
    name = _function_name(node)
    if name in ("parse_json", "try_parse_json") or name in VARIANT_FUNCTIONS:
        return True
    return isinstance(node, exp.Cast) and normalize_type(node.to.sql(dialect="spark")) == "variant"


class CompiledSet:
    """The SET assignments of an UPDATE: ``values(row)`` gives each column's new value."""

    def __init__(self, assignments: Mapping[str, tuple[RowFn, str, str]]) -> None:
        self.assignments = dict(assignments)

    @property
    def columns(self) -> list[str]:
        return list(self.assignments)

    def evaluate(self, column: str, row: Row) -> Any:
        function, source, target = self.assignments[column]
        value = function(row)
        if value is None:
            return None
        if target == "variant":
            variant = as_variant(value)
            return {"metadata": variant.metadata, "value": variant.value}  # type: ignore[union-attr]
        if source == target:
            return value
        return cast_value(value, source, target)


def compile_set(
    assignments: Mapping[str, str],
    types: Mapping[tuple[str, ...], str],
    session_tz: str = "UTC",
    targets: Mapping[str, str] | Mapping[tuple[str, ...], str] | None = None,
) -> CompiledSet:
    """Compile ``{column: SQL expression}`` against the field types the expressions see
    (``read.schema_types`` of the table); ``targets`` are the assignable columns and their
    types (default: the top-level columns of ``types``)."""
    if not assignments:
        raise ExpressionParseError("UPDATE needs at least one SET assignment")
    source = targets if targets is not None else types
    column_types = {
        (k if isinstance(k, str) else k[0]): t for k, t in source.items() if isinstance(k, str) or len(k) == 1
    }  # names, or field paths (``read.schema_types``) of which the top-level ones count
    top = {name.lower(): name for name in column_types}
    out: dict[str, tuple[RowFn, str, str]] = {}
    for column, text in assignments.items():
        name = top.get(str(column).lower())
        if name is None:
            raise UnknownColumnError(f"SET {column!r}: the table has no such top-level column ({sorted(top.values())})")
        if name in out:
            raise ExpressionParseError(f"SET {column!r}: the column is assigned twice")
        if not isinstance(text, str):
            raise ExpressionParseError(f"SET {column!r}: the value must be SQL text, got {type(text).__name__}")
        try:
            node = sqlglot.parse_one(text, read=DIALECT)
        except SqlglotError as exc:
            raise ExpressionParseError(f"cannot parse SET expression {text!r}: {str(exc).splitlines()[0]}") from None
        except RecursionError:
            raise ExpressionParseError(f"SET expression {text[:80]!r}... is nested too deeply") from None
        try:
            function, source = _Compiler(types, session_tz, text).compile(node)
        except RecursionError:
            raise ExpressionParseError(f"SET expression {text[:80]!r}... is nested too deeply") from None
        target = column_types[name]
        if target == "variant" and source not in ("variant", "void"):
            raise ExpressionTypeError(
                f"SET {name!r}: a {source} value cannot be stored in a Variant column (use parse_json or a Variant)"
            )
        if target in ("struct", "array", "map") and source not in (target, "void"):
            raise ExpressionTypeError(f"SET {name!r}: a {source} value cannot be stored in a {target} column")
        if source not in (target, "void", "variant") and not can_cast(source, target):
            raise ExpressionTypeError(f"SET {name!r}: a {source} value cannot be stored in a {target} column")
        if source == "variant" and target != "variant":
            raise ExpressionTypeError(f"SET {name!r}: cast the Variant to {target} (e.g. v:a::{target})")
        out[name] = (function, source, target)
    return CompiledSet(out)
