"""The predicate tree: frozen, slotted dataclasses, so trees are values (hashable, comparable).

Terms produce values (columns, Variant paths, casts, literals); predicates produce SQL
truth values (TRUE / FALSE / NULL).  ``negate()`` is *exact* three-valued negation, which
is what lets ``rewrite_not`` remove NOT without changing which rows a filter keeps.
Python operators build trees (``col("ts") >= lit(x)``, ``p & q``, ``~p``); ``==`` stays
structural equality, so use ``.eq(x)`` / ``.ne(x)`` for SQL ``=`` / ``<>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sqlglot.tokens import Tokenizer

from varlake.errors import ExpressionError, ExpressionTypeError
from varlake.expr.casts import java_double_text, literal_type
from varlake.expr.types import ColumnPath, normalize_type
from varlake.expr.variant_paths import normalize_variant_path
from varlake.semantics.types import backquote

NEGATED_OPS = {"=": "<>", "<>": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
FLIPPED_OPS = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}
COMPARISON_OPS = frozenset(FLIPPED_OPS)
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Term:
    """Something that yields a value per row."""

    __slots__ = ()

    def __lt__(self, other: Any) -> Comparison:
        return Comparison("<", self, as_term(other))

    def __le__(self, other: Any) -> Comparison:
        return Comparison("<=", self, as_term(other))

    def __gt__(self, other: Any) -> Comparison:
        return Comparison(">", self, as_term(other))

    def __ge__(self, other: Any) -> Comparison:
        return Comparison(">=", self, as_term(other))

    def eq(self, other: Any) -> Comparison:
        return Comparison("=", self, as_term(other))

    def ne(self, other: Any) -> Comparison:
        return Comparison("<>", self, as_term(other))

    def eq_null_safe(self, other: Any) -> Comparison:
        return Comparison("<=>", self, as_term(other))

    def isin(self, *values: Any) -> In:
        return In(self, tuple(_as_literal(v) for v in values))

    def notin(self, *values: Any) -> NotIn:
        return NotIn(self, tuple(_as_literal(v) for v in values))

    def between(self, low: Any, high: Any) -> Predicate:
        """Spark's BETWEEN is exactly ``low <= x AND x <= high``."""
        return And(self >= low, self <= high)

    def is_null(self) -> IsNull:
        return IsNull(self)

    def is_not_null(self) -> IsNotNull:
        return IsNotNull(self)

    def cast(self, target: str, try_: bool = False) -> Term:
        """``CAST(self AS target)``; on an uncast Variant path this is ``variant_get`` itself."""
        if isinstance(self, VariantGet) and self.target == "variant":
            return VariantGet(self.column, self.path, normalize_type(target), self.try_ or try_)
        return Cast(self, normalize_type(target), try_)


@dataclass(frozen=True, slots=True)
class Column(Term):
    """A (possibly nested struct) column; ``dtype`` is filled in by binding."""

    path: ColumnPath
    dtype: str | None = None

    def __str__(self) -> str:
        return ".".join(_ident(p) for p in self.path)


@dataclass(frozen=True, slots=True)
class VariantGet(Term):
    """``variant_get(column, path, target)``; ``path`` is RFC 9535 normalized (the stats key).

    ``eager`` marks the function form written in SQL (``variant_get(v, '$.a', 'int')``):
    Spark 4.3 extracts it while scanning (``spark.sql.variant.pushVariantIntoScan``), on
    every row read, so a value that does not convert raises whatever the rest of the
    filter says. The cast forms (``v:a::int``, ``CAST(v:a AS INT)``) cast lazily, on the
    rows where the filter reaches them.
    """

    column: Column
    path: str
    target: str
    try_: bool = False
    eager: bool = field(default=False, compare=False)  # how it is evaluated, not what it is

    def __str__(self) -> str:
        fn = "try_variant_get" if self.try_ else "variant_get"
        return f"{fn}({self.column}, {_quote(self.path)}, {_quote(self.target)})"


@dataclass(frozen=True, slots=True)
class Cast(Term):
    """``CAST(term AS target)`` (``TRY_CAST`` when ``try_``); ``tz`` is the session zone."""

    term: Term
    target: str
    try_: bool = False
    tz: str = "UTC"

    def __str__(self) -> str:
        return f"{'TRY_CAST' if self.try_ else 'CAST'}({self.term} AS {self.target.upper()})"


