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

Planning costs O(files read) once a snapshot has been planned: what is decoded per file is
kept per snapshot (``read.file_index``), the filter is folded once per set of partition
values, integral bounds are compared with numpy before the per-file check, and the
skipped files' tasks are built when the plan's skipped lists are first read.

How a reader evaluates the residual so that it raises where Spark raises (row groups
left unevaluated, extractions done on every row, the order of a row's checks) is in
``read.residual``; ``read.arrow_reader`` follows it, and Spark does it by itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from varlake.delta import constants as C
from varlake.delta.actions import AddFile
from varlake.delta.column_mapping import ColumnMapping
from varlake.delta.deletion_vectors import DeletionVector
from varlake.delta.schema import PrimitiveType, StructType
from varlake.delta.snapshot import Snapshot
from varlake.errors import UnsupportedFeatureError
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
from varlake.read.file_index import bound_conjunct, conjuncts, file_index
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


class SkippedFiles:
    """The files a plan skips, by partition values and by statistics: their ``ScanTask``s
    are built when first read (``ScanPlan.skipped_by_partition``/``skipped_by_stats``), so a
    plan costs nothing per skipped file until someone looks; counting them is free."""

    __slots__ = ("_build", "_partition", "_stats", "_tasks")

    def __init__(
        self,
        build: Callable[[int], ScanTask] | None = None,
        by_partition: Sequence[int] = (),
        by_stats: Sequence[int] = (),
    ) -> None:
        self._build = build
        self._partition = by_partition
        self._stats = by_stats
        self._tasks: tuple[tuple[ScanTask, ...], tuple[ScanTask, ...]] | None = None

    @property
    def num_by_partition(self) -> int:
        return len(self._partition)

    @property
    def num_by_stats(self) -> int:
        return len(self._stats)

    def tasks(self) -> tuple[tuple[ScanTask, ...], tuple[ScanTask, ...]]:
        """(skipped by partition values, skipped by statistics), each in the snapshot's order."""
        if self._tasks is None:
            build = self._build
            if build is None:
                self._tasks = ((), ())
            else:
                self._tasks = (
                    tuple(build(i) for i in np.asarray(self._partition).tolist()),
                    tuple(build(i) for i in np.asarray(self._stats).tolist()),
                )
        return self._tasks

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SkippedFiles) and self.tasks() == other.tasks()

    def __hash__(self) -> int:
        return hash(self.tasks())


