"""Read plans for Spark: which read path each file of a table takes.

A query touches a table's Variant columns (top-level, or held in structs) through *path
uses* (``v:a.b::bigint``, ``variant_get(v, '$.a', 'int')``, ``s.v:a IS NULL``). For each
table the planner

1. plans the scan with ``varlake.read.plan_scan``, as every engine does: files skipped
   by partition values and by statistics, and files put back because a cast in the
   filter could raise on them (Spark would have raised there);
2. takes each file's layout facts (``varlake.read.layout.task_layout``: from the
   ``varlake.layout`` tags of its ``add`` when the writer recorded them, else from its
   footer, read through the table's ``Storage`` and cached per file): per used path,
   whether it is *perfectly shredded* there -- a typed ``typed_value`` leaf whose sibling
   ``value`` column is null in every row group -- and which type the leaf has;
3. groups the files: a file in which every used path is perfectly shredded with a leaf
   that converts to the asked type without loss or failure (``leaf_serves``; or, for a
   wider integer or decimal leaf, when the footer's min and max prove every value fits
   the narrower type), or with a string leaf, whose cast to any atomic type is evaluated
   on the leaf with Spark's Variant-cast rules and errors (``leaf_casts``: an erroring use
   such a cast can fail also reads a *failure column*, ``failure_of``, so that the error
   is raised at the query's site, where Spark would raise it), is read as
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

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from varlake.delta.column_mapping import ColumnMapping
from varlake.delta.schema import ArrayType, DataType, PrimitiveType, StructField, StructType, VariantType
from varlake.delta.snapshot import Snapshot
from varlake.errors import ExpressionError, VariantError
from varlake.expr import And, Or, Predicate
from varlake.expr.raising import fits
from varlake.expr.types import decimal_params, is_integral
from varlake.read import PutBack, ScanPlan, ScanTask, bind_filter, plan_scan
from varlake.read.layout import LayoutFacts, file_column, leaf_type_name, task_layout, unique_field
from varlake.shred.layout import ArrayLayout, ObjectLayout, PrimitiveLayout, ValueLayout
from varlake.spark.reading.element_fields import primitive_struct
from varlake.spark.reading.leaf_casts import date_text_serves, may_fail, string_leaf_serves
from varlake.table import Table
from varlake.semantics.types import DELTA_NAMES, SparkType, quote_identifier
from varlake.variant.cast import parse_type
from varlake.variant.path import VariantPath

__all__ = [
    "ISNULL",
    "FileGroup",
    "PathUse",
    "TablePlan",
    "ElementShape",
    "element_shape",
    "elements_of",
    "iso_date_text",
    "read_use",
    "text_of",
    "is_nested",
    "leaf_serves",
    "failure_of",
    "nested_target",
    "plan_table",
    "serving",
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


@dataclass(frozen=True, slots=True)
class PathUse:
    """One way a query reads a Variant path: cast to ``target`` (canonical type) or ``ISNULL``.

    ``column`` is the Variant column's path in the table schema: ``("v",)``, or
    ``("s", "v")`` for a Variant held in struct ``s``.
    """

    column: tuple[str, ...]
    segments: tuple[Segment, ...]
    target: str
    #: a ``try_`` form (``try_cast``, ``try_variant_get``): NULL where the cast fails, not an error
    safe: bool = False
    #: the *failure column* of the use (``failure_of``), not the use itself
    failure: bool = False
    #: the use's array read as its shredded elements (``elements_of``), not rebuilt
    elements: bool = False
    #: the use's string leaf of ISO dates as read (``text_of``), to compare as text
    text: bool = False

    @property
    def path(self) -> str:
        """The path as RFC 9535 normalized text (``$['a'][0]``)."""
        return VariantPath(self.segments).normalized

    def __str__(self) -> str:
        what = "IS NULL" if self.target == ISNULL else f"{'TRY ' if self.safe else ''}AS {self.target}"
        return (f"{'.'.join(self.column)}:{self.path} {what}" + (" (where it fails)" if self.failure else "")
                + (" (as its shredded elements)" if self.elements else "") + (" (as its ISO text)" if self.text else ""))


def failure_of(use: PathUse) -> PathUse:
    """The use's failure column: a Variant, NULL unless the cast fails on the row
    (``leaf_casts.failure_sql``); the query's site raises from it (``leaf_casts.raise_sql``)."""
    return replace(use, failure=True)


