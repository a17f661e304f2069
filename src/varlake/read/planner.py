"""Plan a scan: bind the filter, skip files by partition values and statistics.

Each file of the snapshot lands in exactly one place of the ``ScanPlan``:

* ``skipped_by_partition`` -- the filter, with the file's partition values folded in
  (``fold_partitions``), is FALSE;
* ``skipped_by_stats`` -- statistics prove no row matches, and evaluating the filter on
  its rows could not raise either (``expr.raising``), or a plain-column conjunct
  excludes every row (``row_group_guards``: no row group is evaluated then);
* ``put_back`` -- statistics prove no row matches, but a cast in the filter could
  raise on its rows (``CAST(v:a AS INT)`` of ``"x"``): an engine evaluating the filter
  row by row, as Spark does under ANSI, would have failed there, so the file is read
  and the error surfaces the same way in every engine;
* ``tasks`` -- every file to read (the put-back ones included), each with its
  residual filter (``ScanTask.residual``) and its deletion vector
  (``ScanTask.deletion_vector``: rows a reader drops by their index in the file).

Statistics of a file with a deletion vector describe the data file before deletion, so
skipping on them stays sound; ``ScanTask.num_records`` is the logical count.

A Variant path the filter reads as a date or timestamp gets one fact beyond the ``add``'s
statistics: when the file's layout tags show it ends at a perfectly shredded string leaf
the writer proved to hold only ISO dates (``read.layout.iso_date_keys``), it is named in
``FileStats.variant_iso_dates``, so its string bounds bound its dates and its cast
cannot raise there (``expr.bounds``, ``expr.raising``).

How a reader evaluates the residual so that it raises where Spark raises (row groups
left unevaluated, extractions done on every row, the order of a row's checks) is in
``read.residual``; ``read.arrow_reader`` follows it, and Spark does it by itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from varlake.delta import constants as C
from varlake.delta.actions import AddFile
from varlake.delta.column_mapping import ColumnMapping, column_mapping
from varlake.delta.deletion_vectors import DeletionVector
from varlake.delta.paths import relative_data_path
from varlake.delta.schema import PrimitiveType, StructType
from varlake.delta.snapshot import Snapshot
from varlake.delta.stats import file_stats
from varlake.errors import CorruptLogError, UnsupportedFeatureError
from varlake.semantics.datetime_text import ISO_DATE_TARGETS
from varlake.variant.path import VariantPath
from varlake.expr import (
    AlwaysFalse,
    AlwaysTrue,
    FileStats,
    Predicate,
    SkippingEvaluator,
    Term,
    VariantGet,
    bind,
    flatten_delta_schema,
    parse_predicate,
)
from varlake.expr.raising import cast_proofs
from varlake.expr.visitors import referenced_columns, variant_gets
from varlake.read.layout import iso_date_keys
from varlake.read.residual import fold_partitions, row_group_guards

ColumnPath = tuple[str, ...]
_ABSENT = object()  # a partition value missing from an add (not NULL)


def schema_types(schema: StructType) -> dict[ColumnPath, str]:
    """Field path -> canonical type name, as the expression binder wants it."""
    return flatten_delta_schema(json.loads(schema.to_schema_string()))


def bind_filter(filter: str | Predicate | None, schema: StructType, session_tz: str = "UTC") -> Predicate | None:
    """Parse (if text) and bind a filter against a table schema."""
    if filter is None:
        return None
    predicate = parse_predicate(filter) if isinstance(filter, str) else filter
    _refuse_collated(predicate, schema)
    return bind(predicate, schema_types(schema), session_tz=session_tz)


def _refuse_collated(predicate: Predicate, schema: StructType) -> None:
    """varlake compares strings by their UTF-8 bytes (``UTF8_BINARY``): a filter on a column
    with another collation (``__COLLATIONS`` field metadata, the ``collations`` feature)
    could answer differently from Spark, so it is refused rather than evaluated."""
    for column in referenced_columns(predicate):
        fields, level = [], schema
        for name in column.path:
            f = next((f for f in level.fields if f.name == name), None) if isinstance(level, StructType) else None
            if f is None:
                break
            fields.append(f)
            level = f.type
        for f in fields:
            collations = f.metadata.get(C.COL_COLLATIONS)
            if not isinstance(collations, dict):
                continue
            other = sorted({str(c) for c in collations.values() if not str(c).upper().endswith("UTF8_BINARY")})
            if other:
                raise UnsupportedFeatureError(
                    f"filter on column {'.'.join(column.path)!r} with collation {', '.join(other)}: varlake compares "
                    "strings by their bytes (UTF8_BINARY), so it cannot evaluate this filter as Spark would"
                )


@dataclass(frozen=True)
class ScanTask:
    """One data file: where it is, its partition values, its statistics, (in a plan's
    ``tasks``) the filter its rows are read with, partition values folded in, and its
    deletion vector, if any (the rows of the file a reader must not return)."""

    add: AddFile
    relative_path: str
    stats: FileStats = field(repr=False)
    residual: Predicate | None = field(default=None, repr=False, compare=False)
    deletion_vector: DeletionVector | None = field(default=None, repr=False)
    #: partition values keyed by logical column name, when the add's keys are physical
    #: names (column mapping, ``delta.column_mapping``)
    logical_partition_values: Mapping[str, str | None] | None = field(default=None, repr=False, compare=False)

    @property
    def partition_values(self) -> Mapping[str, str | None]:
        """The file's partition values, keyed by (logical) column name."""
        if self.logical_partition_values is not None:
            return self.logical_partition_values
        return self.add.partition_values

    @property
    def physical_records(self) -> int | None:
        """Rows in the data file (``numRecords``), deleted ones included."""
        return self.stats.num_records

    @property
    def num_records(self) -> int | None:
        """Rows of the logical file: ``numRecords`` minus the deletion vector's cardinality.
        (Statistics describe the data file, deleted rows included: skipping stays sound.)"""
        n = self.stats.num_records
        if n is None or self.deletion_vector is None:
            return n
        return max(n - self.deletion_vector.cardinality, 0)


