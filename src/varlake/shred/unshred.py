"""Rebuilding unshredded Variants (``struct<metadata, value>``) from any shredded layout.

Reconstruction follows VariantShredding.md level by level. At every level the pair
``value`` / ``typed_value`` means (the spec's truth table):

=========  ===============  ==========================================================
value      typed_value      meaning
=========  ===============  ==========================================================
null       null             missing: only valid for object fields (the field is absent);
                            a missing array element or top-level value reads as Variant
                            null (``00``)
non-null   null             present, any type (``value`` holds the Variant bytes,
                            possibly ``00`` = Variant null)
null       non-null         present, the shredded type (primitive, array or object)
non-null   non-null         a partially shredded object: ``value`` must be an object
                            whose keys are disjoint from the shredded fields; for any
                            other ``typed_value`` it is invalid
=========  ===============  ==========================================================

Invalid data raises ``InvalidShreddedLayoutError`` naming where (file and column,
via ``where``), the row and the Variant path: both columns set for a non-object, a
non-object ``value`` next to a shredded object, a residual object that repeats
a shredded field, a shredded key missing from the row's metadata. A residual is
only decoded for rows that have one. An object stored whole in ``value`` while
``typed_value`` is null (which the spec also calls invalid) is returned as stored:
telling it apart would mean decoding every ``value``, and the result is still the
value the writer meant.

Everything else is column-at-a-time: primitive leaves become Variant bytes with
numpy (``variant_arrays``), arrays and objects get their headers written for all
rows at once, and only partially shredded objects are merged per row in Python.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.errors import InvalidShreddedLayoutError, VariantError
from varlake.shred.layout import ArrayLayout, ObjectLayout, PrimitiveLayout, ValueLayout, VariantLayout, recognise_layout
from varlake.shred.variant_arrays import (
    as_binary,
    binary_lengths,
    first_bytes,
    pack_arrays,
    pack_objects,
    primitive_bytes,
    validity,
)
from varlake.variant.decoder import metadata_view, object_entries, value_size
from varlake.variant.encoder import encode_object

__all__ = [
    "UNSHREDDED_TYPE",
    "ReconstructContext",
    "children_by_name",
    "reconstruct_level",
    "unshred_variant",
]

_BASIC_OBJECT = 2
_NULL_VARIANT = b"\x00"
_EMPTY_METADATA = b"\x01\x00\x00"

BATCH_ROWS = 65_536
"""Rows rebuilt per slice: small enough for numpy's scatter writes to stay in cache."""

UNSHREDDED_TYPE = pa.struct(
    [pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary(), nullable=False)]
)
"""The Arrow form every Variant column is returned in."""


@dataclass
class ReconstructContext:
    """Per-batch state shared by all levels: the rows' metadata and where we are (for errors).

    Object levels need each shredded key's field id in every row's metadata; rows
    usually share a handful of distinct metadata dictionaries, so ids are looked up
    once per distinct dictionary and gathered per row.
    """

    metadata: pa.Array
    where: str = "Variant column"
    row_offset: int = 0
    _codes: np.ndarray | None = field(default=None, repr=False)
    _distinct: list[bytes] = field(default_factory=list, repr=False)
    _keymaps: list[dict[str, int]] | None = field(default=None, repr=False)
    _key_ids: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def error(self, row: int, path: str, message: str) -> InvalidShreddedLayoutError:
        return InvalidShreddedLayoutError(f"{self.where}, row {self.row_offset + int(row)}, path {path}: {message}")

    def _encode(self) -> None:
        if self._codes is not None:
            return
        enc = pc.dictionary_encode(self.metadata)
        self._codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        self._distinct = enc.dictionary.to_pylist()

    def keymap(self, code: int) -> dict[str, int]:
        """``key -> field id`` of one distinct metadata dictionary."""
        if self._keymaps is None:
            self._encode()
            self._keymaps = [None] * len(self._distinct)  # type: ignore[list-item]
        km = self._keymaps[code]
        if km is None:
            try:
                keys = metadata_view(self._distinct[code]).keys()
            except (VariantError, UnicodeDecodeError) as exc:
                row = int(np.flatnonzero(self._codes == code)[0])  # type: ignore[operator]
                raise self.error(row, "$", f"invalid Variant metadata ({exc})") from None
            km = {}
            for i, k in enumerate(keys):
                km.setdefault(k, i)
            self._keymaps[code] = km
        return km

    def codes(self) -> np.ndarray:
        self._encode()
        return self._codes  # type: ignore[return-value]

    def key_ids(self, key: str, rows: np.ndarray) -> np.ndarray:
        """Field id of ``key`` in the metadata of each of ``rows`` (-1 where absent)."""
        table = self._key_ids.get(key)
        if table is None:
            self._encode()
            table = np.array([self.keymap(c).get(key, -1) for c in range(len(self._distinct))], dtype=np.int64)
            self._key_ids[key] = table
        if len(table) == 0:
            return np.full(len(rows), -1, dtype=np.int64)
        return table[self.codes()[rows]]

    def metadata_bytes(self, row: int) -> bytes:
        self._encode()
        return self._distinct[int(self.codes()[row])]


