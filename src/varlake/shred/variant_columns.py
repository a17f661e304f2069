"""Tagging, untagging and rendering the Variant columns of Arrow data, at any depth.

A Variant is located by an *Arrow path* (``shred.nested``): struct field names,
``LIST_ELEMENT`` for list elements and ``MAP_VALUE`` for map values, from the column.

- ``with_variant_extension`` gives the Variants the ``arrow.parquet.variant`` extension
  type (``shred.arrow_extension``), zero-copy; varlake's readers hand data out this way.
- ``without_variant_extension`` gives back the plain storage structs (and with
  ``unshred=True`` rebuilds shredded storage as ``struct<metadata, value>``); varlake's
  writers take either form through it.
- ``variants_as_json`` replaces every Variant by Spark's JSON text (a string column).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.errors import UnknownColumnError
from varlake.shred.arrow_extension import VariantExtensionArray, VariantExtensionType, is_variant_extension
from varlake.shred.nested import LIST_ELEMENT, MAP_VALUE, ArrowPath, unshred_nested
from varlake.shred.schema import is_variant_struct

__all__ = [
    "contains_variant_extension",
    "variant_extension_paths",
    "variant_nulls_filled",
    "variants_as_json",
    "with_variant_extension",
    "without_variant_extension",
]

Data = TypeVar("Data", pa.Table, pa.RecordBatch, pa.Array, pa.ChunkedArray, pa.Schema)


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def _inner(paths: Sequence[ArrowPath], head: str) -> list[ArrowPath]:
    return [p[1:] for p in paths if p and p[0] == head]


def _children(t: pa.DataType) -> list[tuple[str, pa.Field]]:
    """The child fields of a nested type, each with its Arrow-path step."""
    if pa.types.is_struct(t):
        return [(t.field(i).name, t.field(i)) for i in range(t.num_fields)]
    if _is_list(t):
        return [(LIST_ELEMENT, t.value_field)]
    if pa.types.is_map(t):
        return [(MAP_VALUE, t.item_field)]
    return []


def _rebuild(t: pa.DataType, child: Callable[[str, pa.Field], pa.DataType]) -> pa.DataType:
    """``t`` with each child field's type replaced by ``child(step, field)``."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, child(f.name, f), f.nullable, f.metadata) for f in t])
    if _is_list(t):
        f = t.value_field
        value = pa.field(f.name, child(LIST_ELEMENT, f), f.nullable, f.metadata)
        return pa.large_list(value) if pa.types.is_large_list(t) else pa.list_(value)
    if pa.types.is_map(t):
        f = t.item_field
        return pa.map_(t.key_field, pa.field(f.name, child(MAP_VALUE, f), f.nullable, f.metadata), t.keys_sorted)
    return t


def variant_extension_paths(t: pa.DataType) -> list[ArrowPath]:
    """Arrow paths (from a column of type ``t``) of every ``arrow.parquet.variant`` in it."""
    if is_variant_extension(t):
        return [()]
    return [(step, *p) for step, f in _children(t) for p in variant_extension_paths(f.type)]


def contains_variant_extension(t: pa.DataType | pa.Schema) -> bool:
    """Whether any field of ``t`` (a type or a schema) is an ``arrow.parquet.variant``."""
    if isinstance(t, pa.Schema):
        return any(contains_variant_extension(f.type) for f in t)
    return bool(variant_extension_paths(t))


def _storage_shaped(t: pa.DataType) -> list[ArrowPath]:
    """Arrow paths of the plain Variant storage structs in ``t`` (``shred.schema.is_variant_struct``)."""
    if is_variant_struct(t):
        return [()]
    return [(step, *p) for step, f in _children(t) for p in _storage_shaped(f.type)]


def _tagged(t: pa.DataType, paths: Sequence[ArrowPath]) -> pa.DataType:
    if () in paths:
        return t if is_variant_extension(t) else VariantExtensionType(t)
    if not paths:
        return t
    return _rebuild(t, lambda step, f: _tagged(f.type, _inner(paths, step)))


def _untagged(t: pa.DataType) -> pa.DataType:
    if is_variant_extension(t):
        return t.storage_type
    return _rebuild(t, lambda step, f: _untagged(f.type))


Columns = Sequence[str | Sequence[str]] | Mapping[str, Sequence[ArrowPath]]


