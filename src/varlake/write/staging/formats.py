"""The table format behind ``varlake.Table``: what a format must give the facade.

``TableFormat`` is the small interface ``Table`` is built on -- a format's *snapshot*
(versions, live files, their statistics, deleted rows), its *staging* (new data files for
a write, uncommitted) and its *transaction* (committing staged files or actions as one
version, creating a table). ``DeltaCore`` implements it for the Delta protocol (the log in
``varlake.delta``, staging in ``stage``, commits in ``commit``); it is the only format
today, and another one (Hudi, say) would implement the same interface.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from varlake.delta.actions import AddFile
from varlake.delta.column_mapping import assign_column_mapping
from varlake.delta.deletion_vectors import load_deleted_rows
from varlake.delta.paths import relative_data_path
from varlake.delta.schema import StructType
from varlake.delta.snapshot import Snapshot
from varlake.delta.table_log import DeltaLog
from varlake.delta.transaction import CommitResult
from varlake.errors import DataFileMissingError, StorageFileNotFoundError, TableError
from varlake.expr import Predicate
from varlake.io.storage import LocalStorage, Storage
from varlake.read import ScanPlan, ScanTask, plan_scan
from varlake.write.staging.commit import Committed, PendingWrite, commit_actions, commit_write
from varlake.write.staging.conform import check_partition_columns
from varlake.write.staging.files import num_indexed_cols, stats_for
from varlake.write.staging.shredding import new_table_properties
from varlake.write.staging.stage import ArrowFiles, StageTarget, stage

__all__ = ["DeltaCore", "TableFormat"]


class TableFormat(Protocol):
    """What ``varlake.Table`` needs of a table format (module doc)."""

    storage: Storage
    root: str

    # snapshot: versions, live files, statistics, deleted rows
    def snapshot(self, version: int | None = None, timestamp: Any = None) -> Snapshot: ...

    def plan(self, snapshot: Snapshot, filter: str | Predicate | None = None) -> ScanPlan: ...

    def file_stats(self, relative_path: str, schema: StructType | None = None) -> str: ...

    def open_file(self, relative_path: str) -> str: ...

    def read_source(self, relative_path: str, size: int | None = None) -> Any: ...

    def data_file(self, add: AddFile) -> str: ...

    def deleted_rows(self, task: ScanTask) -> np.ndarray: ...

    # staging
    def stage(self, data: Any, mode: str = "append", snapshot: Snapshot | None = None, *, evolve: bool = True) -> PendingWrite: ...

    # transaction
    def commit(self, pending: PendingWrite, *, app_id: str | None = None, app_version: int | None = None) -> Committed: ...

    def commit_actions(
        self,
        actions: Sequence[Any],
        mode: str,
        snapshot: Snapshot,
        *,
        app_id: str | None = None,
        app_version: int | None = None,
        num_rows: int | None = None,
        operation: str = "WRITE",
    ) -> CommitResult: ...


class DeltaCore:
    """The Delta format of a table at ``root`` on ``storage`` (``TableFormat``)."""

    def __init__(self, storage: Storage, root: str) -> None:
        self.storage = storage
        self.root = root
        self.log = DeltaLog(storage, root)

    @classmethod
    def create(
        cls,
        storage: Storage,
        root: str,
        schema: StructType,
        partition_by: Sequence[str] = (),
        properties: Mapping[str, str] | None = None,
        *,
        exist_ok: bool = False,
        where: str | None = None,
    ) -> "DeltaCore":
        """Create the table (version 0): partition columns checked, column mapping assigned
        when ``properties`` ask for it, deletion vectors on by default. ``where`` names the
        table in errors (default ``root``)."""
        where = root if where is None else where
        check_partition_columns(schema, list(partition_by), where)
        schema, props = assign_column_mapping(schema, dict(properties or {}), where)
        props = new_table_properties(props, (), "off")
        core = cls(storage, root)
        try:
            core.log.create(schema, partition_by, props)
        except TableError:
            if not exist_ok:
                raise
        return core

    # --- snapshot ---------------------------------------------------------------------------

    def snapshot(self, version: int | None = None, timestamp: Any = None) -> Snapshot:
        return self.log.snapshot(version, timestamp)

    def plan(self, snapshot: Snapshot, filter: str | Predicate | None = None) -> ScanPlan:
        """The live files of ``snapshot`` to read for ``filter`` (``read.plan_scan``)."""
        return plan_scan(snapshot, self.log.root_location, filter)

    def file_stats(self, relative_path: str, schema: StructType | None = None) -> str:
        """Delta stats of a data file in this table, from its footer."""
        snapshot = self.snapshot()
        return stats_for(self.storage, self.root, relative_path, schema or snapshot.schema, num_indexed_cols(snapshot.properties))

    def open_file(self, relative_path: str) -> str:
        return self.storage.location_inside(self.root, f"{self.root}/{relative_path}")

    def read_source(self, relative_path: str, size: int | None = None) -> Any:
        """What pyarrow reads the data file at ``relative_path`` from: its local path, or a
        file object on an object store (``Storage.open_read``; ``size``, the log's, spares
        looking it up)."""
        location = self.open_file(relative_path)
        if isinstance(self.storage, LocalStorage):
            return location
        try:
            return self.storage.open_read(location, size)
        except StorageFileNotFoundError:
            raise DataFileMissingError(
                f"data file {relative_path!r} is listed in the table log but missing from storage ({location})"
            ) from None

    def data_file(self, add: AddFile) -> str:
        return self.open_file(relative_data_path(add.path, self.log.root_location, f"add {add.path!r}"))

    def deleted_rows(self, task: ScanTask) -> np.ndarray:
        dv = task.deletion_vector
        if dv is None:
            return np.empty(0, dtype=np.uint64)

        def open_relative(relative_path: str) -> Any:
            return self.storage.open_read(self.open_file(relative_path))

        where = f"{self.root}: data file {task.relative_path!r}"
        return load_deleted_rows(dv, open_relative, self.log.root_location, where)

    # --- staging ----------------------------------------------------------------------------

    def stage(self, data: Any, mode: str = "append", snapshot: Snapshot | None = None, *, evolve: bool = True) -> PendingWrite:
        """``data``'s Parquet files for a ``mode`` write on ``snapshot`` (latest by default),
        not committed (``stage.stage`` with varlake's Arrow writer)."""
        if mode not in ("append", "overwrite"):
            raise TableError(f"{self.root}: write mode must be 'append' or 'overwrite', not {mode!r}")
        snapshot = snapshot or self.snapshot()
        return stage(ArrowFiles(self.storage, evolve=evolve), StageTarget.of(self.root, mode, snapshot), data).pending

    # --- transaction ------------------------------------------------------------------------

    def commit(self, pending: PendingWrite, *, app_id: str | None = None, app_version: int | None = None) -> Committed:
        return commit_write(self.log, pending, app_id=app_id, app_version=app_version)

    def commit_actions(
        self,
        actions: Sequence[Any],
        mode: str,
        snapshot: Snapshot,
        *,
        app_id: str | None = None,
        app_version: int | None = None,
        num_rows: int | None = None,
        operation: str = "WRITE",
    ) -> CommitResult:
        return commit_actions(
            self.log, actions, mode, snapshot,
            app_id=app_id, app_version=app_version, num_rows=num_rows, operation=operation,
        )
