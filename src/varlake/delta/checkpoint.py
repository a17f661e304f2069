"""Writing classic single-part V1 checkpoints and ``_last_checkpoint``.

A checkpoint is the reconciled state as one Parquet file, one action per row, each
action type in its own struct column (PROTOCOL.md "Checkpoints", "Checkpoint
Schema"). ``add.stats`` is kept as the JSON string (``delta.checkpoint.writeStatsAsJson``,
default true); ``stats_parsed`` is not written. Expired tombstones (older than
``delta.deletedFileRetentionDuration``) are dropped. The file is written whole and
then made visible atomically, so a reader never sees a partial checkpoint.

A table with the ``v2Checkpoint`` feature must get V2-spec checkpoints (PROTOCOL.md
"Checkpoint Specs"): there the same classic-named file also holds one ``checkpointMetadata``
action (its version), which makes it a classic-named V2 checkpoint with no sidecars.
"""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from varlake.delta import config
from varlake.delta import constants as C
from varlake.delta.file_table import (
    ADD_SCHEMA,
    CHECKPOINT_METADATA_TYPE,
    DOMAIN_TYPE,
    METADATA_TYPE,
    PROTOCOL_TYPE,
    REMOVE_SCHEMA,
    TXN_TYPE,
)
from varlake.delta.last_checkpoint import write_last_checkpoint
from varlake.delta.log import checkpoint_name
from varlake.delta.replay import TableState
from varlake.io.storage import Storage

__all__ = ["CHECKPOINT_SCHEMA", "checkpoint_table", "write_checkpoint"]


def _schema(with_stats: bool, v2: bool = False) -> pa.Schema:
    add_fields = [f for f in ADD_SCHEMA if with_stats or f.name != "stats"]
    v2_fields = [pa.field(C.CHECKPOINT_METADATA, CHECKPOINT_METADATA_TYPE)] if v2 else []
    return pa.schema(
        v2_fields + [
            pa.field(C.PROTOCOL, PROTOCOL_TYPE),
            pa.field(C.METADATA, METADATA_TYPE),
            pa.field(C.TXN, TXN_TYPE),
            pa.field(C.ADD, pa.struct(add_fields)),
            pa.field(C.REMOVE, pa.struct(list(REMOVE_SCHEMA))),
            pa.field(C.DOMAIN_METADATA, DOMAIN_TYPE),
        ]
    )


CHECKPOINT_SCHEMA = _schema(True)


def _section(schema: pa.Schema, column: str, values: pa.Array) -> pa.Table:
    """Rows that carry ``values`` in ``column`` and nulls in every other column."""
    n = len(values)
    cols = [values if f.name == column else pa.nulls(n, f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def _struct_of(table: pa.Table, struct_type: pa.StructType) -> pa.Array:
    children = [table.column(f.name).combine_chunks() for f in struct_type]
    return pa.StructArray.from_arrays(children, fields=list(struct_type))


def _map(m: Any) -> list[tuple[str, Any]]:
    return list(dict(m).items())


def checkpoint_table(state: TableState, now_ms: int | None = None) -> pa.Table:
    """The checkpoint rows for ``state`` as one Arrow table."""
    cfg = state.metadata.configuration
    p, m = state.protocol, state.metadata
    v2 = p.min_reader_version >= 3 and C.V2_CHECKPOINT in p.reader_feature_set
    schema = _schema(config.write_stats_as_json(cfg), v2)
    protocol = pa.array(
        [
            {
                "minReaderVersion": p.min_reader_version,
                "minWriterVersion": p.min_writer_version,
                "readerFeatures": list(p.reader_features) if p.reader_features is not None else None,
                "writerFeatures": list(p.writer_features) if p.writer_features is not None else None,
            }
        ],
        PROTOCOL_TYPE,
    )
    metadata = pa.array(
        [
            {
                "id": m.id,
                "name": m.name,
                "description": m.description,
                "format": {"provider": m.format_provider, "options": _map(m.format_options)},
                "schemaString": m.schema_string,
                "partitionColumns": list(m.partition_columns),
                "createdTime": m.created_time,
                "configuration": _map(m.configuration),
            }
        ],
        METADATA_TYPE,
    )
    txns = pa.array([t.to_dict() | {"lastUpdated": t.last_updated} for t in state.txns.values()], TXN_TYPE)
    domains = pa.array([d.to_dict() for d in state.domains.values()], DOMAIN_TYPE)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now - int(config.deleted_file_retention_hours(cfg) * 3600 * 1000)
    removes = state.removes
    if removes.num_rows:
        removes = removes.filter(pc.fill_null(pc.greater_equal(removes.column("deletionTimestamp"), cutoff), False))
    add_type = schema.field(C.ADD).type
    v2_sections = [_section(schema, C.CHECKPOINT_METADATA, pa.array([{"version": state.version}], CHECKPOINT_METADATA_TYPE))] if v2 else []
    return pa.concat_tables(
        v2_sections + [
            _section(schema, C.PROTOCOL, protocol),
            _section(schema, C.METADATA, metadata),
            _section(schema, C.TXN, txns),
            _section(schema, C.DOMAIN_METADATA, domains),
            _section(schema, C.ADD, _struct_of(state.adds, add_type)),
            _section(schema, C.REMOVE, _struct_of(removes, schema.field(C.REMOVE).type)),
        ]
    )


def _codec(cfg: Any) -> str:
    codec = str(cfg.get("delta.parquet.compression.codec", "zstd")).lower()
    return {"uncompressed": "none", "lz4_raw": "lz4"}.get(codec, codec)


def write_checkpoint(storage: Storage, log_dir: str, state: TableState, now_ms: int | None = None) -> str:
    """Write ``n.checkpoint.parquet`` for ``state`` and update ``_last_checkpoint``; return its path."""
    table = checkpoint_table(state, now_ms)
    sink = pa.BufferOutputStream()
    codec = _codec(state.metadata.configuration)
    if codec not in ("none", "snappy", "gzip", "lz4", "zstd", "brotli"):
        codec = "zstd"
    pq.write_table(table, sink, compression=codec)
    data = sink.getvalue().to_pybytes()
    path = f"{log_dir}/{checkpoint_name(state.version)}"
    storage.write(path, data)
    write_last_checkpoint(
        storage,
        log_dir,
        {
            "version": state.version,
            "size": table.num_rows,
            "sizeInBytes": len(data),
            "numOfAddFiles": state.adds.num_rows,
        },
    )
    return path
