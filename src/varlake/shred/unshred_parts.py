"""Unshredding whole columns as byte parts: each row's Variant bytes written once.

``level_parts`` turns one ``value``/``typed_value`` level into a ``Level``: the parts
(``shred.byte_parts``) whose per-row concatenation is the level's Variant value,
which slots are present, and each slot's byte size. Nothing is joined on the way up:

* a shredded primitive is a byte matrix (header and little-endian payload) or a
  string header and its payload; a string of one length in every present row is
  one part (fixed-width when present everywhere);
* an object is its header followed by its fields' parts, always-present
  fixed-width fields first, fixed-width fields present in the same rows next to
  each other (fused into one part). When every row holds every field the header
  (type byte, count, field ids, offsets) is one matrix for all rows; else rows are
  grouped by which fields they hold and each group's headers written as a matrix
  (``shred.object_headers``). Values may sit in any order (VariantEncoding.md:
  only ids and offsets follow the key order), and every row of a batch uses the same
  id and offset widths (the widest any row needs; larger than necessary is valid);
* an array's elements are built the same way and joined (they are not rows), then
  the array is its header plus a zero-copy view of its elements' bytes.

A level whose parts are already empty where it is absent is *clean*: its parent
uses them as they are. Otherwise a field absent in some rows has its parts emptied
there (joined and blanked when they are many). The top level is joined once
(``join_parts``).

A level with a ``value`` in some rows: an object level merges residual objects
column-wise and reads value-only rows as stored (``shred.residual_merge``); an array
or primitive level takes the typed bytes or the stored value, whichever the slot has.
If that fails (a residual that looks malformed or unusual, a slot with both) and the
rows with a ``value`` are few, the fast result for every row is patched with those rows
rebuilt on their own; what is left goes to the reference path
(``shred.unshred_reference``). The decoded values equal the reference's, and the same
invalid layouts raise the same errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.shred.byte_parts import (
    Fixed,
    Part,
    Var,
    binary_array,
    element_offsets,
    join_parts,
    part_lengths,
    select_rows,
    valid_mask,
    var,
)
from varlake.shred.layout import ArrayLayout, ObjectLayout, PrimitiveLayout, ValueLayout
from varlake.shred.object_headers import at_rows, grouped_header, shape_groups
from varlake.shred.residual_merge import merged_objects
from varlake.shred.unshred_context import NULL_VARIANT, ReconstructContext, children_by_name
from varlake.shred.unshred_reference import reference_level, valid_elements
from varlake.shred.variant_arrays import array_parts, as_binary, primitive_parts, uint_width

__all__ = ["Level", "level_parts", "level_values", "reconstruct_level"]


@dataclass(slots=True)
class Level:
    """One level's Variant bytes per slot: ``parts`` joined row by row, present where
    ``present`` (None: every slot), ``size`` bytes each (meaningful where present)."""

    parts: list[Part]
    present: np.ndarray | None
    size: np.ndarray | int
    clean: bool = False
    """Every part has zero bytes where the slot is absent, and ``size`` is 0 there."""


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
    return Level([part], valid_mask(arr) if arr.null_count else None, part.lengths)


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
        vvalid = valid_mask(value_b)
        if isinstance(node.typed, ObjectLayout):  # partially shredded objects, merged column-wise
            level = _object(node.typed, typed, rows, ctx, value_b, vvalid)
            if level is not None:
                return level
        else:  # each slot holds one of the two, or it is invalid
            level = _either(node, value_b, vvalid, typed, rows, ctx)
            if level is not None:
                return level
        if 4 * int(vvalid.sum()) <= n:  # a few rows: the fast path for all, those rows rebuilt apart
            return _with_residuals(node, value_b, vvalid, typed, rows, ctx)
        return _from_array(reference_level(node, value_b, typed, rows, ctx))
    t = node.typed
    if isinstance(t, PrimitiveLayout):
        parts = primitive_parts(typed, t, f"{ctx.where}, path {node.path}")
        present = valid_mask(typed) if typed.null_count else None
        one = _one_length(parts, present)
        if one is not None:
            return Level([one], present, part_lengths(one), clean=True)
        return Level(parts, present, _size(parts))
    if isinstance(t, ArrayLayout):
        return _array(t, typed, rows, ctx)
    return _object(t, typed, rows, ctx)


_MAX_FIXED_PAYLOAD = 1024
"""Longest string/binary payload that ``_one_length`` lays out as fixed-width bytes."""


def _one_length(parts: list[Part], present: np.ndarray | None) -> Part | None:
    """A header and a payload of the same length in every present row (ids, hashes,
    timestamps as text) as one part: fixed-width (it joins the neighbouring fixed-width
    parts) when every row is present, else the present rows' bytes, empty elsewhere.
    One piece fewer to join per row. None for other parts."""
    if len(parts) != 2 or not isinstance(parts[0], Fixed) or not isinstance(parts[1], Var):
        return None
    header, body = parts
    n = header.n
    lengths = body.lengths
    if not n:
        return None
    first = 0 if present is None else int(np.argmax(present))
    size = int(lengths[first])
    if not 0 < size <= _MAX_FIXED_PAYLOAD:
        return None
    if present is None:
        if (lengths != size).any():
            return None
        m = n
    elif (lengths != np.where(present, size, 0)).any():
        return None
    else:
        m = int(present.sum())
    arr = body.array
    start = int(element_offsets(arr)[0])
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[start : start + m * size].reshape(m, size)
    if present is None:
        return Fixed(n, [*header.pieces, (data, size)])
    kept = np.flatnonzero(present)
    row = Fixed(m, [(v if isinstance(v, (int, np.integer)) else v[kept], w) for v, w in header.pieces] + [(data, size)])
    widths = present.astype(np.int64) * row.width
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(widths, out=offsets[1:])
    matrix = row.matrix()
    return Var(binary_array(offsets, matrix.reshape(-1)), widths, matrix, present)


def _either(
    node: ValueLayout, value: pa.Array, vvalid: np.ndarray, typed: pa.Array, rows: np.ndarray, ctx: ReconstructContext
) -> Level | None:
    """A shredded array or primitive with a ``value`` in some slots: the typed bytes where
    ``typed_value`` is valid, ``value`` as stored where it is (at most one of the two per
    slot). None if a slot holds both or an empty ``value`` (the reference raises)."""
    tvalid = valid_mask(typed)
    if (tvalid & vvalid).any():
        return None
    stored = var(value)
    if (vvalid & (stored.lengths == 0)).any():
        return None
    fast = level_parts(node, None, typed, rows, ctx)
    parts = fast.parts
    if not fast.clean and fast.present is not None:
        parts = _only_where(parts, fast.present, len(rows))[0]
    parts = [*parts, select_rows(stored, vvalid)]
    present = vvalid if fast.present is None else fast.present | vvalid
    return Level(parts, None if present.all() else present, _size(parts), clean=True)


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
    tvalid = valid_mask(typed)
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
        if (vvalid & (var(residual).lengths == 0)).any():  # type: ignore[operator]
            return None  # the reference raises the named error (so for non-objects: merged_objects)
    tvalid = valid_mask(typed) if typed.null_count else None
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
        elif child.clean and child.present is not None and (tvalid is None or not (child.present & ~tvalid).any()):
            # already empty where absent (a struct's nulls reach its children)
            size = child.size if isinstance(child.size, (int, np.integer)) and not child.size else np.where(present, child.size, 0)
            fields.append(_Field(key, ids, present, child.parts, size))
        else:
            fields.append(_Field(key, ids, present, *_only_where(child.parts, present, n)))
    if residual is not None:
        return _with_residual_objects(t, typed, rows, ctx, residual, vvalid, tvalid, fields)  # type: ignore[arg-type]
    # values: always-present fixed-width fields first (constant offsets), then the rest
    fixed = [f for f in fields if f.present is None and isinstance(f.size, int)]
    rest = _fuse_same_rows([f for f in fields if not (f.present is None and isinstance(f.size, int))])
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
    head = 0x02 | ((osz - 1) << 2) | ((isz - 1) << 4) | (int(large) << 6)
    values = [p for f in fixed + rest for p in f.parts]
    if tvalid is not None or any(f.present is not None for f in fields):
        header = _grouped_object_header(n, tvalid, fields, head, cb, isz, osz, data_size)
        if header is not None:
            return Level([header, *values], tvalid, header.lengths + data_size, clean=True)
    header = Fixed(n, [(head, 1), (count, cb)])
    parts: list[Part] = [header]
    for width, what in ((isz, "ids"), (osz, "offset")):
        for f in fields:
            column = getattr(f, what)
            if f.present is None:
                header.add(column, width)
            else:  # only in some rows: its own variable-width part, then a new fixed one
                parts.append(select_rows(Fixed(n, [(column, width)]), f.present))
                header = Fixed(n)
                parts.append(header)
    header.add(data_size, osz)
    header_size = _size(parts)
    return Level(parts + values, tvalid, header_size + data_size)


def _fuse_same_rows(fields: list[_Field]) -> list[_Field]:
    """``fields`` in value order, fields of one fixed width present in the same rows next to
    each other and their bytes fused into one part (the first field's; the others keep
    their sizes and no parts): fewer pieces to join per row."""
    def matrix_part(f: _Field) -> Var | None:
        if f.present is None or len(f.parts) != 1 or not isinstance(f.parts[0], Var):
            return None
        part = f.parts[0]
        return part if part.matrix is not None and part.keep is not None else None

    groups: list[list[_Field]] = []
    others: list[_Field] = []
    for f in fields:
        part = matrix_part(f)
        if part is None:
            others.append(f)
            continue
        for g in groups:
            if np.array_equal(g[0].parts[0].keep, part.keep):  # type: ignore[union-attr]
                g.append(f)
                break
        else:
            groups.append([f])
    if all(len(g) == 1 for g in groups):
        return fields
    out: list[_Field] = []
    for g in groups:
        if len(g) > 1:
            parts = [f.parts[0] for f in g]
            matrix = np.hstack([p.matrix for p in parts])  # type: ignore[union-attr,misc]
            keep = parts[0].keep  # type: ignore[union-attr]
            lengths = keep.astype(np.int64) * matrix.shape[1]  # type: ignore[union-attr]
            offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            g[0].parts = [Var(binary_array(offsets, matrix.reshape(-1)), lengths, matrix, keep)]
            for f in g[1:]:
                f.parts = []
        out.extend(g)
    return out + others


def _grouped_object_header(
    n: int,
    tvalid: np.ndarray | None,
    fields: list[_Field],
    head: int,
    cb: int,
    isz: int,
    osz: int,
    data_size: np.ndarray | int,
) -> Var | None:
    """An object level's headers, rows grouped by which fields they hold; none where the
    level is absent. None if the rows have too many distinct shapes."""
    optional = [f for f in fields if f.present is not None]
    rows = np.arange(n, dtype=np.int64) if tvalid is None else np.flatnonzero(tvalid)
    key = np.stack([f.present[rows] for f in optional], axis=1).view(np.uint8) if optional else None  # type: ignore[index]
    groups = shape_groups(rows, key)
    if groups is None:
        return None

    def build(g: np.ndarray) -> Fixed:
        held = [f for f in fields if f.present is None or f.present[g[0]]]
        out = Fixed(len(g), [(head, 1), (len(held), cb)])
        for f in held:
            out.add(at_rows(f.ids, g), isz)
        for f in held:
            out.add(at_rows(f.offset, g), osz)
        out.add(at_rows(data_size, g), osz)
        return out

    return grouped_header(n, groups, build)


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
    """Rows with both columns: merged objects; rows with only ``value``: its bytes as stored
    (the residual part holds the whole value, the header and fields are empty there)."""
    n = len(rows)
    tv = np.ones(n, dtype=bool) if tvalid is None else tvalid
    merged = merged_objects(n, rows, ctx, residual, vvalid, tv, t.keys, [(f.ids, f.present, f.size) for f in fields])
    if merged is None:
        return None
    header, blocks, block_size = merged
    parts: list[Part] = [header, blocks]
    size: np.ndarray | int = header.lengths + block_size
    for f in fields:
        parts.extend(f.parts)
        size = size + (f.size if f.present is None else np.where(f.present, f.size, 0))
    present = tv | vvalid
    return Level(parts, None if present.all() else present, size, clean=True)