def _column_paths(names: Sequence[str], columns: Columns | None, types: Sequence[pa.DataType]) -> dict[str, list[ArrowPath]]:
    """Per column, the Arrow paths to tag: as given (``{"col": [(), ("a", "[]")]}``, or
    dotted names / path tuples from the column), else every storage-shaped struct."""
    if columns is None:
        return {n: _storage_shaped(t) for n, t in zip(names, types)}
    if isinstance(columns, Mapping):
        return {n: list(columns.get(n, ())) for n in names}
    out: dict[str, list[ArrowPath]] = {n: [] for n in names}
    for c in columns:
        parts = tuple(c.split(".")) if isinstance(c, str) else tuple(c)
        if parts[0] not in out:
            raise UnknownColumnError(f"with_variant_extension: no column {parts[0]!r} (columns: {', '.join(names)})")
        out[parts[0]].append(parts[1:])
    return out


def _cast(column: pa.Array | pa.ChunkedArray, t: pa.DataType) -> pa.Array | pa.ChunkedArray:
    return column if column.type == t else column.cast(t)


def _map_columns(data: Data, convert: Callable[[str, pa.Array | pa.ChunkedArray], pa.Array | pa.ChunkedArray]) -> Data:
    if isinstance(data, (pa.Array, pa.ChunkedArray)):
        return convert("", data)
    columns = [convert(f.name, c) for f, c in zip(data.schema, data.columns)]
    fields = [pa.field(f.name, c.type, f.nullable, f.metadata) for f, c in zip(data.schema, columns)]
    schema = pa.schema(fields, metadata=data.schema.metadata)
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatch.from_arrays(columns, schema=schema)
    return pa.Table.from_arrays(columns, schema=schema)


def with_variant_extension(data: Data, columns: Columns | None = None) -> Data:
    """``data`` (a table, batch or array) with its Variants typed ``arrow.parquet.variant``
    (zero-copy): those ``columns`` names (``"v"``, ``"s.v"``, or Arrow-path tuples such as
    ``("l", "[]")``; ``{column: [Arrow paths]}``), or by default every struct shaped like a
    Variant's storage (``metadata`` and ``value`` binaries, optionally ``typed_value``).
    A storage the spec does not allow raises ``InvalidShreddedLayoutError``."""
    if isinstance(data, (pa.Array, pa.ChunkedArray)):
        paths = _storage_shaped(data.type) if columns is None else [tuple(c) for c in columns]  # type: ignore[misc]
        return _cast(data, _tagged(data.type, paths))  # type: ignore[return-value]
    wanted = _column_paths(data.schema.names, columns, data.schema.types)
    return _map_columns(data, lambda name, c: _cast(c, _tagged(c.type, wanted.get(name, []))))


