"""Reading Parquet files with Variant columns in any layout (``read_parquet``).

Which columns are Variants, in order of authority:

1. groups annotated with the Parquet ``VARIANT`` logical type, found in the footer's
   thrift schema (pyarrow 26 reads such a group as a plain struct and exposes the
   annotation nowhere else; see ``thrift_footer``);
2. fields typed ``"variant"`` in Spark's schema JSON under the file key
   ``org.apache.spark.sql.parquet.row.metadata`` (files written with the annotation
   switched off);
3. columns the caller names in ``variant_columns`` (``"v"`` or ``"s.v"`` for a
   struct field).

Every Variant comes back as ``struct<metadata: binary not null, value: binary not
null>``, whatever its layout (``varlake.shred.unshred``), typed with Arrow's canonical
``arrow.parquet.variant`` extension type (``varlake.shred.arrow_extension``). Variants
nested in structs, lists and maps are rebuilt in place.

Before any data is read the footer's leaf types under each Variant are checked
against the spec's table of shredded types (unsigned integers, INT96, plain
FIXED_LEN_BYTE_ARRAY, millisecond times and the like are rejected), since Arrow
types alone cannot tell them all apart.

Path projection (``paths={"v": ["$.a", "$.b.c"]}``) reads, per row group, only the
Parquet columns a path needs: the ``metadata``, the shredded subtree at the end of
the path and the ``value`` columns on the way down, skipping every ``value``
column whose footer statistics say it is all null there (``null_count ==
num_values``). Results are columns named ``"v:$.a"`` holding the Variant at the
path (null where the path is missing).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from varlake.errors import (
    InvalidShreddedLayoutError,
    ParquetFooterError,
    StorageFileNotFoundError,
    UnknownColumnError,
)
from varlake.io.locations import is_object_store_uri
from varlake.io.thrift_footer import ConvertedType, ParquetNode, PhysicalType, read_schema, read_summary
from varlake.shred.layout import recognise_layout
from varlake.shred.nested import LIST_ELEMENT, MAP_VALUE, ArrowPath, unshred_nested, unshredded_type
from varlake.shred.project import project_path
from varlake.shred.unshred import UNSHREDDED_TYPE
from varlake.shred.variant_columns import with_variant_extension, without_variant_extension
from varlake.variant.path import VariantPath

__all__ = ["SPARK_ROW_METADATA_KEY", "file_column_names", "file_summary", "read_parquet", "variant_column_paths"]

SPARK_ROW_METADATA_KEY = b"org.apache.spark.sql.parquet.row.metadata"
Source = str | os.PathLike[str] | BinaryIO


# --- opening ---------------------------------------------------------------------------


def _source_name(source: Source) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return str(getattr(source, "name", "<file object>"))


def _open(source: Source, filesystem: Any) -> tuple[pq.ParquetFile, ParquetNode]:
    """The file opened by pyarrow and its schema tree as varlake's own footer decoder reads it
    -- first, so a corrupt footer (a column name that is not UTF-8, a tree too deep, a
    truncated thrift) is a ``ParquetFooterError`` naming the file."""
    name = _source_name(source)
    try:
        if isinstance(source, (str, os.PathLike)):
            path = os.fspath(source)
            if filesystem is not None:
                with filesystem.open_input_file(path) as handle:
                    root = read_schema(handle, handle.size(), name)
                pf = pq.ParquetFile(path, filesystem=filesystem, page_checksum_verification=True)
            else:
                with open(path, "rb") as handle:
                    root = read_schema(handle, os.fstat(handle.fileno()).st_size, name)
                pf = pq.ParquetFile(path, page_checksum_verification=True)
        else:
            size = source.seek(0, os.SEEK_END)
            root = read_schema(source, size, name)
            source.seek(0)
            pf = pq.ParquetFile(source, page_checksum_verification=True)
    except FileNotFoundError as exc:
        raise StorageFileNotFoundError(f"{name}: no such file") from exc
    except IsADirectoryError as exc:
        raise StorageFileNotFoundError(f"{name}: is a directory, not a Parquet file") from exc
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError, UnicodeDecodeError) as exc:
        raise ParquetFooterError(f"{name}: cannot open as Parquet ({exc})") from exc
    return pf, root


def _schema(pf: pq.ParquetFile) -> pa.Schema:
    """The file's Arrow schema, Variants as their storage structs (pyarrow reads a ``VARIANT``
    group as ``arrow.parquet.variant`` once that is registered: ``register_variant_extension``)."""
    return without_variant_extension(pf.schema_arrow)


def file_column_names(source: Source, filesystem: Any = None) -> list[str]:
    """The top-level column names of a Parquet file, from its footer alone (a file-like
    ``source`` is left at position 0); ``ParquetFooterError`` naming the file if corrupt."""
    return file_summary(source, filesystem)[0]


def file_summary(source: Source, filesystem: Any = None) -> tuple[list[str], int]:
    """The top-level column names and the row count of a Parquet file, from its footer alone
    (a file-like ``source`` is left at position 0); ``ParquetFooterError`` naming the file if
    corrupt. The count is the file's own, never a log's ``numRecords``."""
    name = _source_name(source)
    try:
        if isinstance(source, (str, os.PathLike)):
            if filesystem is not None:
                with filesystem.open_input_file(os.fspath(source)) as handle:
                    root, rows = read_summary(handle, handle.size(), name)
            else:
                with open(os.fspath(source), "rb") as handle:
                    root, rows = read_summary(handle, os.fstat(handle.fileno()).st_size, name)
        else:
            root, rows = read_summary(source, source.seek(0, os.SEEK_END), name)
            source.seek(0)
    except FileNotFoundError as exc:
        raise StorageFileNotFoundError(f"{name}: no such file") from exc
    except IsADirectoryError as exc:
        raise StorageFileNotFoundError(f"{name}: is a directory, not a Parquet file") from exc
    except OSError as exc:
        raise ParquetFooterError(f"{name}: cannot open as Parquet ({exc})") from exc
    return [child.name for child in root.children], rows


# --- which columns are Variants -----------------------------------------------------------


def _list_element(node: ParquetNode) -> ParquetNode | None:
    """The element node of a LIST-annotated group (3-level, or legacy 2-level)."""
    if len(node.children) != 1:
        return None
    repeated = node.children[0]
    if not repeated.is_group or len(repeated.children) != 1:
        return repeated
    return repeated.children[0]


def _annotated(node: ParquetNode, t: pa.DataType, prefix: ArrowPath, out: list[ArrowPath]) -> None:
    if node.is_variant():
        out.append(prefix)
        return
    if not node.is_group:
        return
    if node.is_list() and (pa.types.is_list(t) or pa.types.is_large_list(t)):
        element = _list_element(node)
        if element is not None:
            _annotated(element, t.value_type, prefix + (LIST_ELEMENT,), out)
        return
    if node.is_map() and pa.types.is_map(t):
        if len(node.children) == 1 and len(node.children[0].children) == 2:
            _annotated(node.children[0].children[1], t.item_type, prefix + (MAP_VALUE,), out)
        return
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            child = node.child(t.field(i).name)
            if child is not None:
                _annotated(child, t.field(i).type, prefix + (t.field(i).name,), out)


def _spark_variants(spark_type: Any, prefix: ArrowPath, out: list[ArrowPath]) -> None:
    if spark_type == "variant":
        out.append(prefix)
    elif isinstance(spark_type, dict):
        kind = spark_type.get("type")
        if kind == "struct":
            for f in spark_type.get("fields", []):
                if isinstance(f, dict) and isinstance(f.get("name"), str):
                    _spark_variants(f.get("type"), prefix + (f["name"],), out)
        elif kind == "array":
            _spark_variants(spark_type.get("elementType"), prefix + (LIST_ELEMENT,), out)
        elif kind == "map":
            _spark_variants(spark_type.get("valueType"), prefix + (MAP_VALUE,), out)


def _named_variant(name: str, schema: pa.Schema, where: str) -> ArrowPath:
    if name in schema.names:
        return (name,)
    parts = tuple(name.split("."))
    t: pa.DataType | None = None
    for i, part in enumerate(parts):
        if i == 0:
            t = schema.field(part).type if part in schema.names else None
        elif t is not None and pa.types.is_struct(t) and t.get_field_index(part) >= 0:
            t = t.field(part).type
        else:
            t = None
        if t is None:
            raise UnknownColumnError(f"{where}: variant_columns names {name!r}, which the file does not have")
    return parts


def variant_column_paths(
    pf: pq.ParquetFile, root: ParquetNode, variant_columns: Iterable[str] = (), where: str = "<file>"
) -> list[ArrowPath]:
    """Arrow paths (field names, ``[]`` for list elements, ``{}`` for map values) of every Variant."""
    schema = _schema(pf)
    found: list[ArrowPath] = []
    for f in schema:
        node = root.child(f.name)
        if node is not None:
            _annotated(node, f.type, (f.name,), found)
    kv = pf.metadata.metadata or {}
    spark = kv.get(SPARK_ROW_METADATA_KEY)
    if spark:
        try:
            _spark_variants(json.loads(spark), (), found)
        except (ValueError, RecursionError):
            pass  # an unreadable Spark schema only loses this hint; the annotation still counts
    for name in variant_columns:
        found.append(_named_variant(name, schema, where))
    unique: list[ArrowPath] = []
    for p in found:
        if p not in unique and _arrow_type_at(schema, p) is not None:
            unique.append(p)
    return unique


def _arrow_type_at(schema: pa.Schema, path: ArrowPath) -> pa.DataType | None:
    if path[0] not in schema.names:
        return None
    t = schema.field(path[0]).type
    for part in path[1:]:
        if part == LIST_ELEMENT and (pa.types.is_list(t) or pa.types.is_large_list(t)):
            t = t.value_type
        elif part == MAP_VALUE and pa.types.is_map(t):
            t = t.item_type
        elif pa.types.is_struct(t) and t.get_field_index(part) >= 0:
            t = t.field(part).type
        else:
            return None
    return t


def _parquet_node_at(root: ParquetNode, path: ArrowPath) -> ParquetNode | None:
    node: ParquetNode | None = root
    for part in path:
        if node is None:
            return None
        if part == LIST_ELEMENT:
            node = _list_element(node)
        elif part == MAP_VALUE:
            node = node.children[0].children[1] if len(node.children) == 1 and len(node.children[0].children) == 2 else None
        else:
            node = node.child(part)
    return node


# --- the spec's table of shredded leaf types --------------------------------------------------

_INT_CONVERTED = {ConvertedType.INT_8: 8, ConvertedType.INT_16: 16, ConvertedType.INT_32: 32, ConvertedType.INT_64: 64}


def _leaf_type_allowed(node: ParquetNode) -> bool:
    """Is this ``typed_value`` leaf one of VariantShredding.md's shredded value types?"""
    pt = node.physical_type
    lt = node.logical
    ct = node.converted_type
    kind = lt.kind if lt is not None else None
    if kind is None and ct is not None:
        kind = {
            ConvertedType.UTF8: "STRING", ConvertedType.DECIMAL: "DECIMAL", ConvertedType.DATE: "DATE",
            ConvertedType.TIME_MICROS: "TIME_MICROS", ConvertedType.TIMESTAMP_MICROS: "TIMESTAMP_MICROS",
        }.get(ct, "INT" if ct in _INT_CONVERTED else "OTHER")  # type: ignore[call-overload]
    if pt == PhysicalType.BOOLEAN or pt == PhysicalType.FLOAT or pt == PhysicalType.DOUBLE:
        return kind is None
    if pt == PhysicalType.INT32:
        if kind == "INTEGER":
            return bool(lt.signed) and lt.bit_width in (8, 16, 32)  # type: ignore[union-attr]
        if kind == "INT":
            return _INT_CONVERTED[ct] in (8, 16, 32)  # type: ignore[index]
        return kind in (None, "DATE", "DECIMAL")
    if pt == PhysicalType.INT64:
        if kind == "INTEGER":
            return bool(lt.signed) and lt.bit_width == 64  # type: ignore[union-attr]
        if kind == "INT":
            return _INT_CONVERTED[ct] == 64  # type: ignore[index]
        if kind == "TIME":
            return lt.unit == "MICROS"  # type: ignore[union-attr]
        if kind == "TIMESTAMP":
            return lt.unit in ("MICROS", "NANOS")  # type: ignore[union-attr]
        return kind in (None, "DECIMAL", "TIME_MICROS", "TIMESTAMP_MICROS")
    if pt == PhysicalType.BYTE_ARRAY:
        return kind in (None, "STRING", "DECIMAL")
    if pt == PhysicalType.FIXED_LEN_BYTE_ARRAY:
        return kind == "DECIMAL" or (kind == "UUID" and node.type_length == 16)
    return False