@dataclass(frozen=True)
class PutBack:
    """A file statistics would skip, read because ``terms`` (casts in its residual filter)
    could raise on its rows."""

    task: ScanTask
    terms: tuple[Term, ...]

    @property
    def reason(self) -> str:
        parts = []
        for term in self.terms:
            if isinstance(term, VariantGet):
                parts.append(f"{term}: statistics do not prove every value at {term.path} converts to {term.target}")
            else:
                parts.append(f"{term}: no statistics prove its input converts")
        return "a cast in the filter could raise -- " + "; ".join(parts)


@dataclass(frozen=True)
class ScanPlan:
    """Files to read and files skipped (and why), for one snapshot and one bound filter.

    ``tasks`` are the files to read, put-back files included; ``skipped`` the files not
    read (by partition values, then by statistics).
    """

    version: int
    schema: StructType
    partition_columns: tuple[str, ...]
    filter: Predicate | None
    tasks: tuple[ScanTask, ...]
    skipped_by_partition: tuple[ScanTask, ...] = ()
    skipped_by_stats: tuple[ScanTask, ...] = ()
    put_back: tuple[PutBack, ...] = ()
    #: how data files name columns (None: by display name) -- ``delta.column_mapping``
    column_mapping: ColumnMapping | None = field(default=None, repr=False, compare=False)

    @property
    def skipped(self) -> tuple[ScanTask, ...]:
        return self.skipped_by_partition + self.skipped_by_stats

    @property
    def put_back_tasks(self) -> tuple[ScanTask, ...]:
        return tuple(p.task for p in self.put_back)

    @property
    def total_files(self) -> int:
        return len(self.tasks) + len(self.skipped)


