"""The ``_delta_log`` directory: file names, listing, log segments, reading log files.

A *log segment* for version ``v`` is the newest complete checkpoint at or below
``v`` plus every commit JSON after it up to ``v`` -- exactly what replay needs.
Classic single-part (``n.checkpoint.parquet``) and multi-part
(``n.checkpoint.o.p.parquet``) checkpoints are read; a multi-part checkpoint with a
missing part is ignored (PROTOCOL.md). UUID-named V2 checkpoints and sidecars are
read by ``checkpoint_v2``; log compactions and ``.crc`` files are not used (they are
optional for readers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from varlake.delta import constants as C
from varlake.delta.actions import (
    Action,
    AddFile,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from varlake.delta.checkpoint_v2 import UUID_CHECKPOINT, is_uuid_checkpoint, read_top_level, sidecar_tables
from varlake.delta.commit_columns import ColumnarCommit, columnar_commit
from varlake.delta.commit_file import parse_commit_lines
from varlake.delta.file_table import ADD_SCHEMA, REMOVE_SCHEMA, conform_struct
from varlake.delta.paths import check_path_column, relative_data_path
from varlake.errors import (
    CorruptCheckpointError,
    CorruptCommitError,
    MissingCommitError,
    StorageFileNotFoundError,
    TableNotFoundError,
    UnknownActionError,
    VersionNotFoundError,
)
from varlake.io.storage import FileInfo, Storage

__all__ = [
    "CheckpointRef",
    "CheckpointState",
    "LogListing",
    "LogSegment",
    "build_segment",
    "checkpoint_name",
    "commit_name",
    "list_log",
    "read_checkpoint",
    "read_commit",
]

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CLASSIC = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTI = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")

#: Checkpoint columns replay reads; the others it knows and skips.
_STATE_COLUMNS = (C.ADD, C.REMOVE, C.METADATA, C.PROTOCOL, C.TXN, C.DOMAIN_METADATA)
_SKIPPED_COLUMNS = frozenset({C.CDC, C.COMMIT_INFO, C.CHECKPOINT_METADATA})


def commit_name(version: int) -> str:
    return f"{version:0{C.VERSION_DIGITS}d}.json"


def checkpoint_name(version: int) -> str:
    return f"{version:0{C.VERSION_DIGITS}d}.checkpoint.parquet"


def multipart_checkpoint_name(version: int, part: int, parts: int) -> str:
    return f"{version:0{C.VERSION_DIGITS}d}.checkpoint.{part:0{C.PART_DIGITS}d}.{parts:0{C.PART_DIGITS}d}.parquet"


@dataclass(frozen=True)
class CheckpointRef:
    """One complete checkpoint: its version and its part files in part order."""

    version: int
    files: tuple[FileInfo, ...]


@dataclass(frozen=True)
class LogListing:
    """What a listing of ``_delta_log`` found: commits and complete checkpoints by version."""

    commits: dict[int, FileInfo]
    checkpoints: dict[int, CheckpointRef]
    complete: bool  # False when listed from a ``_last_checkpoint`` hint onwards

    @property
    def latest_version(self) -> int | None:
        versions = list(self.commits) + list(self.checkpoints)
        return max(versions) if versions else None


def list_log(storage: Storage, log_dir: str, from_version: int | None = None) -> LogListing:
    """List ``log_dir``; with ``from_version`` skip files of older versions (cheaper)."""
    start = f"{from_version:0{C.VERSION_DIGITS}d}" if from_version else None
    commits: dict[int, FileInfo] = {}
    singles: dict[int, FileInfo] = {}
    uuids: dict[int, FileInfo] = {}
    multi: dict[tuple[int, int], dict[int, FileInfo]] = {}
    # Every file of version v sorts after the bare 20-digit number v; older ones before it.
    for info in storage.list(log_dir, start_after=start):
        name = info.name
        if m := _COMMIT.match(name):
            commits[int(m.group(1))] = info
        elif m := _CLASSIC.match(name):
            singles[int(m.group(1))] = info
        elif m := UUID_CHECKPOINT.match(name):
            uuids.setdefault(int(m.group(1)), info)
        elif m := _MULTI.match(name):
            version, part, parts = int(m.group(1)), int(m.group(2)), int(m.group(3))
            if 1 <= part <= parts:
                multi.setdefault((version, parts), {})[part] = info
    checkpoints: dict[int, CheckpointRef] = {}
    for (version, parts), found in sorted(multi.items()):
        if len(found) == parts and parts > 0:
            checkpoints[version] = CheckpointRef(version, tuple(found[i] for i in range(1, parts + 1)))
    for version, info in uuids.items():
        checkpoints[version] = CheckpointRef(version, (info,))
    for version, info in singles.items():  # prefer the single file when both exist
        checkpoints[version] = CheckpointRef(version, (info,))
    return LogListing(commits, checkpoints, complete=not from_version)


@dataclass(frozen=True)
class LogSegment:
    """The files that reconstruct ``version``.

    Replay starts from ``checkpoint`` (or, if ``known_version`` is set, from a state
    the caller already holds for that version; or from nothing) and applies
    ``commits`` in order.
    """

    log_dir: str
    version: int
    checkpoint: CheckpointRef | None
    commits: tuple[tuple[int, FileInfo], ...]
    known_version: int | None = None


def build_segment(
    listing: LogListing, log_dir: str, version: int | None = None, known_version: int | None = None
) -> LogSegment:
    """The log segment for ``version`` (latest if ``None``).

    ``known_version`` is a version whose state the caller already has; it is used
    as the starting point unless a newer checkpoint (at or below the target) exists.
    """
    latest = listing.latest_version
    if latest is None:
        raise TableNotFoundError(f"no Delta table at {log_dir.rsplit('/', 1)[0]!r}: {log_dir} holds no commits")
    target = latest if version is None else version
    if target < 0 or target > latest:
        raise VersionNotFoundError(f"{log_dir}: version {target} does not exist (latest is {latest})")
    candidates = [v for v in listing.checkpoints if v <= target]
    checkpoint = listing.checkpoints[max(candidates)] if candidates else None
    if (
        known_version is not None
        and known_version <= target
        and (checkpoint is None or checkpoint.version <= known_version)
    ):
        checkpoint, start = None, known_version + 1
    else:
        known_version = None
        start = checkpoint.version + 1 if checkpoint else 0
    commits = []
    for v in range(start, target + 1):
        info = listing.commits.get(v)
        if info is None:
            if checkpoint is None and known_version is None and listing.checkpoints and v == 0:
                raise VersionNotFoundError(
                    f"{log_dir}: version {target} cannot be reconstructed: its commits were cleaned up "
                    f"(earliest checkpoint is version {min(listing.checkpoints)})"
                )
            raise MissingCommitError(
                f"commit for version {v} is missing (needed to reconstruct version {target})",
                f"{log_dir}/{commit_name(v)}",
            )
        commits.append((v, info))
    return LogSegment(log_dir, target, checkpoint, tuple(commits), known_version)


def read_commit(storage: Storage, info: FileInfo, root_location: str) -> list[Action]:
    """The actions of one commit file, with every file path checked against the root."""
    return _checked_actions(_read(storage, info), info, root_location)


def read_commit_for_replay(storage: Storage, info: FileInfo, root_location: str) -> list[Action] | ColumnarCommit:
    """``read_commit``, or the same actions with a big commit's plain adds decoded column-wise
    (``commit_columns``: the form ``replay`` takes too)."""
    data = _read(storage, info)
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        lines = None  # parse_commit_lines names the error
    columnar = columnar_commit(lines, info.path, root_location) if lines is not None else None
    return columnar if columnar is not None else _checked_actions(data, info, root_location)


def _read(storage: Storage, info: FileInfo) -> bytes:
    try:
        return storage.read(info.path)
    except StorageFileNotFoundError as exc:
        raise MissingCommitError("commit file disappeared while reading", info.path) from exc


def _checked_actions(data: bytes, info: FileInfo, root_location: str) -> list[Action]:
    actions = parse_commit_lines(data, info.path)
    for lineno, action in actions:
        if isinstance(action, (AddFile, RemoveFile)):
            relative_data_path(action.path, root_location, f"{info.path} line {lineno}")
    return [action for _, action in actions]


@dataclass(frozen=True)
class CheckpointState:
    """The table state a checkpoint holds, file actions kept columnar."""

    version: int
    protocol: Protocol
    metadata: Metadata
    adds: pa.Table
    removes: pa.Table
    txns: dict[str, Txn]
    domains: dict[str, DomainMetadata]


def _read_part(storage: Storage, info: FileInfo) -> pa.Table:
    try:
        data = storage.read(info.path)
        pf = pq.ParquetFile(pa.BufferReader(data))
        names = pf.schema_arrow.names
        unknown = [n for n in names if n not in _STATE_COLUMNS and n not in _SKIPPED_COLUMNS]
        v2 = (C.SIDECAR, C.CHECKPOINT_METADATA)
        table = pf.read(columns=[n for n in names if n in _STATE_COLUMNS or n in v2 or n in unknown])
        table.validate(full=True)  # e.g. strings that are not UTF-8: pyarrow does not check on read
    except StorageFileNotFoundError as exc:
        raise CorruptCheckpointError("checkpoint part disappeared while reading", info.path) from exc
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptCheckpointError(f"unreadable checkpoint Parquet: {exc}", info.path) from exc
    for name in unknown:
        if table.column(name).null_count < table.num_rows:
            if name == C.SIDECAR:
                continue  # read by checkpoint_v2.sidecar_tables
            raise UnknownActionError(f"checkpoint holds unknown action column {name!r}", info.path)
    return table


def _rows(table: pa.Table, name: str) -> list[dict[str, Any]]:
    if name not in table.column_names:
        return []
    col = table.column(name)
    if col.null_count == len(col):
        return []
    return [r for r in col.filter(col.is_valid()).to_pylist()]


def _file_actions(tables: list[pa.Table], name: str, schema: pa.Schema, path: str) -> pa.Table:
    parts = []
    for table in tables:
        if name not in table.column_names:
            continue
        col = table.column(name).combine_chunks()
        col = col.filter(col.is_valid())
        try:
            parts.append(conform_struct(col, schema))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise CorruptCheckpointError(f"column {name!r} has an unexpected layout: {exc}", path) from exc
    return pa.concat_tables(parts) if parts else schema.empty_table()


def read_checkpoint(storage: Storage, ref: CheckpointRef, root_location: str) -> CheckpointState:
    """Read a single- or multi-part classic checkpoint into a ``CheckpointState``."""
    where = ref.files[0].path if len(ref.files) == 1 else f"{ref.files[0].path} (+{len(ref.files) - 1} parts)"
    if len(ref.files) == 1 and is_uuid_checkpoint(ref.files[0].name):
        tables = [read_top_level(storage, ref.files[0])]
    else:
        tables = [_read_part(storage, info) for info in ref.files]
    log_dir = ref.files[0].path.rsplit("/", 1)[0]
    tables += sidecar_tables(storage, log_dir, ref.version, ref.files, tables, where)
    protocols = [r for t in tables for r in _rows(t, C.PROTOCOL)]
    metadatas = [r for t in tables for r in _rows(t, C.METADATA)]
    if len(protocols) != 1 or len(metadatas) != 1:
        raise CorruptCheckpointError(
            f"a checkpoint needs exactly one protocol and one metaData action, found {len(protocols)} and {len(metadatas)}",
            where,
        )
    try:
        protocol = Protocol.from_dict(protocols[0], where)
        metadata = Metadata.from_dict(metadatas[0], where)
        txns = [Txn.from_dict(r, where) for t in tables for r in _rows(t, C.TXN)]
        domains = [DomainMetadata.from_dict(r, where) for t in tables for r in _rows(t, C.DOMAIN_METADATA)]
    except CorruptCommitError as exc:
        raise CorruptCheckpointError(exc.reason, where) from exc
    adds = _file_actions(tables, C.ADD, ADD_SCHEMA, where)
    removes = _file_actions(tables, C.REMOVE, REMOVE_SCHEMA, where)
    for table in (adds, removes):
        if table.column("path").null_count:
            raise CorruptCheckpointError("a file action has no path", where)
        if table.num_rows and table.column("size").null_count and table is adds:
            raise CorruptCheckpointError("an add action has no size", where)
        check_path_column(table.column("path"), root_location, where)
    return CheckpointState(
        version=ref.version,
        protocol=protocol,
        metadata=metadata,
        adds=adds,
        removes=removes,
        txns={t.app_id: t for t in txns},
        domains={d.domain: d for d in domains if not d.removed},
    )
