"""``Table``: the user-facing Delta table -- create, open, append, overwrite, scan.

``Table`` is a facade over the table's format (``write.staging.formats.DeltaCore``: the
log's snapshots, files, statistics and deleted rows, staging new files through the one
staging path ``write.staging.stage`` with varlake's Arrow/Parquet writer, and commits),
with scans (``read``), row changes, MERGE, OPTIMIZE and the doctor (``write``) on top;
those jobs take it as a ``write.staging.handle.TableHandle``. The table's storage is
chosen here, once (``locate``), and handed to everything below.

The shredding schema of each Variant column lives in the table property
``varlake.shredding.<column>`` (Spark DDL); see ``varlake.write.staging.shredding``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from varlake.delta.actions import AddFile, Metadata
from varlake.delta.constants import PROP_COMPATIBILITY
from varlake.delta.ddl import as_struct_type
from varlake.delta.schema import StructType, to_arrow_schema
from varlake.delta.snapshot import Snapshot
from varlake.delta.table_log import DeltaLog
from varlake.delta.transaction import CommitResult
from varlake.write.diagnostics.doctor import DEFAULT_EMPTY_THRESHOLD, DEFAULT_SAMPLE
from varlake.errors import TableError, TableExistsError, TableNotFoundError
from varlake.expr import Predicate
from varlake.io.storage import Storage
from varlake.io.uris import storage_for
from varlake.read import ScanPlan, ScanTask, read_tasks
from varlake.shred.schema import ShreddingSchema
from varlake.write import (
    ENABLE_SHREDDING,
    SAMPLE_ROWS,
    SHREDDING_PROPERTY,
    PendingWrite,
    evolve_metadata,
    plan_shredding,
    stored_schemas,
    variant_columns,
)
from varlake.write.staging.formats import DeltaCore
from varlake.write.staging.hudi_format import HudiCore, hudi_slice_merger, is_hudi_table
from varlake.write.staging.stage import to_arrow_table

__all__ = ["ENABLE_SHREDDING", "SAMPLE_ROWS", "SHREDDING_PROPERTY", "Scan", "Table", "TableLocation", "locate", "to_arrow_table"]

WriteMode = Literal["append", "overwrite"]


@dataclass(frozen=True)
class TableLocation:
    """Where a table lives, whether or not it exists yet: the ``storage`` chosen for it and
    its ``root`` as that storage names it (``locate``). Everything below ``Table`` is handed
    these; nothing below chooses a storage of its own."""

    storage: Storage
    root: str

    def log(self) -> DeltaLog:
        return DeltaLog(self.storage, self.root)

    def latest_snapshot(self) -> Snapshot | None:
        """The latest snapshot, None when there is no table yet."""
        log = self.log()
        try:
            log.latest_version()
        except TableNotFoundError:
            return None
        return log.snapshot()


def locate(
    path: str | os.PathLike[str],
    storage: Storage | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> TableLocation:
    """The one place varlake chooses a table's storage: ``storage`` as given (``path`` is
    then the root as that storage names it), else the storage ``path`` names
    (``io.uris.storage_for``): ``s3://``, ``s3a://``, ``gs://``, ``az://``, ``abfss://``,
    ``memory://`` (configured from the environment and ``storage_options``), ``file://`` and
    plain local paths (made absolute). Any other scheme raises ``UnsupportedStorageError``."""
    if storage is not None:
        if storage_options:
            raise TableError(f"{os.fspath(path)}: give storage or storage_options, not both")
        return TableLocation(storage, os.fspath(path))
    chosen, root = storage_for(path, storage_options)
    return TableLocation(chosen, root)


@dataclass(frozen=True)
class Scan:
    """An immutable scan: ``filter``/``select`` return new scans; reading is separate."""

    table: "Table"
    filter: str | Predicate | None = None
    columns: tuple[str, ...] | None = None
    version: int | None = None
    paths: Mapping[str, tuple[str, ...]] | None = None
    #: the snapshot to plan on, held by the caller: no listing of the log to look for a
    #: newer version (``version`` then must be None or its version)
    snapshot: Snapshot | None = None

    def where(self, filter: str | Predicate) -> "Scan":
        return replace(self, filter=filter)

    def select(self, *columns: str) -> "Scan":
        return replace(self, columns=tuple(columns))

    def select_paths(self, column: str, *paths: str) -> "Scan":
        """Also return the Variant at each of ``paths`` of ``column`` (as ``"<column>:<path>"``),
        reading only the Parquet columns those paths need."""
        merged = dict(self.paths or {})
        merged[column] = tuple(merged.get(column, ())) + tuple(paths)
        return replace(self, paths=merged)

    def plan(self) -> ScanPlan:
        """The files to read and those skipped (by partition values, by statistics), and the
        files put back because a cast in the filter could raise on them (``read.plan_scan``)."""
        snapshot = self.snapshot
        if snapshot is None:
            snapshot = self.table.snapshot(self.version)
        elif self.version is not None and self.version != snapshot.version:
            raise TableError(
                f"{self.table.path}: scan of version {self.version} given the snapshot of version {snapshot.version}"
            )
        return self.table.core.plan(snapshot, self.filter)

    def to_arrow(self) -> pa.Table:
        """The rows (deletion vectors applied), Variants typed ``arrow.parquet.variant``."""
        return read_tasks(
            self.plan(), self.table.read_source, self.columns, self.paths, self.table.deleted_rows, arrow_extension=True
        )

    def to_pandas(self, variant: str = "variant") -> Any:
        """A pandas frame; Variants as ``Variant`` objects, ``"json"`` text or ``"struct"``
        dicts (``varlake.read.engines.to_pandas``)."""
        from varlake.read.engines import to_pandas

        return to_pandas(self.to_arrow(), variant)  # type: ignore[arg-type]

    def to_polars(self, variant: str = "struct") -> Any:
        """A Polars frame; Variants as ``"struct"`` or ``"json"`` (``varlake.read.engines.to_polars``)."""
        from varlake.read.engines import to_polars

        return to_polars(self.to_arrow(), variant)  # type: ignore[arg-type]

    def to_duckdb(self, connection: Any, name: str) -> Any:
        """The rows as DuckDB view ``name`` on ``connection``, Variants as ``VARIANT``
        (``varlake.read.engines.to_duckdb``); returns the view's relation."""
        from varlake.read.engines import to_duckdb

        return to_duckdb(self.to_arrow(), connection, name)


