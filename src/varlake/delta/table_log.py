"""``DeltaLog``: the transaction log of one table -- create, snapshot, commit, history,
checkpoint, vacuum. The user-facing ``Table`` (append/scan) is built on top of it.

Snapshots are immutable; the log keeps the newest one it has seen and replays only
the commits after it when asked for the latest version again (unless a newer
checkpoint makes that cheaper).
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime
from typing import Any, Mapping, Sequence

import pyarrow as pa

from varlake.delta import constants as C
from varlake.delta.actions import Action, Metadata
from varlake.delta.checkpoint import write_checkpoint
from varlake.delta.commit_file import parse_commit
from varlake.delta.history import (
    CommitEntry,
    commit_timestamps,
    history_entries,
    ict_start_version,
    read_commit_info,
    to_epoch_ms,
    version_at_timestamp,
)
from varlake.delta.last_checkpoint import read_last_checkpoint
from varlake.delta.log import (
    LogListing,
    build_segment,
    commit_name,
    list_log,
    read_checkpoint,
    read_commit,
)
from varlake.delta.protocol import check_readable, check_writable, required_protocol, validate_metadata
from varlake.delta.replay import TableState, replay, state_from_checkpoint
from varlake.delta.schema import StructType, from_arrow_schema
from varlake.delta.snapshot import Snapshot
from varlake.delta.transaction import CommitResult, Isolation, commit, serialize_commit
from varlake.delta.vacuum import vacuum
from varlake.errors import StorageFileNotFoundError, TableExistsError, TableNotFoundError
from varlake.io.storage import FileInfo, Storage

__all__ = ["DeltaLog"]


class DeltaLog:
    """The Delta log of the table at ``root`` (a path understood by ``storage``)."""

    def __init__(self, storage: Storage, root: str) -> None:
        self.storage = storage
        self.root = root.rstrip("/") or "/"
        self.log_dir = f"{self.root}/{C.LOG_DIR}"
        self.root_location = storage.location(self.root)
        self._latest: Snapshot | None = None
        self._latest_file: FileInfo | None = None

    def __repr__(self) -> str:
        return f"DeltaLog({self.storage!r}, {self.root!r})"

    # --- creating ----------------------------------------------------------------------

    def create(
        self,
        schema: StructType | pa.Schema,
        partition_by: Sequence[str] = (),
        properties: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> Snapshot:
        """Create the table (version 0); ``TableExistsError`` if a log already exists.

        The protocol is the smallest that supports the schema and properties: a
        Variant column anywhere gives reader 3 / writer 7 with ``variantType``.
        """
        if isinstance(schema, pa.Schema):
            schema = from_arrow_schema(schema)
        cfg = dict(properties or {})
        now = int(time.time() * 1000)
        metadata = Metadata(
            id=str(uuid.uuid4()),
            schema_string=schema.to_schema_string(),
            partition_columns=tuple(partition_by),
            configuration=cfg,
            name=name,
            description=description,
            created_time=now,
        )
        protocol = required_protocol(schema, cfg)
        validate_metadata(metadata, protocol)
        check_writable(protocol, metadata, self.root)
        if list_log(self.storage, self.log_dir).latest_version is not None:
            raise TableExistsError(f"a Delta table already exists at {self.root!r}")
        info: dict[str, Any] = {
            "timestamp": now,
            "operation": "CREATE TABLE",
            "operationParameters": {"partitionBy": list(partition_by), "properties": cfg},
            "isBlindAppend": True,
            "engineInfo": C.ENGINE_INFO,
            "txnId": str(uuid.uuid4()),
        }
        if C.IN_COMMIT_TIMESTAMP in protocol.writer_feature_set:
            info["inCommitTimestamp"] = now
        if not self.write_commit(0, serialize_commit(info, [protocol, metadata])):
            raise TableExistsError(f"a Delta table was created concurrently at {self.root!r}")
        return self.snapshot()

    # --- reading -----------------------------------------------------------------------

    def _listing(self, version: int | None) -> LogListing:
        """List the log, from the ``_last_checkpoint`` hint on when that suffices."""
        hint = read_last_checkpoint(self.storage, self.log_dir)
        if hint is not None and (version is None or version >= hint["version"]) and hint["version"] > 0:
            listing = list_log(self.storage, self.log_dir, from_version=hint["version"])
            if hint["version"] in listing.checkpoints:
                return listing
        return list_log(self.storage, self.log_dir)

    def snapshot(self, version: int | None = None, timestamp: int | float | datetime | None = None) -> Snapshot:
        """The table at ``version``, at ``timestamp`` (ms or ``datetime``), or latest.

        Time travel by timestamp picks the newest version committed at or before it
        (commit timestamps as defined in ``history.py``).
        """
        if timestamp is not None:
            if version is not None:
                raise ValueError("pass version or timestamp, not both")
            version = self.version_at(timestamp)
        cached = self._latest
        listing = None
        if cached is not None and (version is None or version >= cached.version):
            listing = list_log(self.storage, self.log_dir, from_version=cached.version)
            if listing.commits.get(cached.version) != self._latest_file:
                cached, listing = None, None  # the log changed under us: start afresh
        if listing is None:
            listing = self._listing(version)
        known = cached.version if cached is not None else None
        segment = build_segment(listing, self.log_dir, version, known_version=known)
        if segment.known_version is not None and cached is not None:
            if segment.version == cached.version:
                return cached
            base: TableState | None = cached.state
        elif segment.checkpoint is not None:
            base = state_from_checkpoint(read_checkpoint(self.storage, segment.checkpoint, self.root_location))
        else:
            base = None
        commits = [(v, read_commit(self.storage, info, self.root_location)) for v, info in segment.commits]
        state = replay(base, commits, self.log_dir)
        snap = self._make_snapshot(state, listing.commits.get(state.version))
        if version is None or (self._latest is None or snap.version >= self._latest.version):
            self._remember(snap, listing.commits.get(state.version))
        return snap

    def _make_snapshot(self, state: TableState, commit_file: FileInfo | None) -> Snapshot:
        check_readable(state.protocol, state.metadata, self.root)
        snap = Snapshot(self.root, state, self._timestamp_of(state, commit_file))
        _ = snap.schema  # a schema string that does not parse fails the open, not a later scan
        return snap

    def _remember(self, snap: Snapshot, commit_file: FileInfo | None) -> None:
        if commit_file is not None:
            self._latest, self._latest_file = snap, commit_file

    def _timestamp_of(self, state: TableState, commit_file: FileInfo | None) -> int:
        ict_from = ict_start_version(state.metadata)
        if ict_from is not None and state.version >= ict_from:
            info = state.commit_info.values if state.commit_info is not None else self.commit_info(state.version)
            if info and isinstance(info.get("inCommitTimestamp"), int):
                return info["inCommitTimestamp"]
        if commit_file is not None:
            return commit_file.mtime_ms
        return self.commit_file_mtime(state.version)

    def latest_version(self) -> int:
        """The newest committed version (``TableNotFoundError`` if there is no table)."""
        latest = self._listing(None).latest_version
        if latest is None:
            raise TableNotFoundError(f"no Delta table at {self.root!r}")
        return latest

    def version_at(self, timestamp: int | float | datetime) -> int:
        """The version time travel to ``timestamp`` resolves to."""
        listing = list_log(self.storage, self.log_dir)
        latest = self.snapshot()
        stamps = commit_timestamps(self.storage, listing, latest.metadata)
        earliest = 0 if 0 in listing.commits else min(listing.checkpoints or [latest.version])
        return version_at_timestamp(stamps, to_epoch_ms(timestamp), earliest, self.root)

    def history(self, limit: int | None = None) -> list[CommitEntry]:
        """``commitInfo`` and commit timestamp per version, newest first."""
        listing = list_log(self.storage, self.log_dir)
        return history_entries(self.storage, listing, self.snapshot().metadata, limit)

    # --- low-level helpers used by transaction / vacuum / benchmarks -----------------------

    def commit_path(self, version: int) -> str:
        return f"{self.log_dir}/{commit_name(version)}"

    def write_commit(self, version: int, data: bytes) -> bool:
        """Put-if-absent the commit file of ``version``; ``False`` if it exists."""
        return self.storage.write_if_absent(self.commit_path(version), data)

    def commit_info(self, version: int) -> dict[str, Any] | None:
        return read_commit_info(self.storage, self.commit_path(version))

    def commit_file_mtime(self, version: int) -> int:
        try:
            return self.storage.info(self.commit_path(version)).mtime_ms
        except StorageFileNotFoundError:
            return 0

    def read_commits_from(self, version: int) -> list[tuple[int, list[Action]]]:
        """Commits ``version``, ``version+1``, ... as far as they exist contiguously."""
        listing = list_log(self.storage, self.log_dir, from_version=version)
        out = []
        v = version
        while v in listing.commits:
            out.append((v, read_commit(self.storage, listing.commits[v], self.root_location)))
            v += 1
        return out

    def read_actions(self, version: int) -> list[Action]:
        """All actions of the commit at ``version`` (ignored action types left out)."""
        return parse_commit(self.storage.read(self.commit_path(version)), self.commit_path(version))

    def adopt_state(self, state: TableState) -> Snapshot:
        """A snapshot for a state this process just built (after a commit); cached as latest."""
        try:
            info = self.storage.info(self.commit_path(state.version))
        except StorageFileNotFoundError:
            info = None
        snap = self._make_snapshot(state, info)
        self._remember(snap, info)
        return snap

    # --- writing -----------------------------------------------------------------------

    def commit(
        self,
        actions: Sequence[Action],
        operation: str = "WRITE",
        read_version: int | None = None,
        operation_parameters: Mapping[str, Any] | None = None,
        *,
        isolation: Isolation = "WriteSerializable",
        commit_info: Mapping[str, Any] | None = None,
    ) -> CommitResult:
        """Commit ``actions`` (built by the caller) optimistically; see ``transaction``."""
        return commit(
            self,
            actions,
            operation,
            read_version,
            operation_parameters,
            isolation=isolation,
            commit_info=commit_info,
        )

    def write_checkpoint(self, snapshot: Snapshot) -> str:
        """Write a classic checkpoint for ``snapshot`` and update ``_last_checkpoint``."""
        check_writable(snapshot.protocol, snapshot.metadata, self.root)
        return write_checkpoint(self.storage, self.log_dir, snapshot.state)

    def checkpoint(self, version: int | None = None) -> str:
        """Checkpoint ``version`` (latest if ``None``); returns the checkpoint path."""
        return self.write_checkpoint(self.snapshot(version))

    def vacuum(
        self,
        retention_hours: float = C.MIN_SAFE_VACUUM_RETENTION_HOURS,
        *,
        dry_run: bool = False,
        unsafe_retention: bool = False,
        now_ms: int | None = None,
    ) -> list[str]:
        """Delete unreferenced data files older than the retention; see ``vacuum``."""
        return vacuum(self, retention_hours, dry_run=dry_run, unsafe_retention=unsafe_retention, now_ms=now_ms)
