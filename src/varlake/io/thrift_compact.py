"""Thrift compact protocol, read and written, for the Parquet footer.

Why one module: reading the footer's schema (``thrift_footer``) and splicing the
``VARIANT`` annotation into it (``parquet_annotate``) need the same decoder. The
decoder keeps every struct's fields in wire order and remembers where each struct
sat in the input, so a struct re-encodes to the exact bytes it was read from (the
writer emits what Apache Thrift emits); readers look fields up by id.

The reader is bounded: every length is checked against the bytes left, nesting is
capped at 64, and any inconsistency raises ``ParquetFooterError`` naming the source
and the footer byte offset.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from varlake.errors import ParquetFooterError

__all__ = [
    "CompactReader",
    "CompactWriter",
    "ThriftField",
    "ThriftList",
    "ThriftMap",
    "ThriftStruct",
    "encode_struct",
]

# Compact protocol type nibbles.
T_STOP, T_TRUE, T_FALSE, T_BYTE, T_I16, T_I32, T_I64, T_DOUBLE, T_BINARY, T_LIST, T_SET, T_MAP, T_STRUCT, T_UUID = range(14)
MAX_DEPTH = 64
_DOUBLE = struct.Struct("<d")
_UUID_BYTES = 16


@dataclass(slots=True)
class ThriftField:
    id: int
    type: int
    value: Any


@dataclass(slots=True)
class ThriftStruct:
    """A decoded struct: its fields in wire order, and where it sat in the input."""

    fields: list[ThriftField] = field(default_factory=list)
    start: int = 0
    end: int = 0

    def get(self, field_id: int) -> ThriftField | None:
        for f in self.fields:
            if f.id == field_id:
                return f
        return None

    def value_of(self, field_id: int, default: Any = None) -> Any:
        """The value of field ``field_id`` (the last one, if the id repeats: generated thrift
        code keeps the last assignment), or ``default`` when the struct lacks it."""
        for f in reversed(self.fields):
            if f.id == field_id:
                return f.value
        return default


@dataclass(slots=True)
class ThriftList:
    """A list or set: element type nibble and items (bools in lists keep their wire byte)."""

    elem_type: int
    items: list[Any]
    is_set: bool = False


@dataclass(slots=True)
class ThriftMap:
    key_type: int
    value_type: int
    items: list[tuple[Any, Any]]


class CompactReader:
    """Reads thrift compact protocol; every read is bounds-checked against the buffer."""

    __slots__ = ("data", "pos", "source")

    def __init__(self, data: bytes, source: str) -> None:
        self.data = data
        self.pos = 0
        self.source = source

    def fail(self, message: str) -> ParquetFooterError:
        return ParquetFooterError(f"{self.source}: corrupt Parquet footer: {message} (footer byte {self.pos})")

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self.fail("unexpected end of footer")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        result = shift = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise self.fail("varint longer than 10 bytes")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"length {n} runs past the end of the footer")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def value(self, ttype: int, depth: int) -> Any:
        """One value of compact type ``ttype``: structs become ``ThriftStruct``, lists and sets
        ``ThriftList``, maps ``ThriftMap``; a byte is signed."""
        if depth > MAX_DEPTH:
            raise self.fail(f"nesting deeper than {MAX_DEPTH}")
        if ttype in (T_TRUE, T_FALSE):
            # Only reached for collection elements: one byte, 1 = true (kept as written).
            return self.byte()
        if ttype == T_BYTE:
            b = self.byte()
            return b - 256 if b > 127 else b
        if ttype in (T_I16, T_I32, T_I64):
            return self.zigzag()
        if ttype == T_DOUBLE:
            return _DOUBLE.unpack(self.take(8))[0]
        if ttype == T_BINARY:
            return self.take(self.varint())
        if ttype in (T_LIST, T_SET):
            head = self.byte()
            size = head >> 4
            elem = head & 0x0F
            if size == 15:
                size = self.varint()
            if size > len(self.data) - self.pos:
                raise self.fail(f"list of {size} elements cannot fit")
            return ThriftList(elem, [self.value(elem, depth + 1) for _ in range(size)], ttype == T_SET)
        if ttype == T_MAP:
            size = self.varint()
            if size == 0:
                return ThriftMap(0, 0, [])
            if size > len(self.data) - self.pos:
                raise self.fail(f"map of {size} entries cannot fit")
            kv = self.byte()
            kt, vt = kv >> 4, kv & 0x0F
            return ThriftMap(kt, vt, [(self.value(kt, depth + 1), self.value(vt, depth + 1)) for _ in range(size)])
        if ttype == T_STRUCT:
            return self.struct(depth + 1)
        if ttype == T_UUID:
            return self.take(_UUID_BYTES)
        raise self.fail(f"unknown compact type {ttype}")

    def field_headers(self, last: int = 0) -> Iterator[tuple[int, int]]:
        """Yield ``(field_id, type)`` of a struct's fields until STOP; the caller reads each value
        (with ``value``, except booleans, whose value is the type itself). ``last`` is the id of
        the field read before, when resuming a struct part-way (ids are delta-encoded)."""
        while True:
            head = self.byte()
            ttype = head & 0x0F
            if ttype == T_STOP:
                return
            delta = head >> 4
            fid = last + delta if delta else self.zigzag()
            last = fid
            yield fid, ttype

    def struct(self, depth: int = 0) -> ThriftStruct:
        out = ThriftStruct(start=self.pos)
        for fid, ttype in self.field_headers():
            val = ttype == T_TRUE if ttype in (T_TRUE, T_FALSE) else self.value(ttype, depth)
            out.fields.append(ThriftField(fid, ttype, val))
        out.end = self.pos
        return out


class CompactWriter:
    """Writes thrift compact protocol the way Apache Thrift does (so round trips are exact)."""

    def __init__(self) -> None:
        self.out = bytearray()

    def varint(self, n: int) -> None:
        while True:
            if n < 0x80:
                self.out.append(n)
                return
            self.out.append((n & 0x7F) | 0x80)
            n >>= 7

    def zigzag(self, n: int) -> None:
        self.varint((n << 1) ^ (n >> 63))

    def value(self, ttype: int, val: Any) -> None:
        if ttype in (T_TRUE, T_FALSE, T_BYTE):
            self.out.append(val & 0xFF)
        elif ttype in (T_I16, T_I32, T_I64):
            self.zigzag(val)
        elif ttype == T_DOUBLE:
            self.out += _DOUBLE.pack(val)
        elif ttype == T_BINARY:
            self.varint(len(val))
            self.out += val
        elif ttype in (T_LIST, T_SET):
            n = len(val.items)
            if n < 15:
                self.out.append((n << 4) | val.elem_type)
            else:
                self.out.append(0xF0 | val.elem_type)
                self.varint(n)
            for item in val.items:
                self.value(val.elem_type, item)
        elif ttype == T_MAP:
            self.varint(len(val.items))
            if val.items:
                self.out.append((val.key_type << 4) | val.value_type)
                for k, v in val.items:
                    self.value(val.key_type, k)
                    self.value(val.value_type, v)
        elif ttype == T_STRUCT:
            self.struct(val)
        elif ttype == T_UUID and len(val) == _UUID_BYTES:
            self.out += val
        else:
            raise ParquetFooterError(f"cannot write compact type {ttype}")

    def struct(self, st: ThriftStruct) -> None:
        last = 0
        for f in st.fields:
            ttype = f.type
            if ttype in (T_TRUE, T_FALSE):
                ttype = T_TRUE if f.value else T_FALSE
            delta = f.id - last
            if 0 < delta <= 15:
                self.out.append((delta << 4) | ttype)
            else:
                self.out.append(ttype)
                self.zigzag(f.id)
            if ttype not in (T_TRUE, T_FALSE):
                self.value(ttype, f.value)
            last = f.id
        self.out.append(T_STOP)


def encode_struct(st: ThriftStruct) -> bytes:
    """``st`` in compact protocol (the bytes it was read from, for an unmodified struct)."""
    w = CompactWriter()
    w.struct(st)
    return bytes(w.out)
