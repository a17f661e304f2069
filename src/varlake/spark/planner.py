"""Read plans for Spark: which files to skip, and which read path each remaining file takes.

A query touches a table's Variant columns (top-level, or held in structs) through *path
uses* (``v:a.b::bigint``, ``variant_get(v, '$.a', 'int')``, ``s.v:a IS NULL``). For each
table the planner

1. skips files by partition values and statistics (``varlake.read.plan_scan``), and puts
   back any file skipped on statistics where the filter holds a cast that could raise
   for that file's values (Spark would have raised there; see ``cannot_raise``);
2. reads each remaining file's footer (cached per file) to see, per used path, whether
   the path is *perfectly shredded* there -- a typed ``typed_value`` leaf whose sibling
   ``value`` column is null in every row group -- and which type the leaf has;
3. groups the files: a file in which every used path is perfectly shredded with a leaf
   that converts to the asked type without loss or failure (``leaf_serves``; or, for a
   wider integer or decimal leaf, when the footer's min and max prove every value fits
   the narrower type) is read as
   plain Parquet structs of just those leaves ("shredded" group, one per distinct set of
   leaf types); every other file is read as Variant ("variant" group).

A use may also ask for a struct or an array (``variant_get(v, '$.items',
'array<struct<q: double>>')``, ``CAST(v:c AS STRUCT<name: STRING>)``). A file serves it
when the whole subtree is perfectly shredded for that type: an object (array) node whose
own ``value`` is all-null (and, for arrays, whose elements' ``value`` is all-null too),
each struct field either a shredded field that serves the field's type or not shredded at
all (then, the residual ``value`` being all-null, the key is missing in every row: NULL,
as Spark's case-sensitive field matching gives). Its "leaf" is then a *shape*: the type of
the shredded subtree to read (the physical leaf types, fields that are not shredded left
out, and one other field kept when none is, so that the object's own nulls can be read).

Only the leaf's own ``value`` column has to be all-null: VariantShredding.md lets readers
assume a value is not an object (nor an array) when the ``typed_value`` at that level is
null, and that shredded fields never appear in a partially shredded object's ``value``,
so non-null ``value`` columns higher up only hold values on which the path is missing,
exactly where the typed leaf is null as well.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import lru_cache
from typing import Literal

import pyarrow as pa
import pyarrow.parquet as pq

from varlake.delta.schema import ArrayType, DataType, PrimitiveType, StructField, StructType, VariantType
from varlake.delta.snapshot import Snapshot
from varlake.errors import ExpressionError, ShreddingError, TableError, VariantError
from varlake.expr import (
    And,
    Cast,
    FileStats,
    Or,
    Predicate,
    SkippingEvaluator,
    TypeFamily,
    VariantGet,
    visit,
)
from varlake.expr.types import INTEGRAL_TYPES, decimal_params, family_of, is_integral
from varlake.expr.visitors import PredicateVisitor, leaf_terms, referenced_columns
from varlake.read import ScanPlan, ScanTask, bind_filter, plan_scan
from varlake.read.planner import partition_types
from varlake.shred.layout import ArrayLayout, LeafKind, ObjectLayout, PrimitiveLayout, ValueLayout, recognise_layout
from varlake.table import Table
from varlake.variant.cast import SparkType, parse_type, quote_identifier
from varlake.variant.path import VariantPath

__all__ = [
    "ISNULL",
    "FileGroup",
    "FileLayout",
    "PathUse",
    "TablePlan",
    "cannot_raise",
    "file_layout",
    "is_nested",
    "leaf_serves",
    "nested_target",
    "plan_table",
    "target_type",
    "type_text",
    "variant_columns",
]

Segment = str | int
#: ``PathUse.target`` of a ``path IS [NOT] NULL`` test on an uncast path.
ISNULL = "isnull"
#: How a group of files is read: struct-pruned leaves, or the whole Variant.
GroupKind = Literal["shredded", "variant"]

_INTEGRAL_RANK = {"byte": 0, "short": 1, "integer": 2, "long": 3}
_INTEGRAL_DIGITS = {"byte": 3, "short": 5, "integer": 10, "long": 19}
_SAME_TYPE_ONLY = frozenset({"string", "binary", "boolean", "date", "timestamp", "timestamp_ntz", "float", "double"})
_LEAF_TYPES: Mapping[LeafKind, str] = {
    LeafKind.BOOLEAN: "boolean",
    LeafKind.INT8: "byte",
    LeafKind.INT16: "short",
    LeafKind.INT32: "integer",
    LeafKind.INT64: "long",
    LeafKind.FLOAT: "float",
    LeafKind.DOUBLE: "double",
    LeafKind.DATE: "date",
    LeafKind.TIMESTAMP: "timestamp",
    LeafKind.TIMESTAMP_NTZ: "timestamp_ntz",
    LeafKind.STRING: "string",
    LeafKind.BINARY: "binary",
}


@dataclass(frozen=True, slots=True)
class PathUse:
    """One way a query reads a Variant path: cast to ``target`` (canonical type) or ``ISNULL``.

    ``column`` is the Variant column's path in the table schema: ``("v",)``, or
    ``("s", "v")`` for a Variant held in struct ``s``.
    """

    column: tuple[str, ...]
    segments: tuple[Segment, ...]
    target: str

    @property
    def path(self) -> str:
        """The path as RFC 9535 normalized text (``$['a'][0]``)."""
        return VariantPath(self.segments).normalized

    def __str__(self) -> str:
        what = "IS NULL" if self.target == ISNULL else f"AS {self.target}"
        return f"{'.'.join(self.column)}:{self.path} {what}"


# --- struct and array targets ------------------------------------------------------------------------

_SPARK_NAMES = {"tinyint": "byte", "smallint": "short", "int": "integer", "bigint": "long"}
_NOT_NULL = re.compile(r"\bnot\s+null\b", re.IGNORECASE)
_COMMENT = re.compile(r"\bcomment\b", re.IGNORECASE)


def is_nested(target: str) -> bool:
    """Whether a ``PathUse.target`` is a struct or array type (``nested_target``'s text)."""
    return target.startswith(("struct<", "array<"))


def _from_spark(t: SparkType) -> DataType | None:
    """The Delta type of a parsed target, None for what the planner does not serve: maps,
    Variants and TIME anywhere inside, empty structs, and field names repeated up to case
    (Spark fills only one of two equal names; names equal up to case would be ambiguous
    in the struct reads)."""
    if t.name == "array":
        assert t.element is not None
        element = _from_spark(t.element)
        return ArrayType(element, True) if element is not None else None
    if t.name == "struct":
        names = [name for name, _ in t.fields]
        if not names or len({name.lower() for name in names}) != len(names):
            return None
        fields = []
        for name, field_type in t.fields:
            converted = _from_spark(field_type)
            if converted is None:
                return None
            fields.append(StructField(name, converted, True))
        return StructType(tuple(fields))
    if t.name in ("map", "variant", "time"):
        return None
    if t.name == "decimal":
        return PrimitiveType(f"decimal({t.precision},{t.scale})")
    return PrimitiveType(_SPARK_NAMES.get(t.name, t.name))


def type_text(dtype: DataType) -> str:
    """Canonical text of a primitive, struct or array type (``array<struct<q:decimal(15,2)>>``);
    field names are back-quoted where Spark needs it, so the text parses back."""
    if isinstance(dtype, ArrayType):
        return f"array<{type_text(dtype.element_type)}>"
    if isinstance(dtype, StructType):
        return "struct<" + ",".join(f"{quote_identifier(f.name)}:{type_text(f.type)}" for f in dtype.fields) + ">"
    if isinstance(dtype, PrimitiveType):
        return dtype.name
    raise ExpressionError(f"no canonical text for type {dtype!r}")


def nested_target(text: str) -> str | None:
    """Canonical text of a struct/array cast target the planner can serve, else None.

    Spark's own spelling is accepted (``STRUCT<a: INT, b ARRAY<BIGINT>>``); ``NOT NULL``
    and ``COMMENT`` are not (Spark's result type drops the one and keeps the other as
    field metadata), nor is anything ``_from_spark`` refuses.
    """
    if _NOT_NULL.search(text) or _COMMENT.search(text):
        return None
    try:
        parsed = parse_type(text)
    except VariantError:
        return None
    if parsed.name not in ("struct", "array"):
        return None
    dtype = _from_spark(parsed)
    return type_text(dtype) if dtype is not None else None


@lru_cache(maxsize=1024)
def target_type(text: str) -> DataType:
    """The type a canonical text (a ``PathUse.target`` or a shape) stands for."""
    try:
        dtype = _from_spark(parse_type(text))
    except VariantError as exc:
        raise ExpressionError(f"not a type the planner reads: {text!r} ({exc})") from None
    if dtype is None:
        raise ExpressionError(f"not a type the planner reads: {text!r}")
    return dtype


# --- a file's physical layout ------------------------------------------------------------------------


def _parquet_paths(t: pa.DataType, prefix: str, out: dict[str, None]) -> None:
    """Dotted Parquet column paths of every leaf under an Arrow type (3-level lists)."""
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            _parquet_paths(t.field(i).type, f"{prefix}.{t.field(i).name}", out)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        _parquet_paths(t.value_type, f"{prefix}.list.{t.value_field.name}", out)
    elif pa.types.is_map(t):
        _parquet_paths(t.key_type, f"{prefix}.key_value.key", out)
        _parquet_paths(t.item_type, f"{prefix}.key_value.value", out)
    else:
        out[prefix] = None


class FileLayout:
    """The footer facts of one data file that decide its read path (built once per file)."""

    def __init__(self, location: str, metadata: pq.FileMetaData) -> None:
        self.location = location
        self.metadata = metadata
        self.schema = metadata.schema.to_arrow_schema()
        self.columns = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
        self._layouts: dict[tuple[str, ...], ValueLayout | None] = {}
        self._leaves: dict[tuple[tuple[str, ...], tuple[Segment, ...]], str | None] = {}
        self._shapes: dict[tuple[tuple[str, ...], tuple[Segment, ...], str], str | None] = {}

    def _group_type(self, column: tuple[str, ...]) -> pa.DataType | None:
        t: pa.DataType | None = None
        for i, name in enumerate(column):
            if i == 0:
                index = self.schema.get_field_index(name)
                t = self.schema.field(index).type if index >= 0 else None
            elif t is not None and pa.types.is_struct(t) and t.get_field_index(name) >= 0:
                t = t.field(name).type
            else:
                return None
        return t if t is not None and pa.types.is_struct(t) else None

    def variant_root(self, column: tuple[str, ...]) -> ValueLayout | None:
        """The top ``value``/``typed_value`` level of a Variant column, or None if it is not one."""
        if column not in self._layouts:
            layout: ValueLayout | None = None
            group = self._group_type(column)
            if group is not None:
                try:
                    layout = recognise_layout(group, f"{self.location}: column {'.'.join(column)!r}").root
                except ShreddingError:
                    layout = None  # Spark's own reader decides what such a file means
            self._layouts[column] = layout
        return self._layouts[column]

    def all_null(self, column_path: str) -> bool:
        """Footer proof that a Parquet column holds no value in any row group."""
        index = self.columns.get(column_path)
        if index is None:
            return False
        for g in range(self.metadata.num_row_groups):
            chunk = self.metadata.row_group(g).column(index)
            stats = chunk.statistics
            if stats is None or not stats.has_null_count or stats.null_count != chunk.num_values:
                return False
        return True

    def leaf_type(self, column: tuple[str, ...], segments: tuple[Segment, ...]) -> str | None:
        """Type (canonical name) of the typed leaf at a perfectly shredded path, else None."""
        key = (column, segments)
        if key not in self._leaves:
            found = self._node(column, segments)
            self._leaves[key] = self._primitive_leaf(*found) if found is not None else None
        return self._leaves[key]

    def serving(self, use: PathUse) -> str | None:
        """What this file reads for ``use`` if it serves it, else None: the leaf type
        (``leaf_serves``), or for a struct/array target the shape of the subtree to read."""
        if not is_nested(use.target):
            leaf = self.leaf_type(use.column, use.segments)
            if leaf_serves(leaf, use.target):
                return leaf
            found = self._node(use.column, use.segments) if leaf is not None else None
            return leaf if found is not None and self._bounded_serves(leaf, use.target, found[1]) else None
        key = (use.column, use.segments, use.target)
        if key not in self._shapes:
            found = self._node(use.column, use.segments)
            shape = self._shape(*found, target_type(use.target)) if found is not None else None
            self._shapes[key] = type_text(shape) if shape is not None else None
        return self._shapes[key]

    def leaf_bounds(self, parquet: str) -> tuple[object, object] | None:
        """Footer min and max of an INT32/INT64 typed leaf over all row groups (``(None,
        None)`` when it holds no value at all), or None when a row group has values but no
        trustworthy statistics."""
        index = self.columns.get(f"{parquet}.typed_value")
        if index is None:
            return None
        low: object = None
        high: object = None
        for g in range(self.metadata.num_row_groups):
            chunk = self.metadata.row_group(g).column(index)
            stats = chunk.statistics
            if stats is not None and stats.has_null_count and stats.null_count == chunk.num_values:
                continue  # only NULLs here
            if stats is None or not stats.has_min_max or chunk.physical_type not in ("INT32", "INT64"):
                return None
            low = stats.min if low is None or stats.min < low else low  # type: ignore[operator]
            high = stats.max if high is None or stats.max > high else high  # type: ignore[operator]
        return low, high

    def _bounded_serves(self, leaf: str, target: str, parquet: str) -> bool:
        """A leaf wider than ``target`` still serves it when the footer's min and max prove
        every value fits: integers into narrower integers or decimals, decimals into
        decimals with fewer integer digits (never a smaller scale: that would round)."""
        leaf_decimal, target_decimal = decimal_params(leaf), decimal_params(target)
        numeric_target = is_integral(target) or target_decimal is not None
        if not numeric_target or not (is_integral(leaf) or leaf_decimal is not None):
            return False
        if leaf_decimal is not None and (target_decimal is None or leaf_decimal[1] > target_decimal[1]):
            return False
        bounds = self.leaf_bounds(parquet)
        if bounds is None:
            return False
        low, high = bounds
        return low is None or (_fits(low, target) and _fits(high, target))

    def _node(self, column: tuple[str, ...], segments: tuple[Segment, ...]) -> tuple[ValueLayout, str] | None:
        """The shredded level at a path and its dotted Parquet path, if the path is shredded."""
        node = self.variant_root(column)
        if node is None:
            return None
        parquet = ".".join(column)
        for segment in segments:
            typed = node.typed
            if isinstance(segment, str) and isinstance(typed, ObjectLayout):
                child = _unique_field(typed, segment)
                if child is None:
                    return None
                node, parquet = child, f"{parquet}.typed_value.{segment}"
            elif isinstance(segment, int) and isinstance(typed, ArrayLayout):
                node, parquet = typed.element, f"{parquet}.typed_value.list.element"
            else:
                return None
        return node, parquet

    def _primitive_leaf(self, node: ValueLayout, parquet: str) -> str | None:
        """The leaf type of a level holding only typed primitives (its ``value`` all-null)."""
        if not isinstance(node.typed, PrimitiveLayout):
            return None
        if f"{parquet}.typed_value" not in self.columns:
            return None  # e.g. a legacy 2-level list: its column paths differ
        if node.has_value and not self.all_null(f"{parquet}.value"):
            return None
        return _leaf_type_name(node.typed)

    def _shape(self, node: ValueLayout, parquet: str, target: DataType) -> DataType | None:
        """The subtree to read for ``target`` if this level is perfectly shredded for it."""
        if isinstance(target, PrimitiveType):
            leaf = self._primitive_leaf(node, parquet)
            if leaf is None:
                return None
            serves = leaf_serves(leaf, target.name) or self._bounded_serves(leaf, target.name, parquet)
            return PrimitiveType(leaf) if serves else None
        if node.has_value and not self.all_null(f"{parquet}.value"):
            return None  # some values here are not shredded objects/arrays (or are JSON nulls)
        typed = node.typed
        if isinstance(target, ArrayType) and isinstance(typed, ArrayLayout):
            element = self._shape(typed.element, f"{parquet}.typed_value.list.element", target.element_type)
            return ArrayType(element, True) if element is not None else None
        if isinstance(target, StructType) and isinstance(typed, ObjectLayout):
            fields = []
            for wanted in target.fields:
                if wanted.name not in typed.keys:
                    continue  # never in any object here (the residual value is all-null): NULL
                child = _unique_field(typed, wanted.name)
                sub = self._shape(child, f"{parquet}.typed_value.{wanted.name}", wanted.type) if child is not None else None
                if sub is None:
                    return None
                fields.append(StructField(wanted.name, sub))
            if not fields:
                probe = self._probe(typed, parquet)
                if probe is None:
                    return None
                fields.append(probe)  # read only so that the object's own nulls are known
            return StructType(tuple(fields))
        return None

    def _probe(self, typed: ObjectLayout, parquet: str) -> StructField | None:
        """One shredded field of an object with a readable typed leaf under it."""
        for key, child in typed.fields:
            if _unique_field(typed, key) is None:
                continue
            sub = self._any_leaf(child, f"{parquet}.typed_value.{key}")
            if sub is not None:
                return StructField(key, sub)
        return None

    def _any_leaf(self, node: ValueLayout, parquet: str) -> DataType | None:
        typed = node.typed
        if isinstance(typed, PrimitiveLayout):
            name = _leaf_type_name(typed)
            return PrimitiveType(name) if name is not None and f"{parquet}.typed_value" in self.columns else None
        if isinstance(typed, ArrayLayout):
            element = self._any_leaf(typed.element, f"{parquet}.typed_value.list.element")
            return ArrayType(element, True) if element is not None else None
        if isinstance(typed, ObjectLayout):
            probe = self._probe(typed, parquet)
            return StructType((probe,)) if probe is not None else None
        return None


def _unique_field(typed: ObjectLayout, key: str) -> ValueLayout | None:
    """The shredded field ``key``, unless another field has the same name up to case
    (Spark's Parquet reader matches names case-insensitively and would fail or mix them)."""
    lowered = key.lower()
    if sum(1 for k in typed.keys if k.lower() == lowered) != 1:
        return None
    return typed.field(key)


def _leaf_type_name(leaf: PrimitiveLayout) -> str | None:
    if leaf.kind in (LeafKind.DECIMAL4, LeafKind.DECIMAL8, LeafKind.DECIMAL16):
        return f"decimal({leaf.arrow_type.precision},{leaf.arrow_type.scale})"
    return _LEAF_TYPES.get(leaf.kind)  # TIME, UUID and nanosecond timestamps: Spark has no type


@lru_cache(maxsize=4096)
def _cached_layout(location: str, size: int, mtime_ns: int) -> FileLayout:
    try:
        metadata = pq.read_metadata(location)
    except (OSError, pa.ArrowException) as exc:
        raise TableError(f"{location}: cannot read the Parquet footer ({exc})") from None
    return FileLayout(location, metadata)


def file_layout(location: str) -> FileLayout:
    """The (cached) layout of the data file at a local path; cache keyed by size and mtime."""
    try:
        st = os.stat(location)
    except OSError as exc:
        raise TableError(f"{location}: data file is missing or unreadable ({exc})") from None
    return _cached_layout(location, st.st_size, st.st_mtime_ns)


# --- which leaf serves which use -----------------------------------------------------------------------


def leaf_serves(leaf: str | None, target: str) -> bool:
    """Whether a typed leaf converts to ``target`` exactly as Spark's Variant cast would, never failing.

    Same family and widening only: integers to wider integers or to decimals with room,
    decimals to decimals with at least the scale and integer digits; other types only to
    themselves. ``ISNULL`` needs any leaf at all.
    """
    if leaf is None:
        return False
    if target == ISNULL or leaf == target:
        return True
    if is_integral(leaf) and is_integral(target):
        return _INTEGRAL_RANK[leaf] <= _INTEGRAL_RANK[target]
    wanted = decimal_params(target)
    if wanted is None:
        return False
    precision, scale = wanted
    if is_integral(leaf):
        return _INTEGRAL_DIGITS[leaf] <= precision - scale
    have = decimal_params(leaf)
    return have is not None and have[1] <= scale and have[0] - have[1] <= precision - scale


# --- statistics skipping that never hides an error -------------------------------------------------------


class _RaisingTerms(PredicateVisitor[list]):
    """Every term of a bound predicate that might raise: non-try casts and ``variant_get``s."""

    def visit_true(self) -> list:
        return []

    visit_false = visit_true

    def visit_not(self, child: list) -> list:
        return child

    def visit_and(self, left: list, right: list) -> list:
        return left + right

    visit_or = visit_and

    def _leaf(self, node: Predicate) -> list:
        out = []
        stack = list(leaf_terms(node))
        while stack:
            term = stack.pop()
            if isinstance(term, VariantGet) and not term.try_ and term.target != "variant":
                out.append(term)
            elif isinstance(term, Cast):
                if not term.try_:
                    out.append(term)
                stack.append(term.term)
        return out

    visit_is_null = visit_is_not_null = visit_comparison = visit_in = visit_not_in = _leaf  # type: ignore[assignment]


def _fits(value: object, target: str) -> bool:
    if is_integral(target):
        low, high = INTEGRAL_TYPES[target]
        return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    params = decimal_params(target)
    if params is not None:
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            return False
        number = Decimal(value)
        exponent = number.as_tuple().exponent
        if not isinstance(exponent, int) or -exponent > params[1]:
            return False
        return abs(number) < Decimal(10) ** (params[0] - params[1])
    return True


def _variant_get_cannot_raise(term: VariantGet, stats: FileStats) -> bool:
    """Statistics prove every value at the path converts to the target without error."""
    key = (term.column.path, term.path)
    low, high = stats.variant_min.get(key), stats.variant_max.get(key)
    if low is None or high is None or low.family != high.family:
        return False
    family, target = low.family, term.target
    if family is TypeFamily.EXACT_NUMERIC:
        if is_integral(target) or decimal_params(target) is not None:
            return _fits(low.value, target) and _fits(high.value, target)
        return False
    return family_of(target) is family and family in (
        TypeFamily.STRING,
        TypeFamily.BOOLEAN,
        TypeFamily.DATE,
        TypeFamily.TIMESTAMP,
        TypeFamily.TIMESTAMP_NTZ,
    )


def cannot_raise(predicate: Predicate, stats: FileStats) -> bool:
    """Whether evaluating the bound ``predicate`` on this file's rows can never raise.

    A file that statistics skip is put back when this is False: Spark, evaluating the
    filter row by row, would have met the failing cast (ANSI, or ``variant_get``).
    """
    for term in visit(predicate, _RaisingTerms()):
        if isinstance(term, VariantGet):
            if not _variant_get_cannot_raise(term, stats):
                return False
        else:
            return False  # a plain CAST: no statistics say its input converts
    return True


# --- the plan for one table ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileGroup:
    """Files read the same way: ``shredded`` (struct leaves) or ``variant``, one partition each.

    ``leaf_types`` gives, per use, the leaf type read for it, or for a struct/array target
    the shape of the shredded subtree read (``FileLayout.serving``).
    """

    kind: GroupKind
    tasks: tuple[ScanTask, ...]
    partition_values: tuple[tuple[str, str | None], ...]
    leaf_types: tuple[tuple[PathUse, str], ...] = ()

    @property
    def leaves(self) -> dict[PathUse, str]:
        return dict(self.leaf_types)


@dataclass(frozen=True)
class TablePlan:
    """How one table of a query is read: files skipped and the groups of files kept."""

    name: str
    table: Table
    scan: ScanPlan
    uses: tuple[PathUse, ...]
    whole_variant: bool
    groups: tuple[FileGroup, ...]
    filter: Predicate | None = None
    skipped_by_partition: tuple[ScanTask, ...] = ()
    skipped_by_stats: tuple[ScanTask, ...] = ()
    readmitted: tuple[ScanTask, ...] = field(default=())

    @property
    def schema(self) -> StructType:
        return self.scan.schema

    @property
    def read_tasks(self) -> tuple[ScanTask, ...]:
        return tuple(t for g in self.groups for t in g.tasks)

    def as_variant(self) -> "TablePlan":
        """The same files (same skipping), every one read as Variant, one group per partition."""
        by_partition: dict[tuple[tuple[str, str | None], ...], list[ScanTask]] = {}
        for group in self.groups:
            by_partition.setdefault(group.partition_values, []).extend(group.tasks)
        groups = tuple(FileGroup("variant", tuple(tasks), partition) for partition, tasks in by_partition.items())
        return replace(self, uses=(), groups=groups)


def variant_columns(schema: StructType) -> tuple[tuple[str, ...], ...]:
    """Paths of the Variant columns whose paths can be pruned: top-level ones and those held
    in structs (not those inside arrays or maps)."""
    out: list[tuple[str, ...]] = []

    def walk(struct: StructType, prefix: tuple[str, ...]) -> None:
        for f in struct.fields:
            if isinstance(f.type, VariantType):
                out.append((*prefix, f.name))
            elif isinstance(f.type, StructType):
                walk(f.type, (*prefix, f.name))

    walk(schema, ())
    return tuple(out)


def usable_conjuncts(conjuncts: Iterable[Predicate], schema: StructType, tz: str) -> list[Predicate]:
    """The conjuncts that bind against the table (others cannot help skipping and are dropped)."""
    out = []
    for conjunct in conjuncts:
        try:
            bind_filter(conjunct, schema, tz)
        except (ExpressionError, ValueError):
            continue
        out.append(conjunct)
    return out


def combine(occurrences: Sequence[Sequence[Predicate] | None]) -> Predicate | None:
    """OR over the table's occurrences in the query of the AND of each one's conjuncts."""
    disjuncts: list[Predicate] = []
    for conjuncts in occurrences:
        if not conjuncts:
            return None  # one occurrence reads every row: nothing can be skipped
        part = conjuncts[0]
        for c in conjuncts[1:]:
            part = And(part, c)
        disjuncts.append(part)
    if not disjuncts:
        return None
    result = disjuncts[0]
    for d in disjuncts[1:]:
        result = Or(result, d)
    return result


def plan_table(
    name: str,
    table: Table,
    snapshot: Snapshot,
    uses: Sequence[PathUse],
    whole_variant: bool,
    filter: Predicate | None,
    session_tz: str = "UTC",
) -> TablePlan:
    """Skip files, then group the remaining ones by read path and partition values."""
    for add in snapshot.files:
        if add.deletion_vector:
            raise TableError(f"{table.path}: file {add.path} has a deletion vector, which the Spark reader does not apply")
    scan = plan_scan(snapshot, table.log.root_location, filter, session_tz)
    by_partition: list[ScanTask] = []
    by_stats: list[ScanTask] = []
    readmitted: list[ScanTask] = []
    if scan.skipped and scan.filter is not None:
        parts = partition_types(scan.schema, scan.partition_columns)
        only_partitions = _partition_only(scan.filter, frozenset(parts))
        partition_check = SkippingEvaluator(only_partitions, parts, session_tz=session_tz) if only_partitions is not None else None
        for task in scan.skipped:
            if partition_check is not None and not partition_check.might_match(task.stats):
                by_partition.append(task)
            elif cannot_raise(scan.filter, task.stats):
                by_stats.append(task)
            else:
                readmitted.append(task)
    tasks = list(scan.tasks) + readmitted
    used = tuple(dict.fromkeys(uses)) if not whole_variant else ()
    groups = _group(table, tasks, used, scan.partition_columns)
    return TablePlan(
        name, table, scan, used, whole_variant, groups, scan.filter,
        tuple(by_partition), tuple(by_stats), tuple(readmitted),
    )


def _partition_only(predicate: Predicate, partitions: frozenset[str]) -> Predicate | None:
    """The AND-conjuncts of a bound predicate that read partition columns only."""
    parts: list[Predicate] = []
    stack = [predicate]
    while stack:
        node = stack.pop()
        if isinstance(node, And):
            stack.extend((node.left, node.right))
            continue
        columns = referenced_columns(node)
        if columns and all(len(c.path) == 1 and c.path[0] in partitions for c in columns):
            parts.append(node)
    return combine([parts]) if parts else None


def _group(
    table: Table, tasks: Sequence[ScanTask], uses: tuple[PathUse, ...], partition_columns: Sequence[str]
) -> tuple[FileGroup, ...]:
    buckets: dict[tuple, list[ScanTask]] = {}
    for task in tasks:
        partition = tuple((c, task.partition_values.get(c)) for c in partition_columns)
        leaves: tuple[tuple[PathUse, str], ...] | None = None
        if uses:
            layout = file_layout(table.open_file(task.relative_path))
            found = []
            for use in uses:
                leaf = layout.serving(use)
                if leaf is None:
                    break
                found.append((use, leaf))
            else:
                leaves = tuple(found)  # type: ignore[assignment]
        buckets.setdefault((partition, leaves), []).append(task)
    groups = []
    for (partition, leaves), members in buckets.items():
        kind: GroupKind = "shredded" if leaves is not None else "variant"
        groups.append(FileGroup(kind, tuple(members), partition, leaves or ()))
    groups.sort(key=lambda g: (g.kind != "shredded", str(g.partition_values)))
    return tuple(groups)
