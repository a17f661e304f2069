"""Row-level changes -- DELETE and UPDATE -- for every engine: find the rows, retire them by
deletion vector or by rewriting their file, write the new rows, commit once.

1. **Candidates**: ``read.plan_scan`` with the condition: files skipped by partition
   values or statistics are never read (the same sound skipping as a scan).
2. **Matching rows**: each candidate file is read with its current deletion vector, and the
   condition evaluated on its live rows with Spark's semantics (``read.row_matches``);
   a row matches when the condition is TRUE (NULL does not match).
3. **Retiring them**: a file all of whose live rows match is removed. Otherwise, with
   ``delta.enableDeletionVectors=true`` (and the ``deletionVectors`` feature), the file's
   logical entry is replaced: ``remove`` (the old ``add``, its old DV included) + ``add``
   of the same path with the merged DV (``delta.deletion_vector_write``: inline when
   small, else one new ``deletion_vector_<uuid>.bin`` per change), the same statistics
   with ``numRecords`` the file's rows and ``tightBounds: false`` (PROTOCOL.md
   "Per-file Statistics"). Without the property the file is rewritten without the rows
   (copy-on-write).
4. **New rows**: UPDATE evaluates ``set`` (``write.set_exprs``) on the matched rows; the
   updated rows -- and, copy-on-write, the rows kept -- are written through the table's
   one write path (``stage``: its layout, shredding, statistics and constraints).
5. **Commit**: one ``delta.transaction.Transaction`` with what the change read
   (``ReadSet``), so a concurrent change to the same files fails with
   ``ConcurrentDeleteDeleteError``/``ConcurrentDeleteReadError``, and concurrently added
   data the condition may match with ``ConcurrentAppendError`` (WriteSerializable lets
   blind appends pass; ``delta.isolationLevel=Serializable`` does not). ``retries`` > 0
   re-plans a losing change on the new snapshot.

Tables with ``delta.appendOnly=true`` refuse both (``AppendOnlyTableError``). A change
that matches no row commits nothing (``version`` None). ``FileChanges`` /
``stage_retirements`` are steps 3-5 for commands that find their rows themselves (MERGE).
Tables varlake creates have deletion vectors on (``write.shredding.new_table_properties``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from varlake.delta import config
from varlake.delta import constants as C
from varlake.delta.actions import Action, AddFile, Metadata
from varlake.delta.deletion_vector_write import descriptors_for, random_prefix
from varlake.delta.protocol import check_writable
from varlake.delta.snapshot import Snapshot
from varlake.delta.transaction import ReadSet, Transaction, commit_with_retries
from varlake.errors import (
    AppendOnlyTableError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    MetadataChangedError,
    TableError,
    UnsupportedFeatureError,
)
from varlake.expr import Predicate
from varlake.read import plan_scan, schema_types
from varlake.read.row_matches import FileRows, RowMatcher, added_file_matcher
from varlake.write.staging.commit import PendingWrite
from varlake.write.staging.handle import TableHandle
from varlake.write.changes.set_exprs import CompiledSet, compile_set

__all__ = [
    "RETRYABLE",
    "FileChanges",
    "RowChangeResult",
    "StagedChange",
    "check_changeable",
    "commit_change",
    "retry_change",
    "delete",
    "deletion_vectors_enabled",
    "stage_delete",
    "stage_retirements",
    "stage_update",
    "update",
]

#: conflicts a retry re-plans on the new snapshot
RETRYABLE = (ConcurrentDeleteDeleteError, ConcurrentDeleteReadError, ConcurrentAppendError, MetadataChangedError)
_RANDOMIZE_PREFIXES = "delta.randomizeFilePrefixes"
_PREFIX_LENGTH = "delta.randomPrefixLength"


@dataclass(frozen=True)
class RowChangeResult:
    """The outcome of a DELETE or UPDATE: the version it committed (None: no row matched,
    nothing was committed) and what it did."""

    operation: str
    version: int | None
    num_deleted_rows: int = 0
    num_updated_rows: int = 0
    num_inserted_rows: int = 0
    num_copied_rows: int = 0
    num_files_added: int = 0
    num_files_removed: int = 0
    num_deletion_vectors_added: int = 0
    num_deletion_vector_files: int = 0
    deletion_vector_bytes: int = 0
    bytes_added: int = 0
    num_files_scanned: int = 0
    num_files_skipped: int = 0
    attempts: int = 1

    @property
    def num_affected_rows(self) -> int:
        return self.num_deleted_rows + self.num_updated_rows + self.num_inserted_rows


@dataclass(frozen=True)
class StagedChange:
    """A change with its files written, not committed: ``commit_change`` commits it."""

    operation: str
    snapshot: Snapshot
    actions: tuple[Action, ...]
    reads: ReadSet
    parameters: Mapping[str, Any]
    result: RowChangeResult


def deletion_vectors_enabled(snapshot: Snapshot) -> bool:
    """Whether a change writes DVs: ``delta.enableDeletionVectors=true`` and the protocol
    declares ``deletionVectors`` (else it rewrites files)."""
    protocol = snapshot.protocol
    declared = (
        protocol.min_reader_version >= 3
        and C.DELETION_VECTORS in protocol.reader_feature_set
        and C.DELETION_VECTORS in protocol.writer_feature_set
    )
    return declared and config.is_true(snapshot.metadata.configuration, C.PROP_ENABLE_DELETION_VECTORS)


def _dv_prefix(configuration: Mapping[str, str]) -> str:
    if not config.is_true(configuration, _RANDOMIZE_PREFIXES):
        return ""
    text = configuration.get(_PREFIX_LENGTH, "2")
    return random_prefix(int(text) if text.isdigit() and 0 < int(text) <= 16 else 2)


def _wide_stats(add: AddFile, num_rows: int) -> str:
    """The file's statistics, kept (they still bound the live rows) with ``numRecords``
    the data file's rows and ``tightBounds: false``."""
    stats = dict(add.parsed_stats) if add.stats else {}
    stats["numRecords"] = num_rows
    stats["tightBounds"] = False
    return json.dumps(stats, separators=(",", ":"))


