"""``Table``: the user-facing Delta table -- create, open, append, overwrite, scan.

Built on the table layer's API: ``DeltaLog`` for the log, ``io.parquet_write`` for
data files (shredded when ``delta.enableVariantShredding=true``), ``delta.stats`` for
statistics from the written footers, and ``read`` for planning and reading scans.

The shredding schema of each Variant column lives in the table property
``varlake.shredding.<column>`` (Spark DDL). It is inferred from the first data
written, reused by later writes, and evolved in the same commit when the data
changes, so the files of one table share one layout.
"""

from __future__ import annotations

import datetime as _dt
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc

from varlake.delta.actions import AddFile, Metadata, Txn
from varlake.delta.config import is_true
from varlake.delta.paths import relative_data_path
from varlake.delta.ddl import as_struct_type
from varlake.delta.schema import PrimitiveType, StructType, VariantType, to_arrow_schema
from varlake.delta.snapshot import Snapshot
from varlake.delta.stats import DEFAULT_NUM_INDEXED_COLS, leaf_columns, stats_json
from varlake.delta.table_log import DeltaLog
from varlake.delta.transaction import CommitResult
from varlake.errors import SchemaParseError, TableError
from varlake.expr import Predicate
from varlake.io.parquet_write import write_parquet
from varlake.io.storage import LocalStorage, Storage
from varlake.read import ScanPlan, plan_scan, read_tasks
from varlake.shred.infer import evolve
from varlake.shred.schema import ShreddingSchema
from varlake.variant import Variant

SHREDDING_PROPERTY = "varlake.shredding."
ENABLE_SHREDDING = "delta.enableVariantShredding"
NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
SAMPLE_ROWS = 100_000
WriteMode = Literal["append", "overwrite"]


@dataclass(frozen=True)
class Scan:
    """An immutable scan: ``filter``/``select`` return new scans; reading is separate."""

    table: "Table"
    filter: str | Predicate | None = None
    columns: tuple[str, ...] | None = None
    version: int | None = None
    paths: Mapping[str, tuple[str, ...]] | None = None

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
        """The files to read after skipping (and those skipped)."""
        snapshot = self.table.snapshot(self.version)
        return plan_scan(snapshot, self.table.log.root_location, self.filter)

    def to_arrow(self) -> pa.Table:
        return read_tasks(self.plan(), self.table.open_file, self.columns, self.paths)

    def to_pandas(self) -> Any:
        return self.to_arrow().to_pandas()