def text_of(use: PathUse) -> PathUse:
    """A DATE use's string leaf as read, where it holds only ISO dates (``iso_date_text``):
    the query's comparisons of the use with DATE constants compare texts."""
    return replace(use, text=True)


def read_use(use: PathUse) -> PathUse:
    """The use whose leaves a derived column reads (a form of it as read: itself)."""
    return replace(use, elements=False, text=False)


def elements_of(use: PathUse) -> PathUse:
    """The use's array of structs as its shredded elements (``element_shape``): the query
    explodes it and reads each field where it accesses it (``element_fields``)."""
    return replace(use, elements=True)


# --- struct and array targets ------------------------------------------------------------------------

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
        names = [f.name for f in t.fields]
        if not names or len({name.lower() for name in names}) != len(names):
            return None
        fields = []
        for f in t.fields:
            converted = _from_spark(f.type)
            if converted is None:
                return None
            fields.append(StructField(f.name, converted, True))
        return StructType(tuple(fields))
    if t.name in ("map", "variant", "time"):
        return None
    if t.name == "decimal":
        return PrimitiveType(f"decimal({t.precision},{t.scale})")
    return PrimitiveType(DELTA_NAMES.get(t.name, t.name))


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


# --- what a file's shredded leaves serve (layout facts: ``varlake.read.layout``) --------------------------


def serving(layout: LayoutFacts, use: PathUse) -> str | None:
    """What this file reads for ``use`` if it serves it, else None: the leaf type
    (``leaf_serves``), or for a struct/array target the shape of the subtree to read."""
    key = ("spark.serving", use)
    if key not in layout.memo:
        layout.memo[key] = _serving(layout, use)
    return layout.memo[key]  # type: ignore[return-value]


def _serving(layout: LayoutFacts, use: PathUse) -> str | None:
    if not is_nested(use.target):
        leaf = layout.leaf_type(use.column, use.segments)
        if leaf_serves(leaf, use.target) or string_leaf_serves(leaf, use.target):
            return leaf
        found = layout.node(use.column, use.segments) if leaf is not None else None
        return leaf if found is not None and _bounded_serves(layout, leaf, use.target, found[1]) else None
    found = layout.node(use.column, use.segments)
    shape = _shape(layout, *found, target_type(use.target)) if found is not None else None
    return type_text(shape) if shape is not None else None


def never_fails(layout: LayoutFacts, use: PathUse, shape: str) -> bool:
    """Whether reading ``use`` from this file's leaves (read as ``shape``, ``serving``) is
    proven never to fail: every leaf whose cast could fail is a string leaf of ISO dates
    (``LayoutFacts.date_text``, which the writer proved from the values) cast to a date or
    timestamp type (``leaf_casts.date_text_serves``)."""
    key = ("spark.never_fails", use, shape)
    if key not in layout.memo:
        found = layout.node(use.column, use.segments)
        layout.memo[key] = found is not None and _never_fails(layout, *found, target_type(use.target), target_type(shape))
    return layout.memo[key]  # type: ignore[return-value]


