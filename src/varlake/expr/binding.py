"""Binding: resolve column names against a table schema and type every literal as Spark does.

A bound tree has the same shape as the input (NOT is kept, so the row evaluator still
sees the user's predicate), but every ``Column`` carries its canonical path and type,
literals are coerced to the type they are compared with (``ts >= '2024-01-01'`` becomes
a timestamp literal), and implicit casts Spark would insert appear as ``Cast`` nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from varlake.errors import ExpressionError, ExpressionEvaluationError, ExpressionTypeError, UnknownColumnError
from varlake.expr.casts import can_cast, cast_value, zone
from varlake.expr.tree import (
    ARITHMETIC_OPS,
    FLIPPED_OPS,
    AlwaysFalse,
    AlwaysTrue,
    And,
    Call,
    Cast,
    Column,
    Comparison,
    Condition,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    NotIn,
    Or,
    Predicate,
    Term,
    VariantGet,
)
from varlake.expr.functions import DATE_PARTS, FUNCTIONS, STRING_FUNCTIONS, STRING_TESTS, arithmetic_type, common_type
from varlake.expr.types import ColumnPath, is_integral, is_numeric, normalize_type
from varlake.expr.visitors import PredicateVisitor, leaf_terms, visit

_UNORDERED = frozenset({"variant", "struct", "array", "map"})
_TIME_TYPES = frozenset({"date", "timestamp", "timestamp_ntz"})


def term_type(term: Term) -> str:
    """SQL type of a bound term."""
    if isinstance(term, Column):
        if term.dtype is None:
            raise ExpressionTypeError(f"column {term} is not bound to a schema")
        return term.dtype
    if isinstance(term, VariantGet):
        return term.target
    if isinstance(term, Cast):
        return term.target
    if isinstance(term, Literal):
        return term.dtype
    if isinstance(term, Call):
        if term.dtype is None:
            raise ExpressionTypeError(f"{term} is not bound to a schema")
        return term.dtype
    if isinstance(term, Condition):
        return "boolean"
    raise ExpressionTypeError(f"not a term: {term!r}")


class _Binder(PredicateVisitor[Predicate]):
    def __init__(self, schema: Mapping[ColumnPath, str], case_sensitive: bool, tz: str) -> None:
        self.schema = {tuple(path): normalize_type(t) for path, t in schema.items()}
        self.case_sensitive = case_sensitive
        self.tz = tz
        zone(tz)  # fail early on an unknown session zone
        folded: dict[ColumnPath, list[ColumnPath]] = {}
        for path in self.schema:
            folded.setdefault(tuple(p.lower() for p in path), []).append(path)
        self.folded = folded

    # --- terms -----------------------------------------------------------------------

    def column(self, ref: Column) -> Column:
        path = tuple(ref.path)
        if not self.case_sensitive:
            matches = self.folded.get(tuple(p.lower() for p in path), [])
            if len(matches) == 1:
                return Column(matches[0], self.schema[matches[0]])
            if len(matches) > 1:
                raise UnknownColumnError(f"column {ref} is ambiguous: {sorted(map(str, map(Column, matches)))}")
        elif path in self.schema:
            return Column(path, self.schema[path])
        raise UnknownColumnError(f"column {ref} is not in the table schema")

    def term(self, term: Term) -> Term:
        if isinstance(term, Column):
            return self.column(term)
        if isinstance(term, Literal):
            return term
        if isinstance(term, VariantGet):
            column = self.column(term.column)
            if column.dtype != "variant":
                raise ExpressionTypeError(f"{term}: column {column} is {column.dtype}, not variant")
            return VariantGet(column, term.path, normalize_type(term.target), term.try_, term.eager)
        if isinstance(term, Cast):
            inner = self.term(term.term)
            target = normalize_type(term.target)
            if isinstance(inner, VariantGet) and inner.target == "variant":  # v:a::bigint
                return VariantGet(inner.column, inner.path, target, inner.try_ or term.try_)
            source = term_type(inner)
            if source == "variant" or not can_cast(source, target):
                raise ExpressionTypeError(f"{term}: cannot cast {source} to {target}")
            if isinstance(inner, Literal):
                return self.cast_literal(inner, target, term.try_)
            return Cast(inner, target, term.try_, self.tz)
        if isinstance(term, Condition):
            return Condition(visit(term.predicate, self))
        if isinstance(term, Call):
            return self.call(term)
        raise ExpressionTypeError(f"not a term: {term!r}")

    def cast_to(self, term: Term, target: str, where: str) -> Term:
        """``term`` as a ``target`` value: a literal is cast now, anything else gets a Cast."""
        source = term_type(term)
        if source == target:
            return term
        if isinstance(term, Literal):
            return self.cast_literal(term, target)
        if source == "variant" or not can_cast(source, target):
            raise ExpressionTypeError(f"{where}: {term} is {source}, which does not convert to {target}")
        return Cast(term, target, False, self.tz)

    def call(self, node: Call) -> Call:
        """Bind a function call: its arguments, their implicit casts and its result type."""
        args = [self.term(a) for a in node.args]
        name, where = node.name, str(node)
        if name not in FUNCTIONS:
            raise ExpressionTypeError(f"{where}: unknown function {name}")
        if name in ARITHMETIC_OPS:
            return Call(name, tuple(args), arithmetic_type(name, args[0], args[1], term_type, where))
        if name in ("negative", "abs"):
            dtype = term_type(args[0])
            if not is_numeric(dtype):
                raise ExpressionTypeError(f"{where}: {args[0]} is {dtype}, not a number")
            return Call(name, tuple(args), dtype)
        if name == "length":
            text = args[0] if term_type(args[0]) == "binary" else self.cast_to(args[0], "string", where)
            return Call(name, (text,), "integer")
        if name in STRING_FUNCTIONS or name == "concat":
            return Call(name, tuple(self.cast_to(a, "string", where) for a in args), "string")
        if name in STRING_TESTS or name in ("like", "ilike"):
            return Call(name, tuple(self.cast_to(a, "string", where) for a in args), "boolean")
        if name == "substring":
            text = args[0] if term_type(args[0]) == "binary" else self.cast_to(args[0], "string", where)
            rest = tuple(self.cast_to(a, "integer", where) for a in args[1:])
            return Call(name, (text, *rest), term_type(text))
        if name in DATE_PARTS:
            return Call(name, (self.cast_to(args[0], "date", where),), "integer")
        if name == "coalesce":
            dtype = common_type([term_type(a) for a in args], where)
            return Call(name, tuple(self.cast_to(a, dtype, where) for a in args), dtype)
        # case: condition, value, ..., else value
        values = args[1::2] + [args[-1]]
        dtype = common_type([term_type(v) for v in values], where)
        out: list[Term] = []
        for i in range(0, len(args) - 1, 2):
            out += [args[i], self.cast_to(args[i + 1], dtype, where)]
        return Call(name, (*out, self.cast_to(args[-1], dtype, where)), dtype)

    def cast_literal(self, literal: Literal, target: str, try_: bool = False) -> Literal:
        try:
            return Literal(cast_value(literal.value, literal.dtype, target, self.tz), target)
        except ExpressionEvaluationError as exc:
            if try_:
                return Literal(None, target)
            raise ExpressionTypeError(f"literal {literal} cannot be cast to {target}") from exc

    # --- coercion --------------------------------------------------------------------

    def coerce(self, term: Term, literal: Literal, where: str) -> tuple[Term, Literal]:
        """Make ``term op literal`` type-correct the way Spark's ANSI coercion does."""
        ttype, ltype = term_type(term), literal.dtype
        self.check_ordered(term, where)
        if literal.value is None or ttype == ltype:
            return term, Literal(literal.value, ttype if literal.value is None else ltype)
        if is_numeric(ttype) and is_numeric(ltype):
            return self.coerce_numbers(term, literal)
        if ltype == "string" and ttype != "string":
            return term, self.cast_literal(literal, ttype)
        if ttype == "string" and is_numeric(ltype):
            target = "long" if is_integral(ltype) else "double"
            return Cast(term, target, False, self.tz), literal
        if ttype == "string" and ltype in _TIME_TYPES | {"boolean", "binary"}:
            return Cast(term, ltype, False, self.tz), literal
        if ttype in _TIME_TYPES and ltype in _TIME_TYPES:
            if ttype == "date":
                return Cast(term, ltype, False, self.tz), literal
            return term, self.cast_literal(literal, ttype)
        raise ExpressionTypeError(f"{where}: cannot compare {ttype} with {ltype} literal {literal}")

    def coerce_numbers(self, term: Term, literal: Literal) -> tuple[Term, Literal]:
        """Spark's (ANSI) numeric widening where it rounds: with a float or double on either
        side both become DOUBLE (FLOAT only with FLOAT), so ``d = 1.1`` compares ``d`` with
        the double nearest 1.1; exact numbers compare exactly."""
        ttype, ltype = term_type(term), literal.dtype
        floats = ("float", "double")
        if ttype not in floats and ltype not in floats:
            return term, literal  # Python compares int and Decimal exactly, as Spark's widening does
        target = "float" if ttype == ltype == "float" else "double"
        if ttype != target:
            term = Cast(term, target, False, self.tz)
        return term, (literal if ltype == target else self.cast_literal(literal, target))

    def unify(self, left: Term, right: Term, where: str) -> tuple[Term, Term]:
        lt, rt = term_type(left), term_type(right)
        self.check_ordered(left, where)
        self.check_ordered(right, where)
        if lt == rt or (is_numeric(lt) and is_numeric(rt)):
            return left, right
        if lt in _TIME_TYPES and rt in _TIME_TYPES:
            if lt == "date":
                return Cast(left, rt, False, self.tz), right
            if rt == "date":
                return left, Cast(right, lt, False, self.tz)
            return left, Cast(right, lt, False, self.tz)
        for a, b, flip in ((lt, rt, False), (rt, lt, True)):
            if a == "string" and (is_numeric(b) or b in _TIME_TYPES or b in ("boolean", "binary")):
                target = ("long" if is_integral(b) else "double") if is_numeric(b) else b
                if flip:
                    return left, Cast(right, target, False, self.tz)
                return Cast(left, target, False, self.tz), right
        raise ExpressionTypeError(f"{where}: cannot compare {lt} with {rt}")

    @staticmethod
    def check_ordered(term: Term, where: str) -> None:
        ttype = term_type(term)
        if ttype in _UNORDERED:
            hint = " (cast it, e.g. v:a::bigint)" if ttype == "variant" else ""
            raise ExpressionTypeError(f"{where}: a {ttype} value cannot be compared{hint}")

    # --- predicates ------------------------------------------------------------------

    def visit_true(self) -> Predicate:
        return AlwaysTrue()

    def visit_false(self) -> Predicate:
        return AlwaysFalse()

    def visit_not(self, child: Predicate) -> Predicate:
        return Not(child)

    def visit_and(self, left: Predicate, right: Predicate) -> Predicate:
        return And(left, right)

    def visit_or(self, left: Predicate, right: Predicate) -> Predicate:
        return Or(left, right)

    def visit_is_null(self, node: IsNull) -> Predicate:
        return IsNull(self.term(node.term))

    def visit_is_not_null(self, node: IsNotNull) -> Predicate:
        return IsNotNull(self.term(node.term))

    def visit_comparison(self, node: Comparison) -> Predicate:
        left, right, op = self.term(node.left), self.term(node.right), node.op
        if isinstance(left, Literal) and not isinstance(right, Literal):
            left, right, op = right, left, FLIPPED_OPS[op]
        if isinstance(right, Literal):
            left, right = self.coerce(left, right, str(node))
        else:
            left, right = self.unify(left, right, str(node))
        return Comparison(op, left, right)

    def _list(self, node: In | NotIn) -> tuple[Term, tuple[Literal, ...]]:
        term = self.term(node.term)
        values: list[Literal] = []
        cast_to: Term | None = None
        where = str(node)  # once: a long IN list is not printed once per value
        for value in node.values:
            coerced_term, literal = self.coerce(term, self.term(value), where)  # type: ignore[arg-type]
            if coerced_term != term:
                if cast_to is not None and cast_to != coerced_term:
                    raise ExpressionTypeError(f"{node}: IN list mixes types {term_type(cast_to)} and "
                                              f"{term_type(coerced_term)}")
                cast_to = coerced_term
            values.append(literal)
        return (cast_to or term), tuple(values)

    def visit_in(self, node: In) -> Predicate:
        return In(*self._list(node))

    def visit_not_in(self, node: NotIn) -> Predicate:
        return NotIn(*self._list(node))


