"""File actions as Arrow tables: the fast path for big snapshots.

A checkpoint of 100,000 files is read by pyarrow as columns; keeping the live
``add`` set in that columnar form (and building ``AddFile`` objects only when asked)
is what keeps snapshot loading fast. The schemas follow PROTOCOL.md "Checkpoint
Schema" (``remove`` in checkpoints carries no ``stats``/``tags``).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from varlake.delta.actions import AddFile, RemoveFile, dv_unique_id

__all__ = [
    "ACTION_TYPES",
    "ADD_SCHEMA",
    "REMOVE_SCHEMA",
    "adds_to_table",
    "conform_struct",
    "key_column",
    "removes_to_table",
    "table_to_adds",
    "table_to_removes",
]

STR_MAP = pa.map_(pa.string(), pa.string())
DV_TYPE = pa.struct(
    [
        pa.field("storageType", pa.string()),
        pa.field("pathOrInlineDv", pa.string()),
        pa.field("offset", pa.int32()),
        pa.field("sizeInBytes", pa.int32()),
        pa.field("cardinality", pa.int64()),
        pa.field("maxRowIndex", pa.int64()),
    ]
)

ADD_SCHEMA = pa.schema(
    [
        pa.field("path", pa.string()),
        pa.field("partitionValues", STR_MAP),
        pa.field("size", pa.int64()),
        pa.field("modificationTime", pa.int64()),
        pa.field("dataChange", pa.bool_()),
        pa.field("stats", pa.string()),
        pa.field("tags", STR_MAP),
        pa.field("deletionVector", DV_TYPE),
        pa.field("baseRowId", pa.int64()),
        pa.field("defaultRowCommitVersion", pa.int64()),
        pa.field("clusteringProvider", pa.string()),
    ]
)

REMOVE_SCHEMA = pa.schema(
    [
        pa.field("path", pa.string()),
        pa.field("deletionTimestamp", pa.int64()),
        pa.field("dataChange", pa.bool_()),
        pa.field("extendedFileMetadata", pa.bool_()),
        pa.field("partitionValues", STR_MAP),
        pa.field("size", pa.int64()),
        pa.field("deletionVector", DV_TYPE),
        pa.field("baseRowId", pa.int64()),
        pa.field("defaultRowCommitVersion", pa.int64()),
    ]
)


PROTOCOL_TYPE = pa.struct(
    [
        pa.field("minReaderVersion", pa.int32()),
        pa.field("minWriterVersion", pa.int32()),
        pa.field("readerFeatures", pa.list_(pa.string())),
        pa.field("writerFeatures", pa.list_(pa.string())),
    ]
)
METADATA_TYPE = pa.struct(
    [
        pa.field("id", pa.string()),
        pa.field("name", pa.string()),
        pa.field("description", pa.string()),
        pa.field("format", pa.struct([pa.field("provider", pa.string()), pa.field("options", STR_MAP)])),
        pa.field("schemaString", pa.string()),
        pa.field("partitionColumns", pa.list_(pa.string())),
        pa.field("createdTime", pa.int64()),
        pa.field("configuration", STR_MAP),
    ]
)
TXN_TYPE = pa.struct(
    [pa.field("appId", pa.string()), pa.field("version", pa.int64()), pa.field("lastUpdated", pa.int64())]
)
DOMAIN_TYPE = pa.struct(
    [pa.field("domain", pa.string()), pa.field("configuration", pa.string()), pa.field("removed", pa.bool_())]
)
CHECKPOINT_METADATA_TYPE = pa.struct([pa.field("version", pa.int64()), pa.field("tags", STR_MAP)])
SIDECAR_TYPE = pa.struct(
    [
        pa.field("path", pa.string()),
        pa.field("sizeInBytes", pa.int64()),
        pa.field("modificationTime", pa.int64()),
        pa.field("tags", STR_MAP),
    ]
)

#: Arrow type of each action column a checkpoint may hold (PROTOCOL.md "Checkpoint Schema").
ACTION_TYPES = {
    "protocol": PROTOCOL_TYPE,
    "metaData": METADATA_TYPE,
    "txn": TXN_TYPE,
    "add": pa.struct(list(ADD_SCHEMA)),
    "remove": pa.struct(list(REMOVE_SCHEMA)),
    "domainMetadata": DOMAIN_TYPE,
    "checkpointMetadata": CHECKPOINT_METADATA_TYPE,
    "sidecar": SIDECAR_TYPE,
}


def _conform(arr: pa.Array, target: pa.DataType) -> pa.Array:
    if arr.type == target:
        return arr
    if pa.types.is_struct(target) and pa.types.is_struct(arr.type):
        names = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
        children = [
            _conform(pc.struct_field(arr, [names[f.name]]), f.type) if f.name in names else pa.nulls(len(arr), f.type)
            for f in target
        ]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=arr.is_null())
    return arr.cast(target)


def conform_struct(arr: pa.Array | pa.ChunkedArray, schema: pa.Schema) -> pa.Table:
    """Columns of struct array ``arr`` shaped to ``schema`` (missing -> nulls, types cast).

    Raises ``pa.ArrowInvalid``/``pa.ArrowTypeError`` if a present field cannot be cast.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    names = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
    columns = []
    for f in schema:
        if f.name in names:
            columns.append(_conform(pc.struct_field(arr, [names[f.name]]), f.type))
        else:
            columns.append(pa.nulls(len(arr), f.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _map(value: Any) -> list[tuple[str, Any]] | None:
    return None if value is None else list(value.items())


def adds_to_table(adds: Sequence[AddFile]) -> pa.Table:
    """An ``ADD_SCHEMA`` table of ``adds``."""
    cols: dict[str, list[Any]] = {
        "path": [a.path for a in adds],
        "partitionValues": [_map(a.partition_values) for a in adds],
        "size": [a.size for a in adds],
        "modificationTime": [a.modification_time for a in adds],
        "dataChange": [a.data_change for a in adds],
        "stats": [a.stats for a in adds],
        "tags": [_map(a.tags) for a in adds],
        "deletionVector": [dict(a.deletion_vector) if a.deletion_vector is not None else None for a in adds],
        "baseRowId": [a.base_row_id for a in adds],
        "defaultRowCommitVersion": [a.default_row_commit_version for a in adds],
        "clusteringProvider": [a.clustering_provider for a in adds],
    }
    return pa.Table.from_pydict(cols, schema=ADD_SCHEMA)


def removes_to_table(removes: Sequence[RemoveFile]) -> pa.Table:
    """A ``REMOVE_SCHEMA`` table of ``removes`` (stats and tags are dropped, as in checkpoints)."""
    cols: dict[str, list[Any]] = {
        "path": [r.path for r in removes],
        "deletionTimestamp": [r.deletion_timestamp for r in removes],
        "dataChange": [r.data_change for r in removes],
        "extendedFileMetadata": [r.extended_file_metadata for r in removes],
        "partitionValues": [_map(r.partition_values) for r in removes],
        "size": [r.size for r in removes],
        "deletionVector": [dict(r.deletion_vector) if r.deletion_vector is not None else None for r in removes],
        "baseRowId": [r.base_row_id for r in removes],
        "defaultRowCommitVersion": [r.default_row_commit_version for r in removes],
    }
    return pa.Table.from_pydict(cols, schema=REMOVE_SCHEMA)


def _dicts(column: pa.ChunkedArray) -> list[dict[str, Any] | None]:
    return [None if v is None else dict(v) for v in column.to_pylist()]


def _dv_dicts(column: pa.ChunkedArray) -> list[dict[str, Any] | None]:
    if column.null_count == len(column):
        return [None] * len(column)
    return [None if v is None else {k: x for k, x in v.items() if x is not None} for v in column.to_pylist()]


def table_to_adds(table: pa.Table) -> list[AddFile]:
    """``AddFile`` objects for the rows of an ``ADD_SCHEMA`` table (column-wise, for speed)."""
    c = {name: table.column(name) for name in ADD_SCHEMA.names}
    rows = zip(
        c["path"].to_pylist(),
        c["size"].to_pylist(),
        _dicts(c["partitionValues"]),
        c["modificationTime"].to_pylist(),
        c["dataChange"].to_pylist(),
        c["stats"].to_pylist(),
        _dicts(c["tags"]),
        _dv_dicts(c["deletionVector"]),
        c["baseRowId"].to_pylist(),
        c["defaultRowCommitVersion"].to_pylist(),
        c["clusteringProvider"].to_pylist(),
    )
    return [
        AddFile(p, s, pv or {}, mt or 0, True if dc is None else dc, st, tg, dv, br, drc, cp)
        for p, s, pv, mt, dc, st, tg, dv, br, drc, cp in rows
    ]


def table_to_removes(table: pa.Table) -> list[RemoveFile]:
    """``RemoveFile`` objects for the rows of a ``REMOVE_SCHEMA`` table."""
    c = {name: table.column(name) for name in REMOVE_SCHEMA.names}
    rows = zip(
        c["path"].to_pylist(),
        c["deletionTimestamp"].to_pylist(),
        c["dataChange"].to_pylist(),
        c["extendedFileMetadata"].to_pylist(),
        _dicts(c["partitionValues"]),
        c["size"].to_pylist(),
        _dv_dicts(c["deletionVector"]),
        c["baseRowId"].to_pylist(),
        c["defaultRowCommitVersion"].to_pylist(),
    )
    return [
        RemoveFile(p, ts, True if dc is None else dc, ext, pv, sz, None, None, dv, br, drc)
        for p, ts, dc, ext, pv, sz, dv, br, drc in rows
    ]


def encode_key(path: str, dv_id: str | None) -> str:
    """A logical-file key as one string (``path`` alone when there is no deletion vector)."""
    return path if dv_id is None else f"{path}\x00{dv_id}"


def key_column(table: pa.Table) -> pa.ChunkedArray | pa.Array:
    """``encode_key`` for every row of an add/remove table, vectorised when no row has a DV."""
    dv = table.column("deletionVector")
    if dv.null_count == len(dv):
        return table.column("path")
    dvs = _dv_dicts(dv)
    return pa.array(
        [encode_key(p, dv_unique_id(d)) for p, d in zip(table.column("path").to_pylist(), dvs)], pa.string()
    )


def drop_keys(table: pa.Table, keys: Iterable[str]) -> pa.Table:
    """``table`` without the rows whose logical-file key is in ``keys``."""
    key_list = list(keys)
    if not key_list or table.num_rows == 0:
        return table
    hit = pc.is_in(key_column(table), value_set=pa.array(key_list, pa.string()))
    return table.filter(pc.invert(hit))
