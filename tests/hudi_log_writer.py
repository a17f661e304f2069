"""A small writer of Hudi log blocks for tests, written from the format description in
``varlake.hudi.log_format`` / ``log_blocks`` (Avro records through fastavro)."""

from __future__ import annotations

import io
import json
import struct
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

MAGIC = b"#HUDI#"


def _metadata(entries: dict[int, str]) -> bytes:
    out = struct.pack(">i", len(entries))
    for key, value in entries.items():
        raw = value.encode()
        out += struct.pack(">ii", key, len(raw)) + raw
    return out


def block(block_type: int, header: dict[int, str], content: bytes, footer: dict[int, str] | None = None) -> bytes:
    """One framed block (log format version 1)."""
    body = struct.pack(">ii", 1, block_type) + _metadata(header)
    body += struct.pack(">q", len(content)) + content + _metadata(footer or {})
    size = len(body) + 8
    return MAGIC + struct.pack(">q", size) + body + struct.pack(">q", size + len(MAGIC))


def avro_block(instant: str, schema: dict[str, Any], records: list[dict[str, Any]]) -> bytes:
    parsed = fastavro.parse_schema(schema)
    parts = [struct.pack(">ii", 3, len(records))]
    for r in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, r)
        parts += [struct.pack(">i", len(buf.getvalue())), buf.getvalue()]
    return block(3, {0: instant, 2: json.dumps(schema)}, b"".join(parts))


def parquet_block(instant: str, table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return block(5, {0: instant, 2: "{}"}, buf.getvalue())


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _opt_string(s: str | None) -> bytes:
    if s is None:
        return _zigzag(0)
    raw = s.encode()
    return _zigzag(1) + _zigzag(len(raw)) + raw


def delete_block(instant: str, deletes: list[tuple[str, str, Any]]) -> bytes:
    """A version 3 delete block; ordering values: ``None``, an int (long branch) or a str."""
    body = _zigzag(len(deletes)) if deletes else b""
    for key, partition, ordering in deletes:
        body += _opt_string(key) + _opt_string(partition)
        if ordering is None:
            body += _zigzag(0)
        elif isinstance(ordering, int):
            body += _zigzag(2) + _zigzag(ordering)
        else:
            raw = str(ordering).encode()
            body += _zigzag(6) + _zigzag(len(raw)) + raw
    body += _zigzag(0)
    return block(1, {0: instant, 2: "{}"}, struct.pack(">ii", 3, len(body)) + body)


def rollback_block(instant: str, target: str) -> bytes:
    return block(0, {0: instant, 1: target, 3: "0"}, b"")


ROW_SCHEMA = {
    "type": "record",
    "name": "row",
    "namespace": "hoodie.test",
    "fields": [
        {"name": "_hoodie_commit_time", "type": ["null", "string"]},
        {"name": "_hoodie_record_key", "type": ["null", "string"]},
        {"name": "id", "type": ["null", "string"]},
        {"name": "ts", "type": ["null", "long"]},
        {"name": "v", "type": ["null", "string"]},
        {"name": "_hoodie_is_deleted", "type": ["null", "boolean"], "default": None},
    ],
}


def rows(instant: str, *items: tuple[str, int, str], deleted: bool = False) -> list[dict[str, Any]]:
    return [
        {"_hoodie_commit_time": instant, "_hoodie_record_key": k, "id": k, "ts": ts, "v": v, "_hoodie_is_deleted": deleted}
        for k, ts, v in items
    ]