def _filter_text(where: str | Predicate | None) -> str:
    return "true" if where is None else str(where)


def _updated_rows(rows: pa.Table, compiled: CompiledSet, where: str) -> pa.Table:
    """``rows`` with the SET columns replaced by their new values."""
    pylist = rows.to_pylist()
    for column in compiled.columns:
        values = [compiled.evaluate(column, row) for row in pylist]
        index = rows.schema.get_field_index(column)
        field = rows.schema.field(index)
        try:
            array = pa.array(values, type=field.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError) as exc:
            raise TableError(f"{where}: SET {column!r}: the new values do not fit {field.type}: {exc}") from None
        rows = rows.set_column(index, field, array)
    return rows


def check_changeable(snapshot: Snapshot, root: str, operation: str) -> None:
    """Refuse a row change the table does not allow, before any file is written."""
    check_writable(snapshot.protocol, snapshot.metadata, root)
    cfg = snapshot.metadata.configuration
    if config.is_true(cfg, C.PROP_APPEND_ONLY):
        raise AppendOnlyTableError(
            f"{root}: the table is append-only ({C.PROP_APPEND_ONLY}=true): {operation} is not allowed; nothing was written"
        )
    if config.is_true(cfg, C.PROP_ENABLE_CDF):  # refused before any file is written (the commit would refuse it)
        raise UnsupportedFeatureError(
            f"{root}: {operation} on a table with change data feed enabled needs cdc files ({C.CHANGE_DATA_FEED}); "
            "nothing was written"
        )