def partition_types(schema: StructType, partition_columns: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for name in partition_columns:
        t = schema.field(name).type
        if isinstance(t, PrimitiveType):
            out[name] = t.name
    return out


PLACE_READ, PLACE_PARTITION_SKIPPED, PLACE_STATS_SKIPPED, PLACE_PUT_BACK = range(4)


class _Residual:
    """One residual filter of a scan, compiled once: where a file goes given its statistics."""

    __slots__ = ("filter", "casts", "fixed", "might_match", "_all_proven", "_guards", "_partitions", "_tz")

    def __init__(self, filter: Predicate, partitions: Mapping[str, str], tz: str) -> None:
        self.filter = filter
        self.casts = cast_proofs(filter)
        self.fixed = PLACE_PARTITION_SKIPPED if isinstance(filter, AlwaysFalse) else PLACE_READ if isinstance(filter, AlwaysTrue) else None
        self.might_match = (
            SkippingEvaluator(filter, partitions, session_tz=tz).might_match if self.fixed is None else None
        )
        self._partitions = partitions
        self._tz = tz
        self._guards: tuple[SkippingEvaluator, ...] | None = None
        self._all_proven = _conjunction(tuple(p for _, p in self.casts))

    def unproven(self, stats: FileStats) -> tuple[Term, ...]:
        """The casts this file's statistics do not prove safe."""
        if self._all_proven(stats):
            return ()
        return tuple(t for t, p in self.casts if not p(stats))

    def guard_excludes(self, stats: FileStats) -> bool:
        """Whether statistics exclude every row from one of the ``row_group_guards``."""
        if self._guards is None:
            self._guards = tuple(
                SkippingEvaluator(g, self._partitions, session_tz=self._tz) for g in row_group_guards(self.filter)
            )
        return any(not g.might_match(stats) for g in self._guards)

    def place(self, stats: FileStats) -> tuple[int, tuple[Term, ...]]:
        """Where a file with these statistics goes, and the casts that put it back."""
        if self.fixed is not None:
            return self.fixed, ()
        if self.might_match(stats):  # type: ignore[misc]
            return PLACE_READ, ()
        if self._all_proven(stats) or self.guard_excludes(stats):
            return PLACE_STATS_SKIPPED, ()  # nothing can raise, or no row group is ever evaluated
        return PLACE_PUT_BACK, self.unproven(stats)


def _conjunction(proofs: tuple[Callable[[FileStats], bool], ...]) -> Callable[[FileStats], bool]:
    """One check that every proof holds (the hot path of planning: one call per skipped file)."""
    if not proofs:
        return lambda stats: True
    if len(proofs) == 1:
        return proofs[0]
    if len(proofs) == 2:
        first, second = proofs
        return lambda stats: first(stats) and second(stats)
    return lambda stats: all(p(stats) for p in proofs)


class Residuals:
    """The residual filter of each distinct set of partition values of one scan."""

    def __init__(self, filter: Predicate, partitions: Mapping[str, str], session_tz: str) -> None:
        self.filter = filter
        self.partitions = partitions
        self.tz = session_tz
        self._by_values: dict[tuple[object, ...], _Residual] = {}
        self.unpartitioned = _Residual(filter, partitions, session_tz) if not partitions else None

    def of(self, partition_values: Mapping[str, str | None]) -> _Residual:
        if self.unpartitioned is not None:
            return self.unpartitioned
        key = tuple(partition_values.get(name, _ABSENT) for name in self.partitions)
        residual = self._by_values.get(key)
        if residual is None:
            folded = fold_partitions(self.filter, partition_values, self.partitions, self.tz)
            residual = self._by_values[key] = _Residual(folded, self.partitions, self.tz)
        return residual


def _date_keys(bound: Predicate | None) -> dict[tuple[ColumnPath, str], tuple[str | int, ...]]:
    """The Variant paths the filter reads as a date or timestamp (statistics keys, with the
    path's segments): a file whose tags prove one holds only ISO date text gets that fact
    in its statistics (``iso_date_keys``)."""
    if bound is None:
        return {}
    gets = (g for g in variant_gets(bound) if g.target in ISO_DATE_TARGETS)
    return {(g.column.path, g.path): VariantPath.parse(g.path).segments for g in gets}


def plan_scan(
    snapshot: Snapshot, root_location: str, filter: str | Predicate | None = None, session_tz: str = "UTC"
) -> ScanPlan:
    """Every live file of ``snapshot``, sorted into files to read and files skipped (see the module).

    ``root_location`` is the absolute location of the table root (paths are checked to stay in it).
    """
    schema = snapshot.schema
    bound = bind_filter(filter, schema, session_tz)
    residuals = (
        Residuals(bound, partition_types(schema, tuple(snapshot.partition_columns)), session_tz)
        if bound is not None
        else None
    )
    keep: list[ScanTask] = []
    by_partition: list[ScanTask] = []
    by_stats: list[ScanTask] = []
    put_back: list[PutBack] = []
    protocol = snapshot.protocol
    mapping = column_mapping(protocol, snapshot.metadata, schema)
    dv_feature = protocol.min_reader_version >= 3 and C.DELETION_VECTORS in protocol.reader_feature_set
    date_keys = _date_keys(bound)
    for add in snapshot.files:
        rel = relative_data_path(add.path, root_location, f"add {add.path!r}")
        dv = None
        if add.deletion_vector is not None:
            if not dv_feature:
                # an add carrying a DV in a table that does not declare the feature: its
                # deleted rows cannot be trusted to be told apart
                raise CorruptLogError(
                    f"{root_location}: add {add.path!r} carries a deletionVector, but the table's protocol does not "
                    "declare the deletionVectors feature; its deleted rows cannot be told apart, nothing was read"
                )
            dv = DeletionVector.parse(add.deletion_vector, f"{root_location}: add {add.path!r}")
        if mapping is None:
            values, logical = add.partition_values, None
            stats = file_stats(add.stats, schema, values)
        else:  # the log keys partition values and statistics by physical names
            values = logical = mapping.partition_values(add.partition_values, snapshot.partition_columns)
            stats = mapping.file_stats(add.stats, values)
        if date_keys and add.tags:
            iso = iso_date_keys(add.tags, date_keys, mapping)
            if iso:
                stats = replace(stats, variant_iso_dates=iso)
        if residuals is None:
            keep.append(ScanTask(add, rel, stats, deletion_vector=dv, logical_partition_values=logical))
            continue
        residual = residuals.of(values)
        where, terms = residual.place(stats)
        task = ScanTask(add, rel, stats, residual.filter, dv, logical)
        if where == PLACE_READ:
            keep.append(task)
        elif where == PLACE_STATS_SKIPPED:
            by_stats.append(task)
        elif where == PLACE_PARTITION_SKIPPED:
            by_partition.append(task)
        else:
            keep.append(task)
            put_back.append(PutBack(task, terms))
    return ScanPlan(
        snapshot.version, schema, tuple(snapshot.partition_columns), bound,
        tuple(keep), tuple(by_partition), tuple(by_stats), tuple(put_back), mapping,
    )