def _check_leaf_types(group: ParquetNode, where: str) -> None:
    """Reject Parquet leaves under a Variant group that the shredding spec does not allow."""

    def walk(node: ParquetNode, vpath: str, top: bool) -> None:
        for child in node.children:
            if child.name.startswith("_"):
                continue
            if child.name in ("value", "metadata") and not child.is_group:
                if child.physical_type != PhysicalType.BYTE_ARRAY or (child.name == "metadata" and not top):
                    raise InvalidShreddedLayoutError(f"{where}, path {vpath}: unsupported Variant field {child.describe()}")
            elif child.name == "typed_value":
                if not child.is_group:
                    if not _leaf_type_allowed(child):
                        raise InvalidShreddedLayoutError(
                            f"{where}, path {vpath}: unsupported shredded value type: {child.describe()}"
                        )
                elif child.is_list():
                    element = _list_element(child)
                    if element is not None and element.is_group:
                        walk(element, f"{vpath}[*]", False)
                else:
                    for field_group in child.children:
                        if field_group.is_group:
                            key = field_group.name
                            walk(field_group, f"{vpath}.{key}", False)

    walk(group, "$", True)


# --- path projection planning --------------------------------------------------------------------


@dataclass(frozen=True)
class _PathRequest:
    column: str
    text: str
    path: VariantPath

    @property
    def output_name(self) -> str:
        return f"{self.column}:{self.text}"


