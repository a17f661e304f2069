"""OPTIMIZE for every engine: plan which files to rewrite, rewrite them in the table's stable
layout (optionally ordered by clustering keys), check the content, commit once.

**Plan** (``plan_optimize``): the live files in scope (``where``: a partition predicate only)
are rewritten when they are *small* (under ``SMALL_FRACTION`` of the target file size, and
not alone in their partition), their Variant layout differs from the table's stable shredding
schema (``write.layout_drift``), they carry a deletion vector (purged: deleted rows are not
rewritten), or -- with ``cluster_by`` given -- they were not written clustered by those keys.
Per partition, files are bin-packed in arrival order into bins of about the target size;
with clustering keys (given, or remembered by the table: ``write.clustering``) a partition's
files form one group ordered by the Z-order of the keys and cut into target-size files.

Target file size: ``target_file_size``, else the table property ``delta.targetFileSize``
(bytes, or ``"64mb"``-style text), else ``PYTHON_TARGET_FILE_SIZE`` (32 MiB: the Python path
holds a bin in memory) or, for Spark, ``SPARK_TARGET_FILE_SIZE`` (128 MiB, Delta's default).

**Rewrite** (Python engine, ``stage_optimize``): each bin is read with its deletion vectors
applied (``read.read_tasks``), ordered, written through ``Table.stage(..., evolve=False)`` --
the one write path, with the stored shredding schemas kept -- read back and compared with
what was read (``write.content_check``: ``ContentCheckError`` aborts, nothing committed).

**Commit** (``commit_optimize``, every engine): one commit, operation ``OPTIMIZE``: the old
files' ``remove`` and the new ``add`` actions with ``dataChange=false``, and the clustering
keys' domain when new (with the ``domainMetadata`` writer feature: that protocol change is
rebased onto a concurrent commit that left the rewritten files and the schemas alone). What
it read is exactly what it removes (``ReadSet`` with nothing concurrently added matching),
so a concurrent append never conflicts with it, under either isolation level, while a concurrent DELETE/UPDATE/MERGE of a file it rewrote fails one of
them with ``ConcurrentDeleteDeleteError`` (``delta.transaction``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from varlake.delta.actions import Action, AddFile
from varlake.delta.column_mapping import column_mapping
from varlake.delta.paths import relative_data_path
from varlake.delta.protocol import check_writable
from varlake.delta.snapshot import Snapshot
from varlake.delta.stats import file_stats
from varlake.delta.transaction import CommitResult, ReadSet, Transaction, commit_with_retries
from varlake.errors import (
    CommitConflictError,
    ExpressionError,
    InvalidTablePropertyError,
    MetadataChangedError,
    OptimizeError,
    VarlakeError,
)
from varlake.expr import Predicate, referenced_columns
from varlake.read import ScanPlan, ScanTask, plan_scan, read_tasks
from varlake.read.planner import bind_filter
from varlake.write.maintenance.clustering import (
    ClusterKey,
    clustered_by,
    clustering_actions,
    keys_tag,
    parse_keys,
    path_requests,
    stored_keys,
    tag_map,
    zorder_indices,
)
from varlake.write.maintenance.content_check import check_same_rows
from varlake.write.maintenance.layout_drift import FileLayoutStatus, layout_status
from varlake.write.staging.shredding import ENABLE_SHREDDING, SHREDDING_PROPERTY
from varlake.write.staging.handle import TableHandle

__all__ = [
    "PYTHON_TARGET_FILE_SIZE",
    "SMALL_FRACTION",
    "SPARK_TARGET_FILE_SIZE",
    "TARGET_FILE_SIZE_PROPERTY",
    "OptimizeBin",
    "OptimizePlan",
    "OptimizeResult",
    "StagedOptimize",
    "commit_optimize",
    "discard_files",
    "optimize",
    "parse_size",
    "plan_optimize",
    "read_bin",
    "read_files",
    "rows_per_file",
    "stage_optimize",
    "target_file_size",
    "tasks_for",
]

TARGET_FILE_SIZE_PROPERTY = "delta.targetFileSize"
PYTHON_TARGET_FILE_SIZE = 32 * 1024 * 1024
SPARK_TARGET_FILE_SIZE = 128 * 1024 * 1024
SMALL_FRACTION = 0.75  # a file under this share of the target size is small
MAX_KEY_REBASES = 3  # commits retried on a newer version when storing new clustering keys
_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2, "mib": 1024**2,
          "g": 1024**3, "gb": 1024**3, "gib": 1024**3}  # fmt: skip


def parse_size(value: Any, where: str) -> int:
    """A file size: a positive integer of bytes, or text such as ``"134217728"``, ``"64mb"``."""
    if isinstance(value, bool):
        raise OptimizeError(f"{where}: a file size must be a number of bytes, not {value!r}")
    if isinstance(value, int):
        number = value
    else:
        match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(value))
        unit = match.group(2).lower() if match else None
        if match is None or unit not in _UNITS:
            raise OptimizeError(f"{where}: {value!r} is not a file size (bytes, or a number with kb/mb/gb)")
        number = int(match.group(1)) * _UNITS[unit]
    if number <= 0:
        raise OptimizeError(f"{where}: a file size must be positive, not {value!r}")
    return number


def target_file_size(properties: Mapping[str, str], given: Any = None, default: int = PYTHON_TARGET_FILE_SIZE) -> int:
    """The target size of the files a rewrite writes (see the module doc)."""
    if given is not None:
        return parse_size(given, "target_file_size")
    text = properties.get(TARGET_FILE_SIZE_PROPERTY)
    if text is None:
        return default
    try:
        return parse_size(text, f"table property {TARGET_FILE_SIZE_PROPERTY}")
    except OptimizeError as exc:
        raise InvalidTablePropertyError(str(exc)) from None


_resolve_size = target_file_size


def _live_rows(add: AddFile) -> int | None:
    rows = add.num_records
    if rows is None:
        return None
    dv = add.deletion_vector
    deleted = dv.get("cardinality", 0) if dv is not None else 0
    return max(rows - (deleted if isinstance(deleted, int) else 0), 0)


def _estimated_bytes(add: AddFile, footer: int = 0) -> int:
    """What the file's live rows will take once rewritten: its data bytes (the size without
    the footer, which one output file pays once) scaled by the live share."""
    data = max(add.size - footer, 1)
    rows, live = add.num_records, _live_rows(add)
    if not rows or live is None:
        return data
    return int(data * live / rows)


@dataclass(frozen=True)
class OptimizeBin:
    """Files of one partition rewritten together (``clustered``: ordered by the plan's keys)."""

    partition_values: Mapping[str, str | None]
    files: tuple[AddFile, ...]
    clustered: bool = False
    estimated_output_bytes: int = 0

    @property
    def input_bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def num_rows(self) -> int | None:
        """Live rows (None when a file does not log its row count)."""
        counts = [_live_rows(f) for f in self.files]
        return None if any(c is None for c in counts) else sum(counts)  # type: ignore[misc]


@dataclass(frozen=True)
class OptimizePlan:
    """What an OPTIMIZE would do to ``snapshot`` (nothing is written by planning)."""

    snapshot: Snapshot
    target_file_size: int
    where: str | None
    cluster_by: tuple[ClusterKey, ...] | None
    bins: tuple[OptimizeBin, ...]
    reasons: Mapping[str, tuple[str, ...]]
    statuses: tuple[FileLayoutStatus, ...]
    store_keys: bool = False

    @property
    def files(self) -> tuple[AddFile, ...]:
        return tuple(f for b in self.bins for f in b.files)

    @property
    def num_files_considered(self) -> int:
        return len(self.statuses)

    @property
    def num_files_to_rewrite(self) -> int:
        return sum(len(b.files) for b in self.bins)

    @property
    def bytes_to_rewrite(self) -> int:
        return sum(b.input_bytes for b in self.bins)

    @property
    def estimated_output_bytes(self) -> int:
        return sum(b.estimated_output_bytes for b in self.bins)

    @property
    def estimated_bytes_saved(self) -> int:
        """Estimated bytes saved: deleted rows purged and per-file footers merged (what layout
        changes save is estimated by sampling, ``write.layout_savings``, in the doctor)."""
        return self.bytes_to_rewrite - self.estimated_output_bytes

    @property
    def estimated_output_files(self) -> int:
        return sum(max(1, -(-b.estimated_output_bytes // self.target_file_size)) for b in self.bins)

    @property
    def drifted(self) -> tuple[FileLayoutStatus, ...]:
        """Files in scope whose layout differs from the table's."""
        return tuple(s for s in self.statuses if s.drifted)

    @property
    def num_deletion_vectors(self) -> int:
        return sum(1 for f in self.files if f.deletion_vector is not None)

    @property
    def cluster_keys(self) -> tuple[str, ...] | None:
        return tuple(k.text for k in self.cluster_by) if self.cluster_by else None

    @property
    def is_empty(self) -> bool:
        return not self.bins and not self.store_keys

    def summary(self, reasons: bool = True) -> dict[str, Any]:
        """The plan as plain data (CLI ``--dry-run``, the doctor); ``reasons`` per file too."""
        out = {
            "version": self.snapshot.version,
            "target_file_size": self.target_file_size,
            "where": self.where,
            "cluster_by": list(self.cluster_keys or []),
            "files_considered": self.num_files_considered,
            "files_to_rewrite": self.num_files_to_rewrite,
            "bytes_to_rewrite": self.bytes_to_rewrite,
            "estimated_output_bytes": self.estimated_output_bytes,
            "estimated_output_files": self.estimated_output_files,
            "estimated_bytes_saved": self.estimated_bytes_saved,
            "drifted_files": len(self.drifted),
            "deletion_vectors": self.num_deletion_vectors,
        }
        if reasons:
            out["reasons"] = {p: list(r) for p, r in self.reasons.items()}
        return out


def _check_where(where: str | Predicate | None, snapshot: Snapshot) -> None:
    """``where`` must only read partition columns (OPTIMIZE rewrites whole files)."""
    if where is None:
        return
    try:
        bound = bind_filter(where, snapshot.schema)
    except ExpressionError as exc:
        raise OptimizeError(f"{snapshot.root}: OPTIMIZE where={str(where)!r}: {exc}") from None
    partitions = {c.lower() for c in snapshot.partition_columns}
    others = sorted({".".join(c.path) for c in referenced_columns(bound) if c.path[0].lower() not in partitions})
    if others:
        raise OptimizeError(
            f"{snapshot.root}: OPTIMIZE where={str(where)!r} reads {others}, which are not partition columns "
            f"({list(snapshot.partition_columns)}); OPTIMIZE rewrites whole files, so only a partition predicate is allowed"
        )


def _resolve_keys(snapshot: Snapshot, cluster_by: Sequence[str] | None) -> tuple[tuple[ClusterKey, ...] | None, bool]:
    """The clustering keys of this run and whether they are new to the table."""
    remembered = stored_keys(snapshot)
    if cluster_by is not None:
        keys = parse_keys(list(cluster_by) if not isinstance(cluster_by, str) else [cluster_by], snapshot)
        return keys, tuple(k.text for k in keys) != remembered
    if remembered:
        return parse_keys(list(remembered), snapshot), False
    return None, False


def _bin_pack(files: Sequence[AddFile], target: int, estimates: Mapping[str, int]) -> list[list[AddFile]]:
    """Files in arrival order packed into bins of about ``target`` estimated bytes."""
    bins: list[list[AddFile]] = []
    current: list[AddFile] = []
    size = 0
    for f in sorted(files, key=lambda a: (a.modification_time, a.path)):
        est = estimates[f.path]
        if current and size + est > target:
            bins.append(current)
            current, size = [], 0
        current.append(f)
        size += est
    if current:
        bins.append(current)
    return bins


def plan_optimize(
    target: TableHandle,
    where: str | Predicate | None = None,
    target_file_size: Any = None,
    cluster_by: Sequence[str] | None = None,
    *,
    snapshot: Snapshot | None = None,
    default_target: int = PYTHON_TARGET_FILE_SIZE,
) -> OptimizePlan:
    """Which files an OPTIMIZE of ``target`` (a ``Table``) would rewrite and why (module doc)."""
    snapshot = snapshot or target.snapshot()
    check_writable(snapshot.protocol, snapshot.metadata, snapshot.root)
    _check_where(where, snapshot)
    size = _resolve_size(snapshot.properties, target_file_size, default_target)
    keys, store = _resolve_keys(snapshot, cluster_by)
    tag = keys_tag(keys) if keys else None
    scope = [t.add for t in plan_scan(snapshot, target.log.root_location, where).tasks]
    statuses = layout_status(target, snapshot, scope)
    small = size * SMALL_FRACTION
    estimates = {s.path: _estimated_bytes(s.add, s.footer_bytes) for s in statuses}
    reasons: dict[str, tuple[str, ...]] = {}
    groups: dict[tuple[tuple[str, str | None], ...], list[AddFile]] = {}
    for status in statuses:
        add = status.add
        why = []
        if status.drifted:
            why.append("layout")
        if add.deletion_vector is not None:
            why.append("deletion-vector")
        if add.size < small and not (keys and clustered_by(add.tags) == tag):  # clustered files stay in place
            why.append("small")
        if cluster_by is not None and keys and clustered_by(add.tags) != tag:
            why.append("clustering")
        if why:
            reasons[add.path] = tuple(why)
            groups.setdefault(tuple(sorted(add.partition_values.items(), key=lambda kv: kv[0])), []).append(add)
    bins: list[OptimizeBin] = []
    for key, files in groups.items():
        values = dict(key)
        if keys:
            packed = [files]
        else:
            packed = _bin_pack(files, size, estimates)
        for chosen in packed:
            if len(chosen) == 1 and reasons[chosen[0].path] == ("small",):
                continue  # a small file alone: rewriting it gains nothing
            bins.append(OptimizeBin(values, tuple(chosen), bool(keys), sum(estimates[f.path] for f in chosen)))
    kept = {f.path for b in bins for f in b.files}
    return OptimizePlan(
        snapshot=snapshot,
        target_file_size=size,
        where=None if where is None else str(where),
        cluster_by=keys,
        bins=tuple(bins),
        reasons={p: r for p, r in reasons.items() if p in kept},
        statuses=tuple(statuses),
        store_keys=store,
    )


# --- reading and writing (the Python engine) -----------------------------------------------------------


def tasks_for(snapshot: Snapshot, root_location: str, adds: Sequence[AddFile]) -> list[ScanTask]:
    """Scan tasks for ``adds`` (files of ``snapshot`` or new files of its table)."""
    from varlake.delta.deletion_vectors import DeletionVector

    mapping = column_mapping(snapshot.protocol, snapshot.metadata, snapshot.schema)
    tasks = []
    for add in adds:
        rel = relative_data_path(add.path, root_location, f"add {add.path!r}")
        dv = DeletionVector.parse(add.deletion_vector, f"{root_location}: add {add.path!r}") if add.deletion_vector else None
        if mapping is None:
            tasks.append(ScanTask(add, rel, file_stats(add.stats, snapshot.schema, add.partition_values), deletion_vector=dv))
        else:
            logical = mapping.partition_values(add.partition_values, snapshot.partition_columns)
            tasks.append(ScanTask(add, rel, mapping.file_stats(add.stats, logical), None, dv, logical))
    return tasks


def read_files(
    target: TableHandle, snapshot: Snapshot, adds: Sequence[AddFile], paths: Mapping[str, Sequence[str]] | None = None
) -> pa.Table:
    """The live rows of ``adds`` (deletion vectors applied) in the table's Arrow schema, plus a
    ``"<column>:<path>"`` Variant column per requested path."""
    tasks = tasks_for(snapshot, target.log.root_location, adds)
    plan = ScanPlan(
        snapshot.version, snapshot.schema, tuple(snapshot.partition_columns), None, tuple(tasks),
        column_mapping=column_mapping(snapshot.protocol, snapshot.metadata, snapshot.schema),
    )  # fmt: skip
    columns = [f.name for f in snapshot.schema.fields] if paths else None
    return read_tasks(plan, target.read_source, columns, paths or None, target.deleted_rows)


def read_bin(target: TableHandle, plan: OptimizePlan, chosen: OptimizeBin) -> pa.Table:
    """A bin's live rows, in Z-order of the plan's keys when the bin is clustered."""
    if not (chosen.clustered and plan.cluster_by):
        return read_files(target, plan.snapshot, chosen.files)
    requests = path_requests(plan.cluster_by)
    rows = read_files(target, plan.snapshot, chosen.files, requests)
    order = pa.array(zorder_indices(rows, plan.cluster_by))
    names = [f.name for f in plan.snapshot.schema.fields]
    return rows.select(names).take(order)


def rows_per_file(chosen: OptimizeBin, num_rows: int, target_size: int) -> int:
    """Rows per output file so that files come out near ``target_size`` bytes."""
    if num_rows <= 0:
        return 1
    per_row = max(chosen.estimated_output_bytes, 1) / num_rows
    return max(1, int(target_size / per_row))


@dataclass(frozen=True)
class OptimizeResult:
    """What an OPTIMIZE did (``version`` None: nothing committed -- nothing to do, or ``dry_run``)."""

    version: int | None
    plan: OptimizePlan
    num_files_removed: int = 0
    num_files_added: int = 0
    bytes_removed: int = 0
    bytes_added: int = 0
    num_rows: int = 0
    num_deletion_vectors_purged: int = 0
    num_layout_rewrites: int = 0
    cluster_by: tuple[str, ...] | None = None
    seconds: float = 0.0
    dry_run: bool = False
    engine: str = "python"
    added: tuple[AddFile, ...] = field(default=(), repr=False)

    @property
    def rows_per_second(self) -> float:
        return self.num_rows / self.seconds if self.seconds > 0 else 0.0

    def summary(self, reasons: bool = True) -> dict[str, Any]:
        """What was done as plain data (the CLI's output); the plan's per-file ``reasons`` too."""
        return {
            "version": self.version,
            "dry_run": self.dry_run,
            "engine": self.engine,
            "files_removed": self.num_files_removed,
            "files_added": self.num_files_added,
            "bytes_removed": self.bytes_removed,
            "bytes_added": self.bytes_added,
            "rows": self.num_rows,
            "deletion_vectors_purged": self.num_deletion_vectors_purged,
            "layout_rewrites": self.num_layout_rewrites,
            "cluster_by": list(self.cluster_by or []),
            "seconds": round(self.seconds, 3),
            "rows_per_second": round(self.rows_per_second, 1),
            "plan": self.plan.summary(reasons),
        }


@dataclass(frozen=True)
class StagedOptimize:
    """An OPTIMIZE with its files written and checked, not committed (``commit_optimize``)."""

    plan: OptimizePlan
    adds: tuple[AddFile, ...]
    num_rows: int
    started: float
    engine: str = "python"


def optimize_adds(adds: Sequence[AddFile], keys: Sequence[ClusterKey] | None) -> list[AddFile]:
    """New files as OPTIMIZE commits them: ``dataChange=false``, tagged with the clustering keys."""
    tags = tag_map(keys)
    out = []
    for a in adds:
        merged = {**(a.tags or {}), **tags} if tags else a.tags
        out.append(replace(a, data_change=False, tags=merged))
    return out


def discard_files(target: TableHandle, adds: Sequence[AddFile]) -> None:
    """Delete files written by a rewrite that will not commit (best effort)."""
    for add in adds:
        try:
            target.storage.delete(target.data_file(add))
        except (VarlakeError, OSError):
            pass


def stage_optimize(target: TableHandle, plan: OptimizePlan) -> StagedOptimize:
    """Rewrite every bin of ``plan`` through ``target.stage`` and check the content (module doc)."""
    started = time.perf_counter()
    written: list[AddFile] = []
    rows_total = 0
    try:
        for chosen in plan.bins:
            rows = read_bin(target, plan, chosen)
            step = rows_per_file(chosen, rows.num_rows, plan.target_file_size)
            adds: list[AddFile] = []
            start = 0
            while start < rows.num_rows:
                part = rows.slice(start, step)
                pending = target.stage(part, "append", plan.snapshot, evolve=False)
                adds.extend(pending.adds)
                written.extend(pending.adds)
                start += part.num_rows
                size = sum(a.size for a in pending.adds)
                if not start - part.num_rows and size and start < rows.num_rows:  # the first file's real bytes per row
                    step = max(1, int(plan.target_file_size / (size / part.num_rows)))
            back = read_files(target, plan.snapshot, adds)
            where = f"{target.path}: OPTIMIZE of {len(chosen.files)} files {_partition_text(chosen)}"
            check_same_rows(rows, back, where)
            rows_total += rows.num_rows
    except BaseException:
        discard_files(target, written)
        raise
    return StagedOptimize(plan, tuple(optimize_adds(written, plan.cluster_by if plan.bins else None)), rows_total, started)


def _partition_text(chosen: OptimizeBin) -> str:
    if not chosen.partition_values:
        return ""
    return "in partition " + ", ".join(f"{k}={v}" for k, v in chosen.partition_values.items())


def commit_optimize(target: TableHandle, staged: StagedOptimize, *, dry_run: bool = False) -> OptimizeResult:
    """Commit a staged OPTIMIZE as one version (see the module doc); a conflict raises its
    named error and the staged files are deleted."""
    plan = staged.plan
    removed = plan.files
    result = OptimizeResult(
        version=None,
        plan=plan,
        num_files_removed=len(removed),
        num_files_added=len(staged.adds),
        bytes_removed=sum(f.size for f in removed),
        bytes_added=sum(a.size for a in staged.adds),
        num_rows=staged.num_rows,
        num_deletion_vectors_purged=sum(1 for f in removed if f.deletion_vector is not None),
        num_layout_rewrites=sum(1 for f in removed if "layout" in plan.reasons.get(f.path, ())),
        cluster_by=plan.cluster_keys,
        dry_run=dry_run,
        engine=staged.engine,
        added=staged.adds,
    )
    if dry_run or (not removed and not plan.store_keys):
        return replace(result, seconds=time.perf_counter() - staged.started)
    now = int(time.time() * 1000)
    parameters = {
        "predicate": json.dumps([plan.where] if plan.where is not None else []),
        "zOrderBy": json.dumps(list(plan.cluster_keys or [])),
        "auto": False,
    }
    metrics = {
        "numRemovedFiles": str(result.num_files_removed),
        "numAddedFiles": str(result.num_files_added),
        "numRemovedBytes": str(result.bytes_removed),
        "numAddedBytes": str(result.bytes_added),
        "numDeletionVectorsRemoved": str(result.num_deletion_vectors_purged),
        "numOutputRows": str(result.num_rows),
    }
    reads = ReadSet(frozenset(f.path for f in removed), lambda _add: False)  # added rows are never ours to rewrite
    base = plan.snapshot
    keys: list[Action] = []

    def attempt(_n: int) -> CommitResult:
        nonlocal keys
        keys = clustering_actions(base, plan.cluster_by) if plan.store_keys and plan.cluster_by else []
        txn = Transaction(target.log, base, "OPTIMIZE", parameters).stage(keys)
        txn.remove_files(removed, data_change=False, timestamp=now).add_files(staged.adds).read_set(reads)
        return txn.commit_info(operationMetrics=metrics, isBlindAppend=False).commit()

    def rebase(exc: CommitConflictError) -> None:
        # Storing new keys may upgrade the protocol, which any concurrent commit conflicts
        # with: rebase on the latest version while it still holds every rewritten file
        # under the same schema, partitioning and shredding schemas.
        nonlocal base
        if not keys:
            raise exc
        base = _rebase_for_keys(target, plan, removed)

    try:
        outcome = commit_with_retries(attempt, retries=MAX_KEY_REBASES, retry_on=MetadataChangedError, rebase=rebase)
    except BaseException:
        discard_files(target, staged.adds)
        raise
    return replace(result, version=outcome.version, seconds=time.perf_counter() - staged.started)


def _rebase_for_keys(target: TableHandle, plan: OptimizePlan, removed: Sequence[AddFile]) -> Snapshot:
    """The latest snapshot, if the staged rewrite still fits it (else the conflict stands)."""
    latest = target.log.snapshot()
    live = {f.key for f in latest.files}
    same = (
        latest.metadata.schema_string == plan.snapshot.metadata.schema_string
        and tuple(latest.partition_columns) == tuple(plan.snapshot.partition_columns)
        and {k: v for k, v in latest.properties.items() if k.startswith(SHREDDING_PROPERTY) or k == ENABLE_SHREDDING}
        == {k: v for k, v in plan.snapshot.properties.items() if k.startswith(SHREDDING_PROPERTY) or k == ENABLE_SHREDDING}
    )
    if not same or any(f.key not in live for f in removed):
        raise MetadataChangedError(
            f"{plan.snapshot.root}: OPTIMIZE: a concurrent commit changed the table or the files it rewrote; nothing was committed"
        )
    return latest


def optimize(
    target: TableHandle,
    where: str | Predicate | None = None,
    target_file_size: Any = None,
    cluster_by: Sequence[str] | None = None,
    dry_run: bool = False,
) -> OptimizeResult:
    """OPTIMIZE ``target`` (a ``Table``) with the Python engine (see the module doc)."""
    started = time.perf_counter()
    plan = plan_optimize(target, where, target_file_size, cluster_by)
    if dry_run:
        return commit_optimize(target, StagedOptimize(plan, (), sum(b.num_rows or 0 for b in plan.bins), started), dry_run=True)
    staged = stage_optimize(target, plan)
    return commit_optimize(target, replace(staged, started=started))

