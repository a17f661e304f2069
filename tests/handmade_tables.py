"""Delta tables written by hand (data files with pyarrow, the log as JSON lines), for features
varlake reads but does not write: column mapping (physical names, field ids) and type widening."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

ID = "delta.columnMapping.id"
PHYSICAL = "delta.columnMapping.physicalName"


def field(name: str, dtype: Any, fid: int | None = None, physical: str | None = None, **metadata: Any) -> dict:
    """A schemaString field; ``fid``/``physical`` become column-mapping metadata."""
    meta = dict(metadata)
    if fid is not None:
        meta[ID] = fid
    if physical is not None:
        meta[PHYSICAL] = physical
    return {"name": name, "type": dtype, "nullable": True, "metadata": meta}


def struct(*fields: dict) -> dict:
    return {"type": "struct", "fields": list(fields)}


def with_id(name: str, dtype: pa.DataType, fid: int | None) -> pa.Field:
    """An Arrow field that pyarrow writes with Parquet ``field_id`` ``fid``."""
    return pa.field(name, dtype, metadata=None if fid is None else {b"PARQUET:field_id": str(fid).encode()})


def metadata(schema: dict, configuration: dict[str, str] | None = None, partition_columns: list[str] | None = None) -> dict:
    return {
        "metaData": {
            "id": "handmade",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(schema),
            "partitionColumns": partition_columns or [],
            "configuration": configuration or {},
            "createdTime": 1,
        }
    }


def protocol(reader: int, writer: int, reader_features: list[str] | None = None, writer_features: list[str] | None = None) -> dict:
    body: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_features is not None:
        body["readerFeatures"] = reader_features
    if writer_features is not None:
        body["writerFeatures"] = writer_features
    return {"protocol": body}


def add(root: Path, rel: str, data: pa.Table, partition_values: dict[str, str | None] | None = None, stats: dict | None = None) -> dict:
    """Write ``data`` at ``root/rel`` and return its ``add`` action."""
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data, root / rel)
    body: dict[str, Any] = {
        "path": rel,
        "partitionValues": partition_values or {},
        "size": (root / rel).stat().st_size,
        "modificationTime": 1,
        "dataChange": True,
    }
    if stats is not None:
        body["stats"] = json.dumps(stats)
    return {"add": body}


def remove(rel: str) -> dict:
    return {"remove": {"path": rel, "deletionTimestamp": 1, "dataChange": True}}


def commit(root: Path, version: int, *actions: dict) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))


ID_MODE = {"delta.columnMapping.mode": "id", "delta.columnMapping.maxColumnId": "9"}
ID_MODE_ROWS = [
    {"a": 7, "s": {"b": 1, "c": "p"}, "l": [{"b": 3, "c": "q"}], "gone": None},
    {"a": 8, "s": {"b": 2, "c": None}, "l": None, "gone": None},
]


def id_mode_table(root: Path, with_ids: bool = True) -> Path:
    """An id-mode table whose file names its columns neither logically nor physically (``col-a``
    holds the struct of id 2, ``col-s`` the long of id 1; nested fields reordered and renamed):
    only field ids tell them apart. Rows: ``ID_MODE_ROWS``; ``with_ids=False``: no field ids."""
    inner = struct(field("b", "integer", 3, "col-b"), field("c", "string", 4, "col-c"))
    schema = struct(
        field("a", "long", 1, "col-a"), field("s", inner, 2, "col-s"),
        field("l", {"type": "array", "elementType": inner, "containsNull": True}, 5, "col-l"),
        field("gone", "integer", 6, "col-gone"),
    )  # fmt: skip
    fid = (lambda n: n) if with_ids else (lambda n: None)
    s_type = pa.struct([with_id("zz", pa.string(), fid(4)), with_id("yy", pa.int32(), fid(3))])  # reordered, renamed
    data = pa.table(
        {
            # names that are neither logical nor physical: only the ids tell the columns apart
            "col-s": pa.array([{"zz": "p", "yy": 1}, {"zz": None, "yy": 2}], s_type),
            "col-a": pa.array([7, 8], pa.int64()),  # called like a's physical name, but its id is 1
            "col-l": pa.array([[{"zz": "q", "yy": 3}], None], pa.list_(pa.field("element", s_type))),
        }
    )
    arrow_schema = pa.schema(
        [
            with_id("col-a", pa.struct([with_id("zz", pa.string(), fid(4)), with_id("yy", pa.int32(), fid(3))]), fid(2)),
            with_id("col-s", pa.int64(), fid(1)),
            with_id("col-l", pa.list_(pa.field("element", s_type)), fid(5)),
        ]
    )
    data = pa.Table.from_arrays([data.column("col-s"), data.column("col-a"), data.column("col-l")], schema=arrow_schema)
    stats = {"numRecords": 2, "minValues": {"col-a": 7}, "maxValues": {"col-a": 8}, "nullCount": {"col-a": 0}}
    commit(root, 0, protocol(2, 5), metadata(schema, ID_MODE), add(root, "f.parquet", data, stats=stats))
    return root
