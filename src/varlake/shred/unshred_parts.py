"""Unshredding whole columns as byte parts: each row's Variant bytes written once.

``level_parts`` turns one ``value``/``typed_value`` level into a ``Level``: the parts
(``shred.byte_parts``) whose per-row concatenation is the level's Variant value,
which slots are present, and each slot's byte size. Nothing is joined on the way up:

* a shredded primitive is a byte matrix (header and little-endian payload) or a
  string header and its payload;
* an object is its header (type byte, count, field ids, offsets, written for all
  rows as a matrix; a field absent in some rows puts its id and offset into a small
  variable-width part) followed by its fields' parts, always-present fixed-width
  fields first. Values may sit in any order (VariantEncoding.md: only ids and
  offsets follow the key order), and every row of a batch uses the same id and
  offset widths (the widest any row needs; larger than necessary is valid);
* an array's elements are built the same way and joined (they are not rows), then
  the array is its header plus a zero-copy view of its elements' bytes.

The top level is joined once (``join_parts``); a field absent in some rows with many
parts is joined and blanked where absent instead of selecting each part.

A level with a ``value`` in some rows: when they are few (a quarter or less), the
fast result for every row is patched with those rows rebuilt on their own; else an
object level merges residual objects column-wise (``shred.residual_merge``). Whatever
those leave (non-object levels with a ``value``, residuals that look malformed) goes
to the reference path (``shred.unshred_reference``). The decoded values equal the
reference's, and the same invalid layouts raise the same errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.shred.byte_parts import Fixed, Part, Var, binary_array, element_offsets, join_parts, part_lengths, select_rows, var
from varlake.shred.layout import ArrayLayout, ObjectLayout, PrimitiveLayout, ValueLayout
from varlake.shred.residual_merge import merged_objects
from varlake.shred.unshred_context import NULL_VARIANT, ReconstructContext, children_by_name
from varlake.shred.unshred_reference import reference_level, valid_elements
from varlake.shred.variant_arrays import array_parts, as_binary, first_bytes, primitive_parts, uint_width, validity

__all__ = ["Level", "level_parts", "level_values", "reconstruct_level"]


@dataclass(slots=True)
class Level:
    """One level's Variant bytes per slot: ``parts`` joined row by row, present where
    ``present`` (None: every slot), ``size`` bytes each (meaningful where present)."""

    parts: list[Part]
    present: np.ndarray | None
    size: np.ndarray | int


def _width(value: int) -> int:
    return int(uint_width(np.array([value], dtype=np.int64))[0])


def _max(values: np.ndarray | int, where: np.ndarray | None = None) -> int:
    if isinstance(values, (int, np.integer)):
        return int(values)
    if where is not None:
        values = values[where]
    return int(values.max()) if len(values) else 0


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _size(parts: list[Part]) -> np.ndarray | int:
    total: np.ndarray | int = 0
    for p in parts:
        total = total + part_lengths(p)
    return total


def level_values(level: Level, n: int, absent: bytes | None) -> pa.Array:
    """A level's bytes as one binary array; absent slots hold ``absent`` (None: null)."""
    out = join_parts(level.parts, n)
    if level.present is None:
        return out
    return pc.if_else(pa.array(level.present, pa.bool_()), out, pa.scalar(absent, pa.binary()))


def _from_array(arr: pa.Array) -> Level:
    """A binary array (null = missing) as a level."""
    part = var(arr)
    return Level([part], validity(arr) if arr.null_count else None, part.lengths)


def reconstruct_level(
    node: ValueLayout,
    value: pa.Array | None,
    typed: pa.Array | None,
    rows: np.ndarray,
    ctx: ReconstructContext,
) -> pa.Array:
    """Variant bytes of one level for every slot; null marks *missing* (both columns null).

    ``rows`` maps each slot to its top-level row (for metadata and error messages).
    """
    return level_values(level_parts(node, value, typed, rows, ctx), len(rows), None)


def level_parts(
    node: ValueLayout,
    value: pa.Array | None,
    typed: pa.Array | None,
    rows: np.ndarray,
    ctx: ReconstructContext,
) -> Level:
    """One level as byte parts (see the module docstring)."""
    n = len(rows)
    if value is not None and value.null_count == n:
        value = None
    if node.typed is None or typed is None or typed.null_count == n:
        if value is None:
            return Level([], np.zeros(n, dtype=bool), 0)
        return _from_array(reference_level(node, value, typed, rows, ctx))
    if value is not None:
        value_b = as_binary(value)
        vvalid = validity(value_b)
        if 4 * int(vvalid.sum()) <= n:  # a few rows: the fast path for all, those rows rebuilt apart
            return _with_residuals(node, value_b, vvalid, typed, rows, ctx)
        if isinstance(node.typed, ObjectLayout):  # partially shredded objects, merged column-wise
            level = _object(node.typed, typed, rows, ctx, value_b, vvalid)
            if level is not None:
                return level
        return _from_array(reference_level(node, value_b, typed, rows, ctx))
    t = node.typed
    if isinstance(t, PrimitiveLayout):
        parts = primitive_parts(typed, t, f"{ctx.where}, path {node.path}")
        return Level(parts, validity(typed) if typed.null_count else None, _size(parts))
    if isinstance(t, ArrayLayout):
        return _array(t, typed, rows, ctx)
    return _object(t, typed, rows, ctx)


