"""Mark Variant groups in a written Parquet file with the ``VARIANT`` logical type.

pyarrow 26 writes a Variant column as a plain group ``{metadata, value[, typed_value]}``:
it cannot emit the ``VARIANT`` annotation that DuckDB (and parquet-java readers) need to
see the group as a Variant. This module rewrites only the file's footer: it parses the
thrift ``FileMetaData`` (compact protocol, ``thrift_compact``), re-encodes the ``SchemaElement`` of each
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
from dataclasses import dataclass

from varlake.errors import ParquetFooterError
from varlake.io.thrift_compact import (
    T_BYTE,
    T_STRUCT,
    CompactReader,
    ThriftField,
    ThriftList,
    ThriftStruct,
    encode_struct,
)
from varlake.io.thrift_footer import read_footer_bytes

__all__ = [
    "SchemaNode",
    "annotate_footer",
    "annotate_variant_bytes",
    "annotate_variant_columns",
    "encode_struct",
    "is_variant",
    "parse_file_metadata",
    "read_footer",
    "schema_nodes",
    "variant_columns_in_footer",
]

MAGIC = b"PAR1"
FILE_METADATA_SCHEMA = 2
SCHEMA_NAME = 4
SCHEMA_NUM_CHILDREN = 5
SCHEMA_LOGICAL_TYPE = 10
LOGICAL_TYPE_VARIANT = 16
VARIANT_SPEC_VERSION = 1


# --- footer access ----------------------------------------------------------------------------


def read_footer(path: str | os.PathLike[str]) -> tuple[bytes, int]:
    """The footer bytes of a Parquet file and the offset where they start."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            footer = read_footer_bytes(f, size, name)
    except OSError as exc:
        raise ParquetFooterError(f"{name}: cannot read footer ({exc})") from None
    return footer, size - 8 - len(footer)


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
    stack: list[tuple[tuple[str, ...], int]] = [((), _num_children(elements[0], what))]
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
        n = _num_children(el, what)
        lt = el.get(SCHEMA_LOGICAL_TYPE)
        nodes.append(SchemaNode(path, el, n, lt.value if lt is not None else None))
        if n:
            stack.append((path, n))
    return nodes


def _num_children(el: ThriftStruct, what: str) -> int:
    f = el.get(SCHEMA_NUM_CHILDREN)
    if f is None:
        return 0
    if not isinstance(f.value, int):
        raise ParquetFooterError(f"{what}: schema element has a num_children that is not an integer")
    return int(f.value)


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


def annotate_variant_bytes(data: bytes, columns: Iterable[Sequence[str]], name: str) -> bytes:
    """``data`` (a whole Parquet file in memory) with its footer rewritten as
    ``annotate_variant_columns`` rewrites a file's; the column chunks are copied unchanged."""
    import io

    footer = read_footer_bytes(io.BytesIO(data), len(data), name)
    patched = annotate_footer(footer, columns, name)
    if patched == footer:
        return data
    start = len(data) - 8 - len(footer)
    return b"".join((data[:start], patched, struct.pack("<I", len(patched)), MAGIC))


def variant_columns_in_footer(path: str | os.PathLike[str]) -> list[tuple[str, ...]]:
    """Schema paths of the groups annotated ``VARIANT`` in the file at ``path``."""
    name = os.fspath(path)
    footer, _ = read_footer(name)
    return [n.path for n in schema_nodes(parse_file_metadata(footer, name), name) if is_variant(n)]
