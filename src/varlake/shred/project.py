"""The Variant at one path (``$.a.b[0]``) of every row, straight from a shredded layout.

A projection walks down the shredded columns instead of rebuilding whole
Variants. At each level of the path, with ``s`` the next segment:

* ``typed_value`` non-null and shreds ``s`` (an object field ``s``, or an array
  element ``s``): descend into the shredded child; a partially shredded object's
  residual ``value`` must not hold field ``s`` too (the spec's invariant; checked
  for rows that have a residual, and a violation raises like a full read does);
* ``typed_value`` non-null, is an object that does not shred key ``s``: the field
  can only be in the residual ``value``, which is navigated per row;
* ``typed_value`` null, ``value`` non-null: the whole Variant is in ``value``; it is
  navigated per row (correct even for writers that put objects there);
* otherwise the path is missing in that row.

When the path is exhausted the node's subtree is rebuilt column-at-a-time by
``reconstruct_level``. Rows where the path is missing come back as null structs;
an explicit Variant null at the path comes back as ``00``.

The input may hold only some of the group's columns (a reader that pruned the rest);
absent ``value``/``typed_value`` children read as all-null.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.errors import InvalidShreddedLayoutError, VariantError
from varlake.shred.layout import ArrayLayout, ObjectLayout, ValueLayout, recognise_layout
from varlake.shred.unshred import UNSHREDDED_TYPE, ReconstructContext, children_by_name, reconstruct_level
from varlake.shred.variant_arrays import as_binary, first_bytes, validity
from varlake.variant.decoder import array_element, metadata_view, object_entries, object_field, value_size
from varlake.variant.path import Segment, VariantPath

__all__ = ["project_path"]

_EMPTY_METADATA = b"\x01\x00\x00"


def _navigate(metadata: bytes, value: bytes, segments: tuple[Segment, ...]) -> bytes | None:
    """Bytes of the value at ``segments`` inside one Variant, or None if absent."""
    meta = None
    pos = 0
    for seg in segments:
        basic = value[pos] & 0x03
        if isinstance(seg, str):
            if basic != 2:
                return None
            if meta is None:
                meta = metadata_view(metadata)
            found = object_field(meta, value, pos, seg.encode("utf-8"))
            if found is None:
                # some writers (DuckDB 2.0) leave field ids unsorted, which defeats the binary search
                found = next((p for k, p in object_entries(meta, value, pos) if k == seg), None)
        else:
            if basic != 3:
                return None
            found = array_element(value, pos, seg)
        if found is None:
            return None
        pos = found
    size = value_size(value, pos)
    if pos + size > len(value):
        raise InvalidShreddedLayoutError("nested value runs past the end of its Variant")
    return value[pos : pos + size]


class _Collector:
    """Gathers (rows, bytes) pieces and assembles one array aligned to the batch."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.rows: list[np.ndarray] = []
        self.parts: list[pa.Array] = []

    def add(self, rows: np.ndarray, values: pa.Array) -> None:
        if len(rows):
            self.rows.append(rows)
            self.parts.append(values)

    def result(self) -> pa.Array:
        if not self.parts:
            return pa.nulls(self.n, pa.binary())
        combined = pa.concat_arrays(self.parts)
        index = np.full(self.n, -1, dtype=np.int64)
        index[np.concatenate(self.rows)] = np.arange(len(combined), dtype=np.int64)
        mask = index < 0
        return combined.take(pa.array(np.where(mask, 0, index), mask=mask))


def _navigate_rows(
    ctx: ReconstructContext,
    path: str,
    values: pa.Array,
    slots: np.ndarray,
    rows: np.ndarray,
    segments: tuple[Segment, ...],
    out: _Collector,
) -> None:
    """Per-row navigation inside binary Variant values (only for rows that have one)."""
    if not len(slots):
        return
    raw = values.take(pa.array(slots, pa.int64())).to_pylist()
    found: list[bytes | None] = []
    for slot_rows, value in zip(rows[slots], raw):
        try:
            found.append(_navigate(ctx.metadata_bytes(slot_rows), value, segments))
        except (VariantError, IndexError, UnicodeDecodeError, InvalidShreddedLayoutError, struct.error) as exc:
            raise ctx.error(slot_rows, path, f"malformed Variant value ({exc})") from None
    out.add(rows[slots], pa.array(found, pa.binary()))


def _check_residual_lacks(
    ctx: ReconstructContext, node: ValueLayout, key: str, values: pa.Array, slots: np.ndarray, rows: np.ndarray
) -> None:
    """A residual object must not repeat the shredded field the path descends into."""
    if not len(slots):
        return
    raw = values.take(pa.array(slots, pa.int64())).to_pylist()
    for row, value in zip(rows[slots], raw):
        try:
            hit = _navigate(ctx.metadata_bytes(row), value, (key,))
        except (VariantError, IndexError, UnicodeDecodeError, InvalidShreddedLayoutError, struct.error) as exc:
            raise ctx.error(row, node.path, f"malformed residual object ({exc})") from None
        if hit is not None:
            raise ctx.error(row, node.path, f"field {key!r} is both shredded and present in the residual value object")