def _all_null(rg: pq.RowGroupMetaData, leaf: ParquetNode) -> bool:
    """Footer statistics prove the column chunk holds only nulls."""
    chunk = rg.column(leaf.leaf_index)  # type: ignore[arg-type]
    stats = chunk.statistics
    return bool(stats is not None and stats.has_null_count and stats.null_count == chunk.num_values)


def _without_null_values(pf: pq.ParquetFile, root: ParquetNode, selected: list[str], variants: list[ArrowPath]) -> list[str] | None:
    """Leaf paths for ``selected`` without the ``value`` leaves (next to a ``typed_value``) of
    top-level Variant columns that statistics prove null in every row group: a perfectly
    shredded file's residuals, which cost decoding and read as absent anyway. None: no change."""
    md = pf.metadata
    tops = {vp[0] for vp in variants if len(vp) == 1}
    out: list[str] = []
    skipped = False
    for name in selected:
        node = root.child(name)
        leaves = list(node.leaves()) if node is not None and name in tops and md.num_row_groups else []
        if not leaves or any("." in part for leaf in leaves for part in leaf.path):
            out.append(name)
            continue
        for leaf in leaves:
            parent = _parquet_node_at(root, leaf.path[:-1])
            if (leaf.name == "value" and parent is not None and parent.child("typed_value") is not None
                    and all(_all_null(md.row_group(i), leaf) for i in range(md.num_row_groups))):
                skipped = True
            else:
                out.append(".".join(leaf.path))
    return out if skipped else None