class FileChanges:
    """What a change does to a snapshot's files: rows retired per file (by DV or by
    rewriting the file) and new rows to write; ``stage`` writes it all and builds the actions."""

    def __init__(self, target: TableHandle, snapshot: Snapshot) -> None:
        self.target = target
        self.snapshot = snapshot
        self.use_dv = deletion_vectors_enabled(snapshot)
        self.now = int(time.time() * 1000)
        self.removes: list[Action] = []
        self.dv_targets: list[tuple[FileRows, np.ndarray]] = []
        self.new_parts: list[pa.Table] = []
        self.copied = self.removed_files = self.new_rows = 0

    def retire(self, found: FileRows, retired: np.ndarray, *, write_kept: bool = True) -> None:
        """Retire the live rows of ``found`` where ``retired`` (a boolean mask over its rows) is True.
        ``write_kept=False``: a file rewritten copy-on-write is only removed, its kept rows
        written by the caller (an engine that writes them itself, ``varlake.spark.changes.dml``)."""
        retired = retired & found.live
        n = int(retired.sum())
        if not n:
            return
        self.removes.append(found.task.add.remove(self.now))
        if found.num_live == n:
            self.removed_files += 1
        elif self.use_dv:
            self.dv_targets.append((found, np.union1d(found.deleted, np.flatnonzero(retired).astype(np.uint64))))
        else:
            self.copied += found.num_live - n
            if write_kept:
                self.new_parts.append(found.rows.filter(pa.array(found.live & ~retired, pa.bool_())))
            self.removed_files += 1

    def add_rows(self, rows: pa.Table) -> None:
        """New rows (in the table's Arrow schema) to write."""
        if rows.num_rows:
            self.new_rows += rows.num_rows
            self.new_parts.append(rows)

    def stage(
        self, operation: str, plan: Any, parameters: Mapping[str, Any], counts: Mapping[str, int],
        pending: PendingWrite | None = None,
    ) -> StagedChange:
        """Write the new rows (their constraints checked first), then the DVs; the staged change.
        ``pending``: the new rows already written by another engine (then none are given here)."""
        target, snapshot, root = self.target, self.snapshot, self.target.path
        if pending is None and self.new_parts:
            pending = target.stage(pa.concat_tables(self.new_parts), "append", snapshot)
        readds: list[Action] = []
        dv_bytes = dv_files = 0
        if self.dv_targets:
            descriptors, dv_bytes, dv_files = descriptors_for(
                [(found.task.add.path, rows) for found, rows in self.dv_targets], target.storage, root,
                prefix=_dv_prefix(snapshot.metadata.configuration),
            )  # fmt: skip
            for found, _rows in self.dv_targets:
                add = found.task.add
                readds.append(
                    replace(add, deletion_vector=descriptors[add.path], stats=_wide_stats(add, found.num_rows), data_change=True)
                )
        metadata: list[Action] = [pending.metadata] if pending is not None and isinstance(pending.metadata, Metadata) else []
        new_adds = list(pending.adds) if pending is not None else []
        result = RowChangeResult(
            operation=operation,
            version=None,
            num_copied_rows=self.copied,
            num_files_added=len(new_adds),
            num_files_removed=self.removed_files,
            num_deletion_vectors_added=len(readds),
            num_deletion_vector_files=dv_files,
            deletion_vector_bytes=dv_bytes,
            bytes_added=sum(a.size for a in new_adds) + dv_bytes,
            num_files_scanned=len(plan.tasks),
            num_files_skipped=plan.num_skipped,
            **counts,
        )
        reads = ReadSet(frozenset(t.add.path for t in plan.tasks), added_file_matcher(snapshot, plan))
        actions = tuple(metadata + self.removes + readds + new_adds)
        return StagedChange(operation, snapshot, actions, reads, dict(parameters), result)


def stage_retirements(
    target: TableHandle,
    snapshot: Snapshot,
    operation: str,
    retire: Sequence[tuple[FileRows, np.ndarray]],
    new_rows: pa.Table | None,
    reads: ReadSet,
    parameters: Mapping[str, Any],
    *,
    counts: Mapping[str, int],
    plan: Any,
) -> StagedChange:
    """Stage a change given as rows to retire (per file: its ``FileRows`` and the positions,
    in the file, of the live rows to retire) and new rows to write (the table's Arrow
    schema); ``counts`` has ``deleted``/``updated``/``inserted``. For engines and commands
    that find their rows themselves (MERGE)."""
    changes = FileChanges(target, snapshot)
    if new_rows is not None:
        changes.add_rows(new_rows)
    for found, positions in retire:
        mask = np.zeros(found.num_rows, dtype=bool)
        mask[np.asarray(positions, dtype=np.int64)] = True
        changes.retire(found, mask)
    names = {"deleted": "num_deleted_rows", "updated": "num_updated_rows", "inserted": "num_inserted_rows"}
    staged = changes.stage(operation, plan, parameters, {names[k]: v for k, v in counts.items()})
    return replace(staged, reads=reads)


