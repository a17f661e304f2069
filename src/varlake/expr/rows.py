"""Row evaluator: the exact SQL result (TRUE / FALSE / NULL) of a bound predicate per row.

It is the oracle the skipping evaluator is tested against, and the residual filter a
reader can apply.  Rows are mappings of column name to Python value (nested dicts for
structs; ``pyarrow.Table.to_pylist()`` gives exactly that).  Variant extraction is
injected: ``variant_get(column_value, normalized_path, target_type)`` returns the cast
value or None, and raises on a value that does not cast; ``try_variant_get`` turns that
error into NULL, but not ``OutOfPythonRange``: Spark reads a date of year 0 or 10000,
which Python's ``date`` cannot hold, so a NULL would be a wrong answer.  Comparisons
follow Spark: NaN equals NaN and sorts above every number.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from varlake.errors import ExpressionError, ExpressionEvaluationError, VarlakeError
from varlake.expr.binding import require_bound, term_type
from varlake.expr.casts import cast_value
from varlake.expr.functions import strict_function
from varlake.expr.tree import (
    Call,
    Cast,
    Column,
    Comparison,
    Condition,
    In,
    IsNotNull,
    IsNull,
    Literal,
    NotIn,
    Predicate,
    Term,
    VariantGet,
)
from varlake.expr.visitors import PredicateVisitor, visit
from varlake.variant import Variant, VariantPath
from varlake.variant.cast import OutOfPythonRange
from varlake.variant.functions import variant_get as _codec_variant_get


def row_variant_get(value: Any, path: str, type_name: str) -> Any:
    """The extraction rows are evaluated with: ``value`` is a Variant column's row value
    (``{"metadata", "value"}`` as ``pyarrow``'s ``to_pylist`` gives it, or a ``Variant``),
    ``path`` the expression layer's normalized path; Spark's ``variant_get`` semantics."""
    if value is None:
        return None
    variant = value if isinstance(value, Variant) else Variant(value["metadata"], value["value"])
    return _codec_variant_get(variant, VariantPath.from_normalized(path), type_name)

Row = Mapping[str, Any]
RowFn = Callable[[Row], Any]
VariantGetFn = Callable[[Any, str, str], Any]
_CAST_FAILURES = (VarlakeError, ValueError, TypeError, ArithmeticError)
_OPS: Mapping[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _nan_aware(op: str) -> Callable[[Any, Any], bool]:
    """Spark's float order: NaN = NaN, and NaN > every other value."""
    plain = _OPS[op]

    def compare(a: Any, b: Any) -> bool:
        a_nan, b_nan = _is_nan(a), _is_nan(b)
        if not (a_nan or b_nan):
            return plain(a, b)
        order = 0 if a_nan and b_nan else (1 if a_nan else -1)
        return plain(order, 0)

    return compare


def compare_values(op: str, left: Any, right: Any, nan_aware: bool = True) -> bool | None:
    """SQL ``left op right`` on Python values (``<=>`` never gives NULL)."""
    if op == "<=>":
        if left is None or right is None:
            return left is None and right is None
        op = "="
    elif left is None or right is None:
        return None
    return (_nan_aware(op) if nan_aware else _OPS[op])(left, right)


class TermCompiler:
    def __init__(self, variant_get: VariantGetFn | None, predicates: _RowCompiler | None = None) -> None:
        self.variant_get = variant_get
        self.predicates = predicates

    def compile(self, term: Term) -> RowFn:
        if isinstance(term, Literal):
            value = term.value
            return lambda row: value
        if isinstance(term, Column):
            return _column_getter(term.path)
        if isinstance(term, VariantGet):
            return self._variant(term)
        if isinstance(term, Cast):
            return self._cast(term)
        if isinstance(term, Call):
            return self._call(term)
        if isinstance(term, Condition):
            if self.predicates is None:
                raise ExpressionError(f"cannot evaluate {term} here")
            return visit(term.predicate, self.predicates)
        raise ExpressionError(f"cannot evaluate term {term!r}")

    def _call(self, term: Call) -> RowFn:
        args = [self.compile(a) for a in term.args]
        if term.name == "coalesce":  # lazy: later arguments are not evaluated
            def first(row: Row) -> Any:
                for arg in args:
                    value = arg(row)
                    if value is not None:
                        return value
                return None

            return first
        if term.name == "case":  # lazy: only the branch taken is evaluated
            whens, default = list(zip(args[0:-1:2], args[1:-1:2])), args[-1]

            def case(row: Row) -> Any:
                for condition, value in whens:
                    if condition(row) is True:
                        return value(row)
                return default(row)

            return case
        fn = strict_function(term)
        if len(args) == 1:
            only = args[0]

            def unary(row: Row) -> Any:
                value = only(row)
                return None if value is None else fn(value)

            return unary

        def strict(row: Row) -> Any:
            values = []
            for arg in args:  # Spark stops at the first NULL argument
                value = arg(row)
                if value is None:
                    return None
                values.append(value)
            try:
                return fn(*values)
            except TypeError as exc:
                raise ExpressionEvaluationError(f"{term}: {exc}") from exc

        return strict

    def _variant(self, term: VariantGet) -> RowFn:
        if self.variant_get is None:
            raise ExpressionError(f"{term} needs a variant_get function to evaluate rows")
        fetch, extract, path, target = _column_getter(term.column.path), self.variant_get, term.path, term.target

        def get(row: Row) -> Any:
            value = fetch(row)
            if value is None:
                return None
            try:
                return extract(value, path, target)
            except OutOfPythonRange as exc:  # Spark reads it: never the try form's NULL
                raise OutOfPythonRange(f"{term}: {exc}") from exc
            except _CAST_FAILURES as exc:
                if term.try_:
                    return None
                raise ExpressionEvaluationError(f"{term}: {exc}") from exc

        return get

    def _cast(self, term: Cast) -> RowFn:
        inner, source, target, tz, try_ = self.compile(term.term), term_type(term.term), term.target, term.tz, term.try_

        def get(row: Row) -> Any:
            value = inner(row)
            try:
                return cast_value(value, source, target, tz)
            except ExpressionEvaluationError:
                if try_:
                    return None
                raise
            except OutOfPythonRange as exc:  # Spark casts it: never the try form's NULL
                raise OutOfPythonRange(f"{term}: {exc}") from exc

        return get


def _column_getter(path: tuple[str, ...]) -> RowFn:
    head, rest = path[0], path[1:]
    if not rest:
        return lambda row: row.get(head)

    def get(row: Row) -> Any:
        value = row.get(head)
        for name in rest:
            if value is None:
                return None
            value = value.get(name)
        return value

    return get


def _has_float(*terms: Term) -> bool:
    return any(term_type(t) in ("double", "float") or _is_nan(getattr(t, "value", None)) for t in terms)


class _RowCompiler(PredicateVisitor[RowFn]):
    def __init__(self, variant_get: VariantGetFn | None) -> None:
        self.terms = TermCompiler(variant_get, self)

    def visit_true(self) -> RowFn:
        return lambda row: True

    def visit_false(self) -> RowFn:
        return lambda row: False

    def visit_not(self, child: RowFn) -> RowFn:
        def negate(row: Row) -> bool | None:
            value = child(row)
            return None if value is None else not value

        return negate

    def visit_and(self, left: RowFn, right: RowFn) -> RowFn:
        def both(row: Row) -> bool | None:
            a = left(row)
            if a is False:
                return False
            b = right(row)
            if b is False:
                return False
            return None if a is None or b is None else True

        return both

    def visit_or(self, left: RowFn, right: RowFn) -> RowFn:
        def either(row: Row) -> bool | None:
            a = left(row)
            if a is True:
                return True
            b = right(row)
            if b is True:
                return True
            return None if a is None or b is None else False

        return either

    def visit_is_null(self, node: IsNull) -> RowFn:
        get = self.terms.compile(node.term)
        return lambda row: get(row) is None

    def visit_is_not_null(self, node: IsNotNull) -> RowFn:
        get = self.terms.compile(node.term)
        return lambda row: get(row) is not None

    def visit_comparison(self, node: Comparison) -> RowFn:
        left, right, op = self.terms.compile(node.left), self.terms.compile(node.right), node.op
        nan_aware = _has_float(node.left, node.right)

        def compare(row: Row) -> bool | None:
            try:
                return compare_values(op, left(row), right(row), nan_aware)
            except TypeError as exc:
                raise ExpressionEvaluationError(f"{node}: {exc}") from exc

        return compare

    def visit_in(self, node: In) -> RowFn:
        get = self.terms.compile(node.term)
        values = [v.value for v in node.values if v.value is not None]
        has_null = len(values) < len(node.values)
        nan_aware = _has_float(node.term, *node.values)

        def member(row: Row) -> bool | None:
            value = get(row)
            if value is None:
                return None
            if any(compare_values("=", value, v, nan_aware) for v in values):
                return True
            return None if has_null else False

        return member

    def visit_not_in(self, node: NotIn) -> RowFn:
        return self.visit_not(self.visit_in(In(node.term, node.values)))


class RowEvaluator:
    """Evaluates a bound predicate on rows; compiled once, holds no per-row state."""

    __slots__ = ("predicate", "_fn")

    def __init__(self, predicate: Predicate, variant_get: VariantGetFn | None = None) -> None:
        require_bound(predicate)
        self.predicate = predicate
        self._fn = visit(predicate, _RowCompiler(variant_get))

    def evaluate(self, row: Row) -> bool | None:
        """TRUE, FALSE or None (SQL NULL) for one row."""
        return self._fn(row)

    def matches(self, row: Row) -> bool:
        """Whether a WHERE clause keeps the row (only TRUE does)."""
        return self._fn(row) is True

    def evaluate_rows(self, rows: Iterable[Row]) -> list[bool | None]:
        fn = self._fn
        return [fn(row) for row in rows]

    def evaluate_table(self, table: Any) -> list[bool | None]:
        """Per-row results for a ``pyarrow.Table`` (or RecordBatch)."""
        return self.evaluate_rows(table.to_pylist())