def _value_leaf(node: ParquetNode) -> ParquetNode | None:
    v = node.child("value")
    return v if v is not None and not v.is_group else None


def _plan_path(group: ParquetNode, path: VariantPath, rg: pq.RowGroupMetaData) -> set[int]:
    """Leaf indices a path needs in one row group."""
    needed: set[int] = set()
    meta = group.child("metadata")
    if meta is not None and meta.leaf_index is not None:
        needed.add(meta.leaf_index)

    def add_value(node: ParquetNode) -> None:
        v = _value_leaf(node)
        if v is not None and not _all_null(rg, v):
            needed.add(v.leaf_index)  # type: ignore[arg-type]

    node = group
    for seg in path.segments:
        add_value(node)
        typed = node.child("typed_value")
        if typed is None or not typed.is_group:
            return needed
        if isinstance(seg, str) and not typed.is_list():
            child = typed.child(seg)
            if child is None:
                return needed
            node = child
        elif isinstance(seg, int) and typed.is_list():
            element = _list_element(typed)
            if element is None:
                return needed
            node = element
        else:
            return needed
    # the subtree at the end of the path is rebuilt whole
    for leaf in node.leaves():
        if leaf.name == "value" and _all_null(rg, leaf):
            continue
        needed.add(leaf.leaf_index)  # type: ignore[arg-type]
    return needed


