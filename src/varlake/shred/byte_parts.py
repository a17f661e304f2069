"""Per-row byte strings of a whole column, kept as a list of parts and joined once.

The fast unshredding path (``shred.unshred_parts``) describes each level's Variant
bytes as the per-row concatenation of *parts* instead of building a binary array
at every level. A part is either

* ``Fixed``: the same number of bytes in every row, described, not yet written, as
  pieces: a constant, or one little-endian number per row (a numpy column, often a
  zero-copy view of an Arrow values buffer); headers, numbers, string headers; or
* ``Var``: a binary array and its byte lengths (string payloads, array bodies,
  anything rebuilt elsewhere).

An object's parts are its header's parts followed by its children's parts, so a
row's bytes are copied once: ``join_parts`` writes each run of adjacent ``Fixed``
parts into one ``(rows, width)`` matrix, a piece at a time as a strided typed store
(fast on cache-sized batches), and joins the matrices and ``Var`` arrays with one
``binary_join_element_wise``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.errors import InvalidShreddedLayoutError

__all__ = ["Fixed", "Part", "Var", "binary_array", "element_offsets", "join_parts", "part_lengths", "select_rows", "valid_mask", "var"]

_LIMIT = 2**31 - 1
_WORDS = (8, 4, 2, 1)


@dataclass(slots=True)
class Var:
    """A variable-width part: a ``pa.binary()`` array and each slot's byte length (its
    offsets' difference, null slots included). A null slot may only sit where the
    level the part belongs to is absent."""

    array: pa.Array
    lengths: np.ndarray
    matrix: np.ndarray | None = None
    """When set: the same number of bytes in every non-empty row, as an ``(m, width)``
    uint8 matrix of the non-empty rows (in order), and ``keep`` marks those rows."""
    keep: np.ndarray | None = None


Part = np.ndarray | Var


def _offsets(arr: pa.Array) -> np.ndarray:
    buf = arr.buffers()[1]
    raw = np.frombuffer(buf, dtype="<i4", count=len(arr) + 1 + arr.offset)
    return raw[arr.offset :].astype(np.int64)


def valid_mask(arr: pa.Array) -> np.ndarray:
    """Boolean numpy mask of an array's non-null slots, unpacked from its validity bitmap."""
    n = len(arr)
    if arr.null_count == 0:
        return np.ones(n, dtype=bool)
    buf = None if pa.types.is_null(arr.type) else arr.buffers()[0]
    if buf is None:  # nulls without a bitmap (null type)
        return np.zeros(n, dtype=bool) if pa.types.is_null(arr.type) else pc.is_valid(arr).to_numpy(zero_copy_only=False)
    bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8), count=arr.offset + n, bitorder="little")
    return bits[arr.offset :].view(bool)


def element_offsets(arr: pa.Array) -> np.ndarray:
    """A binary array's ``len + 1`` offsets into its data buffer, as int64."""
    if len(arr) == 0:
        return np.zeros(1, dtype=np.int64)
    return _offsets(arr)


def var(arr: pa.Array) -> Var:
    """A binary array as a ``Var`` part."""
    if len(arr) == 0:
        return Var(arr, np.zeros(0, dtype=np.int64))
    return Var(arr, np.diff(_offsets(arr)))


class Fixed:
    """A part of ``width`` bytes in each of ``n`` rows, kept as pieces until written:
    ``(value, width)`` with ``value`` an int (the same bytes in every row), a 1-D
    numpy array of per-row numbers, stored little-endian in ``width`` bytes
    (1, 2, 3, 4 or 8; wider data comes as several pieces), or an ``(n, width)`` uint8
    matrix of each row's bytes (a string payload of one length in every row)."""

    __slots__ = ("n", "pieces", "width")

    def __init__(self, n: int, pieces: list[tuple[np.ndarray | int, int]] | None = None) -> None:
        self.n = n
        self.pieces: list[tuple[np.ndarray | int, int]] = []
        self.width = 0
        for value, width in pieces or ():
            self.add(value, width)

    def add(self, value: np.ndarray | int, width: int) -> None:
        """Append ``width`` little-endian bytes of ``value`` (an int: the same in every row)."""
        self.pieces.append((value, width))
        self.width += width

    def matrix(self) -> np.ndarray:
        """The bytes as an ``(n, width)`` uint8 matrix."""
        return _write([self], self.n)


Part = Fixed | Var


