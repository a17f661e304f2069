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

Everything else is column-at-a-time (``shred.unshred_parts``): each level becomes
a list of byte parts (header matrices written for all rows at once, typed leaves'
payloads) that the top level joins once per row. Partially shredded objects are
merged column-wise too (``shred.residual_merge``, object headers written per row shape
by ``shred.object_headers``), and a non-object level takes, per row, its typed bytes or
its stored ``value``; a residual that looks malformed or unusual, and a row holding both
a ``value`` and a ``typed_value`` at a non-object level, go through the reference path
(``shred.unshred_reference``), which merges per row in Python and owns the error
messages. ``unshred_variant(..., reference=True)`` runs the reference path alone
(tests and benchmarks compare the two).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from varlake.errors import InvalidShreddedLayoutError
from varlake.shred.layout import VariantLayout, recognise_layout
from varlake.shred.unshred_context import NULL_VARIANT, ReconstructContext, children_by_name
from varlake.shred.unshred_parts import level_parts, level_values, reconstruct_level
from varlake.shred.unshred_reference import reference_level
from varlake.shred.variant_arrays import as_binary, validity

__all__ = [
    "UNSHREDDED_TYPE",
    "ReconstructContext",
    "children_by_name",
    "reconstruct_level",
    "unshred_variant",
]

_EMPTY_METADATA = b"\x01\x00\x00"

BATCH_ROWS = 65_536
"""Rows rebuilt per slice: small enough for numpy's scatter writes to stay in cache."""

UNSHREDDED_TYPE = pa.struct(
    [pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary(), nullable=False)]
)
"""The Arrow form every Variant column is returned in."""


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


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


def _unshred_array(group: pa.Array, layout: VariantLayout, where: str, row_offset: int, reference: bool) -> pa.StructArray:
    n = len(group)
    group_valid = validity(group)
    kids = children_by_name(group)
    meta = _metadata_column(group, kids, group_valid, f"{where}")
    ctx = ReconstructContext(meta, where, row_offset)
    rows = np.arange(n, dtype=np.int64)
    if reference:
        encoded = reference_level(layout.root, kids.get("value"), kids.get("typed_value"), rows, ctx)
        if encoded.null_count:
            encoded = encoded.fill_null(NULL_VARIANT)  # missing top-level value = Variant null
    else:
        level = level_parts(layout.root, kids.get("value"), kids.get("typed_value"), rows, ctx)
        encoded = level_values(level, n, NULL_VARIANT)
    mask = None if group_valid.all() else pa.array(~group_valid, pa.bool_())
    return pa.StructArray.from_arrays([meta, encoded], fields=list(UNSHREDDED_TYPE), mask=mask)


def unshred_variant(
    column: pa.Array | pa.ChunkedArray,
    layout: VariantLayout | None = None,
    *,
    where: str = "Variant column",
    row_offset: int = 0,
    reference: bool = False,
) -> pa.Array | pa.ChunkedArray:
    """The unshredded ``struct<metadata, value>`` form of a Variant column in any layout.

    ``column`` is the Variant group as Arrow reads it (shredded or not); ``layout``
    is recognised from its type when not given. A null group stays null; a group
    whose value is missing becomes Variant null. ``where`` and ``row_offset`` make
    error messages name the file, column and file row. ``reference`` rebuilds every
    level with the reference path instead of the byte-parts one (same values).
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
            chunks.append(_unshred_array(piece, layout, where, offset + start, reference))
        offset += len(chunk)
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array(chunks, type=UNSHREDDED_TYPE)
    if len(chunks) == 1:
        return chunks[0]
    if not chunks:
        return _unshred_array(column, layout, where, row_offset, reference)
    return pa.concat_arrays(chunks)