def _project(group: pa.Array, path: VariantPath, where: str, row_offset: int) -> pa.StructArray:
    n = len(group)
    layout = recognise_layout(group.type, where)
    group_valid = validity(group)
    kids = children_by_name(group)
    meta = as_binary(kids["metadata"])
    missing_meta = group_valid & ~validity(meta)
    if missing_meta.any():
        raise InvalidShreddedLayoutError(f"{where}, row {row_offset + int(np.flatnonzero(missing_meta)[0])}: Variant metadata is null")
    if meta.null_count:
        meta = meta.fill_null(_EMPTY_METADATA)
    ctx = ReconstructContext(meta, where, row_offset)
    out = _Collector(n)

    node: ValueLayout = layout.root
    value = kids.get("value")
    typed = kids.get("typed_value")
    rows = np.arange(n, dtype=np.int64)
    segments = path.segments
    for i, seg in enumerate(segments):
        value_b = as_binary(value) if value is not None else None
        vvalid = validity(value_b) if value_b is not None else np.zeros(len(rows), dtype=bool)
        t = node.typed if typed is not None else None
        tvalid = validity(typed) if t is not None else np.zeros(len(rows), dtype=bool)
        both = vvalid & tvalid
        # the whole Variant of this level is in `value`
        _navigate_rows(ctx, node.path, value_b, np.flatnonzero(vvalid & ~tvalid), rows, segments[i:], out)  # type: ignore[arg-type]
        if t is None:
            break
        if isinstance(t, ObjectLayout):
            if both.any():
                bad = both & ((first_bytes(value_b) & 0x03) != 2)  # type: ignore[arg-type]
                if bad.any():
                    raise ctx.error(rows[np.flatnonzero(bad)[0]], node.path, "non-object value next to shredded object fields (typed_value is non-null)")
            child = t.field(seg) if isinstance(seg, str) else None
            if child is None:
                # not shredded here: only a residual object can hold it
                _navigate_rows(ctx, node.path, value_b, np.flatnonzero(both), rows, segments[i:], out)  # type: ignore[arg-type]
                break
            _check_residual_lacks(ctx, node, seg, value_b, np.flatnonzero(both), rows)  # type: ignore[arg-type]
            keep = np.flatnonzero(tvalid)
            field_group = children_by_name(typed).get(seg)
            if field_group is None:
                break
            field_group = field_group.take(pa.array(keep, pa.int64()))
            group_kids = children_by_name(field_group)
            node, value, typed, rows = child, group_kids.get("value"), group_kids.get("typed_value"), rows[keep]
            continue
        if both.any():
            kind = "array" if isinstance(t, ArrayLayout) else t.kind.value
            raise ctx.error(rows[np.flatnonzero(both)[0]], node.path, f"both value and typed_value are non-null for a non-object (shredded {kind})")
        if isinstance(t, ArrayLayout) and isinstance(seg, int):
            lengths = pc.list_value_length(typed).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
            sel = np.flatnonzero(tvalid & (lengths > seg))
            offsets = typed.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
            elements = typed.values.take(pa.array(offsets[sel] + seg, pa.int64()))
            elem_kids = children_by_name(elements)
            node, value, typed, rows = t.element, elem_kids.get("value"), elem_kids.get("typed_value"), rows[sel]
            continue
        break  # a shredded primitive (or an array asked for a key): nothing below it
    else:
        encoded = reconstruct_level(node, value, typed, rows, ctx)
        out.add(rows, encoded)
    result = out.result()
    present = validity(result) & group_valid
    values = result.fill_null(b"\x00") if result.null_count else result
    mask = None if present.all() else pa.array(~present, pa.bool_())
    return pa.StructArray.from_arrays([meta, values], fields=list(UNSHREDDED_TYPE), mask=mask)


def project_path(
    column: pa.Array | pa.ChunkedArray,
    path: str | VariantPath,
    *,
    where: str = "Variant column",
    row_offset: int = 0,
) -> pa.Array | pa.ChunkedArray:
    """The Variant at ``path`` in every row of a (shredded) Variant column.

    Returns ``struct<metadata, value>`` per row, null where the row is null or the
    path does not exist. ``where``/``row_offset`` locate errors.
    """
    vp = path if isinstance(path, VariantPath) else VariantPath.parse(path)
    if isinstance(column, pa.ChunkedArray):
        chunks = []
        offset = row_offset
        for chunk in column.chunks:
            chunks.append(_project(chunk, vp, where, offset))
            offset += len(chunk)
        return pa.chunked_array(chunks, type=UNSHREDDED_TYPE)
    return _project(column, vp, where, row_offset)
