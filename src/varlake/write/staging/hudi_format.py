"""``HudiCore``: a Hudi table (``.hoodie/``) as a read-only ``TableFormat``.

The Hudi side (``varlake.hudi``) says which file slices make the table at an instant;
this module presents them to the one scan path, ``read.plan_scan``, as a snapshot of
data files with Delta-style statistics, so filters skip Hudi files and row groups exactly
as they skip Delta ones:

* versions are the table's completed writes in timeline order (0 = the oldest still in the
  active timeline); time travel takes a version, or a ``timestamp`` that is a Hudi instant
  time (``"20250713010536861"``), a ``datetime`` or epoch milliseconds;
* the schema is every column of the files read, typed as the newest file types it
  (``hudi.base_files.newest_schema``); partition columns are read from the files (Hudi
  keeps them there), so no partition columns are declared and pruning happens by the
  files' statistics -- unless the table drops them from its files: then they are
  declared, their values taken from the partition paths (``hudi.partitions``);
* a base file's statistics come from its Parquet footer; a file whose column types differ
  from the table's (Hudi promotes types: ``long`` to ``string``, ``int`` to ``long``...) is
  read cast to the table's types, in memory, and, like a merge-on-read slice with log
  files, gets no statistics (never skipped: skipping stays sound);
* a merge-on-read slice with log files is read through ``merge_slice`` when one is given
  (the merged rows as an in-memory Parquet file); without it, ``UnsupportedHudiFeatureError``.

Writes, vacuum and checkpoints are refused with ``UnsupportedHudiFeatureError``.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote, unquote

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from varlake.delta.actions import AddFile, Metadata, Protocol
from varlake.delta.file_table import REMOVE_SCHEMA, adds_to_table
from varlake.delta.history import CommitEntry, to_epoch_ms
from varlake.delta.replay import TableState
from varlake.delta.schema import PrimitiveType, StructField, StructType, VariantType, from_arrow_schema
from varlake.delta.snapshot import Snapshot
from varlake.errors import UnsupportedHudiFeatureError, VersionNotFoundError
from varlake.expr import Predicate
from varlake.hudi import HudiSnapshot, load_properties, open_snapshot
from varlake.hudi.base_files import Footer, concat, newest_schema, open_source, read_base_file, read_footer
from varlake.hudi.file_groups import FileSlice
from varlake.hudi.properties import HOODIE_DIR, PROPERTIES_FILE
from varlake.hudi.partitions import partition_types, partition_values
from varlake.hudi.reads import drop_meta_fields
from varlake.hudi.slice_merge import merge_slice
from varlake.hudi.timeline import Instant, Timeline, load_timeline
from varlake.io.storage import Storage
from varlake.read import ScanPlan, ScanTask, plan_scan
from varlake.write.staging.files import add_action, file_facts

__all__ = ["HudiCore", "hudi_slice_merger", "is_hudi_table"]

#: merges one merge-on-read slice into its rows (``hudi.reads.SliceMerger``)
SliceMerger = Callable[[HudiSnapshot, FileSlice], pa.Table]
INDEXED_COLUMNS = 32


def is_hudi_table(storage: Storage, root: str) -> bool:
    """Whether ``root`` holds a Hudi table (``.hoodie/hoodie.properties``)."""
    return storage.exists(f"{root}/{HOODIE_DIR}/{PROPERTIES_FILE}")


def hudi_slice_merger() -> SliceMerger:
    """The merge of merge-on-read slices (``hudi.slice_merge.merge_slice``)."""
    return merge_slice


def instant_ms(ts: str) -> int:
    """A Hudi instant time (``yyyyMMddHHmmss[SSS]``, UTC) in ms since the epoch."""
    ms = int(ts[14:17] or 0) if len(ts) >= 17 else 0
    dt = datetime.strptime(ts[:14], "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000) + ms


def _instant_of_time(value: Any) -> str:
    """A ``timestamp`` argument as a Hudi instant time (UTC)."""
    if isinstance(value, str):
        return value
    ms = to_epoch_ms(value)
    dt = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return dt.strftime("%Y%m%d%H%M%S") + f"{ms % 1000:03d}"


class HudiCore:
    """The Hudi format of a table at ``root`` on ``storage`` (read-only ``TableFormat``)."""

    def __init__(self, storage: Storage, root: str, *, read_optimized: bool = False, merge_slice: SliceMerger | None = None) -> None:
        self.storage = storage
        self.root = root
        self.read_optimized = read_optimized
        self.merge_slice = merge_slice
        self.properties = load_properties(storage, root)
        self.properties.check_readable(root)
        self._snapshots: dict[str | None, tuple[HudiSnapshot, Snapshot]] = {}
        self._merged: dict[str, tuple[HudiSnapshot, FileSlice]] = {}
        self._recast: dict[str, pa.Schema] = {}  # base files read cast to the table's types
        self.log = self  # history, latest_version (what ``Table`` asks of a log)

    # --- versions ----------------------------------------------------------------------------

    def _timeline(self) -> Timeline:
        return load_timeline(self.storage, self.root, self.properties)

    def _writes(self) -> tuple[Instant, ...]:
        return self._timeline().completed_writes

    def latest_version(self) -> int:
        return len(self._writes()) - 1

    def history(self, limit: int | None = None) -> list[CommitEntry]:
        """The completed writes, newest first (version, completion or request time, action)."""
        timeline = self._timeline()
        out = []
        for version, inst in enumerate(timeline.completed_writes):
            md = timeline.metadata(inst)
            stats = md.write_stats
            metrics = {
                "numFiles": len(stats),
                "numOutputRows": sum(s.num_writes for s in stats),
                "numDeletedRows": sum(s.num_deletes for s in stats),
            }
            out.append(
                CommitEntry(
                    version=version,
                    timestamp=instant_ms(inst.completion_time or inst.timestamp),
                    operation=(md.operation or inst.action).upper(),
                    operation_parameters={"instant": inst.timestamp, "action": inst.action},
                    commit_info={"operationMetrics": metrics},
                )
            )
        out.reverse()
        return out[:limit] if limit is not None else out

    # --- snapshot ----------------------------------------------------------------------------

    def snapshot(self, version: int | None = None, timestamp: Any = None) -> Snapshot:
        as_of: str | None = None
        if version is not None:
            writes = self._writes()
            if writes or version != -1:  # -1: the version of a table without a commit
                if not 0 <= version < len(writes):
                    raise VersionNotFoundError(f"{self.root}: no version {version} (versions 0..{len(writes) - 1})")
                as_of = writes[version].timestamp
        elif timestamp is not None:
            as_of = _instant_of_time(timestamp)
        hudi = open_snapshot(self.storage, self.root, as_of, read_optimized=self.read_optimized, properties=self.properties)
        key = hudi.instant.timestamp if hudi.instant else None
        cached = self._snapshots.get(key)
        if cached is not None and cached[0].slices == hudi.slices:
            return cached[1]
        snap = self._as_delta(hudi)
        self._snapshots[key] = (hudi, snap)
        return snap

    def _as_delta(self, hudi: HudiSnapshot) -> Snapshot:
        footers: dict[str, Footer] = {}
        known: dict[str, tuple[int, int]] = {}
        base_slices = []
        for s in sorted(hudi.slices, key=lambda s: s.base_instant, reverse=True):
            if s.base is None:
                continue
            with_logs = bool(s.logs) and hudi.properties.is_mor and not hudi.read_optimized
            footers[s.base.path] = read_footer(self.storage, self.root, s.base.path, s.base.size)
            known[s.base.path] = (s.base.size, 0)
            base_slices.append((s, with_logs))
        variants = frozenset().union(*(f.variants for f in footers.values()))
        arrow = newest_schema([footers[s.base.path].schema for s, _ in base_slices])
        if not hudi.properties.populates_meta_fields:
            arrow = drop_meta_fields(hudi, arrow.empty_table()).schema
        schema = _with_variants(from_arrow_schema(arrow), variants) if len(arrow) else StructType(())
        partition_columns: tuple[str, ...] = ()
        if hudi.properties.drops_partition_columns and hudi.properties.partition_fields and base_slices:
            partition_columns = hudi.properties.partition_fields
            types = partition_types(hudi.properties, hudi.avro_schema)
            have = {f.name for f in schema.fields}
            extra = tuple(StructField(c, PrimitiveType(types[c])) for c in partition_columns if c not in have)
            schema = StructType(schema.fields + extra)
        with_stats = []
        for s, with_logs in base_slices:
            own = footers[s.base.path].schema
            if not _same_types(own, arrow, variants):
                self._recast[s.base.path] = pa.schema([own.field(f.name) if f.name in variants and f.name in own.names else f for f in arrow])
            elif not with_logs:
                with_stats.append((s.base.path, f"{self.root}/{s.base.path}"))
        metas = {path: f.metadata for path, f in footers.items()}
        facts = {f[0]: f for f in file_facts(self.storage, with_stats, schema.to_schema_string(), INDEXED_COLUMNS, metas, known)}
        adds = []

        def values(s: FileSlice) -> dict[str, str | None]:
            return partition_values(s.partition, hudi.properties, self.root) if partition_columns else {}

        for s, with_logs in base_slices:
            f = facts.get(s.base.path)
            adds.append(add_action(f, values(s)) if f else AddFile(quote(s.base.path), s.base.size, values(s), 0, True, None))
            if with_logs:
                self._merged[s.base.path] = (hudi, s)
        for s in hudi.slices:
            if s.base is None:  # a file group of logs only
                adds.append(AddFile(quote(s.logs[0].path), sum(lf.size for lf in s.logs), values(s), 0, True, None))
                self._merged[s.logs[0].path] = (hudi, s)
        props = dict(hudi.properties.raw)
        metadata = Metadata(
            id=props.get("hoodie.table.name") or self.root,
            schema_string=schema.to_schema_string(),
            partition_columns=partition_columns,
            configuration={k: v for k, v in props.items() if k != "hoodie.table.create.schema"},
            name=props.get("hoodie.table.name"),
            format_provider="hudi",
        )
        version = -1 if hudi.instant is None else [i.timestamp for i in hudi.timeline.completed_writes].index(hudi.instant.timestamp)
        state = TableState(version, Protocol(1, 2), metadata, adds_to_table(adds), REMOVE_SCHEMA.empty_table())
        ms = instant_ms(hudi.instant.timestamp) if hudi.instant else 0
        return Snapshot(self.root, state, ms)

    @property
    def root_location(self) -> str:
        """The absolute location of the table root (data file paths stay inside it)."""
        return self.storage.location(self.root)

    def plan(self, snapshot: Snapshot, filter: str | Predicate | None = None) -> ScanPlan:
        return plan_scan(snapshot, self.root_location, filter)

    # --- files --------------------------------------------------------------------------------

    def open_file(self, relative_path: str) -> str:
        return self.storage.location_inside(self.root, f"{self.root}/{relative_path}")

    def read_source(self, relative_path: str, size: int | None = None) -> Any:
        """A base file's source, or for a merge-on-read slice with log files its merged rows
        as an in-memory Parquet file."""
        merged = self._merged.get(relative_path)
        if merged is None:
            target = self._recast.get(relative_path)
            if target is None:
                return open_source(self.storage, self.root, relative_path, size)
            rows = concat([read_base_file(self.storage, self.root, relative_path, size=size)], target)
        else:
            hudi, file_slice = merged
            if self.merge_slice is None:
                raise UnsupportedHudiFeatureError(
                    f"{self.root}: merge-on-read log files ({file_slice.logs[0].path}); read it read-optimized"
                )
            rows = drop_meta_fields(hudi, self.merge_slice(hudi, file_slice))
            target = self._recast.get(relative_path)
            if target is not None:
                rows = concat([rows], pa.schema([f for f in target if f.name in rows.column_names]))
        buf = io.BytesIO()
        pq.write_table(rows, buf)
        return pa.BufferReader(buf.getvalue())

    def data_file(self, add: AddFile) -> str:
        return self.open_file(unquote(add.path))

    def deleted_rows(self, task: ScanTask) -> np.ndarray:
        return np.empty(0, dtype=np.uint64)

    def file_stats(self, relative_path: str, schema: StructType | None = None) -> str:
        snap = self.snapshot()
        f = next(file_facts(self.storage, [(relative_path, f"{self.root}/{relative_path}")], (schema or snap.schema).to_schema_string(), INDEXED_COLUMNS))
        return f[4]

    # --- what a Hudi table does not do here ----------------------------------------------------

    def _refuse(self, what: str) -> Any:
        raise UnsupportedHudiFeatureError(f"{self.root}: {what} of a Hudi table (varlake reads Hudi tables only)")

    def stage(self, *args: Any, **kwargs: Any) -> Any:
        return self._refuse("writing")

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        return self._refuse("writing")

    def commit_actions(self, *args: Any, **kwargs: Any) -> Any:
        return self._refuse("writing")

    def checkpoint(self) -> Any:
        return self._refuse("checkpointing")

    def vacuum(self, *args: Any, **kwargs: Any) -> Any:
        return self._refuse("vacuum")


def _same_types(file_schema: pa.Schema, table: pa.Schema, variants: frozenset[str]) -> bool:
    """Whether every column of the file has the table's type (else its bounds would be
    compared as another type's: no statistics then); a Variant column's storage differs
    from file to file with its shredding and is read as it is."""
    for f in file_schema:
        i = table.get_field_index(f.name)
        if i >= 0 and f.name not in variants and table.field(i).type != f.type:
            return False
    return True


def _with_variants(schema: StructType, variants: frozenset[str]) -> StructType:
    """``schema`` with the top-level columns that hold Variants typed ``variant``."""
    if not variants:
        return schema
    return StructType(tuple(replace(f, type=VariantType()) if f.name in variants else f for f in schema.fields))

