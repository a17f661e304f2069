"""Reading Hudi base files (Parquet) with pyarrow, through the caller's ``Storage``.

Files of one table may have been written with different schemas (columns added over
time): they are read each as written and concatenated under their unified schema, the
columns a file lacks filled with nulls. Partition columns are read from the files
(Hudi keeps them there unless ``hoodie.datasource.write.drop.partition.columns``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from varlake.errors import DataFileMissingError, ParquetFooterError, StorageFileNotFoundError
from varlake.io.parquet_read import variant_column_paths
from varlake.io.storage import LocalStorage, Storage
from varlake.io.thrift_footer import read_schema
from varlake.shred.variant_columns import without_variant_extension

_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OSError, ValueError)

__all__ = ["Footer", "concat", "newest_schema", "open_source", "read_base_file", "read_footer"]


def open_source(storage: Storage, root: str, relative_path: str, size: int | None = None) -> Any:
    """What pyarrow reads a data file at ``relative_path`` from: a local path, or a file
    object on an object store."""
    location = storage.location_inside(root, f"{root}/{relative_path}")
    if isinstance(storage, LocalStorage):
        return location
    try:
        return storage.open_read(location, size)
    except StorageFileNotFoundError:
        raise DataFileMissingError(f"{root}: data file {relative_path!r} is in the file listing but missing") from None


@dataclass(frozen=True)
class Footer:
    """A base file's footer: its metadata, Arrow schema (Variants as their storage
    structs) and the top-level columns that hold Variants (Parquet ``VARIANT`` groups, or
    Spark's row metadata saying so)."""

    metadata: pq.FileMetaData
    schema: pa.Schema
    variants: frozenset[str]


def read_footer(storage: Storage, root: str, relative_path: str, size: int | None = None) -> Footer:
    """The footer of the base file at ``relative_path`` (one read of its tail)."""
    location = storage.location_inside(root, f"{root}/{relative_path}")
    try:
        handle = storage.open_read(location, size)
    except StorageFileNotFoundError:
        raise DataFileMissingError(f"{root}: data file {relative_path!r} is in the file listing but missing") from None
    with handle:
        length = size if size is not None else handle.seek(0, 2)
        tree = read_schema(handle, length, f"{root}/{relative_path}")
        handle.seek(0)
        try:
            pf = pq.ParquetFile(handle)
            schema = without_variant_extension(pf.metadata.schema.to_arrow_schema())
        except _ARROW_ERRORS as exc:
            raise ParquetFooterError(f"{root}/{relative_path}: cannot open as Parquet ({exc})") from None
        variants = frozenset(p[0] for p in variant_column_paths(pf, tree, (), relative_path) if len(p) == 1)
        return Footer(pf.metadata, schema, variants)


def read_base_file(storage: Storage, root: str, relative_path: str, columns: Sequence[str] | None = None, size: int | None = None) -> pa.Table:
    """One base file's rows (``columns`` the file has, when given)."""
    source = open_source(storage, root, relative_path, size)
    try:
        pf = pq.ParquetFile(source)
        if columns is not None:
            have = set(pf.schema_arrow.names)
            columns = [c for c in columns if c in have]
        return pf.read(columns=columns)
    except FileNotFoundError:
        raise DataFileMissingError(f"{root}: data file {relative_path!r} is in the file listing but missing") from None
    except _ARROW_ERRORS as exc:
        raise ParquetFooterError(f"{root}/{relative_path}: cannot read as Parquet ({exc})") from None


def newest_schema(schemas_newest_first: Sequence[pa.Schema]) -> pa.Schema:
    """One schema for files written over time: every column any file has, typed as the
    newest file holding it types it (a column's type changed by schema evolution is read
    as its latest writer wrote it); columns in the newest file's order, older ones after."""
    fields: dict[str, pa.Field] = {}
    for schema in schemas_newest_first:
        for f in schema:
            fields.setdefault(f.name, f)
    return pa.schema(list(fields.values()))


def concat(tables: Sequence[pa.Table], schema: pa.Schema | None = None) -> pa.Table:
    """``tables`` under one schema (``schema``, else ``newest_schema`` with the last table
    the newest), nulls where a table lacks a column."""
    if schema is None:
        if not tables:
            return pa.table({})
        schema = newest_schema([t.schema for t in reversed(tables)])
    aligned = []
    for t in tables:
        cols = []
        for f in schema:
            if f.name in t.column_names:
                col = t.column(f.name)
                cols.append(col if col.type == f.type else col.cast(f.type))
            else:
                cols.append(pa.nulls(t.num_rows, f.type))
        aligned.append(pa.Table.from_arrays(cols, schema=pa.schema([f.with_nullable(True) for f in schema])))
    if not aligned:
        return pa.Table.from_batches([], schema=schema)
    return pa.concat_tables(aligned)
