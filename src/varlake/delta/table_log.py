"""``DeltaLog``: the transaction log of one table -- create, snapshot, commit, history,
checkpoint, vacuum. The user-facing ``Table`` (append/scan) is built on top of it.

Snapshots are immutable. Reading and writing the log files, and the cache of the newest
snapshot, live in the ``LogStore`` (``log_store.py``) that ``DeltaLog`` holds and hands
to ``transaction.Transaction`` and ``vacuum``.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime
from typing import Any, Mapping, Sequence

import pyarrow as pa

from varlake.delta import constants as C
from varlake.delta.actions import Action, Metadata
from varlake.delta.history import (
    CommitEntry,
    commit_timestamps,
    history_entries,
    to_epoch_ms,
    version_at_timestamp,
)
from varlake.delta.log_store import LogStore
from varlake.delta.protocol import required_protocol
from varlake.delta.replay import TableState
from varlake.delta.schema import StructType, from_arrow_schema
from varlake.delta.snapshot import Snapshot
from varlake.delta.transaction import CommitResult, Isolation, Transaction, commit
from varlake.delta.vacuum import vacuum
from varlake.errors import TableNotFoundError
from varlake.io.storage import Storage

__all__ = ["DeltaLog"]


class DeltaLog:
    """The Delta log of the table at ``root`` (a path understood by ``storage``)."""

    def __init__(self, storage: Storage, root: str) -> None:
        self.store = LogStore(storage, root)
        self.storage = storage
        self.root = self.store.root
        self.log_dir = self.store.log_dir
        self.root_location = self.store.root_location

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
        params = {"partitionBy": list(partition_by), "properties": cfg}
        txn = Transaction(self.store, None, "CREATE TABLE", params).set_protocol(protocol).set_metadata(metadata)
        txn.commit_info(timestamp=now).commit()
        return self.snapshot()

    # --- reading -----------------------------------------------------------------------

    def snapshot(self, version: int | None = None, timestamp: int | float | datetime | None = None) -> Snapshot:
        """The table at ``version``, at ``timestamp`` (ms or ``datetime``), or latest.

        Time travel by timestamp picks the newest version committed at or before it
        (commit timestamps as defined in ``history.py``).
        """
        if timestamp is not None:
            if version is not None:
                raise ValueError("pass version or timestamp, not both")
            version = self.version_at(timestamp)
        return self.store.snapshot(version)

    def latest_version(self) -> int:
        """The newest committed version (``TableNotFoundError`` if there is no table)."""
        latest = self.store.latest_version()
        if latest is None:
            raise TableNotFoundError(f"no Delta table at {self.root!r}")
        return latest

    def version_at(self, timestamp: int | float | datetime) -> int:
        """The version time travel to ``timestamp`` resolves to."""
        listing = self.store.listing()
        latest = self.snapshot()
        stamps = commit_timestamps(self.storage, listing, latest.metadata)
        earliest = 0 if 0 in listing.commits else min(listing.checkpoints or [latest.version])
        return version_at_timestamp(stamps, to_epoch_ms(timestamp), earliest, self.root)

    def history(self, limit: int | None = None) -> list[CommitEntry]:
        """``commitInfo`` and commit timestamp per version, newest first."""
        listing = self.store.listing()
        return history_entries(self.storage, listing, self.snapshot().metadata, limit)

    # --- low-level helpers (the log store's, kept here for benchmarks and tests) ---------

    def commit_path(self, version: int) -> str:
        return self.store.commit_path(version)

    def write_commit(self, version: int, data: bytes) -> bool:
        """Put-if-absent the commit file of ``version``; ``False`` if it exists."""
        return self.store.write_commit(version, data)

    def commit_info(self, version: int) -> dict[str, Any] | None:
        return self.store.commit_info(version)

    def commit_file_mtime(self, version: int) -> int:
        return self.store.commit_file_mtime(version)

    def read_commits_from(self, version: int) -> list[tuple[int, list[Action]]]:
        """Commits ``version``, ``version+1``, ... as far as they exist contiguously."""
        return self.store.read_commits_from(version)

    def read_actions(self, version: int) -> list[Action]:
        """All actions of the commit at ``version`` (ignored action types left out)."""
        return self.store.read_actions(version)

    def adopt_state(self, state: TableState, commit_size: int | None = None) -> Snapshot:
        """A snapshot for a state this process just built (after a commit); cached as latest
        (``LogStore.adopt_state``)."""
        return self.store.adopt_state(state, commit_size)

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
        """Commit ``actions`` (built by the caller) on top of ``read_version`` (latest if
        ``None``) as one ``Transaction``; see ``transaction``."""
        return commit(
            self.store,
            actions,
            operation,
            read_version,
            operation_parameters,
            isolation=isolation,
            commit_info=commit_info,
        )

    def transaction(
        self,
        snapshot: Snapshot | None,
        operation: str = "WRITE",
        parameters: Mapping[str, Any] | None = None,
        *,
        isolation: Isolation | None = None,
    ) -> Transaction:
        """A ``Transaction`` on ``snapshot`` (the version the change read)."""
        return Transaction(self.store, snapshot, operation, parameters, isolation=isolation)

    def write_checkpoint(self, snapshot: Snapshot) -> str:
        """Write a classic checkpoint for ``snapshot`` and update ``_last_checkpoint``."""
        return self.store.write_checkpoint(snapshot)

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
        return vacuum(self.store, retention_hours, dry_run=dry_run, unsafe_retention=unsafe_retention, now_ms=now_ms)
