"""Write Arrow tables with Variant columns to Parquet, shredded or not, readable as VARIANT.

A Variant column is a ``struct<metadata: binary, value: binary>`` (found automatically at
the top level and inside structs, or named with ``variant_columns``). Each one is written
either unshredded (``value`` required) or shredded by a schema (given per column, or
inferred from the data with ``shredding="auto"``).

pyarrow cannot write the Parquet ``VARIANT`` annotation, so two things make other engines
see Variant without being handed a schema:
* Spark's row metadata key ``org.apache.spark.sql.parquet.row.metadata`` holds the Spark
  schema JSON with ``"variant"`` types (Spark reads its schema from there first);
* the footer is patched afterwards (``parquet_annotate``) so that each Variant group's
  ``SchemaElement`` carries ``LogicalType.VARIANT`` (DuckDB and parquet-java use it).

Shredded leaves use the spec's Parquet types: int8/int16 are INT32 with INT(8/16)
annotations, decimals are INT32/INT64/FIXED by precision (``store_decimal_as_integer``),
UUID is FIXED_LEN_BYTE_ARRAY(16) UUID, timestamps keep their unit and UTC flag and TIME
is TIME(false, MICROS).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from varlake.errors import ShreddingError, StorageError
from varlake.io.locations import is_object_store_uri
from varlake.io.parquet_annotate import annotate_variant_bytes, annotate_variant_columns
from varlake.io.storage import LocalStorage, Storage, temporary_name
from varlake.shred.infer import infer_shredding_schema
from varlake.shred.schema import ShreddingSchema, find_variant_columns, is_variant_struct
from varlake.shred.shred import shred, unshredded
from varlake.shred.variant_columns import without_variant_extension

SPARK_ROW_METADATA = b"org.apache.spark.sql.parquet.row.metadata"
# Keys of the input table's metadata that would describe the wrong file if copied.
_STALE_KEYS = {SPARK_ROW_METADATA, b"ARROW:schema"}
DEFAULT_ROW_GROUP_ROWS = 1024 * 1024
DEFAULT_ROW_GROUP_BYTES = 128 * 1024 * 1024
AUTO_SAMPLE_ROWS = 100_000

ColumnPath = tuple[str, ...]
SchemaSpec = ShreddingSchema | pa.DataType | str | None


@dataclass(frozen=True)
class WriteResult:
    """What ``write_parquet`` wrote: where, how many rows, the layout of each Variant column."""

    path: str
    num_rows: int
    size: int
    shredding: dict[str, ShreddingSchema | None]
    metadata: pq.FileMetaData = field(repr=False)

    @property
    def variant_columns(self) -> list[str]:
        return list(self.shredding)


def dotted(path: ColumnPath) -> str:
    return ".".join(path)


def _as_path(col: str | Sequence[str]) -> ColumnPath:
    return tuple(col.split(".")) if isinstance(col, str) else tuple(col)


def _resolve_shredding(
    table: pa.Table, columns: list[ColumnPath], shredding: Mapping[Any, SchemaSpec] | Literal["auto"] | None
) -> dict[ColumnPath, ShreddingSchema | None]:
    """The layout of each Variant column; a column that arrives shredded keeps its own."""
    if isinstance(shredding, str) and shredding != "auto":
        raise ShreddingError(f"shredding must be None, 'auto' or a mapping, got {shredding!r}")
    chosen: dict[ColumnPath, SchemaSpec] = {}
    if isinstance(shredding, Mapping):
        chosen = {_as_path(k): v for k, v in shredding.items()}
        unknown = [dotted(k) for k in chosen if k not in columns]
        if unknown:
            raise ShreddingError(
                f"shredding names columns that are not Variant columns: {unknown} (Variant columns: {[dotted(c) for c in columns]})"
            )
    out: dict[ColumnPath, ShreddingSchema | None] = {}
    for c in columns:
        arr = _column(table, c)
        existing = ShreddingSchema.from_physical(arr.type)
        spec = chosen.get(c)
        if spec is not None:
            out[c] = ShreddingSchema.parse(spec)
            if existing is not None and existing != out[c]:
                raise ShreddingError(f"{dotted(c)}: column is already shredded with a different schema ({existing.ddl})")
        elif existing is not None:
            out[c] = existing
        elif shredding == "auto":
            out[c] = infer_shredding_schema(_sample(arr))
        else:
            out[c] = None
    return out


def _sample(arr: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A deterministic, evenly strided sample for inference (all rows when small)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if n <= AUTO_SAMPLE_ROWS:
        return arr
    step = n / AUTO_SAMPLE_ROWS
    return arr.take(pa.array([int(i * step) for i in range(AUTO_SAMPLE_ROWS)], pa.int64()))


def _column(table: pa.Table, path: ColumnPath) -> pa.ChunkedArray | pa.Array:
    arr: Any = table.column(path[0])
    for name in path[1:]:
        arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        arr = _struct_child(arr, name)
    return arr


def _struct_child(arr: pa.StructArray, name: str) -> pa.Array:
    """Child ``name`` with the parent's nulls applied (``field`` ignores them)."""
    child = arr.field(name)
    if arr.null_count:
        child = pc.if_else(arr.is_valid(), child, pa.nulls(len(arr), child.type))
    return child