def _stage(
    target: TableHandle,
    operation: str,
    where: str | Predicate | None,
    assignments: Mapping[str, str] | None,
    snapshot: Snapshot | None,
) -> StagedChange:
    snapshot = snapshot or target.log.snapshot()
    root = target.path
    check_changeable(snapshot, root, operation)
    compiled = compile_set(assignments, schema_types(snapshot.schema)) if assignments is not None else None
    changes = FileChanges(target, snapshot)
    plan = plan_scan(snapshot, target.log.root_location, where)
    matcher = RowMatcher(plan, target.read_source, target.deleted_rows)
    matched_rows = 0
    for task in plan.tasks:
        found = matcher.match(task, all_columns=compiled is not None or not changes.use_dv)
        if not found.num_matched:
            continue
        matched_rows += found.num_matched
        if compiled is not None:
            positions = pa.array(np.flatnonzero(found.matched), pa.int64())
            changes.add_rows(_updated_rows(found.rows.take(positions), compiled, root))
        changes.retire(found, found.matched)
    parameters: dict[str, Any] = {"predicate": json.dumps([_filter_text(where)])}
    if assignments is not None:
        parameters["set"] = json.dumps(dict(assignments))
    counts = {"num_deleted_rows": matched_rows} if compiled is None else {"num_updated_rows": matched_rows}
    return changes.stage(operation, plan, parameters, counts)


def stage_delete(target: TableHandle, where: str | Predicate | None, snapshot: Snapshot | None = None) -> StagedChange:
    """Plan a DELETE of the rows ``where`` matches (every row when None) on ``snapshot``
    (latest by default) and write its files; ``commit_change`` commits it."""
    return _stage(target, "DELETE", where, None, snapshot)


def stage_update(
    target: TableHandle,
    set: Mapping[str, str],
    where: str | Predicate | None = None,
    snapshot: Snapshot | None = None,
) -> StagedChange:
    """Plan an UPDATE (``set``: column -> SQL expression) of the rows ``where`` matches."""
    if not isinstance(set, Mapping):
        raise TableError(f"{target.path}: UPDATE set must map column names to SQL expressions, got {type(set).__name__}")
    return _stage(target, "UPDATE", where, set, snapshot)


def commit_change(target: TableHandle, staged: StagedChange) -> RowChangeResult:
    """Commit a staged change (one version); a conflict raises its named error."""
    if not staged.actions:
        return staged.result
    r = staged.result
    metrics = {
        "numDeletedRows": str(r.num_deleted_rows),
        "numUpdatedRows": str(r.num_updated_rows),
        "numInsertedRows": str(r.num_inserted_rows),
        "numCopiedRows": str(r.num_copied_rows),
        "numAddedFiles": str(r.num_files_added),
        "numRemovedFiles": str(r.num_files_removed),
        "numDeletionVectorsAdded": str(r.num_deletion_vectors_added),
        "numAddedBytes": str(r.bytes_added),
    }
    txn = Transaction(target.log, staged.snapshot, staged.operation, staged.parameters).stage(staged.actions)
    txn.read_set(staged.reads).commit_info(operationMetrics=metrics, isBlindAppend=False)  # the change read the table
    return replace(r, version=txn.commit().version)


def retry_change(run: Callable[[], RowChangeResult], retries: int) -> RowChangeResult:
    """``run()`` (plan on the latest snapshot, write, commit), again after a ``RETRYABLE``
    conflict up to ``retries`` times; ``attempts`` says how many runs it took."""
    return commit_with_retries(lambda n: replace(run(), attempts=n), retries=retries, retry_on=RETRYABLE)


def _run(target: TableHandle, stage: Any, retries: int) -> RowChangeResult:
    return retry_change(lambda: commit_change(target, stage()), retries)


def delete(target: TableHandle, where: str | Predicate | None = None, *, retries: int = 0) -> RowChangeResult:
    """DELETE the rows ``where`` matches (see the module doc); ``retries`` re-plans after a conflict."""
    return _run(target, lambda: stage_delete(target, where), retries)


def update(
    target: TableHandle, set: Mapping[str, str], where: str | Predicate | None = None, *, retries: int = 0
) -> RowChangeResult:
    """UPDATE the rows ``where`` matches with ``set`` (column -> SQL expression)."""
    return _run(target, lambda: stage_update(target, set, where), retries)

