"""What every row a writer adds must satisfy, as Delta on Spark checks it.

A table's constraints are its CHECK constraints (table properties
``delta.constraints.<name>`` = SQL boolean), its column invariants (field metadata
``delta.invariants`` = ``{"expression": {"expression": "<sql>"}}``) and its NOT NULL
columns (non-nullable fields, through structs but not into arrays or maps). Delta's
``CheckDeltaInvariant`` fails a CHECK or an invariant whose result is FALSE *or NULL*,
and a NOT NULL column holding NULL (a NULL parent struct counts). Both writers use
this module: ``Table.stage`` evaluates on the Arrow table before any file is written
(:func:`check_arrow`); the Spark writer folds the same SQL into its job
(``varlake.spark.writing.writer``). A violation raises ``ConstraintViolationError`` with
Delta's message, each value shown as Spark's ``CAST(value AS STRING)`` (as the Spark
writer shows it); a row on which the SQL fails as Spark's ANSI evaluation fails (division
by zero, overflow) raises ``ExpressionEvaluationError``; an expression varlake cannot
evaluate refuses the write (``UnsupportedFeatureError``). The expression layer evaluates
comparisons, IN, BETWEEN, LIKE, CASE, arithmetic and common scalar functions
(``varlake.expr.functions``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from varlake.delta import constants as C
from varlake.delta.schema import StructField, StructType
from varlake.errors import (
    ConstraintViolationError,
    ExpressionError,
    ExpressionEvaluationError,
    UnsupportedFeatureError,
    VarlakeError,
)
from varlake.expr.rows import row_variant_get
from varlake.expr.casts import cast_value
from varlake.expr import (
    IsNotNull,
    Predicate,
    RowEvaluator,
    bind,
    col,
    flatten_delta_schema,
    parse_predicate,
    referenced_columns,
)

__all__ = [
    "Constraint",
    "check_arrow",
    "compile_constraint",
    "constraint_columns",
    "table_constraints",
    "shown_value",
    "violation_message",
]


@dataclass(frozen=True)
class Constraint:
    """One rule: ``kind`` is ``check``, ``invariant`` or ``not null``; ``expression`` is SQL
    text (for NOT NULL, the column's path); ``name`` as Delta reports it."""

    kind: str
    name: str
    expression: str
    column: tuple[str, ...] = ()


def table_constraints(schema: StructType, configuration: Mapping[str, str], where: str = "table") -> list[Constraint]:
    """The constraints of a table with this schema and these properties, in Delta's order
    (CHECK constraints, then per column NOT NULL or invariant)."""
    out = [
        Constraint("check", key[len(C.PROP_CONSTRAINT_PREFIX):], str(text))
        for key, text in sorted(configuration.items())
        if key.lower().startswith(C.PROP_CONSTRAINT_PREFIX)
    ]
    for path, field in _struct_fields(schema, ()):
        if not field.nullable:
            out.append(Constraint("not null", "NOT NULL", ".".join(path), path))
        elif C.COL_INVARIANTS in field.metadata:
            sql = _invariant_sql(field.metadata[C.COL_INVARIANTS], ".".join(path), where)
            out.append(Constraint("invariant", f"EXPRESSION({sql})", sql, path))
    return out


def _struct_fields(struct: StructType, prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], StructField]]:
    """Fields reachable through structs only (Delta does not look into arrays or maps)."""
    out = []
    for f in struct.fields:
        path = (*prefix, f.name)
        out.append((path, f))
        if isinstance(f.type, StructType):
            out.extend(_struct_fields(f.type, path))
    return out


def _invariant_sql(raw: Any, column: str, where: str) -> str:
    try:
        rule = json.loads(raw) if isinstance(raw, str) else raw
        sql = rule["expression"]["expression"]
    except (ValueError, TypeError, KeyError) as exc:
        raise UnsupportedFeatureError(
            f"{where}: column {column!r} has an unrecognized {C.COL_INVARIANTS} rule {raw!r} ({type(exc).__name__})"
        ) from None
    if not isinstance(sql, str):
        raise UnsupportedFeatureError(f"{where}: column {column!r} has an unrecognized {C.COL_INVARIANTS} rule {raw!r}")
    return sql


def compile_constraint(constraint: Constraint, schema: StructType, where: str = "table") -> Predicate:
    """The bound predicate a row must make TRUE; refuses SQL varlake cannot evaluate."""
    if constraint.kind == "not null":
        return bind(IsNotNull(col(constraint.column)), _types(schema))
    try:
        return bind(parse_predicate(constraint.expression), _types(schema))
    except ExpressionError as exc:
        raise UnsupportedFeatureError(
            f"{where}: {_label(constraint)} cannot be evaluated by varlake, so writes are refused: {exc}"
        ) from None