def without_variant_extension(data: Data, *, unshred: bool = False) -> Data:
    """``data`` (a table, batch, array or schema) with every ``arrow.parquet.variant``
    replaced by its storage struct (zero-copy), or, with ``unshred``, by ``struct<metadata,
    value>`` rebuilt from shredded storage (``shred.unshred``). Data without the extension
    type is returned as it is."""
    if isinstance(data, pa.Schema):
        if not contains_variant_extension(data):
            return data
        fields = [pa.field(f.name, _untagged(f.type), f.nullable, f.metadata) for f in data]
        return pa.schema(fields, metadata=data.metadata)  # type: ignore[return-value]
    if not contains_variant_extension(data.type if isinstance(data, (pa.Array, pa.ChunkedArray)) else data.schema):
        return data

    def convert(name: str, column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
        paths = variant_extension_paths(column.type)
        if not paths:
            return column
        shredded = [p for p in paths if _type_at(column.type, p).shredded] if unshred else []
        plain = _cast(column, _untagged(column.type))
        return unshred_nested(plain, shredded, name=name or "column") if shredded else plain

    return _map_columns(data, convert)


def _type_at(t: pa.DataType, path: ArrowPath) -> pa.DataType:
    for step in path:
        t = dict(_children(t))[step].type
    return t


# --- JSON text ---------------------------------------------------------------------------------------


def _null_mask(arr: pa.Array) -> pa.Array | None:
    return pc.is_null(arr) if arr.null_count else None


def _rewrite(arr: pa.Array, found: Callable[[pa.DataType], bool], fn: Callable[[pa.Array], pa.Array]) -> pa.Array:
    """``arr`` with ``fn`` applied to every nested array whose type ``found`` picks (struct
    fields, list elements, map values), the arrays around them rebuilt."""
    t = arr.type
    if found(t):
        return fn(arr)
    if not _contains(t, found):
        return arr
    if pa.types.is_struct(t):
        flat = arr.flatten()
        children = [_rewrite(child, found, fn) for child in flat]
        if all(c is f for c, f in zip(children, flat)):
            return arr  # nothing to change
        fields = [pa.field(f.name, c.type, f.nullable, f.metadata) for f, c in zip(t, children)]
        return pa.StructArray.from_arrays(children, fields=fields, mask=_null_mask(arr))
    if _is_list(t):
        flat = arr.flatten()
        values = _rewrite(flat, found, fn)
        if values is flat:
            return arr
        lengths = pc.list_value_length(arr).fill_null(0).to_numpy(zero_copy_only=False)
        large = pa.types.is_large_list(t)
        offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]), pa.int64() if large else pa.int32())
        f = t.value_field
        field = pa.field(f.name, values.type, f.nullable, f.metadata)
        out_type = pa.large_list(field) if large else pa.list_(field)
        cls = pa.LargeListArray if large else pa.ListArray
        return cls.from_arrays(offsets, values, type=out_type, mask=_null_mask(arr))
    if pa.types.is_map(t):
        old = arr.items
        items = _rewrite(old, found, fn)
        if items is old:
            return arr
        f = t.item_field
        out_type = pa.map_(t.key_field, pa.field(f.name, items.type, f.nullable, f.metadata), t.keys_sorted)
        return pa.MapArray.from_arrays(arr.offsets, arr.keys, items, type=out_type, mask=_null_mask(arr))
    return arr


def _contains(t: pa.DataType, found: Callable[[pa.DataType], bool]) -> bool:
    return found(t) or any(_contains(f.type, found) for _, f in _children(t))


def _rewrite_columns(data: Data, found: Callable[[pa.DataType], bool], fn: Callable[[pa.Array], pa.Array]) -> Data:
    def convert(name: str, column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
        if not _contains(column.type, found):
            return column
        if isinstance(column, pa.ChunkedArray):
            chunks = [_rewrite(chunk, found, fn) for chunk in column.chunks]
            if not chunks:
                return _rewrite(column.combine_chunks(), found, fn)
            return pa.chunked_array(chunks, type=chunks[0].type)
        return _rewrite(column, found, fn)

    return _map_columns(data, convert)


def _json_of(arr: pa.Array, zone: str) -> pa.Array:
    if not isinstance(arr, VariantExtensionArray):
        arr = pa.ExtensionArray.from_storage(VariantExtensionType(arr.type.storage_type), arr.storage)
    return arr.to_json(zone)


def variants_as_json(data: Data, zone: str = "UTC") -> Data:
    """``data`` with every ``arrow.parquet.variant`` (at any depth) replaced by a string
    column of Spark's JSON text (timestamps shown in ``zone``), null for SQL NULL."""
    return _rewrite_columns(data, is_variant_extension, lambda arr: _json_of(arr, zone))


_NULL_FILL = {"metadata": b"\x01\x00\x00", "value": b"\x00"}


def _filled(arr: pa.Array) -> pa.Array:
    if not any(arr.field(i).null_count for i, f in enumerate(arr.type) if f.name in _NULL_FILL):
        return arr
    valid = arr.is_valid()
    children = []
    for i, f in enumerate(arr.type):
        child = arr.field(i)
        if f.name in _NULL_FILL and child.null_count:
            child = pc.if_else(valid, child, pa.scalar(_NULL_FILL[f.name], child.type))
        children.append(child)
    return pa.StructArray.from_arrays(children, fields=list(arr.type), mask=_null_mask(arr))


def variant_nulls_filled(data: Data) -> Data:
    """``data`` with the ``metadata``/``value`` of SQL-NULL Variant storage structs (at any
    depth) set to an empty Variant null, so that a struct whose children are null where it
    is (as Polars writes them) casts to ``struct<metadata not null, value not null>``; a
    null child under a non-null struct is kept (and refused by that cast)."""
    return _rewrite_columns(data, is_variant_struct, _filled)
