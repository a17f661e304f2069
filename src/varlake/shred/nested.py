"""Unshredding Variants that sit inside other columns (struct fields, list elements, map values).

A Variant is located by an *Arrow path* relative to a column: struct field names,
``LIST_ELEMENT`` for "every element of this list" and ``MAP_VALUE`` for "every value
of this map". The arrays around each Variant are rebuilt with the Variant replaced
by its unshredded ``struct<metadata, value>``; everything else is kept as is.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.shred.unshred import UNSHREDDED_TYPE, unshred_variant

__all__ = ["LIST_ELEMENT", "MAP_VALUE", "ArrowPath", "unshred_nested", "unshredded_type"]

LIST_ELEMENT = "[]"
MAP_VALUE = "{}"

ArrowPath = tuple[str, ...]


def _inner(paths: list[ArrowPath], head: str) -> list[ArrowPath]:
    return [p[1:] for p in paths if p and p[0] == head]


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def unshredded_type(t: pa.DataType, paths: list[ArrowPath]) -> pa.DataType:
    """``t`` with the Variant groups at ``paths`` replaced by ``UNSHREDDED_TYPE``."""
    if () in paths:
        return UNSHREDDED_TYPE
    if not paths:
        return t
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, unshredded_type(f.type, _inner(paths, f.name)), f.nullable, f.metadata) for f in t])
    if _is_list(t):
        f = pa.field(t.value_field.name, unshredded_type(t.value_type, _inner(paths, LIST_ELEMENT)), t.value_field.nullable)
        return pa.large_list(f) if pa.types.is_large_list(t) else pa.list_(f)
    if pa.types.is_map(t):
        item = unshredded_type(t.item_type, _inner(paths, MAP_VALUE))
        return pa.map_(t.key_field, pa.field(t.item_field.name, item, t.item_field.nullable))
    return t


def _null_mask(arr: pa.Array) -> pa.Array | None:
    return pc.is_null(arr) if arr.null_count else None


def _rewrite(arr: pa.Array, paths: list[ArrowPath], source: str, prefix: ArrowPath, row_offset: int) -> pa.Array:
    if () in paths:
        return unshred_variant(arr, where=f"{source}: column {'.'.join(prefix)!r}", row_offset=row_offset)
    if not paths:
        return arr
    t = arr.type
    if pa.types.is_struct(t):
        children = [
            _rewrite(child, _inner(paths, f.name), source, prefix + (f.name,), row_offset)
            for f, child in zip(t, arr.flatten())
        ]
        fields = [pa.field(f.name, c.type, f.nullable, f.metadata) for f, c in zip(t, children)]
        return pa.StructArray.from_arrays(children, fields=fields, mask=_null_mask(arr))
    if _is_list(t):
        # element rows are not file rows: errors inside lists count elements from 0
        values = _rewrite(arr.flatten(), _inner(paths, LIST_ELEMENT), source, prefix + (LIST_ELEMENT,), 0)
        lengths = pc.list_value_length(arr).fill_null(0).to_numpy(zero_copy_only=False)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        large = pa.types.is_large_list(t)
        out_type = unshredded_type(t, paths)
        offsets_arr = pa.array(offsets, pa.int64() if large else pa.int32())
        cls = pa.LargeListArray if large else pa.ListArray
        return cls.from_arrays(offsets_arr, values, type=out_type, mask=_null_mask(arr))
    if pa.types.is_map(t):
        items = _rewrite(arr.items, _inner(paths, MAP_VALUE), source, prefix + (MAP_VALUE,), 0)
        return pa.MapArray.from_arrays(arr.offsets, arr.keys, items, type=unshredded_type(t, paths), mask=_null_mask(arr))
    return arr


def unshred_nested(
    column: pa.Array | pa.ChunkedArray,
    paths: list[ArrowPath],
    *,
    source: str = "<data>",
    name: str = "column",
    row_offset: int = 0,
) -> pa.Array | pa.ChunkedArray:
    """``column`` (named ``name``) with every Variant at ``paths`` unshredded in place.

    ``()`` in ``paths`` means the column itself is a Variant. ``source`` and
    ``row_offset`` locate errors (file name and the file row of the first row).
    """
    if not paths:
        return column
    if paths == [()]:  # the column itself: rebuilt batch by batch, no concatenation
        return unshred_variant(column, where=f"{source}: column {name!r}", row_offset=row_offset)
    if isinstance(column, pa.ChunkedArray):
        chunks = []
        offset = row_offset
        for chunk in column.chunks:
            chunks.append(_rewrite(chunk, paths, source, (name,), offset))
            offset += len(chunk)
        return pa.chunked_array(chunks, type=unshredded_type(column.type, paths))
    return _rewrite(column, paths, source, (name,), row_offset)
