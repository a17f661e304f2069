"""Vectorised evaluation, with ``pyarrow.compute``, of the predicates on which it cannot
differ from the row evaluator (``varlake.expr.RowEvaluator``), and zero-copy removal of
the rows a deletion vector deletes.

``arrow_predicate`` compiles a bound predicate built only of AND / OR / NOT, IS [NOT] NULL,
comparisons (``= <> < <= > >= <=>``) and IN / NOT IN over top-level columns and literals
whose values are integers, strings, booleans or dates -- types on which Arrow's order is
Spark's (strings compare by UTF-8 bytes, i.e. by code point, as Python's ``str`` does) and
on which nothing can raise, so the order in which Spark checks a row cannot matter. Any
other predicate (a cast, a Variant path, a function, a float with Spark's NaN order, a
struct field ...) gives None: the caller evaluates it row by row. NULL follows SQL's
three-valued logic (Kleene AND / OR), and only TRUE matches.

``keep_rows`` drops the rows a keep mask says are deleted: as zero-copy slices of the kept
runs when the deleted rows are few (a deletion vector's usual shape), else with one
``filter``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.expr.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Cast,
    Column,
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

__all__ = ["ArrowPredicate", "arrow_predicate", "keep_rows"]

#: a compiled predicate: the table -> a boolean array (nulls for SQL NULL)
ArrowPredicate = Callable[[pa.Table], pa.ChunkedArray | pa.Array]
_Vector = Callable[[pa.Table], Any]
_FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}
_COMPARE = {"=": pc.equal, "<>": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}
#: the bound column types each value family may have
_DTYPES = {"int": {"byte", "short", "integer", "int", "long"}, "string": {"string"}, "boolean": {"boolean"}, "date": {"date"}}
#: dropped rows at most this fraction of the rows: slices of the kept runs, else one ``filter``
_SLICE_RUNS = 1 / 64


class _Unsupported(Exception):
    """The predicate needs the row evaluator."""


_INTEGER_WIDTH = {"byte": 1, "short": 2, "integer": 4, "int": 4, "long": 8}


def _widens(cast: Cast) -> bool:
    """Whether ``cast`` takes an integer column to an integer type at least as wide."""
    inner = cast.term
    if not isinstance(inner, Column) or inner.dtype not in _INTEGER_WIDTH or cast.target not in _INTEGER_WIDTH:
        return False
    return _INTEGER_WIDTH[cast.target] >= _INTEGER_WIDTH[inner.dtype]


def _family(arrow_type: pa.DataType) -> str:
    if pa.types.is_integer(arrow_type):
        return "int"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if pa.types.is_boolean(arrow_type):
        return "boolean"
    if pa.types.is_date32(arrow_type):
        return "date"
    raise _Unsupported(str(arrow_type))


def _value_family(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int"
    if isinstance(value, str):
        return "string"
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return "date"
    raise _Unsupported(type(value).__name__)


class _Compiler:
    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def column(self, term: Any) -> tuple[str, str]:
        if isinstance(term, Cast) and _widens(term):
            term = term.term  # an exact integer widening: values compare the same
        if not isinstance(term, Column) or len(term.path) != 1 or term.path[0] not in self.schema.names:
            raise _Unsupported(repr(term))
        if self.schema.get_all_field_indices(term.path[0]) != [self.schema.get_field_index(term.path[0])]:
            raise _Unsupported(term.path[0])
        family = _family(self.schema.field(term.path[0]).type)
        if term.dtype is not None and term.dtype not in _DTYPES[family]:
            raise _Unsupported(f"{term.path[0]}: {term.dtype}")
        return term.path[0], family

    def literal(self, term: Literal, family: str) -> Any:
        if term.value is not None and _value_family(term.value) != family:
            raise _Unsupported(repr(term))
        return term.value

    def compile(self, node: Predicate) -> _Vector:
        if isinstance(node, AlwaysTrue):
            return lambda t: pa.array(np.ones(t.num_rows, dtype=bool))
        if isinstance(node, AlwaysFalse):
            return lambda t: pa.array(np.zeros(t.num_rows, dtype=bool))
        if isinstance(node, And):
            left, right = self.compile(node.left), self.compile(node.right)
            return lambda t: pc.and_kleene(left(t), right(t))
        if isinstance(node, Or):
            left, right = self.compile(node.left), self.compile(node.right)
            return lambda t: pc.or_kleene(left(t), right(t))
        if isinstance(node, Not):
            child = self.compile(node.child)
            return lambda t: pc.invert(child(t))
        if isinstance(node, (IsNull, IsNotNull)):
            name, _ = self.column(node.term)
            test = pc.is_null if isinstance(node, IsNull) else pc.is_valid
            return lambda t: test(t.column(name))
        if isinstance(node, Comparison):
            return self.comparison(node)
        if isinstance(node, (In, NotIn)):
            member = self.member(node)
            return (lambda t: pc.invert(member(t))) if isinstance(node, NotIn) else member
        raise _Unsupported(type(node).__name__)

    def comparison(self, node: Comparison) -> _Vector:
        op, left, right = node.op, node.left, node.right
        if isinstance(left, Literal):
            op, left, right = _FLIP.get(op, ""), right, left
        if op not in _FLIP:
            raise _Unsupported(op)
        name, family = self.column(left)
        if isinstance(right, Literal):
            value = self.literal(right, family)
            arrow_type = self.schema.field(name).type
            if value is None:
                if op == "<=>":
                    return lambda t: pc.is_null(t.column(name))
                return lambda t: pa.nulls(t.num_rows, pa.bool_())
            scalar = pa.scalar(value)
            if family == "int":
                scalar = pa.scalar(value, pa.int64())  # compared exactly whatever the column's width
            elif family == "string":
                scalar = pa.scalar(value, arrow_type)
            if op == "<=>":
                return lambda t: pc.fill_null(pc.equal(t.column(name), scalar), False)
            fn = _COMPARE[op]
            return lambda t: fn(t.column(name), scalar)
        other, other_family = self.column(right)
        if other_family != family:
            raise _Unsupported(f"{family} vs {other_family}")
        if op == "<=>":
            def null_safe(t: pa.Table) -> Any:
                a, b = t.column(name), t.column(other)
                both_null = pc.and_(pc.is_null(a), pc.is_null(b))
                return pc.or_(both_null, pc.fill_null(pc.equal(a, b), False))

            return null_safe
        fn = _COMPARE[op]
        return lambda t: fn(t.column(name), t.column(other))

    def member(self, node: In | NotIn) -> _Vector:
        name, family = self.column(node.term)
        values = [self.literal(v, family) for v in node.values]
        present = [v for v in values if v is not None]
        has_null = len(present) < len(values)
        value_type = pa.int64() if family == "int" else self.schema.field(name).type
        value_set = pa.array(present, value_type)

        def member(t: pa.Table) -> Any:
            column = t.column(name)
            if family == "int":
                column = column.cast(pa.int64())  # widening: exact
            found = pc.is_in(column, value_set=value_set, skip_nulls=True)
            found = pc.if_else(pc.is_null(column), pa.scalar(None, pa.bool_()), found)
            if has_null:  # x IN (.., NULL) is TRUE or NULL, never FALSE
                found = pc.if_else(found, True, pa.scalar(None, pa.bool_()))
            return found

        return member


def arrow_predicate(predicate: Predicate, schema: pa.Schema) -> ArrowPredicate | None:
    """``predicate`` (bound) compiled for tables of ``schema`` (their columns named as the
    table's), or None when it needs the row evaluator (see the module doc)."""
    try:
        return _Compiler(schema).compile(predicate)
    except (_Unsupported, OverflowError, pa.ArrowException):
        return None


def matches(compiled: ArrowPredicate, table: pa.Table) -> np.ndarray:
    """Which rows of ``table`` the compiled predicate makes TRUE (NULL and FALSE do not)."""
    result = compiled(table)
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks() if result.num_chunks != 1 else result.chunk(0)
    if len(result) != table.num_rows:  # a constant
        result = pa.array(np.full(table.num_rows, bool(result[0].as_py()) if len(result) else False))
    return np.asarray(pc.fill_null(result, False).to_numpy(zero_copy_only=False), dtype=bool)


def keep_rows(table: pa.Table, keep: np.ndarray) -> pa.Table:
    """The rows of ``table`` where ``keep`` (a boolean mask over its rows) is True, in order."""
    n = len(keep)
    dropped = np.flatnonzero(~keep)
    if not len(dropped):
        return table
    if len(dropped) > max(n * _SLICE_RUNS, 1) or not table.num_columns:
        return table.filter(pa.array(keep, pa.bool_()))
    starts = np.concatenate(([0], dropped + 1))
    ends = np.concatenate((dropped, [n]))
    runs = [(int(s), int(e - s)) for s, e in zip(starts, ends) if e > s]
    if not runs:
        return table.slice(0, 0)
    return pa.concat_tables([table.slice(s, length) for s, length in runs])