def constraint_columns(constraint: Constraint, schema: StructType) -> list[tuple[str, ...]]:
    """The column paths a constraint reads (in the order they appear), for its message."""
    if constraint.kind == "not null":
        return [constraint.column]
    try:
        predicate = bind(parse_predicate(constraint.expression), _types(schema))
    except VarlakeError:
        return [(f.name,) for f in schema.fields]
    return sorted({c.path for c in referenced_columns(predicate)})


def violation_message(constraint: Constraint, values: Mapping[str, str]) -> str:
    """Delta's text: DELTA_VIOLATE_CONSTRAINT_WITH_VALUES / DELTA_NOT_NULL_CONSTRAINT_VIOLATED."""
    if constraint.kind == "not null":
        return f"NOT NULL constraint violated for column: {constraint.expression}."
    shown = "".join(f"\n - {name} : {value}" for name, value in values.items())
    return f"CHECK constraint {constraint.name} {constraint.expression} violated by row with values:{shown}"


def check_arrow(
    table: Any, schema: StructType, configuration: Mapping[str, str], where: str = "table", session_tz: str = "UTC"
) -> None:
    """Raise ``ConstraintViolationError`` for the first row of the ``pyarrow.Table`` that
    breaks a constraint (a NULL result breaks it, as in Delta); no-op without constraints.
    The message shows each value as Spark's ``CAST(value AS STRING)`` in ``session_tz``."""
    constraints = table_constraints(schema, configuration, where)
    if not constraints or table.num_rows == 0:
        return
    for c in constraints:
        if c.kind == "not null" and _has_null(table, c.column):
            raise ConstraintViolationError(f"{where}: {violation_message(c, {})}")
    checks = [c for c in constraints if c.kind != "not null"]
    if not checks:
        return
    compiled = [(c, RowEvaluator(compile_constraint(c, schema, where), variant_get=row_variant_get)) for c in checks]
    needed = {p[0] for c, e in compiled for p in (x.path for x in referenced_columns(e.predicate))}
    rows = table.select([n for n in table.column_names if n in needed]).to_pylist()
    types = _types(schema)
    for constraint, evaluator in compiled:
        fn = evaluator.evaluate
        for row in rows:
            if _violates(fn, row, constraint, where):
                values = {
                    ".".join(p): shown_value(_at(row, p), types.get(p, "string"), session_tz)
                    for p in constraint_columns(constraint, schema)
                }
                raise ConstraintViolationError(f"{where}: {violation_message(constraint, values)}")


def _violates(fn: Any, row: Mapping[str, Any], constraint: Constraint, where: str) -> bool:
    """Whether the row breaks the constraint; an evaluation error (ANSI division by zero,
    overflow, a cast that fails) fails the write as it fails Spark's job."""
    try:
        return fn(row) is not True
    except ExpressionEvaluationError as exc:
        raise ExpressionEvaluationError(f"{where}: evaluating {_label(constraint)} failed: {exc}") from None


def _has_null(table: Any, path: tuple[str, ...]) -> bool:
    """Whether the column at ``path`` is NULL in some row (a NULL parent struct counts)."""
    import pyarrow.compute as pc

    column = table.column(path[0])
    missing = column.is_null()
    for name in path[1:]:
        column = pc.struct_field(column, [name])
        missing = pc.or_(missing, column.is_null())
    return bool(pc.any(missing).as_py())


def _types(schema: StructType) -> dict[tuple[str, ...], str]:
    return flatten_delta_schema(json.loads(schema.to_schema_string()))


def _label(constraint: Constraint) -> str:
    if constraint.kind == "check":
        return f"CHECK constraint {constraint.name} ({constraint.expression})"
    return f"invariant {constraint.expression!r} of column {'.'.join(constraint.column)!r}"


def _at(row: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = row
    for name in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(name)
    return value


def shown_value(value: Any, type_name: str, session_tz: str = "UTC") -> str:
    """A value as a violation message shows it: Spark's ``CAST(value AS STRING)`` (the one
    implementation, ``varlake.expr.casts`` over ``varlake.semantics``), ``null`` for NULL."""
    if value is None:
        return "null"
    try:
        if type_name == "variant" and isinstance(value, Mapping):  # CAST(variant AS STRING)
            text = row_variant_get(value, "$", "string")
            return "null" if text is None else str(text)
        return str(cast_value(value, type_name, "string", session_tz))
    except (VarlakeError, KeyError, TypeError):
        return str(value)  # structs, arrays, maps: no Spark text for them here