def _store(out: np.ndarray, at: int, value: np.ndarray | int, width: int) -> None:
    """Column ``at`` of the C-contiguous byte matrix ``out`` gets ``value`` in ``width``
    little-endian bytes, as one strided typed store per word."""
    n, row = out.shape
    if isinstance(value, (int, np.integer)):
        value = int(value) & ((1 << (8 * width)) - 1)
    elif value.ndim == 2:  # the row's bytes as they are
        out[:, at : at + width] = value
        return
    for w in _WORDS:
        while width >= w:
            view = np.ndarray((n,), dtype=f"<u{w}", buffer=out, offset=at, strides=(row,))
            if isinstance(value, int):
                view.fill(value & ((1 << (8 * w)) - 1))
                value >>= 8 * w
            elif w == width:
                view[...] = value  # unsafe cast: the low bytes
            else:
                view[...] = value & ((1 << (8 * w)) - 1)
                value = value >> (8 * w)
            at += w
            width -= w


def _write(parts: list[Fixed], n: int) -> np.ndarray:
    """The pieces of ``parts`` side by side: the constants of a row are laid out once and
    the row repeated (a memcpy), then each per-row piece is stored as a strided column."""
    width = sum(p.width for p in parts)
    template = bytearray(width)
    columns: list[tuple[int, np.ndarray, int]] = []
    at = 0
    for part in parts:
        for value, w in part.pieces:
            if isinstance(value, (int, np.integer)):
                template[at : at + w] = (int(value) & ((1 << (8 * w)) - 1)).to_bytes(w, "little")
            else:
                columns.append((at, value, w))
            at += w
    out = np.frombuffer(template * n, dtype=np.uint8).reshape(n, width)
    if n:
        for at, value, w in columns:
            _store(out, at, value, w)
    return out


def part_lengths(part: Part) -> np.ndarray | int:
    """Bytes per row of a part (an int for a ``Fixed`` one)."""
    if isinstance(part, Var):
        return part.lengths
    return part.width


def binary_array(offsets: np.ndarray, data: np.ndarray | pa.Buffer) -> pa.Array:
    """A ``pa.binary()`` array (no nulls) from int64 offsets and a data buffer."""
    if offsets[-1] > _LIMIT:
        raise InvalidShreddedLayoutError(f"a batch of {len(offsets) - 1} Variant values exceeds 2 GiB; read smaller row groups")
    buf = data if isinstance(data, pa.Buffer) else pa.py_buffer(data)
    return pa.Array.from_buffers(pa.binary(), len(offsets) - 1, [None, pa.py_buffer(offsets.astype(np.int32)), buf], 0)


def _matrix_array(m: np.ndarray) -> pa.Array:
    n, w = m.shape
    return binary_array(np.arange(0, (n + 1) * w, w, dtype=np.int64), m.reshape(-1))


def select_rows(part: Part, keep: np.ndarray) -> Var:
    """``part`` with zero bytes in the rows where ``keep`` is False (and no nulls)."""
    if not isinstance(part, Var):
        n, w = part.n, part.width
        lengths = keep.astype(np.int64) * w
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        kept = np.flatnonzero(keep)
        sub = Fixed(len(kept), [(v if isinstance(v, (int, np.integer)) else v[kept], pw) for v, pw in part.pieces])
        return Var(binary_array(offsets, sub.matrix().reshape(-1)), lengths)
    arr, lengths = part.array, part.lengths
    if not lengths[~keep].any():
        if arr.null_count:  # nulls only where dropped, all empty: the same bytes without the bitmap
            arr = pa.Array.from_buffers(pa.binary(), len(arr), [None, *arr.buffers()[1:]], 0, arr.offset)
        return Var(arr, lengths)
    out = pc.if_else(pa.array(keep, pa.bool_()), arr, pa.scalar(b"", pa.binary()))
    return Var(out, np.where(keep, lengths, 0))


def join_parts(parts: list[Part], n: int) -> pa.Array:
    """The per-row concatenation of ``parts`` as one ``pa.binary()`` array (null where any
    ``Var`` part is null). Each run of adjacent ``Fixed`` parts is written as one matrix."""
    arrays: list[pa.Array] = []
    run: list[Fixed] = []
    for part in parts:
        if isinstance(part, Var):
            if run:
                arrays.append(_matrix_array(_write(run, n)))
                run = []
            arrays.append(part.array)
        elif part.width:
            run.append(part)
    if run:
        arrays.append(_matrix_array(_write(run, n)))
    if not arrays:
        return binary_array(np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.uint8))
    if len(arrays) == 1:
        return arrays[0]
    if sum(a.buffers()[2].size for a in arrays if a.buffers()[2] is not None) > _LIMIT:  # an upper bound
        raise InvalidShreddedLayoutError(f"a batch of {n} Variant values exceeds 2 GiB; read smaller row groups")
    return pc.binary_join_element_wise(*arrays, b"")