def _read_row_group(pf: pq.ParquetFile, root: ParquetNode, index: int, leaves: set[int], where: str) -> pa.Table:
    by_index = {leaf.leaf_index: leaf for leaf in root.leaves()}
    names = [".".join(by_index[i].path) for i in sorted(leaves)]
    try:
        return without_variant_extension(pf.read_row_group(index, columns=names, use_threads=True))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
        raise ParquetFooterError(f"{where}: cannot read row group {index} ({exc})") from exc


# --- the reader ---------------------------------------------------------------------------------


def _normalize_paths(paths: Mapping[str, Sequence[str] | str] | None) -> list[_PathRequest]:
    out: list[_PathRequest] = []
    for column, texts in (paths or {}).items():
        if isinstance(texts, str):
            texts = [texts]
        for text in texts:
            out.append(_PathRequest(column, text, VariantPath.parse(text)))
    return out


def read_parquet(
    path: Source,
    columns: Sequence[str] | None = None,
    variant_columns: Sequence[str] | None = None,
    paths: Mapping[str, Sequence[str] | str] | None = None,
    *,
    filesystem: Any = None,
    arrow_extension: bool = True,
    storage_options: Mapping[str, str] | None = None,
) -> pa.Table:
    """Read a Parquet file; every Variant column comes back as ``struct<metadata, value>``,
    typed ``arrow.parquet.variant`` (``shred.arrow_extension``; ``arrow_extension=False``:
    the plain struct).

    ``columns`` selects top-level columns (default: all). ``variant_columns`` names
    Variant columns the file does not mark itself (``"v"``, or ``"s.v"`` inside a
    struct). ``paths`` maps a top-level Variant column to paths (``"$.a.b[0]"``); each
    yields a column ``"<column>:<path>"`` with the Variant at that path (null where
    missing), reading only the Parquet columns the path needs. A Variant column named
    in ``paths`` is itself returned only if ``columns`` lists it. ``filesystem`` is an
    optional ``pyarrow.fs.FileSystem``; ``path`` may also be a binary file object, or an
    object-store URI (``s3://bucket/key.parquet``, ...; read by ranges, configured from the
    environment and ``storage_options``).

    Raises ``InvalidShreddedLayoutError`` for layouts the spec forbids,
    ``ParquetFooterError`` for unreadable files, ``StorageFileNotFoundError`` if the
    file does not exist and ``UnknownColumnError`` for unknown column names.
    """
    if filesystem is None and isinstance(path, (str, os.PathLike)) and is_object_store_uri(path):
        from varlake.io.uris import storage_for

        storage, location = storage_for(path, storage_options)
        with storage.open_read(location) as handle:
            return read_parquet(handle, columns, variant_columns, paths, arrow_extension=arrow_extension)
    where = _source_name(path)
    pf, root = _open(path, filesystem)
    schema = _schema(pf)
    variants = variant_column_paths(pf, root, variant_columns or (), where)
    for vp in variants:
        node = _parquet_node_at(root, vp)
        if node is not None:
            _check_leaf_types(node, f"{where}: column {'.'.join(vp)!r}")
        t = _arrow_type_at(schema, vp)
        recognise_layout(t, f"{where}: column {'.'.join(vp)!r}")  # fail before reading data

    requests = _normalize_paths(paths)
    for req in requests:
        if (req.column,) not in variants:
            if req.column not in schema.names:
                raise UnknownColumnError(f"{where}: paths names column {req.column!r}, which the file does not have")
            raise InvalidShreddedLayoutError(f"{where}: paths names column {req.column!r}, which is not a top-level Variant column")

    if columns is None:
        path_columns = {r.column for r in requests}
        selected = [n for n in schema.names if n not in path_columns]
    else:
        selected = list(columns)
        for name in selected:
            if name not in schema.names:
                raise UnknownColumnError(f"{where}: no column {name!r} (columns: {', '.join(schema.names)})")

    if not requests:
        try:
            read_as = _without_null_values(pf, root, selected, variants) or selected
            table = without_variant_extension(pf.read(columns=read_as, use_threads=True))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
            raise ParquetFooterError(f"{where}: cannot read ({exc})") from exc
        out = _rewrite_table(table, variants, where)
    else:
        out = _read_with_paths(pf, root, selected, requests, variants, where)
    if not arrow_extension:
        return out
    tagged = {name: _inner(variants, name) for name in selected}
    tagged.update({req.output_name: [()] for req in requests})
    return with_variant_extension(out, tagged)