class Table:
    """A Delta table with Variant support at ``path`` (local filesystem by default)."""

    def __init__(self, path: str | os.PathLike[str], *, storage: Storage | None = None) -> None:
        self.storage = storage or LocalStorage()
        self.path = os.path.abspath(os.fspath(path)) if storage is None else os.fspath(path)
        self.log = DeltaLog(self.storage, self.path)
        self.log.latest_version()  # TableNotFoundError early

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
        exist_ok: bool = False,
    ) -> "Table":
        """Create a table (``schema`` as DDL text, an Arrow schema or a StructType)."""
        struct = as_struct_type(schema)
        for name in partition_by:
            try:
                t = struct.field(name).type
            except (KeyError, SchemaParseError):
                raise TableError(f"partition column {name!r} is not in the schema") from None
            if not isinstance(t, PrimitiveType):
                raise TableError(f"partition column {name!r} has type {t.to_json()}; only primitive types can partition")
        store = storage or LocalStorage()
        root = os.path.abspath(os.fspath(path)) if storage is None else os.fspath(path)
        log = DeltaLog(store, root)
        try:
            log.create(struct, partition_by, dict(properties or {}))
        except TableError:
            if not exist_ok:
                raise
        return cls(root, storage=storage)

    # --- state ----------------------------------------------------------------------------

    def snapshot(self, version: int | None = None, timestamp: Any = None) -> Snapshot:
        return self.log.snapshot(version, timestamp)

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
        props = (snapshot or self.snapshot()).properties
        return {
            key[len(SHREDDING_PROPERTY) :]: ShreddingSchema.parse(value)
            for key, value in props.items()
            if key.startswith(SHREDDING_PROPERTY) and value
        }

    def history(self, limit: int | None = None) -> list[Any]:
        return self.log.history(limit)

    def files(self, filter: str | Predicate | None = None, version: int | None = None) -> list[AddFile]:
        """Live data files (after skipping when a filter is given)."""
        return [t.add for t in plan_scan(self.snapshot(version), self.log.root_location, filter).tasks]

    def open_file(self, relative_path: str) -> str:
        """Where the data file at ``relative_path`` (decoded, relative to the root) can be read."""
        return self.storage.location(f"{self.path}/{relative_path}")

    def data_file(self, add: AddFile) -> str:
        """Where the data file of an ``add`` action can be read (its logged path decoded and
        checked to stay inside the table root)."""
        return self.open_file(relative_data_path(add.path, self.log.root_location, f"add {add.path!r}"))

    def scan(
        self,
        filter: str | Predicate | None = None,
        columns: Sequence[str] | None = None,
        version: int | None = None,
        paths: Mapping[str, Sequence[str]] | None = None,
    ) -> Scan:
        """A scan: ``filter`` (SQL text or expression), ``columns``, Variant ``paths``
        (``{"v": ["$.a"]}``), ``version`` for time travel. Call ``.to_arrow()``."""
        return Scan(
            self,
            filter,
            tuple(columns) if columns is not None else None,
            version,
            {c: tuple(p) for c, p in paths.items()} if paths else None,
        )

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
        snapshot = self.snapshot()
        table = to_arrow_table(data, snapshot.schema)
        metadata = self._evolved_metadata(snapshot, table)
        layouts = self.shredding_schemas_for(metadata, snapshot.schema)
        adds = self._write_files(snapshot, table, layouts)
        actions: list[Any] = []
        if metadata is not snapshot.metadata:
            actions.append(metadata)
        actions.extend(adds)
        result = self.commit_files(actions, mode, snapshot, app_id=app_id, app_version=app_version, num_rows=table.num_rows)
        return result.version

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
        """Commit data files written for this table (``AddFile``s, and a ``Metadata`` change).

        ``overwrite`` removes every file of ``snapshot``; a concurrent change to those files
        makes the commit fail with ``CommitConflictError`` and leaves the table as it was.
        """
        snapshot = snapshot or self.snapshot()
        body = list(actions)
        now = _now_ms()
        if mode == "overwrite":
            body.extend(add.remove(now) for add in snapshot.files)
        elif mode != "append":
            raise TableError(f"write mode must be 'append' or 'overwrite', not {mode!r}")
        if app_id is not None:
            if app_version is None:
                raise TableError("app_id needs app_version")
            body.append(Txn(app_id, app_version, now))
        params = {"mode": "Overwrite" if mode == "overwrite" else "Append", "partitionBy": list(snapshot.partition_columns)}
        metrics = {"numFiles": str(sum(isinstance(a, AddFile) for a in body))}
        if num_rows is not None:
            metrics["numOutputRows"] = str(num_rows)
        return self.log.commit(
            body, operation, snapshot.version, params, commit_info={"operationMetrics": metrics}
        )

    def file_stats_json(self, relative_path: str, schema: StructType | None = None) -> str:
        """Delta stats of a data file in this table, from its footer (used by the Spark writer)."""
        import pyarrow.parquet as pq

        snapshot = self.snapshot()
        meta = pq.read_metadata(self.open_file(relative_path))
        return stats_json(meta, schema or snapshot.schema, _indexed_cols(snapshot.properties))

    # --- maintenance ------------------------------------------------------------------------------

    def checkpoint(self) -> str:
        return self.log.checkpoint()

    def vacuum(self, retention_hours: float = 168, *, dry_run: bool = False, unsafe_retention: bool = False) -> list[str]:
        """Delete files no version inside the retention references (see ``DeltaLog.vacuum``)."""
        return self.log.vacuum(retention_hours, dry_run=dry_run, unsafe_retention=unsafe_retention)

    # --- internals -------------------------------------------------------------------------------------

    def shredding_schemas_for(self, metadata: Metadata, schema: StructType) -> dict[str, ShreddingSchema | None]:
        """Layout per Variant column for new files: None (unshredded) unless shredding is on."""
        variants = [".".join(p) for p, t in leaf_columns(schema) if isinstance(t, VariantType)]
        if not is_true(metadata.configuration, ENABLE_SHREDDING):
            return {v: None for v in variants}
        cfg = metadata.configuration
        return {v: ShreddingSchema.parse(cfg[SHREDDING_PROPERTY + v]) if cfg.get(SHREDDING_PROPERTY + v) else None for v in variants}

    def evolve_shredding(
        self, samples: Mapping[str, Any], snapshot: Snapshot | None = None
    ) -> Metadata:
        """The table metadata with each Variant column's shredding schema inferred or evolved
        from ``samples`` (dotted column name -> Arrow Variant array or Variants).

        Returns the snapshot's own ``Metadata`` object when nothing changes (or shredding is
        off), so callers commit a metadata action only when needed. Schemas are kept at
        stable widths (``stable_widths``) so that ordinary data changes do not change the
        layout of new files.
        """
        snapshot = snapshot or self.snapshot()
        metadata = snapshot.metadata
        if not is_true(metadata.configuration, ENABLE_SHREDDING):
            return metadata
        cfg = dict(metadata.configuration)
        changed = False
        for name, sample in samples.items():
            current = cfg.get(SHREDDING_PROPERTY + name) or None
            text = evolve_stable_ddl(current, sample)
            if text != (current or ""):
                cfg[SHREDDING_PROPERTY + name] = text
                changed = True
        return replace(metadata, configuration=cfg) if changed else metadata

    def _evolved_metadata(self, snapshot: Snapshot, table: pa.Table) -> Metadata:
        if table.num_rows == 0:
            return snapshot.metadata
        samples = {}
        for path, t in leaf_columns(snapshot.schema):
            if isinstance(t, VariantType):
                column = _column_at(table, path)
                samples[".".join(path)] = column.slice(0, SAMPLE_ROWS) if len(column) > SAMPLE_ROWS else column
        return self.evolve_shredding(samples, snapshot)

    def _write_files(self, snapshot: Snapshot, table: pa.Table, layouts: Mapping[str, ShreddingSchema | None]) -> list[AddFile]:
        partition_columns = list(snapshot.partition_columns)
        schema = snapshot.schema
        adds = []
        for values, part in _partitions(table, partition_columns):
            if part.num_rows == 0:
                continue
            data = part.drop_columns(partition_columns) if partition_columns else part
            directory = "/".join(f"{c}={_escape(_partition_text(v, schema.field(c).type))}" for c, v in zip(partition_columns, values))
            name = f"part-{uuid.uuid4()}.c000.zstd.parquet"
            rel = f"{directory}/{name}" if directory else name
            target = self.open_file(rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shredding = {c: s for c, s in layouts.items() if s is not None and c.split(".")[0] in data.column_names}
            result = write_parquet(data, target, shredding=shredding or None, variant_columns=[c for c in layouts if c.split(".")[0] in data.column_names])
            adds.append(
                AddFile(
                    path=quote(rel),
                    size=result.size,
                    partition_values={c: _partition_text(v, schema.field(c).type) for c, v in zip(partition_columns, values)},
                    modification_time=_now_ms(),
                    data_change=True,
                    stats=stats_json(result.metadata, schema, _indexed_cols(snapshot.properties)),
                )
            )
        return adds


# --- helpers -----------------------------------------------------------------------------------------------


def _now_ms() -> int:
    return int(_dt.datetime.now(_dt.timezone.utc).timestamp() * 1000)


def _indexed_cols(properties: Mapping[str, str]) -> int:
    try:
        return int(properties.get(NUM_INDEXED_COLS, DEFAULT_NUM_INDEXED_COLS))
    except ValueError:
        raise TableError(f"{NUM_INDEXED_COLS} must be an integer, got {properties[NUM_INDEXED_COLS]!r}") from None


def evolve_stable_ddl(current: str | None, sample: Any) -> str:
    """The DDL a table stores for a Variant column after seeing ``sample`` ("" = unshredded):
    ``current`` evolved (or inferred when None), at stable widths."""
    new = evolve(current, sample)
    return ShreddingSchema(stable_widths(new.arrow_type)).ddl if new is not None else ""


def num_indexed_cols(properties: Mapping[str, str]) -> int:
    """``delta.dataSkippingNumIndexedCols`` (default 32); a bad value is a named error."""
    return _indexed_cols(properties)


def stable_widths(t: pa.DataType) -> pa.DataType:
    """A shredding type with integers as int64 and decimals at precision 18 or 38.

    Inference picks the narrowest widths for one sample; a table wants widths that the
    next batch will also fit, so its files keep one layout.
    """
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, stable_widths(f.type), f.nullable) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(pa.field(t.value_field.name, stable_widths(t.value_type), t.value_field.nullable))
    if pa.types.is_integer(t):
        return pa.int64()
    if pa.types.is_decimal(t):
        precision = 18 if t.precision <= 18 and t.scale <= 18 else 38
        return pa.decimal128(precision, t.scale)
    return t


