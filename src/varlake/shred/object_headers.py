"""Object headers of a whole level written a group of rows at a time.

An object level's header (type byte, field count, field ids, field offsets, data size;
VariantEncoding.md) has one layout per *shape* of row: which fields the row holds and,
for a partially shredded object, how its residual fields interleave with the shredded
ones. Rows usually share a handful of shapes, so ``grouped_header`` groups the rows by
a per-row shape key (a few bytes per row, hashed by Arrow), writes each group's
headers as one fixed-width matrix (``byte_parts.Fixed``: constants laid out once,
per-row ids and offsets stored as strided columns) and puts the groups' rows back in
row order with one ``take``. Rows in no group (the level is absent there) get no bytes.
More groups than ``MAX_GROUPS`` (shapes that hardly repeat) returns None: the caller
then writes the header another way.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.shred.byte_parts import Fixed, Var, binary_array

__all__ = ["MAX_GROUPS", "at_rows", "grouped_header", "shape_groups"]

MAX_GROUPS = 256
"""Most distinct row shapes a level's header is written for group by group."""


def at_rows(value: np.ndarray | int, rows: np.ndarray) -> np.ndarray | int:
    """A per-row column (or a constant) at ``rows``."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    return value[rows]


def shape_groups(rows: np.ndarray, key: np.ndarray | None) -> list[np.ndarray] | None:
    """``rows`` split by equal rows of ``key`` (a ``(len(rows), w)`` uint8 matrix; None:
    one group), each group's rows ascending; None if there are more than ``MAX_GROUPS``."""
    m = len(rows)
    if m == 0:
        return []
    if key is None or key.shape[1] == 0:
        return [rows]
    key = np.ascontiguousarray(key, dtype=np.uint8)
    w = key.shape[1]
    fsb = pa.FixedSizeBinaryArray.from_buffers(pa.binary(w), m, [None, pa.py_buffer(key)])
    enc = pc.dictionary_encode(fsb)
    g = len(enc.dictionary)
    if g > MAX_GROUPS:
        return None
    if g == 1:
        return [rows]
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.uint8 if g <= 0x100 else np.uint16)
    order = np.argsort(codes, kind="stable")  # a radix sort on small ints
    bounds = np.zeros(g + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=g), out=bounds[1:])
    ordered = rows[order]
    return [ordered[bounds[i] : bounds[i + 1]] for i in range(g)]


def grouped_header(n: int, groups: list[np.ndarray], build: Callable[[np.ndarray], Fixed]) -> Var:
    """One header per row of ``n``: ``build(rows)`` gives the fixed-width headers of each
    group's rows (in that order); rows in no group get zero bytes."""
    lengths = np.zeros(n, dtype=np.int64)
    mats: list[np.ndarray] = []
    where: list[np.ndarray] = []
    for rows in groups:
        fixed = build(rows)
        if not fixed.width:
            continue
        lengths[rows] = fixed.width
        mats.append(fixed.matrix())
        where.append(rows)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if not mats:
        return Var(binary_array(offsets, np.zeros(0, dtype=np.uint8)), lengths)
    if len(mats) == 1:  # rows ascending: the matrix is already in row order
        return Var(binary_array(offsets, mats[0].reshape(-1)), lengths)
    arrays = []
    index = np.full(n, -1, dtype=np.int64)
    base = 0
    for m, rows in zip(mats, where):
        k, w = m.shape
        arrays.append(binary_array(np.arange(0, (k + 1) * w, w, dtype=np.int64), m.reshape(-1)))
        index[rows] = base + np.arange(k, dtype=np.int64)
        base += k
    arrays.append(pa.array([b""], pa.binary()))
    index[index < 0] = base
    joined = pc.take(pa.concat_arrays(arrays), pa.array(index, pa.int64()))
    return Var(binary_array(offsets, joined.buffers()[2]), lengths)