def children_by_name(group: pa.Array | None) -> dict[str, pa.Array]:
    """Children of a struct array with the struct's own nulls pushed down into them."""
    if group is None:
        return {}
    if pa.types.is_dictionary(group.type):
        group = group.dictionary_decode()
    names = [group.type.field(i).name for i in range(group.type.num_fields)]
    return dict(zip(names, group.flatten()))


def _null_binary(n: int) -> pa.Array:
    return pa.nulls(n, pa.binary())


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


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


def _valid_elements(typed: pa.Array, valid: np.ndarray) -> pa.Array:
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
    elements = _valid_elements(typed, tvalid)
    element_rows = np.repeat(rows, counts)
    kids = children_by_name(elements)
    encoded = reconstruct_level(t.element, kids.get("value"), kids.get("typed_value"), element_rows, ctx)
    if encoded.null_count:
        # Elements cannot be missing; a writer that leaves both columns null means null.
        encoded = encoded.fill_null(_NULL_VARIANT)
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
        enc = reconstruct_level(flayout, group.get("value"), group.get("typed_value"), rows, ctx)
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
        objects = _merge_residuals(node, t, objects, value_b, np.flatnonzero(both), encoded_fields, rows, ctx)  # type: ignore[arg-type]
    if value_b is None or value_b.null_count == n:
        return pc.if_else(pa.array(tvalid, pa.bool_()), objects, pa.scalar(None, pa.binary()))
    return pc.if_else(pa.array(tvalid, pa.bool_()), objects, value_b)


def _merge_residuals(
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


def _metadata_column(group: pa.Array, kids: dict[str, pa.Array], group_valid: np.ndarray, where: str) -> pa.Array:
    meta = kids.get("metadata")
    if meta is None:
        raise InvalidShreddedLayoutError(f"{where}: Variant group has no metadata")
    meta = as_binary(meta)
    missing = group_valid & ~validity(meta)
    if missing.any():
        raise InvalidShreddedLayoutError(f"{where}, row {_first(missing)}: Variant metadata is null")
    if meta.null_count:
        meta = meta.fill_null(_EMPTY_METADATA)
    return meta


def _unshred_array(group: pa.Array, layout: VariantLayout, where: str, row_offset: int) -> pa.StructArray:
    n = len(group)
    group_valid = validity(group)
    kids = children_by_name(group)
    meta = _metadata_column(group, kids, group_valid, f"{where}")
    ctx = ReconstructContext(meta, where, row_offset)
    encoded = reconstruct_level(
        layout.root, kids.get("value"), kids.get("typed_value"), np.arange(n, dtype=np.int64), ctx
    )
    if encoded.null_count:
        encoded = encoded.fill_null(_NULL_VARIANT)  # missing top-level value = Variant null
    mask = None if group_valid.all() else pa.array(~group_valid, pa.bool_())
    return pa.StructArray.from_arrays([meta, encoded], fields=list(UNSHREDDED_TYPE), mask=mask)


def unshred_variant(
    column: pa.Array | pa.ChunkedArray,
    layout: VariantLayout | None = None,
    *,
    where: str = "Variant column",
    row_offset: int = 0,
) -> pa.Array | pa.ChunkedArray:
    """The unshredded ``struct<metadata, value>`` form of a Variant column in any layout.

    ``column`` is the Variant group as Arrow reads it (shredded or not); ``layout``
    is recognised from its type when not given. A null group stays null; a group
    whose value is missing becomes Variant null. ``where`` and ``row_offset`` make
    error messages name the file, column and file row.
    """
    if layout is None:
        layout = recognise_layout(column.type, where)
    chunks_in = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    chunks = []
    offset = row_offset
    for chunk in chunks_in:
        # numpy scatter work is much faster on cache-sized slices than on whole row groups
        for start in range(0, len(chunk), BATCH_ROWS):
            piece = chunk.slice(start, BATCH_ROWS)
            chunks.append(_unshred_array(piece, layout, where, offset + start))
        offset += len(chunk)
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array(chunks, type=UNSHREDDED_TYPE)
    if len(chunks) == 1:
        return chunks[0]
    if not chunks:
        return _unshred_array(column, layout, where, row_offset)
    return pa.concat_arrays(chunks)