def bind(
    predicate: Predicate,
    schema: Mapping[ColumnPath, str],
    *,
    case_sensitive: bool = False,
    session_tz: str = "UTC",
) -> Predicate:
    """Resolve ``predicate`` against ``schema`` (field path -> Delta/SQL type name).

    Column names resolve case-insensitively by default, as Spark does; Variant path
    keys stay case-sensitive.  Raises UnknownColumnError / ExpressionTypeError.
    """
    return visit(predicate, _Binder(schema, case_sensitive, session_tz))


def is_bound(term: Any) -> bool:
    """Whether every column under ``term`` carries a type."""
    if isinstance(term, Column):
        return term.dtype is not None
    if isinstance(term, VariantGet):
        return is_bound(term.column)
    if isinstance(term, Cast):
        return is_bound(term.term)
    if isinstance(term, Call):
        return term.dtype is not None and all(is_bound(a) for a in term.args)
    if isinstance(term, Condition):
        try:
            require_bound(term.predicate)
        except ExpressionError:
            return False
        return True
    return isinstance(term, Literal)


def require_bound(predicate: Predicate) -> None:
    """Raise ExpressionError unless every term in ``predicate`` is bound."""
    visit(predicate, _BoundCheck())


class _BoundCheck(PredicateVisitor[None]):
    def visit_true(self) -> None:
        return None

    def visit_false(self) -> None:
        return None

    def visit_not(self, child: None) -> None:
        return None

    def visit_and(self, left: None, right: None) -> None:
        return None

    def visit_or(self, left: None, right: None) -> None:
        return None

    def _leaf(self, node: Predicate) -> None:
        for term in (*leaf_terms(node), *getattr(node, "values", ())):
            if not is_bound(term):
                raise ExpressionError(f"{node} is not bound: call bind(predicate, schema) first")

    visit_is_null = visit_is_not_null = visit_comparison = visit_in = visit_not_in = _leaf  # type: ignore[assignment]