def _column_at(table: pa.Table, path: tuple[str, ...]) -> pa.ChunkedArray:
    column = table.column(path[0])
    for name in path[1:]:
        column = pa.chunked_array([pc.struct_field(chunk, name) for chunk in column.chunks], type=column.type.field(name).type)
    return column


def _escape(text: str | None) -> str:
    """Hive-style directory escaping of a partition value (NULL -> __HIVE_DEFAULT_PARTITION__)."""
    if text is None:
        return "__HIVE_DEFAULT_PARTITION__"
    return "".join(f"%{ord(c):02X}" if c in '"#%\'*/:=?\\\x7f{[]^' or ord(c) < 0x20 else c for c in text)


def _partition_text(value: Any, dtype: Any) -> str | None:
    """A partition value as Delta serialises it."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return value.isoformat(" ")
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return str(value)


def _partitions(table: pa.Table, columns: Sequence[str]) -> list[tuple[tuple[Any, ...], pa.Table]]:
    if not columns:
        return [((), table)]
    keys = table.select(list(columns)).group_by(list(columns)).aggregate([]).to_pylist()
    out = []
    for key in keys:
        mask = None
        for c in columns:
            cond = pc.is_null(table.column(c)) if key[c] is None else pc.equal(table.column(c), pa.scalar(key[c], table.schema.field(c).type))
            cond = pc.fill_null(cond, False)
            mask = cond if mask is None else pc.and_(mask, cond)
        out.append((tuple(key[c] for c in columns), table.filter(mask)))
    return out


def _variant_array(values: Sequence[Any]) -> pa.Array:
    """Variants (or Python values, or None) as the Arrow struct<metadata, value>."""
    metas: list[bytes | None] = []
    vals: list[bytes | None] = []
    mask = []
    for v in values:
        if v is None:
            metas.append(b"\x01\x00\x00")
            vals.append(b"\x00")
            mask.append(True)
            continue
        variant = v if isinstance(v, Variant) else Variant.from_python(v)
        metas.append(variant.metadata)
        vals.append(variant.value)
        mask.append(False)
    from varlake.delta.schema import variant_arrow_type

    t = variant_arrow_type()
    return pa.StructArray.from_arrays(
        [pa.array(metas, pa.binary()), pa.array(vals, pa.binary())], fields=list(t), mask=pa.array(mask, pa.bool_())
    )


def to_arrow_table(data: Any, schema: StructType) -> pa.Table:
    """``data`` (Arrow table/batch, pandas frame, or list of dicts) in the table's Arrow schema.

    Variant columns may hold ``struct<metadata, value>`` already, or ``Variant``
    objects / plain Python values, which are encoded.
    """
    target = to_arrow_schema(schema)
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, list):
        keys: dict[str, None] = {}
        for row in data:
            if not isinstance(row, Mapping):
                raise TableError(f"rows must be mappings of column name to value, got {type(row).__name__}")
            keys.update(dict.fromkeys(row))
        data = {name: [row.get(name) for row in data] for name in keys}
    if isinstance(data, dict):
        columns = {}
        for name, values in data.items():
            columns[name] = values
        data = columns
    elif not isinstance(data, pa.Table):
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover
            pd = None
        if pd is not None and isinstance(data, pd.DataFrame):
            data = {name: data[name].tolist() for name in data.columns}
        else:
            raise TableError(f"cannot write {type(data).__name__}: pass an Arrow table, a pandas frame or a list of dicts")
    names = data.column_names if isinstance(data, pa.Table) else list(data)
    extra = [n for n in names if n not in target.names]
    if extra:
        raise TableError(f"columns {extra} are not in the table schema {target.names}")
    arrays = []
    for field in target:
        if field.name not in names:
            if not field.nullable:
                raise TableError(f"non-nullable column {field.name!r} is missing")
            arrays.append(pa.nulls(len(data) if isinstance(data, pa.Table) else len(next(iter(data.values()), [])), field.type))
            continue
        column = data.column(field.name) if isinstance(data, pa.Table) else data[field.name]
        is_variant = isinstance(schema.field(field.name).type, VariantType)
        if is_variant and not isinstance(column, (pa.Array, pa.ChunkedArray)):
            arrays.append(_variant_array(list(column)))
            continue
        try:
            arr = column if isinstance(column, (pa.Array, pa.ChunkedArray)) else pa.array(column, type=field.type)
            arrays.append(arr.cast(field.type) if arr.type != field.type else arr)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise TableError(f"column {field.name!r} does not fit type {field.type}: {exc}") from None
    return pa.Table.from_arrays(arrays, schema=target)
