"""A merge-on-read file slice read as its rows: the base file merged with its log files.

The slice's files come from ``snapshot`` (which slice a read sees), the merge rules from
``log_merge.merge_file_slice`` (ordering field, delete blocks and markers, rollback
command blocks, partial updates): the table's ``log_merge.merge_settings``, records
keyed by ``_hoodie_record_key`` (by the record key fields in a table without meta
fields), and only blocks of instants that count for the read (``HudiSnapshot.valid_instants``,
or older than the active timeline).
"""

from __future__ import annotations

import pyarrow as pa

from varlake.hudi.base_files import read_base_file
from varlake.hudi.file_groups import FileSlice
from varlake.hudi.log_format import read_log_files
from varlake.hudi.log_merge import merge_file_slice, merge_settings
from varlake.hudi.snapshot import HudiSnapshot

__all__ = ["merge_slice", "RECORD_KEY"]

RECORD_KEY = "_hoodie_record_key"


def merge_slice(snap: HudiSnapshot, file_slice: FileSlice) -> pa.Table:
    """The rows of ``file_slice`` as the read ``snap`` sees them (module doc)."""
    props = snap.properties
    base = None
    if file_slice.base is not None:
        base = read_base_file(snap.storage, snap.root, file_slice.base.path, size=file_slice.base.size)
    logs = read_log_files(snap.storage, [f"{snap.root}/{lf.path}" for lf in file_slice.logs])
    keys: str | list[str] = RECORD_KEY if props.populates_meta_fields else list(props.record_key_fields)
    return merge_file_slice(
        base,
        logs,
        key_fields=keys,
        valid_instants=snap.valid_instants,
        timeline_start=snap.timeline.first_timestamp,
        as_of=snap.instant.timestamp if snap.instant is not None else None,
        **merge_settings(props.raw).as_kwargs(),
    )
