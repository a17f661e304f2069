"""Mark Variant groups in a written Parquet file with the ``VARIANT`` logical type.

pyarrow 26 writes a Variant column as a plain group ``{metadata, value[, typed_value]}``:
it cannot emit the ``VARIANT`` annotation that DuckDB (and parquet-java readers) need to
see the group as a Variant. This module rewrites only the file's footer: it parses the
thrift ``FileMetaData`` (compact protocol), re-encodes the ``SchemaElement`` of each
Variant group with ``logicalType = VARIANT(specification_version=1)`` and splices it
back. Every other footer byte stays as it was, the column chunks before the footer are
not touched (their offsets are absolute and stay valid), and the footer length and the
``PAR1`` trailer are rewritten.

Thrift ids from apache/parquet-format ``parquet.thrift``: ``FileMetaData.schema`` is
field 2, ``SchemaElement.name`` 4, ``num_children`` 5, ``logicalType`` 10, and the
``LogicalType`` union member ``VARIANT`` is 16 (``VariantType.specification_version`` 1).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from varlake.errors import ParquetFooterError

MAGIC = b"PAR1"
# Compact protocol type nibbles.
T_STOP, T_TRUE, T_FALSE, T_BYTE, T_I16, T_I32, T_I64, T_DOUBLE, T_BINARY, T_LIST, T_SET, T_MAP, T_STRUCT = range(13)
FILE_METADATA_SCHEMA = 2
SCHEMA_NAME = 4
SCHEMA_NUM_CHILDREN = 5
SCHEMA_LOGICAL_TYPE = 10
LOGICAL_TYPE_VARIANT = 16
VARIANT_SPEC_VERSION = 1
_MAX_DEPTH = 64


# --- a generic compact-protocol tree -------------------------------------------------------


@dataclass
class ThriftStruct:
    """A decoded struct: its fields in wire order, and where it sat in the input."""

    fields: list["ThriftField"] = field(default_factory=list)
    start: int = 0
    end: int = 0

    def get(self, field_id: int) -> "ThriftField | None":
        for f in self.fields:
            if f.id == field_id:
                return f
        return None


@dataclass
class ThriftField:
    id: int
    type: int
    value: Any


@dataclass
class ThriftList:
    """A list or set: element type nibble and items (bools in lists keep their wire byte)."""

    elem_type: int
    items: list[Any]
    is_set: bool = False


@dataclass
class ThriftMap:
    key_type: int
    value_type: int
    items: list[tuple[Any, Any]]


class CompactReader:
    """Reads thrift compact protocol; every read is bounds-checked against the buffer."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def fail(self, message: str) -> ParquetFooterError:
        return ParquetFooterError(f"{self.what}: {message} at footer byte {self.pos}")

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self.fail("footer ends inside a value")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = 0
        out = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 63:
                raise self.fail("varint longer than 10 bytes")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"{n} bytes run past the end of the footer")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def value(self, ttype: int, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise self.fail("thrift nesting deeper than 64")
        if ttype in (T_TRUE, T_FALSE):
            # Only reached for collection elements: one byte, 1 = true (kept as written).
            return self.byte()
        if ttype == T_BYTE:
            return self.byte()
        if ttype in (T_I16, T_I32, T_I64):
            return self.zigzag()
        if ttype == T_DOUBLE:
            return struct.unpack("<d", self.take(8))[0]
        if ttype == T_BINARY:
            return self.take(self.varint())
        if ttype in (T_LIST, T_SET):
            head = self.byte()
            size = head >> 4
            elem = head & 0x0F
            if size == 15:
                size = self.varint()
            if size > len(self.data) - self.pos:
                raise self.fail(f"list of {size} elements cannot fit the footer")
            return ThriftList(elem, [self.value(elem, depth + 1) for _ in range(size)], ttype == T_SET)
        if ttype == T_MAP:
            size = self.varint()
            if size > len(self.data) - self.pos:
                raise self.fail(f"map of {size} entries cannot fit the footer")
            if size == 0:
                return ThriftMap(0, 0, [])
            kv = self.byte()
            kt, vt = kv >> 4, kv & 0x0F
            return ThriftMap(kt, vt, [(self.value(kt, depth + 1), self.value(vt, depth + 1)) for _ in range(size)])
        if ttype == T_STRUCT:
            return self.struct(depth + 1)
        raise self.fail(f"unknown compact type {ttype}")

    def struct(self, depth: int = 0) -> ThriftStruct:
        out = ThriftStruct(start=self.pos)
        last = 0
        while True:
            head = self.byte()
            ttype = head & 0x0F
            if ttype == T_STOP:
                out.end = self.pos
                return out
            delta = head >> 4
            fid = last + delta if delta else self.zigzag()
            if ttype in (T_TRUE, T_FALSE):
                val: Any = ttype == T_TRUE
            else:
                val = self.value(ttype, depth)
            out.fields.append(ThriftField(fid, ttype, val))
            last = fid


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
            self.out += struct.pack("<d", val)
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
    w = CompactWriter()
    w.struct(st)
    return bytes(w.out)


# --- footer access ----------------------------------------------------------------------------


def read_footer(path: str | os.PathLike[str]) -> tuple[bytes, int]:
    """The footer bytes of a Parquet file and the offset where they start."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            if size < 12:
                raise ParquetFooterError(f"{name}: {size} bytes is too small for a Parquet file")
            f.seek(size - 8)
            tail = f.read(8)
            if tail[4:] != MAGIC:
                what = "encrypted footers are not supported" if tail[4:] == b"PARE" else "no PAR1 trailer"
                raise ParquetFooterError(f"{name}: {what}")
            length = struct.unpack("<I", tail[:4])[0]
            start = size - 8 - length
            if start < 4:
                raise ParquetFooterError(f"{name}: footer length {length} exceeds the file size {size}")
            f.seek(start)
            return f.read(length), start
    except OSError as exc:
        raise ParquetFooterError(f"{name}: cannot read footer ({exc})") from None


def parse_file_metadata(footer: bytes, what: str = "footer") -> ThriftStruct:
    reader = CompactReader(footer, what)
    meta = reader.struct()
    if reader.pos != len(footer):
        raise ParquetFooterError(f"{what}: {len(footer) - reader.pos} bytes after FileMetaData")
    return meta


@dataclass(frozen=True)
class SchemaNode:
    """One ``SchemaElement`` with its dotted position in the schema tree."""

    path: tuple[str, ...]
    element: ThriftStruct
    num_children: int
    logical_type: ThriftStruct | None


def schema_nodes(meta: ThriftStruct, what: str = "footer") -> list[SchemaNode]:
    """Every schema element (root excluded) with its path, from the depth-first list."""
    schema = meta.get(FILE_METADATA_SCHEMA)
    if schema is None or not isinstance(schema.value, ThriftList) or not schema.value.items:
        raise ParquetFooterError(f"{what}: FileMetaData has no schema")
    elements: list[ThriftStruct] = schema.value.items
    nodes: list[SchemaNode] = []
    # Stack of (path of the group, children still to come).
    stack: list[tuple[tuple[str, ...], int]] = [((), _num_children(elements[0]))]
    for el in elements[1:]:
        while stack and stack[-1][1] == 0:
            stack.pop()
        if not stack:
            raise ParquetFooterError(f"{what}: schema has more elements than its groups declare")
        parent, left = stack[-1]
        stack[-1] = (parent, left - 1)
        name_field = el.get(SCHEMA_NAME)
        if name_field is None or not isinstance(name_field.value, bytes):
            raise ParquetFooterError(f"{what}: schema element without a name under {'.'.join(parent) or '<root>'}")
        path = parent + (name_field.value.decode("utf-8", "replace"),)
        n = _num_children(el)
        lt = el.get(SCHEMA_LOGICAL_TYPE)
        nodes.append(SchemaNode(path, el, n, lt.value if lt is not None else None))
        if n:
            stack.append((path, n))
    return nodes


def _num_children(el: ThriftStruct) -> int:
    f = el.get(SCHEMA_NUM_CHILDREN)
    return int(f.value) if f is not None else 0


def is_variant(node: SchemaNode) -> bool:
    return node.logical_type is not None and node.logical_type.get(LOGICAL_TYPE_VARIANT) is not None


def _variant_logical_type() -> ThriftStruct:
    version = ThriftStruct([ThriftField(1, T_BYTE, VARIANT_SPEC_VERSION)])
    return ThriftStruct([ThriftField(LOGICAL_TYPE_VARIANT, T_STRUCT, version)])


def _with_variant_annotation(el: ThriftStruct) -> ThriftStruct:
    fields = [f for f in el.fields if f.id != SCHEMA_LOGICAL_TYPE]
    fields.append(ThriftField(SCHEMA_LOGICAL_TYPE, T_STRUCT, _variant_logical_type()))
    fields.sort(key=lambda f: f.id)
    return ThriftStruct(fields)


def annotate_footer(footer: bytes, columns: Iterable[Sequence[str]], what: str = "footer") -> bytes:
    """``footer`` with the groups at ``columns`` (schema paths) annotated ``VARIANT``.

    Each target must be a group whose children include ``metadata`` and ``value``.
    Bytes outside the rewritten schema elements are copied unchanged.
    """
    meta = parse_file_metadata(footer, what)
    nodes = schema_nodes(meta, what)
    by_path = {n.path: n for n in nodes}
    wanted = [tuple(c) for c in columns]
    patches: list[tuple[int, int, bytes]] = []
    for path in wanted:
        node = by_path.get(path)
        if node is None:
            raise ParquetFooterError(f"{what}: no schema element {'.'.join(path)!r} to mark as VARIANT")
        children = {n.path[-1] for n in nodes if n.path[:-1] == path and len(n.path) == len(path) + 1}
        if node.num_children == 0 or not {"metadata", "value"} <= children:
            raise ParquetFooterError(f"{what}: {'.'.join(path)!r} is not a Variant group (needs metadata and value)")
        if is_variant(node):
            continue
        original = encode_struct(ThriftStruct(node.element.fields))
        if original != footer[node.element.start : node.element.end]:
            raise ParquetFooterError(f"{what}: schema element {'.'.join(path)!r} does not re-encode exactly; not rewriting")
        patches.append((node.element.start, node.element.end, encode_struct(_with_variant_annotation(node.element))))
    out = bytearray()
    at = 0
    for start, end, data in sorted(patches):
        out += footer[at:start]
        out += data
        at = end
    out += footer[at:]
    return bytes(out)


def annotate_variant_columns(path: str | os.PathLike[str], columns: Iterable[Sequence[str]]) -> None:
    """Rewrite the footer of the Parquet file at ``path`` in place so that the groups at
    ``columns`` carry the ``VARIANT`` logical type. Data pages are not touched."""
    name = os.fspath(path)
    footer, start = read_footer(name)
    patched = annotate_footer(footer, columns, name)
    if patched == footer:
        return
    try:
        with open(name, "r+b") as f:
            f.seek(start)
            f.write(patched)
            f.write(struct.pack("<I", len(patched)))
            f.write(MAGIC)
            f.truncate()
    except OSError as exc:
        raise ParquetFooterError(f"{name}: cannot rewrite footer ({exc})") from None


def variant_columns_in_footer(path: str | os.PathLike[str]) -> list[tuple[str, ...]]:
    """Schema paths of the groups annotated ``VARIANT`` in the file at ``path``."""
    name = os.fspath(path)
    footer, _ = read_footer(name)
    return [n.path for n in schema_nodes(parse_file_metadata(footer, name), name) if is_variant(n)]