def _with_residuals(
    node: ValueLayout, value: pa.Array, vvalid: np.ndarray, typed: pa.Array, rows: np.ndarray, ctx: ReconstructContext
) -> Level:
    """The fast path for every slot as if ``value`` were null, then the slots with a ``value``
    rebuilt on their own (merged objects, else the reference path) and put in place."""
    n = len(rows)
    fast = level_parts(node, None, typed, rows, ctx)
    slots = np.flatnonzero(vvalid)
    take = pa.array(slots, pa.int64())
    patch = level_values(level_parts(node, value.take(take), typed.take(take), rows[slots], ctx), len(slots), None)
    merged = pc.replace_with_mask(join_parts(fast.parts, n), pa.array(vvalid, pa.bool_()), patch)
    present = None if fast.present is None else fast.present | vvalid
    if present is not None and present.all():
        present = None
    part = var(merged)
    return Level([part], present, part.lengths)


def _array(t: ArrayLayout, typed: pa.Array, rows: np.ndarray, ctx: ReconstructContext) -> Level:
    tvalid = validity(typed)
    counts = pc.list_value_length(typed).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    if typed.null_count:
        counts = np.where(tvalid, counts, 0)
    elements = valid_elements(typed, tvalid)
    element_rows = np.repeat(rows, counts)
    kids = children_by_name(elements)
    element = level_parts(t.element, kids.get("value"), kids.get("typed_value"), element_rows, ctx)
    # an element cannot be missing; a writer that leaves both columns null means Variant null
    encoded = level_values(element, len(element_rows), NULL_VARIANT)
    parts = _short_arrays(counts, encoded) if len(counts) and counts.max() <= _SHORT_ARRAY else array_parts(counts, encoded)
    return Level(parts, tvalid if typed.null_count else None, _size(parts))


_SHORT_ARRAY = 8
"""Arrays of at most this many elements get their headers written as one matrix."""


def _short_arrays(counts: np.ndarray, elements: pa.Array) -> list[Part]:
    """Array headers and bodies when no row has more than ``_SHORT_ARRAY`` elements: the
    header (type byte, count, one offset per element and the end) is written for the
    longest array in every row, then each row keeps its own length of it."""
    n = len(counts)
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    csum = element_offsets(elements)  # where each element starts in the data buffer
    first, end = bounds[:-1], bounds[1:]
    start = csum[first]
    osz = _width(int((csum[end] - start).max()))
    k = int(counts.max())
    header = Fixed(n, [(0x03 | ((osz - 1) << 2), 1), (counts, 1)])
    for j in range(k + 1):
        header.add(csum[np.minimum(first + j, end)] - start, osz)
    lengths = 2 + (counts + 1) * osz
    keep = np.arange(header.width) < lengths[:, None]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    heads = Var(binary_array(offsets, header.matrix()[keep]), lengths)
    data = elements.buffers()[2] if len(elements) else None
    rows = Var(binary_array(csum[bounds], data if data is not None else pa.py_buffer(b"")), csum[end] - start)
    return [heads, rows]


def _only_where(parts: list[Part], present: np.ndarray, n: int) -> tuple[list[Part], np.ndarray | int]:
    """A field's parts with no bytes where it is absent: part by part when they are few,
    else joined once and blanked (cheaper than many selections)."""
    if len(parts) > 2:
        joined = join_parts(parts, n)
        part = var(pc.if_else(pa.array(present, pa.bool_()), joined, pa.scalar(b"", pa.binary())))
        return [part], part.lengths
    kept = [select_rows(p, present) for p in parts]
    return kept, _size(kept)


@dataclass(slots=True)
class _Field:
    key: str
    ids: np.ndarray | int
    present: np.ndarray | None
    parts: list[Part]
    size: np.ndarray | int
    offset: np.ndarray | int = 0