def _never_fails(layout: LayoutFacts, node: ValueLayout, parquet: str, target: DataType, shape: DataType) -> bool:
    typed = node.typed
    if isinstance(target, PrimitiveType) and isinstance(shape, PrimitiveType):
        if not string_leaf_serves(shape.name, target.name):
            return True
        return date_text_serves(shape.name, target.name) and layout.date_text(parquet)
    if isinstance(target, ArrayType) and isinstance(shape, ArrayType) and isinstance(typed, ArrayLayout):
        element = f"{parquet}.typed_value.list.element"
        return _never_fails(layout, typed.element, element, target.element_type, shape.element_type)
    if isinstance(target, StructType) and isinstance(shape, StructType) and isinstance(typed, ObjectLayout):
        wanted = {f.name: f.type for f in target.fields}
        for f in shape.fields:
            if f.name not in wanted:
                continue  # a probe field, read for the object's nulls only
            child = unique_field(typed, f.name)
            if child is None or not _never_fails(layout, child, f"{parquet}.typed_value.{f.name}", wanted[f.name], f.type):
                return False
        return True
    return False


def _bounded_serves(layout: LayoutFacts, leaf: str, target: str, parquet: str) -> bool:
    """A leaf wider than ``target`` still serves it when the footer's min and max prove
    every value fits: integers into narrower integers or decimals, decimals into
    decimals with fewer integer digits (never a smaller scale: that would round)."""
    leaf_decimal, target_decimal = decimal_params(leaf), decimal_params(target)
    numeric_target = is_integral(target) or target_decimal is not None
    if not numeric_target or not (is_integral(leaf) or leaf_decimal is not None):
        return False
    if leaf_decimal is not None and (target_decimal is None or leaf_decimal[1] > target_decimal[1]):
        return False
    bounds = layout.leaf_bounds(parquet)
    if bounds is None:
        return False
    low, high = bounds
    return low is None or (fits(low, target) and fits(high, target))


def _shape(layout: LayoutFacts, node: ValueLayout, parquet: str, target: DataType) -> DataType | None:
    """The subtree to read for ``target`` if this level is perfectly shredded for it."""
    if isinstance(target, PrimitiveType):
        leaf = layout.primitive_leaf(node, parquet)
        if leaf is None:
            return None
        serves = (
            leaf_serves(leaf, target.name)
            or string_leaf_serves(leaf, target.name)
            or _bounded_serves(layout, leaf, target.name, parquet)
        )
        return PrimitiveType(leaf) if serves else None
    if node.has_value and not layout.all_null(f"{parquet}.value"):
        return None  # some values here are not shredded objects/arrays (or are JSON nulls)
    typed = node.typed
    if isinstance(target, ArrayType) and isinstance(typed, ArrayLayout):
        element = _shape(layout, typed.element, f"{parquet}.typed_value.list.element", target.element_type)
        return ArrayType(element, True) if element is not None else None
    if isinstance(target, StructType) and isinstance(typed, ObjectLayout):
        fields = []
        for wanted in target.fields:
            if wanted.name not in typed.keys:
                continue  # never in any object here (the residual value is all-null): NULL
            child = unique_field(typed, wanted.name)
            sub = _shape(layout, child, f"{parquet}.typed_value.{wanted.name}", wanted.type) if child is not None else None
            if sub is None:
                return None
            fields.append(StructField(wanted.name, sub))
        if not fields:
            probe = _probe(layout, typed, parquet)
            if probe is None:
                return None
            fields.append(probe)  # read only so that the object's own nulls are known
        return StructType(tuple(fields))
    return None


def _probe(layout: LayoutFacts, typed: ObjectLayout, parquet: str) -> StructField | None:
    """One shredded field of an object with a readable typed leaf under it."""
    for key, child in typed.fields:
        if unique_field(typed, key) is None:
            continue
        sub = _any_leaf(layout, child, f"{parquet}.typed_value.{key}")
        if sub is not None:
            return StructField(key, sub)
    return None


def _any_leaf(layout: LayoutFacts, node: ValueLayout, parquet: str) -> DataType | None:
    typed = node.typed
    if isinstance(typed, PrimitiveLayout):
        name = leaf_type_name(typed)
        return PrimitiveType(name) if name is not None and layout.has_column(f"{parquet}.typed_value") else None
    if isinstance(typed, ArrayLayout):
        element = _any_leaf(layout, typed.element, f"{parquet}.typed_value.list.element")
        return ArrayType(element, True) if element is not None else None
    if isinstance(typed, ObjectLayout):
        probe = _probe(layout, typed, parquet)
        return StructType((probe,)) if probe is not None else None
    return None


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