def _replace(arr: pa.Array, new_for: dict[ColumnPath, pa.Array], prefix: ColumnPath) -> pa.Array:
    """Rebuild ``arr`` (at ``prefix``) with the Variant columns below it replaced."""
    if prefix in new_for:
        return new_for[prefix]
    if not pa.types.is_struct(arr.type) or not any(p[: len(prefix)] == prefix for p in new_for):
        return arr
    children = []
    fields = []
    for i in range(arr.type.num_fields):
        f = arr.type.field(i)
        child = _replace(arr.field(i), new_for, prefix + (f.name,))
        children.append(child)
        fields.append(pa.field(f.name, child.type, nullable=f.nullable, metadata=f.metadata))
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def physical_table(table: pa.Table, layouts: Mapping[ColumnPath, ShreddingSchema | None]) -> pa.Table:
    """``table`` with every Variant column in its written layout: shredded by its schema,
    unshredded when the schema is None, or kept as it is when the input is already shredded."""
    new_for: dict[ColumnPath, pa.Array] = {}
    for path, sch in layouts.items():
        arr = _column(table, path)
        if ShreddingSchema.from_physical(arr.type) is not None:
            new_for[path] = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        elif sch is None:
            new_for[path] = unshredded(arr, dotted(path))
        else:
            new_for[path] = shred(arr, sch, column=dotted(path))
    columns = []
    fields = []
    for i, f in enumerate(table.schema):
        col = table.column(i)
        if any(p[0] == f.name for p in new_for):
            col = _replace(col.combine_chunks(), new_for, (f.name,))
            fields.append(pa.field(f.name, col.type, nullable=f.nullable, metadata=f.metadata))
        else:
            fields.append(f)
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=table.schema.metadata))


# --- Spark's schema JSON ----------------------------------------------------------------------------


class _NoSparkType(Exception):
    pass


def _spark_type(t: pa.DataType, path: ColumnPath, variants: set[ColumnPath]) -> Any:
    if path in variants:
        return "variant"
    simple = {
        pa.bool_(): "boolean", pa.int8(): "byte", pa.int16(): "short", pa.int32(): "integer", pa.int64(): "long",
        pa.float32(): "float", pa.float64(): "double", pa.string(): "string", pa.large_string(): "string",
        pa.binary(): "binary", pa.large_binary(): "binary", pa.date32(): "date",
    }
    if t in simple:
        return simple[t]
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz else "timestamp_ntz"
    if pa.types.is_decimal(t) and t.precision <= 38:
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [_spark_field(t.field(i), path, variants) for i in range(t.num_fields)]}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "array", "elementType": _spark_type(t.value_type, path + ("element",), variants), "containsNull": t.value_field.nullable}
    if pa.types.is_map(t):
        return {
            "type": "map",
            "keyType": _spark_type(t.key_type, path + ("key",), variants),
            "valueType": _spark_type(t.item_type, path + ("value",), variants),
            "valueContainsNull": t.item_field.nullable,
        }
    raise _NoSparkType(f"{dotted(path)}: {t}")


def _spark_field(f: pa.Field, prefix: ColumnPath, variants: set[ColumnPath]) -> dict[str, Any]:
    path = prefix + (f.name,)
    return {"name": f.name, "type": _spark_type(f.type, path, variants), "nullable": f.nullable, "metadata": {}}


def spark_schema_json(schema: pa.Schema, variant_columns: Sequence[ColumnPath]) -> str | None:
    """Spark's schema JSON for the logical table (Variant columns as ``"variant"``), or
    None when a column has no Spark type (Spark then infers from the Parquet schema)."""
    variants = set(variant_columns)
    try:
        fields = [_spark_field(f, (), variants) for f in schema]
    except _NoSparkType:
        return None
    return json.dumps({"type": "struct", "fields": fields}, separators=(",", ":"))


# --- the writer --------------------------------------------------------------------------------------------


def rows_per_group(table: pa.Table, row_group_size: int | None, row_group_bytes: int) -> int:
    """Rows per row group: ``row_group_size`` (default 1Mi rows), capped so that a group
    holds about ``row_group_bytes`` of Arrow data."""
    rows = row_group_size or DEFAULT_ROW_GROUP_ROWS
    if table.num_rows and table.nbytes:
        per_row = table.nbytes / table.num_rows
        rows = min(rows, max(1, int(row_group_bytes / per_row)))
    return max(1, rows)


