"""The Parquet footer's schema, read with a small Thrift compact-protocol decoder.

Why: pyarrow 26 reads a ``VARIANT``-annotated group as a plain struct and exposes
group annotations nowhere but in a debug string. The spec says a Variant column is
*the group carrying the VARIANT logical type*, and it also fixes which leaf
physical/logical types a shredded ``typed_value`` may use (Arrow types alone cannot
tell ``TIME(true)`` from ``TIME(false)`` or INT96 from INT64 nanos). So we decode
``FileMetaData.schema`` ourselves: only field 2 of the footer is parsed; the row
groups after it are never touched. The bounded decoder is ``thrift_compact``'s
(shared with ``parquet_annotate``); any inconsistency raises ``ParquetFooterError``
naming the source and byte offset.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, BinaryIO

from varlake.errors import ParquetFooterError
from varlake.io.thrift_compact import T_FALSE, T_I64, T_LIST, T_TRUE, CompactReader, ThriftStruct

MAX_SCHEMA_DEPTH = 99
"""Deepest node of a Parquet schema tree (the root group is 0, a top-level column 1). Arrow's
Parquet reader and writer refuse trees 100 levels deep ("schema depth limit"), so no deeper
file can be read anyway; the footer decoder refuses it first, and table schemas are held to
the same limit (``varlake.delta.schema.MAX_NESTING_DEPTH``)."""

__all__ = [
    "ConvertedType",
    "LogicalType",
    "ParquetNode",
    "PhysicalType",
    "Repetition",
    "parse_file_schema",
    "read_footer_bytes",
    "read_schema",
]

_MAGIC = b"PAR1"
_MAGIC_ENCRYPTED = b"PARE"


class PhysicalType(IntEnum):
    BOOLEAN = 0
    INT32 = 1
    INT64 = 2
    INT96 = 3
    FLOAT = 4
    DOUBLE = 5
    BYTE_ARRAY = 6
    FIXED_LEN_BYTE_ARRAY = 7


class Repetition(IntEnum):
    REQUIRED = 0
    OPTIONAL = 1
    REPEATED = 2


class ConvertedType(IntEnum):
    UTF8 = 0
    MAP = 1
    MAP_KEY_VALUE = 2
    LIST = 3
    ENUM = 4
    DECIMAL = 5
    DATE = 6
    TIME_MILLIS = 7
    TIME_MICROS = 8
    TIMESTAMP_MILLIS = 9
    TIMESTAMP_MICROS = 10
    UINT_8 = 11
    UINT_16 = 12
    UINT_32 = 13
    UINT_64 = 14
    INT_8 = 15
    INT_16 = 16
    INT_32 = 17
    INT_64 = 18
    JSON = 19
    BSON = 20
    INTERVAL = 21


# LogicalType union member ids (parquet.thrift) -> the names used in ``LogicalType.kind``.
_LOGICAL_KINDS = {
    1: "STRING", 2: "MAP", 3: "LIST", 4: "ENUM", 5: "DECIMAL", 6: "DATE", 7: "TIME",
    8: "TIMESTAMP", 9: "INTERVAL", 10: "INTEGER", 11: "UNKNOWN", 12: "JSON", 13: "BSON",
    14: "UUID", 15: "FLOAT16", 16: "VARIANT", 17: "GEOMETRY", 18: "GEOGRAPHY",
}
_TIME_UNITS = {1: "MILLIS", 2: "MICROS", 3: "NANOS"}


@dataclass(frozen=True, slots=True)
class LogicalType:
    """A decoded ``LogicalType`` union member with the parameters readers need.

    ``unit`` is MILLIS/MICROS/NANOS for TIME and TIMESTAMP; ``utc`` their
    isAdjustedToUTC; ``bit_width``/``signed`` for INTEGER; ``scale``/``precision``
    for DECIMAL; ``version`` the VARIANT specification version (None if unset).
    """

    kind: str
    unit: str | None = None
    utc: bool | None = None
    bit_width: int | None = None
    signed: bool | None = None
    scale: int | None = None
    precision: int | None = None
    version: int | None = None

    def __str__(self) -> str:
        if self.kind in ("TIME", "TIMESTAMP"):
            return f"{self.kind}({str(self.utc).lower()}, {self.unit})"
        if self.kind == "INTEGER":
            return f"INTEGER({self.bit_width},{str(self.signed).lower()})"
        if self.kind == "DECIMAL":
            return f"DECIMAL({self.precision},{self.scale})"
        return self.kind


@dataclass(slots=True)
class ParquetNode:
    """One node of the Parquet schema tree; ``leaf_index`` numbers leaves (column chunks)."""

    name: str
    repetition: Repetition | None
    physical_type: PhysicalType | None = None
    type_length: int | None = None
    converted_type: ConvertedType | int | None = None
    scale: int | None = None
    precision: int | None = None
    field_id: int | None = None
    logical: LogicalType | None = None
    children: list["ParquetNode"] = field(default_factory=list)
    leaf_index: int | None = None
    path: tuple[str, ...] = ()

    @property
    def is_group(self) -> bool:
        return self.physical_type is None

    def child(self, name: str) -> "ParquetNode | None":
        for c in self.children:
            if c.name == name:
                return c
        return None

    def leaves(self) -> Iterator["ParquetNode"]:
        """Leaves below (or at) this node, in column order."""
        if not self.children and not self.is_group:
            yield self
            return
        for c in self.children:
            yield from c.leaves()

    def is_list(self) -> bool:
        return (self.logical is not None and self.logical.kind == "LIST") or self.converted_type == ConvertedType.LIST

    def is_map(self) -> bool:
        kind = self.logical.kind if self.logical is not None else None
        return kind == "MAP" or self.converted_type in (ConvertedType.MAP, ConvertedType.MAP_KEY_VALUE)

    def is_variant(self) -> bool:
        return self.logical is not None and self.logical.kind == "VARIANT"

    def describe(self) -> str:
        """The node as the Parquet schema text writes it, e.g. ``optional int32 typed_value (INTEGER(32,false))``."""
        rep = self.repetition.name.lower() if self.repetition is not None else "required"
        if self.is_group:
            kind = "group"
        elif self.physical_type == PhysicalType.FIXED_LEN_BYTE_ARRAY:
            kind = f"fixed_len_byte_array({self.type_length})"
        else:
            kind = self.physical_type.name.lower() if self.physical_type is not None else "?"
        note = ""
        if self.logical is not None:
            note = f" ({self.logical})"
        elif self.converted_type is not None:
            ct = self.converted_type
            note = f" ({ct.name if isinstance(ct, ConvertedType) else ct})"
        return f"{rep} {kind} {self.name}{note}"


# --- schema --------------------------------------------------------------------------------


def _logical(raw: Any) -> LogicalType | None:
    if not isinstance(raw, ThriftStruct) or not raw.fields:
        return None
    member = raw.fields[0]
    kind = _LOGICAL_KINDS.get(member.id, f"UNKNOWN_LOGICAL_{member.id}")
    params = member.value if isinstance(member.value, ThriftStruct) else ThriftStruct()
    if kind in ("TIME", "TIMESTAMP"):
        unit_raw = params.value_of(2)
        unit = _TIME_UNITS.get(unit_raw.fields[0].id, "?") if isinstance(unit_raw, ThriftStruct) and unit_raw.fields else None
        return LogicalType(kind, unit=unit, utc=bool(params.value_of(1, False)))
    if kind == "INTEGER":
        return LogicalType(kind, bit_width=params.value_of(1), signed=bool(params.value_of(2, True)))
    if kind == "DECIMAL":
        return LogicalType(kind, scale=params.value_of(1), precision=params.value_of(2))
    if kind == "VARIANT":
        return LogicalType(kind, version=params.value_of(1))
    return LogicalType(kind)


def _enum(cls: type[IntEnum], raw: Any) -> Any:
    if raw is None:
        return None
    try:
        return cls(raw)
    except ValueError:
        return raw


def _schema_elements(reader: CompactReader) -> list[ThriftStruct]:
    """Read FileMetaData up to and including field 2 (schema) and stop there."""
    for fid, ttype in reader.field_headers():
        if fid == 2:
            if ttype != T_LIST:
                raise reader.fail("FileMetaData.schema is not a list")
            elements = reader.value(ttype, 1).items
            if not all(isinstance(e, ThriftStruct) for e in elements):
                raise reader.fail("schema element is not a struct")
            return elements
        if ttype not in (T_TRUE, T_FALSE):
            reader.value(ttype, 1)
    raise reader.fail("FileMetaData has no schema")


def parse_file_schema(footer: bytes, source: str = "<footer>") -> ParquetNode:
    """The schema tree (root group) of a serialized ``FileMetaData``."""
    return _parse_file_schema(CompactReader(footer, source))


def parse_file_summary(footer: bytes, source: str = "<footer>") -> tuple[ParquetNode, int]:
    """The schema tree and the row count (``FileMetaData.num_rows``, field 3) of a footer."""
    reader = CompactReader(footer, source)
    root = _parse_file_schema(reader)
    for fid, ttype in reader.field_headers(last=2):  # resume FileMetaData after its schema
        if fid == 3:
            if ttype != T_I64:
                raise reader.fail("FileMetaData.num_rows is not an i64")
            rows = reader.value(ttype, 1)
            if rows < 0:
                raise reader.fail(f"FileMetaData.num_rows is negative ({rows})")
            return root, rows
        if ttype not in (T_TRUE, T_FALSE):
            reader.value(ttype, 1)
    raise reader.fail("FileMetaData has no num_rows")


def _parse_file_schema(reader: CompactReader) -> ParquetNode:
    elements = _schema_elements(reader)
    if not elements:
        raise reader.fail("empty schema")
    pos = 0
    leaf_counter = 0

    def build(parent_path: tuple[str, ...], depth: int) -> ParquetNode:
        nonlocal pos, leaf_counter
        if pos >= len(elements):
            raise reader.fail("schema element count does not match num_children")
        if depth > MAX_SCHEMA_DEPTH:
            raise reader.fail(f"schema nested deeper than {MAX_SCHEMA_DEPTH} levels")
        e = elements[pos]
        pos += 1
        raw_name = e.value_of(4)
        if not isinstance(raw_name, bytes):
            raise reader.fail(f"schema element {pos - 1} has no name")
        try:
            name = raw_name.decode("utf-8")
        except UnicodeDecodeError as exc:
            where = ".".join(parent_path) or "the root"
            raise reader.fail(
                f"the name of schema element {pos - 1} (under {where}) is not UTF-8 (name byte {exc.start})"
            ) from None
        node = ParquetNode(
            name=name,
            repetition=_enum(Repetition, e.value_of(3)),
            physical_type=_enum(PhysicalType, e.value_of(1)),
            type_length=e.value_of(2),
            converted_type=_enum(ConvertedType, e.value_of(6)),
            scale=e.value_of(7),
            precision=e.value_of(8),
            field_id=e.value_of(9),
            logical=_logical(e.value_of(10)),
            path=parent_path + (name,) if depth > 0 else (),
        )
        n_children = e.value_of(5)
        if node.physical_type is None:
            if not isinstance(n_children, int) or n_children < 0:
                raise reader.fail(f"group {name!r} has no num_children")
            for _ in range(n_children):
                node.children.append(build(node.path, depth + 1))
        else:
            node.leaf_index = leaf_counter
            leaf_counter += 1
        return node

    root = build((), 0)
    if pos != len(elements):
        raise reader.fail(f"{len(elements) - pos} schema elements left after the root group")
    return root


def read_footer_bytes(handle: BinaryIO, size: int, source: str) -> bytes:
    """The serialized FileMetaData at the end of a Parquet file (``handle`` is seekable)."""
    if size < 12:
        raise ParquetFooterError(f"{source}: not a Parquet file ({size} bytes is too small)")
    handle.seek(size - 8)
    tail = handle.read(8)
    if len(tail) != 8:
        raise ParquetFooterError(f"{source}: could not read the Parquet file tail")
    if tail[4:] == _MAGIC_ENCRYPTED:
        raise ParquetFooterError(f"{source}: encrypted Parquet footers are not supported")
    if tail[4:] != _MAGIC:
        raise ParquetFooterError(f"{source}: not a Parquet file (no PAR1 magic at the end)")
    length = int.from_bytes(tail[:4], "little")
    if length <= 0 or length > size - 12:
        raise ParquetFooterError(f"{source}: footer length {length} does not fit a file of {size} bytes")
    handle.seek(size - 8 - length)
    footer = handle.read(length)
    if len(footer) != length:
        raise ParquetFooterError(f"{source}: footer truncated")
    return footer


def read_schema(handle: BinaryIO, size: int, source: str) -> ParquetNode:
    """Read and decode the schema tree of the Parquet file behind ``handle``."""
    return parse_file_schema(read_footer_bytes(handle, size, source), source)


def read_summary(handle: BinaryIO, size: int, source: str) -> tuple[ParquetNode, int]:
    """Read and decode the schema tree and row count of the Parquet file behind ``handle``."""
    return parse_file_summary(read_footer_bytes(handle, size, source), source)