@dataclass(frozen=True, slots=True)
class Literal(Term):
    value: Any
    dtype: str

    def __str__(self) -> str:
        return literal_sql(self.value, self.dtype)


#: Binary operators of ``Call`` (their SQL spelling is infix).
ARITHMETIC_OPS = frozenset({"+", "-", "*", "/", "%"})


@dataclass(frozen=True, slots=True)
class Call(Term):
    """A scalar operator or function on terms, as in CHECK constraints: arithmetic
    (``+ - * / %``, ``negative``, ``abs``), ``length``, ``lower``, ``upper``, ``trim``,
    ``ltrim``, ``rtrim``, ``substring``, ``concat``, ``coalesce``, ``case`` (args: condition,
    value, ..., else), ``like`` / ``ilike`` (args: text, pattern, escape), ``startswith``,
    ``endswith``, ``contains``, ``year``, ``month``, ``day``. ``dtype`` is set by binding."""

    name: str
    args: tuple[Term, ...]
    dtype: str | None = None

    def __str__(self) -> str:
        args = self.args
        if self.name in ARITHMETIC_OPS:
            return f"({args[0]} {self.name} {args[1]})"
        if self.name == "negative":
            return f"(- {args[0]})"
        if self.name == "case":
            whens = " ".join(f"WHEN {args[i]} THEN {args[i + 1]}" for i in range(0, len(args) - 1, 2))
            return f"CASE {whens} ELSE {args[-1]} END"
        if self.name in ("like", "ilike"):
            return f"({args[0]} {self.name.upper()} {args[1]} ESCAPE {args[2]})"
        return f"{self.name}({', '.join(map(str, args))})"


@dataclass(frozen=True, slots=True)
class Condition(Term):
    """A predicate used as a BOOLEAN value (a CASE condition, ``(a > 0) = (b > 0)``)."""

    predicate: Predicate

    def __str__(self) -> str:
        return str(self.predicate)


class Predicate:
    """Something that yields TRUE / FALSE / NULL per row."""

    __slots__ = ()

    def __and__(self, other: Predicate) -> Predicate:
        return And(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        return Or(self, other)

    def __invert__(self) -> Predicate:
        return Not(self)

    def negate(self) -> Predicate:
        """Exact three-valued negation, pushed one level down where possible."""
        return Not(self)


@dataclass(frozen=True, slots=True)
class AlwaysTrue(Predicate):
    def negate(self) -> Predicate:
        return AlwaysFalse()

    def __str__(self) -> str:
        return "TRUE"


@dataclass(frozen=True, slots=True)
class AlwaysFalse(Predicate):
    def negate(self) -> Predicate:
        return AlwaysTrue()

    def __str__(self) -> str:
        return "FALSE"


@dataclass(frozen=True, slots=True)
class And(Predicate):
    left: Predicate
    right: Predicate

    def negate(self) -> Predicate:
        return Or(self.left.negate(), self.right.negate())  # De Morgan holds in Kleene logic

    def __str__(self) -> str:
        return f"({self.left} AND {self.right})"


@dataclass(frozen=True, slots=True)
class Or(Predicate):
    left: Predicate
    right: Predicate

    def negate(self) -> Predicate:
        return And(self.left.negate(), self.right.negate())

    def __str__(self) -> str:
        return f"({self.left} OR {self.right})"


@dataclass(frozen=True, slots=True)
class Not(Predicate):
    child: Predicate

    def negate(self) -> Predicate:
        return self.child

    def __str__(self) -> str:
        return f"(NOT {self.child})"


@dataclass(frozen=True, slots=True)
class IsNull(Predicate):
    term: Term

    def negate(self) -> Predicate:
        return IsNotNull(self.term)

    def __str__(self) -> str:
        return f"({self.term} IS NULL)"


@dataclass(frozen=True, slots=True)
class IsNotNull(Predicate):
    term: Term

    def negate(self) -> Predicate:
        return IsNull(self.term)

    def __str__(self) -> str:
        return f"({self.term} IS NOT NULL)"


@dataclass(frozen=True, slots=True)
class Comparison(Predicate):
    """``left op right``; ops: = <> < <= > >= and <=> (null-safe equality, never NULL)."""

    op: str
    left: Term
    right: Term

    def __post_init__(self) -> None:
        if self.op not in COMPARISON_OPS:
            raise ExpressionError(f"unknown comparison operator {self.op!r}")

    def negate(self) -> Predicate:
        if self.op in NEGATED_OPS:  # NOT(a < b) is (a >= b) even when a or b is NULL
            return Comparison(NEGATED_OPS[self.op], self.left, self.right)
        if isinstance(self.right, Literal):  # a IS DISTINCT FROM lit
            if self.right.value is None:
                return IsNotNull(self.left)
            return Or(IsNull(self.left), Comparison("<>", self.left, self.right))
        return Not(self)

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True, slots=True)
class In(Predicate):
    term: Term
    values: tuple[Literal, ...]

    def negate(self) -> Predicate:
        return NotIn(self.term, self.values)

    def __str__(self) -> str:
        return f"({self.term} IN ({', '.join(map(str, self.values))}))"