# --- the plan for one table ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileGroup:
    """Files read the same way: ``shredded`` (struct leaves) or ``variant``, one partition each.

    ``leaf_types`` gives, per use, the leaf type read for it, or for a struct/array target
    the shape of the shredded subtree read (``serving``); ``proven`` the uses whose casts
    could fail on these leaves but are proven never to in every file of the group
    (``never_fails``): they need no failure column here.
    """

    kind: GroupKind
    tasks: tuple[ScanTask, ...]
    partition_values: tuple[tuple[str, str | None], ...]
    leaf_types: tuple[tuple[PathUse, str], ...] = ()
    proven: frozenset[PathUse] = frozenset()

    @property
    def leaves(self) -> dict[PathUse, str]:
        return dict(self.leaf_types)


@dataclass(frozen=True)
class TablePlan:
    """How one table of a query is read: the engine-neutral ``scan`` (files skipped by
    partition values and by statistics, files put back) and the groups of files read."""

    name: str
    table: Table
    scan: ScanPlan
    uses: tuple[PathUse, ...]
    whole_variant: bool
    groups: tuple[FileGroup, ...]
    #: the view computes its rebuilt struct and array columns apart from the query's
    #: filters (``frames._keep_apart``): the query filters on none of the table's paths
    keep_apart: bool = False

    @property
    def schema(self) -> StructType:
        return self.scan.schema

    @property
    def filter(self) -> Predicate | None:
        return self.scan.filter

    @property
    def skipped_by_partition(self) -> tuple[ScanTask, ...]:
        return self.scan.skipped_by_partition

    @property
    def skipped_by_stats(self) -> tuple[ScanTask, ...]:
        return self.scan.skipped_by_stats

    @property
    def put_back(self) -> tuple[PutBack, ...]:
        return self.scan.put_back

    @property
    def readmitted(self) -> tuple[ScanTask, ...]:
        """The files statistics exclude, read because a cast in the filter could raise."""
        return self.scan.put_back_tasks

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
    """Plan the scan (``varlake.read.plan_scan``), then group the files to read by read
    path and partition values (a task's deletion vector goes with it: ``reader`` applies it)."""
    scan = plan_scan(snapshot, table.log.root_location, filter, session_tz)
    used = tuple(dict.fromkeys(uses)) if not whole_variant else ()
    groups = _group(table, scan.tasks, used, scan.partition_columns, scan.column_mapping)
    used, groups = _with_failures(used, groups)
    return TablePlan(name, table, scan, used, whole_variant, groups)


def _with_failures(uses: tuple[PathUse, ...], groups: tuple[FileGroup, ...]) -> tuple[tuple[PathUse, ...], tuple[FileGroup, ...]]:
    """The uses and groups with a failure column (``failure_of``) for every erroring use
    that some shredded group serves with a cast that can fail (a string leaf, or a struct or
    array target with one under it), read in every shredded group from the use's own leaf
    or subtree (``leaf_casts``)."""
    failing = [
        use for use in uses
        if not use.safe and any(
            g.kind == "shredded" and use not in g.proven and _can_fail(use, g.leaves[use]) for g in groups
        )
    ]
    if not failing:
        return uses, groups
    extra = tuple((failure_of(use), use) for use in failing)
    groups = tuple(
        replace(g, leaf_types=g.leaf_types + tuple((f, g.leaves[use]) for f, use in extra)) if g.kind == "shredded" else g
        for g in groups
    )
    return uses + tuple(f for f, _ in extra), groups


def _can_fail(use: PathUse, leaf: str) -> bool:
    """Whether reading ``use`` from leaves read as ``leaf`` (a served pair) can fail on some value."""
    return use.target != ISNULL and may_fail(target_type(leaf), target_type(use.target))


