"""The contents of Hudi log blocks: Avro and Parquet data blocks, delete blocks.

Avro data block (``HoodieAvroDataBlock``, block versions 2 and 3), big-endian::

    int32 block version, int32 record count, then per record: int32 length, Avro binary datum

decoded with the writer schema from the block header. Parquet data block: the content is
a whole Parquet file. Delete block (``HoodieDeleteBlock``, block version 3)::

    int32 block version, int32 length, Avro binary ``HoodieDeleteRecordList``

where the list is ``{deleteRecordList: array<HoodieDeleteRecord>}`` and a delete record is
``{recordKey: [null, string], partitionPath: [null, string], orderingVal: union}`` (the
union: null, int, long, float, double, bytes, string, decimal(30, 15) bytes, date,
time-millis, time-micros, timestamp-millis, timestamp-micros). Delete blocks of versions
1 and 2 hold Kryo-serialized Java objects and are refused (``HudiLogUnsupportedError``),
as are HFile blocks (the metadata table's format) and CDC blocks.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import struct
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from varlake.errors import HudiLogFormatError, HudiLogUnsupportedError, VarlakeError
from varlake.hudi.avro_arrow import AvroArrowSchema, read_datum
from varlake.hudi.log_format import BlockType, LogBlock

__all__ = ["DeleteRecord", "decode_data_block", "decode_delete_block"]

_I32 = struct.Struct(">i")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class DeleteRecord:
    """One entry of a delete block: the key it deletes and its ordering value (``None`` or
    ``0`` when the writer had none: the delete then wins by arrival order)."""

    record_key: str | None
    partition_path: str | None
    ordering_value: Any


def decode_data_block(block: LogBlock) -> pa.Table:
    """The records of a data block as an Arrow table."""
    if block.block_type == BlockType.AVRO_DATA:
        return _avro_records(block)
    if block.block_type == BlockType.PARQUET_DATA:
        return _parquet_records(block)
    if block.block_type == BlockType.HFILE_DATA:
        raise HudiLogUnsupportedError(f"{block.where()}: HFile data blocks (Hudi's metadata table format)")
    if block.block_type == BlockType.CDC_DATA:
        raise HudiLogUnsupportedError(f"{block.where()}: CDC data blocks")
    raise HudiLogFormatError(f"{block.where()}: a {block.block_type.name} block holds no records")


def _writer_schema(block: LogBlock) -> AvroArrowSchema:
    text = block.schema
    if text is None:
        raise HudiLogFormatError(f"{block.where()}: data block without a writer schema in its header")
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise HudiLogFormatError(f"{block.where()}: the writer schema is not JSON: {e}") from None
    return AvroArrowSchema(parsed, block.where())


def _fastavro_reader(schema: AvroArrowSchema, where: str) -> Any:
    import fastavro

    try:
        parsed = fastavro.parse_schema(schema.decode_schema)
    except Exception as e:  # fastavro raises its own exception types, and KeyError/TypeError on odd input
        raise HudiLogFormatError(f"{where}: fastavro cannot use the writer schema: {e}") from None

    def read(buf: Any) -> Any:
        return fastavro.schemaless_reader(buf, parsed, None)

    return read


def _avro_records(block: LogBlock) -> pa.Table:
    content = block.content
    where = block.where()
    if len(content) < 8:
        raise HudiLogFormatError(f"{where}: Avro data block content of {len(content)} bytes")
    (version,) = _I32.unpack_from(content, 0)
    if version not in (2, 3):
        if 0 <= version < 2:
            raise HudiLogUnsupportedError(f"{where}: Avro data block version {version} (Hudi before 0.5)")
        raise HudiLogFormatError(f"{where}: Avro data block version {version}")
    (count,) = _I32.unpack_from(content, 4)
    if count < 0 or count * 4 > len(content) - 8:
        raise HudiLogFormatError(f"{where}: Avro data block claims {count} records in {len(content)} bytes")
    schema = _writer_schema(block)
    reader = _fastavro_reader(schema, where)
    records = []
    pos = 8
    for i in range(count):
        if pos + 4 > len(content):
            raise HudiLogFormatError(f"{where}: record {i} of {count} starts past the end of the block content")
        (length,) = _I32.unpack_from(content, pos)
        pos += 4
        if length < 0 or pos + length > len(content):
            raise HudiLogFormatError(f"{where}: record {i} has length {length} with {len(content) - pos} bytes left")
        try:
            record, used = read_datum(reader, content[pos : pos + length])
        except VarlakeError:
            raise
        except Exception as e:  # a corrupted datum: fastavro raises EOFError, ValueError, IndexError, ...
            raise HudiLogFormatError(f"{where}: record {i} does not decode with the writer schema: {type(e).__name__}: {e}") from None
        if used != length or not isinstance(record, dict):
            raise HudiLogFormatError(f"{where}: record {i} decodes to {used} of its {length} bytes")
        records.append(record)
        pos += length
    if pos != len(content):
        raise HudiLogFormatError(f"{where}: {len(content) - pos} stray bytes after the last record")
    return schema.table(records)


def _parquet_records(block: LogBlock) -> pa.Table:
    try:
        return pq.read_table(pa.BufferReader(block.content))
    except (pa.ArrowException, OSError, ValueError) as e:
        raise HudiLogFormatError(f"{block.where()}: the Parquet data block does not read: {e}") from None


# --- delete blocks ---------------------------------------------------------------------------


class _Avro:
    """The few Avro binary reads a delete record list needs, bounds-checked."""

    def __init__(self, data: bytes, where: str) -> None:
        self.data, self.pos, self.where = data, 0, where

    def fail(self, what: str) -> HudiLogFormatError:
        return HudiLogFormatError(f"{self.where}: delete record list: {what} at byte {self.pos}")

    def long(self) -> int:
        shift = result = 0
        while True:
            if self.pos >= len(self.data):
                raise self.fail("truncated varint")
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 63:
                raise self.fail("varint longer than 10 bytes")
        return (result >> 1) ^ -(result & 1)

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"length {n} past the end")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def bytes_(self) -> bytes:
        return self.raw(self.long())

    def string(self) -> str:
        try:
            return self.bytes_().decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("string not UTF-8") from None

    def float_(self, n: int) -> float:
        return float(struct.unpack("<f" if n == 4 else "<d", self.raw(n))[0])

    def optional_string(self) -> str | None:
        branch = self.long()
        if branch == 0:
            return None
        if branch == 1:
            return self.string()
        raise self.fail(f"union branch {branch} of a [null, string]")


def _ordering_value(r: _Avro) -> Any:
    branch = r.long()
    if branch == 0:
        return None
    if branch in (1, 2):
        return r.long()
    if branch == 3:
        return r.float_(4)
    if branch == 4:
        return r.float_(8)
    if branch == 5:
        return r.bytes_()
    if branch == 6:
        return r.string()
    if branch == 7:
        unscaled = int.from_bytes(r.bytes_(), "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-15)
    if branch == 8:
        days = r.long()
        try:
            return dt.date(1970, 1, 1) + dt.timedelta(days=days)
        except OverflowError:
            raise r.fail(f"date {days} out of range") from None
    if branch in (9, 10):
        v = r.long()
        return dt.timedelta(milliseconds=v) if branch == 9 else dt.timedelta(microseconds=v)
    if branch in (11, 12):
        v = r.long()
        try:
            return _EPOCH + (dt.timedelta(milliseconds=v) if branch == 11 else dt.timedelta(microseconds=v))
        except OverflowError:
            raise r.fail(f"timestamp {v} out of range") from None
    raise r.fail(f"ordering value union branch {branch}")


def decode_delete_block(block: LogBlock) -> list[DeleteRecord]:
    """The ``DeleteRecord`` list of a delete block."""
    where = block.where()
    if block.block_type != BlockType.DELETE:
        raise HudiLogFormatError(f"{where}: a {block.block_type.name} block is not a delete block")
    content = block.content
    if len(content) < 8:
        raise HudiLogFormatError(f"{where}: delete block content of {len(content)} bytes")
    version, length = _I32.unpack_from(content, 0)[0], _I32.unpack_from(content, 4)[0]
    if version in (0, 1, 2):
        raise HudiLogUnsupportedError(f"{where}: delete block version {version} (Kryo-serialized, Hudi before 0.14)")
    if version != 3:
        raise HudiLogFormatError(f"{where}: delete block version {version}")
    if length < 0 or 8 + length != len(content):
        raise HudiLogFormatError(f"{where}: delete block claims {length} bytes, holds {len(content) - 8}")
    r = _Avro(content[8:], where)
    out: list[DeleteRecord] = []
    while True:
        count = r.long()
        if count == 0:
            break
        if count < 0:  # a block count followed by its size in bytes
            count = -count
            r.long()
        if count > len(r.data) - r.pos:  # every record takes at least 3 bytes
            raise r.fail(f"array block of {count} records")
        for _ in range(count):
            key = r.optional_string()
            partition = r.optional_string()
            out.append(DeleteRecord(key, partition, _ordering_value(r)))
    if r.pos != len(r.data):
        raise r.fail(f"{len(r.data) - r.pos} stray bytes after the list")
    return out