def _inner(variants: list[ArrowPath], name: str) -> list[ArrowPath]:
    return [p[1:] for p in variants if p[0] == name]


def _rewrite_table(table: pa.Table, variants: list[ArrowPath], where: str) -> pa.Table:
    columns = []
    fields = []
    for f, col in zip(table.schema, table.columns):
        col = unshred_nested(col, _inner(variants, f.name), source=where, name=f.name)
        columns.append(col)
        fields.append(pa.field(f.name, col.type, f.nullable, f.metadata))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=table.schema.metadata))


def _read_with_paths(
    pf: pq.ParquetFile,
    root: ParquetNode,
    selected: list[str],
    requests: list[_PathRequest],
    variants: list[ArrowPath],
    where: str,
) -> pa.Table:
    schema = _schema(pf)
    md = pf.metadata
    plain_leaves: set[int] = set()
    for name in selected:
        node = root.child(name)
        if node is not None:
            plain_leaves.update(leaf.leaf_index for leaf in node.leaves())  # type: ignore[misc]
    out_fields = []
    for name in selected:
        f = schema.field(name)
        out_fields.append(pa.field(name, unshredded_type(f.type, _inner(variants, name)), f.nullable, f.metadata))
    for req in requests:
        out_fields.append(pa.field(req.output_name, UNSHREDDED_TYPE, True))
    out_schema = pa.schema(out_fields, metadata=schema.metadata)

    pieces: list[pa.Table] = []
    row_offset = 0
    for rg_index in range(md.num_row_groups):
        rg = md.row_group(rg_index)
        leaves = set(plain_leaves)
        for req in requests:
            leaves |= _plan_path(root.child(req.column), req.path, rg)  # type: ignore[arg-type]
        table = _read_row_group(pf, root, rg_index, leaves, where)
        arrays = []
        for name in selected:
            col = table.column(name)
            arrays.append(unshred_nested(col, _inner(variants, name), source=where, name=name, row_offset=row_offset))
        for req in requests:
            group = table.column(req.column)
            arrays.append(project_path(group, req.path, where=f"{where}: column {req.column!r}", row_offset=row_offset))
        pieces.append(pa.Table.from_arrays(arrays, schema=out_schema))
        row_offset += rg.num_rows
    if not pieces:
        return out_schema.empty_table()
    return pa.concat_tables(pieces)