def _object(
    t: ObjectLayout,
    typed: pa.Array,
    rows: np.ndarray,
    ctx: ReconstructContext,
    residual: pa.Array | None = None,
    vvalid: np.ndarray | None = None,
) -> Level | None:
    """An object level; with a ``residual`` ``value`` column (valid where ``vvalid``), rows
    holding both are merged (``shred.residual_merge``) and rows holding only ``value``
    read it whole. None: something in the residuals is for the reference path to judge."""
    n = len(rows)
    if residual is not None:
        empty = vvalid & (var(residual).lengths == 0)  # type: ignore[operator]
        both = vvalid & validity(typed)  # type: ignore[operator]
        if empty.any() or (both.any() and ((first_bytes(residual)[both] & 0x03) != 2).any()):
            return None  # the reference raises the named error
    tvalid = validity(typed) if typed.null_count else None
    kids = children_by_name(typed)
    fields: list[_Field] = []
    for key, flayout in sorted(t.fields, key=lambda kv: kv[0].encode("utf-8")):
        group = children_by_name(kids.get(key))
        child = level_parts(flayout, group.get("value"), group.get("typed_value"), rows, ctx)
        present = child.present
        if tvalid is not None:
            present = tvalid if present is None else present & tvalid
        if present is not None and not present.any():
            continue  # in no row's object
        ids: np.ndarray | int | None = ctx.shared_key_id(key)
        if ids is None:
            ids = ctx.key_ids(key, rows)
            unknown = ids < 0 if present is None else present & (ids < 0)
            if unknown.any():
                raise ctx.error(rows[_first(unknown)], flayout.path, f"shredded field {key!r} is not in the row's metadata dictionary")
        if present is None:
            fields.append(_Field(key, ids, None, child.parts, child.size))
        else:
            fields.append(_Field(key, ids, present, *_only_where(child.parts, present, n)))
    if residual is not None:
        return _with_residual_objects(t, typed, rows, ctx, residual, vvalid, tvalid, fields)  # type: ignore[arg-type]
    # values: always-present fixed-width fields first (constant offsets), then the rest
    fixed = [f for f in fields if f.present is None and isinstance(f.size, int)]
    rest = [f for f in fields if not (f.present is None and isinstance(f.size, int))]
    at: np.ndarray | int = 0
    for f in fixed + rest:
        f.offset = at
        at = at + f.size
    data_size = at
    count: np.ndarray | int = len(fixed) + sum(1 for f in rest if f.present is None)
    for f in rest:
        if f.present is not None:
            count = count + f.present.astype(np.int64)
    large = _max(count) > 0xFF
    cb = 4 if large else 1
    isz = _width(max((_max(f.ids, f.present) for f in fields), default=0))
    osz = _width(_max(data_size))
    header = Fixed(n, [(0x02 | ((osz - 1) << 2) | ((isz - 1) << 4) | (int(large) << 6), 1), (count, cb)])
    parts: list[Part] = [header]
    for width, what in ((isz, "ids"), (osz, "offset")):
        for f in fields:
            values = getattr(f, what)
            if f.present is None:
                header.add(values, width)
            else:  # only in some rows: its own variable-width part, then a new fixed one
                parts.append(select_rows(Fixed(n, [(values, width)]), f.present))
                header = Fixed(n)
                parts.append(header)
    header.add(data_size, osz)
    header_size = _size(parts)
    for f in fixed + rest:
        parts.extend(f.parts)
    return Level(parts, tvalid, header_size + data_size)


def _with_residual_objects(
    t: ObjectLayout,
    typed: pa.Array,
    rows: np.ndarray,
    ctx: ReconstructContext,
    residual: pa.Array,
    vvalid: np.ndarray,
    tvalid: np.ndarray | None,
    fields: list[_Field],
) -> Level | None:
    n = len(rows)
    tv = np.ones(n, dtype=bool) if tvalid is None else tvalid
    both = tv & vvalid
    merged = merged_objects(n, rows, ctx, residual, both, t.keys, [(f.ids, f.present, f.size) for f in fields])
    if merged is None:
        return None
    header, blocks, block_size = merged
    parts: list[Part] = [header, blocks]
    size: np.ndarray | int = header.lengths + block_size
    for f in fields:
        parts.extend(f.parts)
        size = size + (f.size if f.present is None else np.where(f.present, f.size, 0))
    only = vvalid & ~tv
    if not only.any():
        return Level(parts, tvalid, size)
    # rows whose whole Variant is in value: its bytes as stored
    joined = join_parts(parts, n)
    out = pc.replace_with_mask(joined, pa.array(only, pa.bool_()), residual.filter(pa.array(only, pa.bool_())))
    present = tv | vvalid
    part = var(out)
    return Level([part], None if present.all() else present, part.lengths)