def write_parquet(
    table: pa.Table,
    path: str | os.PathLike[str],
    shredding: Mapping[Any, SchemaSpec] | Literal["auto"] | None = None,
    *,
    row_group_size: int | None = None,
    row_group_bytes: int = DEFAULT_ROW_GROUP_BYTES,
    compression: str = "zstd",
    compression_level: int | None = None,
    variant_columns: Sequence[str | Sequence[str]] | None = None,
    write_page_index: bool = False,
    storage: Storage | None = None,
    storage_options: Mapping[str, str] | None = None,
    annotate_variant: bool = True,
) -> WriteResult:
    """Write ``table`` to ``path`` with its Variant columns shredded as asked.

    ``shredding``: None (nothing shredded), ``"auto"`` (infer per column from the data) or
    ``{column: schema}`` with schemas as ``ShreddingSchema``, Arrow types or Spark DDL
    (columns not named stay unshredded; columns that arrive already shredded are written as
    they are). Column names are dotted paths (``"nv.v"``) or tuples. Rows per row group are
    ``row_group_size`` (default 1Mi) capped at about ``row_group_bytes`` of Arrow data.
    Raises ``ShreddingError`` for bad requests or data, ``StorageError`` if the file cannot
    be written; nothing is left at ``path`` on failure. With a ``storage`` other than the
    local file system (an object store) the file is encoded in memory and put whole
    (``storage.write``): ``path`` is then a location of that storage. Without ``storage``, an
    object-store URI (``s3://bucket/key.parquet``, ``gs://``, ``az://``, ``memory://``) is
    written to that store, configured from the environment and ``storage_options``.
    ``annotate_variant=False`` leaves Variant groups without the ``VARIANT`` logical type
    (readers that cannot parse it, e.g. Polars 1.44, then see plain structs; Spark's schema
    JSON in the footer still names them Variants).
    """
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    table = without_variant_extension(table)  # arrow.parquet.variant columns are written as their storage
    columns = [_as_path(c) for c in variant_columns] if variant_columns is not None else find_variant_columns(table.schema)
    for c in columns:
        try:
            t = _column(table, c).type
        except KeyError:
            raise ShreddingError(f"no column {dotted(c)!r} in the table") from None
        if not is_variant_struct(t):
            raise ShreddingError(f"column {dotted(c)!r} is not a Variant struct<metadata, value>: {t}")
    layouts = _resolve_shredding(table, columns, shredding)
    out = physical_table(table, layouts)
    metadata = {k: v for k, v in (table.schema.metadata or {}).items() if k not in _STALE_KEYS}
    spark_json = spark_schema_json(table.schema, columns)
    if spark_json is not None:
        metadata[SPARK_ROW_METADATA] = spark_json.encode()
    out = out.replace_schema_metadata(metadata)
    name = os.fspath(path)
    if storage is None and is_object_store_uri(name):
        from varlake.io.uris import storage_for

        storage, name = storage_for(name, storage_options)
    options: dict[str, Any] = {
        "compression": compression,
        "compression_level": compression_level,
        "store_decimal_as_integer": True,
        "write_page_index": write_page_index,
        "write_page_checksum": True,  # CRC32 per page: a corrupted page fails the read, never reads wrong
        "version": "2.6",
    }
    group_rows = rows_per_group(out, row_group_size, row_group_bytes)
    shredding_out = {dotted(c): layouts[c] for c in columns}
    annotated = columns if annotate_variant else []
    if storage is not None and not isinstance(storage, LocalStorage):
        data = _encode(out, options, group_rows, annotated, name)
        storage.write(name, data)
        return WriteResult(name, out.num_rows, len(data), shredding_out, pq.read_metadata(pa.BufferReader(data)))
    # Written under a temporary name and renamed once complete and annotated, so a failure
    # never leaves a half-written or unannotated file at ``path``.
    tmp = os.path.join(os.path.dirname(name) or ".", temporary_name(os.path.basename(name)))
    try:
        with pq.ParquetWriter(tmp, out.schema, **options) as writer:
            writer.write_table(out, row_group_size=group_rows)
        if annotated:
            annotate_variant_columns(tmp, annotated)
        os.replace(tmp, name)
    except OSError as exc:
        raise StorageError(f"{name}: cannot write Parquet file ({exc})") from exc
    except pa.ArrowException as exc:
        raise ShreddingError(f"{name}: cannot write Parquet file ({exc})") from exc
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return WriteResult(
        path=name,
        num_rows=out.num_rows,
        size=os.path.getsize(name),
        shredding=shredding_out,
        metadata=pq.read_metadata(name),
    )


def _encode(out: pa.Table, options: Mapping[str, Any], group_rows: int, columns: Sequence[ColumnPath], name: str) -> bytes:
    """The whole Parquet file of ``out`` in memory, its Variant groups annotated."""
    sink = pa.BufferOutputStream()
    try:
        with pq.ParquetWriter(sink, out.schema, **options) as writer:
            writer.write_table(out, row_group_size=group_rows)
    except pa.ArrowException as exc:
        raise ShreddingError(f"{name}: cannot write Parquet file ({exc})") from exc
    data = sink.getvalue().to_pybytes()
    return annotate_variant_bytes(data, columns, name) if columns else data
