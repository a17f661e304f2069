"""Whole-table reads of a Hudi table into Arrow: snapshot, read-optimized, time travel,
incremental.

* ``read_snapshot``: every visible slice (``snapshot.visible_slices``); a copy-on-write
  slice, or any slice of a read-optimized read, is its base file; a merge-on-read slice
  with log files is merged (``slice_merge.merge_slice`` unless the caller gives another).
* ``read_incremental``: the rows written by completed commits in ``(start, end]``: the
  file groups those commits wrote, read at ``end``, keeping the rows whose
  ``_hoodie_commit_time`` falls in the range (a table without meta fields cannot say which
  rows a commit wrote, and is refused).

Partition columns dropped from the data files are taken from the partition path
(``partitions``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from varlake.errors import HudiInstantNotFoundError, UnsupportedHudiFeatureError
from varlake.hudi.base_files import concat, read_base_file
from varlake.hudi.file_groups import FileSlice
from varlake.hudi.partitions import partition_columns, partition_types, partition_values
from varlake.hudi.slice_merge import merge_slice
from varlake.hudi.snapshot import HudiSnapshot, normalize_instant, open_snapshot, refuse_lsm_history
from varlake.io.storage import Storage

__all__ = ["COMMIT_TIME", "SliceMerger", "read_incremental", "read_slices", "read_snapshot"]

COMMIT_TIME = "_hoodie_commit_time"
META_FIELDS = (COMMIT_TIME, "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name")

#: merges one merge-on-read slice (base + logs) into its rows, for a snapshot
SliceMerger = Callable[[HudiSnapshot, FileSlice], pa.Table]


def read_slices(snap: HudiSnapshot, slices: Sequence[FileSlice], merge: SliceMerger | None = merge_slice) -> pa.Table:
    """The rows of ``slices`` of ``snap`` (logs merged by ``merge`` when a slice has them;
    None: such a slice is refused by name)."""
    dropped = snap.properties.drops_partition_columns and bool(snap.properties.partition_fields)
    types = partition_types(snap.properties, snap.avro_schema) if dropped else {}
    parts: list[pa.Table] = []
    for s in sorted(slices, key=lambda s: (s.base_instant, s.partition, s.file_id)):
        if s.logs and not snap.read_optimized and snap.properties.is_mor:
            if merge is None:
                raise UnsupportedHudiFeatureError(
                    f"{snap.root}: merge-on-read log files ({s.logs[0].path}); read it read-optimized"
                )
            part = merge(snap, s)
        elif s.base is not None:
            part = read_base_file(snap.storage, snap.root, s.base.path, size=s.base.size)
        else:
            continue
        if dropped:
            part = partition_columns(part, partition_values(s.partition, snap.properties, snap.root), types, snap.root)
        parts.append(part)
    return drop_meta_fields(snap, concat(parts))


def drop_meta_fields(snap: HudiSnapshot, rows: pa.Table) -> pa.Table:
    """A table written without meta fields (``hoodie.populate.meta.fields=false``) keeps
    empty ``_hoodie_*`` columns in its files; they are not the table's columns."""
    if snap.properties.populates_meta_fields:
        return rows
    return rows.drop_columns([c for c in rows.column_names if c in META_FIELDS])


def read_snapshot(
    storage: Storage, root: str, as_of: object = None, *, read_optimized: bool = False, merge: SliceMerger | None = merge_slice
) -> pa.Table:
    """The table's rows at its latest commit, or at ``as_of`` (module doc)."""
    snap = open_snapshot(storage, root, as_of, read_optimized=read_optimized)
    return read_slices(snap, snap.slices, merge)


def read_incremental(
    storage: Storage, root: str, start: object, end: object = None, *, merge: SliceMerger | None = merge_slice
) -> pa.Table:
    """The rows committed after ``start`` up to ``end`` (latest by default), as of ``end``."""
    lo = normalize_instant(start, root)
    snap = open_snapshot(storage, root, end)
    if snap.timeline.is_before_start(lo) or not any(i.timestamp <= lo for i in snap.timeline.completed_writes):
        refuse_lsm_history(storage, root, snap.properties, start)
        snap = open_snapshot(storage, root, end, archived=True)
    if not snap.properties.populates_meta_fields:
        raise UnsupportedHudiFeatureError(
            f"{root}: incremental read of a table without meta fields (hoodie.populate.meta.fields=false)"
        )
    if snap.instant is None:
        return pa.table({})
    hi = snap.instant.timestamp
    if lo > hi:
        raise HudiInstantNotFoundError(f"{root}: incremental start {start!r} is after its end {hi!r}")
    touched: set[tuple[str, str]] = set()
    for inst in snap.timeline.completed_writes:
        if lo < inst.timestamp <= hi:
            for stat in snap.timeline.metadata(inst).write_stats:
                touched.add((stat.partition, stat.file_id))
    slices = [s for s in snap.slices if (s.partition, s.file_id) in touched]
    rows = read_slices(snap, slices, merge)
    if rows.num_rows == 0 or COMMIT_TIME not in rows.column_names:
        return rows
    times = rows.column(COMMIT_TIME)
    keep = pc.and_(pc.greater(times, pa.scalar(lo)), pc.less_equal(times, pa.scalar(hi)))
    return rows.filter(keep)