@dataclass(frozen=True)
class ElementShape:
    """How an array of structs is read as its shredded elements (``element_shape``)."""

    #: the leaf type read for each shredded field of the elements
    leaves: StructType
    #: the fields cast to DATE whose string leaves hold only ISO dates in every file
    #: (``never_fails``): they compare as text (``leaf_casts.iso_date_text_sql``)
    iso_dates: frozenset[str] = frozenset()


def element_shape(plan: TablePlan, use: PathUse) -> ElementShape | None:
    """How ``use``, an array of structs of primitives the query explodes and reads field by
    field (``element_fields``), is read as its shredded elements (``elements_of``), or None
    where it cannot be: every file the plan reads must be in a shredded group, every group
    must read the same element leaves (the view's column has one type), and no field's cast
    may fail there (a ``try_`` form, leaves that convert exactly, or casts proven by the
    files: ``never_fails``). Spark's cast of the array casts every field of every element;
    the rewrite casts a field only where the query reads it, the same answer only because
    none can fail."""
    wanted = primitive_struct(target_type(use.target))
    if wanted is None or not plan.groups or any(g.kind != "shredded" for g in plan.groups):
        return None
    shapes = {g.leaves[use] for g in plan.groups}
    if len(shapes) != 1:
        return None
    if not use.safe and any(use not in g.proven and _can_fail(use, g.leaves[use]) for g in plan.groups):
        return None
    shape = target_type(shapes.pop())
    assert isinstance(shape, ArrayType) and isinstance(shape.element_type, StructType)  # ``serving``'s shape of the target
    element = shape.element_type  # the target's shredded fields: their names are distinct as the target's are
    iso_dates: frozenset[str] = frozenset()
    if all(use in g.proven for g in plan.groups):  # every string leaf cast to a date holds ISO dates
        kinds = {f.name: f.type for f in element.fields}
        iso_dates = frozenset(
            f.name for f in wanted.fields
            if f.type == PrimitiveType("date") and kinds.get(f.name) == PrimitiveType("string")
        )
    return ElementShape(element, iso_dates)


def iso_date_text(plan: TablePlan, use: PathUse) -> bool:
    """Whether ``use``, a DATE read of a path, reads in every file of the plan a string
    leaf the writer proved to hold only ISO dates (``never_fails``): every read file in a
    shredded group, its leaf a string, its cast proven."""
    if use.target != "date" or not plan.groups:
        return False
    return all(g.kind == "shredded" and g.leaves.get(use) == "string" and use in g.proven for g in plan.groups)


def _group(
    table: Table,
    tasks: Sequence[ScanTask],
    uses: tuple[PathUse, ...],
    partition_columns: Sequence[str],
    mapping: ColumnMapping | None = None,
) -> tuple[FileGroup, ...]:
    buckets: dict[tuple, list[ScanTask]] = {}
    for task in tasks:
        partition = tuple((c, task.partition_values.get(c)) for c in partition_columns)
        leaves: tuple[tuple[PathUse, str], ...] | None = None
        proven: frozenset[PathUse] = frozenset()
        if uses:
            # the add's layout tags when well-formed, else the footer (id mode matches columns by
            # the file's field ids, which only the footer holds)
            tags = None if mapping is not None and mapping.mode == "id" else task.add.tags
            layout = task_layout(table.storage, f"{table.path}/{task.relative_path}", tags)
            found = []
            proofs = []
            for use in uses:
                # footer facts are looked up under the file's own names of the Variant column
                column = file_column(layout, use.column, mapping)
                in_file = replace(use, column=column) if column is not None else None
                leaf = serving(layout, in_file) if in_file is not None else None
                if leaf is None:
                    break
                found.append((use, leaf))
                # (a try_ form has no failure column to spare, but its proven dates compare as text)
                if _can_fail(use, leaf) and never_fails(layout, in_file, leaf):  # type: ignore[arg-type]
                    proofs.append(use)
            else:
                leaves = tuple(found)  # type: ignore[assignment]
                proven = frozenset(proofs)
        buckets.setdefault((partition, leaves, proven), []).append(task)
    groups = []
    for (partition, leaves, proven), members in buckets.items():
        kind: GroupKind = "shredded" if leaves is not None else "variant"
        groups.append(FileGroup(kind, tuple(members), partition, leaves or (), proven))
    groups.sort(key=lambda g: (g.kind != "shredded", str(g.partition_values)))
    return tuple(groups)


