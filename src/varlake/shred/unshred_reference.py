"""The reference unshredding of one level: column-at-a-time, a binary array per level.

This is the reconstruction ``shred.unshred`` used before the byte-parts path
(``shred.unshred_parts``); it stays as the oracle the fast path is tested against and
as the path for rows with a residual ``value``. At every level it returns the Variant
bytes of each slot, null marking *missing* (both ``value`` and ``typed_value`` null).
The truth table and error rules are ``shred.unshred``'s.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.shred.layout import ArrayLayout, ObjectLayout, PrimitiveLayout, ValueLayout
from varlake.shred.unshred_context import NULL_VARIANT, ReconstructContext, children_by_name
from varlake.shred.variant_arrays import (
    as_binary,
    binary_lengths,
    first_bytes,
    pack_arrays,
    pack_objects,
    primitive_bytes,
    validity,
)
from varlake.errors import VariantError
from varlake.variant.decoder import metadata_view, object_entries, value_size
from varlake.variant.encoder import encode_object

__all__ = ["merge_residuals", "reference_level", "valid_elements"]

_BASIC_OBJECT = 2


def _null_binary(n: int) -> pa.Array:
    return pa.nulls(n, pa.binary())


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def reference_level(
    node: ValueLayout,
    value: pa.Array | None,
    typed: pa.Array | None,
    rows: np.ndarray,
    ctx: ReconstructContext,
) -> pa.Array:
    """Variant bytes of one level for every slot; null marks *missing* (both columns null).

    ``rows`` maps each slot to its top-level row (for metadata and error messages).
    """
    n = len(rows)
    value_b = as_binary(value) if value is not None else None
    if value_b is not None and value_b.null_count < n:
        empty = validity(value_b) & (binary_lengths(value_b) == 0)
        if empty.any():
            slot = _first(empty)
            raise ctx.error(rows[slot], node.path, "empty Variant value (zero bytes)")
    if node.typed is None or typed is None:
        return value_b if value_b is not None else _null_binary(n)
    t = node.typed
    tvalid = validity(typed)
    vvalid = validity(value_b) if value_b is not None else np.zeros(n, dtype=bool)
    both = tvalid & vvalid
    if isinstance(t, ObjectLayout):
        return _object_level(node, t, value_b, typed, tvalid, vvalid, rows, ctx)
    if both.any():
        slot = _first(both)
        kind = "array" if isinstance(t, ArrayLayout) else t.kind.value
        raise ctx.error(rows[slot], node.path, f"both value and typed_value are non-null for a non-object (shredded {kind})")
    if isinstance(t, PrimitiveLayout):
        shredded = primitive_bytes(typed, t, f"{ctx.where}, path {node.path}")
    else:
        shredded = _array_level(t, typed, tvalid, rows, ctx)
    if value_b is None or value_b.null_count == n:
        return shredded
    return pc.coalesce(shredded, value_b)


def valid_elements(typed: pa.Array, valid: np.ndarray) -> pa.Array:
    """The elements of the valid list slots, in order.

    ``ListArray.flatten`` does this too, but pyarrow 26 cannot rebuild lists whose null
    slots span elements when the elements hold an extension type (UUID); slicing or
    taking the child array avoids building anything.
    """
    offsets = typed.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    starts, ends = offsets[:-1], offsets[1:]
    values = typed.values
    if not (~valid & (ends > starts)).any():
        return values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    keep = valid & (ends > starts)
    index = np.concatenate([np.arange(a, b) for a, b in zip(starts[keep], ends[keep])]) if keep.any() else np.zeros(0, np.int64)
    return values.take(pa.array(index, pa.int64()))


def _array_level(t: ArrayLayout, typed: pa.Array, tvalid: np.ndarray, rows: np.ndarray, ctx: ReconstructContext) -> pa.Array:
    counts = pc.list_value_length(typed).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    counts = np.where(tvalid, counts, 0)
    elements = valid_elements(typed, tvalid)
    element_rows = np.repeat(rows, counts)
    kids = children_by_name(elements)
    encoded = reference_level(t.element, kids.get("value"), kids.get("typed_value"), element_rows, ctx)
    if encoded.null_count:
        # Elements cannot be missing; a writer that leaves both columns null means null.
        encoded = encoded.fill_null(NULL_VARIANT)
    packed = pack_arrays(counts, encoded)
    return pc.if_else(pa.array(tvalid, pa.bool_()), packed, pa.scalar(None, pa.binary()))


def _object_level(
    node: ValueLayout,
    t: ObjectLayout,
    value_b: pa.Array | None,
    typed: pa.Array,
    tvalid: np.ndarray,
    vvalid: np.ndarray,
    rows: np.ndarray,
    ctx: ReconstructContext,
) -> pa.Array:
    n = len(rows)
    both = tvalid & vvalid
    if both.any():
        firsts = first_bytes(value_b)  # type: ignore[arg-type]
        bad = both & ((firsts & 0x03) != _BASIC_OBJECT)
        if bad.any():
            slot = _first(bad)
            raise ctx.error(rows[slot], node.path, "non-object value next to shredded object fields (typed_value is non-null)")
    kids = children_by_name(typed)
    fields = []
    encoded_fields: list[tuple[str, np.ndarray, np.ndarray, pa.Array]] = []
    for key, flayout in sorted(t.fields, key=lambda kv: kv[0].encode("utf-8")):
        group = children_by_name(kids.get(key))
        enc = reference_level(flayout, group.get("value"), group.get("typed_value"), rows, ctx)
        present = validity(enc) & tvalid
        ids = ctx.key_ids(key, rows) if present.any() else np.zeros(n, dtype=np.int64)
        unknown = present & (ids < 0)
        if unknown.any():
            slot = _first(unknown)
            raise ctx.error(rows[slot], flayout.path, f"shredded field {key!r} is not in the row's metadata dictionary")
        fields.append((present, ids, enc))
        encoded_fields.append((key, present, ids, enc))
    objects = pack_objects(n, fields)
    if both.any():
        objects = merge_residuals(node, t, objects, value_b, np.flatnonzero(both), encoded_fields, rows, ctx)  # type: ignore[arg-type]
    if value_b is None or value_b.null_count == n:
        return pc.if_else(pa.array(tvalid, pa.bool_()), objects, pa.scalar(None, pa.binary()))
    return pc.if_else(pa.array(tvalid, pa.bool_()), objects, value_b)


def merge_residuals(
    node: ValueLayout,
    t: ObjectLayout,
    objects: pa.Array,
    value_b: pa.Array,
    slots: np.ndarray,
    encoded_fields: list[tuple[str, np.ndarray, np.ndarray, pa.Array]],
    rows: np.ndarray,
    ctx: ReconstructContext,
) -> pa.Array:
    """Partially shredded objects: union the residual object's fields with the shredded ones."""
    take = pa.array(slots, pa.int64())
    residuals = value_b.take(take).to_pylist()
    shredded = [(key, present[slots], ids[slots], enc.take(take).to_pylist()) for key, present, ids, enc in encoded_fields]
    shredded_keys = t.keys
    merged: list[bytes] = []
    for i, slot in enumerate(slots):
        row = rows[slot]
        meta = ctx.metadata_bytes(row)
        residual = residuals[i]
        try:
            mv = metadata_view(meta)
            entries = object_entries(mv, residual, 0)
            keymap = ctx.keymap(int(ctx.codes()[row]))
            out = []
            for key, pos in entries:
                if key in shredded_keys:
                    raise ctx.error(row, node.path, f"field {key!r} is both shredded and present in the residual value object")
                size = value_size(residual, pos)
                if pos + size > len(residual):
                    raise ctx.error(row, node.path, f"residual field {key!r} runs past the end of the value")
                out.append((key, keymap[key], residual[pos : pos + size]))
        except (VariantError, IndexError, KeyError, UnicodeDecodeError, struct.error, RecursionError) as exc:
            raise ctx.error(row, node.path, f"malformed residual object ({exc})") from None
        for key, present, ids, values in shredded:
            if present[i]:
                out.append((key, int(ids[i]), values[i]))
        merged.append(encode_object(out))
    combined = pa.concat_arrays([objects, pa.array(merged, pa.binary())])
    index = np.arange(len(objects), dtype=np.int64)
    index[slots] = len(objects) + np.arange(len(slots), dtype=np.int64)
    return combined.take(pa.array(index))