class Table:
    """A Delta table with Variant support at ``path`` (local filesystem by default); a Hudi
    table there (``.hoodie/``) is opened read-only (``write.staging.hudi_format.HudiCore``).

    A facade over the table's format (``core``, a ``write.staging.formats.DeltaCore``):
    snapshots, files, staging and commits go through it; ``Table`` adds scans, engines'
    views, row changes, MERGE, OPTIMIZE and the doctor on top. It is the ``TableHandle``
    (``write.staging.handle``) those jobs take."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        storage: Storage | None = None,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        location = locate(path, storage, storage_options)
        self.storage = location.storage
        self.path = location.root
        self.core: Any = DeltaCore(location.storage, location.root)
        self.log: Any = self.core.log
        try:
            self.log.latest_version()  # TableNotFoundError early
        except TableNotFoundError:
            if not is_hudi_table(location.storage, location.root):
                raise
            # a Hudi table (``.hoodie/``): read-only, merge-on-read slices merged
            self.core = HudiCore(location.storage, location.root, merge_slice=hudi_slice_merger())
            self.log = self.core.log

    def __repr__(self) -> str:
        return f"Table({self.path!r})"  # the location only: never a credential

    # --- creating / opening -------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        schema: StructType | pa.Schema | str,
        partition_by: Sequence[str] = (),
        properties: Mapping[str, str] | None = None,
        *,
        storage: Storage | None = None,
        storage_options: Mapping[str, str] | None = None,
        exist_ok: bool = False,
        compatibility: str | None = None,
    ) -> "Table":
        """Create a table (``schema`` as DDL text, an Arrow schema or a StructType).

        With ``delta.columnMapping.mode`` ``name`` or ``id`` in ``properties`` every field
        gets an id and a physical name (``delta.column_mapping.assign_column_mapping``).
        ``compatibility="deltalake"`` (the table property ``varlake.compatibility``) keeps
        the table readable by ``deltalake`` 1.6 and Polars for good: no deletion vectors
        (DELETE/UPDATE/MERGE rewrite files), no shredding, Variant groups unannotated; a
        later change that would break that is refused (``delta.protocol.compatibility``)."""
        if compatibility is not None:
            properties = {**(properties or {}), PROP_COMPATIBILITY: compatibility}
        struct = as_struct_type(schema)
        location = locate(path, storage, storage_options)
        if is_hudi_table(location.storage, location.root):
            if not exist_ok:
                raise TableExistsError(f"{os.fspath(path)}: a Hudi table is there (.hoodie/); varlake reads it, read-only")
            return cls(location.root, storage=location.storage)
        DeltaCore.create(
            location.storage, location.root, struct, partition_by, properties, exist_ok=exist_ok, where=os.fspath(path)
        )
        return cls(location.root, storage=location.storage)

    # --- state ----------------------------------------------------------------------------

    def snapshot(self, version: int | None = None, timestamp: Any = None) -> Snapshot:
        return self.core.snapshot(version, timestamp)

    @property
    def version(self) -> int:
        return self.snapshot().version

    @property
    def schema(self) -> StructType:
        return self.snapshot().schema

    @property
    def arrow_schema(self) -> pa.Schema:
        return to_arrow_schema(self.schema)

    @property
    def protocol(self) -> Any:
        return self.snapshot().protocol

    @property
    def properties(self) -> Mapping[str, str]:
        return self.snapshot().properties

    @property
    def partition_columns(self) -> tuple[str, ...]:
        return tuple(self.snapshot().partition_columns)

    def shredding_schemas(self, snapshot: Snapshot | None = None) -> dict[str, ShreddingSchema]:
        """The stored shredding schema of each Variant column (by dotted name)."""
        snapshot = snapshot or self.snapshot()
        stored = stored_schemas(snapshot.properties, variant_columns(snapshot.schema))
        return {name: ShreddingSchema.parse(ddl) for name, ddl in stored.items() if ddl}

    def history(self, limit: int | None = None) -> list[Any]:
        return self.log.history(limit)

    def files(self, filter: str | Predicate | None = None, version: int | None = None) -> list[AddFile]:
        """Live data files (after skipping when a filter is given); a file's
        ``deletion_vector`` says which of its rows are deleted (``Scan.plan`` gives them parsed)."""
        return [t.add for t in self.core.plan(self.snapshot(version), filter).tasks]

    def open_file(self, relative_path: str) -> str:
        """Where the data file at ``relative_path`` (decoded, relative to the root) can be read
        or written; a path that links out of the root is refused (``Storage.location_inside``)."""
        return self.core.open_file(relative_path)

    def read_source(self, relative_path: str, size: int | None = None) -> Any:
        """What pyarrow reads the data file at ``relative_path`` from: its local path, or a
        file object on an object store (``size``, the log's ``add.size``, spares looking it up)."""
        return self.core.read_source(relative_path, size)

    def deleted_rows(self, task: ScanTask) -> np.ndarray:
        """The row indexes (sorted ``uint64``) the deletion vector of a scan task deletes
        (empty without one); its file is read through ``open_file``'s link policy, and a
        corrupt or missing one raises ``CorruptDeletionVectorError`` naming the table,
        the data file and the DV."""
        return self.core.deleted_rows(task)

    def data_file(self, add: AddFile) -> str:
        """Where the data file of an ``add`` action can be read (its logged path decoded and
        checked to stay inside the table root)."""
        return self.core.data_file(add)

    def scan(
        self,
        filter: str | Predicate | None = None,
        columns: Sequence[str] | None = None,
        version: int | None = None,
        paths: Mapping[str, Sequence[str]] | None = None,
        snapshot: Snapshot | None = None,
    ) -> Scan:
        """A scan: ``filter`` (SQL text or expression), ``columns``, Variant ``paths``
        (``{"v": ["$.a"]}``), ``version`` for time travel, or a ``snapshot`` of this table the
        caller holds (planned as it is, the log not listed again). Call ``.to_arrow()``."""
        return Scan(
            self,
            filter,
            tuple(columns) if columns is not None else None,
            version,
            {c: tuple(p) for c, p in paths.items()} if paths else None,
            snapshot,
        )

    def to_duckdb(self, connection: Any, name: str, version: int | None = None) -> Any:
        """The snapshot at ``version`` (latest by default; deletion vectors applied) as the
        DuckDB view ``name`` on ``connection`` (None: a new in-memory database), Variant
        columns as DuckDB ``VARIANT``; returns the view's relation."""
        return self.scan(version=version).to_duckdb(connection, name)

    def to_polars(self, variant: str = "struct", version: int | None = None) -> Any:
        """The snapshot at ``version`` as a Polars frame; Variants as ``"struct"``
        (``Struct{metadata, value}``, lossless) or ``"json"`` (Spark's JSON text)."""
        return self.scan(version=version).to_polars(variant)

    # --- writing ----------------------------------------------------------------------------

    def append(self, data: Any, *, app_id: str | None = None, app_version: int | None = None) -> int | None:
        """Append rows; returns the new version (None if ``app_id``/``app_version`` was already committed)."""
        return self.write(data, "append", app_id=app_id, app_version=app_version)

    def overwrite(self, data: Any, *, app_id: str | None = None, app_version: int | None = None) -> int | None:
        """Replace all rows; returns the new version."""
        return self.write(data, "overwrite", app_id=app_id, app_version=app_version)

    def write(
        self, data: Any, mode: WriteMode, *, app_id: str | None = None, app_version: int | None = None
    ) -> int | None:
        """Write ``data`` as one new version (``mode``: ``append`` or ``overwrite``): Parquet
        files here, the shredding policy and the commit in ``varlake.write``."""
        snapshot = self.snapshot()
        if app_id is not None and app_version is not None and (snapshot.app_version(app_id) or -1) >= app_version:
            return None
        pending = self.stage(data, mode, snapshot)
        return self.core.commit(pending, app_id=app_id, app_version=app_version).version

    def stage(
        self, data: Any, mode: WriteMode = "append", snapshot: Snapshot | None = None, *, evolve: bool = True
    ) -> PendingWrite:
        """Write ``data``'s Parquet files for a ``mode`` write based on ``snapshot`` (latest by
        default) without committing them: commit with ``varlake.write.commit_write``.
        ``evolve=False`` keeps the stored shredding schemas (no samples: OPTIMIZE's rewrites)."""
        return self.core.stage(data, mode, snapshot, evolve=evolve)

    def commit_files(
        self,
        actions: Sequence[Any],
        mode: WriteMode,
        snapshot: Snapshot | None = None,
        *,
        app_id: str | None = None,
        app_version: int | None = None,
        num_rows: int | None = None,
        operation: str = "WRITE",
    ) -> CommitResult:
        """Commit data files written for this table (``AddFile``s, and a ``Metadata`` change);
        see ``varlake.write.commit_actions``."""
        return self.core.commit_actions(
            actions, mode, snapshot or self.snapshot(),
            app_id=app_id, app_version=app_version, num_rows=num_rows, operation=operation,
        )

    def file_stats_json(self, relative_path: str, schema: StructType | None = None) -> str:
        """Delta stats of a data file in this table, from its footer."""
        return self.core.file_stats(relative_path, schema)

    # --- maintenance ------------------------------------------------------------------------------

    def checkpoint(self) -> str:
        return self.log.checkpoint()

    def vacuum(self, retention_hours: float = 168, *, dry_run: bool = False, unsafe_retention: bool = False) -> list[str]:
        """Delete files no version inside the retention references (see ``DeltaLog.vacuum``)."""
        return self.log.vacuum(retention_hours, dry_run=dry_run, unsafe_retention=unsafe_retention)

    def optimize(
        self,
        where: str | Predicate | None = None,
        target_file_size: int | str | None = None,
        cluster_by: Sequence[str] | None = None,
        dry_run: bool = False,
    ) -> Any:
        """OPTIMIZE: bin-pack small files, rewrite files of another Variant layout into the
        table's stable shredding schema, purge deletion vectors, optionally cluster rows by
        columns and Variant paths (``cluster_by=["v:a.b::string"]``, remembered by the table).
        ``where``: a partition predicate. One commit with ``dataChange=false``; returns an
        ``OptimizeResult`` (``varlake.write.maintenance.optimize``)."""
        from varlake.write.maintenance.optimize import optimize

        return optimize(self, where, target_file_size, cluster_by, dry_run)

    def doctor(self, *, sample: int | None = DEFAULT_SAMPLE, empty_threshold: float = DEFAULT_EMPTY_THRESHOLD, version: int | None = None) -> Any:
        """How well the Variant data is shredded: per column and path the shares held typed,
        residual and missing, type conflicts, drifted files, schema suggestions and what
        ``optimize`` would change (a ``DoctorReport``; see ``varlake.write.diagnostics.doctor``)."""
        from varlake.write.diagnostics.doctor import diagnose

        return diagnose(self, sample=sample, empty_threshold=empty_threshold, version=version)

    # --- internals -------------------------------------------------------------------------------------

    def shredding_schemas_for(self, metadata: Metadata, schema: StructType) -> dict[str, ShreddingSchema | None]:
        """Layout per Variant column for new files: None (unshredded) unless shredding is on."""
        return plan_shredding(variant_columns(schema), metadata.configuration, "auto").schemas()

    def evolve_shredding(self, samples: Mapping[str, Any], snapshot: Snapshot | None = None) -> Metadata:
        """The table metadata with each Variant column's shredding schema inferred or evolved
        from ``samples`` (see ``varlake.write.evolve_metadata``)."""
        return evolve_metadata((snapshot or self.snapshot()).metadata, samples)

    # --- row-level changes (varlake.write.changes.rows) ------------------------------------------

    def delete(self, where: str | Predicate | None = None, *, retries: int = 0) -> Any:
        """DELETE the rows ``where`` matches (all rows when None): by deletion vector when the
        table has ``delta.enableDeletionVectors=true``, else by rewriting their files. One
        commit; returns a ``RowChangeResult`` (``version`` None when no row matched).
        ``retries`` re-plans after a conflict with a concurrent change."""
        from varlake.write.changes.rows import delete

        return delete(self, where, retries=retries)

    def update(
        self,
        *args: Any,
        where: str | Predicate | None = None,
        set: Mapping[str, str] | None = None,
        retries: int = 0,
    ) -> Any:
        """UPDATE the rows ``where`` matches (all when None): ``set`` maps columns to SQL
        expressions of the old row (``{"n": "n + 1", "v": "parse_json('{}')"}``). Updated
        rows are written as new files in the table's layout, the old ones retired as
        ``delete`` does; returns a ``RowChangeResult``. Positional arguments are told apart
        by type (the mapping is ``set``): ``update(where, set)`` and ``update(set, where=...)``."""
        from varlake.write.changes.rows import update

        if len(args) > 2:
            raise TableError(f"{self.path}: update takes where and set, got {len(args)} positional arguments")
        for arg in args:
            if isinstance(arg, Mapping):
                if set is not None:
                    raise TableError(f"{self.path}: update got set twice")
                set = arg
            elif arg is not None:
                if where is not None:
                    raise TableError(f"{self.path}: update got where twice")
                where = arg
        if set is None:
            raise TableError(f"{self.path}: update needs set={{column: SQL expression}}")
        return update(self, set, where, retries=retries)

    def merge(
        self, source: Any, on: str, source_alias: str = "s", target_alias: str = "t", *, retries: int = 0
    ) -> Any:
        """A MERGE of ``source`` (Arrow, pandas or a list of dicts) into this table on ``on``
        (``"t.id = s.id"``): add ``when_*`` clauses, then ``.execute()``
        (``varlake.write.changes.merge.MergeBuilder``; returns a ``RowChangeResult``)."""
        from varlake.delta.schema import VariantType
        from varlake.write.changes.merge import MergeBuilder
        from varlake.write.staging.inputs import source_table

        schema = self.snapshot().schema
        variants = [f.name for f in schema.fields if isinstance(f.type, VariantType)]
        arrow = source_table(source, variants, self.path, to_arrow_schema(schema))
        return MergeBuilder(self, arrow, on, source_alias, target_alias, retries=retries)
