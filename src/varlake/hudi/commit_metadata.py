"""Commit metadata of a completed instant, as the Hudi versions write it.

Layout 1 writes JSON (``HoodieCommitMetadata`` through Jackson); layout 2 writes an Avro
object container file of one record (``HoodieCommitMetadata``,
``HoodieReplaceCommitMetadata``, ``HoodieRollbackMetadata``...), read with fastavro. Both
give the same fields: ``partitionToWriteStats`` (the files an instant wrote, per
partition), ``partitionToReplaceFileIds`` (file groups a replace commit retired),
``extraMetadata`` (the writer ``schema``), ``operationType``; rollbacks name the instants
they rolled back (``commitsRollback``), restores theirs (``instantsToRollback``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from varlake.errors import CorruptHudiTimelineError

__all__ = ["CommitMetadata", "WriteStat", "metadata_of", "parse_commit_metadata"]

AVRO_MAGIC = b"Obj\x01"


@dataclass(frozen=True)
class WriteStat:
    """One file an instant wrote: partition, file group, path (relative to the table root)."""

    partition: str
    file_id: str
    path: str
    num_writes: int = 0
    num_deletes: int = 0
    num_inserts: int = 0
    num_updates: int = 0
    size: int = 0
    prev_commit: str | None = None


@dataclass(frozen=True)
class CommitMetadata:
    """What a reader uses of an instant's metadata (``raw`` keeps the whole record)."""

    raw: Mapping[str, Any]
    write_stats: tuple[WriteStat, ...] = ()
    replaced_file_ids: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    extra: Mapping[str, str] = field(default_factory=dict)
    operation: str | None = None
    rolled_back: tuple[str, ...] = ()

    @property
    def schema(self) -> str | None:
        """The writer's Avro schema (JSON text), when the instant recorded one."""
        return self.extra.get("schema") or None

    def replaced(self) -> set[tuple[str, str]]:
        """``(partition, file id)`` of every file group this instant replaced."""
        return {(p, f) for p, ids in self.replaced_file_ids.items() for f in ids}


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _stats(raw: Mapping[str, Any], where: str) -> tuple[WriteStat, ...]:
    per_partition = raw.get("partitionToWriteStats") or {}
    if not isinstance(per_partition, Mapping):
        raise CorruptHudiTimelineError(f"{where}: partitionToWriteStats is not a map")
    out: list[WriteStat] = []
    for partition, stats in per_partition.items():
        for s in stats or ():
            if not isinstance(s, Mapping) or not s.get("fileId"):
                raise CorruptHudiTimelineError(f"{where}: a write stat of partition {partition!r} names no fileId")
            prev = s.get("prevCommit")
            out.append(
                WriteStat(
                    partition=s.get("partitionPath") or partition or "",
                    file_id=str(s["fileId"]),
                    path=str(s.get("path") or ""),
                    num_writes=_int(s.get("numWrites")),
                    num_deletes=_int(s.get("numDeletes")),
                    num_inserts=_int(s.get("numInserts")),
                    num_updates=_int(s.get("numUpdateWrites")),
                    size=_int(s.get("fileSizeInBytes") or s.get("totalWriteBytes")),
                    prev_commit=None if prev in (None, "null") else str(prev),
                )
            )
    return tuple(out)


def _rolled_back(raw: Mapping[str, Any]) -> tuple[str, ...]:
    names: list[str] = []
    for key in ("commitsRollback", "instantsToRollback"):
        for item in raw.get(key) or ():
            if isinstance(item, Mapping):
                item = item.get("commitTime") or item.get("timestamp")
            if item:
                names.append(str(item))
    for item in raw.get("instantsRollback") or ():
        if isinstance(item, Mapping) and item.get("commitTime"):
            names.append(str(item["commitTime"]))
    return tuple(dict.fromkeys(names))


def _decode(data: bytes, where: str) -> Mapping[str, Any]:
    if not data.strip():
        return {}
    if data.startswith(AVRO_MAGIC):
        import fastavro

        try:
            records = list(fastavro.reader(io.BytesIO(data)))
        except Exception as exc:  # fastavro raises many kinds on bad input
            raise CorruptHudiTimelineError(f"{where}: unreadable Avro commit metadata ({exc})") from None
        if len(records) != 1 or not isinstance(records[0], Mapping):
            raise CorruptHudiTimelineError(f"{where}: Avro commit metadata holds {len(records)} records, not 1")
        return records[0]
    try:
        parsed = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptHudiTimelineError(f"{where}: commit metadata is neither Avro nor JSON ({exc})") from None
    if not isinstance(parsed, Mapping):
        raise CorruptHudiTimelineError(f"{where}: commit metadata is not a JSON object")
    return parsed


def parse_commit_metadata(data: bytes, where: str) -> CommitMetadata:
    """The ``CommitMetadata`` in ``data`` (JSON or Avro), ``CorruptHudiTimelineError`` if neither."""
    return metadata_of(_decode(data, where), where)


def metadata_of(raw: Mapping[str, Any], where: str) -> CommitMetadata:
    """The ``CommitMetadata`` of a decoded metadata record (JSON object or Avro record)."""
    replaced_raw = raw.get("partitionToReplaceFileIds") or {}
    replaced: dict[str, tuple[str, ...]] = {}
    if isinstance(replaced_raw, Mapping):
        for partition, ids in replaced_raw.items():
            if isinstance(ids, Sequence) and not isinstance(ids, str):
                replaced[str(partition)] = tuple(str(i) for i in ids)
    extra = raw.get("extraMetadata") or {}
    return CommitMetadata(
        raw=raw,
        write_stats=_stats(raw, where),
        replaced_file_ids=replaced,
        extra={str(k): str(v) for k, v in extra.items()} if isinstance(extra, Mapping) else {},
        operation=raw.get("operationType") if isinstance(raw.get("operationType"), str) else None,
        rolled_back=_rolled_back(raw),
    )