NOTHING_SKIPPED = SkippedFiles()


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
    #: the files skipped (``skipped_by_partition``, ``skipped_by_stats``)
    skipped_files: SkippedFiles = field(default=NOTHING_SKIPPED, repr=False)
    put_back: tuple[PutBack, ...] = ()
    #: how data files name columns (None: by display name) -- ``delta.column_mapping``
    column_mapping: ColumnMapping | None = field(default=None, repr=False, compare=False)

    @property
    def skipped_by_partition(self) -> tuple[ScanTask, ...]:
        return self.skipped_files.tasks()[0]

    @property
    def skipped_by_stats(self) -> tuple[ScanTask, ...]:
        return self.skipped_files.tasks()[1]

    @property
    def skipped(self) -> tuple[ScanTask, ...]:
        return self.skipped_by_partition + self.skipped_by_stats

    @property
    def num_skipped(self) -> int:
        """``len(skipped)``, without building the skipped files' tasks."""
        return self.skipped_files.num_by_partition + self.skipped_files.num_by_stats

    @property
    def put_back_tasks(self) -> tuple[ScanTask, ...]:
        return tuple(p.task for p in self.put_back)

    @property
    def total_files(self) -> int:
        return len(self.tasks) + self.num_skipped


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

    __slots__ = ("filter", "casts", "fixed", "might_match", "_all_proven", "_guards", "_partitions", "_tz", "_tests")

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
        self._tests: tuple[tuple[ColumnPath, str, int], ...] | None = None
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

    def bound_tests(self, partition_columns: Sequence[str]) -> tuple[tuple[ColumnPath, str, int], ...]:
        """The top-level conjuncts ``column op literal`` the pre-filter evaluates on integral
        bounds (``read.file_index``), each one that, false on a file's every row, puts the
        file among the skipped by statistics: any such conjunct when the filter has no cast
        (nothing could raise), else only the row-group guards (``guard_excludes``)."""
        if self._tests is None:
            candidates = conjuncts(self.filter)
            if self.casts:
                guards = row_group_guards(self.filter)
                candidates = [c for c in candidates if c in guards]
            found = (bound_conjunct(c, partition_columns) for c in candidates)
            self._tests = tuple(t for t in found if t is not None)
        return self._tests

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

    The work per file is done once per snapshot (``read.file_index``); a plan folds the
    filter once per set of partition values, drops files by integral bounds with numpy
    (``FileIndex.excluded``: only files the per-file check would skip by statistics), checks
    the rest one by one, and builds tasks for the files read (the skipped ones' when asked).
    """
    schema = snapshot.schema
    bound = bind_filter(filter, schema, session_tz)
    index = file_index(snapshot, root_location)
    mapping = index.mapping
    partition_columns = tuple(snapshot.partition_columns)
    if bound is None:
        if index.plain_tasks is None:
            index.plain_tasks = tuple(
                ScanTask(add, index.relative[i], index.stats(i), None, index.dvs[i], index.logical[i])
                for i, add in enumerate(index.adds)
            )
        return ScanPlan(snapshot.version, schema, partition_columns, None, index.plain_tasks, column_mapping=mapping)
    residuals = Residuals(bound, partition_types(schema, partition_columns), session_tz)
    date_keys = _date_keys(bound)
    place = np.full(len(index), PLACE_READ, dtype=np.int8)
    group_of = np.zeros(len(index), dtype=np.int64)
    residual_of: list[_Residual] = []
    check: list[np.ndarray] = []
    for g, idx in enumerate(index.groups):
        residual = residuals.of(index.values[int(idx[0])])
        residual_of.append(residual)
        group_of[idx] = g
        if residual.fixed is not None:
            place[idx] = residual.fixed
            continue
        tests = residual.bound_tests(partition_columns)
        if tests:
            out = index.excluded(tests, idx)
            place[idx[out]] = PLACE_STATS_SKIPPED
            idx = idx[~out]
        check.append(idx)

    def with_dates(i: int) -> FileStats:
        stats = index.stats(i)
        tags = index.adds[i].tags
        iso = iso_date_keys(tags, date_keys, mapping) if tags else None
        return replace(stats, variant_iso_dates=iso) if iso else stats

    stats_of = with_dates if date_keys else index.stats

    def task(i: int) -> ScanTask:
        residual = residual_of[group_of[i]].filter
        return ScanTask(index.adds[i], index.relative[i], stats_of(i), residual, index.dvs[i], index.logical[i])

    unproven: dict[int, tuple[Term, ...]] = {}
    if check:
        checked = np.sort(np.concatenate(check)).tolist()
        if date_keys:
            index.prefetch(checked)  # their tags are read
        for i in checked:
            where, terms = residual_of[group_of[i]].place(stats_of(i))
            place[i] = where
            if where == PLACE_PUT_BACK:
                unproven[i] = terms
    keep: list[ScanTask] = []
    put_back: list[PutBack] = []
    kept = np.flatnonzero((place == PLACE_READ) | (place == PLACE_PUT_BACK)).tolist()
    index.prefetch(kept)
    for i in kept:
        t = task(i)
        keep.append(t)
        if i in unproven:
            put_back.append(PutBack(t, unproven[i]))
    skipped = SkippedFiles(
        task, np.flatnonzero(place == PLACE_PARTITION_SKIPPED), np.flatnonzero(place == PLACE_STATS_SKIPPED)
    )
    return ScanPlan(
        snapshot.version, schema, partition_columns, bound, tuple(keep), skipped, tuple(put_back), mapping,
    )