@dataclass(frozen=True, slots=True)
class NotIn(Predicate):
    """Exactly ``NOT (term IN values)``: never TRUE when the list holds a NULL."""

    term: Term
    values: tuple[Literal, ...]

    def negate(self) -> Predicate:
        return In(self.term, self.values)

    def __str__(self) -> str:
        return f"({self.term} NOT IN ({', '.join(map(str, self.values))}))"


LEAF_PREDICATES = (IsNull, IsNotNull, Comparison, In, NotIn)


def col(name: str | ColumnPath) -> Column:
    """Column reference; ``"s.x"`` is field ``x`` of struct ``s`` (pass a tuple for dotted names)."""
    return Column(tuple(name.split(".")) if isinstance(name, str) else tuple(name))


def lit(value: Any, dtype: str | None = None) -> Literal:
    """Literal with Spark's type for the Python value, or the given SQL type."""
    return Literal(value, normalize_type(dtype) if dtype else literal_type(value))


def vget(column: str | ColumnPath | Column, path: str, target: str = "variant") -> VariantGet:
    """``variant_get(column, path, target)``; the path is normalized to Delta's stats key form."""
    ref = column if isinstance(column, Column) else col(column)
    return VariantGet(ref, normalize_variant_path(path), normalize_type(target), try_=False)


def try_vget(column: str | ColumnPath | Column, path: str, target: str = "variant") -> VariantGet:
    """``try_variant_get``: a value that does not cast gives NULL instead of an error."""
    ref = column if isinstance(column, Column) else col(column)
    return VariantGet(ref, normalize_variant_path(path), normalize_type(target), try_=True)


def as_term(value: Any) -> Term:
    return value if isinstance(value, Term) else lit(value)


def _as_literal(value: Any) -> Literal:
    if isinstance(value, Literal):
        return value
    if isinstance(value, Term):
        raise ExpressionTypeError(f"IN lists take literals, not {value}")
    return lit(value)


def _ident(name: str) -> str:
    if _PLAIN_NAME.fullmatch(name) and name.upper() not in Tokenizer.KEYWORDS:
        return name
    return backquote(name)


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def literal_sql(value: Any, dtype: str) -> str:
    """Spark SQL text for a literal (used by ``str()`` of trees)."""
    if value is None:
        return "NULL"
    if dtype == "boolean":
        return "TRUE" if value else "FALSE"
    if dtype == "string":
        return _quote(value)
    if dtype in ("double", "float"):
        return f"CAST('{java_double_text(float(value))}' AS {dtype.upper()})"
    if dtype == "integer":
        return str(value)
    if dtype in ("long", "short", "byte") or dtype.startswith("decimal("):
        return f"CAST({value} AS {dtype.upper()})"
    if dtype == "date":
        return f"DATE '{value.isoformat()}'"
    if dtype == "timestamp":
        return f"TIMESTAMP '{value.isoformat()}'"
    if dtype == "timestamp_ntz":
        return f"TIMESTAMP_NTZ '{value.isoformat()}'"
    if dtype == "binary":
        return "X'" + bytes(value).hex().upper() + "'"
    return repr(value)