# --- count(*) from the log -----------------------------------------------------------------------------------

#: Partition column types whose comparisons with a literal of their own kind never raise in
#: Spark (ANSI casts of a string to a number or date can): only these are decided from the log.
_COUNTABLE_PARTITION_TYPES = frozenset({"string", "byte", "short", "integer", "long", "boolean"})


def metadata_count(plan: TablePlan, where: Predicate | None, tz: str = "UTC") -> int | None:
    """The rows ``SELECT count(*) FROM t [WHERE where]`` counts, from the log alone, as
    Delta's ``OptimizeMetadataOnlyDeltaQuery`` does: the sum of each file's ``numRecords``
    minus its deletion vector's cardinality, over the files the WHERE keeps -- only when
    the WHERE reads partition columns alone and each file's partition values decide it
    (its residual folds to TRUE or FALSE). None (count the rows) when a file has no
    ``numRecords`` or anything is not decided so."""
    from varlake.expr import AlwaysTrue

    scan = plan.scan
    if where is not None:
        if not _decided_by_partitions(where, scan):
            return None
        try:
            scan = plan_scan(plan.table.snapshot(scan.version), plan.table.log.root_location, where, tz)
        except (ExpressionError, ValueError):
            return None
        if scan.put_back or any(not isinstance(t.residual, AlwaysTrue) for t in scan.tasks):
            return None
    total = 0
    for task in scan.tasks:
        n = task.num_records
        if n is None:
            return None
        total += n
    return total


_FAMILIES = {"string": "string", "boolean": "boolean", "byte": "int", "short": "int", "integer": "int", "long": "int"}


def _decided_by_partitions(predicate: Predicate, scan: ScanPlan) -> bool:
    """Whether ``predicate`` is AND/OR/NOT of comparisons, IN and IS [NOT] NULL of partition
    columns (of ``_COUNTABLE_PARTITION_TYPES``) with literals of their own kind (or NULL):
    nothing Spark could raise on, everything a file's partition values decide."""
    from varlake.expr import AlwaysFalse, AlwaysTrue, Column, Comparison, In, IsNotNull, IsNull, Literal, Not, NotIn

    def family(term: object) -> str | None:
        if isinstance(term, Column):
            if len(term.path) != 1 or term.path[0] not in scan.partition_columns:
                return None
            dtype = scan.schema.field(term.path[0]).type
            return _FAMILIES.get(dtype.name) if isinstance(dtype, PrimitiveType) else None
        if isinstance(term, Literal):
            return "null" if term.value is None else _FAMILIES.get(term.dtype)
        return None

    def same(column: object, literals: Sequence[object]) -> bool:
        kind = family(column) if isinstance(column, Column) else None
        return kind is not None and all(family(x) in (kind, "null") and isinstance(x, Literal) for x in literals)

    def ok(node: Predicate) -> bool:
        if isinstance(node, (AlwaysTrue, AlwaysFalse)):
            return True
        if isinstance(node, (And, Or)):
            return ok(node.left) and ok(node.right)
        if isinstance(node, Not):
            return ok(node.child)
        if isinstance(node, (IsNull, IsNotNull)):
            return family(node.term) is not None and isinstance(node.term, Column)
        if isinstance(node, (In, NotIn)):
            return same(node.term, node.values)
        if isinstance(node, Comparison):
            return same(node.left, [node.right]) or same(node.right, [node.left])
        return False

    return ok(predicate)
